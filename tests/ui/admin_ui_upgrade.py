#!/usr/bin/python3
"""The admin web UI open in Chromium across an upgrade of tlsboxd: the page
shown after it is the new version's.  64_admin_ui_upgrade.sh changes the
installed web UI and restarts the daemon between the two halves: this
script writes the file $UI_PHASE.ready and waits for $UI_PHASE.go.
Output as admin_ui.py's; environment as its, plus UI_PHASE."""
import os
import sys
import time

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC

import admin_ui as A

PHASE = os.environ["UI_PHASE"]


def across_upgrade(d):
    A.open_page(d, "dashboard", "#n-cpu")  # the frame's modules are loaded
    open(PHASE + ".ready", "w").close()
    end = time.time() + 90
    while time.time() < end and not os.path.exists(PHASE + ".go"):
        time.sleep(0.2)
    A.check(os.path.exists(PHASE + ".go"), "the daemon was upgraded and restarted")
    d.find_element(By.CSS_SELECTOR, "#menu a[data-page=audit]").click()
    shown = A.wait(d, EC.presence_of_element_located(
        (By.CSS_SELECTOR, "#audit-rows tr, #main .status.error")), 30)
    A.check(shown.tag_name == "tr", "the audit page of the new version loads", d.find_element(By.ID, "main").text)
    A.check(d.execute_script("const b = document.getElementById('audit-rows'); return b ? b.dataset.ui || null : null") == "2",
            "with its new shared module", d.find_element(By.ID, "main").text[:200])


if __name__ == "__main__":
    sys.exit(A.run_steps(across_upgrade))
