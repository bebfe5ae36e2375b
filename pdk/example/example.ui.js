// The example plugin's page in the tlsbox web UI.  The core serves this file
// (named <plugin>.ui.js, next to <plugin>.so) at /ui/plugins/example.js and
// puts "example" in the menu while the plugin runs.  A page module exports
// an optional `title` and a default function render(root, ctx): root is an
// empty <section> to fill; ctx.api(method, path, body) calls /api/v1/<path>
// with the session's CSRF token and throws an Error carrying the server's
// message; ctx.el, ctx.field and ctx.status are the frame's DOM helpers.
// It may return a function the frame calls when the page is left.
export const title = "Example";

export default async function render(root, { api, el, field, status }) {
  const shown = el("p", { id: "example-greeting", class: "card" });
  async function refresh() {
    const r = await api("GET", "example/hello");
    shown.textContent = `The example says "${r.greeting}".`;
  }
  const input = el("input", { id: "example-new-greeting", value: "" });
  const st = status();
  const form = el("form", { class: "card" }, field("New greeting", input,
    "Letters, spaces, commas and !, up to 40 characters"),
  el("button", { type: "submit", text: "Change greeting" }), st);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      await api("PUT", "plugins/example/settings", { greeting: input.value });
      st.ok("Saved.");
      await refresh();
    } catch (e) {
      st.fail(e.message);
    }
  });
  root.append(shown, form);
  await refresh();
}
