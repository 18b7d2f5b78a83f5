// The library's timeline: photos in justified rows at their aspect ratio, grouped by
// capture day under headings, newest first (or oldest), with a date scrubber along
// the right edge (years and months; press or drag to jump anywhere).
//
// GET /api/timeline gives every day with its count (a summary: the same cost at a
// million photos as at ten thousand). Months are buckets: each has a placeholder
// height from its counts until its photos are read, a page at a time, with
// /api/assets?sort=taken-desc&taken_from=…&taken_to=… (a range of the local-time
// index), when it comes near the viewport. So the scrollbar and the scrubber map to
// dates before anything is loaded, and a jump reads only the month it lands on. Only
// the rows near the viewport are in the DOM. When a bucket above the viewport gets its
// true height, the page scrolls by the difference: what is on screen stays put.

import { get } from "./api.js";
import { fill, h } from "./dom.js";
import { listingPath } from "./search.js";

const GAP = 4; // px between photos
const HEADING = 40; // px: a day's heading
const DAY_GAP = 10; // px after a day's last row
const NARROW = 520; // px of timeline width: the phone's rows below it
const MAX_LOADS = 2; // buckets read at once
const MIN_LABEL_GAP = 16; // px between the scrubber's year labels

/** The target row height for a timeline ``width`` px wide: at a phone's 390 px, rows of
 * three or four 4:3 photos. */
export const targetHeight = (width) => (width < NARROW ? 86 : 200);

/** Justified rows over ``aspects`` (width / height): each row but the last is scaled to
 * fill ``width`` exactly; the last keeps the target height. */
export function justify(aspects, width, target, gap = GAP) {
  const rows = [];
  let start = 0;
  let sum = 0;
  for (let i = 0; i < aspects.length; i += 1) {
    sum += aspects[i];
    const n = i - start + 1;
    if (sum * target + gap * (n - 1) >= width) {
      rows.push({ start, end: i + 1, height: (width - gap * (n - 1)) / sum });
      start = i + 1;
      sum = 0;
    }
  }
  if (start < aspects.length) rows.push({ start, end: aspects.length, height: target });
  return rows;
}

/** An asset's aspect ratio from the API's width and height (as displayed), bounded so
 * that a panorama or a missing size cannot break a row. */
export function aspectOf(asset) {
  const ratio = asset.width > 0 && asset.height > 0 ? asset.width / asset.height : 1;
  return Math.min(4, Math.max(0.25, ratio));
}

const dayOf = (asset) => String(asset.taken_local || "").slice(0, 10);

export function monthName(key) {
  const [year, month] = key.split("-").map(Number);
  return new Date(Date.UTC(year, month - 1, 1)).toLocaleDateString(undefined, { month: "long", year: "numeric", timeZone: "UTC" });
}

export function dayName(day) {
  return new Date(`${day}T12:00:00Z`).toLocaleDateString(undefined, {
    weekday: "short", day: "numeric", month: "long", year: "numeric", timeZone: "UTC",
  });
}

function lastDayOf(key) {
  const [year, month] = key.split("-").map(Number);
  return `${key}-${String(new Date(Date.UTC(year, month, 0)).getUTCDate()).padStart(2, "0")}`;
}

/**
 * ``filters``: the listing's filters (q, taken_from, …) and ``order`` ("" or "oldest");
 * ``tile(asset)``: the page's tile for an asset (an ``li``); ``onStatus(timeline)``:
 * the day counts arrived (or ``{error}``).
 */
export function timelineView({ filters, pageSize, tile, onStatus }) {
  const grid = h("ul.gallery", { "aria-label": "Photos" });
  const headings = h("div.day-headings");
  const holder = h("div.gallery-holder.timeline", {}, headings, grid);
  const marks = h("div.scrubber-marks");
  const thumb = h("div.scrubber-thumb", { "aria-hidden": "true" });
  const label = h("div.scrubber-label", { hidden: true, "aria-hidden": "true" });
  const scrubber = h("nav.scrubber", { "aria-label": "Jump to a date", hidden: true }, marks, thumb, label);
  const root = h("div.timeline-view", {}, holder, scrubber);

  let months = [];
  let total = 0;
  let width = 0;
  let target = 200;
  let generation = 0;
  let loads = 0;
  let frame = 0;
  let pressed = false;
  const tiles = new Map(); // asset id → its li, as in the grid
  const heads = new Map(); // day → its heading, as in the list

  async function reset() {
    generation += 1;
    const ticket = generation;
    months = [];
    total = 0;
    loads = 0;
    tiles.clear();
    heads.clear();
    fill(grid);
    fill(headings);
    fill(marks);
    holder.style.height = "0px";
    scrubber.hidden = true;
    try {
      const { order, ...listing } = filters;
      const timeline = await get("/api/timeline", { ...listing, order: order === "oldest" ? "oldest" : "newest" });
      if (ticket !== generation) return;
      months = monthsOf(timeline.days);
      total = timeline.total;
      width = 0; // lay out at the next frame's width
      drawMarks();
      onStatus(timeline);
      renderVisible();
    } catch (error) {
      if (ticket === generation) onStatus({ error });
    }
  }

  function monthsOf(days) {
    const found = [];
    for (const { day, count } of days) {
      const key = day.slice(0, 7);
      let month = found[found.length - 1];
      if (!month || month.key !== key) {
        month = { key, days: [], count: 0, assets: [], cursor: null, done: false, loading: false, items: [], height: 0, loadedHeight: 0, top: 0 };
        found.push(month);
      }
      month.days.push({ day, count });
      month.count += count;
    }
    return found;
  }

  // ── layout ─────────────────────────────────────────────────────────────────
  function layoutMonth(month) {
    const items = [];
    let y = 0;
    let loadedHeight = 0;
    let at = 0;
    const perRow = Math.max(1, Math.floor((width + GAP) / (target * (4 / 3) + GAP)));
    for (const { day, count } of month.days) {
      items.push({ kind: "head", day, count, y, height: HEADING });
      y += HEADING;
      const start = at;
      while (at < month.assets.length && dayOf(month.assets[at]) === day) at += 1;
      const loaded = month.assets.slice(start, at);
      for (const row of justify(loaded.map(aspectOf), width, target)) {
        const cells = [];
        let x = 0;
        for (let i = row.start; i < row.end; i += 1) {
          const w = aspectOf(loaded[i]) * row.height;
          cells.push({ asset: loaded[i], x, w });
          x += w + GAP;
        }
        items.push({ kind: "row", y, height: row.height, cells });
        y += row.height + GAP;
      }
      if (loaded.length) loadedHeight = y;
      // The stream of the month's assets went past this day: every one of it is here.
      const complete = month.done || at < month.assets.length;
      const missing = complete ? 0 : Math.max(0, count - loaded.length);
      y += Math.ceil(missing / perRow) * (target + GAP) + DAY_GAP;
    }
    month.items = items;
    month.height = y;
    month.loadedHeight = month.done ? y : loadedHeight;
  }

  function place() {
    let top = 0;
    for (const month of months) {
      month.top = top;
      top += month.height;
    }
    holder.style.height = `${top}px`;
    placeMarks(top);
  }

  // The month under the viewport's top edge and how far into it: kept in place when
  // heights above it change.
  function anchor() {
    const y = headerBottom() - holder.getBoundingClientRect().top;
    if (y <= 0) return null;
    // A pixel in: a jump puts a month's top at the edge, give or take a fraction, and
    // the month before it is not the one to keep in place.
    const month = monthAt(y + 1);
    return month ? { month, offset: y - month.top, y } : null;
  }

  function restore(kept) {
    if (!kept) return;
    const moved = kept.month.top + kept.offset - kept.y;
    if (Math.abs(moved) > 0.5) window.scrollBy(0, moved);
  }

  function monthAt(y) {
    let low = 0;
    let high = months.length - 1;
    while (low < high) {
      const mid = Math.ceil((low + high) / 2);
      if (months[mid].top <= y) low = mid;
      else high = mid - 1;
    }
    return months[low] || null;
  }

  // ── loading a month's photos ───────────────────────────────────────────────
  async function load(month) {
    month.loading = true;
    loads += 1;
    const ticket = generation;
    const { order, ...listing } = filters;
    const first = `${month.key}-01`;
    const last = lastDayOf(month.key);
    try {
      const page = await get(listingPath(filters), {
        ...listing,
        sort: order === "oldest" ? "taken" : "taken-desc",
        taken_from: listing.taken_from && listing.taken_from > first ? listing.taken_from : first,
        taken_to: listing.taken_to && listing.taken_to < last ? listing.taken_to : last,
        limit: pageSize,
        cursor: month.cursor,
      });
      if (ticket !== generation) return;
      add(month, page.assets);
      month.cursor = page.next_cursor;
      month.done = !month.cursor;
      if (month.done) month.days = month.days.filter(({ day }) => month.assets.some((a) => dayOf(a) === day));
    } catch (error) {
      if (ticket !== generation) return;
      month.done = true; // shown as far as it got; the problem is said once
      onStatus({ error });
    } finally {
      if (ticket === generation) {
        month.loading = false;
        loads -= 1;
        const kept = anchor();
        layoutMonth(month);
        place();
        restore(kept);
        schedule();
      }
    }
  }

  // Assets of a day the counts did not know (taken since, or its date changed) get
  // a heading of their own.
  function add(month, assets) {
    month.assets.push(...assets);
    const known = new Set(month.days.map((d) => d.day));
    const newest = filters.order !== "oldest";
    for (const asset of assets) {
      const day = dayOf(asset);
      if (known.has(day)) continue;
      known.add(day);
      month.days.push({ day, count: 1 });
      month.days.sort((a, b) => (newest ? b.day.localeCompare(a.day) : a.day.localeCompare(b.day)));
    }
  }

  // ── drawing ────────────────────────────────────────────────────────────────
  function schedule() {
    if (!frame) frame = requestAnimationFrame(renderVisible);
  }

  function renderVisible() {
    cancelAnimationFrame(frame);
    frame = 0;
    if (!months.length) return;
    const nextWidth = holder.clientWidth;
    if (nextWidth !== width && nextWidth > 0) {
      const kept = width ? anchor() : null;
      width = nextWidth;
      target = targetHeight(width);
      months.forEach(layoutMonth);
      place();
      restore(kept);
    }
    const holderTop = holder.getBoundingClientRect().top;
    const top = headerBottom() - holderTop;
    const bottom = top + innerHeight;
    // The scrubber runs from the timeline's top (below the filters, while they show)
    // to the window's foot.
    const scrubberTop = `${Math.round(Math.max(headerBottom() + 12, holderTop))}px`;
    if (scrubber.style.top !== scrubberTop) {
      scrubber.style.top = scrubberTop;
      placeMarks(Number.parseFloat(holder.style.height) || 0);
    }
    const from = top - innerHeight;
    const to = bottom + innerHeight;
    const wantedTiles = [];
    const wantedHeads = [];
    const toLoad = [];
    for (let m = months.indexOf(monthAt(Math.max(0, from))); m >= 0 && m < months.length; m += 1) {
      const month = months[m];
      if (month.top > to) break;
      if (!month.done && !month.loading && month.top + month.loadedHeight < to) toLoad.push(month);
      for (const item of month.items) {
        const y = month.top + item.y;
        if (y + item.height < from) continue;
        if (y > to) break;
        if (item.kind === "head") wantedHeads.push(headingFor(item, y));
        else for (const cell of item.cells) wantedTiles.push(tileFor(cell, y, item.height));
      }
    }
    sync(grid, wantedTiles, tiles, (node) => Number(node.dataset.assetId));
    sync(headings, wantedHeads, heads, (node) => node.dataset.day);
    // The buckets on screen first, then those a screen away.
    const distance = (month) => Math.max(0, month.top - bottom, top - (month.top + month.height));
    toLoad.sort((a, b) => distance(a) - distance(b));
    for (const month of toLoad) {
      if (loads >= MAX_LOADS) break;
      load(month);
    }
    placeThumb(top);
  }

  function headingFor(item, y) {
    let node = heads.get(item.day);
    if (!node) {
      node = h("h2.day-heading", { dataset: { day: item.day } }, h("span.day-name", {}, dayName(item.day)));
      heads.set(item.day, node);
    }
    node.style.top = `${y}px`;
    return node;
  }

  function tileFor(cell, y, height) {
    let node = tiles.get(Number(cell.asset.id));
    if (!node) {
      node = tile(cell.asset);
      tiles.set(Number(cell.asset.id), node);
    }
    Object.assign(node.style, { left: `${cell.x}px`, top: `${y}px`, width: `${cell.w}px`, height: `${height}px` });
    return node;
  }

  // The container's children become ``wanted``, in order; nodes already there stay
  // (a focused tile keeps its focus, a loaded image its pixels).
  function sync(container, wanted, cache, keyOf) {
    const keep = new Set(wanted);
    for (const child of [...container.children]) {
      if (keep.has(child)) continue;
      child.remove();
      cache.delete(keyOf(child));
    }
    let next = container.firstElementChild;
    for (const node of wanted) {
      if (node === next) next = next.nextElementSibling;
      else container.insertBefore(node, next);
    }
  }

  // ── the scrubber ───────────────────────────────────────────────────────────
  function drawMarks() {
    const nodes = [];
    let year = null;
    for (const month of months) {
      const y = month.key.slice(0, 4);
      month.mark = h("span.scrubber-month", { dataset: { month: month.key }, title: monthName(month.key) });
      nodes.push(month.mark);
      if (y !== year) {
        year = y;
        month.yearMark = h("button.scrubber-year", {
          type: "button", dataset: { year: y }, "aria-label": `Jump to ${monthName(month.key)}`,
          onclick: () => jumpTo(month),
        }, y);
        nodes.push(month.yearMark);
      }
    }
    fill(marks, ...nodes);
  }

  function placeMarks(height) {
    scrubber.hidden = !months.length || height <= innerHeight;
    const track = marks.clientHeight || 1;
    let lastLabel = -Infinity;
    for (const month of months) {
      const y = height ? (month.top / height) * track : 0;
      month.mark.style.top = `${y}px`;
      if (month.yearMark) {
        month.yearMark.style.top = `${y}px`;
        month.yearMark.hidden = y - lastLabel < MIN_LABEL_GAP;
        if (!month.yearMark.hidden) lastLabel = y;
      }
    }
  }

  function placeThumb(top) {
    const height = Number.parseFloat(holder.style.height) || 1;
    thumb.style.top = `${Math.min(1, Math.max(0, top / height)) * marks.clientHeight}px`;
  }

  function monthAtScrubber(clientY) {
    const box = marks.getBoundingClientRect();
    const fraction = Math.min(1, Math.max(0, (clientY - box.top) / (box.height || 1)));
    return monthAt(fraction * (Number.parseFloat(holder.style.height) || 0));
  }

  /** Scroll so that ``month``'s first day is at the top, under the header. */
  function jumpTo(month) {
    const y = holder.getBoundingClientRect().top + scrollY + month.top - headerBottom();
    window.scrollTo(0, Math.max(0, y));
    renderVisible();
  }

  function showLabel(event) {
    const month = monthAtScrubber(event.clientY);
    if (!month) return;
    label.hidden = false;
    label.textContent = monthName(month.key);
    label.style.top = `${event.clientY - marks.getBoundingClientRect().top}px`;
  }

  scrubber.addEventListener("pointerdown", (event) => {
    if (event.button !== 0 || event.target.closest(".scrubber-year")) return;
    event.preventDefault();
    pressed = true;
    scrubber.setPointerCapture?.(event.pointerId);
    showLabel(event);
    const month = monthAtScrubber(event.clientY);
    if (month) jumpTo(month);
  });
  scrubber.addEventListener("pointermove", (event) => {
    showLabel(event);
    if (!pressed) return;
    const month = monthAtScrubber(event.clientY);
    if (month) jumpTo(month);
  });
  const release = () => { pressed = false; };
  scrubber.addEventListener("pointerup", release);
  scrubber.addEventListener("pointercancel", release);
  scrubber.addEventListener("pointerleave", () => { if (!pressed) label.hidden = true; });

  const resized = new ResizeObserver(() => { placeMarks(Number.parseFloat(holder.style.height) || 0); schedule(); });
  resized.observe(holder);
  resized.observe(marks);
  addEventListener("scroll", schedule, { passive: true });

  return {
    root,
    reset,
    get total() { return total; },
    /** Every loaded asset, in the timeline's order. */
    loaded: () => months.flatMap((month) => month.assets),
    /** Draw these assets' tiles again (their curation changed). */
    redraw(ids) {
      for (const id of ids.map(Number)) {
        const old = tiles.get(id);
        if (!old) continue;
        const asset = months.flatMap((m) => m.assets).find((a) => Number(a.id) === id);
        if (!asset) continue;
        const fresh = tile(asset);
        fresh.style.cssText = old.style.cssText;
        old.replaceWith(fresh);
        tiles.set(id, fresh);
      }
    },
    leave() {
      generation += 1;
      resized.disconnect();
      removeEventListener("scroll", schedule);
      cancelAnimationFrame(frame);
    },
  };
}

/** Where the page's content starts below the sticky header (0 when it scrolled away). */
function headerBottom() {
  const header = document.querySelector(".topbar");
  return header && !header.hidden ? Math.max(0, header.getBoundingClientRect().bottom) : 0;
}
