// People: every person the faces job grouped, a face crop each, named ones first; one
// person's faces (each can be taken out, or marked as no face) and their photos in the
// order they were taken, with the person named, renamed or merged into another, and a
// face moved to another person by name.

import { accessToken, get, post, request, withAccessToken } from "../api.js";
import { emptyState, inlineProblem, pageHeader, showProblem, spinner } from "../components.js";
import { fill, h } from "../dom.js";
import { localTime, plural } from "../format.js";

const PAGE = 200;

export function render(main, params) {
  const [personId] = params;
  if (personId) return showPerson(main, personId);
  return listPeople(main);
}

function label(person) {
  return person.name || "Unnamed";
}

function crop(faceId, alt) {
  const src = faceId ? withAccessToken(`/api/faces/${faceId}/crop`) : null;
  return src ? h("img.face-crop", { src, alt, loading: "lazy" }) : h("span.face-crop");
}

function listPeople(main) {
  const grid = h("ul.people-grid", { "aria-label": "People" });
  fill(main, pageHeader("People", "Faces found in your photos, grouped by who they are. Name a person to keep their group."), grid);

  async function load() {
    fill(grid, spinner("Loading people…"));
    try {
      await accessToken(); // crop URLs need it
      const people = await get("/api/people");
      if (!people.length) {
        fill(grid, emptyState("No people yet", "Faces are found after an import (or with photo-pipeline faces) where dlib is installed."));
        return;
      }
      fill(grid, ...people.map((person) => h("li.person-card", { dataset: { personId: person.id } },
        h("a", { href: `/people/${person.id}`, dataset: { link: "" } },
          crop(person.cover_face_id, ""),
          h("span.person-name", {}, label(person)),
          h("span.muted.small", {}, plural(person.assets, "photo"))))));
    } catch (error) {
      fill(grid, inlineProblem(error));
    }
  }
  load();
  return null;
}

function showPerson(main, personId) {
  const head = h("div.album-head");
  const faces = h("ul.person-faces", { "aria-label": "Faces" });
  const photos = h("ul.album-photos", { "aria-label": "Photos of the person" });
  const more = h("button.button.ghost.small.album-more", { type: "button", hidden: true, onclick: () => loadPage() }, "More photos");
  let person = null;
  let cursor = null;
  fill(main, head, h("h2", {}, "Faces"), faces, h("h2", {}, "Photos"), photos, more);

  async function load() {
    fill(head, spinner());
    try {
      await accessToken();
      const detail = await get(`/api/people/${encodeURIComponent(personId)}`);
      person = detail.person;
      drawHead();
      fill(faces, ...detail.faces.map(face));
      fill(photos);
      cursor = null;
      await loadPage();
    } catch (error) {
      fill(head, pageHeader("Person"), inlineProblem(error));
    }
  }

  function drawHead() {
    fill(head, pageHeader(label(person), `${plural(person.faces, "face")} in ${plural(person.assets, "photo")}`,
      h("button.button.ghost.small", { type: "button", onclick: rename }, person.name ? "Rename" : "Name"),
      h("button.button.ghost.small", { type: "button", onclick: mergeInto }, "Merge into…")),
    h("p", {}, h("a", { href: "/people", dataset: { link: "" } }, "← All people")));
  }

  function face(found) {
    return h("li.person-face", { dataset: { faceId: found.id } },
      crop(found.id, `Face in photo ${found.asset_id}`),
      h("div.person-face-actions", {},
        h("button.button.ghost.small", { type: "button", onclick: () => moveTo(found) }, "Move to…"),
        h("button.button.ghost.small", { type: "button", onclick: () => release(found, false) }, "Not them"),
        h("button.button.ghost.small", { type: "button", onclick: () => release(found, true) }, "Not a face")));
  }

  async function loadPage() {
    try {
      const page = await get("/api/assets", { person: person.id, sort: "taken", limit: PAGE, cursor });
      cursor = page.next_cursor;
      more.hidden = !cursor;
      if (!page.assets.length && !photos.children.length) {
        fill(photos, emptyState("No photos", "Every face of this person was taken out."));
        return;
      }
      photos.append(...page.assets.map((asset) => {
        const src = withAccessToken(asset.thumbnail_url);
        return h("li.album-photo", { dataset: { assetId: asset.id } },
          src ? h("img", { src, alt: `Photo taken ${localTime(asset.taken_local)}`, loading: "lazy" }) : h("span.thumb.placeholder", {}, "Not rendered yet"),
          h("span.muted.small", {}, localTime(asset.taken_local)));
      }));
    } catch (error) {
      photos.append(inlineProblem(error));
    }
  }

  async function rename() {
    const name = (prompt("Who is this?", person.name || "") || "").trim();
    if (!name || name === person.name) return;
    try {
      person = await request("PATCH", `/api/people/${person.id}`, { body: { name } });
      drawHead();
    } catch (error) {
      showProblem(error, { context: "Name" });
    }
  }

  // The named person a name given in a prompt means (case aside), or null with the
  // problem shown.
  async function namedPerson(wanted, context) {
    const people = await get("/api/people");
    const target = people.find((p) => p.name && p.name.toLowerCase() === wanted.toLowerCase());
    if (!target) showProblem({ code: "person_not_found", detail: `no person named ${wanted}` }, { context });
    return target || null;
  }

  async function moveTo(found) {
    const wanted = (prompt("Move this face to which person? (a name)") || "").trim();
    if (!wanted) return;
    try {
      const target = await namedPerson(wanted, "Move");
      if (!target || target.id === person.id) return;
      await post("/api/faces/move", { faces: [found.id], person: target.id });
      load();
    } catch (error) {
      showProblem(error, { context: "Move" });
    }
  }

  async function mergeInto() {
    const wanted = (prompt(`Merge ${label(person)} into which person? (a name)`) || "").trim();
    if (!wanted) return;
    try {
      const target = await namedPerson(wanted, "Merge");
      if (!target) return;
      await post(`/api/people/${target.id}/merge`, { people: [person.id] });
      history.pushState(null, "", `/people/${target.id}`);
      dispatchEvent(new PopStateEvent("popstate"));
    } catch (error) {
      showProblem(error, { context: "Merge" });
    }
  }

  async function release(found, notFace) {
    try {
      await post("/api/faces/release", { faces: [found.id], not_face: notFace });
      load();
    } catch (error) {
      showProblem(error, { context: notFace ? "Not a face" : "Not them" });
    }
  }

  load();
  return null;
}
