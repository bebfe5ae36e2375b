#!/usr/bin/python3
"""A site that could not start, mended from the Plugins page in headless
Chromium: its card says it failed and why; a bind address this machine
has, saved in its form, starts it without a restart, and the card and the
form say so; its Disable and Enable buttons stop and start it at once;
Restart tlsboxd, not under systemd, says why it cannot.  Helpers and output format as in admin_ui.py ("PASS", "FAIL",
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


def badge_says(d, badge, text):
    """Wait (20 s at most) until the card's badge says @text; its text then."""
    try:
        A.wait(d, lambda _: badge.text == text, 20)
    except TimeoutException:
        pass
    return badge.text


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
    A.check(badge_says(d, badge, "running") == "running",
            "once the form is saved, the card says the site runs", badge.text)
    st = d.find_element(By.CSS_SELECTOR, "#settings-site .status")
    A.check(st.text == "Saved: bind. site runs now.", "the form says so", st.text)
    A.check(not why.is_displayed(), "the reason is gone from the card", why.text)
    A.check(site_status() == 200, "the site answers, without a restart", site_status())
    A.check(A.ctl("get", "site.bind").strip() == "127.0.0.1", "the new address is stored",
            A.ctl("get", "site.bind"))
    A.shot(d, "02-site-mended")


def site_disabled_and_enabled(d):
    """Disable, then Enable, on the site's card: it stops and starts at once."""
    A.open_page(d, "plugins", "#toggle-site")
    badge = d.find_element(By.CSS_SELECTOR, "#plugin-site h2 .badge")
    button = d.find_element(By.ID, "toggle-site")
    A.check(button.text == "Disable", "a running plugin's button says Disable", button.text)
    button.click()
    A.check(badge_says(d, badge, "disabled") == "disabled", "clicked: the card says disabled",
            badge.text)
    st = d.find_element(By.ID, "toggle-status-site")
    A.check(st.text == "site is stopped and disabled.", "the card says so", st.text)
    A.check(site_status() != 200, "the site no longer answers", site_status())
    A.check(A.ctl("get", "core.plugins_disabled").strip() == "site", "core.plugins_disabled names it",
            A.ctl("get", "core.plugins_disabled"))
    A.shot(d, "03-site-disabled")
    A.check(button.text == "Enable", "the button now says Enable", button.text)
    button.click()
    A.check(badge_says(d, badge, "running") == "running", "Enable: the card says the site runs",
            badge.text)
    A.check(st.text == "site runs now.", "the card says so", st.text)
    A.check(site_status() == 200, "the site answers again, without a restart", site_status())
    A.check(button.text == "Disable", "and the button says Disable again", button.text)
    A.shot(d, "04-site-enabled")


def restart_refused(d):
    """Restart tlsboxd, asked of a tlsboxd that systemd did not start: the
    card says why it cannot, and the same process runs on."""
    A.open_page(d, "plugins", "#restart")
    pid = A.ctl_json("status")["pid"]
    d.find_element(By.ID, "restart").click()
    st = d.find_element(By.ID, "restart-status")
    try:
        A.wait(d, lambda _: st.text != "", 10)
    except TimeoutException:
        pass
    A.check(st.text.startswith("tlsboxd was not started by systemd (tlsbox.service)"),
            "Restart, not under systemd: the card says why it cannot", st.text)
    A.check(A.ctl_json("status")["pid"] == pid, "and the same tlsboxd runs on", pid)
    A.shot(d, "05-restart-refused")


if __name__ == "__main__":
    sys.exit(A.run_steps(failed_site_mended, site_disabled_and_enabled, restart_refused))
