// The part of the library an organize or a dedupe covers: some registered sources
// and capture days from–to (local calendar, both included). Empty: all of it.

import { get } from "../api.js";
import { h } from "../dom.js";

/**
 * Fields for a scope, ``prefix`` naming their ids. ``onChange`` runs when one changes;
 * ``value()`` is what the API takes (``sources``, ``since``, ``until``), without the
 * empty ones; ``saved`` restores an earlier ``value()``.
 */
export function scopeFields(prefix, onChange, saved = {}) {
  const sources = h(`select#${prefix}-sources`, { name: "sources", multiple: true, size: 3 });
  const since = h(`input#${prefix}-since`, { type: "date", name: "since", value: saved.since || "" });
  const until = h(`input#${prefix}-until`, { type: "date", name: "until", value: saved.until || "" });
  for (const el of [sources, since, until]) el.addEventListener("change", onChange);
  const root = h("fieldset.scope", {},
    h("legend", {}, "Only part of the library"),
    h("div.field-row", {},
      h("div.field", {}, h("label", { for: `${prefix}-sources` }, "Sources"), sources,
        h("p.hint", {}, "None chosen: every source.")),
      h("div.field", {}, h("label", { for: `${prefix}-since` }, "Taken from"), since),
      h("div.field", {}, h("label", { for: `${prefix}-until` }, "Taken until"), until)));

  get("/api/sources").then((found) => {
    const chosen = new Set((saved.sources || []).map(String));
    sources.replaceChildren(...found.map((source) => h("option", {
      value: String(source.id), selected: chosen.has(String(source.id)), title: source.path,
    }, source.path)));
    if (!found.length) sources.append(h("option", { disabled: true }, "No source imported yet"));
  }).catch(() => {
    sources.replaceChildren(h("option", { disabled: true }, "Sources could not be listed"));
  });

  function value() {
    const picked = [...sources.selectedOptions].map((option) => option.value);
    const scope = {};
    if (picked.length) scope.sources = picked;
    if (since.value) scope.since = since.value;
    if (until.value) scope.until = until.value;
    return scope;
  }
  return { root, value };
}
