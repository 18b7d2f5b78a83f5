// Organize: a template with a live dry-run preview of the first destinations, a
// button that starts the organize job and follows it, and undo of finished ones.

import { get, post } from "../api.js";
import {
  FINISHED, emptyState, inlineProblem, pageHeader, pathView, progressView, showProblem, spinner,
  jobBadge, stateBadge,
} from "../components.js";
import { debounce, fill, h } from "../dom.js";
import { bytes, count, plural, shortId, when } from "../format.js";
import { store, subscribe } from "../live.js";
import { scopeFields } from "./scope.js";

// As pipeline/organize/template.py's: undated files go to undated/<their folder>.
export const DEFAULT_TEMPLATE = "{taken:%Y|undated}/{taken:%Y-%m-%d|{folder}}/{taken:%Y%m%d_%H%M%S_|}{original_name}.{ext}";
const FIELDS = ["taken:%Y-%m-%d", "taken:%Y|undated", "make", "model", "ext", "hash8", "original_name", "folder", "counter", "country", "city"];
// How each date confidence (media/capture_time.py's CONFIDENCES) reads.
const CONFIDENCE = {
  user: "set by you", camera: "camera", inferred: "inferred", filename: "file name",
  file_time: "file time only",
};
const SETTINGS_KEY = "photo-pipeline.organize";

export function render(main) {
  const saved = JSON.parse(sessionStorage.getItem(SETTINGS_KEY) || "{}");
  const dest = h("input#organize-dest", {
    type: "text", name: "dest", required: true, placeholder: "/home/me/Pictures/Organized",
    value: saved.dest || "", spellcheck: "false", autocomplete: "off",
  });
  const template = h("input#organize-template.mono", {
    type: "text", name: "template", required: true, value: saved.template || DEFAULT_TEMPLATE,
    spellcheck: "false", autocomplete: "off", "aria-describedby": "template-help",
  });
  const move = h("input#organize-move", { type: "checkbox", name: "move", checked: Boolean(saved.move) });
  const limit = h("select#organize-limit", { name: "limit" },
    ...[20, 50, 100, 200].map((n) => h("option", { value: n, selected: n === (saved.limit || 50) }, String(n))));
  const start = h("button.button.primary", { type: "submit", disabled: true }, "Start organize");
  const scope = scopeFields("organize", () => plan(), saved.scope);
  const preview = h("section.card.flush.plan", { "aria-labelledby": "plan-title", "aria-busy": "false" });
  const running = h("div.organize-running");
  const history = h("section.card.flush", { "aria-labelledby": "history-title" });
  let planned = null; // the settings the shown plan was made with

  const form = h("form.card.organize-form", {
    "aria-labelledby": "organize-form-title",
    onsubmit: (event) => {
      event.preventDefault();
      startJob();
    },
  },
  h("h2#organize-form-title", {}, "Layout"),
  h("div.field", {}, h("label", { for: "organize-dest" }, "Destination folder"), dest),
  h("div.field", {}, h("label", { for: "organize-template" }, "Template"), template,
    h("p.hint#template-help", {}, "Fields in braces: ",
      ...FIELDS.flatMap((f, n) => [n ? " " : "", h("button.chip", {
        type: "button", title: `Insert {${f}}`, onclick: () => insertField(f),
      }, `{${f}}`)]),
      h("br"),
      "After | comes the fallback of an undated photo (its only date is the file's time) or an unknown value: ",
      h("code", {}, "{taken:%Y|undated}"), ".")),
  scope.root,
  h("div.field-row", {},
    h("label.checkbox", { for: "organize-move" }, move, "Move originals (default: copy)"),
    h("div.field.inline", {}, h("label", { for: "organize-limit" }, "Preview rows"), limit),
    h("div.grow"),
    start));

  fill(main,
    pageHeader("Organize", "Copy or move originals into a clean dated layout. Collision-safe, resumable, undoable."),
    form, running, preview, history);

  function settings() {
    return {
      dest: dest.value.trim(), template: template.value.trim(), move: move.checked, limit: Number(limit.value),
      scope: scope.value(),
    };
  }

  function insertField(field) {
    const at = template.selectionStart ?? template.value.length;
    const end = template.selectionEnd ?? at;
    template.setRangeText(`{${field}}`, at, end, "end");
    template.focus();
    plan();
  }

  // ── the dry run ─────────────────────────────────────────────────────────
  let planTicket = 0;
  async function makePlan() {
    const current = settings();
    sessionStorage.setItem(SETTINGS_KEY, JSON.stringify(current));
    const ticket = ++planTicket;
    start.disabled = true;
    planned = null;
    if (!current.dest || !current.template) {
      fill(preview, h("div.card-header", {}, h("h2#plan-title", {}, "Preview")),
        emptyState("Choose a destination", "The preview shows where each photo would go. Nothing is written until you start."));
      return;
    }
    preview.setAttribute("aria-busy", "true");
    if (!preview.querySelector("table")) fill(preview, h("div.card-header", {}, h("h2#plan-title", {}, "Preview")), spinner("Planning…"));
    try {
      const answer = await post("/api/organize/plan", {
        dest: current.dest, template: current.template, move: current.move, limit: current.limit, ...current.scope,
      });
      if (ticket !== planTicket) return;
      planned = current;
      start.disabled = false;
      drawPlan(answer);
    } catch (error) {
      if (ticket !== planTicket) return;
      fill(preview, h("div.card-header", {}, h("h2#plan-title", {}, "Preview")),
        h("div.card-pad", {}, inlineProblem(error)));
    } finally {
      if (ticket === planTicket) preview.setAttribute("aria-busy", "false");
    }
  }
  const plan = debounce(makePlan, 300);
  for (const el of [dest, template]) el.addEventListener("input", plan);
  for (const el of [move, limit]) el.addEventListener("change", plan);

  function drawPlan(answer) {
    const entries = answer.entries || [];
    const root = answer.destination || planned.dest;
    const summary = answer.summary || {};
    const total = answer.total ?? summary.files ?? entries.length;
    const actions = summary.actions || {};
    const facts = [
      plural(total, "file"),
      ...Object.entries(actions).map(([action, n]) => `${count(n)} ${action}`),
      summary.bytes !== undefined ? `${bytes(summary.bytes)} to write` : null,
    ].filter(Boolean);
    const undated = summary.undated || 0;
    fill(preview,
      h("div.card-header", {},
        h("h2#plan-title", {}, "Preview"),
        h("span.muted.plan-summary", {}, facts.join(" · "))),
      h("div.card-pad.plan-dates", {},
        h("span.date-counts", {}, "Dates: ",
          ...Object.entries(CONFIDENCE).filter(([level]) => summary.date_confidence?.[level])
            .flatMap(([level, text], n) => [n ? " · " : "",
              h(`span.confidence.confidence-${level}`, {}, `${count(summary.date_confidence[level])} ${text}`)])),
        undated
          ? h("p.undated-note", { role: "note" }, h("strong", {}, `${plural(undated, "photo")} undated`),
            ": no date but the file's time, often when it was copied. ",
            summary.undated_fallback
              ? "The template files them by its fallback (undated/ by default)."
              : "This template files them by that time; add a fallback such as {taken:%Y|undated}.")
          : null),
      entries.length
        ? h("div.table-wrap", {}, h("table.table.plan-table", {},
          h("caption.visually-hidden", {}, `First ${entries.length} of ${total} planned files`),
          h("thead", {}, h("tr", {},
            h("th", { scope: "col" }, "Source"),
            h("th", { scope: "col" }, "Destination ", h("span.muted.root", {}, `in ${root}`)),
            h("th", { scope: "col" }, "Date from"),
            h("th", { scope: "col" }, "Action"))),
          h("tbody", {}, ...entries.map((entry) => h("tr", { dataset: { action: entry.action, undated: entry.undated ? "true" : "false" } },
            h("td.path-cell", {}, pathView(entry.source)),
            h("td.path-cell.destination", {}, pathView(entry.destination, { shown: under(root, entry.destination) })),
            h("td.date-source", {}, dateSource(entry)),
            h("td", {}, h(`span.badge.action-${entry.action}`, {}, entry.action),
              entry.reason ? h("span.muted.small", {}, ` ${entry.reason}`) : null))))))
        : h("div.card-pad", {}, emptyState("Nothing to organize", "The library has no files yet, or all are in place.")),
      entries.length < total ? h("p.more.muted", {}, `Showing the first ${count(entries.length)} of ${count(total)}.`) : null);
  }

  /** Where an entry's date came from, and how far it can be trusted. */
  function dateSource(entry) {
    if (!entry.date_source) return "—";
    return [h("span.mono.small", {}, entry.date_source), " ",
      h(`span.confidence-tag.confidence-${entry.date_confidence}`, {}, entry.undated ? "undated" : CONFIDENCE[entry.date_confidence] || entry.date_confidence)];
  }

  /** ``path`` relative to ``root`` when inside it: the part the template made. */
  function under(root, path) {
    const prefix = `${String(root).replace(/\/+$/, "")}/`;
    return path.startsWith(prefix) ? path.slice(prefix.length) : path;
  }

  // ── the job ─────────────────────────────────────────────────────────────
  async function startJob() {
    const current = planned;
    if (!current) return;
    start.disabled = true;
    try {
      const job = await post("/api/jobs", {
        type: "organize", params: { dest: current.dest, template: current.template, move: current.move, ...current.scope },
      });
      store.put(job);
      follow(job);
      loadHistory();
    } catch (error) {
      showProblem(error, { context: "Start organize" });
    } finally {
      start.disabled = !planned;
    }
  }

  let followed = null;
  function follow(job) {
    const progress = progressView(job);
    const badge = h("span");
    const undoing = job.type !== "organize";
    const link = h("a", { href: `/jobs/${job.id}`, dataset: { link: "" } }, `${job.type} ${shortId(job.id)}`);
    followed = { id: job.id, update(current) { fill(badge, jobBadge(current)); progress.update(current); } };
    followed.update(job);
    fill(running, h("section.card.flush.following", { "aria-label": "Organize in progress", dataset: { jobId: job.id } },
      h("div.card-header", {}, h("h2", {}, undoing ? "Undoing: " : "Organizing: ", link), badge),
      h("div.card-pad", {}, progress.root)));
  }

  // ── finished organize jobs, with undo ────────────────────────────────────
  const historyBody = h("div.table-wrap", {}, spinner());
  fill(history, h("div.card-header", {}, h("h2#history-title", {}, "Organize jobs")), historyBody);
  const rows = new Map();
  async function loadHistory() {
    try {
      const [organizes, undos] = await Promise.all([
        get("/api/jobs", { type: "organize", limit: 20 }),
        get("/api/jobs", { type: "organize.undo", limit: 50 }).catch(() => ({ jobs: [] })),
      ]);
      const undone = new Map(undos.jobs.map((u) => [u.params?.organize_job_id || u.params?.job_id, u]));
      for (const job of [...organizes.jobs, ...undos.jobs]) store.put(job);
      rows.clear();
      if (!organizes.jobs.length) {
        fill(historyBody, h("div.card-pad", {}, emptyState("No organize jobs yet", "Start one above; it can be undone once it has finished.")));
        return;
      }
      const body = h("tbody");
      for (const job of organizes.jobs) {
        const row = historyRow(job, undone.get(job.id));
        rows.set(job.id, row);
        body.append(row.tr);
      }
      fill(historyBody, h("table.table", {},
        h("thead", {}, h("tr", {},
          h("th", { scope: "col" }, "Job"), h("th", { scope: "col" }, "State"),
          h("th", { scope: "col" }, "Destination"), h("th", { scope: "col" }, "Finished"),
          h("th.col-actions", { scope: "col" }, h("span.visually-hidden", {}, "Undo")))),
        body));
    } catch (error) {
      fill(historyBody, h("div.card-pad", {}, inlineProblem(error)));
    }
  }

  function historyRow(job, undo) {
    const state = h("td");
    const finished = h("td.muted.nowrap");
    const action = h("td.col-actions");
    const tr = h("tr", { dataset: { jobId: job.id } },
      h("td", {}, h("a", { href: `/jobs/${job.id}`, dataset: { link: "" } }, shortId(job.id))),
      state,
      h("td.path-cell", {}, pathView(job.params?.destination || job.params?.dest || "—")),
      finished, action);
    let drawn = null;
    function update(current, currentUndo = undo) {
      const key = `${current.state}|${current.finished_at}|${currentUndo?.id}|${currentUndo && store.get(currentUndo.id)?.state}`;
      if (key === drawn) return; // unchanged: keep the button (and its focus)
      drawn = key;
      fill(state, jobBadge(current), current.params?.move ? h("span.muted.small", {}, " move") : null);
      finished.textContent = when(current.finished_at);
      if (currentUndo) {
        fill(action, h("a.undo-link", { href: `/jobs/${currentUndo.id}`, dataset: { link: "" } }, "Undo: "),
          stateBadge(store.get(currentUndo.id)?.state || currentUndo.state));
      } else if (current.state === "succeeded" || current.state === "failed" || current.state === "cancelled") {
        fill(action, h("button.button.small", {
          type: "button", "aria-label": `Undo organize ${shortId(current.id)}`,
          onclick: async (event) => {
            event.currentTarget.disabled = true;
            try {
              const undoJob = await post("/api/jobs", { type: "organize_undo", params: { job_id: current.id } });
              store.put(undoJob);
              undo = undoJob;
              update(current, undoJob);
              follow(undoJob);
            } catch (error) {
              showProblem(error, { context: `Undo organize ${shortId(current.id)}` });
              event.currentTarget.disabled = false;
            }
          },
        }, "Undo"));
      } else {
        fill(action);
      }
    }
    update(job);
    return { tr, update, get undo() { return undo; } };
  }

  const unsubscribe = subscribe((change) => {
    if (change.kind !== "job") return;
    const { job } = change;
    if (followed?.id === job.id) {
      followed.update(job);
      // The files moved: what the layout would do now has changed.
      if (FINISHED.has(job.state) && followed.finished !== job.state) plan();
      followed.finished = FINISHED.has(job.state) ? job.state : null;
    }
    if (rows.has(job.id)) rows.get(job.id).update(job);
    for (const row of rows.values()) if (row.undo?.id === job.id) row.update(store.get(row.tr.dataset.jobId), job);
    if (job.type === "organize" && !rows.has(job.id) && !FINISHED.has(job.state)) loadHistorySoon();
  });
  const loadHistorySoon = debounce(loadHistory, 200);

  makePlan();
  loadHistory();
  return unsubscribe;
}
