// The library's search box: one line of words (file names, camera, lens, places;
// each a prefix, so "pari" finds Paris), date words ("2019", "june 2019",
// "2019-06-14") and kinds (photo, video, live), read by the server
// (GET /api/search, pipeline/library/search.py). Its results are a listing like
// /api/assets, with the same cursors: the library shows them in its own grid.

import { debounce, h } from "./dom.js";

// The listing a page of the library reads: the search when there are words, else
// every asset; the filters go with either.
export function listingPath(filters) {
  return filters.q ? "/api/search" : "/api/assets";
}

// A search box for `value` that calls `onSearch(text)` as one types (after a pause)
// and at once on Enter.
export function searchBox(value, onSearch) {
  const input = h("input#search-q.search-input", {
    type: "search",
    name: "q",
    value,
    maxLength: 200,
    autocomplete: "off",
    spellcheck: false,
    placeholder: "Search: paris 2019, nikon, june 2019, video…",
    "aria-label": "Search photos",
  });
  const later = debounce(() => onSearch(input.value.trim()), 300);
  input.addEventListener("input", later);
  return h("form.card.search-box", {
    role: "search",
    "aria-label": "Search photos",
    onsubmit: (event) => { event.preventDefault(); onSearch(input.value.trim()); },
  }, input);
}
