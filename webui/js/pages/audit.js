// Audit log: every change, newest first, with who, when, from where, what,
// and the state before and after (secrets masked by the box).
import { get } from "../api.js";
import { el, status, when } from "../ui.js";

export const title = "Audit log";

function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 1);
  } catch (e) {
    return text;
  }
}

function row(a) {
  const change = a.before || a.after ? el("details", {}, el("summary", { text: "before → after" }),
    el("div", { class: "before-after" }, el("pre", { class: "small", text: pretty(a.before || "–") }),
      el("pre", { class: "small", text: pretty(a.after || "–") }))) : null;
  return el("tr", {}, el("td", { text: when(a.at) }), el("td", { text: a.actor }),
    el("td", { text: a.source || "" }),
    el("td", { text: a.target && !a.action.includes(a.target) ? `${a.action} ${a.target}` : a.action }),
    el("td", { class: "mono small" }, a.detail || "", change));
}

export default async function render(root) {
  const body = el("tbody", { id: "audit-rows" });
  const st = status();
  const more = el("button", { type: "button", text: "Older entries" });
  let last = 0;
  async function load() {
    st.clear();
    // Until this page is in: a second click (a double click) would fetch
    // the same page again and show each of its entries twice.
    more.disabled = true;
    try {
      const d = await get(`audit?limit=50${last ? `&before=${last}` : ""}`);
      d.entries.forEach((a) => body.append(row(a)));
      // The box says whether older entries exist; a short page does not.
      last = d.next_before || 0;
      more.hidden = !last;
    } catch (e) {
      st.fail(e.message);
    }
    more.disabled = false;
  }
  more.addEventListener("click", load);
  root.append(el("div", { class: "table-wrap" }, el("table", { class: "audit" },
    el("thead", {}, el("tr", {}, ["When", "Who", "From", "What", "Details"].map((h) => el("th", { text: h })))),
    body)), more, st);
  await load();
}
