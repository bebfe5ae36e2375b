// Unsaved edits across an ended session.  A session can end under an open
// form (idle expiry, a logout in another tab); the Save that meets it shows
// the login form, which replaces the page.  What the user had typed is kept
// here and put back into the same page after the next login, unsaved: the
// user checks it and presses Save again, so no change (and no CSRF token) is
// ever replayed on its own.
//
// sessionStorage, not a variable: the draft must outlive a reload of the
// tab (a reload on the login form, or the frame's reload after an upgrade),
// and it stays in this tab.  Secrets never go there (see keepable), and the
// draft is removed when it is put back, on an explicit logout, and when
// someone else logs in.
const KEY = "tlsbox.draft";

// { root, page, touched: Set of fields the user changed, saved: Map of a
// field to its value before the user first changed it (or last saved it) }
let watched = null;
let submitted = null; // the form whose Save was pressed last

function valueOf(e) {
  return e.type === "checkbox" || e.type === "radio" ? { checked: e.checked } : { value: e.value };
}

function same(a, b) {
  return "checked" in a ? !!a.checked === !!b.checked : String(a.value) === String(b.value);
}

// Focus comes before any typing, choosing or ticking: the value then is the
// saved one, which a restored draft compares with what is saved by then.
function remember(ev) {
  const e = ev.target;
  if (watched && e.id && !watched.saved.has(e) && !watched.touched.has(e)) watched.saved.set(e, valueOf(e));
}

function note(ev) {
  if (watched && ev.target.id) watched.touched.add(ev.target);
}

function noteSubmit(ev) {
  submitted = ev.target;
}

// The box answered a change (api.js): stored (ok), the fields of the form
// whose Save was pressed are no longer unsaved edits, so a later session
// end does not keep them and the next login does not put a value back
// over one changed meanwhile elsewhere.  Refused, they still are.
export function written(ok) {
  if (ok && watched && submitted) {
    for (const e of [...watched.touched]) {
      if (!submitted.contains(e)) continue;
      watched.touched.delete(e);
      watched.saved.set(e, valueOf(e)); // what is saved now
    }
  }
  submitted = null;
}

// Fields that may be written to storage: those with an id a page gave them
// (field() makes up ids that differ from one render to the next) and no
// secret: password inputs (the login form, secret settings), one-time code
// inputs (autocomplete="one-time-code": a recovery code typed there logs in
// in place of the app, a password in all but name), file inputs (a key
// file), fields marked data-no-draft (the certificate import's text: a key
// pasted there, even without its PEM header, is only base64 lines that no
// test of the text can tell from a chain), and any text holding a private
// key.
function keepable(e) {
  if (!e.id || e.hasAttribute("data-generated-id")) return false;
  if (e.type === "password" || e.type === "file" || e.type === "hidden") return false;
  if (/\bone-time-code\b/.test(e.getAttribute("autocomplete") || "")) return false;
  if (e.closest("[data-no-draft]")) return false;
  return !/PRIVATE KEY/.test(e.value || "");
}

function read() {
  try {
    return JSON.parse(sessionStorage.getItem(KEY) || "null");
  } catch (e) {
    return null;
  }
}

// Forget any draft: an explicit logout, another user, a draft put back.
export function drop() {
  try {
    sessionStorage.removeItem(KEY);
  } catch (e) {
    /* storage off: nothing was kept either */
  }
}

// The page now shown: note which of its fields the user changes (typing,
// choosing, ticking), not the values the page itself filled in.
export function watch(root, page) {
  if (watched) {
    watched.root.removeEventListener("input", note);
    watched.root.removeEventListener("change", note);
    watched.root.removeEventListener("submit", noteSubmit, true);
    watched.root.removeEventListener("focusin", remember);
  }
  watched = { root, page, touched: new Set(), saved: new Map() };
  submitted = null;
  root.addEventListener("focusin", remember);
  root.addEventListener("input", note);
  root.addEventListener("change", note);
  // Capture: before the page's own handler sends the change.
  root.addEventListener("submit", noteSubmit, true);
}

// The session of user ended under the page shown: keep the fields the user
// changed, if any.
export function keep(user) {
  if (!watched || !watched.root.isConnected) return;
  const fields = {};
  for (const e of watched.touched) {
    if (!e.isConnected || !keepable(e)) continue;
    fields[e.id] = valueOf(e);
    const saved = watched.saved.get(e);
    if (saved) fields[e.id].saved = saved;
  }
  if (!Object.keys(fields).length) return;
  try {
    sessionStorage.setItem(KEY, JSON.stringify({ user, page: watched.page, fields }));
  } catch (e) {
    /* storage off or full: the edits are lost, as without drafts */
  }
}

// The name a page shows for field @p e: its label's text, else its id.
function nameOf(e) {
  const label = [...document.querySelectorAll("label")].find((l) => l.htmlFor === e.id);
  return (label && label.textContent.trim()) || e.id;
}

// The page is rendered after a login: put back the draft kept for it and
// this user, unsaved.  Returns how many fields came back (n, 0: none) and
// the names of those whose saved value changed since the draft was taken
// (changed): someone saved another value meanwhile, which the draft now
// hides.  A draft of another page or user is dropped: it belonged to what
// was left.
export function restore(root, user, page) {
  const d = read();
  const none = { n: 0, changed: [] };
  if (!d) return none;
  drop();
  if (d.user !== user || d.page !== page || !d.fields) return none;
  let n = 0;
  const changed = [];
  for (const [id, v] of Object.entries(d.fields)) {
    const e = document.getElementById(id);
    if (!e || !root.contains(e) || !keepable(e)) continue;
    // The page shows what is saved now: compared before the draft hides it.
    const now = valueOf(e);
    if ("checked" in v) {
      if (e.type !== "checkbox" && e.type !== "radio") continue;
      e.checked = !!v.checked;
    } else {
      if (e.type === "checkbox" || e.type === "radio") continue;
      if (e.tagName === "SELECT" && ![...e.options].some((o) => o.value === v.value)) continue;
      e.value = String(v.value);
    }
    if (v.saved && !same(v.saved, now)) changed.push(nameOf(e));
    if (watched && watched.root === root) {
      // Still unsaved: kept again if the session ends once more, against
      // the value saved now.
      watched.touched.add(e);
      watched.saved.set(e, now);
    }
    n += 1;
  }
  return { n, changed };
}
