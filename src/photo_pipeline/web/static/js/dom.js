// Building DOM nodes without innerHTML: text from the API never becomes markup.

/** h("a#id.class.other", {href: "/x"}, "text", child) → an element. */
export function h(spec, attrs = {}, ...children) {
  const tag = spec.match(/^[a-z0-9-]*/i)[0] || "div";
  const el = document.createElement(tag);
  const classes = [];
  for (const [, sigil, name] of spec.slice(tag.length).matchAll(/([#.])([^#.]+)/g)) {
    if (sigil === "#") el.id = name;
    else classes.push(name);
  }
  if (classes.length) el.className = classes.join(" ");
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else if (name === "dataset") {
      Object.assign(el.dataset, value);
    } else if (name === "class") {
      el.className = [el.className, value].filter(Boolean).join(" ");
    } else if (name in el && typeof value !== "string") {
      el[name] = value;
    } else {
      el.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replace every child of ``el``. */
export function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** Call ``fn`` once ``ms`` after the last of a burst of calls. */
export function debounce(fn, ms) {
  let timer = 0;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}
