// The account page (the user name at the top links here): who is logged
// in, and a password change, PUT admin/password with the current password.
// A new password ends every session of the user, this one too: app.js then
// shows the login form, saying so.
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
  root.append(el("div", { class: "card" },
    el("p", { id: "account-user", text: `Logged in as ${s.user}.` })), form);
}
