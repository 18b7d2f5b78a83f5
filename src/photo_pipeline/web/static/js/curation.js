// Curation in the browser: a favourite heart, rating stars (keys 0–5 in the viewer),
// the reject flag (key x), tags and albums — on one photo (the viewer's panel, a
// tile's heart) or on a selection (the library's Select mode). Every action goes to
// the API, which answers what it changed; ``onCurated(ids, change)`` then lets the
// page apply ``change(asset)`` to the assets it holds and draw them again.

import { get, post } from "./api.js";
import { showProblem } from "./components.js";
import { fill, h } from "./dom.js";
import { plural } from "./format.js";

const MAX_RATING = 5;

/** What one action does to an asset object held by a page (as the API's fields). */
function changeFor(action, extra = {}) {
  // A tag as the server stores it: each level trimmed, runs of space made one.
  if (extra.tag) extra = { ...extra, tag: extra.tag.split("|").map((level) => level.trim().replace(/\s+/g, " ")).join("|") };
  return (asset) => {
    if (action === "rate") asset.rating = extra.rating;
    if (action === "favorite" || action === "unfavorite") asset.favorite = action === "favorite";
    if (action === "reject" || action === "unreject") asset.rejected = action === "reject";
    if (action === "tag" && !(asset.tags || []).some((t) => t.toLowerCase() === extra.tag.toLowerCase())) {
      asset.tags = [...(asset.tags || []), extra.tag];
    }
    if (action === "untag") asset.tags = (asset.tags || []).filter((t) => t.toLowerCase() !== extra.tag.toLowerCase());
    if (action === "add_to_album" && !(asset.albums || []).some((a) => a.id === extra.album)) {
      asset.albums = [...(asset.albums || []), { id: extra.album, name: extra.albumName || "" }];
    }
    if (action === "remove_from_album") asset.albums = (asset.albums || []).filter((a) => a.id !== extra.album);
  };
}

/** One action on the assets ``ids`` (POST /api/curation), then ``onCurated``. */
export async function curate(ids, action, extra, onCurated) {
  const { albumName, ...fields } = extra || {};
  try {
    const outcome = await post("/api/curation", { ids, action, ...fields });
    onCurated?.(ids, changeFor(action, extra || {}), outcome);
    return outcome;
  } catch (error) {
    showProblem(error, { context: ACTION_WORDS[action] || action });
    return null;
  }
}

const ACTION_WORDS = {
  rate: "Rate", favorite: "Favourite", unfavorite: "Favourite", reject: "Reject", unreject: "Reject",
  tag: "Tag", untag: "Remove tag", add_to_album: "Add to album", remove_from_album: "Remove from album",
};

/** Where the photo's curation is kept besides the catalogue: its XMP sidecar (written,
 * or read from it), or nowhere else when its folder is read-only. */
function xmpNote(asset) {
  const xmp = asset.xmp;
  if (!xmp) return h("p.muted.small.xmp-status", { dataset: { state: "none" } }, "Not in an XMP sidecar yet");
  const name = xmp.sidecar ? ` (${xmp.sidecar})` : "";
  const words = {
    pending: "Being written to its XMP sidecar",
    written: `Written to its XMP sidecar${name}`,
    read: `Read from its XMP sidecar${name}`,
    embedded: "Rating and keywords read from the photo itself",
    read_only: "Kept in the catalogue only: the photo's folder is read-only",
    failed: `Its XMP sidecar could not be written${xmp.message ? `: ${xmp.message}` : ""}`,
  }[xmp.state] || xmp.said;
  return h("p.muted.small.xmp-status", { dataset: { state: xmp.state } }, words);
}

export const stars = (n) => "★".repeat(n || 0) + "☆".repeat(MAX_RATING - (n || 0));

/** A tile's marks: the heart toggle (its own button beside the tile's) and, for its
 * thumbnail, a badge with the stars and the reject flag. */
export function tileMarks(asset, { onCurated }) {
  const heart = h("button.tile-heart", {
    type: "button",
    "aria-pressed": String(Boolean(asset.favorite)),
    "aria-label": asset.favorite ? "Remove from favourites" : "Add to favourites",
    title: asset.favorite ? "Favourite" : "Mark as favourite",
    onclick: (event) => {
      event.stopPropagation();
      curate([asset.id], asset.favorite ? "unfavorite" : "favorite", {}, onCurated);
    },
  }, asset.favorite ? "♥" : "♡");
  const badge = asset.rating || asset.rejected
    ? h("span.tile-marks", { dataset: { rating: String(asset.rating || 0), rejected: String(Boolean(asset.rejected)) } },
      asset.rating ? h("span.tile-stars", { "aria-label": `${asset.rating} of 5 stars` }, "★".repeat(asset.rating)) : null,
      asset.rejected ? h("span.tile-rejected", {}, "Rejected") : null)
    : null;
  return [heart, badge];
}

/** The viewer's curation panel for one asset; ``key(event)`` handles 0–5 (rate),
 * x (reject), f (favourite) and returns whether it did. */
export function curationPanel(asset, { onCurated }) {
  const root = h("section.curation", { "aria-label": "Curation", dataset: { assetId: asset.id } });
  const act = async (action, extra = {}) => {
    const done = await curate([asset.id], action, extra, (ids, change, outcome) => {
      change(asset);
      draw();
      onCurated?.(ids, change, outcome);
    });
    return done;
  };

  function draw() {
    const heart = h("button.button.small.heart", {
      type: "button", "aria-pressed": String(Boolean(asset.favorite)),
      onclick: () => act(asset.favorite ? "unfavorite" : "favorite"),
    }, asset.favorite ? "♥ Favourite" : "♡ Favourite");
    const rating = h("div.rating", { role: "radiogroup", "aria-label": "Rating" },
      ...Array.from({ length: MAX_RATING }, (_, i) => {
        const n = i + 1;
        const on = (asset.rating || 0) >= n;
        return h("button.star", {
          type: "button", role: "radio", "aria-checked": String(asset.rating === n),
          "aria-label": `${n} star${n > 1 ? "s" : ""}`, class: on ? "on" : "",
          // Clicking the rating it has takes it off (0), as the 0 key does.
          onclick: () => act("rate", { rating: asset.rating === n ? 0 : n }),
        }, on ? "★" : "☆");
      }));
    const reject = h("button.button.small.ghost.reject", {
      type: "button", "aria-pressed": String(Boolean(asset.rejected)),
      onclick: () => act(asset.rejected ? "unreject" : "reject"),
    }, asset.rejected ? "Rejected ✕" : "Reject");
    fill(root,
      h("h3", {}, "Curation"),
      h("div.curation-marks", {}, heart, rating, reject),
      h("p.muted.small.curation-keys", {}, "Keys: 1–5 rate, 0 unrated, f favourite, x reject"),
      tagsEditor(asset, act),
      albumsEditor(asset, act),
      xmpNote(asset));
  }
  draw();
  return {
    el: root,
    key(event) {
      if (event.ctrlKey || event.metaKey || event.altKey) return false;
      if (/^[0-5]$/.test(event.key)) {
        const n = Number(event.key);
        if (n !== (asset.rating || 0)) act("rate", { rating: n });
        return true;
      }
      if (event.key === "x" || event.key === "X") { act(asset.rejected ? "unreject" : "reject"); return true; }
      if (event.key === "f" || event.key === "F") { act(asset.favorite ? "unfavorite" : "favorite"); return true; }
      return false;
    },
  };
}

function tagsEditor(asset, act) {
  const input = h("input.tag-input", { type: "text", name: "tag", placeholder: "Add a tag (Places|France|Paris)", "aria-label": "Add a tag", maxlength: 500, list: "curation-tags" });
  const list = h("datalist#curation-tags");
  get("/api/tags").then((tags) => fill(list, ...tags.map((t) => h("option", { value: t.path })))).catch(() => {});
  return h("div.tags-editor", {},
    h("h4", {}, "Tags"),
    h("ul.tag-chips", { "aria-label": "Tags" }, ...(asset.tags || []).map((tag) => h("li.tag-chip", {},
      h("span", {}, tag),
      h("button.chip-remove", { type: "button", "aria-label": `Remove tag ${tag}`, onclick: () => act("untag", { tag }) }, "×")))),
    h("form.tag-form", {
      onsubmit: (event) => {
        event.preventDefault();
        const tag = input.value.trim();
        if (tag) act("tag", { tag });
      },
    }, input, list, h("button.button.small", { type: "submit" }, "Add")));
}

function albumsEditor(asset, act) {
  const picker = albumPicker((album) => act("add_to_album", { album: album.id, albumName: album.name }));
  return h("div.albums-editor", {},
    h("h4", {}, "Albums"),
    h("ul.tag-chips", { "aria-label": "Albums" }, ...(asset.albums || []).map((album) => h("li.tag-chip.album-chip", {},
      h("a", { href: `/albums/${album.id}`, dataset: { link: "" } }, album.name),
      h("button.chip-remove", { type: "button", "aria-label": `Remove from album ${album.name}`, onclick: () => act("remove_from_album", { album: album.id }) }, "×")))),
    picker);
}

/** A select of the albums with "New album…"; ``chosen(album)`` once one is picked
 * (a new one is made first). */
export function albumPicker(chosen) {
  const select = h("select.album-picker", { "aria-label": "Add to album" },
    h("option", { value: "" }, "Add to album…"));
  const refresh = () => get("/api/albums").then((albums) => {
    fill(select, h("option", { value: "" }, "Add to album…"),
      ...albums.map((a) => h("option", { value: String(a.id) }, a.name)),
      h("option", { value: "new" }, "New album…"));
    select.albums = albums;
  }).catch(() => {});
  refresh();
  select.addEventListener("change", async () => {
    const value = select.value;
    select.value = "";
    if (!value) return;
    if (value === "new") {
      const name = (prompt("Name of the new album") || "").trim();
      if (!name) return;
      try {
        const album = await post("/api/albums", { name });
        await chosen(album);
        refresh();
      } catch (error) {
        showProblem(error, { context: "New album" });
      }
      return;
    }
    const album = (select.albums || []).find((a) => String(a.id) === value);
    if (album) chosen(album);
  });
  return select;
}

/** The Select mode's actions on the chosen photos: favourite, rate, reject, tag,
 * add to album. ``ids()`` names them. */
export function selectionActions({ ids, onCurated }) {
  const run = (action, extra) => {
    const chosen = ids();
    if (!chosen.length) return null;
    return curate(chosen, action, extra, (done, change, outcome) => {
      onCurated(done, change, outcome);
      fill(said, `${ACTION_WORDS[action]}: ${plural(outcome.changed.length, "photo")} changed`);
    });
  };
  const said = h("span.curation-said.muted.small", { role: "status", "aria-live": "polite" });
  const rate = h("select.rate-selection", { "aria-label": "Rate the selection" },
    h("option", { value: "" }, "Rate…"),
    ...Array.from({ length: MAX_RATING + 1 }, (_, n) => h("option", { value: String(n) }, n ? "★".repeat(n) : "Unrated")));
  rate.addEventListener("change", () => {
    if (rate.value !== "") run("rate", { rating: Number(rate.value) });
    rate.value = "";
  });
  const tagInput = h("input.tag-selection", { type: "text", placeholder: "Tag…", "aria-label": "Tag the selection", maxlength: 500 });
  return h("div.selection-curation", {},
    h("button.button.small", { type: "button", onclick: () => run("favorite") }, "♥ Favourite"),
    rate,
    h("button.button.small.ghost", { type: "button", onclick: () => run("reject") }, "Reject"),
    h("form.tag-selection-form", {
      onsubmit: (event) => {
        event.preventDefault();
        const tag = tagInput.value.trim();
        if (tag) run("tag", { tag })?.then((done) => { if (done) tagInput.value = ""; });
      },
    }, tagInput),
    albumPicker((album) => run("add_to_album", { album: album.id, albumName: album.name })),
    said);
}

/** The library filters curation adds: rating, favourite, rejected, tag. */
export const CURATION_FILTERS = ["rating", "favorite", "rejected", "tag", "album"];

export function curationFilterInputs(values, select) {
  return [
    ["rating", "Rating", select("rating", values.rating, [["", "Any rating"], [">=1", "★ and up"], [">=3", "★★★ and up"], [">=4", "★★★★ and up"], ["5", "★★★★★"], ["0", "Unrated"]])],
    ["favorite", "Favourites", select("favorite", values.favorite, [["", "All"], ["true", "Favourites"], ["false", "Not favourites"]])],
    ["rejected", "Rejected", select("rejected", values.rejected, [["", "All"], ["false", "Not rejected"], ["true", "Rejected"]])],
    ["tag", "Tag", h("input#filter-tag", { type: "search", name: "tag", value: values.tag, placeholder: "Tag (a parent finds its children)" })],
  ];
}
