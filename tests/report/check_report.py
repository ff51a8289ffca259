#!/usr/bin/env python3
"""Opens the course report (docs/course/course.py) in headless Chromium and checks what a person
would see: every page loads without a console error, every plot renders, at its own size (never
scaled down), with text of at least 11 px and no two texts overlapping (their bounding boxes as the
browser lays them out), every link resolves, every chapter page has its tables, and the
stage-to-stage page shows only "identical tokens" verdicts. Before the browser, each gnuplot
plot's data file is checked against the run's record, row by row (check_plot_data: the CSV is
read here, not with the report's code). Screenshots of every page go to REPORT/screenshots/.

    tests/report/check_report.py build/course

Needs Debian's chromium, chromium-driver and python3-selenium (./setup.sh --deps-only), an optional
part of the set-up: without them it prints "skipped: ..." and exits 77, which CTest reports as
skipped (SKIP_RETURN_CODE) - except under CI (environment CI set), where their absence fails.
Exit status 0 when every check holds, 1 otherwise (each failure printed), 2 for bad usage.
"""
import json
import math
import os
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

MIN_FONT_PX = 11


def missing_part(reason):
    """The browser check is an optional part of the set-up: skipped without its packages, but not in CI."""
    if os.environ.get("CI"):
        print(f"check_report: error: {reason}", file=sys.stderr)
        return 1
    print(f"skipped: the report's browser check needs what is missing: {reason}; ./setup.sh installs it where the distribution has it")
    return 77


# --- each plot's data against its record -------------------------------------------------------------

def record_tables(path):
    """The tables of a run's CSV file, {title: (headers, rows)}: a "# title" line, then RFC 4180
    CSV (a quoted cell may hold line breaks) up to a blank line."""
    import csv
    lines = iter(path.read_text().splitlines(keepends=True))
    tables = {}
    for line in lines:
        if not line.strip():
            continue
        if not line.startswith("# "):
            raise ValueError(f"{path.name}: expected a '# title' line, found {line.strip()[:60]!r}")
        title = line[2:].rstrip("\r\n")
        rows = []
        for row in csv.reader(lines):  # reads from the same iterator, so it stops where the table ends
            if not row:
                break
            rows.append(row)
        if rows:
            tables.setdefault(title, (rows[0], rows[1:]))
    return tables


def data_rows(path):
    """A plot's data file: tab-separated, text cells in double quotes."""
    rows = []
    for line in path.read_text().splitlines():
        rows.append([c[1:-1] if c.startswith('"') and c.endswith('"') else c for c in line.split("\t")])
    return rows


def same_number(a, b):
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    return math.isclose(x, y, rel_tol=1e-8, abs_tol=1e-12)


def check_plot_data(report):
    """Every plot in plots/plots.json against its record: the table is there with the columns named,
    every row is either plotted (in order) or listed as left out with a reason, and each plotted
    number equals the record's cell. Returns the problems found, one line each."""
    index = report / "plots" / "plots.json"
    if not index.exists():
        return [f"{index} not found (docs/course/course.py writes it with the plots)"]
    problems = []
    for p in json.loads(index.read_text()):
        name = p["svg"]
        try:
            tables = record_tables(report / p["record"])
        except (OSError, ValueError) as e:
            problems.append(f"{name}: cannot read its record {p['record']}: {e}")
            continue
        if p["table"] not in tables:
            problems.append(f"{name}: its record {p['record']} has no table '{p['table']}'")
            continue
        headers, rows = tables[p["table"]]
        wanted = ([p["x"]] if p["kind"] == "xy" else []) + p["ys"]
        gone = [h for h in wanted if h not in headers]
        if gone:
            problems.append(f"{name}: the record's table has no column {', '.join(repr(h) for h in gone)}")
            continue
        left_out = {o["row"] for o in p["left_out"]}
        if set(p["rows"]) & left_out or sorted(set(p["rows"]) | left_out) != list(range(len(rows))):
            problems.append(f"{name}: rows plotted {p['rows']} and left out {sorted(left_out)} do not account for "
                            f"the table's {len(rows)} rows")
            continue
        if any(not o.get("why") for o in p["left_out"]):
            problems.append(f"{name}: a row is left out without a reason")
        data = data_rows(report / p["data"])
        if len(data) != len(p["rows"]):
            problems.append(f"{name}: {len(data)} rows in {p['data']}, {len(p['rows'])} plotted rows in the record")
            continue
        columns = [headers.index(h) for h in wanted]
        first = 1 if p["kind"] == "bars" else 0  # a bar's first data cell is its category label
        for k, (i, got) in enumerate(zip(p["rows"], data)):
            for j, c in enumerate(columns):
                cell = rows[i][c] if c < len(rows[i]) else ""
                have = got[first + j] if first + j < len(got) else ""
                if not same_number(cell, have):
                    problems.append(f"{name}: row {i} ('{rows[i][0].strip()}') column '{headers[c]}': the record has "
                                    f"'{cell}', the plot's data '{have}'")
            if p.get("label"):
                want = rows[i][headers.index(p["label"])].strip().replace('"', "'")
                if got[-1] != want:
                    problems.append(f"{name}: row {i}: label '{got[-1]}', the record has '{want}'")
        if p["kind"] == "bars":
            labels = [r[0] for r in data]
            if len(set(labels)) != len(labels):
                problems.append(f"{name}: two bars share a label")
        script = (report / p["script"]).read_text()
        if Path(p["data"]).name not in script or Path(p["svg"]).name not in script:
            problems.append(f"{name}: its script {p['script']} does not read {p['data']} and write {p['svg']}")
    return problems


# --- in the browser --------------------------------------------------------------------------------

TEXTS = """
const svg = document.documentElement.getBoundingClientRect();
const out = [[null, svg.left, svg.top, svg.right, svg.bottom, 0]];
for (const t of document.querySelectorAll('text')) {
  const s = t.textContent.trim();
  if (!s) continue;
  const r = t.getBoundingClientRect();
  out.push([s, r.left, r.top, r.right, r.bottom, parseFloat(getComputedStyle(t).fontSize)]);
}
return out;
"""


def check_svg_text(driver, svg, name):
    """An SVG opened on its own: every text at least MIN_FONT_PX, inside the figure, no two texts' boxes overlapping."""
    driver.get(svg.as_uri())
    (_, left, top, right, bottom, _), *texts = driver.execute_script(TEXTS)
    problems = [f"{name}: text '{s}' runs outside the figure" for s, l, t, r, b, _ in texts
                if l < left - 1 or t < top - 1 or r > right + 1 or b > bottom + 1]
    problems += [f"{name}: text '{s}' is {size:g} px (under {MIN_FONT_PX})" for s, *_, size in texts if size < MIN_FONT_PX]
    for a in range(len(texts)):
        for b in range(a + 1, len(texts)):
            s, l1, t1, r1, b1, _ = texts[a]
            u, l2, t2, r2, b2, _ = texts[b]
            if min(r1, r2) - max(l1, l2) > 1 and min(b1, b2) - max(t1, t2) > 1:
                problems.append(f"{name}: texts overlap: '{s}' and '{u}'")
    return problems


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    report = Path(sys.argv[1]).resolve()
    index = report / "index.html"
    if not index.exists():
        print(f"check_report: error: {index} not found (run docs/course/course.py first)", file=sys.stderr)
        return 2
    failures = check_plot_data(report)
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
    except ImportError:
        for f in failures:
            print(f"check_report: {f}")
        return 1 if failures else missing_part(f"selenium is missing for {sys.executable} (Debian: python3-selenium)")
    driver_path = Path("/usr/bin/chromedriver")
    if not driver_path.exists():
        for f in failures:
            print(f"check_report: {f}")
        return 1 if failures else missing_part("/usr/bin/chromedriver not found (Debian: chromium chromium-driver)")

    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--allow-file-access-from-files", "--window-size=1280,1600"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(driver_path)), options=options)
    shots = report / "screenshots"
    shots.mkdir(exist_ok=True)
    pages = sorted(report.glob("*.html"))
    svgs = {}  # every SVG a page shows: checked once, on its own, after the pages
    listed = {p["svg"] for p in json.loads((report / "plots" / "plots.json").read_text())} \
        if (report / "plots" / "plots.json").exists() else set()
    try:
        for page in pages:
            driver.get(page.as_uri())
            driver.execute_script("return document.readyState")
            name = page.name
            for entry in driver.get_log("browser"):
                if entry.get("level") == "SEVERE":
                    failures.append(f"{name}: console error: {entry.get('message')}")
            # Plots: each <img> loaded (naturalWidth) and laid out at its own size, not scaled down.
            for img in driver.find_elements(By.TAG_NAME, "img"):
                natural = driver.execute_script("return arguments[0].complete ? arguments[0].naturalWidth : 0", img)
                box = img.rect
                src = img.get_attribute("src")
                if not natural or box["width"] <= 0 or box["height"] <= 0:
                    failures.append(f"{name}: plot {src} did not render (naturalWidth {natural}, box {box['width']}×{box['height']})")
                elif box["width"] < natural - 1:
                    failures.append(f"{name}: plot {src} is shown at {box['width']:.0f} px of its {natural} (scaled down: "
                                    f"its text would be under {MIN_FONT_PX} px)")
                url = urlparse(src)
                if url.scheme == "file" and url.path.endswith(".svg"):
                    path = Path(unquote(url.path))
                    svgs[path] = path.relative_to(report).as_posix() if path.is_relative_to(report) else str(path)
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
        failures += [f"{svg}: a gnuplot plot no page shows" for svg in sorted(listed - set(svgs.values()))]
        failures += [f"{rel}: a plot of plots/ that plots.json does not list (its data is unchecked)"
                     for rel in sorted(svgs.values()) if rel.startswith("plots/") and rel not in listed]
        for path, rel in sorted(svgs.items()):
            failures += check_svg_text(driver, path, rel)
    finally:
        driver.quit()
    for f in failures:
        print(f"check_report: {f}")
    print(f"check_report: {len(pages)} pages, {len(svgs)} plots, {len(failures)} problems; screenshots in {shots}")
    return 1 if failures or not pages else 0


if __name__ == "__main__":
    sys.exit(main())
