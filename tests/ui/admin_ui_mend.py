#!/usr/bin/python3
"""A site that could not start, mended from the Plugins page in headless
Chromium: its card says it failed and why; a bind address this machine
has, saved in its form, starts it without a restart, and the card and the
form say so; its Disable and Enable buttons stop and start it at once;
the Recent settings changes card lists those changes and undoes one with a
click (a refused undo says why and changes nothing); a setting goes back
to its default with one click; Restart tlsboxd, not under systemd, says why it cannot.  Helpers and output format as in admin_ui.py ("PASS", "FAIL",
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


def changes_undone(d):
    """The Recent settings changes card: newest first; an undo the site
    refuses (the address it mended from) says why and changes nothing; a
    change made over says it cannot be undone; a Save shows up at once and
    its Undo puts the old value back into the store and the form."""
    A.open_page(d, "plugins", "#settings-changes tbody tr")
    hist = A.ctl_json("settings", "history")["changes"]
    enable, disable, mend = hist[0], hist[1], hist[2]
    A.check([i["key"] for i in mend["items"]] == ["site.bind"] and mend["items"][0]["old"] == "192.0.2.1",
            "the history has the mend: site.bind from 192.0.2.1", mend)
    rows = d.find_elements(By.CSS_SELECTOR, "#settings-changes tbody tr")
    A.check(rows[0].get_attribute("id") == f"change-{enable['id']}", "the card lists the newest first",
            rows[0].get_attribute("id"))
    row = d.find_element(By.ID, f"change-{mend['id']}")
    A.check("site.bind: 192.0.2.1 → 127.0.0.1" in row.text, "the mend's row says what changed", row.text)
    row = d.find_element(By.ID, f"change-{disable['id']}")
    A.check(f"cannot be undone: core.plugins_disabled was changed again by change {enable['id']}" in row.text,
            "the Disable's row says why it cannot be undone", row.text)
    A.shot(d, "05-changes")

    d.find_element(By.ID, f"undo-{mend['id']}").click()
    st = d.find_element(By.ID, "changes-status")
    try:
        A.wait(d, lambda _: st.text != "", 15)
    except TimeoutException:
        pass
    A.check(st.text.startswith(f"cannot undo settings change {mend['id']}: site.bind: cannot listen on 192.0.2.1"),
            "undoing the mend is refused: the site cannot listen there", st.text)
    A.check(A.ctl("get", "site.bind").strip() == "127.0.0.1", "site.bind stays 127.0.0.1",
            A.ctl("get", "site.bind"))
    A.check(site_status() == 200, "and the site answers", site_status())
    A.check(len(A.ctl_json("settings", "history")["changes"]) == len(hist), "no change was recorded",
            len(A.ctl_json("settings", "history")["changes"]))

    f = d.find_element(By.ID, "set-site-idle_timeout")
    old = f.get_attribute("value")
    f.clear()
    f.send_keys("31")
    d.find_element(By.CSS_SELECTOR, "#settings-site button[type=submit]").click()
    newest = None
    try:
        A.wait(d, lambda _: A.ctl("get", "site.idle_timeout").strip() == "31", 10)
        newest = A.ctl_json("settings", "history")["changes"][0]["id"]
        A.wait(d, lambda _: d.find_elements(By.ID, f"undo-{newest}"), 10)
    except TimeoutException:
        pass
    A.check(newest and d.find_elements(By.ID, f"undo-{newest}"),
            "a Save shows up on the card at once, with Undo", newest)
    d.find_element(By.ID, f"undo-{newest}").click()
    try:
        A.wait(d, lambda _: st.text.startswith(f"Change {newest} undone"), 15)
    except TimeoutException:
        pass
    A.check(st.text.startswith(f"Change {newest} undone (now change {newest + 1})."),
            "Undo says the change is undone", st.text)
    A.check(A.ctl("get", "site.idle_timeout").strip() == old,
            f"site.idle_timeout is {old} again in the store", A.ctl("get", "site.idle_timeout"))
    A.check(d.find_element(By.ID, "set-site-idle_timeout").get_attribute("value") == old,
            "and in the form", d.find_element(By.ID, "set-site-idle_timeout").get_attribute("value"))
    row = d.find_element(By.ID, f"change-{newest}")
    A.check(f"undone by change {newest + 1}" in row.text, "its row says it was undone", row.text)
    A.shot(d, "06-change-undone")


def reset_to_default(d):
    """A setting away from its default has Reset to default: one click
    stores no value, the form shows the default, and the history has it."""
    dflt = next(x for x in A.ctl_json("settings", "site") if x["key"] == "idle_timeout")["default"]
    A.open_page(d, "plugins", "#reset-site-idle_timeout")
    b = d.find_element(By.ID, "reset-site-idle_timeout")
    A.check(not b.is_displayed(), "at its default, idle_timeout offers no reset", b.text)
    f = d.find_element(By.ID, "set-site-idle_timeout")
    f.clear()
    f.send_keys("33")
    d.find_element(By.CSS_SELECTOR, "#settings-site button[type=submit]").click()
    try:
        A.wait(d, lambda _: b.is_displayed(), 10)
    except TimeoutException:
        pass
    A.check(b.is_displayed() and b.text == f"Reset to default ({dflt})",
            "saved as 33, it offers Reset to default, naming the default", b.text)
    other = d.find_element(By.ID, "reset-site-max_header_size")
    A.check(not other.is_displayed(), "a setting at its default does not", other.text)
    b.click()
    st = d.find_element(By.CSS_SELECTOR, "#settings-site .status")
    try:
        A.wait(d, lambda _: st.text != "", 15)
    except TimeoutException:
        pass
    A.check(st.text == "Reset: idle_timeout is back to its default.", "the form says so", st.text)
    A.check(A.ctl("get", "site.idle_timeout").strip() == dflt, f"site.idle_timeout is {dflt} again",
            A.ctl("get", "site.idle_timeout"))
    f = d.find_element(By.ID, "set-site-idle_timeout")
    A.check(f.get_attribute("value") == dflt, "the field shows the default", f.get_attribute("value"))
    A.check(not b.is_displayed(), "and the button is gone", b.text)
    items = A.ctl_json("settings", "history")["changes"][0]["items"]
    A.check(items == [{"key": "site.idle_timeout", "old": "33", "new": None, "secret": False}],
            "the history has it: 33 -> the default (no stored value)", items)
    A.shot(d, "07-reset-to-default")


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
    A.shot(d, "08-restart-refused")


if __name__ == "__main__":
    sys.exit(A.run_steps(failed_site_mended, site_disabled_and_enabled, changes_undone,
                             reset_to_default, restart_refused))
