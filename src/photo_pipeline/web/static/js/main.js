// The app shell: sign-in, header, client-side routes, the live stream.

import { ApiProblem, UNAUTHORIZED, get, session } from "./api.js";
import { clearProblems } from "./components.js";
import { fill, h } from "./dom.js";
import { connect, disconnect, onStatus } from "./live.js";
import * as albums from "./pages/albums.js";
import * as duplicates from "./pages/duplicates.js";
import * as job from "./pages/job.js";
import * as jobs from "./pages/jobs.js";
import * as library from "./pages/library.js";
import * as organize from "./pages/organize.js";
import * as people from "./pages/people.js";
import * as places from "./pages/places.js";
import * as schedules from "./pages/schedules.js";

const ROUTES = [
  [/^\/(jobs)?\/?$/, jobs, "jobs"],
  [/^\/jobs\/([^/]+)\/?$/, job, "jobs"],
  [/^\/library\/?$/, library, "library"],
  [/^\/albums(?:\/([0-9]+))?\/?$/, albums, "albums"],
  [/^\/people(?:\/([0-9]+))?\/?$/, people, "people"],
  [/^\/places\/?$/, places, "places"],
  [/^\/duplicates\/?$/, duplicates, "duplicates"],
  [/^\/organize\/?$/, organize, "organize"],
  [/^\/schedules\/?$/, schedules, "schedules"],
];

const main = document.querySelector("main");
const header = document.querySelector(".topbar");
let leave = null; // the current page's cleanup

function route() {
  leave?.();
  leave = null;
  clearProblems();
  setMenu(false);
  const path = location.pathname;
  for (const [pattern, page, nav] of ROUTES) {
    const match = path.match(pattern);
    if (!match) continue;
    for (const link of document.querySelectorAll("[data-nav]")) {
      link.toggleAttribute("aria-current", link.dataset.nav === nav);
      if (link.dataset.nav === nav) link.setAttribute("aria-current", "page");
    }
    fill(main);
    leave = page.render(main, match.slice(1), new URLSearchParams(location.search)) || null;
    return;
  }
  fill(main, h("div.empty", {}, h("p.empty-title", {}, "Page not found"),
    h("p", {}, h("a", { href: "/jobs", dataset: { link: "" } }, "Go to the jobs"))));
}

export function navigate(href, { replace = false } = {}) {
  if (replace) history.replaceState(null, "", href);
  else history.pushState(null, "", href);
  route();
  main.focus({ preventScroll: true });
  window.scrollTo(0, 0);
}

document.addEventListener("click", (event) => {
  const link = event.target.closest("a[data-link]");
  if (!link || event.defaultPrevented || event.button !== 0) return;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  event.preventDefault();
  if (link.getAttribute("href") !== location.pathname + location.search) navigate(link.getAttribute("href"));
});
window.addEventListener("popstate", route);

// ── the header's menu, folded behind a button on narrow screens ─────────────────
// A disclosure, not a dialog: it closes on Escape (focus back on the button), on a
// click or focus outside the header, and on every route change.
const menuButton = header.querySelector(".menu-button");
const menu = document.getElementById("main-menu");
const menuOpen = () => menuButton.getAttribute("aria-expanded") === "true";

function setMenu(open) {
  menuButton.setAttribute("aria-expanded", String(open));
}

menuButton.addEventListener("click", () => {
  setMenu(!menuOpen());
  if (menuOpen()) (menu.querySelector("[aria-current]") || menu.querySelector("a, button")).focus();
});
document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape" || !menuOpen()) return;
  setMenu(false);
  menuButton.focus();
});
document.addEventListener("click", (event) => {
  if (menuOpen() && !header.contains(event.target)) setMenu(false);
});
menu.addEventListener("focusout", (event) => {
  if (menuOpen() && !header.contains(event.relatedTarget)) setMenu(false);
});

// ── signing in ──────────────────────────────────────────────────────────────
function showSignIn(message) {
  leave?.();
  leave = null;
  disconnect();
  setMenu(false);
  header.hidden = true;
  clearProblems();
  const input = h("input#token", {
    type: "password", name: "token", autocomplete: "current-password", required: true,
    spellcheck: "false", "aria-describedby": "token-help",
  });
  const error = h("p.form-error", { role: "alert", hidden: !message }, message || "");
  const button = h("button.button.primary", { type: "submit" }, "Sign in");
  const form = h("form.signin-card", {
    "aria-labelledby": "signin-title",
    onsubmit: async (event) => {
      event.preventDefault();
      const token = input.value.trim();
      if (!token) return;
      button.disabled = true;
      error.hidden = true;
      try {
        await get("/api/access-token", undefined, { token });
        session.token = token;
        await start();
      } catch (problem) {
        error.textContent = problem instanceof ApiProblem && problem.status === 401
          ? "That token was not accepted. Check it and try again."
          : `${problem.code || "error"}: ${problem.detail || problem.message}`;
        error.hidden = false;
        button.disabled = false;
        input.select();
      }
    },
  },
  h("img.signin-logo", { src: "/static/icon.svg", alt: "", width: 48, height: 48 }),
  h("h1#signin-title", {}, "Sign in to photo-pipeline"),
  h("label", { for: "token" }, "API token"),
  input,
  h("p.hint#token-help", {}, "Printed by ", h("code", {}, "photo-pipeline serve"),
    " and stored in ", h("code", {}, "<library home>/api-token"),
    ". It is kept for this browser tab only."),
  error,
  button);
  fill(main, h("div.signin", {}, form));
  input.focus();
}

async function start() {
  header.hidden = false;
  try {
    const newest = await get("/api/jobs", { limit: 1 });
    // Pages load what exists now; the stream carries what happens after.
    connect(newest.last_event_seq);
  } catch (problem) {
    if (problem.status === 401) return; // the sign-in is showing again
    connect(0);
  }
  route();
}

window.addEventListener(UNAUTHORIZED, () => {
  session.token = null;
  showSignIn("Your session has ended or the token was refused. Sign in again.");
});

document.querySelector("[data-action=sign-out]").addEventListener("click", () => {
  session.token = null;
  showSignIn();
});

const liveLabel = document.querySelector("[data-live]");
onStatus((status) => {
  liveLabel.dataset.live = status;
  liveLabel.textContent = { live: "Live", reconnecting: "Reconnecting…", connecting: "Connecting…" }[status];
  liveLabel.title = status === "live" ? "Receiving job events as they happen" : "Waiting for the event stream";
});

if (session.token) start();
else showSignIn();
