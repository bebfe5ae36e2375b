// Turning two snapshots of the metrics (counters, gauges, histograms) into
// the figures the dashboard shows: rates, ratios, percentiles, mixes.
export const M = {
  cpu: "tlsbox_system_cpu_percent_x100",
  procCpu: "tlsbox_process_cpu_percent_x100",
  load1: "tlsbox_system_load1_x1000",
  memTotal: "tlsbox_system_memory_total_bytes",
  memAvail: "tlsbox_system_memory_available_bytes",
  temp: "tlsbox_system_temperature_millicelsius",
  rss: "tlsbox_process_rss_bytes",
  hsFull: 'tlsbox_site_handshakes_total{kind="full"}',
  hsResumed: 'tlsbox_site_handshakes_total{kind="resumed"}',
  connsOpen: "tlsbox_site_connections_open",
  hsSeconds: "tlsbox_site_handshake_seconds",
};

const num = (m, k) => (typeof m[k] === "number" ? m[k] : 0);

// Sum of the counters whose name starts with prefix and contains every part.
export function sumWhere(m, prefix, ...parts) {
  let s = 0;
  for (const [k, v] of Object.entries(m)) {
    if (k.startsWith(prefix) && parts.every((p) => k.includes(p)) && typeof v === "number") s += v;
  }
  return s;
}

// {label value: count} of a labelled counter family ("...{version=\"TLS1.3\"}").
export function mix(m, family) {
  const out = {};
  for (const [k, v] of Object.entries(m)) {
    const r = k.match(/^([a-z_]+)\{[a-z_]+="([^"]*)"\}$/);
    if (r && r[1] === family && typeof v === "number") out[r[2]] = v;
  }
  return out;
}

// Quantile q of the observations between two cumulative histograms, as the
// upper bound of the bucket that holds it (seconds), Infinity when it is
// past the last bound (only "longer than that" is known), or null without any.
export function quantile(prev, cur, q) {
  if (!cur || !prev) return null;
  const total = cur.count - prev.count;
  if (total <= 0) return null;
  for (let i = 0; i < cur.buckets.length; i++) {
    const d = cur.buckets[i][1] - (prev.buckets[i] ? prev.buckets[i][1] : 0);
    if (d >= q * total) return cur.buckets[i][0];
  }
  return Infinity;
}

// The figures between two samples a (older) and b, dt seconds apart.
export function figures(a, b, dt) {
  const rate = (k) => Math.max(0, (num(b, k) - num(a, k)) / dt);
  const full = rate(M.hsFull);
  const resumed = rate(M.hsResumed);
  const reqs = (p) => Math.max(0, (sumWhere(b, "tlsbox_site_requests_total", `proto="${p}"`) -
    sumWhere(a, "tlsbox_site_requests_total", `proto="${p}"`)) / dt);
  return {
    cpu: num(b, M.cpu) / 100,
    procCpu: num(b, M.procCpu) / 100,
    load1: num(b, M.load1) / 1000,
    memUsed: num(b, M.memTotal) - num(b, M.memAvail),
    memTotal: num(b, M.memTotal),
    temp: M.temp in b ? num(b, M.temp) / 1000 : null,
    rss: num(b, M.rss),
    hsFull: full,
    hsResumed: resumed,
    resumption: full + resumed > 0 ? resumed / (full + resumed) : null,
    p50: quantile(a[M.hsSeconds], b[M.hsSeconds], 0.5),
    p99: quantile(a[M.hsSeconds], b[M.hsSeconds], 0.99),
    latMax: b[M.hsSeconds] && b[M.hsSeconds].buckets.length
      ? b[M.hsSeconds].buckets[b[M.hsSeconds].buckets.length - 1][0] : null,
    h1: reqs("h1"),
    h2: reqs("h2"),
    conns: num(b, M.connsOpen),
  };
}
