// Places: every photo with a position on a world map, in clusters the server counts
// (/api/map) for the view and zoom, beside the countries → regions → cities they were
// taken in (/api/places). Clicking a cluster zooms into it; at the deepest zoom (or a
// cluster of photos at one spot) it lists its photos, which open in the asset view.
// Fully offline: Leaflet and Natural Earth's countries (world-atlas, drawn through
// topojson-client) are vendored; there is no tile server.

import { accessToken, get, withAccessToken } from "../api.js";
import { inlineProblem, pageHeader, spinner } from "../components.js";
import { fill, h } from "../dom.js";
import { count } from "../format.js";
import { assetViewer } from "./library.js";

const VENDOR = "/static/vendor";
const SCRIPTS = [`${VENDOR}/leaflet/leaflet.js`, `${VENDOR}/topojson-client/topojson-client.min.js`];
const STYLES = `${VENDOR}/leaflet/leaflet.css`;
const COUNTRIES = `${VENDOR}/world-atlas/countries-110m.json`;
const MAX_ZOOM = 17; // clusters down to here; /api/map's deepest zoom (18) lists photos
const LIST_ZOOM = 18;
const PAGE = 60;

let librariesReady = null;

/** Leaflet and topojson-client, loaded once (classic scripts: window.L, window.topojson). */
function loadLibraries() {
  if (!document.querySelector(`link[href="${STYLES}"]`)) {
    document.head.append(h("link", { rel: "stylesheet", href: STYLES }));
  }
  librariesReady ||= SCRIPTS.reduce((before, src) => before.then(() => new Promise((resolve, reject) => {
    const script = h("script", { src });
    script.addEventListener("load", resolve);
    script.addEventListener("error", () => {
      librariesReady = null;
      reject(new Error("the map library did not load"));
    });
    document.head.append(script);
  })), Promise.resolve());
  return librariesReady;
}

/** The map's view as /api/map takes it: west,south,east,north in -180..180 (west > east
 * across the antimeridian). */
export function viewBox(bounds) {
  const south = Math.max(-90, bounds.getSouth());
  const north = Math.min(90, bounds.getNorth());
  let west = bounds.getWest();
  let east = bounds.getEast();
  if (east - west >= 360) {
    west = -180;
    east = 180;
  } else {
    const wrap = (lon) => ((((lon + 180) % 360) + 360) % 360) - 180;
    west = wrap(west);
    east = wrap(east);
    if (east === -180 && west !== -180) east = 180;
  }
  return [west, south, east, north].map((v) => Number(v.toFixed(6))).join(",");
}

/** ``features`` with each ring's longitudes made continuous: a ring across the
 * antimeridian (Russia, Fiji) goes on past ±180° instead of back across the world,
 * which Leaflet would draw as a line over every ocean. */
function unwrapped(features) {
  const ring = (points) => {
    let shift = 0;
    let previous = null;
    return points.map(([lon, lat]) => {
      if (previous !== null) {
        const step = lon + shift - previous;
        if (step > 180) shift -= 360;
        else if (step < -180) shift += 360;
      }
      previous = lon + shift;
      return [previous, lat];
    });
  };
  for (const { geometry } of features.features) {
    if (geometry?.type === "Polygon") geometry.coordinates = geometry.coordinates.map(ring);
    if (geometry?.type === "MultiPolygon") {
      geometry.coordinates = geometry.coordinates.map((polygon) => polygon.map(ring));
    }
  }
  return features;
}

export function render(main) {
  const mapBox = h("div.places-map", { role: "region", "aria-label": "World map of photos" });
  const status = h("p.places-status.muted", { role: "status", "aria-live": "polite" });
  const trail = h("nav.places-trail", { "aria-label": "Place" });
  const list = h("ul.places-list", { "aria-label": "Places" });
  const photos = h("section.places-photos", { "aria-label": "Photos here", hidden: true });
  const viewer = assetViewer();
  fill(main,
    pageHeader("Places", "Where your photos were taken."),
    h("div.places-layout", {},
      h("div.places-main", {}, mapBox, status),
      h("aside.places-side", { "aria-label": "Countries, regions and cities" }, trail, list)),
    photos,
    viewer.dialog);

  let map = null;
  let markers = null;
  let loading = null; // the AbortController of the view being loaded
  let gone = false;

  start();

  async function start() {
    fill(status, spinner("Loading the map…"));
    try {
      await Promise.all([loadLibraries(), accessToken()]);
      const topology = await fetch(COUNTRIES).then((answer) => answer.json());
      if (gone) return;
      const L = window.L;
      map = L.map(mapBox, {
        center: [20, 0], zoom: 2, minZoom: 1, maxZoom: MAX_ZOOM, worldCopyJump: true,
        zoomSnap: 1, attributionControl: true,
      });
      map.attributionControl.setPrefix(false);
      map.attributionControl.addAttribution("Natural Earth");
      const countries = unwrapped(window.topojson.feature(topology, topology.objects.countries));
      L.geoJSON(countries, { interactive: false, style: { className: "map-country" } }).addTo(map);
      markers = L.layerGroup().addTo(map);
      map.on("moveend", loadView);
      loadView();
      showPlaces([]);
    } catch (error) {
      if (!gone) fill(status, inlineProblem(error));
    }
  }

  async function loadView() {
    loading?.abort();
    const controller = new AbortController();
    loading = controller;
    const zoom = map.getZoom();
    try {
      const found = await get("/api/map", { bbox: viewBox(map.getBounds()), zoom }, { signal: controller.signal });
      if (controller !== loading) return;
      drawView(found);
    } catch (error) {
      if (error.name !== "AbortError" && controller === loading) fill(status, inlineProblem(error));
    }
  }

  function drawView(found) {
    const L = window.L;
    markers.clearLayers();
    for (const cluster of found.clusters) {
      const digits = String(cluster.count).length;
      const size = 30 + 6 * Math.min(digits, 5);
      const icon = L.divIcon({
        className: "map-cluster",
        html: h("span", {}, count(cluster.count)),
        iconSize: [size, size],
      });
      const marker = L.marker([cluster.lat, cluster.lon], {
        icon, keyboard: true, title: `${cluster.count} photos`, alt: `${cluster.count} photos`,
        riseOnHover: true,
      });
      marker.on("click", () => openCluster(cluster));
      markers.addLayer(marker);
    }
    for (const asset of found.assets) {
      const thumbnail = withAccessToken(asset.thumbnail_url);
      const icon = L.divIcon({
        className: "map-photo",
        html: thumbnail ? h("img", { src: thumbnail, alt: "" }) : h("span", {}, "1"),
        iconSize: [40, 40],
      });
      const marker = L.marker([asset.lat, asset.lon], { icon, keyboard: true, title: "1 photo", alt: "1 photo" });
      marker.on("click", () => viewer.open([{ id: asset.id }], 0));
      markers.addLayer(marker);
    }
    const shown = found.clusters.reduce((sum, c) => sum + c.count, 0) + found.assets.length;
    status.textContent = shown
      ? `${count(shown)} ${shown === 1 ? "photo" : "photos"} in view`
      : "No photos with a position in view";
  }

  function openCluster(cluster) {
    const [west, south, east, north] = cluster.bbox;
    const bounds = window.L.latLngBounds([south, west], [north, east]);
    const target = Math.min(map.getBoundsZoom(bounds, false, [40, 40]), MAX_ZOOM);
    if (map.getZoom() < MAX_ZOOM && target > map.getZoom()) {
      map.flyToBounds(bounds, { padding: [40, 40], maxZoom: MAX_ZOOM, duration: 0.5 });
    } else {
      listPhotos(cluster);
    }
  }

  // ── the photos of a cluster at the deepest zoom ─────────────────────────────
  async function listPhotos(cluster) {
    const [west, south, east, north] = cluster.bbox;
    const pad = 1e-6; // the bounds are its photos' own positions
    const bbox = [west - pad, south - pad, east + pad, north + pad]
      .map((v, i) => Math.max(i % 2 ? -90 : -180, Math.min(i % 2 ? 90 : 180, v))).join(",");
    const grid = h("ul.places-grid", { "aria-label": "Photos of this place" });
    const more = h("button.button.small", { type: "button" }, "More photos");
    const close = h("button.button.ghost.small", { type: "button", onclick: () => { photos.hidden = true; } }, "Close");
    const found = [];
    let cursor = null;
    photos.hidden = false;
    fill(photos, h("div.places-photos-head", {},
      h("h2", {}, `${count(cluster.count)} ${cluster.count === 1 ? "photo" : "photos"} here`), close),
    grid);
    async function page() {
      more.disabled = true;
      try {
        await accessToken();
        const answer = await get("/api/map", { bbox, zoom: LIST_ZOOM, limit: PAGE, cursor });
        for (const asset of answer.assets) {
          const at = found.length;
          found.push({ id: asset.id });
          const thumbnail = withAccessToken(asset.thumbnail_url);
          grid.append(h("li", {}, h("button.places-thumb", {
            type: "button", "aria-label": `Open photo ${asset.id}`, dataset: { assetId: asset.id },
            onclick: () => viewer.open(found, at),
          }, thumbnail ? h("img", { src: thumbnail, alt: "", loading: "lazy" }) : "No thumbnail yet")));
        }
        cursor = answer.next_cursor;
        if (cursor) grid.after(more);
        else more.remove();
      } catch (error) {
        photos.append(inlineProblem(error));
      } finally {
        more.disabled = false;
      }
    }
    more.addEventListener("click", page);
    await page();
    photos.scrollIntoView({ block: "nearest", behavior: "smooth" });
  }

  // ── countries → regions → cities ────────────────────────────────────────────
  async function showPlaces(path) {
    const [country, region] = path;
    const crumbs = [h("button.link", { type: "button", onclick: () => showPlaces([]) }, "All countries")];
    if (country) crumbs.push(h("button.link", { type: "button", onclick: () => showPlaces([country]) }, country.name));
    if (region) crumbs.push(h("span", {}, region.name));
    fill(trail, ...crumbs.flatMap((crumb, i) => (i ? [h("span.sep", { "aria-hidden": "true" }, "›"), crumb] : [crumb])));
    fill(list, h("li.muted", {}, spinner("Loading places…")));
    try {
      const query = country ? { country: country.country_code, region: region?.name } : {};
      const { places } = await get("/api/places", query);
      if (gone) return;
      if (!places.length) {
        fill(list, h("li.muted", {}, country ? "No region or city is known for these photos." : "No photo has a known place yet."));
        return;
      }
      fill(list, ...places.map((place) => h("li", {}, h("button.places-item", {
        type: "button",
        "aria-label": `${place.name}, ${place.count === 1 ? "1 photo" : `${count(place.count)} photos`}`,
        onclick: () => {
          zoomTo(place.bbox);
          if (place.level !== "city") showPlaces(country ? [country, place] : [place]);
        },
      }, h("span.places-name", {}, place.name), h("span.places-count", {}, count(place.count))))));
    } catch (error) {
      fill(list, h("li", {}, inlineProblem(error)));
    }
  }

  function zoomTo([west, south, east, north]) {
    if (!map) return;
    const bounds = window.L.latLngBounds([south, west], [north, east]);
    map.flyToBounds(bounds.pad(0.1), { maxZoom: 12, duration: 0.5 });
  }

  return () => {
    gone = true;
    loading?.abort();
    viewer.close();
    map?.remove();
  };
}
