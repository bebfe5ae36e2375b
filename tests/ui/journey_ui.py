#!/usr/bin/python3
"""A user's first steps in the admin web UI, as 62_admin_ui_journey.sh sets
them up (the demo daemon, a first run with the setup token): each step is
one thing such a user met that was wrong.  Output as admin_ui.py's;
environment as its.

- phone_width: at 375 px (an iPhone's width) no page scrolls sideways; the
  dashboard's charts kept the width they were first drawn at, and the
  notify page's table had no table-wrap."""
import sys

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC

import admin_ui as A


def sideways(d):
    """How far the page scrolls sideways (0: not at all)."""
    return d.execute_script("return document.documentElement.scrollWidth - "
                            "document.documentElement.clientWidth")


def phone_width(d):
    d.set_window_size(375, 812)
    try:
        A.open_page(d, "dashboard", "#chart-cpu")
        # The charts are drawn, and the live figures in, before measuring.
        A.wait(d, lambda _: d.find_element(By.ID, "n-cpu").text != "–")
        A.check(sideways(d) == 0, "375 px wide: the dashboard does not scroll sideways", sideways(d))
        A.open_page(d, "p/notify", "#notify-rows")
        A.wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "#notify-rows")))
        A.check(sideways(d) == 0, "375 px wide: the notify page does not scroll sideways", sideways(d))
    finally:
        d.set_window_size(1280, 900)


if __name__ == "__main__":
    sys.exit(A.run_steps(phone_width))
