#!/usr/bin/python3
"""Drive the admin web UI in headless Chromium (Debian's chromium,
chromium-driver, python3-selenium) against a running tlsboxd.

Prints one line per check, "PASS <what>" or "FAIL <what>", and "# ..." for
diagnostics; 61_admin_ui.sh turns them into TAP.  Writes a full-page
screenshot of every page and page-weight.txt into $UI_ARTIFACTS.

Environment: ADMIN_URL, SITE_PORT, TLSBOXCTL, TB_STATE, UI_ARTIFACTS."""
import json
import os
import sqlite3
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

BASE = os.environ["ADMIN_URL"]
SITE = "127.0.0.1:" + os.environ["SITE_PORT"]
CTL = [os.environ["TLSBOXCTL"], "--state-dir", os.environ["TB_STATE"]]
ART = os.environ["UI_ARTIFACTS"]
PASSWORD = "ui test password 1"
failures = 0


def check(cond, what, detail=""):
    global failures
    print(("PASS " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures += 1
        if detail:
            print("# " + str(detail).replace("\n", "\n# "), flush=True)
    return cond


def ctl(*args):
    return subprocess.run(CTL + list(args), capture_output=True, text=True, timeout=20).stdout


def tls_accepts(version_flag):
    """True when openssl s_client completes a handshake with the site."""
    r = subprocess.run(["openssl", "s_client", "-connect", SITE, version_flag, "-brief"],
                       input="", capture_output=True, text=True, timeout=10)
    return r.returncode == 0 and "Protocol version" in r.stderr + r.stdout


def tls_until(version_flag, want, seconds=10):
    """Poll until the site accepts (want=True) or refuses the version; the
    policy reaches the site through an event, a moment after the reply."""
    end = time.time() + seconds
    while time.time() < end:
        if tls_accepts(version_flag) == want:
            return True
        time.sleep(0.2)
    return False


def browser():
    o = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--ignore-certificate-errors",
              "--window-size=1280,900", "--disable-gpu", "--disable-dev-shm-usage"):
        o.add_argument(a)
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
    d.set_page_load_timeout(30)
    return d


def wait(d, cond, seconds=15):
    return WebDriverWait(d, seconds, poll_frequency=0.2).until(cond)


def shot(d, name):
    """Full-page screenshot: grow the window to the page's height first."""
    w = d.get_window_size()["width"]
    h = d.execute_script("return Math.min(6000, document.documentElement.scrollHeight)")
    d.set_window_size(w, max(h, 600))
    d.execute_script("window.scrollTo(0, 0)")
    path = os.path.join(ART, name + ".png")
    d.save_screenshot(path)
    d.set_window_size(w, 900)
    print("# screenshot " + path, flush=True)


def open_page(d, page, ready_css):
    d.get(f"{BASE}/#/{page}")
    return wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, ready_css)))


def chart_sums(d, canvas_id):
    return d.execute_script(
        "const c = Chart.getChart(document.getElementById(arguments[0]));"
        "return c ? c.data.datasets.map(s => s.data.reduce((a, b) => a + (b || 0), 0)) : null;",
        canvas_id)


def first_run(d):
    url = ctl("admin", "setup-url").splitlines()[0]
    check(url.startswith(BASE + "/#setup="), "tlsboxctl admin setup-url gives the first-run URL", url)
    d.get(url)
    pw = wait(d, EC.presence_of_element_located((By.NAME, "password")))
    shot(d, "01-first-run")
    pw.send_keys(PASSWORD)
    d.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    title = wait(d, EC.text_to_be_present_in_element((By.ID, "page-title"), "Dashboard"))
    check(title, "first run with the token sets the password and opens the dashboard")


def policy_modern_and_rollback(d):
    check(tls_accepts("-tls1_2"), "before: the site accepts TLS 1.2 (intermediate preset)")
    open_page(d, "policy", "#preset-form")
    d.find_element(By.CSS_SELECTOR, "#preset option[value=modern]").click()
    d.find_element(By.ID, "preset-preview").click()
    wait(d, EC.text_to_be_present_in_element((By.ID, "preview-excluded"), "would exclude"))
    excl = d.find_element(By.ID, "preview-excluded").text
    check("Java 8" in excl and "Android 4.4" in excl, "preview of modern names the client families it excludes", excl)
    # The table is the core's handshakes: the same answer tlsboxctl gets.
    want = {c["family"]: c for c in ctl_json("policy", "preview", "--preset", "modern")["clients"]}
    rows = {tr.get_attribute("data-family"): [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            for tr in d.find_elements(By.CSS_SELECTOR, "#preview-clients tbody tr")}
    check(rows.keys() == want.keys() and all(
        r[1] == ("connects" if want[f]["ok"] else "refused") and
        (r[2].startswith(f"{want[f]['protocol']}, {want[f]['cipher']}") if want[f]["ok"]
         else r[2] == f"{want[f]['error']} ({want[f]['side']})") for f, r in rows.items()),
        "the preview's client table shows what tlsboxctl policy preview --preset modern says", rows)
    check(rows.get("modern-browsers", [""] * 3)[2].startswith("TLS1.3,") and
          rows.get("java-8", [""] * 3)[2] == "No supported cipher suites have been found. (server)",
          "modern: browsers connect with TLS 1.3, Java 8 is refused with GnuTLS' reason", rows)
    shot(d, "03-policy-preview")
    d.find_element(By.ID, "preset-apply").click()
    ok = wait(d, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "#preset-form .status"), "Applied"))
    check(ok, "the modern preset is applied from the page")
    check(tls_until("-tls1_2", False), "then openssl s_client -tls1_2 is refused by the site")
    check(tls_accepts("-tls1_3"), "while TLS 1.3 is still accepted")
    # Roll back to the version before: the first row that can be rolled back.
    btn = wait(d, EC.element_to_be_clickable((By.CSS_SELECTOR, "button[data-version]")))
    version = btn.get_attribute("data-version")
    btn.click()
    # The page's own "done" line: written after the new active policy, the
    # history and the form fields are all re-read (the raw field below is
    # refilled then, so typing into it earlier would be overwritten).
    wait(d, EC.text_to_be_present_in_element((By.ID, "history-status"), f"Rolled back to version {version}:"))
    prio = d.find_element(By.ID, "active-priority").text
    check("VERS-TLS1.2" in prio, f"rolled back to version {version} from the history", prio)
    check(tls_until("-tls1_2", True), "after the rollback s_client -tls1_2 is accepted again")
    # A raw string with an error: the message and the marked token in place.
    raw = d.find_element(By.ID, "raw")
    raw.clear()
    raw.send_keys("NORMAL:+FOO")
    d.find_element(By.ID, "raw-preview").click()
    err = wait(d, EC.visibility_of_element_located((By.ID, "raw-err")))
    check("position 7" in err.text, "a bad raw string shows the error position by the field", err.text)
    mark = d.find_element(By.CSS_SELECTOR, "#raw-mark mark").text
    check(mark == "+FOO", "and marks the bad token in the string", mark)
    shot(d, "04-policy-raw-error")
    # A contradiction in the fields: the message by the field it names.
    d.find_element(By.CSS_SELECTOR, "#pf-min_version option[value='TLS1.3']").click()
    d.find_element(By.CSS_SELECTOR, "#pf-max_version option[value='TLS1.2']").click()
    d.find_element(By.CSS_SELECTOR, "#fields-form button[type=button]").click()
    err = wait(d, EC.visibility_of_element_located((By.ID, "pf-min_version-err")))
    check("newer than max_version" in err.text, "contradictory fields are refused by the field", err.text)
    # An emptied HSTS field is no 0: applied, it turned HSTS off unasked.
    d.find_element(By.CSS_SELECTOR, "#pf-min_version option[value='TLS1.2']").click()
    d.find_element(By.CSS_SELECTOR, "#pf-max_version option[value='TLS1.3']").click()
    hsts_before = ctl_json("policy", "show")["policy"]["hsts_max_age"]
    d.find_element(By.ID, "pf-hsts_max_age").clear()
    d.find_element(By.CSS_SELECTOR, "#fields-form button[type=submit]").click()
    err = wait(d, EC.visibility_of_element_located((By.ID, "pf-hsts_max_age-err")))
    check(err.text == "hsts_max_age: '' is not a whole number",
          "an emptied HSTS max-age is refused by its field, not applied as 0 (off)", err.text)
    hsts_after = ctl_json("policy", "show")["policy"]["hsts_max_age"]
    check(hsts_before > 0 and hsts_after == hsts_before, "and the policy keeps its HSTS max-age",
          f"{hsts_before} -> {hsts_after}")


def dashboard_under_load(d):
    open_page(d, "dashboard", "#chart-hs")
    wait(d, lambda _: chart_sums(d, "chart-req") is not None and
         len(d.execute_script("return Chart.getChart(document.getElementById('chart-req')).data.labels")) >= 2)
    before = chart_sums(d, "chart-req")
    check(before == [0, 0], "no requests on the charts before the load", before)
    load = subprocess.Popen(["h2load", "-n", "3000", "-c", "10", "-m", "10",
                             f"https://{SITE}/index.html"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    moved = None
    try:
        moved = wait(d, lambda _: (lambda h, r: h and r and sum(h) > 0 and r[1] > 0 and h or False)(
            chart_sums(d, "chart-hs"), chart_sums(d, "chart-req")), 30)
    except TimeoutException:
        moved = None
    out = load.communicate(timeout=60)[0]
    check(load.returncode == 0, "h2load ran against the site", out[-400:])
    check(bool(moved), "the handshake and request charts move under the h2load run",
          f"handshakes {chart_sums(d, 'chart-hs')} requests {chart_sums(d, 'chart-req')}")
    hs = d.find_element(By.ID, "n-hs").text
    check(hs != "–", "the handshakes/s figure is shown", hs)
    time.sleep(1.5)
    shot(d, "02-dashboard")


def settings_refused(d):
    before = ctl("get", "site.workers").strip()
    open_page(d, "plugins", "#set-site-workers")
    f = d.find_element(By.ID, "set-site-workers")
    f.clear()
    f.send_keys("999")
    d.find_element(By.CSS_SELECTOR, "#settings-site button[type=submit]").click()
    err = wait(d, EC.visibility_of_element_located((By.ID, "set-site-workers-err")))
    check("out of range" in err.text, "an out-of-range value is refused with the message by the field",
          err.text)
    check(f.get_attribute("aria-invalid") == "true", "the field is marked invalid")
    check(ctl("get", "site.workers").strip() == before, "and nothing is stored")
    shot(d, "05-plugins-refused")


def metrics_status(token):
    """The HTTP status of /metrics on the admin port with that bearer token."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(BASE + "/metrics", headers={"Authorization": "Bearer " + token})
    try:
        return urllib.request.urlopen(req, context=ctx, timeout=10).status
    except urllib.error.HTTPError as e:
        return e.code


def secret_setting(d):
    """A secret setting (admin.metrics_token) is set from its form, then set
    empty again, which its help says turns /metrics off."""
    token = "ui-scrape-token-0123456789"
    open_page(d, "plugins", "#set-admin-metrics_token")
    d.find_element(By.CSS_SELECTOR, "#plugin-admin summary").click()  # the core's settings start folded
    d.find_element(By.ID, "set-admin-metrics_token").send_keys(token)
    d.find_element(By.CSS_SELECTOR, "#settings-admin button[type=submit]").click()
    wait(d, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "#settings-admin .status"), "Saved"))
    check(metrics_status(token) == 200, "a metrics token set on the page opens /metrics to it")
    d.refresh()  # the form as a later visit shows it, the token no longer typed in
    wait(d, EC.presence_of_element_located((By.ID, "set-admin-metrics_token")))
    d.find_element(By.CSS_SELECTOR, "#plugin-admin summary").click()
    box = d.find_elements(By.ID, "set-admin-metrics_token-clear")
    check(bool(box) and d.find_element(By.CSS_SELECTOR, "label[for=set-admin-metrics_token-clear]").text
          == "set it empty", "the secret's form offers to set it empty, labelled")
    if box:
        box[0].click()
    d.find_element(By.CSS_SELECTOR, "#settings-admin button[type=submit]").click()
    st = wait(d, EC.visibility_of_element_located((By.CSS_SELECTOR, "#settings-admin .status")))
    # The empty status line is visible too (min-height): wait for the answer.
    wait(d, lambda _: st.text != "")
    check(st.text == "Saved: metrics_token.", "saving says the token changed", st.text)
    check(metrics_status(token) == 404, "and /metrics is off again", metrics_status(token))


def other_pages(d):
    open_page(d, "certs", "#cert-table tbody tr")
    check("internal" in d.find_element(By.ID, "cert-table").text, "certificates page lists the internal certificate")
    wait(d, EC.text_to_be_present_in_element((By.ID, "acme-status"), "state"))
    check("object" not in d.find_element(By.ID, "acme-status").text, "the ACME section shows its status")
    # No domain here, so ACME is off: "Renew now" must show the daemon's refusal, not "Renewal started".
    d.find_element(By.ID, "renew-now").click()
    renew_st = (By.CSS_SELECTOR, "#renew-now + .status")
    try:
        wait(d, EC.text_to_be_present_in_element(renew_st, "ACME is off"))
    except TimeoutException:
        pass
    st = d.find_element(*renew_st)
    check(st.text.startswith("acme/renew: ACME is off (acme.domains is empty)") and "error" in st.get_attribute("class"),
          "Renew now with ACME off shows the refusal as an error", st.text)
    # Import a certificate and key from files: the key goes up and never comes back.
    tmp = os.environ["TB_TMP"]
    key, crt = os.path.join(tmp, "ui.key"), os.path.join(tmp, "ui.crt")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", key, "-out", crt, "-subj", "/CN=ui-import.example", "-days", "30",
                    "-addext", "subjectAltName=DNS:ui-import.example"], check=True, capture_output=True, timeout=30)
    d.find_element(By.ID, "import-name").send_keys("ui-import")
    d.find_element(By.ID, "import-cert-file").send_keys(crt)
    d.find_element(By.ID, "import-key-file").send_keys(key)
    d.find_element(By.CSS_SELECTOR, "#import-form button[type=submit]").click()
    ok = wait(d, EC.text_to_be_present_in_element((By.ID, "cert-table"), "ui-import.example"))
    check(ok, "a certificate and key imported from files appear in the list")
    key_line = open(key).read().splitlines()[1]
    check(key_line not in d.page_source and "PRIVATE KEY" not in d.page_source,
          "the private key is nowhere on the page after the import")
    shot(d, "06-certificates")
    open_page(d, "audit", "#audit-rows tr")
    check("policy" in d.find_element(By.ID, "audit-rows").text, "audit page shows the policy changes")
    shot(d, "07-audit")
    link = wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "#menu a[data-page='p/example']")))
    link.click()
    g = wait(d, EC.text_to_be_present_in_element((By.ID, "example-greeting"), "hello"))
    check(g, "the example plugin's page is in the menu and works")
    d.find_element(By.ID, "example-new-greeting").send_keys("hi there!")
    d.find_element(By.CSS_SELECTOR, "#example-new-greeting ~ button, form button[type=submit]").click()
    g = wait(d, EC.text_to_be_present_in_element((By.ID, "example-greeting"), "hi there!"))
    check(g and ctl("get", "example.greeting").strip() == "hi there!",
          "the plugin page changes its setting through the API")
    shot(d, "08-plugin-example")


def audit_older(d):
    """A double click on "Older entries" shows the next page once."""
    for i in range(110):  # more than two pages of 50
        ctl("set", "example.greeting", "hi " + "".join("abcdefghij"[int(c)] for c in str(i)))
    open_page(d, "audit", "#audit-rows tr")
    btn = d.find_element(By.XPATH, "//button[text()='Older entries']")
    ActionChains(d).double_click(btn).perform()
    rows = lambda: d.execute_script("return [...document.querySelectorAll('#audit-rows tr')].map(r => r.innerText)")
    wait(d, lambda _: len(rows()) >= 100)
    # A second page fetched by the second click would land a moment later.
    try:
        wait(d, lambda _: len(rows()) > 100, 3)
    except TimeoutException:
        pass
    r = rows()
    check(len(r) == 100 and len(set(r)) == 100, "a double click on Older entries adds the next 50 entries once",
          f"{len(r)} rows, {len(set(r))} different")


def ctl_json(*args):
    return json.loads(ctl("--json", *args))


def ocsp_page(d):
    """The OCSP plugin's page lists what ocsp/status says, and refreshes."""
    link = wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "#menu a[data-page='p/ocsp']")))
    link.click()
    wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "#ocsp-rows tr[data-name=internal]")))
    want = [c for c in ctl_json("ocsp", "status")["certificates"] if c["name"] == "internal"][0]
    rows = table_rows(d, "#ocsp-rows tr")
    cells = [r for r in rows if r["name"] == "internal"][0]["cells"]
    # A good answer no longer sent reads as a warning, not the status word.
    shown = {"expired": "EXPIRED - no staple is sent",
             "not_stapled": "NOT STAPLED - no staple is sent"}.get(want["status"], want["status"].replace("_", " "))
    check(cells[1] == want["responder"] and cells[2].split("\n")[0] == shown,
          f"the OCSP page lists the internal certificate as ocsp status says ({want['status']})", cells)
    check(("stapled" in cells[2]) == want["stapled"], "and whether it is stapled", cells)
    revoked = os.environ["OCSP_REVOKED"]
    first = rows[0]
    check(first["name"] == revoked and "bad" in first["class"].split(),
          f"the revoked certificate ({revoked}) comes first, its row marked", first)
    check(first["bold_red"][:1] != [] and first["bold_red"][0].startswith("REVOKED") and
          "Must-staple certificate without a valid staple" in first["cells"][2],
          "with REVOKED and the must-staple warning in bold red", first)
    check("1 REVOKED, 1 must-staple without a staple" in d.find_element(By.ID, "ocsp-summary").text,
          "and the summary counts them", d.find_element(By.ID, "ocsp-summary").text)
    runs = ctl_json("ocsp", "status")["runs"]
    d.find_element(By.CSS_SELECTOR, "button[data-cert=internal]").send_keys(Keys.ENTER)
    ok = wait(d, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "#ocsp-rows tr[data-name=internal] .status"),
                                                  "Fresh"), 40)
    after = ctl_json("ocsp", "status")
    check(ok and after["runs"] > runs, "refresh now (keyboard) runs a refresh and writes the result in the row",
          f"runs {runs} -> {after['runs']}")
    shot(d, "11-plugin-ocsp")


def table_rows(d, css):
    """The rows matching css read in one script, so in one state of the page
    (a page that redraws its table on a timer would leave rows found one
    call earlier stale): each row's data-name, class, cell texts and the
    texts of the strong.bad marks in its third cell."""
    return d.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map((tr) => ({"
        "name: tr.dataset.name, class: tr.className, cells: [...tr.cells].map((td) => td.innerText.trim()),"
        "bold_red: tr.cells.length > 2 ? [...tr.cells[2].querySelectorAll('strong.bad')]"
        ".map((b) => b.innerText.trim()) : []}));", css)


def dh_until(field, value, seconds=10):
    end = time.time() + seconds
    while time.time() < end:
        if ctl_json("dh", "status")[field] == value:
            return True
        time.sleep(0.2)
    return False


def dh_page(d):
    """The dhparam plugin's page: served bits, mode switch, import refusal,
    a generation's progress, each compared with tlsboxctl dh status."""
    ctl("set", "dhparam.bits", "2048")
    link = wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "#menu a[data-page='p/dhparam']")))
    link.click()
    shown = wait(d, EC.presence_of_element_located((By.ID, "dh-served-bits")))
    st = ctl_json("dh", "status")
    check(f"({st['served']['bits']} bits)" in shown.text,
          f"the DH page shows the served bits of tlsboxctl dh status ({st['served']['bits']})", shown.text)
    check(d.find_element(By.ID, "dh-served-mode").text == st["mode"] == "rfc7919", "and its mode")
    d.find_element(By.CSS_SELECTOR, "#dh-mode option[value=generated]").click()
    d.find_element(By.CSS_SELECTOR, "#dh-mode-form button[type=submit]").click()
    check(dh_until("mode", "generated"), "switching the mode on the page changes tlsboxctl dh status")
    # With no generated parameters yet, the plugin starts the first
    # generation (of dhparam.bits, 2048 here to keep it short).
    end = time.time() + 20
    while time.time() < end:
        st = ctl_json("dh", "status")
        if st["generation"] or st["params"]["generated"]:
            break
        time.sleep(0.2)
    check(st["generation"] or st["params"]["generated"], "and starts the first generation", st)
    ok = wait(d, EC.text_to_be_present_in_element((By.ID, "dh-served-mode"), "generated"))
    check(ok, "and the page shows the new mode")
    d.find_element(By.CSS_SELECTOR, "#dh-mode option[value=rfc7919]").click()
    d.find_element(By.CSS_SELECTOR, "#dh-mode-form button[type=submit]").click()
    check(dh_until("mode", "rfc7919"), "and back to rfc7919")
    end = time.time() + 10  # the served parameters follow by an event
    while time.time() < end and ctl_json("dh", "status")["served"]["source"] != "rfc7919":
        time.sleep(0.2)
    # An invalid file: refused by the field, nothing stored, mode unchanged.
    bad = os.path.join(os.environ["TB_TMP"], "bad-dh.pem")
    with open(bad, "w") as f:
        f.write("-----BEGIN DH PARAMETERS-----\nMAYCAQI=\n-----END DH PARAMETERS-----\n")
    before = ctl_json("dh", "status")
    d.find_element(By.ID, "dh-import-file").send_keys(bad)
    d.find_element(By.CSS_SELECTOR, "#dh-import-form button[type=submit]").click()
    err = wait(d, EC.visibility_of_element_located((By.ID, "dh-import-file-err")))
    check("refused" in err.text, "an invalid DH file is refused with the message by the field", err.text)
    after = ctl_json("dh", "status")
    # (params.generated may change meanwhile: the switch to "generated" above
    # started a generation that runs on in the background.)
    check(after["params"]["import"] == before["params"]["import"] is None and after["mode"] == before["mode"]
          and after["served"]["fingerprint"] == before["served"]["fingerprint"],
          "and nothing changes: nothing imported, same mode, same parameters served",
          f"before {before}\nafter {after}")
    shot(d, "12-plugin-dhparam")
    # A generation: the page shows the run tlsboxctl reports (running with
    # its stage, or done when it was quicker than the page).
    # The first generation (started by the switch to "generated") ends
    # first: one runs at a time, the button is disabled meanwhile.
    end = time.time() + 240
    while time.time() < end and ctl_json("dh", "status")["generation"]:
        time.sleep(0.5)
    d.find_element(By.CSS_SELECTOR, "#dh-bits option[value='2048']").click()
    wait(d, EC.element_to_be_clickable((By.ID, "dh-generate")), 15).click()
    wait(d, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "#dh-generate-form .status"), "started"))
    run = int(d.find_element(By.CSS_SELECTOR, "#dh-generate-form .status").text.split()[1])
    # Only a line about this run names it: the previous run's "Last
    # generation (run N-1): 2048 bits, done" stays on the page until the
    # first status read after the POST.
    prog = wait(d, lambda _: (lambda t: t if f"(run {run})" in t else False)(d.find_element(By.ID, "dh-progress").text))
    st = ctl_json("dh", "status")
    g, last = st["generation"], st["last_run"]
    if prog.startswith(f"Generating 2048 bits (run {run}): "):
        # Running when the page looked: tlsboxctl sees it running, or done since.
        check("s elapsed" in prog and ((g and g["id"] == run) or (last and last["id"] == run)),
              "the page shows the running generation's stage and elapsed time", f"{prog} / {st}")
    else:
        check(last and last["id"] == run and prog.startswith(f"Last generation (run {run}): 2048 bits, {last['state']}"),
              "the page shows the generation, done before it looked", f"{prog} / {last}")
    shot(d, "13-plugin-dhparam-generating")
    # A run stopped by a dhparam.bits change is stored as cancelled with the
    # reason (67_dh_cancel makes one for real); the page calls it cancelled.
    # Recorded here with sqlite3 once no run is going, to keep this short.
    end = time.time() + 120
    while time.time() < end and ctl_json("dh", "status")["generation"]:
        time.sleep(0.5)
    db = sqlite3.connect(os.path.join(os.environ["TB_STATE"], "tlsbox.db"), timeout=10)
    with db:
        cur = db.execute("INSERT INTO dhparam_runs (bits, reason, state, stage, attempts, requested_at,"
                         " started_at, finished_at, error) VALUES (4096, 'bits', 'cancelled', 'cancelled', 1,"
                         " strftime('%s'), strftime('%s'), strftime('%s'),"
                         " 'cancelled: dhparam.bits is now 2048')")
        cancelled = cur.lastrowid
    db.close()
    prog = wait(d, lambda _: (lambda t: t if f"(run {cancelled})" in t else False)(
        d.find_element(By.ID, "dh-progress").text), 15)
    last = ctl_json("dh", "status")["last_run"]
    check(last["id"] == cancelled and last.get("outcome") == "cancelled" and
          prog.startswith(f"Last generation (run {cancelled}): 4096 bits, cancelled (dhparam.bits is now 2048)")
          and "failed" not in prog,
          "the page shows a run stopped by a size change as cancelled, with why", f"{prog} / {last}")


def bench_page(d):
    """The bench plugin's page: a run, its live progress and results, the
    ceiling, the report, the stored runs and a comparison, each compared
    with what tlsboxctl bench show/compare says of the same stored run."""
    link = wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "#menu a[data-page='p/bench']")))
    link.click()
    wait(d, EC.presence_of_element_located((By.ID, "bench-form")))
    ids = []
    for _ in range(2):
        d.find_element(By.CSS_SELECTOR, "#bench-scenario option[value=https-new]").click()
        for fid, v in (("bench-requests", "200"), ("bench-concurrency", "4")):
            e = d.find_element(By.ID, fid)
            e.clear()
            e.send_keys(v)
        d.find_element(By.CSS_SELECTOR, "#bench-form button[type=submit]").click()
        ok = wait(d, lambda _: (lambda t: t if t.endswith(" done.") and int(t.split()[1]) not in ids
                                else False)(d.find_element(By.ID, "bench-progress").text), 60)
        ids.append(int(ok.split()[1]))
    run = ctl_json("bench", "show", str(ids[1]))
    x = run["results"][0]["result"]
    row = [td.text for td in d.find_elements(By.CSS_SELECTOR, "#bench-result-table tbody tr td")]
    check(row[:6] == ["https-new", str(x["complete"]), str(x["failed"]), str(x["retried"]), str(x["not_sent"]),
                      f"{x['rps']:.1f}"]
          and x["complete"] == 200,
          f"a run from the page: its table shows what bench show {ids[1]} stored ({x['rps']:.1f} req/s, "
          f"{x['retried']} retried, {x['not_sent']} not sent)", row)
    check(row[11] == f"{x['handshakes']['full']} / {x['handshakes']['resumed']}" and row[6 + 1 + 3] ==
          f"{x['latency_ms']['100']:.2f}", "with its handshakes and latency percentiles", row)
    # The stored runs and the comparison of the two.
    wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, f"#bench-runs input[name=cmp-b][value='{ids[1]}']")))
    d.find_element(By.CSS_SELECTOR, f"#bench-runs input[name=cmp-a][value='{ids[0]}']").click()
    d.find_element(By.CSS_SELECTOR, f"#bench-runs input[name=cmp-b][value='{ids[1]}']").click()
    d.find_element(By.ID, "bench-compare-btn").click()
    cmp_row = wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "#bench-compare-table tbody tr")))
    want = ctl_json("bench", "compare", str(ids[0]), str(ids[1]))["rows"][0]
    cells = [td.text for td in cmp_row.find_elements(By.TAG_NAME, "td")]
    check(cells[:4] == ["https-new", f"{want['a_rps']:.1f}", f"{want['b_rps']:.1f}", f"{want['rps_ratio']:.2f}"],
          "comparing the two stored runs shows what bench compare says", cells)
    # The crypto ceiling, then the achieved/ceiling column of a new run.
    d.find_element(By.ID, "bench-ceiling").click()
    ceil = wait(d, EC.presence_of_element_located((By.ID, "bench-ceiling-table")), 120)
    cid = int(d.find_element(By.ID, "bench-progress").text.split()[1])
    check(cid > ids[1], "the ceiling is measured from the page", cid)
    c = ctl_json("bench", "show", str(cid))["results"][0]["result"]
    hs = f"{c['handshakes_per_core']['ecdsa-p256+x25519']:.0f}"
    check(any(r.text.split()[-2:] == ["ecdsa-p256+x25519", hs] for r in ceil.find_elements(By.CSS_SELECTOR, "tbody tr")),
          f"the ceiling table shows bench show {cid}'s handshakes per core ({hs})", ceil.text[:300])
    shot(d, "15-plugin-bench-ceiling")
    # The report: several steps, whose progress the page follows.
    d.find_element(By.ID, "bench-requests").clear()
    d.find_element(By.ID, "bench-requests").send_keys("500")
    d.find_element(By.ID, "bench-report").click()
    seen = set()
    end = time.time() + 240
    while time.time() < end and not d.find_elements(By.ID, "bench-report-table"):
        seen.add(d.find_element(By.ID, "bench-progress").text)
        time.sleep(0.1)
    steps = [t for t in seen if " of 9)" in t]
    check(len(steps) >= 1, "the report's progress is shown while it runs (step k of 9)", sorted(seen)[:6])
    rid = int(d.find_element(By.ID, "bench-progress").text.split()[1])
    rep = ctl_json("bench", "show", str(rid))["info"]["report"]
    rows = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            for tr in d.find_elements(By.CSS_SELECTOR, "#bench-report-table tbody tr")]
    check(len(rows) == len(rep) and all(r[0] == q["question"] and r[5] == (f"×{q['ratio']:.2f}" if q["ratio"]
                                                                             else q.get("note") or "–")
                                        for r, q in zip(rows, rep)),
          f"the report table shows bench show {rid}'s questions and ratios", rows[:2])
    step = {r["name"]: r["result"] for r in ctl_json("bench", "show", str(rid))["results"]}["https-new"]
    hs_row = [tr for tr in d.find_elements(By.CSS_SELECTOR, "#bench-result-table tbody tr")
              if tr.find_element(By.TAG_NAME, "td").text == "https-new"][0]
    want = f"({step['ceiling']['ratio'] * 100:.0f} %)" if step.get("ceiling", {}).get("ratio") else "missing"
    check(hs_row.text.endswith(want), f"its new-connection step shows achieved / ceiling {want}", hs_row.text)
    shot(d, "16-plugin-bench-report")


def phone_and_keyboard(d):
    d.set_window_size(390, 844)
    open_page(d, "dashboard", "#chart-cpu")
    toggle = d.find_element(By.ID, "menu-toggle")
    check(toggle.is_displayed(), "phone width: the menu folds behind a button")
    toggle.send_keys(Keys.ENTER)
    wait(d, EC.visibility_of_element_located((By.CSS_SELECTOR, "#menu a[data-page=policy]")))
    check(True, "the menu opens from the keyboard")
    wait(d, lambda _: d.find_element(By.ID, "n-cpu").text != "–")
    wide = d.execute_script("return document.documentElement.scrollWidth")
    check(wide <= 390, "no horizontal scrolling at phone width", wide)
    shot(d, "09-phone-dashboard")
    for page, ready in (("p/ocsp", "#ocsp-rows tr"), ("p/dhparam", "#dh-served-bits"),
                        ("p/bench", "#bench-runs table")):
        open_page(d, page, ready)
        wide = d.execute_script("return document.documentElement.scrollWidth")
        check(wide <= 390, f"no horizontal scrolling on {page} at phone width", wide)
    shot(d, "14-phone-dhparam")
    open_page(d, "dashboard", "#chart-cpu")  # logging in again returns to this page
    d.set_window_size(1280, 900)
    # Log out and in again with the keyboard alone.
    d.find_element(By.ID, "logout").click()
    pw = wait(d, EC.presence_of_element_located((By.NAME, "password")))
    shot(d, "10-login")
    pw.send_keys("wrong password!!", Keys.ENTER)
    err = wait(d, EC.visibility_of_element_located((By.CSS_SELECTOR, "form .status.error")))
    check("wrong" in err.text, "a wrong password is reported in the form", err.text)
    pw.clear()
    pw.send_keys(PASSWORD, Keys.ENTER)
    ok = wait(d, EC.text_to_be_present_in_element((By.ID, "page-title"), "Dashboard"))
    check(ok, "log in with the keyboard alone")
    errs = wait(d, EC.text_to_be_present_in_element((By.ID, "last-errors"), "login.failed"))
    check(errs, "the dashboard lists the failed login under last errors")


def page_weight(d):
    """Bytes and requests of a fresh load of each page (cache off)."""
    d.execute_cdp_cmd("Network.enable", {})
    d.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
    lines = ["page          requests (files + API)   bytes transferred (files + API)"]
    for page, ready in (("dashboard", "#n-cpu"), ("policy", "#preset-form"), ("certs", "#cert-table"),
                        ("plugins", "#settings-site"), ("audit", "#audit-rows tr"),
                        ("p/example", "#example-greeting"), ("p/ocsp", "#ocsp-rows tr"),
                        ("p/dhparam", "#dh-served-bits"), ("p/bench", "#bench-runs table")):
        d.get(f"{BASE}/?fresh={page.replace('/', '-')}#/{page}")
        wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, ready)))
        time.sleep(1.5)
        nf, bf, na, ba = d.execute_script(
            "const e = performance.getEntriesByType('navigation').concat("
            "performance.getEntriesByType('resource')).filter(x => !x.name.endsWith('/api/v1/live'));"
            "const api = e.filter(x => x.name.includes('/api/v1/'));"
            "const files = e.filter(x => !x.name.includes('/api/v1/'));"
            "const sum = (l) => l.reduce((a, x) => a + (x.transferSize || 0), 0);"
            "return [files.length, sum(files), api.length, sum(api)];")
        lines.append(f"{page:13} {nf + na:4} ({nf} + {na}){'':12} {bf + ba:7} ({bf} + {ba})")
    with open(os.path.join(ART, "page-weight.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    for l in lines:
        print("# " + l, flush=True)
    check(len(lines) == 10, "page weight measured for every page")


def run_steps(*steps):
    """A browser, the first run with the setup token, then each step: one
    that times out or loses the browser is one failed check, and the next
    step runs.  Returns the exit status of the run."""
    d = browser()
    try:
        first_run(d)
        for step in steps:
            try:
                step(d)
            except (TimeoutException, WebDriverException, subprocess.TimeoutExpired) as e:
                check(False, f"{step.__name__} finished", repr(e)[:600])
    finally:
        d.quit()
    return 1 if failures else 0


def main():
    os.makedirs(ART, exist_ok=True)
    d = browser()
    try:
        for step in (first_run, policy_modern_and_rollback, dashboard_under_load, settings_refused,
                     secret_setting, other_pages, audit_older, ocsp_page, dh_page, bench_page,
                     phone_and_keyboard, page_weight):
            try:
                step(d)
            except (TimeoutException, WebDriverException, subprocess.TimeoutExpired) as e:
                check(False, f"{step.__name__} finished", repr(e)[:600])
                shot(d, f"failed-{step.__name__}")
        # 4xx replies are the refusals this run provokes on purpose (bad raw
        # string, out-of-range value, wrong password); anything else counts.
        logs = [l for l in d.get_log("browser") if l["level"] == "SEVERE"
                and "responded with a status of 4" not in l["message"]]
        check(not logs, "no errors in the browser console", json.dumps(logs)[:800])
    finally:
        d.quit()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
