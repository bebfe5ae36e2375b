#!/usr/bin/python3
"""The notify plugin's page in headless Chromium: it names the webhook by
its origin only, and "Send a test" shows the delivery, delivered.  Helpers
and output format as in admin_ui.py; run by 57_notify_webhook.sh, whose
webhook receiver listens at HOOK_ORIGIN.

Environment: as admin_ui.py, and HOOK_ORIGIN."""
import os
import sys

from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By

import admin_ui as A

ORIGIN = os.environ["HOOK_ORIGIN"]


def notify_page(d):
    A.open_page(d, "p/notify", "#notify-rows tr")
    to = d.find_element(By.ID, "notify-to")
    A.check(to.text == f"Webhook: {ORIGIN}", "the page names the webhook by its origin", to.text)
    A.check("PathSecret42" not in d.page_source, "and nowhere its path (its key)")
    A.check(d.find_element(By.ID, "notify-test-webhook").is_displayed()
            and not d.find_element(By.ID, "notify-test-mail").is_displayed(),
            "the webhook's line has its own test button; no e-mail, no e-mail test button")
    before = len(d.find_elements(By.CSS_SELECTOR, "#notify-rows tr[data-id]"))
    d.find_element(By.ID, "notify-test").click()
    st = d.find_element(By.ID, "notify-test-status")
    try:
        A.wait(d, lambda _: len(d.find_elements(By.CSS_SELECTOR, "#notify-rows tr[data-id]")) > before
               and "delivered" in d.find_element(By.CSS_SELECTOR, "#notify-rows tr[data-id]").text, 20)
    except TimeoutException:
        pass
    A.check(st.text == "Test queued: its deliveries show below.", "Send a test: queued", st.text)
    first = d.find_element(By.CSS_SELECTOR, "#notify-rows tr[data-id]")
    cells = [c.text for c in first.find_elements(By.TAG_NAME, "td")]
    A.check(cells[1:] == ["notify.test", "webhook", "delivered", "1", "HTTP 204"],
            "the newest row: notify.test to the webhook, delivered at the first try, HTTP 204",
            cells)
    mail = d.find_element(By.ID, "notify-mail").text
    A.check(mail == "No e-mail: set notify.mail_to and notify.smtp_url on the Plugins page.",
            "and says that no e-mail is set up", mail)
    A.shot(d, "notify-page")


if __name__ == "__main__":
    sys.exit(A.run_steps(notify_page))
