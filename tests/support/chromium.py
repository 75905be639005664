"""Debian's headless Chromium driven by Selenium, for the tests that open pages in a real browser.

`chromium(profile_dir)` skips the test when chromium or chromedriver is missing, unless
COURSE_REQUIRE_BROWSER=1 (as in .ci/run) makes that a failure. Selenium Manager is kept offline,
so no browser or driver is ever downloaded. Uncaught errors and rejected promises of every page are
collected in `window.__errors` from the page's very first script.
"""
from __future__ import annotations

import os
import shutil
from contextlib import contextmanager

import pytest

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")


@contextmanager
def chromium(profile_dir):
    if not (CHROMIUM and CHROMEDRIVER):
        reason = ("Debian's chromium and chromium-driver are not installed "
                  "(apt-get install -y chromium chromium-driver; .ci/run does this)")
        if os.environ.get("COURSE_REQUIRE_BROWSER") == "1":
            pytest.fail(reason + ", and COURSE_REQUIRE_BROWSER=1 forbids skipping")
        pytest.skip(reason)
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must never fetch a browser or driver
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={profile_dir}", "--window-size=1280,900"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.set_page_load_timeout(60)
        # record uncaught errors and rejected promises from the very first script on each page
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": """
            window.__errors = [];
            addEventListener('error', e => window.__errors.push(String(e.message || e.type)), true);
            addEventListener('unhandledrejection', e => window.__errors.push('unhandled: ' + e.reason));"""})
        yield driver
    finally:
        driver.quit()
