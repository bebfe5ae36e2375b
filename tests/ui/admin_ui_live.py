#!/usr/bin/python3
"""The admin web UI's live view and session handling in headless Chromium,
as a user meets them; helpers and output format as in admin_ui.py ("PASS",
"FAIL", "# ..."), read by 64_admin_ui_live.sh.

Environment: as admin_ui.py."""
import json
import socket
import ssl
import subprocess
import sys
import time
import urllib.request

from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC

import admin_ui as A


def live_ticking(d):
    """Wait until the dashboard shows a live sample."""
    return A.wait(d, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "#main p[role=status]"), "live ·"))


def session_ends_on_dashboard(d):
    """The session ends while only the live stream talks to the box: the
    page must say so (the login form), not keep old figures as if live."""
    A.open_page(d, "dashboard", "#n-cpu")
    live_ticking(d)
    # A new password ends the user's sessions, as expiry would.
    r = subprocess.run(A.CTL + ["admin", "passwd", "admin"], input=A.PASSWORD + "\n",
                       capture_output=True, text=True, timeout=20)
    A.check(r.returncode == 0, "tlsboxctl admin passwd ends the session", r.stderr)
    try:
        pw = A.wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "#main input[name=password]")), 20)
    except TimeoutException:
        pw = None
    A.check(pw is not None, "the dashboard shows the login form once the session ended",
            d.find_element(By.ID, "main").text[:300])
    if not pw:
        return
    pw.send_keys(A.PASSWORD + "\n")
    A.wait(d, EC.text_to_be_present_in_element((By.ID, "page-title"), "Dashboard"))
    A.check(bool(live_ticking(d)), "after logging in again the dashboard is live again")


def session_ends_then_menu(d):
    """The session ended while a page without a live stream was open; the
    next click in the menu shows the login form, ready for the keyboard:
    typing the password and Enter opens the page clicked."""
    A.open_page(d, "audit", "#audit-rows tr")
    subprocess.run(A.CTL + ["admin", "passwd", "admin"], input=A.PASSWORD + "\n",
                   capture_output=True, text=True, timeout=20)
    d.find_element(By.CSS_SELECTOR, "#menu a[data-page=plugins]").click()
    A.wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "#main input[name=password]")))
    # The page's request failed after the form was shown: give its rest a moment.
    title = lambda: d.execute_script("return document.title")
    try:
        A.wait(d, lambda _: title() == "Log in · tlsbox", 5)
    except TimeoutException:
        pass
    A.check(title() == "Log in · tlsbox", "the window title says so", title())
    focused = d.execute_script("const a = document.activeElement; return a.tagName + ' ' + (a.name || a.id)")
    A.check(focused == "INPUT password", "the login form has the focus in its password field", focused)
    d.switch_to.active_element.send_keys(A.PASSWORD + "\n")
    try:
        A.wait(d, EC.presence_of_element_located((By.ID, "settings-site")), 20)
        shown = True
    except TimeoutException:
        shown = False
    A.check(shown, "typing the password and Enter logs in and opens the page clicked",
            d.find_element(By.ID, "main").text[:200])


def hidden_dashboards(d):
    """Dashboards left in minimized windows: a browser keeps six connections
    per host over HTTP/1.1, and a live stream holds one for as long as it
    is open, so hidden dashboards must let go of theirs or no other page of
    the box loads."""
    windows = []
    for i in range(6):
        if i:
            d.switch_to.new_window("window")
        windows.append(d.current_window_handle)
        A.open_page(d, "dashboard", "#n-cpu")
        live_ticking(d)
        d.minimize_window()
    status = lambda: d.find_element(By.CSS_SELECTOR, "#main p[role=status]").text
    A.check(status() == "paused while the page is hidden",
            "a minimized dashboard says its live data is paused", status())
    d.switch_to.new_window("window")
    try:
        A.open_page(d, "audit", "#audit-rows tr")
        loaded = True
    except (TimeoutException, WebDriverException):
        loaded = False
    A.check(loaded, "with six dashboards in minimized windows, the audit page loads in another one")
    d.close()
    d.switch_to.window(windows[0])
    d.set_window_size(1280, 900)
    before = status()
    ok = A.wait(d, lambda _: status().startswith("live ·") and status() != before)
    A.check(bool(ok), "shown again, a dashboard is live again", status())
    for w in windows[1:]:
        d.switch_to.window(w)
        d.close()
    d.switch_to.window(windows[0])


def relogin_in_other_window(d):
    """Logged out and in again in another window: the browser's cookie is
    then the new session, and a change made in the first window must still
    go through (as the same user), not fail on the old CSRF token."""
    A.open_page(d, "plugins", "#set-example-greeting")
    first = d.current_window_handle
    d.switch_to.new_window("window")
    A.open_page(d, "audit", "#audit-rows tr")
    d.find_element(By.ID, "logout").click()
    A.wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "#main input[name=password]"))).send_keys(
        A.PASSWORD + "\n")
    A.wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "#audit-rows tr")))
    d.close()
    d.switch_to.window(first)
    f = d.find_element(By.ID, "set-example-greeting")
    f.clear()
    f.send_keys("hello after a new login")
    d.find_element(By.CSS_SELECTOR, "#settings-example button[type=submit]").click()
    st = A.wait(d, EC.visibility_of_element_located((By.CSS_SELECTOR, "#settings-example .status")))
    A.wait(d, lambda _: st.text != "")
    A.check(st.text == "Saved: greeting.", "a change in the first window is saved", st.text)
    A.check(A.ctl("get", "example.greeting").strip() == "hello after a new login",
            "and tlsboxctl reads it back", A.ctl("get", "example.greeting"))


def log_out_elsewhere(d):
    """End the browser's session on the box as a logout in another tab does
    (POST session/logout with its cookie and token); the page is not told.
    Returns the session state the box then reports for that cookie."""
    cookie = "__Host-tlsbox=" + d.get_cookie("__Host-tlsbox")["value"]
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE

    def call(method, path, headers=None, body=None):
        rq = urllib.request.Request(f"{A.BASE}/api/v1/{path}", data=body, method=method,
                                    headers={"Cookie": cookie, **(headers or {})})
        with urllib.request.urlopen(rq, context=ctx, timeout=10) as r:
            return json.load(r)

    csrf = call("GET", "session")["csrf"]
    call("POST", "session/logout", {"X-CSRF-Token": csrf, "Content-Type": "application/json"}, b"{}")
    return call("GET", "session")["state"]


def page_settled(d, title):
    """Wait until the frame has shown the page titled so and handed it the
    focus, the last thing it does once the page is rendered."""
    A.wait(d, EC.text_to_be_present_in_element((By.ID, "page-title"), title), 20)
    A.wait(d, lambda _: d.execute_script("return document.activeElement.id") == "main")


def storage(d):
    return d.execute_script("return JSON.stringify(Object.assign({}, sessionStorage))")


def edits_survive_session_end(d):
    """A setting typed while the session ended elsewhere, then Save: the
    login form; after logging in again the page shows what was typed,
    still unsaved (the store keeps the old value until Save is pressed
    again), and a secret typed meanwhile was written nowhere.  Logging out
    with the button keeps nothing."""
    A.open_page(d, "plugins", "#set-example-greeting")
    before = A.ctl("get", "example.greeting").strip()
    typed = "typed while the session ended"
    secret = "draft-secret-token-0123456789"
    g = d.find_element(By.ID, "set-example-greeting")
    g.clear()
    g.send_keys(typed)
    d.find_element(By.CSS_SELECTOR, "#plugin-admin summary").click()
    d.find_element(By.ID, "set-admin-metrics_token").send_keys(secret)
    A.check(log_out_elsewhere(d) == "login", "the session is logged out in another tab")
    d.find_element(By.CSS_SELECTOR, "#settings-example button[type=submit]").click()
    pw = A.wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "#main input[name=password]")))
    A.check(secret not in storage(d), "the secret setting typed is not in the tab's storage", storage(d))
    A.check(A.ctl("get", "example.greeting").strip() == before, "Save with the session ended stored nothing",
            A.ctl("get", "example.greeting"))
    pw.send_keys(A.PASSWORD + "\n")
    page_settled(d, "Plugins")
    g = d.find_element(By.ID, "set-example-greeting")
    A.check(g.get_attribute("value") == typed, "after logging in again the field holds what was typed",
            g.get_attribute("value"))
    note = d.find_elements(By.ID, "draft-restored")
    A.check(bool(note) and "Nothing of it is saved yet" in note[0].text,
            "the page says the field keeps what was typed, unsaved", note[0].text if note else "")
    A.check(A.ctl("get", "example.greeting").strip() == before,
            "and it is not saved yet: tlsboxctl still reads the old value", A.ctl("get", "example.greeting"))
    token = d.find_element(By.ID, "set-admin-metrics_token").get_attribute("value")
    A.check(token == "", "the secret field comes back empty", token)
    d.find_element(By.CSS_SELECTOR, "#settings-example button[type=submit]").click()
    st = d.find_element(By.CSS_SELECTOR, "#settings-example .status")
    A.wait(d, lambda _: st.text != "")
    A.check(st.text == "Saved: greeting.", "Save then saves it", st.text)
    A.check(A.ctl("get", "example.greeting").strip() == typed, "and tlsboxctl reads it back",
            A.ctl("get", "example.greeting"))
    A.check(typed not in storage(d), "nothing of it is left in the tab's storage", storage(d))
    # Saved, it is no longer an unsaved edit.  Changed elsewhere since, then
    # another form's Save meets the session's end: after logging in again
    # the field shows what is stored now, not what was saved before it.
    elsewhere = "changed elsewhere after the save"
    A.ctl("set", "example.greeting", elsewhere)
    d.find_element(By.CSS_SELECTOR, "#plugin-admin summary").click()
    lockout = d.find_element(By.ID, "set-admin-lockout_after")
    lockout_typed = str(int(lockout.get_attribute("value")) + 1)
    lockout.clear()
    lockout.send_keys(lockout_typed)
    A.check(log_out_elsewhere(d) == "login", "the session is logged out in another tab again")
    d.find_element(By.CSS_SELECTOR, "#settings-admin button[type=submit]").click()
    pw = A.wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "#main input[name=password]")))
    A.check(typed not in storage(d), "the greeting saved before is not kept as an edit", storage(d))
    pw.send_keys(A.PASSWORD + "\n")
    page_settled(d, "Plugins")
    g = d.find_element(By.ID, "set-example-greeting")
    A.check(g.get_attribute("value") == elsewhere,
            "after logging in the greeting field shows the value stored elsewhere meanwhile", g.get_attribute("value"))
    note = d.find_elements(By.ID, "draft-restored")
    lockout = d.find_element(By.ID, "set-admin-lockout_after")
    A.check(bool(note) and note[0].text.startswith("1 field keeps") and lockout.get_attribute("value") == lockout_typed,
            "only the unsaved lockout_after edit comes back, and the page says 1 field",
            f"{note[0].text if note else ''} / {lockout.get_attribute('value')}")
    g.clear()
    g.send_keys(typed)
    d.find_element(By.CSS_SELECTOR, "#settings-example button[type=submit]").click()
    st = d.find_element(By.CSS_SELECTOR, "#settings-example .status")
    A.wait(d, lambda _: st.text != "")
    A.check(A.ctl("get", "example.greeting").strip() == typed, "the greeting is typed and saved again",
            A.ctl("get", "example.greeting"))
    # An explicit logout: an edit made before it is not brought back.
    g.clear()
    g.send_keys("typed before logging out")
    d.find_element(By.ID, "logout").click()
    A.wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "#main input[name=password]"))).send_keys(
        A.PASSWORD + "\n")
    page_settled(d, "Plugins")
    g = d.find_element(By.ID, "set-example-greeting")
    A.check(g.get_attribute("value") == typed and not d.find_elements(By.ID, "draft-restored"),
            "after logging out with the button the page shows the stored value", g.get_attribute("value"))


def session_ends_under(d):
    """The session ends elsewhere and the page is told as a 401 tells it;
    returns the login form's password field."""
    A.check(log_out_elsewhere(d) == "login", "the session is logged out in another tab")
    d.execute_script("window.dispatchEvent(new CustomEvent('tlsbox:logged-out'))")
    return A.wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "#main input[name=password]")))


def changed_meanwhile_named(d):
    """Two settings typed, unsaved; one of them is saved with another value
    elsewhere before the session ends: after the login both come back as
    typed, and the restore line names the one saved meanwhile, only it."""
    A.open_page(d, "plugins", "#set-example-greeting")
    typed = "typed before someone else saved"
    g = d.find_element(By.ID, "set-example-greeting")
    g.clear()
    g.send_keys(typed)
    d.find_element(By.CSS_SELECTOR, "#plugin-admin summary").click()
    lockout = d.find_element(By.ID, "set-admin-lockout_after")
    lockout_typed = str(int(lockout.get_attribute("value")) + 1)
    lockout.clear()
    lockout.send_keys(lockout_typed)
    A.ctl("set", "example.greeting", "saved by someone else")
    pw = session_ends_under(d)
    pw.send_keys(A.PASSWORD + "\n")
    page_settled(d, "Plugins")
    g = d.find_element(By.ID, "set-example-greeting")
    lockout = d.find_element(By.ID, "set-admin-lockout_after")
    A.check(g.get_attribute("value") == typed and lockout.get_attribute("value") == lockout_typed,
            "both fields typed come back as typed",
            f"{g.get_attribute('value')} / {lockout.get_attribute('value')}")
    note = d.find_elements(By.ID, "draft-restored")
    text = note[0].text if note else ""
    A.check(text.startswith("2 fields keep") and text.endswith("Saved meanwhile with another value: greeting."),
            "the restore line names the field saved meanwhile with another value, and only it", text)
    A.check(A.ctl("get", "example.greeting").strip() == "saved by someone else",
            "the value saved elsewhere is still what is stored", A.ctl("get", "example.greeting"))


def pasted_key_never_kept(d):
    """The certificate import's textarea when the session ends: nothing
    typed or pasted in it reaches the tab's storage, whatever it holds: a
    chain, a private key's base64 lines without their PEM header, a whole
    PEM key; after the login the field is empty, no draft restored."""
    chain = "-----BEGIN CERTIFICATE-----\nMIIBdraftchainonly\n-----END CERTIFICATE-----"
    body = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgDRAFTKEYBODY"
    for what, text, secret in (
            ("a certificate chain", chain, "MIIBdraftchainonly"),
            ("a private key's base64 lines without their PEM header", body + "\n" + body[::-1], body),
            ("a PEM private key", "-----BEGIN PRIVATE KEY-----\n" + body + "\n-----END PRIVATE KEY-----", body)):
        t = A.open_page(d, "certs", "#import-cert")
        t.send_keys(text)
        pw = session_ends_under(d)
        A.check(secret not in storage(d) and "import-cert" not in storage(d),
                f"{what} pasted in the import field is not in the tab's storage", storage(d))
        pw.send_keys(A.PASSWORD + "\n")
        page_settled(d, "Certificates")
        t = d.find_element(By.ID, "import-cert")
        A.check(t.get_attribute("value") == "" and not d.find_elements(By.ID, "draft-restored"),
                f"after the login ({what}) the field is empty, no draft restored", t.get_attribute("value"))


def slow_handshake(pause):
    """One TLS handshake with the site whose client waits pause seconds
    before its Finished, so the site measures at least that long."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(inc, out, server_hostname="localhost")
    host, port = A.SITE.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        for _ in range(20):
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                s.sendall(out.read())
                inc.write(s.recv(65536))
        time.sleep(pause)
        s.sendall(out.read())  # the client's Finished
        time.sleep(0.5)


def slow_handshake_latency(d):
    """A handshake longer than the histogram's last bound (2.5 s): the
    dashboard must say "longer than", not show the bound as the time."""
    A.open_page(d, "dashboard", "#n-lat")
    live_ticking(d)
    slow_handshake(3)
    seen = set()
    end = time.time() + 10
    while time.time() < end and "> 2500 / > 2500 ms" not in seen:
        seen.add(d.find_element(By.ID, "n-lat").text)
        time.sleep(0.1)
    A.check("> 2500 / > 2500 ms" in seen, "a 3 s handshake shows as > 2500 ms (p50 / p99)", seen)


if __name__ == "__main__":
    sys.exit(A.run_steps(session_ends_on_dashboard, session_ends_then_menu, hidden_dashboards,
                         relogin_in_other_window, edits_survive_session_end, changed_meanwhile_named,
                         pasted_key_never_kept, slow_handshake_latency))
