#!/usr/bin/env python3
"""Opens the course report (docs/course/course.py) in headless Chromium and checks what a person
would see: every page loads without a console error, every plot renders, at its own size (never
scaled down), with text of at least 11 px and no two texts overlapping (their bounding boxes as the
browser lays them out), every link resolves, every chapter page has its tables, and the
stage-to-stage page shows only "identical tokens" verdicts. Before the browser, each gnuplot
plot's data file is checked against the run's record, row by row (check_plot_data: the CSV is
read here, not with the report's code), and so is each plot a binary drew itself (check_own_plots:
the points lib's svg_plot writes into the SVG against the record's rows, and every drawn point and
tick against those points), and so is each picture of a mechanism (check_pictures: the marks
docs/course/mechanisms.py drew against the record, and the record against itself). Screenshots
of every page go to REPORT/screenshots/.

    tests/report/check_report.py build/course

Needs Debian's chromium, chromium-driver and python3-selenium (./setup.sh --deps-only), an optional
part of the set-up: without them it prints "skipped: ..." and exits 77, which CTest reports as
skipped (SKIP_RETURN_CODE) - except under CI (environment CI set), where their absence fails.
Exit status 0 when every check holds, 1 otherwise (each failure printed), 2 for bad usage.
"""
import json
import math
import os
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import unquote, urlparse

MIN_FONT_PX = 11

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "course"))
import mechanisms  # noqa: E402  (the pictures' own checks: what each mark stands for)


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


def parsed(cell, header, parse):
    """A cell's number as the plot took it: group 1 of the plot's regex for that column, if it has one."""
    if header in parse and (m := re.search(parse[header], cell)):
        return m.group(1)
    return cell


def plot_index(report, name):
    """The list of plots course.py wrote to plots/<name>, and the problem when it is missing."""
    index = report / "plots" / name
    if not index.exists():
        return [], [f"{index} not found (docs/course/course.py writes it with the plots)"]
    return json.loads(index.read_text()), []


def check_plot_data(report):
    """Every plot in plots/plots.json against its record: the table is there with the columns named,
    every row is either plotted (in order) or listed as left out with a reason, and each plotted
    number equals the record's cell. Returns the problems found, one line each."""
    plots, problems = plot_index(report, "plots.json")
    for p in plots:
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
                cell = parsed(rows[i][c] if c < len(rows[i]) else "", headers[c], p.get("parse", {}))
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


# --- the plots a binary drew itself, against the record -----------------------------------------------

NUMBER = re.compile(r"^\s*[+-]?(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*$")


def printed_tolerance(cell):
    """Half a unit of the last digit a cell prints: "1.967" ± 0.0005, "262000" ± 500 (an integer's
    trailing zeros are rounding), "1.5e-05" ± 0.05e-05. None for a cell that is not a number."""
    m = NUMBER.match(cell)
    if not m or not (m.group(1) or m.group(2)):
        return None
    if m.group(2) is not None:
        step = 10.0 ** -len(m.group(2))
    else:
        digits = m.group(1)
        step = 10.0 ** (len(digits) - len(digits.rstrip("0"))) if digits.strip("0") else 1.0
    return 0.5 * step * 10.0 ** int(m.group(3) or 0) * (1 + 1e-9) + 1e-12


def as_printed(value, cell):
    """Whether a plotted value, rounded as the record's cell is, gives the cell."""
    tol = printed_tolerance(cell)
    return tol is not None and abs(value - float(cell)) <= tol


def plot_data(svg):
    """The SVG's own record of what it plots (lib/measure/svg_plot: <metadata id="plot-data">), and
    its drawn polylines, markers and tick labels; raises ValueError on an SVG without it."""
    root = ET.parse(svg).getroot()
    ns = {"s": "http://www.w3.org/2000/svg"}
    meta = root.find(".//s:metadata[@id='plot-data']", ns)
    if meta is None or not (meta.text or "").strip():
        raise ValueError("no <metadata id=\"plot-data\">: drawn by a binary built before lib's svg_plot recorded its "
                         "points (rebuild it and run the course again)")
    data = json.loads(meta.text)
    drawn = {"lines": {}, "marks": {}, "ticks": []}
    for e in root.iter():
        tag = e.tag.split("}")[-1]
        if tag == "polyline" and e.get("data-series") is not None:
            drawn["lines"][int(e.get("data-series"))] = [tuple(map(float, p.split(","))) for p in e.get("points").split()]
        elif tag == "circle" and e.get("data-series") is not None:
            drawn["marks"].setdefault(int(e.get("data-series")), []).append((float(e.get("cx")), float(e.get("cy"))))
        elif tag == "text" and e.get("data-tick"):
            drawn["ticks"].append((e.get("data-tick"), float(e.get("x")), float(e.get("y")), (e.text or "").strip()))
    return data, drawn


def check_drawing(name, data, drawn):
    """Every drawn point and tick where the SVG's own data and axes put it (to the 0.1 px it prints)."""
    area = data["area"]

    def at(v, r, log):
        return math.log(v / r[0]) / math.log(r[1] / r[0]) if log else (v - r[0]) / (r[1] - r[0])

    def px(x):
        return area["left"] + area["width"] * at(x, data["x_range"], data["log_x"])

    def py(y):
        return area["top"] + area["height"] * (1 - at(y, data["y_range"], data["log_y"]))

    problems = []
    for i, s in enumerate(data["series"]):
        want = [(px(x), py(y)) for x, y in zip(s["x"], s["y"])]
        got = drawn["lines"].get(i)
        marks = drawn["marks"].get(i, [])
        if got is None:
            problems.append(f"{name}: curve '{s['name']}' is not drawn")
            continue
        for what, points in [("line", got)] + ([("marker", marks)] if s["style"] != "reference" else []):
            if len(points) != len(want):
                problems.append(f"{name}: curve '{s['name']}': {len(points)} {what} points drawn, {len(want)} in its data")
                continue
            for k, ((gx, gy), (wx, wy)) in enumerate(zip(points, want)):
                if abs(gx - wx) > 0.06 or abs(gy - wy) > 0.06:
                    problems.append(f"{name}: curve '{s['name']}' point {k + 1}: its {what} is drawn at ({gx:g}, {gy:g}) "
                                    f"where its data ({s['x'][k]:g}, {s['y'][k]:g}) puts it at ({wx:.1f}, {wy:.1f})")
    for axis, x, y, text in drawn["ticks"]:
        try:
            value = float(text)
        except ValueError:
            problems.append(f"{name}: tick label '{text}' is not a number")
            continue
        off = abs(x - px(value)) if axis == "x" else abs(y - 4 - py(value))  # a y label sits 4 px below its line
        if off > 0.06:
            problems.append(f"{name}: the {axis} tick '{text}' is drawn {off:.1f} px from where its axis puts {text}")
    return problems


def check_curve(name, curve, e, plot, report):
    """One curve's points against what own_plots.json says the record (plot["csv"], plot["json"]) holds for it."""
    problems = []
    xs, ys = curve["x"], curve["y"]
    label = f"{name}: curve '{curve['name']}'"
    if "figures" in e:  # chapter 08's loss ÷ its first value, against the tokens seen before each step
        entry = json.loads((report / plot["json"]).read_text())["figures"][e["figures"]][e["index"]]
        loss = entry["loss"]
        if len(loss) != len(ys):
            return [f"{label}: {len(ys)} points, {len(loss)} losses in {plot['json']}"]
        for k, (y, l) in enumerate(zip(ys, loss)):
            if not math.isclose(y, l / loss[0], rel_tol=1e-9):
                problems.append(f"{label} point {k + 1}: {y:g}, the record's loss ÷ the first is {l / loss[0]:g}")
        step = xs[1] - xs[0] if len(xs) > 1 else None
        if xs[0] != 0 or (step is not None and any(not math.isclose(x, k * step) for k, x in enumerate(xs))) \
                or not 0 < entry["tokens"] - xs[-1] <= (step or entry["tokens"]):
            problems.append(f"{label}: its x values are not the tokens seen before each step of {entry['tokens']}")
        return problems
    headers, rows = record_tables(report / plot["csv"])[e["table"]]
    xi, yi = headers.index(e["x"]), headers.index(e["y"])
    cells = [(rows[i][xi], rows[i][yi], rows[i][0].strip()) for i in e["rows"]]
    if "value" in e:  # a reference line across the rows' x
        lo, hi = min(float(c[0]) for c in cells), max(float(c[0]) for c in cells)
        if any(y != e["value"] for y in ys) or [min(xs), max(xs)] != [lo, hi]:
            problems.append(f"{label}: a line at {e['value']:g} from x = {lo:g} to {hi:g} in the record; the plot's "
                            f"points are {list(zip(xs, ys))}")
        return problems
    if "law" in e:  # a formula drawn beyond the table: every point on it, and each row's point as printed
        a, k = e["law"]
        for x, y in zip(xs, ys):
            if not math.isclose(y, a * x ** k, rel_tol=1e-9):
                problems.append(f"{label}: point ({x:g}, {y:g}) is off its formula {a:g}·x^{k:g} = {a * x ** k:g}")
        for cx, cy, first in cells:
            hits = [y for x, y in zip(xs, ys) if as_printed(x, cx)]
            if not hits:
                problems.append(f"{label}: no point at x = {cx}, a row ('{first}') of the record's table")
            elif not as_printed(hits[0], cy):
                problems.append(f"{label} at x = {cx}: the plot has {hits[0]:g}, the record '{cy}'")
        return problems
    if len(xs) != len(cells):
        return [f"{label}: {len(xs)} points, {len(cells)} rows in the record's table '{e['table'][:50]}'"]
    for k, ((x, y), (cx, cy, first)) in enumerate(zip(zip(xs, ys), cells)):
        for axis, value, want in (("x", x, cx), ("y", y, cy)):
            if not as_printed(value, want):
                problems.append(f"{label} point {k + 1} ({axis}): the plot has {value:g}, the record's row '{first}' "
                                f"has '{want}' in column '{headers[xi if axis == 'x' else yi]}'")
    return problems


def check_own_plots(report):
    """Every plot a binary drew itself (plots/own_plots.json, written by course.py) against the run's
    record: the curves the SVG names are exactly those listed; each curve's points (from the SVG's
    <metadata>) equal the record's cells, as printed; and the drawing shows those points. Returns
    the problems found, one line each."""
    plots, problems = plot_index(report, "own_plots.json")
    for p in plots:
        name = p["svg"]
        try:
            data, drawn = plot_data(report / name)
        except (OSError, ValueError, ET.ParseError) as e:
            problems.append(f"{name}: {e}")
            continue
        curves = list(data["series"])
        for e in p["series"]:
            if e["match"] == "exact":
                curve = next((c for c in curves if c["name"] == e["name"]), None)
            else:  # "prefix": the name the record gives, perhaps followed by ", ..." (the run's details)
                curve = next((c for c in curves if c["name"] == e["name"] or c["name"].startswith(e["name"] + ",")), None)
            if curve is None:
                problems.append(f"{name}: no curve '{e['name']}' (the record has it; the plot's: "
                                f"{', '.join(c['name'] for c in data['series'])})")
                continue
            curves.remove(curve)
            try:
                problems += check_curve(name, curve, e, p, report)
            except (OSError, ValueError, KeyError, IndexError) as err:
                problems.append(f"{name}: curve '{e['name']}': cannot read its record ({type(err).__name__}: {err})")
        problems += [f"{name}: curve '{c['name']}' is in no record (own_plots.json lists no such curve)" for c in curves]
        problems += check_drawing(name, data, drawn)
    return problems


def check_pictures(report):
    """Every picture of a mechanism (plots/pictures.json) against its run's record: each mark the
    SVG carries (its data-* attributes) is the record's, and the record agrees with itself (see
    docs/course/mechanisms.py). Returns the problems found, one line each."""
    pictures, problems = plot_index(report, "pictures.json")
    for p in pictures:
        try:
            figures = json.loads((report / p["json"]).read_text())["figures"]
            svg = (report / p["svg"]).read_text()
        except (OSError, ValueError, KeyError) as e:
            problems.append(f"{p['svg']}: {type(e).__name__}: {e}")
            continue
        problems += [f"{p['svg']}: {m}" for m in mechanisms.check(p["kind"], figures, svg)]
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
    failures = check_plot_data(report) + check_own_plots(report) + check_pictures(report)
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
    own = {p["svg"] for p in json.loads((report / "plots" / "own_plots.json").read_text())} \
        if (report / "plots" / "own_plots.json").exists() else set()
    pictures = {p["svg"] for p in json.loads((report / "plots" / "pictures.json").read_text())} \
        if (report / "plots" / "pictures.json").exists() else set()
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
        failures += [f"{svg}: a picture no page shows" for svg in sorted(pictures - set(svgs.values()))]
        failures += [f"{rel}: a plot of plots/ that plots.json does not list (its data is unchecked)"
                     for rel in sorted(svgs.values()) if rel.startswith("plots/") and rel not in listed | pictures]
        failures += [f"{rel}: a binary's plot that own_plots.json does not list (its data is unchecked)"
                     for rel in sorted(svgs.values()) if not rel.startswith("plots/") and rel not in own]
        failures += [f"{svg}: a binary's plot no page shows" for svg in sorted(own - set(svgs.values()))]
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
