// Dashboard: live figures every second (Server-Sent Events), charts of the
// last two minutes, history from the store, certificates and plugin states.
import { get } from "../api.js";
import { figures, mix } from "../metrics.js";
import { el, loadScript, when } from "../ui.js";

export const title = "Dashboard";
const POINTS = 120;

const fmtBytes = (n) => (n >= 1 << 30 ? `${(n / (1 << 30)).toFixed(1)} GiB`
  : `${(n / (1 << 20)).toFixed(0)} MiB`);
const fmt = (v, d = 1) => (v === null || v === undefined ? "–" : Number(v).toFixed(d));

const COLORS = ["#1f5fbf", "#d9822b", "#2e9e5b", "#b3261e"];

function lineChart(canvas, label, series, unit) {
  return new window.Chart(canvas, {
    type: "line",
    data: { labels: [], datasets: series.map((s, i) => ({ label: s, data: [], borderWidth: 2,
      borderColor: COLORS[i], backgroundColor: COLORS[i],
      pointRadius: 2, tension: 0.2, spanGaps: true })) },
    options: { animation: false, responsive: true, maintainAspectRatio: false,
      plugins: { title: { display: true, text: label } },
      scales: { x: { ticks: { maxTicksLimit: 6 } }, y: { beginAtZero: true,
        title: { display: !!unit, text: unit } } } },
  });
}

function push(chart, label, values) {
  chart.data.labels.push(label);
  chart.data.datasets.forEach((d, i) => d.data.push(values[i]));
  if (chart.data.labels.length > POINTS) {
    chart.data.labels.shift();
    chart.data.datasets.forEach((d) => d.data.shift());
  }
  chart.update("none");
}

const ms = (v) => (v === null ? null : v * 1000);
// A percentile past the histogram's last bound is only known to be longer.
const latText = (v, max) => (v === Infinity ? `> ${fmt(ms(max), 0)}` : fmt(ms(v), 2));
const latPoint = (v, max) => ms(v === Infinity ? max : v);

function showFigures(cells, f) {
  cells.cpu.textContent = `${fmt(f.cpu)} %`;
  cells.procCpu.textContent = `${fmt(f.procCpu)} %`;
  cells.load1.textContent = fmt(f.load1, 2);
  cells.mem.textContent = `${fmtBytes(f.memUsed)} of ${fmtBytes(f.memTotal)}`;
  cells.temp.textContent = f.temp === null ? "not measured" : `${fmt(f.temp)} °C`;
  cells.hs.textContent = fmt(f.hsFull + f.hsResumed);
  cells.resumption.textContent = f.resumption === null ? "–" : `${fmt(100 * f.resumption)} %`;
  cells.lat.textContent = `${latText(f.p50, f.latMax)} / ${latText(f.p99, f.latMax)} ms`;
  cells.reqs.textContent = `${fmt(f.h1)} / ${fmt(f.h2)}`;
  cells.conns.textContent = String(f.conns);
}

function pushCharts(charts, t, f) {
  push(charts.cpu, t, [f.cpu, f.procCpu]);
  push(charts.hs, t, [f.hsFull, f.hsResumed]);
  push(charts.req, t, [f.h1, f.h2]);
  push(charts.lat, t, [latPoint(f.p50, f.latMax), latPoint(f.p99, f.latMax)]);
}

function chartBox(id, text) {
  return el("figure", { class: "chart" },
    el("div", { class: "chart-wrap" }, el("canvas", { id, role: "img", "aria-label": text })));
}

function mixList(obj) {
  const total = Object.values(obj).reduce((a, b) => a + b, 0);
  if (!total) return el("p", { class: "muted", text: "no handshakes yet" });
  return el("ul", { class: "mix" }, Object.entries(obj).sort((a, b) => b[1] - a[1])
    .map(([k, v]) => el("li", {}, `${k}: ${((100 * v) / total).toFixed(1)}%`)));
}

// Problems worth a look: plugin failures, ACME errors, failed logins and
// lockouts of the last day (from the audit log).
async function lastErrors() {
  const items = [];
  const [plugins, acme, audit] = await Promise.all([get("plugins").catch(() => []),
    get("acme/status").catch(() => null), get("audit?limit=200").catch(() => ({ entries: [] }))]);
  plugins.filter((p) => p.error).forEach((p) => items.push(`${p.name}: ${p.error}`));
  if (acme) {
    for (const [k, v] of Object.entries(acme)) {
      if (/error/i.test(k) && v) items.push(`acme ${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`);
    }
  }
  const since = Date.now() / 1000 - 86400;
  audit.entries.filter((a) => a.at >= since && /^login\.(failed|lockout)$/.test(a.action))
    .slice(0, 10).forEach((a) => items.push(`${when(a.at)}: ${a.action} for ${a.target} from ${a.source}`));
  return items;
}

async function sideInfo(box) {
  const parts = [];
  try {
    const certs = (await get("cert")).certificates;
    parts.push(el("h2", { text: "Certificates" }), el("ul", {}, certs.map((c) =>
      el("li", { class: c.days_left < 14 ? "bad" : "" }, `${c.name}: ${c.days_left} days left (${c.status})`))));
  } catch (e) {
    parts.push(el("p", { class: "status error", text: `certificates: ${e.message}` }));
  }
  try {
    const plugins = await get("plugins");
    parts.push(el("h2", { text: "Plugins" }), el("ul", {}, plugins.map((p) =>
      el("li", { class: p.error ? "bad" : "" }, `${p.name}: ${p.state}`))));
  } catch (e) {
    parts.push(el("p", { class: "status error", text: `plugins: ${e.message}` }));
  }
  const errors = await lastErrors();
  parts.push(el("h2", { text: "Last errors" }), errors.length
    ? el("ul", { id: "last-errors" }, errors.map((t) => el("li", { class: "bad", text: t })))
    : el("p", { id: "last-errors", class: "muted", text: "none" }));
  box.replaceChildren(...parts);
}

async function showHistory(chart, seconds, st) {
  const names = ["tlsbox_system_cpu_percent_x100", "tlsbox_process_cpu_percent_x100"];
  try {
    const h = await get(`metrics/history?names=${names.join(",")}&since=${seconds}`);
    const ts = h[names[0]].map((p) => p[0]);
    chart.data.labels = ts.map((t) => new Date(t * 1000).toLocaleTimeString());
    chart.data.datasets.forEach((d, i) => { d.data = (h[names[i]] || []).map((p) => p[1] / 100); });
    chart.update("none");
    st.textContent = ts.length ? `${ts.length} samples since ${when(ts[0])}` : "no history stored yet";
  } catch (e) {
    st.textContent = `history: ${e.message}`;
  }
}

export default async function render(root) {
  await loadScript("/vendor/chart.js/chart.min.js");
  if (!root.isConnected) return null; // left while the script loaded: no charts, no live feed
  const cells = {};
  const numbers = el("dl", { class: "numbers" }, ...[
    ["cpu", "CPU (box)"], ["procCpu", "CPU (tlsboxd)"], ["load1", "Load (1 min)"],
    ["mem", "Memory used"], ["temp", "Temperature"], ["hs", "Handshakes/s"],
    ["resumption", "Resumed"], ["lat", "Handshake p50 / p99"], ["reqs", "Requests/s h1 / h2"],
    ["conns", "Open connections"]].map(([k, label]) => {
    cells[k] = el("dd", { id: `n-${k}`, text: "–" });
    return el("div", {}, el("dt", { text: label }), cells[k]);
  }));
  const mixes = el("div", { class: "mixes" });
  const side = el("aside", { class: "side" });
  const histSelect = el("select", { id: "history-range" },
    el("option", { value: "3600", text: "last hour" }), el("option", { value: "86400", text: "last day" }));
  const histStatus = el("p", { class: "muted", role: "status" });
  const live = el("p", { class: "muted", role: "status", text: "connecting…" });
  root.append(live, numbers,
    el("div", { class: "charts" }, chartBox("chart-cpu", "CPU percent"),
      chartBox("chart-hs", "Handshakes per second"), chartBox("chart-req", "Requests per second"),
      chartBox("chart-lat", "Handshake latency")),
    el("h2", { text: "Protocol, cipher and group mix" }), mixes,
    el("h2", { text: "History" }), el("label", { for: "history-range", text: "Show " }), histSelect,
    el("div", { class: "charts" }, chartBox("chart-history", "CPU history")), histStatus, side);

  const charts = {
    cpu: lineChart(document.getElementById("chart-cpu"), "CPU %", ["box", "tlsboxd"], "%"),
    hs: lineChart(document.getElementById("chart-hs"), "Handshakes/s", ["full", "resumed"]),
    req: lineChart(document.getElementById("chart-req"), "Requests/s", ["HTTP/1.1", "HTTP/2"]),
    lat: lineChart(document.getElementById("chart-lat"), "Handshake latency (ms)", ["p50", "p99"], "ms"),
    history: lineChart(document.getElementById("chart-history"), "CPU % (stored history)", ["box", "tlsboxd"], "%"),
  };
  sideInfo(side);
  showHistory(charts.history, 3600, histStatus);
  histSelect.addEventListener("change", () => showHistory(charts.history, Number(histSelect.value), histStatus));

  let prev = null;
  function onMetrics(ev) {
    const cur = JSON.parse(ev.data);
    live.textContent = `live · ${new Date(cur.t).toLocaleTimeString()}`;
    // The first sample shows the gauges at once; rates need two.
    const base = prev || cur;
    // Rates over the box's monotonic clock: its wall clock may step (NTP).
    const f = figures(base.m, cur.m, Math.max(0.001, (cur.mono - base.mono) / 1000));
    showFigures(cells, f);
    if (prev) pushCharts(charts, new Date(cur.t).toLocaleTimeString(), f);
    mixes.replaceChildren(
      el("div", {}, el("h3", { text: "TLS version" }), mixList(mix(cur.m, "tlsbox_site_handshakes_by_version_total"))),
      el("div", {}, el("h3", { text: "Cipher" }), mixList(mix(cur.m, "tlsbox_site_handshakes_by_cipher_total"))),
      el("div", {}, el("h3", { text: "Group" }), mixList(mix(cur.m, "tlsbox_site_handshakes_by_group_total"))));
    prev = cur;
  }
  function onError(ev) {
    if (ev.target.readyState !== EventSource.CLOSED) {
      live.textContent = "live data interrupted; retrying…";
      return;
    }
    // The browser retries a broken stream by itself but gives up for good
    // on an answer that is not a stream: the 401 once the session ended
    // (expiry, logout elsewhere, a new password).  An API call finds out,
    // and its 401 takes the frame to the login form.
    live.textContent = "live data stopped";
    get("status").then(() => {
      live.textContent = "live data stopped: reload the page to try again";
    }, () => {});
  }
  let es = null;
  // No stream while the tab is hidden: each one holds a connection for as
  // long as it is open, and a browser keeps six per host over HTTP/1.1, so
  // a few dashboards left in other tabs or windows stalled every page of
  // the box.  Shown again, the page starts a new stream (and new rates).
  function follow() {
    if (document.hidden) {
      if (es) es.close();
      es = null;
      live.textContent = "paused while the page is hidden";
    } else if (!es) {
      prev = null;
      live.textContent = "connecting…";
      es = new EventSource("/api/v1/live");
      es.addEventListener("metrics", onMetrics);
      es.addEventListener("error", onError);
    }
  }
  document.addEventListener("visibilitychange", follow);
  follow();
  return () => {
    document.removeEventListener("visibilitychange", follow);
    if (es) es.close();
    Object.values(charts).forEach((c) => c.destroy());
  };
}
