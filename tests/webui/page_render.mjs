// Renders a plugin's page with a stub DOM and canned API replies, and
// prints what a user sees as JSON: no browser or daemon needed for states
// a live daemon reaches only after minutes (an OCSP staple that ran out) or
// by chance (an h2 server refusing streams during a benchmark).
// Usage: node page_render.mjs ocsp|bench PAGE.js
const [kind, page] = process.argv.slice(2);

// The pages tell elements from text with `instanceof Node`.
globalThis.Node = class Node {};
function el(tag, attrs = {}, ...kids) {
  const n = Object.assign(new Node(), { tag, attrs: { ...attrs }, children: [], className: attrs.class || "", on: {} });
  n.append = (...c) => n.children.push(...c.flat().filter((x) => x !== ""));
  n.replaceChildren = (...c) => { n.children = []; n.append(...c); };
  n.addEventListener = (type, fn) => { n.on[type] = fn; };
  n.append(...kids);
  return n;
}
const text = (n) => (n instanceof Node
  ? (n.attrs.text ?? "") + n.children.map((c) => (c.tag === "br" ? "\n" : text(c))).join("") : String(n));
const find = (n, ok) => (!(n instanceof Node) ? undefined : ok(n) ? n
  : n.children.map((c) => find(c, ok)).find(Boolean));
const byId = (n, id) => find(n, (x) => x.attrs.id === id);
const bold = (n) => (!(n instanceof Node) ? [] : n.tag === "strong" && n.className.split(" ").includes("bad")
  ? [n.attrs.text] : n.children.flatMap(bold));
const cells = (tr) => tr.children.map(text);
const status = () => Object.assign(el("p"), { ok() {}, fail() {}, clear() {} });
const field = (label, input) => el("label", { text: label }, input);
const fieldError = () => {};

const ocspRow = (name, st, extra) => ({ name, responder: "http://127.0.0.1:1/", answer: "good", status: st,
  failures: 0, last_error: null, produced_at: 1700000000, this_update: 1700000000, next_update: 1700000060,
  serve_until: 1700000045, next_refresh: null, staple_age: null, stapled: false, must_staple: false, ...extra });
const replies = {
  ocsp: { "ocsp/status": { runs: 3, next_wake: null, certificates: [
    ocspRow("a-good", "good", { stapled: true, staple_age: 5 }),
    ocspRow("b-expired", "expired", {}),
    ocspRow("c-not-stapled", "not_stapled", { serve_until: null }),
  ] } },
  // 100 asked for over h2: 90 answered, 2 failed, 8 refused after the run
  // stopped sending (not sent), 5 refused earlier and sent again (retried).
  bench: {
    "bench/status": { running: false },
    "bench/runs": [{ id: 7, kind: "run", state: "done", started_at: 1700000000, results: [{ name: "h2", rps: 100 }] }],
    "bench/runs/7": { id: 7, kind: "run", state: "done", results: [{ name: "h2", result: {
      complete: 90, failed: 2, retried: 5, not_sent: 8, rps: 100, transfer_kbps: 10,
      latency_ms: { 50: 1, 90: 2, 99: 3, 100: 4 }, handshakes: { full: 10, resumed: 0 } } }] },
  },
}[kind];
const api = async (method, path) => {
  if (!(path in replies)) throw new Error(`no canned reply for ${method} ${path}`);
  return replies[path];
};

const root = el("div");
const { default: render } = await import(page);
const stop = await render(root, { api, el, field, fieldError, status });
let out;
if (kind === "ocsp") {
  const summary = byId(root, "ocsp-summary");
  out = { summary: { text: summary.textContent, class: summary.className },
    rows: byId(root, "ocsp-rows").children.map((tr) => ({ name: tr.attrs["data-name"], class: tr.className,
      status: text(tr.children[2]), bold_red: bold(tr) })) };
} else {
  await find(root, (x) => x.attrs["data-run"] === "7").on.click();
  const t = byId(root, "bench-result-table");
  out = { head: cells(t.children[0].children[0]), rows: t.children[1].children.map(cells) };
}
stop();
console.log(JSON.stringify(out));
