#!/usr/bin/env python3
"""Opens the course report (docs/course/course.py) in headless Chromium and checks what a person
would see: every page loads without a console error, every plot renders with a non-zero size,
every link resolves, every chapter page has its tables, and the stage-to-stage page shows only
"identical tokens" verdicts. Screenshots of every page go to REPORT/screenshots/ for a person.

    tests/report/check_report.py build/course

Needs Debian's chromium, chromium-driver and python3-selenium (./setup.sh --deps-only), an optional
part of the set-up: without them it prints "skipped: ..." and exits 77, which CTest reports as
skipped (SKIP_RETURN_CODE) - except under CI (environment CI set), where their absence fails.
Exit status 0 when every check holds, 1 otherwise (each failure printed), 2 for bad usage.
"""
import os
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse


def missing_part(reason):
    """The browser check is an optional part of the set-up: skipped without its packages, but not in CI."""
    if os.environ.get("CI"):
        print(f"check_report: error: {reason}", file=sys.stderr)
        return 1
    print(f"skipped: the report's browser check needs what is missing: {reason}; ./setup.sh installs it where the distribution has it")
    return 77


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    report = Path(sys.argv[1]).resolve()
    index = report / "index.html"
    if not index.exists():
        print(f"check_report: error: {index} not found (run docs/course/course.py first)", file=sys.stderr)
        return 2
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
    except ImportError:
        return missing_part(f"selenium is missing for {sys.executable} (Debian: python3-selenium)")
    driver_path = Path("/usr/bin/chromedriver")
    if not driver_path.exists():
        return missing_part("/usr/bin/chromedriver not found (Debian: chromium chromium-driver)")

    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--allow-file-access-from-files", "--window-size=1280,1600"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(driver_path)), options=options)
    shots = report / "screenshots"
    shots.mkdir(exist_ok=True)
    failures = []
    pages = sorted(report.glob("*.html"))
    try:
        for page in pages:
            driver.get(page.as_uri())
            driver.execute_script("return document.readyState")
            name = page.name
            for entry in driver.get_log("browser"):
                if entry.get("level") == "SEVERE":
                    failures.append(f"{name}: console error: {entry.get('message')}")
            # Plots: each <img> loaded (naturalWidth) and laid out with a size.
            for img in driver.find_elements(By.TAG_NAME, "img"):
                natural = driver.execute_script("return arguments[0].complete ? arguments[0].naturalWidth : 0", img)
                box = img.rect
                if not natural or box["width"] <= 0 or box["height"] <= 0:
                    failures.append(f"{name}: plot {img.get_attribute('src')} did not render "
                                    f"(naturalWidth {natural}, box {box['width']}×{box['height']})")
            # Links: every local target exists.
            for a in driver.find_elements(By.TAG_NAME, "a"):
                href = a.get_attribute("href") or ""
                url = urlparse(href)
                if url.scheme == "file" and not Path(unquote(url.path)).exists():
                    failures.append(f"{name}: broken link {href}")
            if name.startswith("ch"):
                if not driver.find_elements(By.CSS_SELECTOR, "section.table table tbody tr"):
                    failures.append(f"{name}: no table rows")
            if name == "stages.html":
                verdicts = [v.text for v in driver.find_elements(By.CSS_SELECTOR, "td.verdict")]
                if not verdicts:
                    failures.append("stages.html: no stage-to-stage verdicts")
                failures += [f"stages.html: verdict '{v}'" for v in verdicts if v != "identical tokens"]
            height = driver.execute_script("return document.documentElement.scrollHeight")
            driver.set_window_size(1280, min(max(int(height), 600), 12000))
            driver.save_screenshot(str(shots / (page.stem + ".png")))
            driver.set_window_size(1280, 1600)
    finally:
        driver.quit()
    for f in failures:
        print(f"check_report: {f}")
    print(f"check_report: {len(pages)} pages, {len(failures)} problems; screenshots in {shots}")
    return 1 if failures or not pages else 0


if __name__ == "__main__":
    sys.exit(main())
