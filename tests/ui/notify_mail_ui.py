#!/usr/bin/python3
"""The notify plugin's page with e-mail set up, in headless Chromium: it
names the recipients and the mail server, "Send a test" (and "Test e-mail", the
only channel's own button) shows a delivery
by e-mail, delivered, with the server's SMTP answer, and the page holds no
SMTP password.  Helpers and output format as in admin_ui.py; run by
59_notify_mail.sh, whose mail server listens at MAIL_VIA.

Environment: as admin_ui.py, and MAIL_VIA, MAIL_TO (as the page lists
them), SMTP_PASSWORD."""
import os
import sys
import time

from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.common.by import By

import admin_ui as A

VIA = os.environ["MAIL_VIA"]
TO = os.environ["MAIL_TO"]


def newest(d):
    """The newest delivery's id and cells (the page redraws its rows while
    a delivery is under way: read again when one went stale)."""
    for _ in range(20):
        try:
            rows = d.find_elements(By.CSS_SELECTOR, "#notify-rows tr[data-id]")
            if not rows:
                return None, []
            return (rows[0].get_attribute("data-id"),
                    [c.text for c in rows[0].find_elements(By.TAG_NAME, "td")])
        except StaleElementReferenceException:
            time.sleep(0.1)
    return None, []


def mail_page(d):
    A.open_page(d, "p/notify", "#notify-rows tr")
    mail = d.find_element(By.ID, "notify-mail").text
    A.check(mail == f"E-mail: {TO} (through {VIA})",
            "the page names the recipients and the mail server", mail)
    before, _ = newest(d)
    d.find_element(By.ID, "notify-test").click()
    try:
        A.wait(d, lambda _: newest(d)[0] != before and "delivered" in newest(d)[1], 20)
    except TimeoutException:
        pass
    now, cells = newest(d)
    A.check(now != before, "Send a test adds a delivery", f"{before} -> {now}")
    A.check(cells[1:] == ["notify.test", "e-mail", "delivered", "1", "SMTP 250"],
            "Send a test: the newest row is the test by e-mail, delivered at the first try, SMTP 250",
            cells)
    hook, mail_btn = (d.find_element(By.ID, i) for i in ("notify-test-webhook", "notify-test-mail"))
    A.check(not hook.is_displayed() and mail_btn.is_displayed(),
            "no webhook set: only the e-mail line has its own test button")
    before = now
    mail_btn.click()
    try:
        A.wait(d, lambda _: newest(d)[0] != before and "delivered" in newest(d)[1], 20)
    except TimeoutException:
        pass
    now, cells = newest(d)
    A.check(cells[1:] == ["notify.test", "e-mail", "delivered", "1", "SMTP 250"],
            "Test e-mail: one more test, by e-mail, delivered", cells)
    st = d.find_element(By.ID, "notify-test-status").text
    A.check(st == "Test queued for e-mail only: its delivery shows below.", "and the status line says so", st)
    A.check(os.environ["SMTP_PASSWORD"] not in d.page_source, "and the page holds no SMTP password")
    A.shot(d, "notify-mail")


if __name__ == "__main__":
    sys.exit(A.run_steps(mail_page))
