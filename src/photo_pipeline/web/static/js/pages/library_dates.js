// "Set date" on a selection of the library: a Select mode that toggles tiles, a
// dialog asking for the local date and time, a timeshift job that sets it (the date
// becomes the user's, trusted), followed live, and its undo (a timeshift_undo job).
// The library page owns the grid; this module owns the selection and the jobs.

import { post } from "../api.js";
import { FINISHED, showProblem, stateBadge } from "../components.js";
import { fill, h } from "../dom.js";
import { plural } from "../format.js";
import { store, subscribe } from "../live.js";

/** ``onChanged()``: the dates changed (a set or its undo finished): reload the grid.
 * ``onToggle(id, chosen)``: a tile's selection changed (the page marks the tile).
 * ``actions``: more actions on the selection (curation.js), shown while photos are chosen. */
export function dateSelection({ onChanged, onToggle, actions = null }) {
  const chosen = new Set();
  let active = false;
  const count = h("span.selection-count", { role: "status", "aria-live": "polite" });
  const selectButton = h("button.button.ghost.small", { type: "button", "aria-pressed": "false", onclick: () => setActive(!active) }, "Select");
  const setButton = h("button.button.small", { type: "button", disabled: true, onclick: () => ask() }, "Set date…");
  const clearButton = h("button.button.ghost.small", { type: "button", hidden: true, onclick: () => clear() }, "Clear selection");
  const outcome = h("div.date-outcome", { "aria-live": "polite" });
  const bar = h("div.selection-bar", {}, selectButton, count, setButton, clearButton, actions);

  const input = h("input#set-date-when", { type: "datetime-local", step: 1, required: true, name: "when" });
  const submit = h("button.button.primary", { type: "submit" }, "Set date");
  const heading = h("h2#set-date-title", {}, "Set date");
  const note = h("p.muted.small", {}, "Every chosen photo gets this local date and time (its own time zone stays). ",
    "The catalogue changes, never the files; undo gives back the dates they had.");
  const dialog = h("dialog.set-date", { "aria-labelledby": "set-date-title" },
    h("form", { method: "dialog", onsubmit: (event) => { event.preventDefault(); start(); } },
      heading, note,
      h("div.field", {}, h("label", { for: "set-date-when" }, "Date and time"), input),
      h("div.dialog-actions", {},
        h("button.button.ghost", { type: "button", onclick: () => dialog.close() }, "Cancel"), submit)));

  function setActive(on) {
    active = on;
    selectButton.setAttribute("aria-pressed", String(on));
    selectButton.textContent = on ? "Done selecting" : "Select";
    if (!on) clear();
    show();
  }

  function show() {
    count.textContent = active ? (chosen.size ? `${plural(chosen.size, "photo")} selected` : "Choose photos") : "";
    setButton.disabled = !chosen.size;
    setButton.hidden = !active;
    clearButton.hidden = !active || !chosen.size;
    if (actions) actions.hidden = !active || !chosen.size;
  }

  function toggle(asset) {
    const id = Number(asset.id);
    if (chosen.has(id)) chosen.delete(id);
    else chosen.add(id);
    onToggle(id, chosen.has(id));
    show();
  }

  function clear() {
    for (const id of [...chosen]) {
      chosen.delete(id);
      onToggle(id, false);
    }
    show();
  }

  function ask() {
    if (!chosen.size) return;
    heading.textContent = `Set the date of ${plural(chosen.size, "photo")}`;
    if (!dialog.open) dialog.showModal();
    input.focus();
  }

  // ── the jobs ──────────────────────────────────────────────────────────────
  let followed = null; // {job, undo: bool, count}
  async function start() {
    if (!input.value) {
      input.reportValidity();
      return;
    }
    submit.disabled = true;
    const ids = [...chosen];
    try {
      const job = await post("/api/jobs", { type: "timeshift", params: { asset_ids: ids, set: input.value } });
      store.put(job);
      dialog.close();
      follow(job, { undo: false, count: ids.length, when: input.value.replace("T", " ") });
      setActive(false);
    } catch (error) {
      showProblem(error, { context: "Set date" });
    } finally {
      submit.disabled = false;
    }
  }

  async function undo(job) {
    try {
      const undoJob = await post("/api/jobs", { type: "timeshift_undo", params: { job_id: job.id } });
      store.put(undoJob);
      follow(undoJob, { undo: true, count: followed?.count || 0 });
    } catch (error) {
      showProblem(error, { context: "Undo set date" });
    }
  }

  function follow(job, about) {
    followed = { job, finished: FINISHED.has(job.state), ...about };
    draw(job);
  }

  function draw(job) {
    const { undo: undoing, count: n, when } = followed;
    const done = FINISHED.has(job.state);
    const text = undoing
      ? (done ? `Dates given back to ${plural(n, "photo")}` : `Giving back the dates of ${plural(n, "photo")}…`)
      : (done ? `Date ${when} set on ${plural(n, "photo")}` : `Setting the date of ${plural(n, "photo")} to ${when}…`);
    fill(outcome, h("div.card.date-job", { dataset: { jobId: job.id } },
      h("span", {}, text), " ", stateBadge(job.state),
      !undoing && done && job.state === "succeeded"
        ? h("button.button.small", { type: "button", onclick: (event) => { event.currentTarget.disabled = true; undo(job); } }, "Undo")
        : null));
  }

  const unsubscribe = subscribe((change) => {
    if (change.kind !== "job" || change.job.id !== followed?.job.id) return;
    // The store's job object changes in place: remember "finished" apart from it.
    followed.job = change.job;
    draw(change.job);
    if (!followed.finished && FINISHED.has(change.job.state)) {
      followed.finished = true;
      onChanged();
    }
  });

  show();
  return {
    bar,
    outcome,
    dialog,
    get active() { return active; },
    has: (id) => chosen.has(Number(id)),
    ids: () => [...chosen],
    toggle,
    stop() { unsubscribe(); if (dialog.open) dialog.close(); },
  };
}
