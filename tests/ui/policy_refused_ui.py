#!/usr/bin/python3
"""The TLS policy page when the stored policy is one this tlsbox refuses
(62_admin_ui_policy_refused.sh stores a raw string with %NO_SESSION_HASH,
as an older version could have): the page loads, says the stored policy
is not served and why, and a preset applied from it replaces the policy.
Output as admin_ui.py's; environment as its."""
import sys

from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC

import admin_ui as A


def refused_then_replaced(d):
    A.open_page(d, "policy", "#preset-form")
    said = d.find_element(By.ID, "active-refused").text
    A.check(said.startswith("Not served: ") and "%NO_SESSION_HASH at position 7" in said,
            "the page loads and says the stored policy is not served, and why", said)
    d.find_element(By.CSS_SELECTOR, "#preset option[value=intermediate]").click()
    d.find_element(By.ID, "preset-apply").click()
    st = "#preset-form .status"
    try:
        A.wait(d, lambda _: d.find_element(By.CSS_SELECTOR, st).text != "", 20)
    except TimeoutException:
        pass
    said = d.find_element(By.CSS_SELECTOR, st).text
    shown = A.ctl_json("policy", "show")
    A.check(said == f"Applied: now version {shown['id']}." and shown.get("refused") is None and
            shown["policy"]["priority_override"] == "",
            "the intermediate preset applied from the page replaces it", f"{said} {shown.get('refused')}")
    A.check(not d.find_elements(By.ID, "active-refused"), "and the page no longer says not served")
    rows = A.wait(d, EC.presence_of_all_elements_located((By.CSS_SELECTOR, "#preview-clients tbody tr")))
    A.check(len(rows) > 0, "the active policy's preview is shown again", len(rows))


if __name__ == "__main__":
    sys.exit(A.run_steps(refused_then_replaced))
