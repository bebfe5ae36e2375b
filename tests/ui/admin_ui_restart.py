#!/usr/bin/python3
"""The Plugins page's Restart tlsboxd button under systemd, in headless
Chromium: the packaged service in packaging/check-install.sh's container.
The first run with the setup token, then Restart: the card says tlsboxd
restarted with the new process's pid (the one tlsboxctl status reports),
and the page, shown anew, is still logged in (sessions are in the store)
and names that pid.  Helpers and output format as in admin_ui.py.

Environment: as admin_ui.py; TLSBOXCTL runs tlsboxctl inside the
container (its first two arguments, --state-dir DIR, are dropped there:
the packaged tlsboxctl finds /run/tlsbox/control.sock itself)."""
import sys

from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC

import admin_ui as A


def first_run(d):
    """The setup URL names the box as its users reach it; the host reaches
    the container's admin UI at ADMIN_URL: the token is what matters."""
    url = A.ctl("admin", "setup-url").splitlines()[0]
    A.check("/#setup=" in url, "tlsboxctl admin setup-url in the container gives the first-run URL", url)
    d.get(A.BASE + "/#setup=" + url.split("/#setup=", 1)[-1])
    pw = A.wait(d, EC.presence_of_element_located((By.NAME, "password")))
    pw.send_keys(A.PASSWORD)
    d.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    A.check(A.wait(d, EC.text_to_be_present_in_element((By.ID, "page-title"), "Dashboard")),
            "the first run sets the password and opens the dashboard")


def card_text(d):
    try:
        return d.find_element(By.ID, "plugin-restart").text
    except Exception:  # the page is being shown anew
        return ""


def restart(d):
    A.open_page(d, "plugins", "#restart")
    pid0 = A.ctl_json("status")["pid"]
    A.check(f"pid {pid0}," in card_text(d), "the tlsboxd card names the running process", pid0)
    d.find_element(By.ID, "restart").click()
    st = d.find_element(By.ID, "restart-status")

    def said():
        try:
            return st.text
        except StaleElementReferenceException:
            return "(the page was shown anew)"
    try:
        A.wait(d, lambda _: said().startswith("tlsboxd restarted"), 60)
    except TimeoutException:
        pass
    text = said()
    pid1 = A.ctl_json("status")["pid"]
    A.check(text == f"tlsboxd restarted (pid {pid1}).",
            "Restart: the card says tlsboxd restarted, with the new process's pid", f"{text} / {pid1}")
    A.check(pid1 != pid0, "a new process runs", f"{pid0} -> {pid1}")
    try:
        A.wait(d, lambda _: f"pid {pid1}," in card_text(d), 20)
    except TimeoutException:
        pass
    A.check(f"pid {pid1}," in card_text(d) and d.find_elements(By.ID, "restart"),
            "the page, shown anew, is still logged in and names the new process", card_text(d))
    A.shot(d, "restart-systemd")


if __name__ == "__main__":
    d = A.browser()
    try:
        for step in (first_run, restart):
            try:
                step(d)
            except Exception as e:  # one failed check, and the next step runs
                A.check(False, f"{step.__name__} finished", repr(e)[:600])
    finally:
        d.quit()
    sys.exit(1 if A.failures else 0)
