#!/usr/bin/python3
"""A user's first steps in the admin web UI, as 62_admin_ui_journey.sh sets
them up (the demo daemon, a first run with the setup token): each step is
one thing such a user met that was wrong.  Output as admin_ui.py's;
environment as its.

- phone_width: at 375 px (an iPhone's width) no page scrolls sideways; the
  dashboard's charts kept the width they were first drawn at, and the
  notify page's table had no table-wrap; a page chosen from the folded
  menu left the menu open above it.
- plugin_menu: a plugin turned off on the plugins page leaves the menu at
  once (its entry led to "This page failed to load"), and turned on again
  comes back without a reload.
- fields_after_raw: with a raw priority string in use, the fields form's
  Apply made a new version and said "Applied" while the raw string went
  on being served: the fields replace it now.
- stale_applied: after a rollback (or another form's change) each form
  still said "Applied: now version N." of a version no longer active.
- bench_machine: a run's machine line read "memory kb 24683772, aes true"
  (JSON keys, KiB called kb); it says what tlsboxctl bench show says now,
  and the memory in GiB.
- no_null: the policy page's "Active" card ended in a line "null" (the
  absent "Not served" note): no page shows null, undefined or NaN.
- bench_refusals: the bench form's refusals went to the line under its
  buttons, and an emptied Requests field was refused as "requests 0 is
  out of range": each is said by its field now."""
import sys

from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC

import admin_ui as A


def sideways(d):
    """How far the page scrolls sideways (0: not at all)."""
    return d.execute_script("return document.documentElement.scrollWidth - "
                            "document.documentElement.clientWidth")


def phone_width(d):
    d.set_window_size(375, 812)
    try:
        A.open_page(d, "dashboard", "#chart-cpu")
        # The charts are drawn, and the live figures in, before measuring.
        A.wait(d, lambda _: d.find_element(By.ID, "n-cpu").text != "–")
        A.check(sideways(d) == 0, "375 px wide: the dashboard does not scroll sideways", sideways(d))
        A.open_page(d, "p/notify", "#notify-rows")
        A.wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "#notify-rows")))
        A.check(sideways(d) == 0, "375 px wide: the notify page does not scroll sideways", sideways(d))
        # The folded menu: open, a page chosen, folded again.
        d.find_element(By.ID, "menu-toggle").click()
        link = A.wait(d, EC.visibility_of_element_located((By.CSS_SELECTOR, "#menu a[data-page=policy]")))
        link.click()
        A.wait(d, EC.presence_of_element_located((By.ID, "preset-form")))
        A.check(not link.is_displayed() and
                d.find_element(By.ID, "menu-toggle").get_attribute("aria-expanded") == "false",
                "375 px wide: a page chosen from the menu folds the menu again")
    finally:
        d.set_window_size(1280, 900)


def menu_pages(d):
    return [a.get_attribute("data-page") for a in d.find_elements(By.CSS_SELECTOR, "#menu a")]


def toggle(d, name, want):
    d.find_element(By.ID, f"toggle-{name}").click()
    A.wait(d, lambda _: d.find_element(By.ID, f"toggle-status-{name}").text != "", 20)
    said = d.find_element(By.ID, f"toggle-status-{name}").text
    A.check(said == want, f"the bench card says: {want}", said)


def plugin_menu(d):
    A.open_page(d, "plugins", "#toggle-bench")
    A.check("p/bench" in menu_pages(d), "the menu has the bench page", menu_pages(d))
    toggle(d, "bench", "bench is stopped and disabled.")
    try:
        A.wait(d, lambda _: "p/bench" not in menu_pages(d), 10)
    except TimeoutException:
        pass
    A.check("p/bench" not in menu_pages(d), "turned off, bench leaves the menu without a reload",
            menu_pages(d))
    # Loaded again (with no bench in the menu either way): turned on, its
    # page must join the menu.
    A.open_page(d, "plugins", "#toggle-bench")
    d.refresh()
    A.wait(d, EC.presence_of_element_located((By.ID, "toggle-bench")))
    toggle(d, "bench", "bench runs now.")
    try:
        A.wait(d, lambda _: "p/bench" in menu_pages(d), 10)
    except TimeoutException:
        pass
    A.check("p/bench" in menu_pages(d), "turned on again, bench is back in the menu without a reload",
            menu_pages(d))
    A.check(d.find_element(By.CSS_SELECTOR, "#menu a[aria-current=page]").get_attribute("data-page")
            == "plugins", "and the menu still marks the plugins page as the one shown")
    d.find_element(By.CSS_SELECTOR, "#menu a[data-page='p/bench']").click()
    A.wait(d, EC.presence_of_element_located((By.ID, "bench-form")))
    A.check(True, "its entry opens the bench page")


def fields_after_raw(d):
    A.open_page(d, "policy", "#raw-form")
    raw = d.find_element(By.ID, "raw")
    raw.clear()
    raw.send_keys("NORMAL:-VERS-TLS1.0:-VERS-TLS1.1")
    d.find_element(By.ID, "raw-apply").click()
    A.wait(d, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "#raw-form .status"), "Applied"))
    A.check(A.tls_until("-tls1_2", True), "with the raw string the site accepts TLS 1.2")
    d.find_element(By.CSS_SELECTOR, "#pf-min_version option[value='TLS1.3']").click()
    d.find_element(By.CSS_SELECTOR, "#fields-form button[type=submit]").click()
    A.wait(d, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "#fields-form .status"), "Applied"))
    shown = A.ctl_json("policy", "show")
    said = d.find_element(By.CSS_SELECTOR, "#fields-form .status").text
    A.check(said == f"Applied: now version {shown['id']}." and shown["policy"]["priority_override"] == ""
            and shown["policy"]["min_version"] == "TLS1.3",
            "the fields applied replace the raw string (policy show)", f"{said} {shown['policy']}")
    prio = d.find_element(By.ID, "active-priority").text
    A.check("VERS-TLS1.3" in prio and "VERS-TLS1.2" not in prio and
            d.find_element(By.ID, "raw").get_attribute("value") == "",
            "the page shows the fields' priority string and an empty raw field", prio)
    A.check(A.tls_until("-tls1_2", False), "and the site refuses TLS 1.2 from then on")
    A.check(A.tls_accepts("-tls1_3"), "while it accepts TLS 1.3")


def form_says(d, form):
    return d.find_element(By.CSS_SELECTOR, f"#{form} .status").text


def stale_applied(d):
    A.open_page(d, "policy", "#preset-form")
    d.find_element(By.CSS_SELECTOR, "#preset option[value=modern]").click()
    d.find_element(By.ID, "preset-apply").click()
    A.wait(d, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "#preset-form .status"), "Applied"))
    h = d.find_element(By.ID, "pf-hsts_max_age")
    h.clear()
    h.send_keys("600")
    d.find_element(By.CSS_SELECTOR, "#fields-form button[type=submit]").click()
    A.wait(d, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "#fields-form .status"), "Applied"))
    now = A.ctl_json("policy", "show")["id"]
    A.check(form_says(d, "fields-form") == f"Applied: now version {now}." and
            form_says(d, "preset-form") == "",
            "the fields applied: the preset form no longer says its older version is applied",
            f"{form_says(d, 'preset-form')!r}")
    btn = A.wait(d, EC.element_to_be_clickable((By.CSS_SELECTOR, "button[data-version]")))
    version = btn.get_attribute("data-version")
    btn.click()
    A.wait(d, EC.text_to_be_present_in_element((By.ID, "history-status"), f"Rolled back to version {version}:"))
    said = [form_says(d, f) for f in ("preset-form", "fields-form", "raw-form")]
    A.check(said == ["", "", ""], "rolled back: no form still says a version is applied", said)


def bench_machine(d):
    A.open_page(d, "p/bench", "#bench-form")
    n = d.find_element(By.ID, "bench-requests")
    n.clear()
    n.send_keys("200")
    d.find_element(By.CSS_SELECTOR, "#bench-form button[type=submit]").click()
    line = A.wait(d, EC.presence_of_element_located((By.ID, "bench-machine")), 90).text
    run = max(A.ctl_json("bench", "list"), key=lambda r: r["id"])
    m = A.ctl_json("bench", "show", str(run["id"]))["machine"]
    want = (f"Machine: {m['cpu_model']}, {m['cores']} cores, governor {m['governor']}, "
            f"kernel {m['kernel']}, {m['arch']}, AES instructions {'yes' if m['aes'] else 'no'}, "
            f"memory {m['memory_kb'] / 1048576:.1f} GiB")
    A.check(line == want, "a run's machine line says the memory in GiB, as tlsboxctl bench show its other parts",
            f"{line!r} != {want!r}")
    said = [d.find_element(By.ID, "bench-progress").text,
            d.find_element(By.CSS_SELECTOR, "#bench-form p.status").text]
    A.check(said == [f"Run {run['id']} done.", ""],
            "the run done, the form no longer also says it started", said)


# Text nodes of the page saying null, undefined, NaN or [object Object].
JS_NULLS = """const out = [];
const w = document.createTreeWalker(document.getElementById("main"), NodeFilter.SHOW_TEXT);
while (w.nextNode()) {
  const t = w.currentNode.textContent;
  if (/\\b(null|undefined|NaN)\\b|\\[object Object\\]/.test(t)) out.push(t.slice(0, 80));
}
return out;"""


def no_null(d):
    A.open_page(d, "policy", "#preset-form")
    card = d.find_element(By.ID, "active-priority").find_element(By.XPATH, "..")
    shown = A.ctl_json("policy", "show")
    want = f"Active: version {shown['id']} ({shown['policy']['preset']})\n{shown['priority']}"
    A.check(card.text == want, "the policy page's Active card: its version and priority string, nothing more",
            f"{card.text!r}")
    pages = (("dashboard", "#last-errors"), ("policy", "#preview-clients"), ("certs", "#cert-table"),
             ("plugins", "#toggle-bench"), ("account", "#totp-state"), ("p/bench", "#bench-runs"))
    found = {}
    for page, ready in pages:
        A.open_page(d, page, ready)
        nulls = d.execute_script(JS_NULLS)
        if nulls:
            found[page] = nulls
    A.check(not found, "no page shows null, undefined or NaN", found)


def bench_refusals(d):
    A.open_page(d, "p/bench", "#bench-form")
    runs = len(A.ctl_json("bench", "list"))
    d.find_element(By.ID, "bench-requests").clear()
    d.find_element(By.ID, "bench-duration").clear()
    d.find_element(By.CSS_SELECTOR, "#bench-form button[type=submit]").click()
    err = A.wait(d, EC.visibility_of_element_located((By.ID, "bench-requests-err")))
    A.check(err.text == "Give a number of requests, or a duration below." and
            form_says(d, "bench-form") == "Not started: see the field marked above.",
            "emptied Requests and duration: said by the Requests field", err.text)
    n = d.find_element(By.ID, "bench-requests")
    n.send_keys("100")
    url = d.find_element(By.ID, "bench-url")
    url.send_keys("ftp://127.0.0.1/")
    d.find_element(By.CSS_SELECTOR, "#bench-form button[type=submit]").click()
    err = A.wait(d, EC.visibility_of_element_located((By.ID, "bench-url-err")))
    A.check(err.text.startswith("bench: url \"ftp://127.0.0.1/\" must start with http") and
            not d.find_element(By.ID, "bench-requests-err").is_displayed(),
            "a URL the box refuses: its message by the Target URL field, the Requests one gone", err.text)
    A.check(len(A.ctl_json("bench", "list")) == runs, "and neither started a run")
    url.clear()


if __name__ == "__main__":
    sys.exit(A.run_steps(phone_width, plugin_menu, fields_after_raw, stale_applied, bench_machine, no_null,
                         bench_refusals))
