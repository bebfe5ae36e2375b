#!/usr/bin/python3
"""A site that could not start, mended from the Plugins page in headless
Chromium: its card says it failed and why; a bind address this machine
has, saved in its form, starts it without a restart, and the card and the
form say so.  Helpers and output format as in admin_ui.py ("PASS", "FAIL",
"# ..."), read by 62_admin_ui_mend.sh.

Environment: as admin_ui.py."""
import ssl
import sys
import urllib.request

from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By

import admin_ui as A


def site_status():
    """The HTTP status of the site's front page, or the error met."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        return urllib.request.urlopen(f"https://{A.SITE}/", context=ctx, timeout=5).status
    except Exception as e:  # refused, reset: a string, never 200
        return type(e).__name__


def failed_site_mended(d):
    A.open_page(d, "plugins", "#set-site-bind")
    badge = d.find_element(By.CSS_SELECTOR, "#plugin-site h2 .badge")
    A.check(badge.text == "failed", "the site's card says it failed", badge.text)
    why = d.find_element(By.ID, "error-site")
    A.check("site.bind: cannot listen on 192.0.2.1" in why.text, "and why", why.text)
    A.check(site_status() != 200, "the site does not answer", site_status())
    A.shot(d, "01-site-failed")
    f = d.find_element(By.ID, "set-site-bind")
    f.clear()
    f.send_keys("127.0.0.1")
    d.find_element(By.CSS_SELECTOR, "#settings-site button[type=submit]").click()
    try:
        A.wait(d, lambda _: badge.text == "running", 20)
    except TimeoutException:
        pass
    A.check(badge.text == "running", "once the form is saved, the card says the site runs", badge.text)
    st = d.find_element(By.CSS_SELECTOR, "#settings-site .status")
    A.check(st.text == "Saved: bind. site runs now.", "the form says so", st.text)
    A.check(not why.is_displayed(), "the reason is gone from the card", why.text)
    A.check(site_status() == 200, "the site answers, without a restart", site_status())
    A.check(A.ctl("get", "site.bind").strip() == "127.0.0.1", "the new address is stored",
            A.ctl("get", "site.bind"))
    A.shot(d, "02-site-mended")


if __name__ == "__main__":
    sys.exit(A.run_steps(failed_site_mended))
