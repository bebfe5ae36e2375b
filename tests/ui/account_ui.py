#!/usr/bin/python3
"""The account page in headless Chromium: reached from the user name at the
top; a repeat typo, a wrong current password and a too short new one are
refused in place and change nothing (the old password still logs in); a
good change ends the session, the login form says why, the new password
logs in and the old one no longer does.  Helpers and output format as in
admin_ui.py; run by 68_admin_account.sh.

Environment: as admin_ui.py."""
import json
import os
import ssl
import sys
import urllib.error
import urllib.request

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC

import admin_ui as A

NEW = "a new ui password 2"


def api_login(password):
    """The HTTP status of a login as admin with @password, outside the browser."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(f"{A.BASE}/api/v1/session/login", method="POST",
                                 data=json.dumps({"user": "admin", "password": password}).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def change(d, current, new, again):
    """Fill and send the form; the status line's text once it says something."""
    for css, v in (("#pw-current", current), ("#pw-new", new), ("#pw-again", again)):
        e = d.find_element(By.CSS_SELECTOR, css)
        e.clear()
        e.send_keys(v)
    d.find_element(By.ID, "pw-save").click()


def status_says(d):
    A.wait(d, lambda _: d.find_element(By.ID, "pw-status").text != "", 20)
    return d.find_element(By.ID, "pw-status").text


def account(d):
    who = A.wait(d, EC.element_to_be_clickable((By.ID, "who")))
    A.check(who.text == "admin", "the user name is shown at the top", who.text)
    who.click()
    A.wait(d, EC.text_to_be_present_in_element((By.ID, "page-title"), "Account"))
    A.check(d.find_element(By.ID, "account-user").text == "Logged in as admin.",
            "it opens the account page", d.find_element(By.ID, "account-user").text)
    A.check(not d.find_elements(By.CSS_SELECTOR, "#menu a[data-page=account]"),
            "the account page is not one more menu entry")
    A.shot(d, "account")

    change(d, A.PASSWORD, NEW, NEW + "x")
    said = status_says(d)
    A.check(said == "The two new passwords differ: nothing was changed.",
            "a typo in the repeat is caught before anything is sent", said)
    change(d, "not the password", NEW, NEW)
    said = status_says(d)
    A.check(said == "current_password is wrong: nothing was changed.",
            "a wrong current password is refused, saying so", said)
    change(d, A.PASSWORD, "short", "short")
    said = status_says(d)
    A.check(said == "password: at least 10 characters: nothing was changed.",
            "a too short new password is refused with the box's rule", said)
    A.check(api_login(A.PASSWORD) == 200, "after the refusals the old password still logs in")

    change(d, A.PASSWORD, NEW, NEW)
    form = A.wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "form input[name=password]")), 20)
    intro = d.find_element(By.CSS_SELECTOR, "main form p").text
    A.check(intro == "Password changed. Every session of admin has ended: log in with the new password.",
            "a good change: the login form says every session has ended, and why", intro)
    A.check(d.find_element(By.ID, "who").text == "", "no user is shown at the top any more")
    A.shot(d, "account-changed")
    form.send_keys(NEW)
    d.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    ok = A.wait(d, EC.text_to_be_present_in_element((By.ID, "page-title"), "Account"), 20)
    A.check(ok, "the new password logs in, back on the account page")
    A.check(api_login(A.PASSWORD) == 401, "the old password no longer logs in")
    A.check(api_login(NEW) == 200, "the new one does")


if __name__ == "__main__":
    sys.exit(A.run_steps(account))
