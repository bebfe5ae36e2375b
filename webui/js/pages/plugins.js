// Plugins: state, enable/disable (core.plugins_disabled: at once),
// and a settings form generated from each plugin's settings table; a refused
// value is shown next to its field.
import { get, post, put } from "../api.js";
import { el, field, fieldError, status } from "../ui.js";

export const title = "Plugins";

// Lists may come as arrays; the API takes them back as comma-separated text.
const text = (v) => (Array.isArray(v) ? v.join(",") : String(v ?? ""));

function inputFor(s) {
  if (s.type === "bool") {
    const i = el("input", { type: "checkbox" });
    i.checked = s.value === "true";
    return i;
  }
  if (s.type === "enum") {
    const choices = Array.isArray(s.choices) ? s.choices : String(s.choices || "").split("|");
    return el("select", {}, choices.map((c) =>
      el("option", { value: c, text: c, selected: c === s.value })));
  }
  const attrs = { value: s.secret ? "" : text(s.value), class: "wide" };
  if (s.type === "int") {
    attrs.type = "number";
    attrs.class = "";
    if (s.min || s.max) {
      attrs.min = String(s.min);
      attrs.max = String(s.max);
    }
  }
  if (s.secret) {
    attrs.type = "password";
    attrs.placeholder = "unchanged";
    attrs.autocomplete = "off";
  }
  return el("input", attrs);
}

function valueOf(s, input) {
  if (s.type === "bool") return input.checked ? "true" : "false";
  return input.value;
}

function limits(s) {
  const parts = [s.help];
  if (s.type === "int" && (s.min || s.max)) parts.push(`(${s.min}–${s.max})`);
  if (s.max_length) parts.push(`(at most ${s.max_length} bytes${s.type === "list" ? " each" : ""})`);
  if (s.restart) parts.push("· takes effect at the next start");
  return parts.filter(Boolean).join(" ");
}

// A plugin whose start failed is started again once a change of its
// settings is stored: wait (10 s at most) until its state or reason moves,
// then show it on the card and say how it went.
async function watchRestart(p, show, st, saved) {
  for (let i = 0; i < 40; i++) {
    await new Promise((r) => setTimeout(r, 250));
    let now;
    try {
      now = (await get("plugins")).find((x) => x.name === p.name);
    } catch (e) {
      return;
    }
    if (!now || (now.state === p.state && now.error === p.error)) continue;
    Object.assign(p, now);
    show(now);
    if (now.state === "running") st.ok(`${saved} ${p.name} runs now.`);
    else st.fail(`${saved} ${p.name} still does not start: ${now.error || now.state}`);
    return;
  }
}

// Stored, core.plugins_disabled stops or starts the plugin at once: wait
// (10 s at most) until it is disabled, or runs or failed, and say which.
async function watchToggle(p, show, st, off) {
  for (let i = 0; i < 40; i++) {
    let now;
    try {
      now = (await get("plugins")).find((x) => x.name === p.name);
    } catch (e) {
      st.fail(e.message);
      return;
    }
    const settled = off ? now?.state === "disabled" : now?.state === "running" || now?.state === "failed";
    if (now && settled) {
      Object.assign(p, now);
      show(now);
      if (off) st.ok(`${p.name} is stopped and disabled.`);
      else if (now.state === "running") st.ok(`${p.name} runs now.`);
      else st.fail(`${p.name} did not start: ${now.error || now.state}`);
      return;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  st.fail(`Saved, but ${p.name} is still ${p.state} after 10 s: see tlsboxctl plugins and the log.`);
}

function settingsForm(name, settings, afterSave) {
  const inputs = {};
  const clears = {};
  const st = status();
  const form = el("form", { class: "settings", id: `settings-${name}`, novalidate: true },
    settings.map((s) => {
      const input = inputFor(s);
      input.id = `set-${name}-${s.key}`;
      input.name = s.key;
      inputs[s.key] = input;
      if (!s.secret) return field(s.key, input, limits(s));
      // A secret is never shown and an empty field keeps it, so setting it
      // empty (admin.metrics_token: that turns /metrics off) needs a box.
      clears[s.key] = el("input", { type: "checkbox", id: `${input.id}-clear` });
      return [field(s.key, input, limits(s)),
        el("p", {}, clears[s.key], " ", el("label", { for: clears[s.key].id, text: "set it empty" }))];
    }),
    el("button", { type: "submit", text: `Save ${name} settings` }), st);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    st.clear();
    const changes = {};
    for (const s of settings) {
      fieldError(inputs[s.key], null);
      const v = valueOf(s, inputs[s.key]);
      if (s.secret && v === "") {
        if (clears[s.key].checked && s.value !== "") changes[s.key] = "";
        continue;
      }
      if (v !== text(s.value)) changes[s.key] = v;
    }
    if (!Object.keys(changes).length) {
      st.ok("Nothing changed.");
      return;
    }
    try {
      const fresh = await put(`plugins/${name}/settings`, changes);
      fresh.forEach((s) => { const i = settings.findIndex((x) => x.key === s.key); if (i >= 0) settings[i] = s; });
      // A value stored but in effect only at the next start (a port below
      // 1024) carries the plugin's note: say it, or the form would claim
      // the new value serves.
      const notes = [...new Set(fresh.filter((s) => s.note && s.key in changes).map((s) => s.note))];
      const saved = `Saved: ${Object.keys(changes).join(", ")}.`;
      st.ok(`${saved}${notes.length ? ` ${notes.join(" ")}` : ""}`);
      if (afterSave) afterSave(st, saved);
    } catch (e) {
      // "site.workers: 0 is out of range 1..64": the message goes by its field.
      const m = e.message.match(/^([a-z0-9_]+)\.([a-z0-9_]+):/);
      if (m && m[1] === name && inputs[m[2]]) {
        fieldError(inputs[m[2]], e.message);
        inputs[m[2]].focus();
        st.fail("Not saved: see the field marked above.");
      } else {
        st.fail(e.message);
      }
    }
  });
  return form;
}

// Settings marked "takes effect at the next start" need tlsboxd started
// again: under systemd it stops and the unit starts it (POST restart);
// wait (30 s at most) for a new process to answer, then show the page anew.
function restartCard(status0) {
  const st = status();
  st.id = "restart-status";
  const b = el("button", { type: "button", id: "restart", text: "Restart tlsboxd" });
  b.addEventListener("click", async () => {
    st.clear();
    b.disabled = true;
    try {
      await post("restart");
    } catch (e) {
      st.fail(e.message);
      b.disabled = false;
      return;
    }
    st.ok("tlsboxd is stopping; systemd starts it again…");
    for (let i = 0; i < 60; i++) {
      await new Promise((r) => setTimeout(r, 500));
      let now = null;
      try {
        now = await get("status");
      } catch (e) {
        continue; // down meanwhile
      }
      if (now.pid !== status0.pid && now.ready) {
        st.ok(`tlsboxd restarted (pid ${now.pid}).`);
        setTimeout(() => window.location.reload(), 1000);
        return;
      }
    }
    st.fail("tlsboxd did not answer again within 30 s: see systemctl status tlsbox.");
    b.disabled = false;
  });
  return el("section", { class: "card", id: "plugin-restart" },
    el("h2", { text: "tlsboxd" }),
    el("p", { text: `pid ${status0.pid}, up ${Math.round(status0.uptime_s / 60)} min. Settings marked ` +
      "\"takes effect at the next start\" apply once tlsboxd restarts; the site and this page " +
      "are away for a few seconds meanwhile." }),
    b, st);
}

export default async function render(root) {
  const [list, disabledSetting, status0] = await Promise.all([get("plugins"),
    get("settings/core.plugins_disabled"), get("status")]);
  root.append(restartCard(status0));
  // The web UI's own settings (port, sessions, lockout) sit after the core's.
  const plugins = list.slice(0, 1).concat([{ name: "admin", state: "running", version: list[0].version,
    abi: list[0].abi, description: "the admin web UI (part of the core)" }], list.slice(1));
  const disabled = new Set((disabledSetting.value || "").split(",").map((s) => s.trim()).filter(Boolean));
  for (const p of plugins) {
    const card = el("section", { class: "card plugin", id: `plugin-${p.name}` });
    const badge = el("span", { class: `badge ${p.state}`, text: p.state });
    const head = el("h2", {}, `${p.name} `, badge);
    card.append(head, el("p", { text: `${p.description} · version ${p.version} · ABI ${p.abi}` }));
    const why = el("p", { class: "status error", id: `error-${p.name}`, text: p.error || "" });
    why.hidden = !p.error;
    card.append(why);
    const show = (now) => {
      badge.className = `badge ${now.state}`;
      badge.textContent = now.state;
      why.textContent = now.error || "";
      why.hidden = !now.error;
    };
    if (p.name !== "core" && p.name !== "admin") {
      const toggleStatus = status();
      toggleStatus.id = `toggle-status-${p.name}`;
      const label = () => (disabled.has(p.name) ? "Enable" : "Disable");
      const t = el("button", { type: "button", class: "small", id: `toggle-${p.name}`, text: label() });
      t.addEventListener("click", async () => {
        const next = new Set(disabled);
        const off = !next.has(p.name);
        if (off) next.add(p.name); else next.delete(p.name);
        toggleStatus.clear();
        t.disabled = true;
        try {
          await put("settings/core.plugins_disabled", { value: [...next].join(",") });
          if (off) disabled.add(p.name); else disabled.delete(p.name);
          t.textContent = label();
          await watchToggle(p, show, toggleStatus, off);
        } catch (e) {
          toggleStatus.fail(e.message);
        } finally {
          t.disabled = false;
        }
      });
      card.append(t, toggleStatus);
    }
    try {
      const settings = await get(`plugins/${p.name}/settings`);
      if (settings.length) {
        const details = el("details", { open: p.name !== "core" && p.name !== "admin" ? true : null },
          el("summary", { text: `Settings (${settings.length})` }),
          // Asked at each save: a plugin started again no longer needs watching.
          settingsForm(p.name, settings, (st, saved) => p.state === "failed" && watchRestart(p, show, st, saved)));
        card.append(details);
      }
    } catch (e) {
      card.append(el("p", { class: "status error", text: e.message }));
    }
    root.append(card);
  }
}
