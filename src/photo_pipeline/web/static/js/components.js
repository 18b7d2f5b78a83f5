// Pieces shared by the pages: state badges, live progress bars, job chains,
// error banners, empty states.

import { h, fill } from "./dom.js";
import { count, duration, plural, shortId } from "./format.js";
import { rateOf, store } from "./live.js";

export const FINISHED = new Set(["succeeded", "failed", "cancelled"]);
const LABELS = { retry_queued: "retry queued" };

export function stateBadge(state) {
  return h(`span.badge.state-${state}`, { dataset: { state } }, LABELS[state] || state);
}

/** What a job came to: its state while it runs; once finished its outcome, and a
 * job that succeeded with failed items (a corrupt photo, a file verify found changed
 * or missing) reads "succeeded · 2 problems" in amber, never as plain success. */
export function outcomeOf(job) {
  if (job.outcome) return job.outcome;
  // A state pushed live before the job was fetched again: its counts still tell.
  if (job.state === "succeeded" && (job.progress?.by_state?.failed || job.problems)) return "succeeded_with_problems";
  return FINISHED.has(job.state) ? job.state : null;
}

export function problemsOf(job) {
  return job.problems || job.progress?.by_state?.failed || 0;
}

export function jobBadge(job) {
  const outcome = outcomeOf(job);
  if (outcome !== "succeeded_with_problems") return stateBadge(job.state);
  return h("span.badge.outcome-problems", { dataset: { state: job.state, outcome } },
    `succeeded · ${plural(problemsOf(job), "problem")}`);
}

/** A progress bar with done/total, rate and ETA; ``update(job)`` redraws it. */
export function progressView(job) {
  const bar = h("progress.bar", { max: 1, value: 0, "aria-label": `Progress of ${job.type} ${shortId(job.id)}` });
  const label = h("span.progress-label");
  const detail = h("span.progress-detail");
  const root = h("div.progress", {}, bar, h("div.progress-text", {}, label, detail));
  function update(current) {
    const p = current.progress;
    const state = current.state;
    root.dataset.state = state;
    root.dataset.outcome = outcomeOf(current) || "";
    if (!p || p.total === 0) {
      // No total known yet: a spinner and the count, never "0 / ?".
      const waiting = !FINISHED.has(state);
      bar.max = 1;
      bar.value = state === "succeeded" ? 1 : 0;
      if (waiting) bar.removeAttribute("value"); // indeterminate
      bar.setAttribute("aria-valuetext", waiting ? "no total yet" : "no items");
      bar.dataset.percent = state === "succeeded" ? "100" : "0";
      fill(label, waiting ? h("span.spinner.small", { "aria-hidden": "true" }) : null,
        waiting ? `${plural(p?.done || 0, "item")} so far` : "No items");
      detail.textContent = "";
      return;
    }
    const percent = Math.floor((100 * p.done) / p.total);
    bar.max = p.total;
    bar.value = p.done;
    bar.dataset.percent = String(percent);
    bar.setAttribute("aria-valuetext", `${percent}%: ${p.done} of ${p.total}`);
    label.textContent = `${count(p.done)} / ${count(p.total)} · ${percent}%`;
    const failed = p.by_state?.failed || 0;
    const cancelled = p.by_state?.cancelled || 0;
    const parts = [];
    if (failed) parts.push(`${count(failed)} failed`);
    if (cancelled) parts.push(`${count(cancelled)} cancelled`);
    const rate = rateOf(current.id);
    if (rate) {
      parts.push(`${rate.perSecond >= 10 ? Math.round(rate.perSecond) : rate.perSecond.toFixed(1)}/s`);
      parts.push(`ETA ${duration(rate.eta)}`);
    }
    detail.textContent = parts.join(" · ");
  }
  update(job);
  return { root, update };
}

/** The job's first prerequisite, its first prerequisite, …, then the job. */
function chainOf(job) {
  const chain = [];
  const seen = new Set();
  let current = job;
  while (current && !seen.has(current.id)) {
    seen.add(current.id);
    chain.unshift(current);
    const first = current.prerequisites?.[0];
    current = first ? store.get(first) || { id: first, type: "job", state: "unknown", prerequisites: [] } : null;
  }
  return chain;
}

/** What a job's chain shows, as a string: redraw it only when this changes. */
export const chainKey = (job) => chainOf(job).map((step) => `${step.type}:${step.state}`).join(",");

/** scan → render → similar: the job's prerequisites (as far as known), then itself. */
export function chainView(job, { link = true } = {}) {
  const chain = chainOf(job);
  if (chain.length === 1) return h("span.muted", {}, "—");
  const list = h("ol.chain", { "aria-label": "Prerequisite chain" });
  chain.forEach((step) => {
    const name = step.type === "job" ? shortId(step.id) : step.type;
    const title = `${step.type} ${shortId(step.id)}: ${step.state}`;
    const content = link && step.id !== job.id
      ? h("a", { href: `/jobs/${step.id}`, dataset: { link: "" }, title }, name)
      : h("span", { title }, name);
    list.append(h(`li.chain-step.state-${step.state}`, { "aria-current": step.id === job.id ? "step" : null }, content));
  });
  const extra = (job.prerequisites?.length || 0) - 1;
  if (extra > 0) list.append(h("li.chain-more", {}, `+${extra}`));
  return list;
}

/** The banner area under the header: problems as "code — detail". */
export function showProblem(error, { context } = {}) {
  const area = document.querySelector(".banners");
  const code = error?.code || "error";
  const detail = error?.detail || error?.message || String(error);
  const banner = h(
    "div.banner.error",
    { role: "alert", dataset: { code } },
    h("div.banner-text", {},
      context ? h("strong", {}, `${context}: `) : null,
      h("code.code", {}, code),
      " ",
      h("span.detail", {}, detail)),
    h("button.button.ghost.small", { type: "button", "aria-label": "Dismiss", onclick: () => banner.remove() }, "Dismiss"),
  );
  area.append(banner);
  while (area.children.length > 3) area.firstElementChild.remove();
  return banner;
}

export function clearProblems() {
  fill(document.querySelector(".banners"));
}

export function inlineProblem(error) {
  return h("div.inline-problem", { role: "alert" },
    h("code.code", {}, error?.code || "error"), " ", error?.detail || String(error));
}

export function emptyState(title, text, ...extra) {
  return h("div.empty", {}, h("p.empty-title", {}, title), text ? h("p", {}, text) : null, ...extra);
}

export function pageHeader(title, subtitle, ...actions) {
  return h("div.page-header", {},
    h("div", {}, h("h1", {}, title), subtitle ? h("p.subtitle", {}, subtitle) : null),
    actions.length ? h("div.page-actions", {}, ...actions) : null);
}

export function spinner(text = "Loading…") {
  return h("div.loading", { role: "status" }, h("span.spinner", { "aria-hidden": "true" }), text);
}

/** A path that stays readable when cut: the folder shrinks (…), the name stays.
 * ``shown`` is what to display (e.g. relative to a root); the title has it all. */
export function pathView(path, { className = "", shown } = {}) {
  const full = String(path ?? "");
  const text = shown ?? full;
  const cut = text.lastIndexOf("/", text.length - 2) + 1;
  return h(`span.path${className ? `.${className}` : ""}`, { title: full },
    cut > 0 ? h("span.path-dir", {}, text.slice(0, cut)) : null,
    h("span.path-name", {}, text.slice(cut)));
}

/** The full path of a file of a source: the source folder, then the file in it. */
export const joinPath = (source, path) =>
  source ? `${String(source).replace(/\/+$/, "")}/${String(path).replace(/^\/+/, "")}` : String(path);
