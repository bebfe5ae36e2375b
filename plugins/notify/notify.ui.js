// The notify plugin's page in the tlsbox web UI (served at
// /ui/plugins/notify.js while the plugin runs): where the webhook is (its
// origin only: the rest of the URL may be its key) and who gets e-mail
// through which server, a "Send a test" button (POST notify/test: one per
// channel) and one beside each channel (that channel only), and the newest deliveries from GET notify/deliveries, failed
// ones in red with the reason.  The page polls while a delivery is queued
// or retrying.  The URL, key, addresses, server and events are set in the
// plugin's form on the Plugins page.
export const title = "Notifications";

const when = (t) => (t ? new Date(t * 1000).toLocaleString() : "–");

export default async function render(root, { api, el, status }) {
  const to = el("span", { id: "notify-to" });
  const mail = el("span", { id: "notify-mail" });
  const st = status();
  st.id = "notify-test-status";
  const test = el("button", { type: "button", id: "notify-test", text: "Send a test" });
  const testHook = el("button", { type: "button", id: "notify-test-webhook", class: "small",
    text: "Test the webhook" });
  const testMail = el("button", { type: "button", id: "notify-test-mail", class: "small",
    text: "Test e-mail" });
  const rows = el("tbody", { id: "notify-rows" });
  let timer = null;
  let gone = false;

  function row(d) {
    const bad = d.status === "failed";
    const state = el("td", {}, el("span", { class: bad ? "bad" : d.status === "delivered" ? "ok" : "",
      text: d.status }));
    if (d.error) state.append(el("br"), el("span", { class: `small${bad ? " bad" : ""}`, text: d.error }));
    const proto = d.channel === "mail" ? "SMTP" : "HTTP";
    return el("tr", { "data-id": String(d.id) },
      el("td", { text: when(d.at) }), el("td", { text: d.event }),
      el("td", { text: d.channel === "mail" ? "e-mail" : "webhook" }), state,
      el("td", { text: String(d.tries) }),
      el("td", { text: d.http_status === null ? "–" : `${proto} ${d.http_status}` }));
  }

  async function refresh() {
    if (gone) return;
    const r = await api("GET", "notify/deliveries");
    to.textContent = r.to ? `Webhook: ${r.to}` : "No webhook set: set notify.url on the Plugins page.";
    mail.textContent = r.mail ? `E-mail: ${r.mail.to.split(",").join(", ")} (through ${r.mail.via})`
      : "No e-mail: set notify.mail_to and notify.smtp_url on the Plugins page.";
    test.disabled = !r.to && !r.mail;
    testHook.hidden = !r.to;
    testMail.hidden = !r.mail;
    rows.replaceChildren(...r.deliveries.map(row));
    if (!r.deliveries.length) rows.append(el("tr", {}, el("td", { colspan: "6", text: "No delivery yet." })));
    clearTimeout(timer);
    if (r.deliveries.some((d) => d.status === "queued" || d.status === "retrying")) {
      timer = setTimeout(() => refresh().catch((e) => st.fail(e.message)), 1000);
    }
  }

  const send = (body, said) => async () => {
    st.clear();
    try {
      await api("POST", "notify/test", body);
      st.ok(said);
      await refresh();
    } catch (e) {
      st.fail(e.message);
    }
  };
  test.addEventListener("click", send({}, "Test queued: its deliveries show below."));
  testHook.addEventListener("click", send({ channel: "webhook" },
    "Test queued for the webhook only: its delivery shows below."));
  testMail.addEventListener("click", send({ channel: "mail" },
    "Test queued for e-mail only: its delivery shows below."));
  root.append(el("section", { class: "card" }, el("p", {}, to, " ", testHook),
    el("p", {}, mail, " ", testMail), test, st),
    el("section", { class: "card" }, el("h2", { text: "Deliveries" }),
      // In a table-wrap, as every table of the UI: six columns are wider
      // than a phone, and the page would scroll sideways with them.
      el("div", { class: "table-wrap" }, el("table", { class: "wide" }, el("thead", {}, el("tr", {},
        ...["When", "Event", "To", "Status", "Tries", "Answer"].map((h) => el("th", { text: h })))), rows))));
  await refresh();
  return () => {
    gone = true;
    clearTimeout(timer);
  };
}
