// Duplicates: exact groups (one content, several paths) and near-duplicate groups
// side by side, the suggested keeper marked. Choosing keepers records a decision;
// no file is touched. Above them, the dedupe plan (what would move to the
// quarantine, the space reclaimed, why each keeper) and "Apply", which runs it as a
// job followed live; the job's page offers undo.

import { accessToken, get, post, withAccessToken } from "../api.js";
import {
  FINISHED, emptyState, inlineProblem, joinPath, pageHeader, pathView, progressView, showProblem, spinner,
  jobBadge,
} from "../components.js";
import { fill, h } from "../dom.js";
import { bytes, count, localTime, plural, shortId } from "../format.js";
import { scopeFields } from "./scope.js";
import { store, subscribe } from "../live.js";

const PLAN_GROUPS = 200;
// Groups per request; "Show more" follows the API's cursor for the next page.
const GROUPS_PAGE = 100;

/** One kind's groups, a page at a time: the list, its "Show more" button and the
 * count pills (``n+`` while pages remain), which stay in step as pages arrive. */
function groupList(kind, first, nextCursor, card) {
  const list = h("div.dup-list", {}, ...first.map(card));
  const more = h("button.button.show-more", { type: "button", dataset: { kind } }, "Show more");
  const root = h("div.dup-pages", {}, list, more);
  const pills = [];
  let shown = first.length;
  let cursor = nextCursor;
  const label = () => `${count(shown)}${cursor ? "+" : ""}`;
  const update = () => {
    more.hidden = !cursor;
    for (const pill of pills) pill.textContent = label();
  };
  more.addEventListener("click", async () => {
    more.disabled = true;
    try {
      const answer = await get("/api/duplicates", { kind, cursor, limit: GROUPS_PAGE });
      const groups = answer[kind] || [];
      list.append(...groups.map(card));
      shown += groups.length;
      cursor = answer[`${kind}_next_cursor`];
      update();
    } catch (error) {
      showProblem(error, { context: `Show more ${kind} duplicates` });
    } finally {
      more.disabled = false;
    }
  });
  update();
  return {
    root,
    shown: () => shown,
    pill(selector = "span.count-pill") {
      const pill = h(selector, {}, label());
      pills.push(pill);
      return pill;
    },
  };
}

export function render(main) {
  const exact = h("section.dup-section", { "aria-labelledby": "exact-title" });
  const near = h("section.dup-section.near", { "aria-labelledby": "near-title" });
  const tabs = h("div.segmented.dup-tabs", { role: "group", "aria-label": "Show" });
  const reclaim = h("section.card.flush.dedupe-plan", { "aria-labelledby": "dedupe-title", "aria-busy": "true" });
  const running = h("div.dedupe-running");
  fill(main,
    pageHeader("Duplicates", "Review what the library found. Recording a decision deletes nothing."),
    running, reclaim, tabs, h("div.dup-body", {}, spinner()));
  const dedupe = dedupePlan(reclaim, running, () => load());
  load();

  async function load() {
    try {
      await accessToken();
      const answer = await get("/api/duplicates", { limit: GROUPS_PAGE });
      const exactList = groupList("exact", answer.exact || [], answer.exact_next_cursor, exactGroup);
      const nearList = groupList("near", answer.near || [], answer.near_next_cursor, nearGroup);
      fill(exact,
        h("h2#exact-title", {}, "Exact duplicates ", exactList.pill()),
        h("p.subtitle", {}, "The same content at several paths."),
        exactList.shown()
          ? exactList.root
          : emptyState("No exact duplicates", "Every file's content is unique."));
      fill(near,
        h("h2#near-title", {}, "Near duplicates ", nearList.pill()),
        h("p.subtitle", {}, "Similar-looking photos: bursts, edits, re-saves. The suggested keeper is marked."),
        nearList.shown()
          ? nearList.root
          : emptyState("No near duplicates", "Run an import (it ends with a similar job) to look for them."));
      let current = nearList.shown() && !exactList.shown() ? "near" : "exact";
      const show = (which) => {
        current = which;
        for (const b of tabs.children) b.setAttribute("aria-pressed", String(b.dataset.tab === which));
        fill(main.querySelector(".dup-body"), which === "exact" ? exact : near);
      };
      fill(tabs,
        h("button.segment", { type: "button", dataset: { tab: "exact" }, onclick: () => show("exact") },
          "Exact", exactList.pill("span.segment-count")),
        h("button.segment", { type: "button", dataset: { tab: "near" }, onclick: () => show("near") },
          "Near", nearList.pill("span.segment-count")));
      show(current);
    } catch (error) {
      fill(main.querySelector(".dup-body"), inlineProblem(error));
    }
    dedupe.load();
  }
  return dedupe.leave;
}

/** The dedupe plan and its "Apply" button; ``afterRun`` reloads the groups. */
function dedupePlan(card, running, afterRun) {
  const includeNear = h("input#dedupe-near", { type: "checkbox" });
  const apply = h("button.button.primary#dedupe-apply", { type: "button", disabled: true }, "Apply");
  const summary = h("p.plan-summary", { role: "status" });
  const waiting = h("p.near-waiting", { role: "note", hidden: true });
  const body = h("div.dedupe-groups", {}, spinner());
  let plan = null;
  let ticket = 0;
  let followed = null;
  const scope = scopeFields("dedupe", () => load());
  includeNear.addEventListener("change", load);
  apply.addEventListener("click", start);
  fill(card,
    h("div.card-header", {},
      h("h2#dedupe-title", {}, "Reclaim space"),
      h("label.checkbox", { for: "dedupe-near" }, includeNear, "Near duplicates I chose keepers for"),
      apply),
    h("div.card-pad", {},
      h("p.subtitle", {}, "Keeps one copy of each duplicate and moves the others into the library's quarantine, "
        + "where an undo puts them back and a purge deletes them for good."),
      scope.root, summary, waiting, body));

  async function load() {
    const mine = ++ticket;
    card.setAttribute("aria-busy", "true");
    try {
      const { sources, since, until } = scope.value();
      const answer = await get("/api/dedupe/plan", {
        near: includeNear.checked ? "true" : undefined, limit: PLAN_GROUPS, source: sources, since, until,
      });
      if (mine !== ticket) return;
      plan = answer;
      const s = answer.summary;
      apply.disabled = !s.files || Boolean(followed && !FINISHED.has(followed.state));
      fill(summary, s.files
        ? [h("strong", {}, plural(s.files, "file")), " to quarantine from ", plural(s.groups, "group"),
          ", ", h("strong.reclaimed", {}, bytes(s.bytes)), " reclaimed."]
        : "Nothing to reclaim: no copy to move.");
      const undecided = s.near_undecided || 0;
      waiting.hidden = !undecided;
      fill(waiting, undecided
        ? [h("strong", {}, `${plural(undecided, "near-duplicate group")} ${undecided === 1 ? "waits" : "wait"} for your decision`),
          " and ", undecided === 1 ? "is" : "are", " left alone: choose what to keep in each on the ",
          h("strong", {}, "Near"), " tab below, then apply again."]
        : []);
      fill(body, ...answer.groups.map(planGroup),
        answer.truncated ? h("p.muted", {}, `The first ${count(answer.groups.length)} groups are shown.`) : null);
    } catch (error) {
      if (mine === ticket) fill(body, inlineProblem(error));
    } finally {
      if (mine === ticket) card.setAttribute("aria-busy", "false");
    }
  }

  async function start() {
    if (!plan?.summary.files) return;
    apply.disabled = true;
    try {
      const job = await post("/api/jobs", { type: "dedupe", params: { near: includeNear.checked, ...scope.value() } });
      store.put(job);
      follow(job);
    } catch (error) {
      showProblem(error, { context: "Apply the dedupe plan" });
      apply.disabled = false;
    }
  }

  function follow(job) {
    const progress = progressView(job);
    const badge = h("span");
    const link = h("a", { href: `/jobs/${job.id}`, dataset: { link: "" } }, `dedupe ${shortId(job.id)}`);
    followed = {
      id: job.id,
      state: job.state,
      update(current) {
        fill(badge, jobBadge(current));
        progress.update(current);
        const finished = FINISHED.has(current.state) && !FINISHED.has(this.state);
        this.state = current.state;
        if (finished) afterRun(); // files moved: the groups and the plan changed
      },
    };
    followed.update(job);
    fill(running, h("section.card.flush.following", { "aria-label": "Dedupe in progress", dataset: { jobId: job.id } },
      h("div.card-header", {}, h("h2", {}, "Reclaiming space: ", link), badge),
      h("div.card-pad", {}, progress.root,
        h("p.hint", {}, "Finished jobs can be undone from ", h("a", { href: `/jobs/${job.id}`, dataset: { link: "" } }, "the job's page"), "."))));
  }

  const leave = subscribe((change) => {
    if (change.kind === "job" && followed?.id === change.job.id) followed.update(change.job);
  });
  return { load, leave };
}

function planGroup(group) {
  return h("article.dedupe-group", { dataset: { group: group.group } },
    h("div.dedupe-keeper", {},
      h("span.keeper-badge", {}, "Keep"), pathView(group.keeper),
      h("span.why", { dataset: { reason: group.reason } }, `because ${group.why}`)),
    h("ul.dedupe-moves", {}, ...group.quarantine.map((moving) => h("li", {},
      h("span.move-badge", {}, moving.kind === "sidecar" ? "Sidecar to quarantine" : "To quarantine"),
      pathView(moving.path), h("span.muted", {}, ` ${bytes(moving.size)}`)))));
}

function decisionText(decision) {
  if (!decision) return null;
  const keep = decision.keep || [];
  return `Decision recorded: keep ${keep.length === 1 ? "1" : count(keep.length)}${decision.decided_at ? ` (${decision.decided_at.slice(0, 10)})` : ""}`;
}

function decisionForm(group, choices, { legend }) {
  // choices: [{value, label: Node, preselected}]
  const status = h("p.form-status", { role: "status" }, decisionText(group.decision) || "");
  const kept = new Set((group.decision?.keep || []).map(String));
  const boxes = choices.map((choice, n) => {
    const id = `${group.key}-${n}`.replace(/[^a-zA-Z0-9_-]/g, "_");
    const checked = kept.size ? kept.has(String(choice.value)) : choice.preselected;
    const input = h("input", { type: "checkbox", id, value: String(choice.value), checked });
    return { input, node: h(`label.choice${choice.keeper ? ".keeper" : ""}`, { for: id }, input, choice.label) };
  });
  const button = h("button.button.primary.small", { type: "submit" }, group.decision ? "Update decision" : "Keep selected");
  const form = h("form.dup-form", {
    dataset: { group: group.key },
    onsubmit: async (event) => {
      event.preventDefault();
      const keep = boxes.filter((b) => b.input.checked).map((b) => b.input.value);
      if (!keep.length) {
        fill(status, inlineProblem({ code: "nothing_kept", detail: "keep at least one" }));
        return;
      }
      button.disabled = true;
      try {
        const answer = await post("/api/duplicates/decisions", { group: group.key, keep });
        group.decision = answer;
        fill(status, decisionText(answer) || "Decision recorded");
        form.classList.add("decided");
        button.textContent = "Update decision";
      } catch (error) {
        fill(status, inlineProblem(error));
      } finally {
        button.disabled = false;
      }
    },
  },
  h("fieldset", {}, h("legend.visually-hidden", {}, legend), h("div.choices", {}, ...boxes.map((b) => b.node))),
  h("div.dup-form-foot", {}, status, button));
  if (group.decision) form.classList.add("decided");
  return form;
}

function thumb(url, alt) {
  const src = withAccessToken(url);
  const placeholder = () => h("span.thumb.placeholder", {}, "No thumbnail yet");
  if (!src) return placeholder();
  const img = h("img.thumb", { src, alt, loading: "lazy", decoding: "async", width: 256, height: 256 });
  img.addEventListener("error", () => img.replaceWith(placeholder()), { once: true });
  return img;
}

function exactGroup(group) {
  group.key = group.group || `exact:${group.asset_id}`;
  const files = group.files || [];
  const card = h("article.card.dup-group.exact", { dataset: { group: group.key } },
    h("div.dup-preview", {}, thumb(group.thumbnail_url || `/api/assets/${group.asset_id}/thumbnail`, "")),
    h("div.dup-main", {},
      h("h3", {}, plural(files.length, "copy", "copies"), " of one photo ",
        h("span.muted", {}, `· ${bytes(group.size)} each`)),
      group.why ? h("p.muted.keeper-why", {}, `Suggested keeper: ${group.why}.`) : null,
      decisionForm(group, files.map((file, n) => ({
        // A member is named by its full path: the source folder, then the file in it.
        value: joinPath(file.source, file.path),
        keeper: Boolean(file.keep),
        // The keeper policy's choice (what dedupe would keep), listed first.
        preselected: file.keep ?? n === 0,
        label: h("span.choice-text", {}, pathView(joinPath(file.source, file.path)),
          file.keep ? h("span.keeper-badge", {}, "Suggested keeper") : null),
      })), { legend: "Paths to keep" })));
  return card;
}

function nearGroup(group) {
  const keeperId = group.keeper ?? group.keeper_id ?? group.group_id;
  group.key = group.group || `near:${keeperId}`;
  const assets = group.assets || [];
  return h("article.card.dup-group.near", { dataset: { group: group.key } },
    h("h3", {}, plural(assets.length, "similar photo"), h("span.muted", {}, ` · group ${keeperId}`)),
    decisionForm(group, assets.map((asset) => {
      const id = asset.asset_id ?? asset.id;
      const keeper = asset.keep ?? id === keeperId;
      return {
        value: String(id),
        keeper,
        preselected: keeper,
        label: h("span.near-asset", { dataset: { assetId: id } },
          thumb(asset.thumbnail_url || `/api/assets/${id}/thumbnail`, `Photo ${id}`),
          h("span.near-facts", {},
            keeper
              ? h("span.keeper-badge", {}, "Suggested keeper")
              : h("span.distance-badge", { title: "Hamming distance of the perceptual hashes" },
                asset.distance ? `Distance ${asset.distance}` : "Looks identical"),
            h("span", {}, localTime(asset.taken_local)),
            h("span.muted", {}, [asset.width && `${asset.width}×${asset.height}`, asset.format]
              .filter(Boolean).join(" · ")),
            asset.files?.[0] ? pathView(joinPath(asset.files[0].source, asset.files[0].path), { className: "muted" }) : null)),
      };
    }), { legend: "Photos to keep" }));
}
