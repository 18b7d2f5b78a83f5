// Library: the timeline (../timeline.js: justified rows grouped by day, newest first,
// virtualised, with a date scrubber), filters and search, and an asset view with the
// preview and metadata (arrow keys or a swipe step through the photos; download the
// original, and a Live Photo's motion part). Videos carry a badge with their length
// and play in the asset view (H.264/HEVC in MP4/MOV; others show the poster and a
// download link); a Live Photo carries a "Live" badge and plays its motion part on
// hover or click. A photo dated only by its file's mtime carries an "Undated" badge;
// Select mode chooses photos for "Set date" (library_dates.js) and for curation
// (../curation.js: heart, rating, reject, tags, albums; click, shift-click for a
// range, or a drag across photos). The viewer rates by keys.

import { accessToken, get, withAccessToken } from "../api.js";
import { emptyState, inlineProblem, joinPath, pageHeader, pathView, showProblem, spinner } from "../components.js";
import { debounce, fill, h } from "../dom.js";
import { bytes, clipLength, localTime, plural, takenSource, when } from "../format.js";
import { dateSelection } from "./library_dates.js";
import { CURATION_FILTERS, curationFilterInputs, curationPanel, selectionActions, tileMarks } from "../curation.js";
import { uploadPanel } from "../upload.js";
import { searchBox } from "../search.js";
import { timelineView } from "../timeline.js";

const PAGE = 200;
const SWIPE = 50; // px of a horizontal swipe that steps the viewer
const FILTERS = ["q", "taken_from", "taken_to", "camera", "has_gps", "duplicates", "place", "type", "order", ...CURATION_FILTERS];

export function render(main, _params, query) {
  const filters = Object.fromEntries(FILTERS.map((name) => [name, query.get(name) || ""]));
  const pageSize = Math.min(500, Math.max(1, Number(query.get("limit")) || PAGE));
  const status = h("p.gallery-status.muted", { role: "status", "aria-live": "polite" });
  const viewer = assetViewer(curated);
  const dates = dateSelection({
    actions: selectionActions({ ids: () => dates.ids(), onCurated: curated }),
    onChanged: () => reset(),
    onToggle: (id, chosen) => {
      const item = main.querySelector(`.gallery .tile[data-asset-id="${id}"]`);
      if (item) markChosen(item, chosen);
    },
  });
  const timeline = timelineView({ filters, pageSize, tile, onStatus: showStatus });
  let lastChosen = null; // the asset a shift-click chooses a range from
  let drag = null; // {from, moved}: a press in Select mode that chooses every tile it crosses
  let dragged = false; // the press ended on its own tile after crossing others: no toggle

  const upload = uploadPanel(main, { onLanded: () => reset() });
  const applyFilters = (next) => {
    Object.assign(filters, next);
    const url = new URL(location.href);
    for (const [k, v] of Object.entries(filters)) {
      if (v) url.searchParams.set(k, v);
      else url.searchParams.delete(k);
    }
    history.replaceState(null, "", url);
    reset();
  };
  fill(main,
    pageHeader("Library", "Every unique photo, by the day it was taken."),
    upload.root,
    searchBox(filters.q, (q) => applyFilters({ q })),
    foldedOnPhones("Filters", filterForm(filters, applyFilters),
      FILTERS.some((name) => name !== "q" && name !== "order" && filters[name])),
    h("div.gallery-bar", {}, status, dates.bar),
    dates.outcome,
    timeline.root,
    viewer.dialog,
    dates.dialog);

  function showStatus(answer) {
    if (answer.error) {
      if (!timeline.total) fill(status, inlineProblem(answer.error));
      else showProblem(answer.error, { context: "Library" });
      return;
    }
    if (!answer.total) {
      const filtered = Object.entries(filters).some(([name, value]) => name !== "order" && value);
      fill(status, emptyState(
        filtered ? "No photos match these filters" : "The library is empty",
        filtered ? "Clear a filter to see more." : "Import a folder on the Jobs page to fill it.",
      ));
      return;
    }
    fill(status, plural(answer.total, "photo"));
  }

  async function reset() {
    fill(status, spinner("Loading photos…"));
    await accessToken(); // image URLs need it
    timeline.reset();
  }

  function tile(asset) {
    const src = withAccessToken(asset.thumbnail_url);
    const camera = cameraName(asset);
    const place = asset.place || "";
    const taken = asset.undated ? `${localTime(asset.taken_local)} (undated: file time)` : localTime(asset.taken_local);
    const label = [taken, camera, place].filter(Boolean).join(", ");
    const what = asset.kind === "video"
      ? `video (${clipLength(asset.duration)})`
      : asset.live ? "Live Photo" : "photo";
    const [heart, marks] = tileMarks(asset, { onCurated: curated });
    const box = h("span.thumb-box", {},
      src
        ? h("img.thumb", { src, alt: "", loading: "lazy", decoding: "async", width: 256, height: 256, draggable: "false" })
        : h("span.thumb.placeholder", {}, "Not rendered yet"),
      mediaBadge(asset),
      asset.undated ? h("span.media-badge.undated-badge", { title: "Only the file's modification time dates it" }, "Undated") : null,
      marks);
    const hover = asset.motion_url ? motionOnHover(box, asset.motion_url) : {};
    const dragging = {
      onpointerdown: (event) => {
        if (dates.active && event.button === 0 && !event.shiftKey && event.pointerType === "mouse") {
          drag = { from: asset, moved: false };
        }
      },
      onpointerenter: () => {
        if (!drag || !dates.active || drag.from === asset && !drag.moved) return;
        drag.moved = true;
        chooseRange(drag.from, asset);
      },
    };
    const item = h("li.tile", { dataset: { assetId: asset.id, kind: asset.kind || "photo", undated: asset.undated ? "true" : "false" }, ...hover, ...dragging },
      h("button.tile-button", {
        type: "button",
        "aria-label": `Open ${what}: ${label}`,
        onclick: (event) => {
          if (!dates.active) {
            const loaded = timeline.loaded();
            return viewer.open(loaded, loaded.indexOf(asset));
          }
          if (dragged) {
            dragged = false;
            return null;
          }
          if (event.shiftKey && lastChosen !== null) chooseRange(lastChosen, asset);
          else dates.toggle(asset);
          lastChosen = asset;
          return null;
        },
      },
      box,
      // Always three caption lines: every tile is as tall as the row height.
      h("span.tile-caption", {}, h("span.tile-date", {}, localTime(asset.taken_local)),
        h("span.tile-camera", {}, camera || "\u00a0"),
        h("span.tile-place", {}, place || "\u00a0"))),
      heart);
    item.classList.toggle("rejected", Boolean(asset.rejected));
    markChosen(item, dates.has(asset.id));
    return item;
  }

  // Choose every loaded photo from one to another in the timeline's order (a
  // shift-click, a drag).
  function chooseRange(one, other) {
    const loaded = timeline.loaded();
    const [a, b] = [loaded.indexOf(one), loaded.indexOf(other)];
    if (a < 0 || b < 0) return;
    for (let i = Math.min(a, b); i <= Math.max(a, b); i += 1) {
      if (!dates.has(loaded[i].id)) dates.toggle(loaded[i]);
    }
    lastChosen = other;
  }

  function endDrag(event) {
    // A click follows on the tile pressed only when the press also ends there.
    const ended = event.target.closest?.(".tile");
    dragged = Boolean(drag?.moved && ended && Number(ended.dataset.assetId) === Number(drag.from.id));
    drag = null;
  }

  // A curation changed these assets (curation.js): apply it and draw their tiles again.
  function curated(ids, change) {
    const wanted = new Set(ids.map(Number));
    for (const asset of timeline.loaded()) if (wanted.has(Number(asset.id))) change(asset);
    timeline.redraw(ids);
  }

  function markChosen(item, chosen) {
    item.classList.toggle("chosen", chosen);
    const button = item.querySelector(".tile-button");
    if (dates.active || chosen) button.setAttribute("aria-pressed", String(chosen));
    else button.removeAttribute("aria-pressed");
  }

  addEventListener("pointerup", endDrag);
  reset();
  return () => {
    upload.leave();
    removeEventListener("pointerup", endDrag);
    timeline.leave();
    viewer.close();
    dates.stop();
  };
}

/** The camera as people name it (the API's ``camera``), else make and model as stored. */
function cameraName(asset) {
  return asset.camera || [asset.make, asset.model].filter(Boolean).join(" ");
}

/** A Live Photo's tile plays its motion part over the thumbnail while hovered (the
 * video element exists only then: a grid of them would load every clip). */
function motionOnHover(box, motionUrl) {
  let clip = null;
  return {
    onmouseenter: () => {
      const src = withAccessToken(motionUrl);
      if (clip || !src) return;
      clip = h("video.thumb.tile-motion", { src, muted: true, playsInline: true, loop: true, "aria-hidden": "true" });
      clip.muted = true;
      box.append(clip);
      clip.play().catch(() => {});
    },
    onmouseleave: () => {
      clip?.pause();
      clip?.remove();
      clip = null;
    },
  };
}

/** The corner badge of a tile: a video's length, or "Live". */
function mediaBadge(asset) {
  if (asset.kind === "video") {
    return h("span.media-badge.video-badge", { "aria-hidden": "true" }, "▶ ", clipLength(asset.duration));
  }
  if (asset.live) return h("span.media-badge.live-badge", { "aria-hidden": "true" }, "Live");
  return null;
}

// Below this width the filters fold behind their summary, so that the first screen of a
// phone shows photos, not fields.
const PHONE = window.matchMedia("(max-width: 640px)");

/** ``content`` in a disclosure that is open on wide screens (its summary hidden) and,
 * on phones, closed unless ``active`` (a filter is set). */
function foldedOnPhones(label, content, active) {
  const fold = h("details.fold-on-phones", { open: active || !PHONE.matches },
    h("summary.button.ghost", {}, active ? `${label} (on)` : label), content);
  PHONE.addEventListener("change", () => { if (!PHONE.matches) fold.open = true; });
  return fold;
}

function filterForm(values, apply) {
  const curationInputs = curationFilterInputs(values, select);
  const field = (name, label, input) => h("div.field", {}, h("label", { for: `filter-${name}` }, label), input);
  const inputs = {
    taken_from: h("input#filter-taken_from", { type: "date", name: "taken_from", value: values.taken_from }),
    taken_to: h("input#filter-taken_to", { type: "date", name: "taken_to", value: values.taken_to }),
    camera: h("input#filter-camera", { type: "search", name: "camera", value: values.camera, placeholder: "Make or model" }),
    place: h("input#filter-place", { type: "search", name: "place", value: values.place, placeholder: "City, district or country" }),
    has_gps: select("has_gps", values.has_gps, [["", "Any"], ["true", "With GPS"], ["false", "Without GPS"]]),
    duplicates: select("duplicates", values.duplicates, [["", "All photos"], ["exact", "Exact duplicates"], ["near", "Near duplicates"]]),
    type: select("type", values.type, [["", "Photos and videos"], ["photo", "Photos"], ["video", "Videos"], ["live", "Live Photos"]]),
    ...Object.fromEntries(curationInputs.map(([name, , el]) => [name, el])),
    // The timeline's order: by the local time shown (GET /api/timeline?order=).
    order: select("order", values.order, [["", "Newest first"], ["oldest", "Oldest first"]]),
  };
  const read = () => Object.fromEntries(Object.entries(inputs).map(([k, el]) => [k, el.value.trim()]));
  const later = debounce(() => apply(read()), 350);
  for (const el of Object.values(inputs)) {
    el.addEventListener(el.tagName === "SELECT" || el.type === "date" ? "change" : "input", later);
  }
  const form = h("form.card.filters", {
    role: "search", "aria-label": "Filter photos",
    onsubmit: (event) => { event.preventDefault(); apply(read()); },
  },
  field("taken_from", "Taken from", inputs.taken_from),
  field("taken_to", "Taken to", inputs.taken_to),
  field("camera", "Camera", inputs.camera),
  field("place", "Place", inputs.place),
  field("has_gps", "Location", inputs.has_gps),
  field("duplicates", "Duplicates", inputs.duplicates),
  field("type", "Type", inputs.type),
  ...curationInputs.map(([name, label, el]) => field(name, label, el)),
  field("order", "Order", inputs.order),
  h("div.field.filter-actions", {},
    h("button.button.ghost", {
      type: "button",
      onclick: () => { for (const el of Object.values(inputs)) el.value = ""; apply(read()); },
    }, "Clear")));
  return form;
}

function select(name, value, options) {
  return h(`select#filter-${name}`, { name },
    ...options.map(([v, text]) => h("option", { value: v, selected: v === value }, text)));
}

// ── the asset view ───────────────────────────────────────────────────────────
export function assetViewer(onCurated) {
  const body = h("div.viewer-body");
  const title = h("h2#viewer-title.viewer-title");
  const prev = h("button.button.ghost.small", { type: "button", "aria-label": "Previous photo", onclick: () => step(-1) }, "← Previous");
  const next = h("button.button.ghost.small", { type: "button", "aria-label": "Next photo", onclick: () => step(1) }, "Next →");
  const closeButton = h("button.button.small", { type: "button", onclick: () => dialog.close() }, "Close");
  const downloads = h("div.viewer-downloads");
  const dialog = h("dialog.viewer", { "aria-labelledby": "viewer-title" },
    h("div.viewer-head", {}, title, h("div.viewer-nav", {}, downloads, prev, next, closeButton)),
    body);
  let list = [];
  let index = 0;
  let ticket = 0;
  let panel = null; // the shown asset's curation panel: keys 0–5, x, f
  dialog.addEventListener("keydown", (event) => {
    if (event.target.closest("input, select, textarea")) return;
    if (panel?.key(event)) { event.preventDefault(); return; }
    if (event.key === "ArrowLeft") step(-1);
    if (event.key === "ArrowRight") step(1);
  });
  dialog.addEventListener("click", (event) => {
    if (event.target === dialog) dialog.close(); // the backdrop
  });
  // A swipe (touch, pen or mouse) across the photo steps to the next or previous one;
  // .asset-preview leaves horizontal pans to this (touch-action: pan-y).
  let swipe = null;
  body.addEventListener("pointerdown", (event) => {
    if (event.target.closest(".asset-preview") && event.isPrimary) swipe = { x: event.clientX, y: event.clientY };
  });
  body.addEventListener("pointerup", (event) => {
    if (!swipe) return;
    const dx = event.clientX - swipe.x;
    const dy = event.clientY - swipe.y;
    swipe = null;
    if (Math.abs(dx) >= SWIPE && Math.abs(dx) > 2 * Math.abs(dy)) step(dx < 0 ? 1 : -1);
  });
  body.addEventListener("pointercancel", () => { swipe = null; });

  function step(delta) {
    const target = index + delta;
    if (target < 0 || target >= list.length) return;
    show(target);
  }

  async function show(at) {
    index = at;
    const summary = list[at];
    const mine = ++ticket;
    prev.disabled = at === 0;
    next.disabled = at === list.length - 1;
    // A disabled button drops focus out of the dialog: keep it inside, for the arrows.
    if (document.activeElement?.disabled || !dialog.contains(document.activeElement)) closeButton.focus();
    title.textContent = localTime(summary.taken_local);
    fill(downloads, ...downloadLinks(summary));
    fill(body, spinner());
    panel = null;
    try {
      const asset = await get(`/api/assets/${encodeURIComponent(summary.id)}`);
      if (mine !== ticket) return;
      title.textContent = localTime(asset.taken_local); // a summary may carry only an id
      const detail = { ...summary, ...asset };
      const view = assetDetail(detail);
      panel = curationPanel(detail, { onCurated });
      view.querySelector(".asset-meta").prepend(panel.el);
      fill(body, view);
    } catch (error) {
      if (mine === ticket) fill(body, inlineProblem(error));
    }
  }

  return {
    dialog,
    open(assets, at) {
      list = assets;
      if (!dialog.open) dialog.showModal();
      show(at);
      closeButton.focus();
    },
    close() {
      if (dialog.open) dialog.close();
    },
  };
}

/** Links that download the original (saved under its own name), and a Live Photo's
 * motion part beside it. */
function downloadLinks(asset) {
  const link = (url, text, label) => {
    const href = url ? withAccessToken(`${url}?download=true`) : null;
    return href ? h("a.button.ghost.small.download", { href, download: "", "aria-label": label }, text) : null;
  };
  return [
    link(asset.original_url, "↓ Original", "Download the original"),
    asset.live ? link(asset.motion_url, "↓ Motion", "Download the motion part") : null,
  ];
}

/** What the asset view shows: the preview, a video player, or a Live Photo whose
 * motion part plays over its still on hover or click. */
function assetMedia(asset, preview) {
  const taken = localTime(asset.taken_local);
  if (asset.kind === "video") {
    const original = withAccessToken(asset.original_url);
    if (asset.playable && original) {
      return h("video.preview.player", {
        src: original, poster: preview || undefined, controls: true, preload: "metadata",
        playsInline: true, "aria-label": `Video taken ${taken}`,
      });
    }
    return h("div.unplayable", {},
      preview ? h("img.preview", { src: preview, alt: `Poster of a video taken ${taken}` }) : null,
      h("p.muted", {}, `This browser cannot play ${asset.video_codec || "this codec"}: `,
        original ? h("a", { href: original, download: "" }, "download the original") : "no original available"));
  }
  const still = preview
    ? h("img.preview", { src: preview, alt: `Photo taken ${taken}` })
    : h("div.preview.placeholder", {}, "No preview rendered yet");
  const motion = withAccessToken(asset.motion_url);
  if (!motion) return still;
  const clip = h("video.preview.motion", { src: motion, muted: true, playsInline: true, preload: "none", hidden: true, "aria-hidden": "true" });
  clip.muted = true; // the attribute alone does not mute a script-made element
  const play = () => {
    clip.hidden = false;
    clip.currentTime = 0;
    clip.play().catch(() => { clip.hidden = true; });
  };
  const stop = () => { clip.pause(); clip.hidden = true; };
  clip.addEventListener("ended", stop);
  const button = h("button.button.small.live-play", { type: "button", onclick: play }, "▶ Live");
  return h("div.live-photo", { onmouseenter: play, onmouseleave: stop, onclick: (event) => { if (event.target !== button) play(); } },
    still, clip, button);
}

function assetDetail(asset) {
  const preview = withAccessToken(asset.preview_url) || withAccessToken(asset.thumbnail_url);
  const camera = cameraName(asset);
  // Nearest first: "Mitte, Berlin, State of Berlin, Germany" (a district only where the city is larger).
  const place = [asset.district, asset.city, asset.region, asset.country].filter(Boolean).join(", ");
  const files = asset.files || [];
  const row = (name, value) => value === null || value === undefined || value === ""
    ? null
    : h("div.fact", {}, h("dt", {}, name), h("dd", {}, value));
  return h("div.asset", { dataset: { assetId: asset.id } },
    h("figure.asset-preview", {}, assetMedia(asset, preview)),
    h("div.asset-meta", {},
      h("section", { "aria-label": "Capture" },
        h("h3", {}, "Capture"),
        h("dl.facts.single", {},
          row("Taken", h("span.taken", { dataset: { takenLocal: asset.taken_local || "" } }, localTime(asset.taken_local))),
          row("Date from", h("span.taken-source", {}, takenSource(asset.taken_source),
            asset.undated ? h("span.badge.undated", {}, "Undated") : null)),
          row("Time zone", asset.tz_name
            ? `${asset.tz_name}${asset.tz_source ? ` (from ${TZ_SOURCES[asset.tz_source] || asset.tz_source})` : ""}`
            : "Floating (no zone known)"),
          row("UTC", asset.taken_utc ? when(asset.taken_utc) : null),
          row("Place", place ? h("span.place", {}, place) : null),
          row("GPS", asset.gps_latitude !== null && asset.gps_latitude !== undefined
            ? `${Number(asset.gps_latitude).toFixed(5)}, ${Number(asset.gps_longitude).toFixed(5)}` : "None"))),
      h("section", { "aria-label": "Camera" },
        h("h3", {}, "Camera"),
        h("dl.facts.single", {},
          row("Camera", camera || "Unknown"),
          row("Lens", asset.lens),
          row("Focal length", asset.focal_length_mm ? `${asset.focal_length_mm} mm` : null),
          row("Aperture", asset.f_number ? `ƒ/${asset.f_number}` : null),
          row("Exposure", asset.exposure_seconds ? exposure(asset.exposure_seconds) : null),
          row("ISO", asset.iso),
          row("Size", asset.width ? `${asset.width} × ${asset.height} px` : null),
          row("Format", asset.format),
          row("Length", asset.kind === "video" ? clipLength(asset.duration) : null),
          row("Codec", asset.video_codec),
          row("Frame rate", asset.frame_rate ? `${asset.frame_rate} fps` : null),
          row("Live", asset.live ? (asset.motion_photo ? "Motion Photo" : "Live Photo") : null),
          row("File size", asset.size ? bytes(asset.size) : null))),
      h("section", { "aria-label": "Files" },
        h("h3", {}, `Files (${files.length})`),
        files.length
          ? h("ul.file-list", {}, ...files.map((file) => h("li", {},
            pathView(joinPath(file.source, file.path)),
            file.state && file.state !== "present" ? h("span.badge", {}, file.state) : null)))
          : h("p.muted", {}, "No files recorded")),
      asset.motion ? motionPart(asset.motion) : null,
      h("p.hash.muted", {}, h("span", {}, "Content hash "), h("code", {}, asset.content_hash || "—"))));
}

/** A Live Photo's MOV: the file that plays, with its size and length. */
function motionPart(motion) {
  const files = motion.files || [];
  return h("section.motion-part", { "aria-label": "Motion part" },
    h("h3", {}, "Motion part"),
    h("ul.file-list", {}, ...files.map((file) => h("li", {},
      pathView(joinPath(file.source, file.path)),
      h("span.muted.small", {}, ` ${bytes(file.size)}`),
      file.state && file.state !== "present" ? h("span.badge", {}, file.state) : null))),
    h("p.muted.small", {}, [
      motion.duration ? `${clipLength(motion.duration)} long` : null,
      motion.video_codec, motion.format?.toUpperCase(),
    ].filter(Boolean).join(" · ")));
}

const TZ_SOURCES = { exif_offset: "the EXIF offset", gps_timezone: "the GPS position", utc: "the GPS clock", floating: "no zone" };

function exposure(seconds) {
  return seconds >= 1 ? `${seconds} s` : `1/${Math.round(1 / seconds)} s`;
}
