// Schedules: periodic jobs (a cron expression in a time zone, or an interval), each
// with its next run, its last run and how the last job ended; pause, resume, remove,
// and a form to add one.

import { request, get, post } from "../api.js";
import { emptyState, inlineProblem, pageHeader, showProblem, spinner, stateBadge } from "../components.js";
import { debounce, fill, h } from "../dom.js";
import { shortId, when } from "../format.js";
import { store, subscribe } from "../live.js";

const REFRESH_MS = 30_000; // next runs move on; a tick may have queued a job

export function render(main) {
  const rows = new Map(); // schedule id → {tr, schedule}
  const body = h("tbody");
  const holder = h("div.table-wrap", {}, spinner());
  const list = h("section.card.flush", { "aria-labelledby": "schedules-title" },
    h("div.card-header", {}, h("h2#schedules-title", {}, "All schedules"), h("span.muted.schedule-count")),
    holder);
  const form = addForm(() => load());
  fill(main,
    pageHeader("Schedules", "Jobs that run by themselves: each tick queues one job, however many workers run."),
    list, form.root);

  async function load() {
    try {
      const answer = await get("/api/schedules");
      form.setTypes(answer.job_types);
      draw(answer.schedules);
    } catch (error) {
      fill(holder, inlineProblem(error));
    }
  }

  function draw(schedules) {
    rows.clear();
    fill(body);
    for (const schedule of schedules) {
      const row = rowFor(schedule);
      rows.set(schedule.id, row);
      body.append(row.tr);
    }
    list.querySelector(".schedule-count").textContent = schedules.length ? `${schedules.length} shown` : "";
    if (!schedules.length) {
      fill(holder, emptyState("No schedules", "Add one below: a nightly rescan, a weekly verify…"));
      return;
    }
    fill(holder, h("table.table.schedules-table", {},
      h("caption.visually-hidden", {}, "Schedules"),
      h("thead", {}, h("tr", {},
        h("th", { scope: "col" }, "Job"),
        h("th", { scope: "col" }, "When"),
        h("th", { scope: "col" }, "Next run"),
        h("th", { scope: "col" }, "Last run"),
        h("th", { scope: "col" }, "Last job"),
        h("th", { scope: "col" }, "Skipped"),
        h("th.col-actions", { scope: "col", "aria-label": "Actions" }))),
      body));
  }

  function rowFor(schedule) {
    const job = schedule.last_job;
    const live = job ? store.get(job.id) : null;
    const state = live?.outcome || live?.state || job?.outcome || job?.state;
    const params = Object.entries(schedule.params || {}).map(([k, v]) => `${k}=${v}`).join(" ");
    const skipped = h("td.nowrap", { title: schedule.last_skip_reason || "" },
      String(schedule.skipped_ticks),
      schedule.last_skip_reason ? h("span.muted.skip-reason", {}, ` — ${schedule.last_skip_reason}`) : null);
    const tr = h("tr", { dataset: { scheduleId: schedule.id, jobType: schedule.job_type } },
      h("td", {}, h("span.job-type", {}, schedule.job_type), params ? h("span.muted.mono", {}, ` ${params}`) : null),
      h("td.nowrap", {}, schedule.cron
        ? [h("code", {}, schedule.cron), h("span.muted", {}, ` ${schedule.time_zone}`)]
        : `every ${schedule.every}`),
      h("td.nowrap.next-run", {}, schedule.paused ? h("span.badge.state-cancelled", {}, "paused") : when(schedule.next_run)),
      h("td.nowrap.last-run", {}, job ? when(job.created_at) : "never"),
      h("td.last-job", {}, job
        ? [state ? stateBadge(state) : h("span.muted", {}, "pruned"), " ",
          h("a.job-link", { href: `/jobs/${job.id}`, dataset: { link: "" } }, shortId(job.id))]
        : "—"),
      skipped,
      h("td.col-actions", {}, ...actions(schedule)));
    return { tr, schedule };
  }

  function actions(schedule) {
    const act = (label, run) => h("button.button.small", { type: "button", onclick: async (event) => {
      event.currentTarget.disabled = true;
      try {
        await run();
      } catch (error) {
        showProblem(error, { context: `${label} schedule ${schedule.id}` });
      }
      await load();
    } }, label);
    const toggle = schedule.paused
      ? act("Resume", () => post(`/api/schedules/${schedule.id}/resume`))
      : act("Pause", () => post(`/api/schedules/${schedule.id}/pause`));
    // Two steps, no dialog: the first click asks, the second removes.
    const remove = h("button.button.small.danger-ghost", { type: "button", onclick: async (event) => {
      const button = event.currentTarget;
      if (button.dataset.armed !== "yes") {
        button.dataset.armed = "yes";
        button.textContent = "Confirm remove";
        return;
      }
      button.disabled = true;
      try {
        await request("DELETE", `/api/schedules/${schedule.id}`);
      } catch (error) {
        showProblem(error, { context: `Remove schedule ${schedule.id}` });
      }
      await load();
    } }, "Remove");
    return [toggle, " ", remove];
  }

  // A job a schedule queued moves on: its badge follows; a new job may be a tick's.
  const loadSoon = debounce(load, 300);
  const unsubscribe = subscribe((change) => {
    if (change.kind !== "job") return;
    const { job } = change;
    const known = [...rows.values()].some((row) => row.schedule.last_job?.id === job.id);
    if (known || [...rows.values()].some((row) => row.schedule.job_type === job.type)) loadSoon();
  });
  const timer = setInterval(load, REFRESH_MS);
  load();
  return () => {
    unsubscribe();
    clearInterval(timer);
  };
}

function addForm(added) {
  const type = h("select#schedule-type", { name: "job_type", required: true });
  const mode = h("select#schedule-mode", { name: "mode" },
    h("option", { value: "cron" }, "Cron"), h("option", { value: "every" }, "Every"));
  const timing = h("input#schedule-when.mono", {
    type: "text", name: "when", required: true, value: "0 3 * * *", spellcheck: "false", autocomplete: "off",
    "aria-describedby": "schedule-help",
  });
  const params = h("input#schedule-params.mono", {
    type: "text", name: "params", placeholder: "sample=25", spellcheck: "false", autocomplete: "off",
  });
  const zone = h("input#schedule-tz", {
    type: "text", name: "time_zone", spellcheck: "false", autocomplete: "off",
    value: Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC",
  });
  const status = h("p.form-status", { role: "status" });
  const button = h("button.button.primary", { type: "submit" }, "Add schedule");
  mode.addEventListener("change", () => {
    timing.value = mode.value === "cron" ? "0 3 * * *" : "6h";
    zone.disabled = mode.value !== "cron";
  });
  const root = h("form.card.card-pad.schedule-form", {
    "aria-labelledby": "schedule-form-title",
    onsubmit: async (event) => {
      event.preventDefault();
      const body = { job_type: type.value, params: parseParams(params.value) };
      body[mode.value] = timing.value.trim();
      if (mode.value === "cron" && zone.value.trim()) body.time_zone = zone.value.trim();
      button.disabled = true;
      fill(status);
      try {
        const schedule = await post("/api/schedules", body);
        fill(status, `Schedule ${schedule.id} added: next run ${when(schedule.next_run)}.`);
        await added();
      } catch (error) {
        fill(status, inlineProblem(error));
      } finally {
        button.disabled = false;
      }
    },
  },
  h("h2#schedule-form-title", {}, "Add a schedule"),
  h("div.field-row", {},
    h("div.field", {}, h("label", { for: "schedule-type" }, "Job"), type),
    h("div.field", {}, h("label", { for: "schedule-mode" }, "By"), mode),
    h("div.field.grow", {}, h("label", { for: "schedule-when" }, "Cron expression or interval"), timing),
    h("div.field", {}, h("label", { for: "schedule-tz" }, "Time zone"), zone),
    h("div.field", {}, h("label", { for: "schedule-params" }, "Params"), params),
    button),
  h("p.hint#schedule-help", {}, "Cron: minute hour day month weekday, e.g. ", h("code", {}, "0 3 * * *"),
    " (03:00 every day) in the time zone given. Interval: ", h("code", {}, "6h"), ", ",
    h("code", {}, "30m"), ", ", h("code", {}, "1d"), ". Params: ", h("code", {}, "name=value"),
    " pairs, e.g. ", h("code", {}, "sample=25"), " for a verify of the least recently checked quarter."),
  status);

  function setTypes(types) {
    if (type.options.length) return;
    for (const kind of types) type.append(h("option", { value: kind.job_type, title: kind.description }, kind.job_type));
  }
  return { root, setTypes };
}

function parseParams(text) {
  const params = {};
  for (const pair of text.split(/\s+/).filter(Boolean)) {
    const at = pair.indexOf("=");
    if (at > 0) params[pair.slice(0, at)] = pair.slice(at + 1);
    else params[pair] = true;
  }
  return params;
}
