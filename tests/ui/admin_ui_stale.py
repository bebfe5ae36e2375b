#!/usr/bin/python3
"""What the pages show and send after a change, in headless Chromium: a
secret saved from its form is not sent again by the next Save (so "set it
empty" ticked afterwards empties it).  Helpers and output format as in admin_ui.py
("PASS", "FAIL", "# ..."), read by 62_admin_ui_stale.sh.

Environment: as admin_ui.py."""
import sys

from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By

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


if __name__ == "__main__":
    sys.exit(A.run_steps(secret_set_empty_after_save))
