// One job: its outcome, live progress, prerequisites and lock, the files that need
// attention (failed items, with what to do), its items (by state), and its event
// timeline. The coordinator's own fields (lock key, fencing tokens) stay in the
// "Developer fields" sections.

import { get, post } from "../api.js";
import {
  FINISHED, chainKey, chainView, emptyState, inlineProblem, jobBadge, joinPath, pathView, problemsOf, progressView,
  showProblem, spinner, stateBadge,
} from "../components.js";
import { fill, h } from "../dom.js";
import { count, duration, elapsed, plural, shortId, when } from "../format.js";
import { store, subscribe } from "../live.js";
import { jobActions } from "./jobs.js";

const ITEM_STATES = ["all", "queued", "running", "succeeded", "failed", "cancelled"];
const ITEM_PAGE = 100;
const PROBLEMS_SHOWN = 100;
// What a failed item's code means, in words (verify's findings above all).
const PROBLEM_WORDS = {
  content_changed: "changed since it was imported",
  missing: "missing",
  unreadable_file: "cannot be read",
  symlink_outside_roots: "replaced by a link to outside the library",
  corrupt_file: "damaged or not a photo",
};

export function render(main, [jobId], query) {
  const head = h("div.page-header");
  const summary = h("section.card.job-summary", { "aria-label": "Summary" });
  const items = h("section.card.flush", { "aria-labelledby": "items-title" });
  const problemsCard = h("section.card.flush.problems-card", { "aria-labelledby": "problems-title", hidden: true });
  const timeline = h("section.card.flush.timeline-card", { "aria-labelledby": "timeline-title" });
  fill(main,
    h("p.breadcrumb", {}, h("a", { href: "/jobs", dataset: { link: "" } }, "← All jobs")),
    head, h("div.two-columns", {}, summary, timeline), problemsCard, items);
  fill(summary, spinner());
  let progress = null;
  let drawnKey = null;
  const facts = h("div.summary-facts");

  function draw(job) {
    if (!progress) {
      progress = progressView(job);
      fill(summary, h("div.summary-progress", {}, progress.root), facts);
    }
    progress.update(job);
    drawProblems(job);
    // Redraw the rest only when it changed: buttons keep focus, details stay open.
    const { progress: _counts, ...rest } = job;
    const key = JSON.stringify(rest) + chainKey(job);
    if (key === drawnKey) return;
    drawnKey = key;
    fill(head,
      h("div", {},
        h("h1", {}, h("span.job-type", {}, job.type), " ", h("span.job-id.large", {}, shortId(job.id))),
        h("p.subtitle", {}, h("code", {}, job.id))),
      h("div.page-actions", {}, jobBadge(job), ...jobActions(job), ...undoActions(job)));
    const blockedBy = job.waiting_for > 0
      ? job.prerequisites.filter((id) => store.get(id)?.state !== "succeeded")
      : [];
    fill(facts,
      h("dl.facts", {},
        fact("Created", when(job.created_at)),
        fact("Started", when(job.started_at)),
        fact("Finished", when(job.finished_at)),
        fact("Run time", job.started_at ? duration(elapsed(job.started_at, job.finished_at)) : "—"),
        fact("Attempts", `${job.attempts} of ${job.max_attempts}`),
        job.state === "retry_queued" || (job.state === "queued" && job.run_after > job.created_at)
          ? fact("Runs after", when(job.run_after))
          : null,
        fact("Priority", job.priority),
        fact("Lock", job.lock
          ? [capitalised(job.lock_words || job.lock), h("span.muted", {}, FINISHED.has(job.state) ? " · released" : " · held")]
          : h("span.muted", {}, "none")),
        fact("Worker", job.lease_owner ? h("code", {}, job.lease_owner) : h("span.muted", {}, "none")),
        fact("Prerequisites", chainView(job)),
        fact("Blocked by", blockedBy.length
          ? h("span", {}, ...blockedBy.map((id, n) => [n ? ", " : "",
            h("a", { href: `/jobs/${id}`, dataset: { link: "" } }, `${store.get(id)?.type || "job"} ${shortId(id)}`)]))
          : h("span.muted", {}, "nothing"))),
      job.error_code
        ? h("div.inline-problem", { role: "note" }, h("code.code", {}, job.error_code), " ", job.error_message || "")
        : null,
      devFields({
        "Job id": job.id,
        "Lock key": job.lock,
        Worker: job.lease_owner,
        Parameters: Object.keys(job.params || {}).length ? JSON.stringify(job.params, null, 2) : null,
      }));
  }

  // ── problems: the failed items, each with what to do ───────────────────────
  let problemsDrawn = null;
  async function drawProblems(job) {
    const how_many = problemsOf(job);
    if (!how_many) {
      problemsCard.hidden = true;
      return;
    }
    const key = `${job.state}|${how_many}`;
    if (key === problemsDrawn) return;
    problemsDrawn = key;
    problemsCard.hidden = false;
    const list = h("ul.problem-list");
    fill(problemsCard,
      h("div.card-header", {},
        h("h2#problems-title", {}, job.type === "verify"
          ? `${plural(how_many, "file")} to look at` : `${plural(how_many, "item")} failed`),
        h("span.muted.problem-counts")),
      h("div.problems-body", {}, spinner()));
    try {
      const page = await get(`/api/jobs/${jobId}/items`, { state: "failed", limit: PROBLEMS_SHOWN });
      if (problemsDrawn !== key) return;
      const byCode = new Map();
      for (const item of page.items) byCode.set(item.error_code, (byCode.get(item.error_code) || 0) + 1);
      problemsCard.querySelector(".problem-counts").textContent =
        [...byCode].map(([code, n]) => `${count(n)} ${PROBLEM_WORDS[code] || code}`).join(" · ");
      fill(list, ...page.items.map(problemRow));
      fill(problemsCard.querySelector(".problems-body"), list,
        page.next_cursor ? h("p.hint", {}, `The first ${count(page.items.length)} are shown; the Items list below has them all.`) : null);
    } catch (error) {
      fill(problemsCard.querySelector(".problems-body"), inlineProblem(error));
    }
  }
  function problemRow(item) {
    return h("li.problem", { dataset: { code: item.error_code || "" } },
      h("div.problem-file", {}, item.name,
        item.folder ? h("span.problem-folder", {}, ` in ${item.folder}`) : null),
      h("div.problem-why", {},
        h("strong", {}, capitalised(PROBLEM_WORDS[item.error_code] || item.error_code || "failed")), ": ",
        h("span.error-message", {}, item.error_message || ""),
        " ", h("code.code", {}, item.error_code || "")),
      item.advice ? h("div.problem-advice", {}, h("strong", {}, "What to do: "), ...withCommands(item.advice)) : null);
  }

  // ── items ────────────────────────────────────────────────────────────────
  let itemState = ITEM_STATES.includes(query.get("state")) ? query.get("state") : "all";
  const itemBody = h("div.table-wrap");
  const itemMore = h("div.more");
  const filter = h("div.segmented", { role: "group", "aria-label": "Show items" });
  fill(items,
    h("div.card-header", {}, h("h2#items-title", {}, "Items"), filter),
    itemBody, itemMore);

  const segments = ITEM_STATES.map((state) => h("button.segment", {
    type: "button", dataset: { state },
    onclick: () => {
      itemState = state;
      const url = new URL(location.href);
      if (state === "all") url.searchParams.delete("state");
      else url.searchParams.set("state", state);
      history.replaceState(null, "", url);
      drawFilter(store.get(jobId));
      loadItems(true);
    },
  }, state, h("span.segment-count")));
  fill(filter, ...segments);

  function drawFilter(job) {
    const byState = job?.progress?.by_state || {};
    for (const segment of segments) {
      const state = segment.dataset.state;
      const n = state === "all" ? job?.progress?.total ?? 0 : byState[state] || 0;
      segment.setAttribute("aria-pressed", String(state === itemState));
      segment.lastChild.textContent = count(n);
    }
  }

  let itemCursor = 0;
  let itemTable = null;
  let itemRequest = 0;
  async function loadItems(reset) {
    const ticket = ++itemRequest;
    if (reset) {
      itemCursor = 0;
      itemTable = null;
      fill(itemBody, spinner());
      fill(itemMore);
    }
    try {
      const page = await get(`/api/jobs/${jobId}/items`, {
        state: itemState === "all" ? undefined : itemState, cursor: itemCursor, limit: ITEM_PAGE,
      });
      if (ticket !== itemRequest) return;
      if (!itemTable) {
        if (!page.items.length) {
          fill(itemBody, emptyState(itemState === "all" ? "No items yet" : `No ${itemState} items`,
            itemState === "failed" ? "Nothing has failed." : null));
          return;
        }
        itemTable = h("tbody");
        fill(itemBody, h("table.table.items-table", {},
          h("thead", {}, h("tr", {},
            h("th", { scope: "col" }, "Item"), h("th", { scope: "col" }, "State"),
            h("th", { scope: "col" }, "Tries"), h("th", { scope: "col" }, "Error"),
            h("th", { scope: "col" }, "Updated"))),
          itemTable));
      }
      for (const item of page.items) {
        itemTable.append(h("tr", { dataset: { itemState: item.state } },
          h("td.item-key", {}, pathView(joinPath(item.folder, item.name), { shown: item.name }),
            item.folder ? h("span.item-folder", {}, ` in ${item.folder}`) : null),
          h("td", {}, stateBadge(item.state)),
          h("td.num", {}, item.attempts),
          h("td.item-error", {}, item.error_code
            ? [h("code.code", {}, item.error_code), h("span.error-message", {}, item.error_message || "")]
            : h("span.muted", {}, "—")),
          h("td.muted.nowrap", {}, when(item.updated_at))));
      }
      itemCursor = page.next_cursor;
      fill(itemMore, itemCursor ? h("button.button", { type: "button", onclick: () => loadItems(false) }, "Load more items") : null);
    } catch (error) {
      if (ticket === itemRequest) fill(itemBody, inlineProblem(error));
    }
  }

  // ── timeline ─────────────────────────────────────────────────────────────
  const showItemEvents = h("input#show-item-events", { type: "checkbox" });
  const eventList = h("ol.timeline");
  const eventHolder = h("div.timeline-wrap", {}, spinner());
  fill(timeline,
    h("div.card-header", {}, h("h2#timeline-title", {}, "Timeline"),
      h("label.checkbox", { for: "show-item-events" }, showItemEvents, "Item batches")),
    eventHolder);
  const events = new Map(); // seq → event: the stored log, and live ones as they come
  let lastSeq = 0; // of the stored log read so far
  showItemEvents.addEventListener("change", drawEvents);

  function isItemEvent(event) {
    return event.type === "items" || event.type === "items_added" || event.type === "progress";
  }
  function drawEvents() {
    const shown = [...events.values()].sort((a, b) => a.seq - b.seq).filter((e) => showItemEvents.checked || !isItemEvent(e));
    if (!shown.length) {
      fill(eventHolder, emptyState("No events yet"));
      return;
    }
    fill(eventList, ...shown.map(eventRow));
    if (!eventHolder.contains(eventList)) fill(eventHolder, eventList);
  }
  // The end of a job that succeeded with failed items reads as its outcome there too.
  function eventBadge(kind) {
    const job = store.get(jobId);
    return kind === "succeeded" && job?.state === "succeeded" && problemsOf(job) ? jobBadge(job) : stateBadge(kind);
  }
  function eventRow(event) {
    const kind = event.type.startsWith("state:") ? event.type.slice(6) : null;
    const data = event.data || {};
    const { title, words } = eventWords(event);
    // Item counts read as words; anything else the coordinator noted (a claim's
    // fencing token) is for developers.
    const internal = isItemEvent(event) ? {} : data;
    return h(`li.event${kind ? `.state-${kind}` : ""}`, { dataset: { seq: event.seq, type: event.type } },
      h("span.event-dot", { "aria-hidden": "true" }),
      h("div.event-body", {},
        h("div.event-title", {}, kind ? eventBadge(kind) : h("span.event-type", {}, title),
          words ? h("span.event-message", {}, words) : null),
        Object.keys(internal).length
          ? devFields(Object.fromEntries(Object.entries(internal).map(([k, v]) => [k, typeof v === "object" ? JSON.stringify(v) : v])))
          : null),
      h("time.muted", { datetime: event.created_at }, when(event.created_at)));
  }
  async function loadEvents() {
    try {
      for (;;) {
        const page = await get(`/api/jobs/${jobId}/events`, { after: lastSeq, limit: 1000 });
        for (const event of page) events.set(event.seq, event);
        if (page.length) lastSeq = page[page.length - 1].seq;
        if (page.length < 1000) break;
      }
      drawEvents();
    } catch (error) {
      fill(eventHolder, inlineProblem(error));
    }
  }

  // ── live ─────────────────────────────────────────────────────────────────
  const unsubscribe = subscribe((change) => {
    if (change.kind === "job") {
      const job = store.get(jobId);
      if (!job || (change.job.id !== jobId && !job.prerequisites.includes(change.job.id))) return;
      draw(job);
      drawFilter(job);
    } else if (change.kind === "event" && change.message.job_id === jobId) {
      const message = change.message;
      if (message.type === "progress") return; // the REST log shows item batches one by one
      events.set(message.seq, message);
      drawEvents();
      if (message.type.startsWith("state:")) loadItemsSoon();
    }
  });
  let itemTimer = 0;
  function loadItemsSoon() {
    clearTimeout(itemTimer);
    itemTimer = setTimeout(() => loadItems(true), 300);
  }

  (async () => {
    try {
      const job = await store.refresh(jobId);
      // The chain and "blocked by" name prerequisites: know their states.
      await fetchAncestors(job);
      draw(store.get(jobId));
      drawFilter(store.get(jobId));
      loadItems(true);
      loadEvents();
    } catch (error) {
      fill(head, h("h1", {}, "Job ", h("code", {}, shortId(jobId))));
      fill(summary, inlineProblem(error));
      fill(items);
      fill(timeline);
    }
  })();
  return () => {
    clearTimeout(itemTimer);
    unsubscribe();
  };
}

/** The job's prerequisites, theirs, and so on (a few levels): the chain needs them. */
async function fetchAncestors(job, depth = 4) {
  if (depth === 0) return;
  const missing = job.prerequisites.filter((id) => !store.get(id));
  const fetched = await Promise.all(missing.map((id) => store.refresh(id).catch(() => null)));
  await Promise.all(fetched.filter(Boolean).map((p) => fetchAncestors(p, depth - 1)));
}

// The finished jobs the page offers to undo, with the job type that undoes each.
const UNDO_TYPES = { dedupe: "dedupe_undo", xmp_write: "xmp_write_undo" };

/** Undo of a finished dedupe job (its quarantined files go back where they were) or
 * xmp_write job (the sidecars it wrote are put back as they were). */
function undoActions(job) {
  const undoType = UNDO_TYPES[job.type];
  if (!undoType || !FINISHED.has(job.state)) return [];
  const holder = h("span.undo-action");
  const button = h("button.button.small", {
    type: "button", "aria-label": `Undo ${job.type} ${shortId(job.id)}`,
    onclick: async () => {
      button.disabled = true;
      try {
        const undo = store.put(await post("/api/jobs", { type: undoType, params: { job_id: job.id } }));
        fill(holder, h("a.undo-link", { href: `/jobs/${undo.id}`, dataset: { link: "" } }, `Undo: ${undoType} ${shortId(undo.id)}`));
      } catch (error) {
        showProblem(error, { context: `Undo ${job.type} ${shortId(job.id)}` });
        button.disabled = false;
      }
    },
  }, "Undo");
  fill(holder, button);
  return [holder];
}

/** An event's title and text in words: "claimed by worker w1 (attempt 2)",
 * "5 succeeded · 1 failed", "6 items added". */
function eventWords(event) {
  const data = event.data || {};
  if (event.type === "claimed") {
    return { title: "claimed", words: `by worker ${event.message || "?"}${data.attempt ? ` (attempt ${data.attempt})` : ""}` };
  }
  if (event.type === "items" || event.type === "progress") {
    const counts = Object.entries(data).filter(([, n]) => typeof n === "number");
    return { title: "items", words: counts.map(([state, n]) => `${count(n)} ${state}`).join(" · ") || event.message };
  }
  if (event.type === "items_added") {
    return { title: "items added", words: plural(data.count || 0, "item") };
  }
  return { title: event.type.replace(/_/g, " "), words: event.message };
}

/** Text with its `commands` as code. */
function withCommands(text) {
  return String(text).split("`").map((part, n) => (n % 2 ? h("code", {}, part) : part));
}

function capitalised(text) {
  const words = String(text ?? "");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** The coordinator's own fields, for developers: closed unless opened. */
function devFields(fields) {
  const shown = Object.entries(fields).filter(([, value]) => value !== null && value !== undefined && value !== "");
  if (!shown.length) return null;
  return h("details.dev-fields", {}, h("summary", {}, "Developer fields"),
    h("dl", {}, ...shown.map(([name, value]) => [h("dt", {}, name),
      h("dd", {}, String(value).includes("\n") ? h("pre", {}, value) : String(value))])));
}

function fact(name, value) {
  return h("div.fact", {}, h("dt", {}, name), h("dd", {}, value));
}
