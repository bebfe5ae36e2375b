// Small DOM helpers: build elements, write errors where they happen.
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v === true) e.setAttribute(k, "");
    else e.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

let ids = 0;
export function uid(prefix) {
  ids += 1;
  return `${prefix}-${ids}`;
}

// A labelled field: input + help + an error slot tied with aria-describedby.
export function field(label, input, help) {
  // A made-up id differs between two renders of a page: marked, so that
  // drafts.js does not put a kept value into another field.
  if (!input.id) input.setAttribute("data-generated-id", "");
  const id = input.id || uid("f");
  input.id = id;
  const err = el("p", { class: "field-error", id: `${id}-err`, role: "alert", hidden: true });
  const hint = help ? el("p", { class: "help", id: `${id}-help`, text: help }) : null;
  input.setAttribute("aria-describedby", [hint ? hint.id : null, err.id].filter(Boolean).join(" "));
  return el("div", { class: "field" }, el("label", { for: id, text: label }), input, hint, err);
}

export function fieldError(input, message) {
  const err = document.getElementById(`${input.id}-err`);
  if (!err) return;
  if (message) {
    err.textContent = message;
    err.hidden = false;
    input.setAttribute("aria-invalid", "true");
  } else {
    err.textContent = "";
    err.hidden = true;
    input.removeAttribute("aria-invalid");
  }
}

// A status line for a form or section: errors and confirmations in place.
export function status() {
  const s = el("p", { class: "status", role: "status", "aria-live": "polite" });
  s.ok = (msg) => {
    s.className = "status ok";
    s.textContent = msg;
  };
  s.fail = (msg) => {
    s.className = "status error";
    s.textContent = msg;
  };
  s.clear = () => {
    s.className = "status";
    s.textContent = "";
  };
  return s;
}

export function when(ts) {
  return ts ? new Date(ts * 1000).toLocaleString() : "";
}

export function loadScript(src) {
  return new Promise((resolve, reject) => {
    if (document.querySelector(`script[src="${src}"]`)) return resolve();
    const s = el("script", { src });
    s.addEventListener("load", resolve);
    s.addEventListener("error", () => reject(new Error(`cannot load ${src}`)));
    document.head.append(s);
  });
}
