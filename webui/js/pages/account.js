// The account page (the user name at the top links here): who is logged
// in, a password change (PUT admin/password with the current password) and
// two-factor login (TOTP: admin/totp).  A new password ends every session
// of the user, this one too: app.js then shows the login form, saying so.
export const title = "Account";

export default async function render(root, { api, el, field, status }) {
  const s = await api("GET", "session");
  const pw = (id, auto) => el("input", { id, type: "password", autocomplete: auto, required: true });
  const current = pw("pw-current", "current-password");
  const next = pw("pw-new", "new-password");
  const again = pw("pw-again", "new-password");
  const st = status();
  st.id = "pw-status";
  const save = el("button", { type: "submit", id: "pw-save", text: "Change password" });
  const form = el("form", { class: "card narrow", id: "pw-form", novalidate: true },
    el("h2", { text: "Change password" }),
    el("p", { class: "muted", text: "A new password ends every session of this user, this one " +
      "too: you then log in again with it." }),
    field("Current password", current), field("New password", next, "At least 10 characters"),
    field("New password again", again), save, st);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    st.clear();
    // The length rule is the box's (its answer says it); a typo in the
    // repeat is caught here, before anything is sent.
    if (next.value !== again.value) {
      st.fail("The two new passwords differ: nothing was changed.");
      again.focus();
      return;
    }
    save.disabled = true;
    try {
      await api("PUT", "admin/password", { password: next.value, current_password: current.value });
      current.value = next.value = again.value = "";
      window.dispatchEvent(new CustomEvent("tlsbox:password-changed", { detail: { user: s.user } }));
    } catch (e) {
      const wait = e.data && e.data.retry_after ? ` (retry in ${e.data.retry_after} s)` : "";
      st.fail(`${e.message}${wait}: nothing was changed.`);
      (e.status === 400 ? next : current).focus();
    } finally {
      save.disabled = false;
    }
  });
  const tf = el("div", { class: "card narrow", id: "totp-card" });
  const tfStatus = status();
  tfStatus.id = "totp-status";
  await drawTotp(api, el, field, tf, tfStatus);
  root.append(el("div", { class: "card" },
    el("p", { id: "account-user", text: `Logged in as ${s.user}.` })), form, tf);
}

// The box's QR code of the otpauth URI ({size, path}: modules per side and
// an SVG path of the dark ones), drawn as SVG with the 4-module quiet zone
// scanners need, black on white whatever the page's colours.
function qrCode({ size, path }) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  const q = 4, side = size + 2 * q;
  svg.setAttribute("id", "totp-qr");
  svg.setAttribute("class", "qr");
  svg.setAttribute("viewBox", `${-q} ${-q} ${side} ${side}`);
  svg.setAttribute("shape-rendering", "crispEdges");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", "QR code of the two-factor key for the authenticator app");
  const bg = document.createElementNS(ns, "rect");
  for (const [k, v] of [["x", -q], ["y", -q], ["width", side], ["height", side], ["fill", "#fff"]])
    bg.setAttribute(k, String(v));
  const fg = document.createElementNS(ns, "path");
  fg.setAttribute("d", path);
  fg.setAttribute("fill", "#000");
  svg.append(bg, fg);
  return svg;
}

// The secret in groups of four, as apps that take it typed show it.
const grouped = (b32) => b32.match(/.{1,4}/g).join(" ");

// The two-factor card: off (turn on: password, then the secret once and a
// code to confirm it, then the recovery codes once) or on (turn off, or new
// recovery codes: password and a code, or a recovery code).
async function drawTotp(api, el, field, card, st) {
  const t = await api("GET", "admin/totp");
  const pw = el("input", { id: "totp-password", type: "password", autocomplete: "current-password" });
  // Up to 11 characters: a recovery code ("abcde-fghij") goes here too.
  const code = () => el("input", { id: "totp-code", autocomplete: "one-time-code", maxlength: "11" });
  const fail = (e) => st.fail(`${e.message}${e.data && e.data.retry_after ? ` (retry in ${e.data.retry_after} s)` : ""}`);
  const redraw = async (msg) => {
    await drawTotp(api, el, field, card, st);
    if (msg) st.ok(msg);
  };
  // The codes the box just made, shown this once; the card comes back
  // (saying @msg) when the user says they are kept.
  const showCodes = (codes, msg) => {
    const done = el("button", { type: "button", id: "totp-recovery-done", text: "I have saved them" });
    done.addEventListener("click", () => redraw(msg));
    card.replaceChildren(el("h2", { text: "Recovery codes" }),
      el("p", { text: "If the phone is lost, each of these logs in once in place of a code from " +
        "the app. Print them or keep them in a password manager: they are shown this once." }),
      el("ol", { id: "totp-recovery", class: "codes" }, ...codes.map((c) => el("li", {}, el("code", { text: c })))),
      done, st);
    done.focus();
  };
  if (t.enabled) {
    const c = code();
    const off = el("button", { type: "submit", id: "totp-off", text: "Turn off" });
    const renew = el("button", { type: "button", id: "totp-recovery-new", text: "New recovery codes" });
    const f = el("form", { novalidate: true }, field("Current password", pw),
      field("One-time code", c, "The 6 digits the app shows now, or a recovery code"), off, " ", renew);
    const send = async (path, then) => {
      st.clear();
      try {
        then(await api("POST", path, { current_password: pw.value, code: c.value.trim() }));
      } catch (e) {
        fail(e);
      }
    };
    f.addEventListener("submit", (ev) => {
      ev.preventDefault();
      send("admin/totp/off", () => redraw("Two-factor login is off: the password alone logs in."));
    });
    renew.addEventListener("click", () => send("admin/totp/recovery", (r) =>
      showCodes(r.recovery_codes, "New recovery codes are in use: the old ones no longer log in.")));
    const left = t.recovery_left;
    card.replaceChildren(el("h2", { text: "Two-factor login" }),
      el("p", { id: "totp-state", class: "ok", text: "On: a login needs the password and a code from the app." }),
      el("p", { id: "totp-recovery-left", class: left <= 3 ? "warn" : "muted",
        text: `Recovery codes left: ${left} of ${t.recovery_set}.${left <= 3 ? " Make new ones before they run out." : ""}` }),
      f, st);
    return;
  }
  const on = el("button", { type: "submit", id: "totp-on", text: "Turn on" });
  const f = el("form", { novalidate: true }, field("Current password", pw), on);
  f.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    st.clear();
    let r;
    try {
      r = await api("POST", "admin/totp", { current_password: pw.value });
    } catch (e) {
      fail(e);
      return;
    }
    pw.value = "";
    const c = code();
    const confirm = el("button", { type: "submit", id: "totp-confirm", text: "Confirm and turn on" });
    const g = el("form", { novalidate: true },
      el("p", { text: "Scan this code with your authenticator app, or type the key below " +
        "into it, or open the link on the phone that has the app. It is shown this once." }),
      ...(r.qr ? [qrCode(r.qr)] : []),
      el("p", {}, el("code", { id: "totp-secret", class: "secret", text: grouped(r.secret) })),
      el("p", {}, el("a", { id: "totp-uri", href: r.uri, text: "Open in the authenticator app" })),
      field("One-time code", c, "The 6 digits the app shows for tlsbox"), confirm);
    g.addEventListener("submit", async (ev2) => {
      ev2.preventDefault();
      st.clear();
      try {
        const r2 = await api("PUT", "admin/totp", { code: c.value.trim() });
        showCodes(r2.recovery_codes, "Two-factor login is on: the next login asks for a code.");
      } catch (e) {
        fail(e);
        c.focus();
      }
    });
    f.replaceWith(g);
    c.focus();
  });
  card.replaceChildren(el("h2", { text: "Two-factor login" }),
    el("p", { id: "totp-state", text: "Off: the password alone logs in." }), f, st);
}
