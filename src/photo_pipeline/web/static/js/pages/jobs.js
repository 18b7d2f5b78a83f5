// Jobs: every job, newest first, live; start an import; cancel and retry.

import { get, post } from "../api.js";
import {
  FINISHED, chainKey, chainView, emptyState, inlineProblem, jobBadge, outcomeOf, pageHeader, problemsOf,
  progressView, showProblem, spinner,
} from "../components.js";
import { fill, h } from "../dom.js";
import { shortId, when } from "../format.js";
import { store, subscribe } from "../live.js";

const PAGE = 50;

export function render(main) {
  const rows = new Map(); // id → {tr, update}
  const body = h("tbody");
  const table = h("table.table.jobs-table", {},
    h("caption.visually-hidden", {}, "Jobs, newest first"),
    h("thead", {}, h("tr", {},
      h("th", { scope: "col" }, "Job"),
      h("th", { scope: "col" }, "State"),
      h("th.col-progress", { scope: "col" }, "Progress"),
      h("th", { scope: "col" }, "Prerequisites"),
      h("th", { scope: "col" }, "Created"),
      h("th.col-actions", { scope: "col" }, h("span.visually-hidden", {}, "Actions")))),
    body);
  const list = h("section.card.flush", { "aria-labelledby": "jobs-title" },
    h("div.card-header", {}, h("h2#jobs-title", {}, "All jobs"), h("span.muted.job-count")));
  const holder = h("div.table-wrap", {}, spinner());
  const more = h("div.more");
  list.append(holder, more);
  let cursor = null;
  let loaded = false;

  fill(main,
    pageHeader("Jobs", "Every job the coordinator knows, updated live as workers report."),
    importForm(),
    list);

  function rowFor(job) {
    const progress = progressView(job);
    const state = h("td");
    const chain = h("td");
    const actions = h("td.col-actions");
    const tr = h("tr", { dataset: { jobId: job.id, jobType: job.type } },
      h("td", {}, h("a.job-link", { href: `/jobs/${job.id}`, dataset: { link: "" } },
        h("span.job-type", {}, job.type), h("span.job-id", {}, shortId(job.id)))),
      state,
      h("td.col-progress", {}, progress.root),
      chain,
      h("td.muted.nowrap", {}, when(job.created_at)),
      actions);
    let drawn = null; // redraw buttons and links only when they change: keeps focus
    function update(current) {
      progress.update(current);
      const key = `${current.state}|${outcomeOf(current)}|${problemsOf(current)}|${chainKey(current)}`;
      if (key === drawn) return;
      drawn = key;
      fill(state, jobBadge(current));
      fill(chain, chainView(current));
      fill(actions, ...jobActions(current));
    }
    update(job);
    return { tr, update };
  }

  function show(job, { live = false } = {}) {
    const existing = rows.get(job.id);
    if (existing) {
      existing.update(job);
      return;
    }
    // Newest first, as the API lists them; a live job older than every loaded one
    // belongs to a page not loaded yet.
    const after = [...body.children].find((tr) => newer(job, store.get(tr.dataset.jobId)));
    if (live && !after && cursor) return;
    const row = rowFor(job);
    rows.set(job.id, row);
    body.insertBefore(row.tr, after || null);
    renderShell();
  }

  function renderShell() {
    if (!loaded) return;
    const count = list.querySelector(".job-count");
    count.textContent = rows.size ? `${rows.size}${cursor ? "+" : ""} shown` : "";
    if (rows.size === 0) {
      fill(holder, emptyState("No jobs yet", "Start an import above: a scan, then thumbnails, then near-duplicate detection."));
    } else if (!holder.contains(table)) {
      fill(holder, table);
    }
    fill(more, cursor ? h("button.button", { type: "button", onclick: loadMore }, "Load older jobs") : null);
  }

  async function loadMore() {
    try {
      const page = await get("/api/jobs", { limit: PAGE, cursor });
      cursor = page.next_cursor;
      loaded = true;
      for (const job of page.jobs) show(store.put(job));
      renderShell();
      // The chains name prerequisites fetched after their dependants: redraw.
      for (const [id, row] of rows) row.update(store.get(id));
    } catch (error) {
      fill(holder, inlineProblem(error));
    }
  }

  const unsubscribe = subscribe((change) => {
    if (change.kind !== "job") return;
    const { job } = change;
    if (rows.has(job.id)) {
      rows.get(job.id).update(job);
      // A job's dependants draw its state in their chains.
      for (const [id, row] of rows) {
        if (store.get(id)?.prerequisites?.includes(job.id)) row.update(store.get(id));
      }
    } else if (loaded) {
      show(job, { live: true });
    }
  });

  loadMore();
  return unsubscribe;
}

/** Is ``a`` newer than ``b`` in the API's order (of creation)? A job is always
 * created after its prerequisites. */
function newer(a, b) {
  if (!b) return true;
  if (a.prerequisites?.includes(b.id)) return true;
  if (b.prerequisites?.includes(a.id)) return false;
  if (a.created_at !== b.created_at) return a.created_at > b.created_at;
  return a.id > b.id;
}

export function jobActions(job, { onChange } = {}) {
  const buttons = [];
  const act = (verb) => async (event) => {
    const button = event.currentTarget;
    button.disabled = true;
    try {
      const updated = await post(`/api/jobs/${job.id}/${verb}`);
      store.put(updated);
      onChange?.(updated);
    } catch (error) {
      showProblem(error, { context: `${verb === "cancel" ? "Cancel" : "Retry"} ${job.type} ${shortId(job.id)}` });
      button.disabled = false;
    }
  };
  if (!FINISHED.has(job.state) && job.state !== "cancelling") {
    buttons.push(h("button.button.small.danger-ghost", {
      type: "button", onclick: act("cancel"), "aria-label": `Cancel ${job.type} job ${shortId(job.id)}`,
    }, "Cancel"));
  }
  if (job.state === "failed" || job.state === "cancelled") {
    buttons.push(h("button.button.small", {
      type: "button", onclick: act("retry"), "aria-label": `Retry ${job.type} job ${shortId(job.id)}`,
    }, "Retry"));
  }
  return buttons;
}

function importForm() {
  const input = h("input#import-path", {
    type: "text", name: "path", required: true, placeholder: "/home/me/Pictures/2024",
    spellcheck: "false", autocomplete: "off", "aria-describedby": "import-help",
  });
  const reread = h("input#import-reread", { type: "checkbox", "aria-describedby": "import-help" });
  const watch = h("input#import-watch", { type: "checkbox", "aria-describedby": "import-help" });
  const button = h("button.button.primary", { type: "submit" }, "Start import");
  const status = h("p.form-status", { role: "status" });
  const form = h("form.card.import-form", {
    "aria-labelledby": "import-title",
    onsubmit: async (event) => {
      event.preventDefault();
      const path = input.value.trim();
      if (!path) return;
      button.disabled = true;
      fill(status);
      try {
        const params = { paths: [path] };
        if (reread.checked) params.reread = true;
        if (watch.checked) params.watch = true;
        const job = await post("/api/jobs", { type: "import", params });
        store.put(job);
        // The answer is the chain's last job (scan → render → similar).
        fill(status, "Import queued: its jobs appear below, ending with ",
          h("a", { href: `/jobs/${job.id}`, dataset: { link: "" } }, `${job.type} ${shortId(job.id)}`), ".");
        input.value = "";
        reread.checked = false;
        watch.checked = false;
      } catch (error) {
        fill(status, inlineProblem(error));
      } finally {
        button.disabled = false;
      }
    },
  },
  h("h2#import-title", {}, "Import a folder"),
  h("div.field-row", {},
    h("div.field.grow", {},
      h("label", { for: "import-path" }, "Folder path on the server"),
      input),
    button),
  h("label.checkbox", { for: "import-reread" }, reread, "Read every file again"),
  h("label.checkbox", { for: "import-watch" }, watch, "Watch this folder"),
  h("p.hint#import-help", {}, "An absolute path. The import scans it, renders thumbnails and previews, then looks for near duplicates. "
    + "A folder imported before is read again only where files changed; tick \u201cRead every file again\u201d after an upgrade "
    + "to refresh every photo's dates, places and camera details (dates you shifted stay). "
    + "A watched folder (a phone-backup or Syncthing folder) is catalogued as photos arrive in it, once each has settled."),
  status);
  return form;
}
