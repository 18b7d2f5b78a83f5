// Albums: every album with its cover, count and dates; one album's photos, in the
// order they were taken, with its cover chosen, a photo taken out, the album renamed
// or removed (its photos stay). Photos are put in albums from the library
// (../curation.js: the viewer's panel and the Select mode).

import { accessToken, get, post, request, withAccessToken } from "../api.js";
import { emptyState, inlineProblem, pageHeader, showProblem, spinner } from "../components.js";
import { fill, h } from "../dom.js";
import { localTime, plural } from "../format.js";

const PAGE = 200;

export function render(main, params) {
  const [albumId] = params;
  if (albumId) return showAlbum(main, albumId);
  return listAlbums(main);
}

function span(album) {
  if (!album.taken_from) return "No photos yet";
  const from = localTime(album.taken_from).slice(0, 10);
  const to = localTime(album.taken_to).slice(0, 10);
  return from === to ? from : `${from} – ${to}`;
}

function listAlbums(main) {
  const grid = h("ul.album-grid", { "aria-label": "Albums" });
  const name = h("input#new-album-name", { type: "text", name: "name", maxlength: 200, required: true, placeholder: "Summer 2024" });
  const form = h("form.album-form", {
    onsubmit: async (event) => {
      event.preventDefault();
      const wanted = name.value.trim();
      if (!wanted) return;
      try {
        await post("/api/albums", { name: wanted });
        name.value = "";
        load();
      } catch (error) {
        showProblem(error, { context: "New album" });
      }
    },
  }, h("label", { for: "new-album-name" }, "New album"), name, h("button.button.small", { type: "submit" }, "Create"));
  fill(main, pageHeader("Albums", "Photos gathered by you; a photo may be in many albums."), form, grid);

  async function load() {
    fill(grid, spinner("Loading albums…"));
    try {
      await accessToken(); // cover URLs need it
      const albums = await get("/api/albums");
      if (!albums.length) {
        fill(grid, emptyState("No albums yet", "Create one here, or choose photos in the Library and add them to a new album."));
        return;
      }
      fill(grid, ...albums.map((album) => {
        const cover = withAccessToken(album.cover_url);
        return h("li.album-card", { dataset: { albumId: album.id } },
          h("a", { href: `/albums/${album.id}`, dataset: { link: "" } },
            cover ? h("img.album-cover", { src: cover, alt: "", loading: "lazy" }) : h("span.album-cover"),
            h("span.album-caption", {},
              h("span.album-name", {}, album.name),
              h("span.album-count.muted.small", {}, plural(album.count, "photo")),
              h("span.album-dates.muted.small", {}, span(album)))));
      }));
    } catch (error) {
      fill(grid, inlineProblem(error));
    }
  }
  load();
  return null;
}

function showAlbum(main, albumId) {
  const head = h("div.album-head");
  const photos = h("ul.album-photos", { "aria-label": "Photos in the album" });
  const more = h("button.button.ghost.small.album-more", { type: "button", hidden: true, onclick: () => loadPage() }, "More photos");
  let album = null;
  let cursor = null;
  fill(main, head, photos, more);

  async function loadAlbum() {
    fill(head, spinner());
    try {
      await accessToken();
      album = await get(`/api/albums/${encodeURIComponent(albumId)}`);
      drawHead();
      fill(photos);
      cursor = null;
      await loadPage();
    } catch (error) {
      fill(head, pageHeader("Album"), inlineProblem(error));
    }
  }

  function drawHead() {
    fill(head, pageHeader(album.name, `${plural(album.count, "photo")} · ${span(album)}`,
      h("a.button.ghost.small", { href: `/library?album=${album.id}`, dataset: { link: "" } }, "Open in Library"),
      h("button.button.ghost.small", { type: "button", onclick: rename }, "Rename"),
      h("button.button.ghost.small.danger", { type: "button", onclick: remove }, "Remove album")),
    h("p", {}, h("a", { href: "/albums", dataset: { link: "" } }, "← All albums")));
  }

  async function loadPage() {
    try {
      const page = await get("/api/assets", { album: album.id, sort: "taken", limit: PAGE, cursor });
      cursor = page.next_cursor;
      more.hidden = !cursor;
      if (!page.assets.length && !photos.children.length) {
        fill(photos, emptyState("This album is empty", "Choose photos in the Library and add them to it."));
        return;
      }
      photos.append(...page.assets.map(photo));
    } catch (error) {
      photos.append(inlineProblem(error));
    }
  }

  function photo(asset) {
    const src = withAccessToken(asset.thumbnail_url);
    const isCover = album.cover_asset_id === asset.id;
    return h("li.album-photo", { dataset: { assetId: asset.id } },
      src ? h("img", { src, alt: `Photo taken ${localTime(asset.taken_local)}`, loading: "lazy" }) : h("span.thumb.placeholder", {}, "Not rendered yet"),
      h("span.muted.small", {}, localTime(asset.taken_local)),
      asset.rating || asset.favorite
        ? h("span.tile-marks", {}, asset.favorite ? "♥ " : "", "★".repeat(asset.rating || 0))
        : null,
      h("div.album-photo-actions", {},
        isCover
          ? h("span.badge", {}, "Cover")
          : h("button.button.ghost.small", { type: "button", onclick: () => setCover(asset) }, "Make cover"),
        h("button.button.ghost.small", { type: "button", onclick: () => takeOut(asset) }, "Remove")));
  }

  async function setCover(asset) {
    try {
      await request("PATCH", `/api/albums/${album.id}`, { body: { cover_asset_id: asset.id } });
      loadAlbum();
    } catch (error) {
      showProblem(error, { context: "Cover" });
    }
  }

  async function takeOut(asset) {
    try {
      await request("DELETE", `/api/albums/${album.id}/assets/${asset.id}`);
      loadAlbum();
    } catch (error) {
      showProblem(error, { context: "Remove from album" });
    }
  }

  async function rename() {
    const name = (prompt("New name of the album", album.name) || "").trim();
    if (!name || name === album.name) return;
    try {
      album = await request("PATCH", `/api/albums/${album.id}`, { body: { name } });
      drawHead();
    } catch (error) {
      showProblem(error, { context: "Rename album" });
    }
  }

  async function remove() {
    if (!confirm(`Remove the album "${album.name}"? Its photos stay in the library.`)) return;
    try {
      await request("DELETE", `/api/albums/${album.id}`);
      history.pushState(null, "", "/albums");
      dispatchEvent(new PopStateEvent("popstate"));
    } catch (error) {
      showProblem(error, { context: "Remove album" });
    }
  }

  loadAlbum();
  return null;
}
