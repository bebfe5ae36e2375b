// Plugins: state, enable/disable (core.plugins_disabled: at once),
// a settings form generated from each plugin's settings table (a refused
// value is shown next to its field), and the recent settings changes, each
// undone with one click.
import { get, post, put } from "../api.js";
import { el, field, fieldError, status, when } from "../ui.js";

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

// Put a setting's value (fresh from the box) into its input.
function showValue(s, input) {
  if (s.type === "bool") input.checked = s.value === "true";
  else if (!s.secret) input.value = text(s.value);
}

// Each form's settings and inputs by plugin: an undo refreshes the forms
// of the settings it changed.
const forms = new Map();

async function refreshForms(names) {
  for (const name of names) {
    const f = forms.get(name);
    if (!f) continue;
    const fresh = await get(`plugins/${name}/settings`);
    for (const s of fresh) {
      const i = f.settings.findIndex((x) => x.key === s.key);
      if (i < 0) continue;
      f.settings[i] = s;
      showValue(s, f.inputs[s.key]);
      fieldError(f.inputs[s.key], null);
    }
    f.sync();
  }
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
    window.dispatchEvent(new CustomEvent("tlsbox:plugins-changed"));
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
      // Its page comes or goes with it: the menu (app.js) reads them again.
      window.dispatchEvent(new CustomEvent("tlsbox:plugins-changed"));
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
  const resets = {};
  const st = status();
  // A setting away from its default offers to go back to it.
  const sync = () => {
    for (const s of settings) {
      if (!resets[s.key]) continue;
      resets[s.key].hidden = s.is_default;
      resets[s.key].textContent = `Reset to default (${s.default === "" ? '""' : s.default})`;
    }
  };
  forms.set(name, { settings, inputs, sync });
  // Stored as "no value" (JSON null): the default serves, and it is one
  // change in the history like any other.  Other fields keep what is typed.
  async function resetOne(key) {
    st.clear();
    fieldError(inputs[key], null);
    try {
      const fresh = await put(`plugins/${name}/settings`, { [key]: null });
      const s = fresh.find((x) => x.key === key);
      settings[settings.findIndex((x) => x.key === key)] = s;
      showValue(s, inputs[key]);
      sync();
      const saved = `Reset: ${key} is back to its default.`;
      st.ok(`${saved}${s.note ? ` ${s.note}` : ""}`);
      if (afterSave) afterSave(st, saved);
    } catch (e) {
      fieldError(inputs[key], e.message);
      st.fail("Not reset: see the field marked above.");
    }
  }
  const form = el("form", { class: "settings", id: `settings-${name}`, novalidate: true },
    settings.map((s) => {
      const input = inputFor(s);
      input.id = `set-${name}-${s.key}`;
      input.name = s.key;
      inputs[s.key] = input;
      if (!s.secret) {
        const f = field(s.key, input, limits(s));
        resets[s.key] = el("button", { type: "button", class: "small", id: `reset-${name}-${s.key}` });
        resets[s.key].addEventListener("click", () => resetOne(s.key));
        f.append(resets[s.key]);
        return f;
      }
      // A secret is never shown and an empty field keeps it, so setting it
      // empty (admin.metrics_token: that turns /metrics off) needs a box.
      clears[s.key] = el("input", { type: "checkbox", id: `${input.id}-clear` });
      return [field(s.key, input, limits(s)),
        el("p", {}, clears[s.key], " ", el("label", { for: clears[s.key].id, text: "set it empty" }))];
    }),
    el("button", { type: "submit", text: `Save ${name} settings` }), st);
  sync();
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
      // A secret typed in is stored now: its field goes back to "unchanged",
      // or the next Save would send it again (over a "set it empty" ticked
      // since, or a value set elsewhere meanwhile).
      for (const key of Object.keys(clears)) {
        inputs[key].value = "";
        clears[key].checked = false;
      }
      sync();
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

// One side of a change: null is the declared default, a secret is never shown.
function changeValue(item, v) {
  if (item.secret) return "********";
  if (v === null) return "(default)";
  return v === "" ? '""' : v;
}

// The newest settings changes, each with Undo when it can be undone (else
// why not): an undo is a new change, validated and applied like a Save.
function changesCard() {
  const st = status();
  st.id = "changes-status";
  const body = el("tbody");
  const card = el("section", { class: "card", id: "settings-changes" },
    el("h2", { text: "Recent settings changes" }),
    el("p", { class: "help", text: "Each Save is one change. Undo puts the values from before it back, " +
      "as a new change; a setting changed again since needs that newer change undone first." }),
    el("div", { class: "table-wrap" }, el("table", {}, el("thead", {}, el("tr", {},
      ["Change", "When", "Who", "What", ""].map((h) => el("th", { text: h })))), body)), st);

  function row(c) {
    let action;
    if (c.undoable) {
      action = el("button", { type: "button", class: "small", id: `undo-${c.id}`, text: "Undo" });
      action.addEventListener("click", async () => {
        st.clear();
        action.disabled = true;
        try {
          const r = await post(`settings/history/${c.id}/undo`);
          const done = `Change ${c.id} undone (now change ${r.id}).${r.note ? ` ${r.note}` : ""}`;
          if (c.items.some((i) => i.key === "core.plugins_disabled")) {
            // Plugins stop or start: the cards' states and buttons are shown anew.
            st.ok(`${done} The page reloads to show the plugins as they are now.`);
            setTimeout(() => window.location.reload(), 1500);
            return;
          }
          await refreshForms(new Set(c.items.map((i) => i.key.split(".")[0])));
          await card.reload();
          st.ok(done);
        } catch (e) {
          st.fail(e.message);
          action.disabled = false;
        }
      });
    } else {
      action = el("span", { class: "muted", text: c.undone_by ? `undone by change ${c.undone_by}`
        : `cannot be undone: ${c.undo_blocked}` });
    }
    const what = el("ul", { class: "mono small" }, c.items.map((i) =>
      el("li", { text: `${i.key}: ${changeValue(i, i.old)} → ${changeValue(i, i.new)}` })));
    if (c.undo_of) what.append(el("li", { class: "muted", text: `(undid change ${c.undo_of})` }));
    return el("tr", { id: `change-${c.id}` }, el("td", { text: c.id }), el("td", { text: when(c.at) }),
      el("td", { text: c.actor }), el("td", {}, what), el("td", {}, action));
  }

  card.reload = async () => {
    const h = await get("settings/history?limit=20");
    body.replaceChildren(...(h.changes.length ? h.changes.map(row)
      : [el("tr", {}, el("td", { colspan: "5", text: "No settings changed yet." }))]));
  };
  return card;
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
  const changes = changesCard();
  try {
    await changes.reload();
  } catch (e) {
    changes.append(el("p", { class: "status error", text: e.message }));
  }
  root.append(changes);
  // The web UI's own settings (port, sessions, lockout) sit after the core's.
  const plugins = list.slice(0, 1).concat([{ name: "admin", state: "running", version: list[0].version,
    abi: list[0].abi, description: "the admin web UI (part of the core)" }], list.slice(1));
  const names = (v) => new Set((v || "").split(",").map((s) => s.trim()).filter(Boolean));
  const disabled = names(disabledSetting.value);
  // Each card's Disable/Enable: { p, show, st, relabel } by plugin name.
  const toggles = new Map();
  // core.plugins_disabled is @p value now (a toggle, or the core's form):
  // every button says what it does from now on, and the cards of the
  // plugins it stopped or started (but @p except) follow them until settled.
  const disabledNow = (value, except) => {
    const now = names(value);
    for (const [name, tg] of toggles) {
      if (now.has(name) !== disabled.has(name) && name !== except)
        watchToggle(tg.p, tg.show, tg.st, now.has(name));
      if (now.has(name)) disabled.add(name); else disabled.delete(name);
      tg.relabel();
    }
  };
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
      toggles.set(p.name, { p, show, st: toggleStatus, relabel: () => { t.textContent = label(); } });
      t.addEventListener("click", async () => {
        const off = !disabled.has(p.name); // what the button says
        toggleStatus.clear();
        t.disabled = true;
        try {
          // From the value stored now, not the one this page loaded with: a
          // change made since (the core's form, another tab, tlsboxctl)
          // must stay.
          const next = names((await get("settings/core.plugins_disabled")).value);
          if (off) next.add(p.name); else next.delete(p.name);
          await put("settings/core.plugins_disabled", { value: [...next].join(",") });
          disabledNow([...next].join(","), p.name);
          changes.reload().catch(() => {});
          refreshForms(["core"]).catch(() => {});
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
          settingsForm(p.name, settings, (st, saved) => {
            changes.reload().catch(() => {}); // the list is a view: the Save stands either way
            // The core's form changed core.plugins_disabled: the cards follow.
            if (p.name === "core") disabledNow(settings.find((s) => s.key === "plugins_disabled")?.value);
            if (p.state === "failed") watchRestart(p, show, st, saved);
          }));
        card.append(details);
      }
    } catch (e) {
      card.append(el("p", { class: "status error", text: e.message }));
    }
    root.append(card);
  }
}
