// Library: a virtualised thumbnail grid paged by cursor as you scroll (only the
// rows near the viewport are in the DOM), filters, and an asset view with the
// preview and metadata. Videos carry a badge with their length and play in the asset
// view (H.264/HEVC in MP4/MOV; others show the poster and a download link); a Live
// Photo carries a "Live" badge and plays its motion part on hover or click. A photo
// dated only by its file's mtime carries an "Undated" badge; Select mode chooses
// photos for "Set date" (library_dates.js) and for curation (../curation.js: heart,
// rating, reject, tags, albums; shift-click or a drag chooses a range). The viewer
// rates by keys.

import { accessToken, get, withAccessToken } from "../api.js";
import { emptyState, inlineProblem, joinPath, pageHeader, pathView, spinner } from "../components.js";
import { debounce, fill, h } from "../dom.js";
import { bytes, clipLength, count, localTime, plural, takenSource, when } from "../format.js";
import { dateSelection } from "./library_dates.js";
import { CURATION_FILTERS, curationFilterInputs, curationPanel, selectionActions, tileMarks } from "../curation.js";
import { uploadPanel } from "../upload.js";
import { listingPath, searchBox } from "../search.js";

const PAGE = 120;
const MIN_TILE = 170; // px, as .gallery's grid-template-columns in app.css
const GAP = 14; // px, .gallery's gap
const CAPTION_GUESS = 56; // px, until a rendered tile is measured
const FILTERS = ["q", "taken_from", "taken_to", "camera", "has_gps", "duplicates", "place", "type", "sort", ...CURATION_FILTERS];

export function render(main, _params, query) {
  const filters = Object.fromEntries(FILTERS.map((name) => [name, query.get(name) || ""]));
  const pageSize = Math.min(500, Math.max(1, Number(query.get("limit")) || PAGE));
  const grid = h("ul.gallery", { "aria-label": "Photos" });
  const status = h("p.gallery-status.muted", { role: "status", "aria-live": "polite" });
  // The holder is as tall as every loaded row; the grid inside holds only the rows
  // near the viewport, moved down to where they belong.
  const holder = h("div.gallery-holder", {}, grid);
  const viewer = assetViewer(curated);
  const dates = dateSelection({
    actions: selectionActions({ ids: () => dates.ids(), onCurated: curated }),
    onChanged: () => reset(),
    onToggle: (id, chosen) => {
      const item = grid.querySelector(`.tile[data-asset-id="${id}"]`);
      if (item) markChosen(item, chosen);
    },
  });
  let cursor = null;
  let done = false;
  let loading = false;
  let generation = 0;
  const assets = [];
  let columns = 1;
  let rowHeight = 0; // a tile's height plus the gap, measured from a rendered tile
  let shown = { first: 0, last: -1 }; // indexes of the assets whose tiles are in the grid
  let frame = 0;
  let lastChosen = null; // the index a shift-click chooses a range from
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
    pageHeader("Library", "Every unique photo, in the order it was taken."),
    upload.root,
    searchBox(filters.q, (q) => applyFilters({ q })),
    filterForm(filters, applyFilters),
    h("div.gallery-bar", {}, status, dates.bar),
    dates.outcome,
    holder,
    viewer.dialog,
    dates.dialog);

  async function loadPage() {
    if (loading || done) return;
    loading = true;
    const ticket = generation;
    if (!assets.length) fill(status, spinner("Loading photos…"));
    try {
      await accessToken(); // image URLs need it
      const page = await get(listingPath(filters), { ...filters, cursor, limit: pageSize });
      if (ticket !== generation) return;
      cursor = page.next_cursor;
      done = !cursor;
      assets.push(...page.assets);
      showStatus();
    } catch (error) {
      if (ticket === generation) fill(status, inlineProblem(error));
      done = true;
    } finally {
      if (ticket === generation) loading = false;
    }
    // At once, not next frame: the page grows before anyone scrolls to its new end.
    if (ticket === generation) renderVisible(); // and it fetches on while the end is near
  }

  function showStatus() {
    if (!assets.length) {
      const filtered = Object.entries(filters).some(([name, value]) => name !== "sort" && value);
      fill(status, emptyState(
        filtered ? "No photos match these filters" : "The library is empty",
        filtered ? "Clear a filter to see more." : "Import a folder on the Jobs page to fill it.",
      ));
      return;
    }
    fill(status, done ? plural(assets.length, "photo") : `${plural(assets.length, "photo")} loaded · scroll for more`);
  }

  function schedule() {
    if (!frame) frame = requestAnimationFrame(renderVisible);
  }

  // Render the rows within a screen of the viewport; nodes already in the grid stay
  // (a focused tile keeps its focus, a loaded image its pixels).
  function renderVisible() {
    cancelAnimationFrame(frame);
    frame = 0;
    const width = holder.clientWidth;
    const nextColumns = Math.max(1, Math.floor((width + GAP) / (MIN_TILE + GAP)));
    if (nextColumns !== columns) {
      columns = nextColumns;
      grid.style.gridTemplateColumns = `repeat(${columns}, minmax(0, 1fr))`;
    }
    const rowGuess = rowHeight || (width - GAP * (columns - 1)) / columns + CAPTION_GUESS + GAP;
    const rows = Math.ceil(assets.length / columns);
    holder.style.height = `${Math.max(0, rows * rowGuess - GAP)}px`;
    const top = -holder.getBoundingClientRect().top;
    const firstRow = Math.max(0, Math.floor((top - innerHeight) / rowGuess));
    const lastRow = Math.min(rows - 1, Math.floor((top + 2 * innerHeight) / rowGuess));
    const first = firstRow * columns;
    const last = Math.min(assets.length - 1, (lastRow + 1) * columns - 1);
    if (first !== shown.first || last !== shown.last) {
      if (last < shown.first || first > shown.last) {
        fill(grid);
        shown = { first, last: first - 1 };
      }
      while (shown.first < first && grid.firstChild) { grid.firstChild.remove(); shown.first += 1; }
      while (shown.last > last && grid.lastChild) { grid.lastChild.remove(); shown.last -= 1; }
      const before = [];
      for (let i = first; i < shown.first; i += 1) before.push(tile(assets[i], i));
      grid.prepend(...before);
      const after = [];
      for (let i = shown.last + 1; i <= last; i += 1) after.push(tile(assets[i], i));
      grid.append(...after);
      shown = { first, last };
    }
    grid.style.top = `${firstRow * rowGuess}px`; // not a transform: it would paint differently
    const measured = grid.firstElementChild ? grid.firstElementChild.getBoundingClientRect().height + GAP : 0;
    if (measured && Math.abs(measured - rowHeight) > 0.01) {
      rowHeight = measured;
      schedule(); // place the rows again with the true height
    }
    if (!done && !loading && lastRow >= rows - 1 - Math.ceil(innerHeight / rowGuess)) loadPage();
  }

  function tile(asset, index) {
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
          drag = { from: index, moved: false };
        }
      },
      onpointerenter: () => {
        if (!drag || !dates.active || drag.from === index && !drag.moved) return;
        drag.moved = true;
        chooseRange(drag.from, index);
      },
    };
    const item = h("li.tile", { dataset: { assetId: asset.id, kind: asset.kind || "photo", undated: asset.undated ? "true" : "false" }, ...hover, ...dragging },
      h("button.tile-button", {
        type: "button",
        "aria-label": `Open ${what}: ${label}`,
        onclick: (event) => {
          if (!dates.active) return viewer.open(assets, index);
          if (dragged) {
            dragged = false;
            return null;
          }
          if (event.shiftKey && lastChosen !== null) chooseRange(lastChosen, index);
          else dates.toggle(asset);
          lastChosen = index;
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

  // Choose every photo from one index to another (a shift-click, a drag).
  function chooseRange(one, other) {
    for (let i = Math.min(one, other); i <= Math.max(one, other); i += 1) {
      if (!dates.has(assets[i].id)) dates.toggle(assets[i]);
    }
    lastChosen = other;
  }

  function endDrag(event) {
    // A click follows on the tile pressed only when the press also ends there.
    const ended = event.target.closest?.(".tile");
    dragged = Boolean(drag?.moved && ended && Number(ended.dataset.assetId) === Number(assets[drag.from]?.id));
    drag = null;
  }

  // A curation changed these assets (curation.js): apply it and draw their tiles again.
  function curated(ids, change) {
    const wanted = new Set(ids.map(Number));
    assets.forEach((asset, index) => {
      if (!wanted.has(Number(asset.id))) return;
      change(asset);
      const old = grid.querySelector(`.tile[data-asset-id="${asset.id}"]`);
      if (old) old.replaceWith(tile(asset, index));
    });
  }

  function markChosen(item, chosen) {
    item.classList.toggle("chosen", chosen);
    const button = item.querySelector(".tile-button");
    if (dates.active || chosen) button.setAttribute("aria-pressed", String(chosen));
    else button.removeAttribute("aria-pressed");
  }

  function reset() {
    generation += 1;
    assets.length = 0;
    cursor = null;
    done = false;
    loading = false;
    fill(grid);
    shown = { first: 0, last: -1 };
    loadPage();
  }

  // The holder's width changes with the window and with a scrollbar appearing.
  const resized = new ResizeObserver(schedule);
  resized.observe(holder);
  addEventListener("scroll", schedule, { passive: true });
  addEventListener("pointerup", endDrag);
  loadPage();
  return () => {
    upload.leave();
    removeEventListener("scroll", schedule);
    removeEventListener("pointerup", endDrag);
    resized.disconnect();
    cancelAnimationFrame(frame);
    generation += 1;
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
    // The API's ?sort= (library.ordering): the instant, the local clock shown, or newest added.
    sort: select("sort", values.sort, [["", "When taken"], ["taken", "Local time shown"], ["added", "Newest added"]]),
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
  field("sort", "Order", inputs.sort),
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
  const dialog = h("dialog.viewer", { "aria-labelledby": "viewer-title" },
    h("div.viewer-head", {}, title, h("div.viewer-nav", {}, prev, next, closeButton)),
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
