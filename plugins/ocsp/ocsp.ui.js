// The OCSP plugin's page in the tlsbox web UI (served at /ui/plugins/ocsp.js
// while the plugin runs): one row per certificate from GET ocsp/status, a
// revoked certificate, a must-staple one without a staple, one whose good
// answer is no longer sent and one whose CRL ran out shown first and in red,
// and "refresh now" per certificate or for all (POST ocsp/refresh).
// Certificates without an OCSP URL are checked against their CA's CRL
// (method "crl"): nothing to staple, and the row says so.
// A refresh is queued (202): the page polls the status until that run has
// gone by, then writes the outcome in the certificate's row.
export const title = "OCSP stapling and revocation";

const when = (t) => (t ? new Date(t * 1000).toLocaleString() : "–");

function age(s) {
  if (s === null || s === undefined) return "no staple";
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

// A good answer that clients no longer get (ocsp/status says "expired" or
// "not_stapled"): a warning with its reason, never a neutral word.
const unsent = {
  expired: ["EXPIRED - no staple is sent", "the last good answer ran out and no fresh one came"],
  not_stapled: ["NOT STAPLED - no staple is sent", "the last good answer is not being served"],
  stale: ["STALE - revocation not known now", "the last CRL ran out and no fresh one came"],
};
const byCrl = (c) => c.method === "crl";

// Worst first: revoked, then no staple sent (must-staple or a good answer
// that lapsed), then errors.
function rank(c) {
  if (c.status === "revoked") return 0;
  if (c.warning || unsent[c.status]) return 1;
  if (c.last_error) return 2;
  return 3;
}

export default async function render(root, { api, el, status }) {
  const top = status();
  const summary = el("p", { id: "ocsp-summary", class: "muted" });
  const body = el("tbody", { id: "ocsp-rows" });
  const allBtn = el("button", { type: "button", id: "ocsp-refresh-all", text: "Refresh all now" });
  const rowStatus = new Map(); // certificate name -> its status line, kept across redraws
  let timer = null;
  let gone = false;

  function lineFor(name) {
    if (!rowStatus.has(name)) rowStatus.set(name, status());
    return rowStatus.get(name);
  }

  function statusCell(c) {
    const td = el("td", {});
    if (c.status === "revoked") {
      td.append(el("strong", { class: "bad", text: `REVOKED${c.revoked_at ? " " + when(c.revoked_at) : ""}` }));
    } else if (unsent[c.status]) {
      const [what, usual] = unsent[c.status];
      const why = c.not_stapled_because || usual;
      td.append(el("strong", { class: "bad", text: what }), el("br"),
        el("span", { class: "small bad", text: `${why}${c.serve_until ? " (served until " + when(c.serve_until) + ")" : ""}` }));
    } else {
      td.append(el("span", { class: c.stapled || (byCrl(c) && c.status === "good") ? "ok" : "",
        text: c.status.replace("_", " ") }));
    }
    if (byCrl(c)) td.append(el("br"), el("span", { class: "small muted",
      text: "checked by CRL (no OCSP URL in it: nothing to staple)" }));
    if (c.stapled) td.append(el("br"), el("span", { class: "small ok", text: "stapled" }));
    if (c.warning) td.append(el("br"), el("strong", { class: "bad", text: c.warning[0].toUpperCase() + c.warning.slice(1) }));
    if (c.reason) td.append(el("br"), el("span", { class: "small muted", text: c.reason }));
    return td;
  }

  function row(c) {
    const btn = el("button", { type: "button", class: "small", "data-cert": c.name,
      "aria-label": `Refresh ${c.name} now`, text: "Refresh now",
      disabled: c.status === "not_applicable" });
    btn.addEventListener("click", () => refresh(c.name));
    return el("tr", { class: rank(c) < 2 ? "bad" : "", "data-name": c.name },
      el("td", { text: c.name }),
      el("td", { text: byCrl(c) ? `CRL: ${c.responder}` : c.responder || "–" }), statusCell(c),
      el("td", { text: when(c.produced_at) }), el("td", { text: when(c.this_update) }),
      el("td", { text: when(c.next_update) }), el("td", { text: when(c.next_refresh) }),
      el("td", { class: c.last_error ? "bad" : "", text: c.last_error
        ? `${c.last_error}${c.failures ? ` (${c.failures} failures)` : ""}` : "–" }),
      el("td", { text: byCrl(c) ? "–" : age(c.staple_age) }), el("td", {}, btn, lineFor(c.name)));
  }

  async function load() {
    const s = await api("GET", "ocsp/status");
    const certs = s.certificates.slice().sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name));
    body.replaceChildren(...certs.map(row));
    if (!certs.length) body.append(el("tr", {}, el("td", { colspan: "10", text: "No certificates yet." })));
    const revoked = certs.filter((c) => c.status === "revoked").length;
    const warned = certs.filter((c) => c.warning).length;
    const lapsed = certs.filter((c) => !c.warning && unsent[c.status] && !byCrl(c)).length;
    const crl = certs.filter(byCrl).length;
    const stale = certs.filter((c) => byCrl(c) && c.status === "stale").length;
    summary.textContent = `${certs.length} certificate(s), ${certs.filter((c) => c.stapled).length} stapled` +
      (crl ? `, ${crl} checked by CRL` : "") + (stale ? `, ${stale} with a stale CRL` : "") +
      (revoked ? `, ${revoked} REVOKED` : "") + (warned ? `, ${warned} must-staple without a staple` : "") +
      (lapsed ? `, ${lapsed} good answer(s) no longer sent` : "") +
      `. Run ${s.runs}, ${s.next_wake ? "next check " + when(s.next_wake) : "no check planned"}.`;
    summary.className = revoked || warned || lapsed || stale ? "bad" : "muted";
    return s;
  }

  // Wait (up to 30 s) until the status shows run `run` done, then redraw.
  async function settle(run) {
    for (let i = 0; i < 60 && !gone; i++) {
      const s = await api("GET", "ocsp/status");
      if (s.runs >= run) return load();
      await new Promise((r) => setTimeout(r, 500));
    }
    throw new Error("the refresh is still running; reload the page later");
  }

  async function refresh(name) {
    const line = name ? lineFor(name) : top;
    line.ok("Refreshing…");
    try {
      const q = await api("POST", "ocsp/refresh", name ? { name } : {});
      const s = await settle(q.run);
      for (const c of s.certificates) {
        if (name && c.name !== name) continue;
        const l = lineFor(c.name);
        if (c.last_error) l.fail(c.last_error);
        else if (unsent[c.status]) l.fail(unsent[c.status][0]);
        else if (byCrl(c) && c.status === "good") l.ok(`Not in the CRL of ${when(c.this_update)}`);
        else l.ok(c.stapled ? `Fresh: produced ${when(c.produced_at)}` : c.status.replace("_", " "));
      }
      if (!name) top.ok(`Refreshed ${s.certificates.length} certificate(s).`);
    } catch (e) {
      line.fail(e.message);
    }
  }

  allBtn.addEventListener("click", () => refresh(null));
  const head = ["Certificate", "Responder or CRL", "Status", "Produced", "This update", "Next update",
    "Next refresh", "Last error", "Staple age", ""].map((h) => el("th", { scope: "col", text: h }));
  root.append(el("div", { class: "card" }, summary, el("div", { class: "buttons" }, allBtn), top),
    el("div", { class: "table-wrap" }, el("table", { id: "ocsp-table" },
      el("thead", {}, el("tr", {}, head)), body)));
  await load();
  timer = setInterval(() => load().catch((e) => top.fail(e.message)), 15000);
  return () => {
    gone = true;
    clearInterval(timer);
  };
}
