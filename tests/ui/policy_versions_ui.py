#!/usr/bin/python3
"""The TLS policy page's version menus, in headless Chromium: a stored
policy the form cannot express must not be shown or saved back changed.
62_admin_ui_policy_versions.sh stores compat with max_version TLS1.1
(tlsboxctl); the form must show TLS1.1 as the highest version, keep it
when another field is applied, and set TLS1.0, which the policy accepts.
Such a policy is custom: the preset menu must show that (it showed blank).
Output as admin_ui.py's; environment as its."""
import sys

from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By

import admin_ui as A

VERSIONS = ["TLS1.0", "TLS1.1", "TLS1.2", "TLS1.3"]


def stored():
    p = A.ctl_json("policy", "show")
    return p["id"], p["policy"]


def applied(d, seconds=20):
    """The fields form's status line once it says what happened (or after @seconds)."""
    st = "#fields-form .status"
    try:
        A.wait(d, lambda _: d.find_element(By.CSS_SELECTOR, st).text != "", seconds)
    except TimeoutException:
        pass
    return d.find_element(By.CSS_SELECTOR, st).text


def versions_as_stored(d):
    vid, p = stored()
    A.check(p["min_version"] == "TLS1.0" and p["max_version"] == "TLS1.1",
            "tlsboxctl stored min_version TLS1.0, max_version TLS1.1", p)
    A.open_page(d, "policy", "#fields-form")
    for k in ("min_version", "max_version"):
        opts = [o.get_attribute("value") for o in
                d.find_elements(By.CSS_SELECTOR, f"#pf-{k} option")]
        A.check(opts == VERSIONS, f"the {k} menu offers every version the policy accepts", opts)
    shown = {k: d.execute_script(f"return document.getElementById('pf-{k}').value")
             for k in ("min_version", "max_version")}
    A.check(shown == {"min_version": "TLS1.0", "max_version": "TLS1.1"},
            "the form shows the stored versions (highest TLS1.1)", shown)

    # compat with another version is custom: the preset menu says so (it
    # showed blank), and cannot apply it.
    A.check(p["preset"] == "custom", "the stored policy is custom", p["preset"])
    menu = d.execute_script(
        "const s = document.getElementById('preset'), o = s.selectedOptions[0];"
        "return [s.value, o ? o.text : null, o ? o.disabled : null,"
        " [...s.options].filter((x) => !x.disabled).map((x) => x.value)]")
    A.check(menu == ["custom", "Custom: edited after a preset", True,
                     ["modern", "intermediate", "compat"]],
            "the preset menu shows custom, selected and not choosable, besides the three presets",
            menu)
    d.find_element(By.ID, "preset-apply").click()
    said = d.find_element(By.CSS_SELECTOR, "#preset-form .status").text
    A.check(said == "The active policy is custom: choose a preset to preview or apply."
            and stored()[0] == vid,
            "Apply preset with custom shown: asks for a preset, stores nothing", said)

    # Another field applied: the versions go back as they were.
    h = d.find_element(By.ID, "pf-hsts_max_age")
    h.clear()
    h.send_keys("600")
    d.find_element(By.CSS_SELECTOR, "#fields-form button[type=submit]").click()
    said = applied(d)
    nid, p = stored()
    A.check(said == f"Applied: now version {vid + 1}." and nid == vid + 1,
            "HSTS max-age applied from the form", said)
    A.check((p["hsts_max_age"], p["min_version"], p["max_version"]) == (600, "TLS1.0", "TLS1.1"),
            "and the stored versions are unchanged", p)

    # A highest version below TLS 1.2, as tlsboxctl could set it.
    d.find_element(By.CSS_SELECTOR, "#pf-max_version option[value='TLS1.0']").click()
    d.find_element(By.CSS_SELECTOR, "#fields-form button[type=submit]").click()
    said = applied(d)
    nid2, p = stored()
    A.check(said == f"Applied: now version {nid + 1}." and p["max_version"] == "TLS1.0",
            "highest version TLS1.0 set from the form", f"{said} {p['max_version']}")


if __name__ == "__main__":
    sys.exit(A.run_steps(versions_as_stored))
