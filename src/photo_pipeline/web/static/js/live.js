// One EventSource on the global event stream feeds a store of the jobs this page
// knows. Pages subscribe to it; nothing polls.
//
// Correctness: a stream opened at any seq at or before the moment the jobs were
// fetched replays some events already reflected in what was fetched, then every
// newer one; state events are applied in order, so the replay converges to the truth.

import { accessToken, get, session } from "./api.js";

const jobs = new Map(); // id → job (as GET /api/jobs/{id} gives it)
const rates = new Map(); // id → [{t, done}] recent progress samples
const listeners = new Set();
const statusListeners = new Set();

let source = null;
let lastSeq = null; // the newest seq received
let retryDelay = 1000;
let retryTimer = 0;
let status = "connecting";

export const store = {
  get: (id) => jobs.get(id),
  all: () => [...jobs.values()],
  /** Remember ``job`` (fresh from the API) and tell subscribers. */
  put(job) {
    jobs.set(job.id, job);
    sample(job);
    emit({ kind: "job", job });
    return job;
  },
  /** Fetch ``id`` (again) and remember it. */
  async refresh(id) {
    const job = await get(`/api/jobs/${encodeURIComponent(id)}`);
    return store.put(job);
  },
};

/** ``fn({kind: "job", job})`` on every change; ``{kind: "event", message}`` for each
 * stream message. Returns the unsubscribe function. */
export function subscribe(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

export function onStatus(fn) {
  statusListeners.add(fn);
  fn(status);
  return () => statusListeners.delete(fn);
}

function emit(change) {
  for (const fn of [...listeners]) {
    try {
      fn(change);
    } catch (error) {
      console.error(error);
    }
  }
}

function setStatus(value) {
  status = value;
  for (const fn of statusListeners) fn(value);
}

/** Items per second over the last few seconds, and the seconds left at that rate. */
export function rateOf(id) {
  const samples = rates.get(id);
  const job = jobs.get(id);
  if (!samples || samples.length < 2 || !job?.progress || job.state !== "running") return null;
  const first = samples[0];
  const last = samples[samples.length - 1];
  const seconds = (last.t - first.t) / 1000;
  if (seconds <= 0.2 || last.done <= first.done) return null;
  const perSecond = (last.done - first.done) / seconds;
  const left = Math.max(0, job.progress.total - job.progress.done);
  return { perSecond, eta: left / perSecond };
}

function sample(job) {
  if (!job.progress) return;
  const list = rates.get(job.id) || [];
  const now = performance.now();
  list.push({ t: now, done: job.progress.done });
  while (list.length > 2 && now - list[0].t > 10_000) list.shift();
  rates.set(job.id, list);
}

const refreshing = new Map();
function refreshSoon(id) {
  // Several state events of one job in a burst need one fetch.
  if (refreshing.has(id)) return;
  refreshing.set(
    id,
    setTimeout(() => {
      refreshing.delete(id);
      store.refresh(id).catch(() => {});
    }, 50),
  );
}

function handle(message) {
  lastSeq = Math.max(lastSeq ?? 0, message.seq);
  const job = jobs.get(message.job_id);
  if (message.type === "progress") {
    if (job && message.progress) {
      job.progress = message.progress;
      sample(job);
      emit({ kind: "job", job });
    }
  } else if (message.type.startsWith("state:")) {
    if (job) {
      job.state = message.type.slice("state:".length);
      emit({ kind: "job", job });
    }
    refreshSoon(message.job_id); // timings, error, lease
  } else if (message.type === "queued") {
    refreshSoon(message.job_id); // a new job: fetch it
  } else if (job) {
    refreshSoon(message.job_id);
  }
  emit({ kind: "event", message });
}

let generation = 0; // bumped by disconnect: an open in flight then gives up
let opening = false;

/** Open the stream (once), starting at or before ``since`` (a seq). */
export async function connect(since = 0) {
  if (source || retryTimer || opening) return;
  if (lastSeq === null) lastSeq = since;
  await open();
}

export function disconnect() {
  generation += 1;
  clearTimeout(retryTimer);
  retryTimer = 0;
  source?.close();
  source = null;
  jobs.clear();
  rates.clear();
  lastSeq = null;
  retryDelay = 1000;
  setStatus("connecting");
}

async function open() {
  retryTimer = 0;
  if (!session.token) return; // signed out: signing in connects again
  const mine = generation;
  opening = true;
  let token;
  try {
    token = await accessToken();
  } catch (error) {
    if (mine === generation && error.status !== 401) scheduleRetry(); // 401: sign-in shows
    return;
  } finally {
    opening = false;
  }
  if (mine !== generation || source) return;
  const url = `/api/events/stream?after=${lastSeq}&access_token=${encodeURIComponent(token)}`;
  const stream = new EventSource(url);
  source = stream;
  stream.onopen = () => {
    retryDelay = 1000;
    setStatus("live");
  };
  stream.onmessage = (event) => {
    if (event.data) handle(JSON.parse(event.data));
  };
  stream.onerror = () => {
    if (source !== stream) return;
    if (stream.readyState === EventSource.CLOSED) {
      // Refused (an expired query token?) or the server went away: open anew
      // with a fresh token, from the last seq seen.
      source = null;
      scheduleRetry();
    } else {
      setStatus("reconnecting"); // the browser resumes by itself with Last-Event-ID
    }
  };
}

function scheduleRetry() {
  setStatus("reconnecting");
  retryTimer = setTimeout(open, retryDelay);
  retryDelay = Math.min(retryDelay * 2, 30_000);
}
