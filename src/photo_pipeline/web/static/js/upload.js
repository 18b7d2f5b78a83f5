// Uploads from this browser: a button and drag-and-drop send photos and videos to
// /api/uploads over tus (tus-js-client, vendored), one progress bar per file.
//
// Before a file is sent its SHA-256 (crypto.subtle) is asked for with
// HEAD /api/assets?sha256=: a phone re-uploading its whole roll sends only what is
// new. An upload cut off by a dropped network is retried from where the server
// stopped; one cut off by a closed tab resumes when the same file is chosen again
// (tus-js-client keeps each upload's URL in localStorage under the file's
// fingerprint). Files land in uploads/<device>/ on the server, the device named here.

import { session } from "./api.js";
import { fill, h } from "./dom.js";
import { bytes, count } from "./format.js";
import { subscribe } from "./live.js";

const TUS_SCRIPT = "/static/vendor/tus-js-client/tus.min.js";
const STYLES = "/static/upload.css";
const DEVICE_KEY = "photo-pipeline.upload-device";
const AT_ONCE = 2; // files sent in parallel
// crypto.subtle hashes a whole buffer: bigger files are sent without asking first
// (the server still recognises their content after the upload, by BLAKE3).
const PRECHECK_MAX = 512 * 1024 * 1024;
const RETRY_DELAYS = [0, 1000, 3000, 5000, 10000, 20000, 30000, 60000];
// One PATCH per 16 MiB: under the body limits of the usual reverse proxies, and a
// point the server acknowledged at least every 16 MiB of a long video.
const CHUNK = 16 * 1024 * 1024;

let tusReady = null;

/** tus-js-client, loaded once (a classic script: it defines window.tus). */
function loadTus() {
  tusReady ||= new Promise((resolve, reject) => {
    const script = h("script", { src: TUS_SCRIPT });
    script.addEventListener("load", () => resolve(window.tus));
    script.addEventListener("error", () => {
      tusReady = null;
      reject(new Error("the upload library did not load"));
    });
    document.head.append(script);
  });
  return tusReady;
}

function loadStyles() {
  if (!document.querySelector(`link[href="${STYLES}"]`)) {
    document.head.append(h("link", { rel: "stylesheet", href: STYLES }));
  }
}

/** The SHA-256 of ``file`` as hex, or null where the browser cannot tell
 * (crypto.subtle exists only on https:// and localhost) or the file is too big. */
async function sha256(file) {
  if (!globalThis.crypto?.subtle || file.size > PRECHECK_MAX) return null;
  const digest = await crypto.subtle.digest("SHA-256", await file.arrayBuffer());
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Whether the library has this content already (HEAD /api/assets?sha256=). */
async function known(digest) {
  const answer = await fetch(`/api/assets?sha256=${digest}`, {
    method: "HEAD",
    headers: { Authorization: `Bearer ${session.token}` },
    cache: "no-store",
  });
  if (answer.status === 200) return true;
  if (answer.status === 404) return false;
  throw new Error(`the pre-check failed (HTTP ${answer.status})`);
}

function defaultDevice() {
  const platform = navigator.userAgentData?.platform || "";
  return platform ? `${platform} browser` : "browser";
}

/** The upload panel: ``mount`` is the element files may be dropped on (the page);
 * ``onLanded()`` is called when uploaded files have been catalogued. Returns
 * ``{root, leave}``: the panel, and the cleanup for when the page goes. */
export function uploadPanel(mount, { onLanded } = {}) {
  loadStyles();
  const device = h("input#upload-device", {
    type: "text", name: "device", maxlength: 64, autocomplete: "off", spellcheck: "false",
    value: localStorage.getItem(DEVICE_KEY) || defaultDevice(),
    "aria-describedby": "upload-device-help",
  });
  device.addEventListener("change", () => localStorage.setItem(DEVICE_KEY, device.value.trim()));
  const picker = h("input.upload-picker", {
    type: "file", multiple: true, accept: "image/*,video/*", "aria-label": "Photos and videos to upload",
    onchange: () => {
      enqueue([...picker.files]);
      picker.value = "";
    },
  });
  const button = h("button.button.primary", { type: "button", onclick: () => picker.click() }, "Upload photos");
  const list = h("ul.upload-list", { "aria-label": "Uploads" });
  const summary = h("p.upload-summary.muted", { role: "status", "aria-live": "polite" });
  const root = h("section.upload-panel", { "aria-label": "Upload" },
    h("div.upload-bar", {},
      button, picker,
      h("label.upload-device", { for: "upload-device" }, "Device", device)),
    h("p.hint#upload-device-help", {}, "Or drop photos and videos on this page. They are saved on the server in ",
      h("code", {}, "uploads/<device>/"), "; an interrupted upload resumes when you choose the file again."),
    summary,
    list);

  const queue = [];
  let active = 0;
  let awaitingCatalogue = 0;
  let left = false;
  const uploads = new Set(); // running tus uploads, aborted when the page goes

  function enqueue(files) {
    for (const file of files) {
      const row = fileRow(file);
      list.prepend(row.root);
      queue.push({ file, row });
    }
    pump();
  }

  function pump() {
    while (active < AT_ONCE && queue.length && !left) {
      const next = queue.shift();
      active += 1;
      send(next.file, next.row).finally(() => {
        active -= 1;
        pump();
      });
    }
    showSummary();
  }

  function showSummary() {
    const rows = [...list.children];
    const states = rows.map((row) => row.dataset.state);
    const doneCount = states.filter((s) => s === "done" || s === "known" || s === "catalogued").length;
    summary.textContent = rows.length ? `${count(doneCount)} of ${count(rows.length)} files done` : "";
  }

  async function send(file, row) {
    try {
      row.set("checking", "Checking whether the library has it…");
      const digest = await sha256(file);
      if (digest && (await known(digest))) {
        row.set("known", "Already in the library: not sent");
        return;
      }
      const tus = await loadTus();
      await new Promise((resolve, reject) => {
        const name = device.value.trim() || defaultDevice();
        const upload = new tus.Upload(file, {
          endpoint: "/api/uploads",
          headers: { Authorization: `Bearer ${session.token}` },
          metadata: {
            filename: file.name,
            filetype: file.type || "application/octet-stream",
            lastModified: String(file.lastModified || ""),
            device: name,
          },
          retryDelays: RETRY_DELAYS,
          chunkSize: CHUNK,
          uploadDataDuringCreation: true, // the first chunk with the POST: one round trip less
          storeFingerprintForResuming: true,
          removeFingerprintOnSuccess: true,
          onProgress: (sent, total) => row.progress(sent, total),
          onSuccess: () => {
            uploads.delete(upload);
            resolve();
          },
          onError: (error) => {
            uploads.delete(upload);
            reject(error);
          },
          onShouldRetry: (error, attempt) => {
            const status = error?.originalResponse?.getStatus?.() || 0;
            row.set("retrying", `Connection lost: retrying (${attempt + 1})…`);
            // 409/423: ask the offset again or wait for the old request; 0 or 5xx but
            // 507: the network or the server; the rest (401, 404, 413…) will not pass.
            return status === 0 || status === 409 || status === 423 || (status >= 500 && status !== 507);
          },
        });
        uploads.add(upload);
        upload.findPreviousUploads().then((previous) => {
          if (previous.length) {
            upload.resumeFromPreviousUpload(previous[0]);
            row.set("sending", "Resuming…");
          } else {
            row.set("sending", "Sending…");
          }
          upload.start();
        }, reject);
      });
      row.root.dataset.sha256 = digest || "";
      row.set("done", "Uploaded: adding it to the library…");
      awaitingCatalogue += 1;
    } catch (error) {
      row.set("failed", failure(error));
    } finally {
      showSummary();
    }
  }

  // Drag and drop anywhere on the page.
  let depth = 0;
  const onDragEnter = (event) => {
    if (![...(event.dataTransfer?.types || [])].includes("Files")) return;
    depth += 1;
    mount.classList.add("upload-dropping");
  };
  const onDragLeave = () => {
    depth = Math.max(0, depth - 1);
    if (!depth) mount.classList.remove("upload-dropping");
  };
  const onDragOver = (event) => {
    if ([...(event.dataTransfer?.types || [])].includes("Files")) event.preventDefault();
  };
  const onDrop = (event) => {
    if (!event.dataTransfer?.files?.length) return;
    event.preventDefault();
    depth = 0;
    mount.classList.remove("upload-dropping");
    enqueue([...event.dataTransfer.files]);
  };
  mount.addEventListener("dragenter", onDragEnter);
  mount.addEventListener("dragleave", onDragLeave);
  mount.addEventListener("dragover", onDragOver);
  mount.addEventListener("drop", onDrop);

  // Each render that succeeds while uploads await their scan (the chain after a
  // landing is scan → render → similar) may have catalogued them: ask, and show the
  // library again.
  const unsubscribe = subscribe((change) => {
    if (change.kind !== "job" || !awaitingCatalogue) return;
    const { job } = change;
    if (job.type !== "render" || job.state !== "succeeded") return;
    catalogued().then(() => onLanded?.(), () => onLanded?.());
  });

  async function catalogued() {
    for (const row of list.querySelectorAll("[data-state=done]")) {
      const digest = row.dataset.sha256;
      if (digest && !(await known(digest))) continue;
      row.set("catalogued", "In the library");
      awaitingCatalogue -= 1;
    }
    showSummary();
  }

  function leave() {
    left = true;
    unsubscribe();
    for (const upload of uploads) upload.abort(); // resumable: the server keeps its bytes
    mount.removeEventListener("dragenter", onDragEnter);
    mount.removeEventListener("dragleave", onDragLeave);
    mount.removeEventListener("dragover", onDragOver);
    mount.removeEventListener("drop", onDrop);
    mount.classList.remove("upload-dropping");
  }

  return { root, leave };
}

function failure(error) {
  const response = error?.originalResponse;
  if (response) {
    try {
      const problem = JSON.parse(response.getBody() || "{}");
      if (problem.code) return `${problem.code}: ${problem.detail || problem.title}`;
    } catch {
      // not a problem: the status says it
    }
    return `HTTP ${response.getStatus()}`;
  }
  return error?.message || String(error);
}

function fileRow(file) {
  const bar = h("progress.bar", { max: 1, value: 0, "aria-label": `Upload of ${file.name}` });
  const status = h("span.upload-status.muted", {}, "Waiting…");
  const root = h("li.upload-item", { dataset: { state: "waiting", name: file.name } },
    h("div.upload-line", {}, h("span.upload-name", { title: file.name }, file.name),
      h("span.upload-size.muted", {}, bytes(file.size))),
    bar, status);
  root.set = (state, text) => {
    root.dataset.state = state;
    fill(status, text);
    if (state === "done" || state === "known" || state === "catalogued") {
      bar.max = 1;
      bar.value = 1;
      bar.dataset.percent = "100";
    }
  };
  root.progress = (sent, total) => {
    bar.max = total || 1;
    bar.value = sent;
    const percent = total ? Math.floor((100 * sent) / total) : 0;
    bar.dataset.percent = String(percent);
    bar.setAttribute("aria-valuetext", `${percent}%`);
    fill(status, `${bytes(sent)} of ${bytes(total)} · ${percent}%`);
  };
  return { root, set: (...a) => root.set(...a), progress: (...a) => root.progress(...a) };
}
