// The bench plugin's page in the tlsbox web UI (served at /ui/plugins/bench.js
// while the plugin runs): run a scenario (POST bench/run), the crypto ceiling
// (POST bench/ceiling) or the report (POST bench/report), follow the job
// (GET bench/status, polled twice a second), cancel it (POST bench/cancel),
// then read the stored run (GET bench/runs/ID); the list of stored runs
// (GET bench/runs) and the comparison of two (GET bench/compare/A/B).
export const title = "Benchmark";

const when = (t) => (t ? new Date(t * 1000).toLocaleString() : "–");
const num = (x, d = 1) => (typeof x === "number" ? x.toFixed(d) : "–");
const pcts = ["50", "90", "99", "100"];

// The machine a run was made on, in words and units, as tlsboxctl bench
// show says it: its JSON keys as they were read "memory kb 24683772" (KiB,
// not kilobits) and "aes true".
function machineText(m) {
  const mem = typeof m.memory_kb === "number" ? `, memory ${(m.memory_kb / (1 << 20)).toFixed(1)} GiB` : "";
  return `${m.cpu_model}, ${m.cores} cores, governor ${m.governor}, kernel ${m.kernel}, ${m.arch}, ` +
    `AES instructions ${m.aes ? "yes" : "no"}${mem}`;
}

export default async function render(root, { api, el, field, fieldError, status }) {
  let poll = null;
  let gone = false;
  const sel = (id, opts) => el("select", { id }, opts.map((o) => el("option", { value: o, text: o })));
  const f = {
    scenario: sel("bench-scenario", ["h2", "h1", "https-new", "https-resume", "http"]),
    concurrency: el("input", { id: "bench-concurrency", type: "number", min: "1", value: "10" }),
    requests: el("input", { id: "bench-requests", type: "number", min: "1", value: "1000" }),
    duration: el("input", { id: "bench-duration", type: "number", min: "1", placeholder: "instead of requests" }),
    streams: el("input", { id: "bench-streams", type: "number", min: "1", value: "10" }),
    tls: sel("bench-tls", ["any", "1.3", "1.2"]),
    key: sel("bench-key", ["any", "ecdsa", "rsa"]),
    cipher: sel("bench-cipher", ["any", "aes128gcm", "aes256gcm", "chacha20"]),
    group: sel("bench-group", ["any", "x25519", "p256", "p384", "ffdhe2048"]),
    url: el("input", { id: "bench-url", placeholder: "the local site", class: "wide" }),
  };
  const runSt = status();
  const bar = el("progress", { id: "bench-bar", max: "100", value: "0", hidden: true });
  const prog = el("p", { id: "bench-progress", role: "status", "aria-live": "polite", class: "muted" });
  const cancel = el("button", { type: "button", id: "bench-cancel", text: "Cancel", hidden: true });
  const result = el("div", { id: "bench-result" });
  const runs = el("div", { id: "bench-runs" });
  const cmpSt = status();
  const cmp = el("div", { id: "bench-compare" });

  function table(id, head, rows) {
    return el("div", { class: "table-wrap" }, el("table", { id }, el("thead", {}, el("tr", {},
      head.map((h) => el("th", { scope: "col", text: h })))),
    el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => (c instanceof Node ? el("td", {}, c)
      : el("td", { text: c ?? "–" }))))))));
  }

  function ceilingCell(c) {
    if (!c) return "–";
    if (!c.ratio) return c.note || "–";
    return `${num(c.achieved_per_core, 0)} / ${num(c.ceiling_per_core, 0)} per core (${num(c.ratio * 100, 0)} %)`;
  }

  function showRun(r) {
    const parts = [el("h3", { text: `Run ${r.id}: ${r.kind}, ${r.state}${r.error ? ": " + r.error : ""}` })];
    const steps = (r.results || []).filter((s) => s.result && !s.result.error && s.name !== "ceiling");
    if (steps.length) {
      parts.push(table("bench-result-table", ["Step", "Complete", "Failed", "Retried", "Not sent", "Req/s", "KiB/s",
        ...pcts.map((p) => `p${p} ms`), "Handshakes full/resumed", "TLS", "Achieved / ceiling"],
      steps.map((s) => {
        const x = s.result;
        // Not sent: refused streams given back after the run stopped sending, so
        // that complete + failed + not sent is what was asked for ("–" for runs
        // stored before it was counted).
        return [s.name, x.complete, x.failed, x.retried, x.not_sent, num(x.rps), num(x.transfer_kbps),
          ...pcts.map((p) => num(x.latency_ms && x.latency_ms[p], 2)),
          `${x.handshakes.full} / ${x.handshakes.resumed}`,
          x.tls ? [x.tls.protocol, x.tls.cipher, x.tls.group].filter(Boolean).join(" ") : "–",
          ceilingCell(x.ceiling)];
      })));
    }
    const ceil = (r.results || []).find((s) => s.result && s.result.handshakes_per_core);
    if (ceil) {
      const c = ceil.result;
      const rows = [];
      for (const [k, v] of Object.entries(c.signatures_per_s)) rows.push(["signatures/s", k, num(v, 0)]);
      for (const [k, v] of Object.entries(c.key_exchanges_per_s)) rows.push(["key exchanges/s", k, num(v, 0)]);
      for (const [k, v] of Object.entries(c.aead_mb_per_s)) rows.push(["MB/s", k, num(v, 1)]);
      for (const [k, v] of Object.entries(c.handshakes_per_core)) rows.push(["full handshakes/s", k, num(v, 0)]);
      parts.push(table("bench-ceiling-table", ["Per core", "Algorithm", "Value"], rows));
    }
    const rep = r.info && r.info.report;
    if (rep) {
      parts.push(table("bench-report-table", ["Question", "A", "B", "A req/s", "B req/s", "A / B"],
        rep.map((q) => [q.question, q.a, q.b, num(q.a_rps), num(q.b_rps),
          q.ratio ? `×${num(q.ratio, 2)}` : q.note || "–"])));
    }
    const m = r.machine;
    if (m) parts.push(el("p", { class: "small muted", id: "bench-machine", text: `Machine: ${machineText(m)}` }));
    const pin = r.info && r.info.pinning;
    if (pin && pin.note) parts.push(el("p", { class: "small muted", text: `Cores: ${pin.note}` }));
    result.replaceChildren(...parts);
  }

  async function loadRuns() {
    const list = await api("GET", "bench/runs");
    const pick = (name, id) => el("input", { type: "radio", name, value: String(id),
      "aria-label": `${name === "cmp-a" ? "A" : "B"}: run ${id}` });
    const show = (id) => {
      const b = el("button", { type: "button", class: "small", "data-run": String(id), text: "Show" });
      b.addEventListener("click", async () => showRun(await api("GET", `bench/runs/${id}`)));
      return b;
    };
    runs.replaceChildren(list.length ? table("bench-runs-table", ["Run", "Kind", "State", "Started",
      "Steps (req/s)", "A", "B", ""], list.map((r) => [String(r.id), r.kind, r.state, when(r.started_at),
      r.results.map((s) => `${s.name} ${num(s.rps, 0)}`).join(", "), pick("cmp-a", r.id),
      pick("cmp-b", r.id), show(r.id)])) : el("p", { class: "muted", text: "No stored runs yet." }));
  }

  // One chain of status reads at a time: a newer follow() (a run started
  // here, or the one found running when the page opened) ends the older, so
  // a finished run is shown, and the tables replaced, once.
  let chain = 0;
  async function follow(id, mine = ++chain) {
    bar.hidden = false;
    cancel.hidden = false;
    clearTimeout(poll);
    const s = await api("GET", "bench/status");
    if (mine !== chain || gone) return;
    if (s.running && s.id === id) {
      const p = s.progress;
      const frac = p.total ? p.done / p.total : p.total_ms ? p.elapsed_ms / p.total_ms : 0;
      bar.value = Math.round(100 * ((p.step - 1 + Math.min(frac, 1)) / Math.max(p.steps, 1)));
      prog.textContent = `Run ${id}: ${p.phase} (step ${p.step} of ${p.steps}), ` +
        `${p.total ? `${p.done} of ${p.total} requests, ` : ""}${(p.elapsed_ms / 1000).toFixed(1)} s`;
      poll = setTimeout(() => follow(id, mine).catch((e) => runSt.fail(e.message)), 500);
      return;
    }
    const r = await api("GET", `bench/runs/${id}`);
    if (mine !== chain || gone) return;
    bar.hidden = true;
    cancel.hidden = true;
    runSt.clear(); // "Run N started." beside "Run N done." read as two runs
    prog.textContent = `Run ${id} ${r.state}.`;
    showRun(r);
    await loadRuns();
  }

  async function start(path, body) {
    if (!body) return; // refused by a field already
    runSt.clear();
    Object.values(f).forEach((i) => fieldError(i, null));
    try {
      const r = await api("POST", path, body);
      runSt.ok(`Run ${r.id} (${r.kind}) started.`);
      await follow(r.id);
    } catch (e) {
      // "bench: concurrency 0 is out of range: 1..1000": by that field.
      const m = e.message.match(/^bench: "?([a-z_]+)"? /);
      if (m && f[m[1]]) {
        fieldError(f[m[1]], e.message);
        f[m[1]].focus();
        runSt.fail("Not started: see the field marked above.");
      } else {
        runSt.fail(e.message);
      }
    }
  }

  // Requests and duration both emptied: sent as 0 requests, the box's
  // "requests 0 is out of range" named a value nobody typed.
  function countOrDuration() {
    if (f.requests.value.trim() !== "" || f.duration.value.trim() !== "") return true;
    Object.values(f).forEach((i) => fieldError(i, null));
    fieldError(f.requests, "Give a number of requests, or a duration below.");
    f.requests.focus();
    runSt.fail("Not started: see the field marked above.");
    return false;
  }

  function runBody() {
    if (!countOrDuration()) return null;
    const b = { scenario: f.scenario.value, concurrency: Number(f.concurrency.value) };
    if (f.duration.value) b.duration = Number(f.duration.value);
    else b.requests = Number(f.requests.value);
    if (f.scenario.value === "h2") b.streams = Number(f.streams.value);
    for (const k of ["tls", "key", "cipher", "group"]) if (f[k].value !== "any") b[k] = f[k].value;
    if (f.url.value.trim()) b.url = f.url.value.trim();
    return b;
  }

  const ceilBtn = el("button", { type: "button", id: "bench-ceiling", text: "Measure the crypto ceiling" });
  ceilBtn.addEventListener("click", () => start("bench/ceiling", {}));
  const reportBtn = el("button", { type: "button", id: "bench-report", text: "Run the report" });
  reportBtn.addEventListener("click", () => start("bench/report", { requests: Number(f.requests.value),
    concurrency: Number(f.concurrency.value) }));
  const form = el("form", { class: "card", id: "bench-form" }, el("h2", { text: "Run" }),
    field("Scenario", f.scenario, "h2/h1: keep-alive; https-new: a full handshake per request; " +
      "https-resume: session tickets; http: plain"),
    field("Concurrent connections", f.concurrency), field("Requests", f.requests),
    field("…or duration (s)", f.duration), field("h2 streams per connection", f.streams),
    field("TLS version", f.tls), field("Key type", f.key), field("Cipher", f.cipher), field("Group", f.group),
    field("Target URL", f.url, "Empty: the local site. Another server to compare with."),
    el("div", { class: "buttons" }, el("button", { type: "submit", text: "Run" }),
      ceilBtn, reportBtn, cancel),
    bar, prog, runSt);
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    start("bench/run", runBody());
  });
  cancel.addEventListener("click", async () => {
    try {
      await api("POST", "bench/cancel", {});
    } catch (e) {
      runSt.fail(e.message);
    }
  });
  const cmpBtn = el("button", { type: "button", id: "bench-compare-btn", text: "Compare A and B" });
  cmpBtn.addEventListener("click", async () => {
    const a = runs.querySelector("input[name=cmp-a]:checked");
    const b = runs.querySelector("input[name=cmp-b]:checked");
    cmpSt.clear();
    if (!a || !b) return cmpSt.fail("Pick a run in column A and one in column B.");
    try {
      const c = await api("GET", `bench/compare/${a.value}/${b.value}`);
      cmp.replaceChildren(table("bench-compare-table", ["Step", `Run ${c.a} req/s`, `Run ${c.b} req/s`,
        "B / A req/s", "B / A p50", "B / A p99", "B / A CPU per request"], c.rows.map((r) => [r.name,
        num(r.a_rps), num(r.b_rps), num(r.rps_ratio, 2), num(r.p50_ratio, 2), num(r.p99_ratio, 2),
        num(r.cpu_per_request_ratio, 2)])), c.machines_differ
        ? el("p", { class: "warn", text: "The two runs were made on different machines." }) : "");
      if (!c.rows.length) cmpSt.fail("The two runs have no step in common.");
    } catch (e) {
      cmpSt.fail(e.message);
    }
  });
  root.append(form, el("section", { class: "card" }, el("h2", { text: "Result" }), result),
    el("section", { class: "card" }, el("h2", { text: "Stored runs" }), runs,
      el("div", { class: "buttons" }, cmpBtn), cmpSt, cmp));
  await loadRuns();
  const s = await api("GET", "bench/status");
  if (s.running && !chain) await follow(s.id); // unless a run was started here meanwhile
  return () => {
    gone = true;
    clearTimeout(poll);
  };
}
