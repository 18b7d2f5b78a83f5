// One job: its state, live progress, prerequisites and lock, its items (by state),
// and its event timeline.

import { get, post } from "../api.js";
import {
  FINISHED, chainKey, chainView, emptyState, inlineProblem, pathView, progressView, showProblem, spinner,
  stateBadge,
} from "../components.js";
import { fill, h } from "../dom.js";
import { count, duration, elapsed, shortId, when } from "../format.js";
import { store, subscribe } from "../live.js";
import { jobActions } from "./jobs.js";

const ITEM_STATES = ["all", "queued", "running", "succeeded", "failed", "cancelled"];
const ITEM_PAGE = 100;

export function render(main, [jobId], query) {
  const head = h("div.page-header");
  const summary = h("section.card.job-summary", { "aria-label": "Summary" });
  const items = h("section.card.flush", { "aria-labelledby": "items-title" });
  const timeline = h("section.card.flush.timeline-card", { "aria-labelledby": "timeline-title" });
  fill(main,
    h("p.breadcrumb", {}, h("a", { href: "/jobs", dataset: { link: "" } }, "← All jobs")),
    head, h("div.two-columns", {}, summary, timeline), items);
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
    // Redraw the rest only when it changed: buttons keep focus, details stay open.
    const { progress: _counts, ...rest } = job;
    const key = JSON.stringify(rest) + chainKey(job);
    if (key === drawnKey) return;
    drawnKey = key;
    fill(head,
      h("div", {},
        h("h1", {}, h("span.job-type", {}, job.type), " ", h("span.job-id.large", {}, shortId(job.id))),
        h("p.subtitle", {}, h("code", {}, job.id))),
      h("div.page-actions", {}, stateBadge(job.state), ...jobActions(job), ...undoActions(job)));
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
          ? [h("code", {}, job.lock), h("span.muted", {}, FINISHED.has(job.state) ? " released" : " held")]
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
      Object.keys(job.params || {}).length
        ? h("details.params", {}, h("summary", {}, "Parameters"), h("pre", {}, JSON.stringify(job.params, null, 2)))
        : null);
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
          h("td.item-key", {}, pathView(item.key)),
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
  function eventRow(event) {
    const kind = event.type.startsWith("state:") ? event.type.slice(6) : null;
    const data = event.data && Object.keys(event.data).length
      ? Object.entries(event.data).map(([k, v]) => `${k} ${typeof v === "object" ? JSON.stringify(v) : v}`).join(" · ")
      : "";
    return h(`li.event${kind ? `.state-${kind}` : ""}`, { dataset: { seq: event.seq, type: event.type } },
      h("span.event-dot", { "aria-hidden": "true" }),
      h("div.event-body", {},
        h("div.event-title", {}, kind ? stateBadge(kind) : h("span.event-type", {}, event.type),
          event.message ? h("span.event-message", {}, event.message) : null),
        data ? h("div.event-data", {}, data) : null),
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

/** Undo of a finished dedupe job: its quarantined files go back where they were. */
function undoActions(job) {
  if (job.type !== "dedupe" || !FINISHED.has(job.state)) return [];
  const holder = h("span.undo-action");
  const button = h("button.button.small", {
    type: "button", "aria-label": `Undo dedupe ${shortId(job.id)}`,
    onclick: async () => {
      button.disabled = true;
      try {
        // Asking again returns the same undo job: one per dedupe.
        const undo = store.put(await post("/api/jobs", { type: "dedupe_undo", params: { job_id: job.id } }));
        fill(holder, h("a.undo-link", { href: `/jobs/${undo.id}`, dataset: { link: "" } }, `Undo: dedupe_undo ${shortId(undo.id)}`));
      } catch (error) {
        showProblem(error, { context: `Undo dedupe ${shortId(job.id)}` });
        button.disabled = false;
      }
    },
  }, "Undo");
  fill(holder, button);
  return [holder];
}

function fact(name, value) {
  return h("div.fact", {}, h("dt", {}, name), h("dd", {}, value));
}
