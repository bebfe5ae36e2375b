// Certificates: the list, import (the key goes up once and never comes
// back), renew now, the local root for download, the ACME timeline.
import { get, post } from "../api.js";
import { el, field, status, when } from "../ui.js";

export const title = "Certificates";

function readFile(input) {
  const f = input.files && input.files[0];
  return f ? f.text() : Promise.resolve("");
}

async function certList(box) {
  const d = await get("cert");
  box.replaceChildren(el("h2", { text: "Installed" }), el("div", { class: "table-wrap" },
    el("table", { id: "cert-table" }, el("thead", {}, el("tr", {}, ["Name", "Names", "Key", "Issuer",
      "Source", "Expires", "Days left", "Status"].map((h) => el("th", { text: h })))),
    el("tbody", {}, d.certificates.map((c) => el("tr", { class: c.days_left < 14 ? "bad" : "" },
      el("td", { text: c.name }), el("td", { text: (c.sans || []).join(", ") }),
      el("td", { text: c.key_type }), el("td", { text: c.issuer }), el("td", { text: c.source }),
      el("td", { text: when(c.not_after) }), el("td", { text: c.days_left }),
      el("td", { text: c.status })))))));
}

function importForm(after) {
  const name = el("input", { id: "import-name", placeholder: "derived from the certificate" });
  // data-no-draft: a key pasted here by mistake must never reach the tab's
  // storage (drafts.js), whatever its text looks like.
  const cert = el("textarea", { id: "import-cert", rows: "4", class: "mono wide",
    placeholder: "-----BEGIN CERTIFICATE-----", "data-no-draft": true });
  const certFile = el("input", { type: "file", id: "import-cert-file", accept: ".pem,.crt,.cer" });
  const key = el("input", { type: "file", id: "import-key-file", accept: ".pem,.key" });
  const st = status();
  const form = el("form", { class: "card", id: "import-form" }, el("h2", { text: "Import" }),
    field("Name (optional)", name), field("Certificate chain (PEM, leaf first)", cert),
    field("…or its file", certFile), field("Private key file (PEM)", key,
      "Sent once over this HTTPS connection and stored on the box; never shown again."),
    el("button", { type: "submit", text: "Import" }), st);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    st.clear();
    const chain = cert.value.trim() || (await readFile(certFile));
    const keyPem = await readFile(key);
    if (!chain || !keyPem) {
      st.fail("Give the certificate chain and the private key file.");
      return;
    }
    try {
      const body = { chain_pem: chain, key_pem: keyPem };
      if (name.value.trim()) body.name = name.value.trim();
      await post("cert/import", body);
      form.reset();
      st.ok("Imported; the site serves it from the next connection.");
      after();
    } catch (e) {
      st.fail(e.message);
    }
  });
  return form;
}

async function rootDownload(box) {
  const st = status();
  const btn = el("button", { type: "button", id: "root-download", text: "Download the local root (PEM)" });
  btn.addEventListener("click", async () => {
    try {
      const r = await get("cert/root");
      const url = URL.createObjectURL(new Blob([r.pem], { type: "application/x-pem-file" }));
      const a = el("a", { href: url, download: "tlsbox-root.pem" });
      document.body.append(a);
      a.click();
      a.remove();
      URL.revokeObjectURL(url);
      st.ok("Saved as tlsbox-root.pem: add it to your devices' trusted roots.");
    } catch (e) {
      st.fail(e.message);
    }
  });
  box.replaceChildren(el("h2", { text: "Local root" }),
    el("p", { text: "Without a domain, the box's own CA signs its certificate. Trust its root once on each device." }),
    btn, st);
}

async function acmeBox(box) {
  const st = status();
  const renew = el("button", { type: "button", id: "renew-now", text: "Renew now" });
  const view = el("div", { id: "acme-status" });
  async function show() {
    try {
      const a = await get("acme/status");
      view.replaceChildren(el("dl", { class: "kv" }, Object.entries(a).map(([k, v]) => [
        el("dt", { text: k }),
        el("dd", { text: typeof v === "object" ? JSON.stringify(v) : /_at$|^next|^last/.test(k) && typeof v === "number" ? when(v) : String(v) })])));
      return a;
    } catch (e) {
      view.replaceChildren(el("p", { class: "muted", text: `ACME: ${e.message}` }));
      return null;
    }
  }
  renew.addEventListener("click", async () => {
    st.clear();
    try {
      await post("acme/renew", { force: true });
      st.ok("Renewal started; progress below.");
      for (let i = 0; i < 30; i++) {
        const a = await show();
        if (!a || !/order|pending|running|valid|processing/i.test(a.state || "")) break;
        await new Promise((r) => setTimeout(r, 2000));
      }
    } catch (e) {
      st.fail(e.message);
    }
  });
  box.replaceChildren(el("h2", { text: "ACME account and renewals" }), view, renew, st);
  await show();
}

export default async function render(root) {
  const list = el("section", { class: "card" });
  const rootBox = el("section", { class: "card" });
  const acme = el("section", { class: "card" });
  const refresh = () => certList(list).catch((e) => list.replaceChildren(el("p", { class: "status error", text: e.message })));
  root.append(list, importForm(refresh), rootBox, acme);
  await Promise.all([refresh(), rootDownload(rootBox), acmeBox(acme)]);
}
