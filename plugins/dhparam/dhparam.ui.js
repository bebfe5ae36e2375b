// The dhparam plugin's page in the tlsbox web UI (served at
// /ui/plugins/dhparam.js while the plugin runs): what the site serves
// (GET dh/status), the mode (PUT dh/mode), a generation with live progress
// (POST dh/generate, then the status polled each second while it runs) and
// the import of a PEM file (POST dh/import; a refusal goes by the field).
export const title = "DH parameters";

const MODES = [["rfc7919", "RFC 7919 groups (recommended)"], ["generated", "Generated on this box"],
  ["import", "Imported"]];
const when = (t) => (t ? new Date(t * 1000).toLocaleString() : "–");

export default async function render(root, { api, el, field, status }) {
  const served = el("dl", { class: "kv", id: "dh-served" });
  const note = el("p", { id: "dh-note", class: "warn", hidden: true });
  const modeSel = el("select", { id: "dh-mode" }, MODES.map(([v, t]) => el("option", { value: v, text: t })));
  const modeSt = status();
  const bitsSel = el("select", { id: "dh-bits" }, [2048, 3072, 4096].map((b) =>
    el("option", { value: String(b), text: `${b} bits` })));
  const genBtn = el("button", { type: "submit", id: "dh-generate", text: "Generate" });
  const progress = el("progress", { id: "dh-progress-bar", max: "100", hidden: true });
  const progText = el("p", { id: "dh-progress", role: "status", "aria-live": "polite", class: "muted" });
  const genSt = status();
  const file = el("input", { type: "file", id: "dh-import-file", accept: ".pem" });
  const impSt = status();
  let timer = null;
  let gone = false;

  function fieldError(input, msg) {
    const err = document.getElementById(`${input.id}-err`);
    err.textContent = msg || "";
    err.hidden = !msg;
    if (msg) input.setAttribute("aria-invalid", "true");
    else input.removeAttribute("aria-invalid");
  }

  function showProgress(g, last) {
    if (g) {
      const pct = g.percent_estimate;
      progress.hidden = pct === undefined;
      if (pct !== undefined) progress.value = pct;
      progText.textContent = `Generating ${g.bits} bits (run ${g.id}): ${g.stage}` +
        `${pct !== undefined ? `, about ${pct} %` : ""}, ${Math.round(g.elapsed_seconds)} s elapsed` +
        `${g.attempts > 1 ? ` (attempt ${g.attempts})` : ""}.`;
    } else {
      progress.hidden = true;
      // A run stopped by a dhparam.bits change is cancelled, not failed:
      // show the daemon's "outcome" and why ("cancelled_because").
      const what = !last ? "" : last.cancelled_because ? `cancelled (${last.cancelled_because})`
        : `${last.outcome || last.state}${last.error ? ": " + last.error : ""}`;
      progText.textContent = last ? `Last generation (run ${last.id}): ${last.bits} bits, ${what}` +
        ` ${when(last.finished_at)}.` : "No generation has run.";
    }
    genBtn.disabled = !!g;
  }

  // The rows are added with the first status read (so their presence means
  // "loaded"), then their values updated in place: a poll rewrites the text,
  // never the elements (a reader holding a row keeps it).
  const rows = [["Served", "dh-served-bits"], ["Mode", "dh-served-mode"], ["Source"], ["Fingerprint"],
    ["DHE"], ["Generated"], ["Imported"], ["Next rotation"]].map(([k, id]) => [k, el("dd", { id })]);

  function showServed(s) {
    const v = s.served || {};
    const what = v.group ? `${v.group} (${v.bits} bits)` : `${v.bits} bits`;
    const p = s.params || {};
    const kept = (x) => (x ? `${x.bits} bits, made ${when(x.created_at)}` : "none");
    const text = [what, s.mode, v.source || "–", v.fingerprint || "–",
      s.dhe_enabled ? `on (TLS 1.2 DHE ${v.dhe_tls12 ? "on" : "off"}, TLS 1.3 FFDHE ${
        v.ffdhe_tls13 ? "on" : "off"})` : "off: the TLS policy allows no DHE suite, these are unused",
      kept(p.generated), kept(p.import), s.next_rotation ? when(s.next_rotation) : "–"];
    rows.forEach(([, dd], i) => {
      if (dd.textContent !== text[i]) dd.textContent = text[i];
    });
    if (!served.childElementCount) served.append(...rows.flatMap(([k, dd]) => [el("dt", { text: k }), dd]));
    note.textContent = s.note || "";
    note.hidden = !s.note;
    if (document.activeElement !== modeSel) modeSel.value = s.mode;
  }

  async function load() {
    const s = await api("GET", "dh/status");
    showServed(s);
    showProgress(s.generation, s.last_run);
    clearTimeout(timer);
    if (!gone) timer = setTimeout(() => load().catch((e) => genSt.fail(e.message)), s.generation ? 1000 : 10000);
    return s;
  }

  const modeForm = el("form", { class: "card", id: "dh-mode-form" }, el("h2", { text: "Mode" }),
    field("Parameters to serve", modeSel, "RFC 7919 groups are the ones clients know; " +
      "generated and imported parameters are served only once they exist."),
    el("button", { type: "submit", text: "Switch mode" }), modeSt);
  modeForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    fieldError(modeSel, "");
    try {
      await api("PUT", "dh/mode", { mode: modeSel.value });
      modeSt.ok(`Mode is now ${modeSel.value}.`);
      setTimeout(() => load().catch(() => {}), 300); // applied by an event, a moment later
    } catch (e) {
      fieldError(modeSel, e.message);
    }
  });

  const genForm = el("form", { class: "card", id: "dh-generate-form" }, el("h2", { text: "Generate" }),
    field("Size", bitsSel, "Runs in the background at low priority; 4096 bits can take many minutes on a Pi."),
    genBtn, progress, progText, genSt);
  genForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    genSt.clear();
    try {
      const r = await api("POST", "dh/generate", { bits: Number(bitsSel.value) });
      genSt.ok(`Generation ${r.run_id} started.${r.note ? " Note: " + r.note + "." : ""}`);
      await load();
    } catch (e) {
      genSt.fail(e.message);
    }
  });

  const impForm = el("form", { class: "card", id: "dh-import-form" }, el("h2", { text: "Import" }),
    field("DH parameters file (PEM)", file, "-----BEGIN DH PARAMETERS-----, at least the policy's " +
      "smallest size; checked before anything is stored. The mode becomes import."),
    el("button", { type: "submit", text: "Import" }), impSt);
  impForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    impSt.clear();
    fieldError(file, "");
    const f = file.files && file.files[0];
    if (!f) return fieldError(file, "Choose a PEM file first.");
    try {
      const r = await api("POST", "dh/import", { pem: await f.text() });
      impSt.ok(`Imported ${r.bits}-bit parameters; mode is now import.`);
      impForm.reset();
      setTimeout(() => load().catch(() => {}), 300);
    } catch (e) {
      fieldError(file, e.message);
    }
  });

  root.append(el("div", { class: "card" }, el("h2", { text: "What is served" }), served, note),
    modeForm, genForm, impForm);
  await load();
  return () => {
    gone = true;
    clearTimeout(timer);
  };
}
