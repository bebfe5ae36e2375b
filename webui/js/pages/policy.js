// TLS policy: presets, fields, raw priority string (error position marked in
// place), a preview of what GnuTLS would negotiate and which client families
// a change leaves out (the core's handshakes), apply, history with a diff,
// rollback.
import { get, post, put } from "../api.js";
import { el, field, fieldError, status, when } from "../ui.js";

export const title = "TLS policy";
const PRESETS = [
  ["modern", "Modern: TLS 1.3 only"],
  ["intermediate", "Intermediate: TLS 1.2 and 1.3, AEAD ciphers, forward secrecy"],
  ["compat", "Compatible: also older clients"],
];

// Every version the policy accepts (core/tls_policy.c, versions[]), in both
// menus: a stored value a menu lacks shows as blank, and the next Apply
// of any field sends it blank and is refused.
const VERSIONS = ["TLS1.0", "TLS1.1", "TLS1.2", "TLS1.3"];

function list(v) {
  return v.split(",").map((s) => s.trim()).filter(Boolean);
}

// "…at position N" in an error: mark that place in the raw string.
function markPosition(box, raw, message) {
  const m = message.match(/at position (\d+)/);
  box.replaceChildren();
  if (!m) return;
  const pos = Math.min(Number(m[1]), raw.length);
  const end = raw.indexOf(":", pos + 1);
  const stop = end < 0 ? raw.length : end;
  box.append(el("code", {}, raw.slice(0, pos), el("mark", { text: raw.slice(pos, stop) || " " }),
    raw.slice(stop)));
}

// The families the box answers for (GnuTLS handshakes in the core, see
// core/tls_probe.c): which ones connect, with what, or GnuTLS' reason.
const okNames = (pv) => new Set((pv && pv.clients || []).filter((c) => c.ok).map((c) => c.family));

function clientsTable(pv) {
  if (!pv.clients) return el("p", { class: "warn", text: `Client check unavailable: ${pv.clients_error || "no answer"}` });
  return el("div", { class: "table-wrap" }, el("table", { id: "preview-clients" },
    el("thead", {}, el("tr", {}, ["Clients", "Result", "Negotiated or refused because"].map((h) => el("th", { text: h })))),
    el("tbody", {}, pv.clients.map((c) => el("tr", { "data-family": c.family, class: c.ok ? "" : "refused" },
      el("td", {}, el("span", { text: c.clients }), el("br"), el("small", { text: c.offers })),
      el("td", { text: c.ok ? "connects" : "refused" }),
      el("td", { class: "small", text: c.ok
        ? [c.protocol, c.cipher, c.kx, c.group, c.sigalg].filter(Boolean).join(", ")
        : `${c.error} (${c.side})` }))))));
}

function previewView(box, pv, current) {
  const before = okNames(current);
  const after = okNames(pv);
  const byName = (names) => (pv.clients || []).filter((c) => names(c.family)).map((c) => c.clients);
  const lost = byName((f) => before.has(f) && !after.has(f));
  const gained = byName((f) => !before.has(f) && after.has(f));
  box.replaceChildren(...[
    el("h3", { text: "What GnuTLS would negotiate" }),
    el("dl", { class: "kv" },
      el("dt", { text: "Versions" }), el("dd", { text: pv.protocols.join(", ") }),
      el("dt", { text: "Cipher suites" }), el("dd", { text: (pv.suites || []).join(", ") }),
      el("dt", { text: "Groups" }), el("dd", { text: pv.groups.join(", ") }),
      el("dt", { text: "Signatures" }), el("dd", { text: pv.sigalgs.join(", ") }),
      el("dt", { text: "HSTS" }), el("dd", { text: pv.hsts || "off" })),
    el("h3", { text: "Client families (a real handshake each, with this box's certificates)" }),
    clientsTable(pv),
    el("p", { class: lost.length ? "warn" : "ok", id: "preview-excluded",
      text: lost.length ? `This change would exclude: ${lost.join("; ")}` : "No client family is excluded by this change." }),
    gained.length ? el("p", { text: `Newly allowed: ${gained.join("; ")}` }) : null].filter(Boolean));
}

function diffTokens(a, b) {
  const A = new Set(a.split(":"));
  const B = new Set(b.split(":"));
  return { removed: [...A].filter((t) => !B.has(t)), added: [...B].filter((t) => !A.has(t)) };
}

export default async function render(root) {
  const cur = el("section", { class: "card" });
  const preview = el("section", { class: "card", id: "preview", "aria-live": "polite" });
  const hist = el("section", { class: "card" });
  let active = null;
  let activePreview = null;

  async function refresh() {
    active = await get("policy");
    // A stored policy this tlsbox refuses (say, a raw string an older one
    // took) has no preview, and the default serves instead: say so, and
    // load the page anyway, so that a preset or a rollback can replace it.
    activePreview = active.refused ? null : await get("policy/preview");
    const p = active.policy;
    // Filtered: replaceChildren, unlike el(), writes a null as the text "null".
    cur.replaceChildren(...[el("h2", { text: `Active: version ${active.id} (${p.preset || "custom"})` }),
      el("p", { class: "mono small", id: "active-priority", text: active.priority }),
      active.refused ? el("p", { class: "warn", id: "active-refused",
        text: `Not served: ${active.refused}. The default policy (intermediate) serves until another is applied.` }) : null]
      .filter(Boolean));
    await history();
  }
  const showActive = () => {
    if (activePreview) previewView(preview, activePreview, activePreview);
    else preview.replaceChildren();
  };

  // One form per kind of change; each shows its own errors.
  // "custom" (a preset edited since) cannot be applied, but without it in the
  // menu the menu showed blank for such a policy: shown, not chosen.
  const presetSel = el("select", { id: "preset" }, PRESETS.map(([v, t]) => el("option", { value: v, text: t })),
    el("option", { value: "custom", text: "Custom: edited after a preset", disabled: true }));
  const presetStatus = status();
  const presetForm = el("form", { class: "card", id: "preset-form" }, el("h2", { text: "Preset" }),
    field("Preset", presetSel), el("div", { class: "buttons" },
      el("button", { type: "button", id: "preset-preview", text: "Preview" }),
      el("button", { type: "submit", id: "preset-apply", text: "Apply preset" })), presetStatus);

  const f = {
    min_version: el("select", {}, VERSIONS.map((v) => el("option", { value: v, text: v }))),
    max_version: el("select", {}, VERSIONS.map((v) => el("option", { value: v, text: v }))),
    ciphers: el("input", { class: "wide" }),
    groups: el("input", { class: "wide" }),
    key_types: el("input", { class: "wide" }),
    tickets: el("input", { type: "checkbox" }),
    ocsp_stapling: el("input", { type: "checkbox" }),
    hsts_max_age: el("input", { type: "number", min: "0" }),
  };
  Object.entries(f).forEach(([k, input]) => { input.id = `pf-${k}`; });
  const fieldsStatus = status();
  const fieldsForm = el("form", { class: "card", id: "fields-form" }, el("h2", { text: "Fields" }),
    el("p", { class: "help", text: "Applied, these replace a raw priority string, if one is in use." }),
    field("Lowest version", f.min_version), field("Highest version", f.max_version),
    field("Ciphers", f.ciphers, "comma-separated, e.g. AES-128-GCM, CHACHA20-POLY1305"),
    field("Groups", f.groups, "comma-separated, e.g. X25519, SECP256R1"),
    field("Key types", f.key_types, "ecdsa, rsa, ed25519"),
    field("Session tickets", f.tickets), field("OCSP stapling", f.ocsp_stapling),
    field("HSTS max-age (seconds, 0 = off)", f.hsts_max_age),
    el("div", { class: "buttons" }, el("button", { type: "button", text: "Preview" }),
      el("button", { type: "submit", text: "Apply fields" })), fieldsStatus);

  const raw = el("textarea", { rows: "3", class: "mono wide", id: "raw", spellcheck: "false" });
  const rawMark = el("p", { class: "mark-box mono small", id: "raw-mark" });
  const rawStatus = status();
  const rawForm = el("form", { class: "card", id: "raw-form" }, el("h2", { text: "Raw priority string" }),
    field("GnuTLS priority string (empty: use the fields)", raw), rawMark,
    el("div", { class: "buttons" }, el("button", { type: "button", id: "raw-preview", text: "Preview" }),
      el("button", { type: "submit", id: "raw-apply", text: "Apply raw string" })), rawStatus);

  function fillFields() {
    const p = active.policy;
    f.min_version.value = p.min_version;
    f.max_version.value = p.max_version;
    f.ciphers.value = p.ciphers.join(", ");
    f.groups.value = p.groups.join(", ");
    f.key_types.value = p.key_types.join(", ");
    f.tickets.checked = !!p.tickets;
    f.ocsp_stapling.checked = !!p.ocsp_stapling;
    f.hsts_max_age.value = p.hsts_max_age;
    raw.value = p.priority_override || "";
    presetSel.value = p.preset || "intermediate";
  }
  const fieldValues = () => ({
    min_version: f.min_version.value, max_version: f.max_version.value,
    ciphers: list(f.ciphers.value), groups: list(f.groups.value), key_types: list(f.key_types.value),
    tickets: f.tickets.checked, ocsp_stapling: f.ocsp_stapling.checked,
    // An emptied field is not 0 (HSTS off): sent as it is, the box refuses
    // it by the field ("hsts_max_age: '' is not a whole number").
    hsts_max_age: f.hsts_max_age.value.trim() === "" ? "" : Number(f.hsts_max_age.value),
    // A raw string, when one is stored, is served instead of the fields:
    // kept, it made this form's Apply a new version that changed nothing
    // served.  Applying the fields is asking for them.
    priority_override: "",
  });

  // A change made by one form (or a rollback) makes the other forms'
  // "Applied: now version N." lines stale: they named a version no longer
  // active.
  const clearOthers = (mine) => [presetStatus, fieldsStatus, rawStatus]
    .forEach((s) => { if (s !== mine) s.clear(); });

  // Preview then (optionally) apply; errors go to the form's status line.
  // Changes name the version the form was filled from ("base"): a change
  // made elsewhere since is refused (409), not undone by the form's fields.
  async function run(body, st, apply, onError) {
    st.clear();
    try {
      const pv = await post("policy/preview", body);
      previewView(preview, pv, activePreview);
      if (apply) {
        await apply();
        await refresh();
        fillFields();
        showActive();
        clearOthers(st);
        st.ok(`Applied: now version ${active.id}.`);
      } else {
        st.ok("Preview below; nothing is stored until you apply.");
      }
    } catch (e) {
      // A form that can point at the field says it there; the line below
      // the buttons then only says that nothing was stored.
      if (onError) {
        st.fail("Nothing stored: see the message by the field.");
        onError(e.message);
      } else {
        st.fail(e.message);
      }
    }
  }
  const presetChosen = () => {
    if (presetSel.value !== "custom") return true;
    presetStatus.clear();
    presetStatus.fail("The active policy is custom: choose a preset to preview or apply.");
    return false;
  };
  presetForm.querySelector("#preset-preview").addEventListener("click", () => {
    if (presetChosen()) run({ preset: presetSel.value }, presetStatus);
  });
  presetForm.addEventListener("submit", (ev) => {
    ev.preventDefault();
    if (presetChosen()) run({ preset: presetSel.value }, presetStatus, () => post("policy/preset", { preset: presetSel.value, base: active.id }));
  });
  // "min_version: TLS1.3 is newer than max_version TLS1.2": by that field.
  const fieldsError = (msg) => {
    const m = msg.match(/^([a-z_]+):/);
    if (m && f[m[1]]) fieldError(f[m[1]], msg);
    else fieldsStatus.fail(msg);
  };
  const fieldsRun = (apply) => {
    Object.values(f).forEach((i) => fieldError(i, null));
    run({ fields: fieldValues() }, fieldsStatus,
      apply ? () => put("policy", { fields: fieldValues(), base: active.id }) : null, fieldsError);
  };
  fieldsForm.querySelector("button[type=button]").addEventListener("click", () => fieldsRun(false));
  fieldsForm.addEventListener("submit", (ev) => {
    ev.preventDefault();
    fieldsRun(true);
  });
  const rawError = (msg) => {
    fieldError(raw, msg);
    markPosition(rawMark, raw.value, msg);
  };
  const rawRun = (apply) => {
    fieldError(raw, null);
    rawMark.replaceChildren();
    run({ priority: raw.value }, rawStatus,
      apply ? () => post("policy/raw", { priority: raw.value, base: active.id }) : null, rawError);
  };
  rawForm.querySelector("#raw-preview").addEventListener("click", () => rawRun(false));
  rawForm.addEventListener("submit", (ev) => {
    ev.preventDefault();
    rawRun(true);
  });

  async function history() {
    const versions = (await get("policy/history")).versions;
    const diffBox = el("div", { id: "diff", "aria-live": "polite" });
    const histStatus = status();
    histStatus.id = "history-status";
    const rows = versions.map((v) => {
      const diffBtn = el("button", { type: "button", class: "small", text: "Diff with active" });
      diffBtn.addEventListener("click", () => {
        const d = diffTokens(v.priority, active.priority);
        diffBox.replaceChildren(el("h3", { text: `Version ${v.id} → active ${active.id}` }),
          d.removed.length || d.added.length ? el("ul", { class: "diff mono small" },
            d.removed.map((t) => el("li", { class: "del", text: `− ${t}` })),
            d.added.map((t) => el("li", { class: "add", text: `+ ${t}` })))
            : el("p", { text: "Same priority string." }));
      });
      const rb = el("button", { type: "button", class: "small", "data-version": v.id, text: "Roll back to this" });
      rb.addEventListener("click", async () => {
        histStatus.clear();
        try {
          await post("policy/rollback", { version: v.id });
          await refresh();
          fillFields();
          showActive();
          clearOthers(null);
          // The last step: the page is settled once this line shows.  refresh()
          // rebuilt the history, so the status line is the new table's.
          hist.querySelector("#history-status").textContent =
            `Rolled back to version ${v.id}: now version ${active.id}.`;
        } catch (e) {
          histStatus.fail(e.message);
        }
      });
      return el("tr", { class: v.active ? "active" : "" }, el("td", { text: v.id }),
        el("td", { text: when(v.created_at) }), el("td", { text: v.author }),
        el("td", { text: v.comment || "" }), el("td", {}, v.active ? "active" : [diffBtn, " ", rb]));
    });
    hist.replaceChildren(el("h2", { text: "History" }),
      el("div", { class: "table-wrap" }, el("table", {}, el("thead", {}, el("tr", {},
        ["Version", "When", "Who", "What", ""].map((h) => el("th", { text: h })))), el("tbody", {}, rows))),
      histStatus, diffBox);
  }

  // Load first, show after: forms shown before the active policy arrived
  // would take a choice (or a click on Preview) that fillFields() then
  // overwrites, or preview against a policy not yet known.
  await refresh();
  fillFields();
  showActive();
  root.append(cur, presetForm, fieldsForm, rawForm, preview, hist);
}
