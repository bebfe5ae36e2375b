#!/usr/bin/python3
"""The OCSP page for certificates checked by CRL, in headless Chromium: the
revoked one first and in bold red, the good one reading "good", both naming
their CRL and saying there is nothing to staple; "Refresh now" on the good
one writes what the CRL said in its row.  Helpers and output format as in
admin_ui.py; run by 58_ocsp_crl.sh.

Environment: as admin_ui.py, and CRL_URL, CRL_REVOKED, CRL_GOOD (names)."""
import os
import sys

from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By

import admin_ui as A

URL = os.environ["CRL_URL"]
REVOKED = os.environ["CRL_REVOKED"]
GOOD = os.environ["CRL_GOOD"]
CHECKED = os.environ["CRL_CHECKED"]  # how many certificates are checked by CRL


def crl_rows(d):
    A.open_page(d, "p/ocsp", f"#ocsp-rows tr[data-name='{GOOD}']")
    rows = A.table_rows(d, "#ocsp-rows tr")
    first = rows[0]
    A.check(first["name"] == REVOKED and "bad" in first["class"].split(),
            f"the revoked certificate ({REVOKED}) comes first, its row marked", first)
    A.check(first["bold_red"][:1] != [] and first["bold_red"][0].startswith("REVOKED"),
            "REVOKED in bold red", first)
    good = [r for r in rows if r["name"] == GOOD][0]
    for r, what in ((first, "revoked"), (good, "good")):
        A.check(r["cells"][1] == f"CRL: {URL}", f"the {what} row names its CRL", r["cells"])
        A.check("checked by CRL (no OCSP URL in it: nothing to staple)"
                in r["cells"][2], f"the {what} row says it is checked by CRL, nothing to staple",
                r["cells"])
    A.check(good["cells"][2].split("\n")[0] == "good" and "bad" not in good["class"].split(),
            "the good row reads good, unmarked", good)
    summary = d.find_element(By.ID, "ocsp-summary").text
    A.check(f"{CHECKED} checked by CRL" in summary and "1 REVOKED" in summary,
            "the summary counts the CRL-checked and the revoked", summary)
    d.find_element(By.CSS_SELECTOR, f"button[data-cert='{GOOD}']").click()

    def good_row():  # read in one script: the table redraws on a timer
        return " | ".join([r for r in A.table_rows(d, "#ocsp-rows tr") if r["name"] == GOOD][0]["cells"])
    try:
        A.wait(d, lambda _: "Not in the CRL of" in good_row(), 40)
    except TimeoutException:
        pass
    row = good_row()
    A.check("Not in the CRL of" in row, "Refresh now: the row says the CRL does not list it", row)
    A.shot(d, "ocsp-crl")


if __name__ == "__main__":
    sys.exit(A.run_steps(crl_rows))
