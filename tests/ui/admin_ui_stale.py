#!/usr/bin/python3
"""What the pages show and send after a change, in headless Chromium: a
secret saved from its form is not sent again by the next Save (so "set it
empty" ticked afterwards empties it); a plugin's Disable button starts from
core.plugins_disabled as stored now (changed meanwhile by the core's form or
by tlsboxctl), never from the value the page loaded with, and the other
cards follow; a Log out the box never answered says so and leaves the page
logged in, as the session is.  Helpers and output format as in admin_ui.py
("PASS", "FAIL", "# ..."), read by 62_admin_ui_stale.sh.

Environment: as admin_ui.py."""
import sys

from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC

import admin_ui as A


def text_is(d, css, want, seconds=20):
    """Wait (at most @seconds) until the element at @css says @want; its text then."""
    try:
        A.wait(d, lambda _: d.find_element(By.CSS_SELECTOR, css).text == want, seconds)
    except TimeoutException:
        pass
    return d.find_element(By.CSS_SELECTOR, css).text


def secret_set_empty_after_save(d):
    """admin.metrics_token typed and saved, then "set it empty" ticked on
    the same page (no reload) and saved: /metrics is off again."""
    token = "ui-stale-token-0123456789"
    A.open_page(d, "plugins", "#set-admin-metrics_token")
    d.find_element(By.CSS_SELECTOR, "#plugin-admin summary").click()
    field = d.find_element(By.ID, "set-admin-metrics_token")
    field.send_keys(token)
    d.find_element(By.CSS_SELECTOR, "#settings-admin button[type=submit]").click()
    said = text_is(d, "#settings-admin .status", "Saved: metrics_token.")
    A.check(said == "Saved: metrics_token." and A.metrics_status(token) == 200,
            "a metrics token saved from the form opens /metrics", said)
    A.check(field.get_attribute("value") == "", "the saved secret is no longer in its field",
            len(field.get_attribute("value")))
    d.find_element(By.ID, "set-admin-metrics_token-clear").click()
    d.find_element(By.CSS_SELECTOR, "#settings-admin button[type=submit]").click()
    said = text_is(d, "#settings-admin .status", "Saved: metrics_token.")
    A.check(said == "Saved: metrics_token.", "then \"set it empty\" and Save on the same page: saved", said)
    A.check(A.metrics_status(token) == 404, "and /metrics is off (the token is empty)",
            A.metrics_status(token))


def toggle_from_stored_value(d):
    """A plugin disabled by the core's form, then another by its card's
    button: both stay disabled, and the first card says so."""
    A.open_page(d, "plugins", "#toggle-example")
    d.find_element(By.CSS_SELECTOR, "#plugin-core summary").click()
    f = d.find_element(By.ID, "set-core-plugins_disabled")
    f.clear()
    f.send_keys("example")
    d.find_element(By.CSS_SELECTOR, "#settings-core button[type=submit]").click()
    said = text_is(d, "#settings-core .status", "Saved: plugins_disabled.")
    A.check(said == "Saved: plugins_disabled.", "the core's form disables example", said)
    A.check(text_is(d, "#toggle-example", "Enable") == "Enable",
            "example's button then says Enable", d.find_element(By.ID, "toggle-example").text)
    A.check(text_is(d, "#plugin-example h2 .badge", "disabled") == "disabled",
            "and its card says disabled", d.find_element(By.CSS_SELECTOR, "#plugin-example h2 .badge").text)
    d.find_element(By.ID, "toggle-bench").click()
    said = text_is(d, "#toggle-status-bench", "bench is stopped and disabled.")
    A.check(said == "bench is stopped and disabled.", "Disable on bench's card stops it", said)
    stored = A.ctl("get", "core.plugins_disabled").strip()
    A.check(stored == "example,bench", "core.plugins_disabled keeps example and adds bench", stored)
    state = {p["name"]: p["state"] for p in A.ctl_json("plugins")}
    A.check(state.get("example") == "disabled", "example was not started again", state)

    # Changed by tlsboxctl while the page is open: Enable on bench's card
    # leaves the newly named plugin (dhparam) disabled.
    A.ctl("set", "core.plugins_disabled", "example,bench,dhparam")
    d.find_element(By.ID, "toggle-bench").click()
    said = text_is(d, "#toggle-status-bench", "bench runs now.")
    A.check(said == "bench runs now.", "Enable on bench's card starts it", said)
    stored = A.ctl("get", "core.plugins_disabled").strip()
    A.check(stored == "example,dhparam", "core.plugins_disabled keeps what tlsboxctl set meanwhile",
            stored)
    A.check(text_is(d, "#toggle-dhparam", "Enable") == "Enable",
            "dhparam's button then says Enable", d.find_element(By.ID, "toggle-dhparam").text)
    A.ctl("set", "core.plugins_disabled", "")


def logout_unanswered(d):
    """Log out while the box cannot be reached: the page says it did not
    log out and stays as it was, since the session does; once the box
    answers, Log out ends it."""
    A.open_page(d, "audit", "#audit-rows tr")
    d.execute_cdp_cmd("Network.enable", {})
    d.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*/api/v1/session/logout"]})
    try:
        d.find_element(By.ID, "logout").click()
        err = A.wait(d, EC.presence_of_element_located((By.ID, "logout-error")), 10)
        A.check(err.text.startswith("Not logged out: ") and "still open" in err.text,
                "a Log out that never reached the box says it did not log out", err.text)
        A.check(d.find_element(By.ID, "who").text == "admin" and not d.find_elements(By.NAME, "password"),
                "and the page is not shown as logged out", d.find_element(By.ID, "main").text[:200])
    finally:
        d.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
    d.find_element(By.ID, "logout").click()
    A.wait(d, EC.presence_of_element_located((By.NAME, "password")), 10)
    d.refresh()
    pw = A.wait(d, EC.presence_of_element_located((By.NAME, "password")), 15)
    A.check(pw is not None and d.find_element(By.ID, "who").text == "",
            "Log out answered: a reload shows the login form")


if __name__ == "__main__":
    sys.exit(A.run_steps(secret_set_empty_after_save, toggle_from_stored_value, logout_unanswered))
