// The frame: session state, first-run and login views, the menu and a hash
// router that loads one page module at a time (plugins add their own).
import { api, get, post, setCsrf } from "./api.js";
import { drop, keep, restore, watch, written } from "./drafts.js";
import { el, field, fieldError, status } from "./ui.js";

const pages = [
  { id: "dashboard", title: "Dashboard", module: "./pages/dashboard.js" },
  { id: "policy", title: "TLS policy", module: "./pages/policy.js" },
  { id: "certs", title: "Certificates", module: "./pages/certs.js" },
  { id: "plugins", title: "Plugins", module: "./pages/plugins.js" },
  { id: "audit", title: "Audit log", module: "./pages/audit.js" },
  // Not in the menu: the user name at the top links here.
  { id: "account", title: "Account", module: "./pages/account.js", hidden: true },
];
const main = document.getElementById("main");
let cleanup = null;
let session = null;

function setMain(...nodes) {
  if (cleanup) cleanup();
  cleanup = null;
  main.replaceChildren(...nodes);
}

// The login form asks for a one-time code only once the box says the user
// has two-factor login on (the reply to the password: code_needed).
function credentialsForm(title, intro, extra, submitText, onSubmit) {
  const user = el("input", { name: "user", autocomplete: "username", required: true, value: "admin" });
  const pw = el("input", { name: "password", type: "password", required: true,
    autocomplete: extra ? "new-password" : "current-password" });
  // Text, not numeric: a recovery code ("abcde-fghij") goes here too.
  const code = el("input", { name: "code", id: "login-code", autocomplete: "one-time-code",
    maxlength: "11" });
  const codeField = field("One-time code", code,
    "The 6 digits your authenticator app shows now, or one of your recovery codes");
  codeField.hidden = true;
  const st = status();
  const form = el("form", { class: "card narrow", novalidate: true },
    el("h1", { text: title }), intro ? el("p", { text: intro }) : null,
    field("User name", user), field("Password", pw, extra), codeField,
    el("button", { type: "submit", text: submitText }), st);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    st.clear();
    try {
      const s = await onSubmit(user.value.trim(), pw.value, codeField.hidden ? "" : code.value.trim());
      pw.value = "";
      code.value = "";
      start(s);
    } catch (e) {
      const wait = e.data && e.data.retry_after ? ` (retry in ${e.data.retry_after} s)` : "";
      // The first ask for a code is the next step, not an error.
      if (e.data && e.data.code_needed && codeField.hidden) st.textContent = e.message;
      else st.fail(e.message + wait);
      if (e.data && e.data.code_needed) {
        codeField.hidden = false;
        code.value = "";
        code.focus();
      } else {
        pw.focus();
      }
    }
  });
  return form;
}

function showSetup() {
  const token = new URLSearchParams(location.hash.slice(1)).get("setup");
  if (!token) {
    setMain(el("section", { class: "card narrow" }, el("h1", { text: "First run" }),
      el("p", { text: "This box has no admin password yet. On the box, run:" }),
      el("pre", { text: "tlsboxctl admin setup-url" }),
      el("p", { text: "and open the URL it prints (it works once, for a limited time)." })));
    return;
  }
  setMain(credentialsForm("First run: choose the admin password",
    "The setup link is valid once. At least 10 characters.", "At least 10 characters",
    "Set password and log in",
    (user, password) => post("session/setup", { token, user, password })));
  history.replaceState(null, "", "#/dashboard");
}

function showLogin(intro) {
  document.title = "Log in · tlsbox";
  setMain(credentialsForm("Log in", intro || null, null, "Log in",
    (user, password, code) => post("session/login", code ? { user, password, code } : { user, password })));
  main.querySelector("input[name=password]").focus();
}

async function buildMenu() {
  const menu = document.getElementById("menu");
  let extra = [];
  try {
    extra = (await get("ui/pages")).pages.map((p) => ({
      id: `p/${p.plugin}`, title: p.plugin, module: p.module, plugin: true }));
  } catch (e) {
    extra = [];
  }
  const all = pages.concat(extra);
  menu.replaceChildren(...all.filter((p) => !p.hidden).map((p) =>
    el("li", {}, el("a", { href: `#/${p.id}`, "data-page": p.id, text: p.title }))));
  return all;
}

let known = pages;
let shown = 0; // which route() call owns the page now
let loadedFrom = null; // the run of tlsboxd this document's modules came from

// "pid@start time" of the running tlsboxd, or null when it does not say.
async function boxRun() {
  try {
    const s = await get("status");
    return `${s.pid}@${s.started_at}`;
  } catch (e) {
    return null;
  }
}

function markCurrent(id) {
  for (const a of document.querySelectorAll("#menu a")) {
    if (a.dataset.page === id) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

async function route() {
  if (!session) return;
  const mine = ++shown;
  const id = location.hash.replace(/^#\/?/, "") || "dashboard";
  const page = known.find((p) => p.id === id) || known[0];
  markCurrent(page.id);
  // A page chosen from the phone layout's folded menu: the menu folds
  // again (left open, it stayed above the page, over the screen's top).
  setMenuOpen(false);
  const root = el("section", { class: "page", "aria-labelledby": "page-title" });
  setMain(root);
  watch(root, page.id);
  try {
    // tlsboxd restarted since this document loaded (an upgrade, say): a
    // page module fetched now would meet the shared modules (api.js,
    // ui.js) of the old version, kept for the document's life.  Reloaded,
    // the document shows the page asked for, all of one version.
    const run = await boxRun();
    if (mine !== shown || !root.isConnected) return; // left meanwhile (a 401 shows the login form)
    if (run && loadedFrom && run !== loadedFrom) {
      location.reload();
      return;
    }
    const mod = await import(page.module);
    const title = el("h1", { id: "page-title", text: mod.title || page.title });
    root.append(title);
    document.title = `${mod.title || page.title} · tlsbox`;
    const done = await mod.default(root, { api, el, field, fieldError, status });
    // Left before it finished rendering: its cleanup runs now, it must not
    // replace the cleanup of the page shown since.
    if (typeof done === "function") {
      if (mine === shown && root.isConnected) cleanup = done;
      else done();
    }
    // Edits the session's end interrupted (drafts.js) go back now, unsaved.
    if (session && mine === shown && root.isConnected) {
      const { n, changed } = restore(root, session.user, page.id);
      if (n) {
        title.after(el("p", { class: "status warn", id: "draft-restored", role: "status",
          text: `${n === 1 ? "1 field keeps" : `${n} fields keep`} what you typed before the session ended. ` +
            "Nothing of it is saved yet: check it and press Save." +
            (changed.length ? ` Saved meanwhile with another value: ${changed.join(", ")}.` : "") }));
      }
    }
  } catch (e) {
    root.append(el("p", { class: "status error", text: `This page failed to load: ${e.message}` }));
  }
  // Left meanwhile (another page, or the login form after a 401 while it
  // loaded): the focus belongs to what is shown now.
  if (mine === shown && root.isConnected) main.focus();
}

async function start(s) {
  session = s;
  setCsrf(s.csrf, s.user);
  document.getElementById("who").textContent = s.user;
  document.getElementById("logout").hidden = false;
  document.body.classList.add("logged-in");
  if (!loadedFrom) loadedFrom = await boxRun();
  known = await buildMenu();
  if (!location.hash.startsWith("#/")) location.hash = "#/dashboard";
  else route();
}

function loggedOut(intro) {
  session = null;
  setCsrf(null);
  document.body.classList.remove("logged-in");
  document.getElementById("who").textContent = "";
  document.getElementById("logout").hidden = true;
  document.getElementById("menu").replaceChildren();
  showLogin(intro);
}

async function boot() {
  let s;
  try {
    s = await get("session");
  } catch (e) {
    setMain(el("p", { class: "status error", text: `The box does not answer: ${e.message}` }));
    return;
  }
  if (s.state === "ok") start(s);
  else if (s.state === "setup") showSetup();
  else showLogin();
}

document.getElementById("logout").addEventListener("click", async () => {
  try {
    await post("session/logout");
  } catch (e) {
    // Not ended by the box (no answer, a refusal): the cookie still opens
    // the session from this browser, so the page must not look logged out.
    // A 401: it had ended already.
    if (e.status !== 401) {
      main.querySelector("#logout-error")?.remove();
      main.prepend(el("p", { class: "status error", id: "logout-error", role: "alert",
        text: `Not logged out: ${e.message}. The session is still open in this browser: try again.` }));
      return;
    }
  }
  // Logging out on purpose leaves nothing behind in this tab.
  drop();
  loggedOut();
});
function setMenuOpen(open) {
  document.getElementById("menu-toggle").setAttribute("aria-expanded", String(open));
  document.getElementById("nav").classList.toggle("open", open);
}
document.getElementById("menu-toggle").addEventListener("click", (ev) => {
  setMenuOpen(ev.currentTarget.getAttribute("aria-expanded") !== "true");
});
window.addEventListener("hashchange", route);
// A plugin stopped or started (the plugins page): the menu's plugin pages
// follow, or a stopped plugin's entry led to "This page failed to load"
// and a started one's page was missing until the next reload.
window.addEventListener("tlsbox:plugins-changed", async () => {
  if (!session) return;
  known = await buildMenu();
  markCurrent(location.hash.replace(/^#\/?/, "") || "dashboard");
});
window.addEventListener("tlsbox:written", (ev) => written(ev.detail.ok));
// The account page changed the password: the box ended every session of
// the user, this one too.
window.addEventListener("tlsbox:password-changed", (ev) => {
  if (!session) return;
  drop();
  loggedOut(`Password changed. Every session of ${ev.detail.user} has ended: ` +
    "log in with the new password.");
});
window.addEventListener("tlsbox:logged-out", () => {
  if (!session) return;
  // The session ended under the page (expiry, a logout elsewhere): what the
  // user typed is kept for the next login, before the login form replaces it.
  keep(session.user);
  loggedOut();
});
boot();
