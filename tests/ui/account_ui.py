#!/usr/bin/python3
"""The account page in headless Chromium: reached from the user name at the
top; a repeat typo, a wrong current password and a too short new one are
refused in place and change nothing (the old password still logs in); a
good change ends the session, the login form says why, the new password
logs in and the old one no longer does.  Then two-factor login: turned on
with the secret shown once (as text, link and a QR code that zbarimg
must read back as the same URI) and confirmed by a code (computed as an app
does, tests/integration/totp_code.py), the login form asking for the code
after the password; ten recovery codes shown once, one logging in through
the same field, a new set made with another, one typed when the session
ends kept nowhere for the next login; turned off again.  Helpers and
output format as in admin_ui.py; run by 68_admin_account.sh.

Environment: as admin_ui.py."""
import json
import re
import os
import ssl
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from urllib.parse import parse_qs, urlparse

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC

import admin_ui as A
import admin_ui_live as L

NEW = "a new ui password 2"
TOTP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration", "totp_code.py")
STEP = os.path.join(tempfile.mkdtemp(), "totp.step")


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



def code(secret, offset=0):
    """The app's code for the next step the box has not seen used."""
    return subprocess.run([sys.executable, TOTP, secret, STEP, str(offset)], capture_output=True,
                          text=True, timeout=40, check=True).stdout.strip()


def totp_said(d, css, want):
    A.wait(d, EC.text_to_be_present_in_element((By.CSS_SELECTOR, css), want), 20)
    return d.find_element(By.CSS_SELECTOR, css).text


def scan_qr(d):
    """What a scanner reads off the page's QR code: zbarimg on a screenshot
    of it (kept in a directory removed at once: it holds the secret)."""
    png = d.find_element(By.ID, "totp-qr").screenshot_as_png
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "qr.png")
        with open(path, "wb") as f:
            f.write(png)
        r = subprocess.run(["zbarimg", "-q", "--raw", "-Sdisable", "-Sqrcode.enable", path],
                           capture_output=True, text=True, timeout=60, check=False)
    return r.stdout.rstrip("\n") if r.returncode == 0 else f"(zbarimg: {r.returncode})"


def shown_codes(d):
    """The recovery codes the card shows once."""
    box = A.wait(d, EC.presence_of_element_located((By.ID, "totp-recovery")), 20)
    return [li.text for li in box.find_elements(By.TAG_NAME, "li")]


def draft_keeps_no_code(d, secret, recovery):
    """A recovery code typed in the card when the session ends (a logout
    elsewhere) is not kept in the tab's storage for after the next login
    (drafts.js), nor put back into the field then: it is a password that
    logs in once."""
    d.find_element(By.ID, "totp-password").send_keys(NEW)
    d.find_element(By.ID, "totp-code").send_keys(recovery)
    A.check(L.log_out_elsewhere(d) == "login", "the session ends under a typed recovery code")
    d.find_element(By.ID, "totp-recovery-new").click()
    pw = A.wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "form input[name=password]")), 20)
    kept = d.execute_script("return sessionStorage.getItem('tlsbox.draft') || ''")
    A.check(recovery not in kept, "the login form comes, and the recovery code is not kept in the "
            "tab's storage", kept.replace(recovery, "(the recovery code)"))
    pw.send_keys(NEW)
    d.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    totp_said(d, "main form .status", "code")
    d.find_element(By.ID, "login-code").send_keys(code(secret))
    d.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    L.page_settled(d, "Account")
    box = d.find_element(By.ID, "totp-code")
    A.check(box.get_attribute("value") == "", "after logging in again, the code field is empty",
            box.get_attribute("value").replace(recovery, "(the recovery code)"))


def two_factor(d):
    A.open_page(d, "account", "#totp-state")
    A.check(d.find_element(By.ID, "totp-state").text == "Off: the password alone logs in.",
            "two-factor login: off at first", d.find_element(By.ID, "totp-state").text)
    d.find_element(By.ID, "totp-password").send_keys(NEW)
    d.find_element(By.ID, "totp-on").click()
    shown = A.wait(d, EC.presence_of_element_located((By.ID, "totp-secret")), 20).text
    secret = shown.replace(" ", "")
    A.check(len(secret) == 32 and shown.count(" ") == 7,
            "Turn on shows the secret once, in eight groups of four", shown)
    uri = d.find_element(By.ID, "totp-uri").get_attribute("href")
    A.check(uri.startswith("otpauth://totp/tlsbox:admin%40") and f"secret={secret}&" in uri,
            "and an otpauth link with the same secret for a phone's app", uri)
    scanned = scan_qr(d)
    A.check(scanned == uri, "the QR code beside it scans (zbarimg) as that same otpauth URI",
            f"read {len(scanned)} characters, the link has {len(uri)}")
    # From here the app's codes come from the secret as scanned.
    secret = parse_qs(urlparse(scanned).query).get("secret", [""])[0]
    A.shot(d, "account-totp-secret")
    d.find_element(By.ID, "totp-code").send_keys(code(secret, -5))
    d.find_element(By.ID, "totp-confirm").click()
    said = totp_said(d, "#totp-status", "does not match")
    A.check("the code does not match the new secret" in said, "a wrong code does not turn it on", said)
    box = d.find_element(By.ID, "totp-code")
    box.clear()
    box.send_keys(code(secret))
    d.find_element(By.ID, "totp-confirm").click()
    codes = shown_codes(d)
    A.check(len(codes) == 10 and len(set(codes)) == 10 and
            all(re.fullmatch(r"[a-z2-7]{5}-[a-z2-7]{5}", c) for c in codes),
            "the app's code turns it on, and ten recovery codes are shown, once", codes[:1])
    d.find_element(By.ID, "totp-recovery-done").click()
    said = totp_said(d, "#totp-status", "is on")
    A.check(said == "Two-factor login is on: the next login asks for a code.",
            "'I have saved them' leads back to the card, which says so", said)
    A.check(d.find_element(By.ID, "totp-state").text.startswith("On:"), "the card says on")
    A.check(d.find_element(By.ID, "totp-recovery-left").text == "Recovery codes left: 10 of 10.",
            "with 10 of 10 recovery codes left", d.find_element(By.ID, "totp-recovery-left").text)
    A.check(api_login(NEW) == 401, "the password alone no longer logs in (outside the browser)")

    d.find_element(By.ID, "logout").click()
    pw = A.wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "form input[name=password]")), 20)
    A.check(not d.find_element(By.ID, "login-code").is_displayed(),
            "the login form shows no code field at first")
    pw.send_keys(NEW)
    d.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    said = totp_said(d, "main form .status", "code")
    A.check(said == "enter the 6-digit code from your authenticator app",
            "after the password, the form asks for the code", said)
    box = d.find_element(By.ID, "login-code")
    A.check(box.is_displayed() and d.switch_to.active_element == box,
            "the code field appears, focused")
    A.shot(d, "login-code")
    box.send_keys(code(secret))
    d.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    ok = A.wait(d, EC.presence_of_element_located((By.ID, "page-title")), 20)
    A.check(ok and d.find_element(By.ID, "who").text == "admin", "password and code log in")

    # The phone is lost: a recovery code in the same field.
    d.find_element(By.ID, "logout").click()
    pw = A.wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "form input[name=password]")), 20)
    pw.send_keys(NEW)
    d.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    totp_said(d, "main form .status", "code")
    d.find_element(By.ID, "login-code").send_keys(codes[0])
    d.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    ok = A.wait(d, EC.presence_of_element_located((By.ID, "page-title")), 20)
    A.check(ok and d.find_element(By.ID, "who").text == "admin",
            "password and a recovery code log in through the same form")
    A.open_page(d, "account", "#totp-recovery-left")
    A.check(d.find_element(By.ID, "totp-recovery-left").text == "Recovery codes left: 9 of 10.",
            "the account page then says 9 are left", d.find_element(By.ID, "totp-recovery-left").text)
    d.find_element(By.ID, "totp-password").send_keys(NEW)
    d.find_element(By.ID, "totp-code").send_keys(codes[1])
    d.find_element(By.ID, "totp-recovery-new").click()
    fresh = shown_codes(d)
    A.check(len(fresh) == 10 and not set(fresh) & set(codes),
            "'New recovery codes' (password and a recovery code) shows ten new ones")
    d.find_element(By.ID, "totp-recovery-done").click()
    said = totp_said(d, "#totp-status", "in use")
    A.check(said == "New recovery codes are in use: the old ones no longer log in." and
            d.find_element(By.ID, "totp-recovery-left").text == "Recovery codes left: 10 of 10.",
            "and the card says the old ones are void, 10 of 10 left", said)
    draft_keeps_no_code(d, secret, fresh[0])

    A.open_page(d, "account", "#totp-off")
    d.find_element(By.ID, "totp-password").send_keys(NEW)
    d.find_element(By.ID, "totp-code").send_keys(code(secret))
    d.find_element(By.ID, "totp-off").click()
    said = totp_said(d, "#totp-status", "is off")
    A.check(said == "Two-factor login is off: the password alone logs in.",
            "password and a code turn it off", said)
    A.check(api_login(NEW) == 200, "the password alone logs in again")


if __name__ == "__main__":
    sys.exit(A.run_steps(account, two_factor))
