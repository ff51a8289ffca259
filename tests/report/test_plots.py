#!/usr/bin/env python3
"""The course report's plots fail loudly (docs/course/plots.py) and its data check catches a plot
that does not match its record (tests/report/check_report.py's check_plot_data).

A made-up run record with one table is plotted as the report plots it; then deliberately broken
specs and tables must stop the plot with one clear line: a column that does not exist, a prefix
that names two columns, a header two columns share, a non-numeric cell in a plotted column, a
single point, a missing table, two bars with one label, a log axis meeting 0. Then the data check
must pass on the good plots (one with a number taken out of a text cell, one with the course's
figure as a reference line, drawn in its own style) and fail on a data file edited (a value
changed, a row dropped, a number taken out of a text cell) and on a row left out with no reason.

    tests/report/test_plots.py      exit 0 when every case holds, 1 otherwise; 77 (skipped) without gnuplot
"""
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "course"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import plots  # noqa: E402
from chapters import Plot, Ref  # noqa: E402
from check_report import check_plot_data  # noqa: E402
from tampering import expect_problem  # noqa: E402

CSV = """# 1. Step time against tokens (a made-up run)
T (tokens),time (s),predicted (s),scheme,note,predicted work (GMAC)
16,0.0642,0.06,a,,1.7
32,0.115,0.12,b,,3.4
64,0.217,0.24,c,,6.9
128,0.336,0.48,d,,13.9

# 2. One row only
T (tokens),time (s)
16,0.0642

# 3. Outliers (a made-up run)
layer,max |x|,without position 0,ratio (×),ratio (×)
0,32.1,308 (32.1),9,9
1,182.8,507 (86.9),45,23
2,653.0,507 (520.8),145,123

"""

failures = []


def table(number):
    """The CSV above as the report reads it (one table)."""
    import csv
    import io
    blocks = [b for b in CSV.split("\n\n") if b.strip()]
    block = blocks[int(number) - 1].split("\n")
    rows = list(csv.reader(io.StringIO("\n".join(block[1:]))))
    return {"title": block[0][2:], "number": number, "headers": rows[0], "rows": rows[1:]}


def good_spec(**changes):
    spec = dict(run="sweep", table="1", x="T", ys=["time ("], title="Step time against tokens", xlabel="tokens",
                ylabel="time of one step", logx=True, refs=[Ref("∝ T", power=1)])
    spec.update(changes)
    return Plot(**spec)


def expect_error(case, spec, tables, *words):
    """The plot must stop with one line that names the problem (each of `words` in it)."""
    with tempfile.TemporaryDirectory() as d:
        try:
            plots.draw(spec, tables, Path(d) / "p.svg", "00-sweep.csv")
        except plots.PlotError as e:
            message = str(e)
            if "\n" in message or not all(w in message for w in words):
                failures.append(f"{case}: the error '{message}' should be one line naming {words}")
            else:
                print(f"ok: {case}: {message}")
            return
    failures.append(f"{case}: plotted without complaint")


def main():
    if shutil.which("gnuplot") is None:
        print("skipped: gnuplot not found (Debian: gnuplot-nox)")
        return 77
    t1, t2 = table("1"), table("2")
    expect_error("a column that does not exist", good_spec(ys=["latency"]), [t1], "no column 'latency'")
    expect_error("a prefix naming two columns", good_spec(ys=["predicted"]), [t1], "matches 2 columns")
    broken = json.loads(json.dumps(t1))
    broken["rows"][2][1] = "217 ms"
    expect_error("a non-numeric cell in a plotted column", good_spec(), [broken], "'64'", "'217 ms'", "not a number")
    expect_error("a single point", good_spec(table="2"), [t1, t2], "1 point")
    expect_error("every row but one left out", good_spec(skip=("16", "32", "64")), [t1], "1 point")
    expect_error("a missing table", good_spec(table="3"), [t1, t2], "no table '3'")
    expect_error("two bars with one label", good_spec(bars=True, x="note", logx=False, refs=[]), [t1], "share the label")
    zero = json.loads(json.dumps(t1))
    zero["rows"][0][1] = "0"
    expect_error("a log axis meeting 0", good_spec(logy=True), [zero], "log axis")
    expect_error("two units on one axis", good_spec(ys=["time (", "predicted work"]), [t1], "different units")
    expect_error("a title wider than the figure", good_spec(title="x" * 120), [t1], "too long")
    t3 = table("3")
    outliers = dict(table="3", x="layer", ys=["max |x|", "without position 0"], logx=False, logy=True, refs=[],
                    names=["every position", "position 0 left out"])
    expect_error("a header two columns share", good_spec(**dict(outliers, ys=["ratio (×)"])), [t3], "2 columns", "ratio (×)")
    expect_error("a text cell without a number to take", good_spec(**outliers), [t3], "'308 (32.1)'", "not a number")

    with tempfile.TemporaryDirectory() as d:
        report = Path(d)
        (report / "plots").mkdir()
        (report / "records").mkdir()
        (report / "records" / "00-sweep.csv").write_text(CSV)
        entries = []
        for i, (spec, t) in enumerate([(good_spec(ys=["time (", "predicted ("], predicted=("predicted",), skip=("128",)), t1),
                                       (good_spec(labels="scheme", refs=[]), t1),
                                       (good_spec(bars=True, x="scheme", logx=False, refs=[Ref("one tenth", value=0.1)]), t1),
                                       (good_spec(**outliers, parse={"without position 0": r"\((\S+)\)"}), t3),
                                       (good_spec(refs=[Ref("the course: 0.1 s", value=0.1, course=True)]), t1)]):
            entries.append(plots.draw(spec, [t], report / "plots" / f"p{i}.svg", "00-sweep.csv"))
            if not (report / "plots" / f"p{i}.svg").read_text().lstrip().startswith("<?xml"):
                failures.append(f"plot {i}: no SVG written")
        if entries[0]["scale"] != 1000 or "(ms)" not in (report / "plots" / "p0.gp").read_text():
            failures.append("seconds under 2 should be shown in ms, with the axis saying so")
        course = (report / "plots" / "p4.gp").read_text()
        if plots.COURSE not in course or "dt 4" not in course or "the course: 0.1 s" not in course:
            failures.append("the course's figure is not drawn in its own style (colour, dash-dot) with its key entry")
        if entries[0]["left_out"] != [{"row": 3, "first_cell": "128", "why": "the plot leaves out rows starting '128'"}]:
            failures.append(f"the row left out by the spec is not listed with its reason: {entries[0]['left_out']}")
        (report / "plots" / "plots.json").write_text(json.dumps(entries))
        if problems := check_plot_data(report):
            failures.append(f"the data check fails on good plots: {problems}")
        else:
            print("ok: the data check passes on good plots")

        def tampered(case, edit, *words):
            expect_problem(failures, case, list((report / "plots").iterdir()), edit, lambda: check_plot_data(report),
                           *words)

        data = report / "plots" / "p0.tsv"
        tampered("a plotted value changed", lambda: data.write_text(data.read_text().replace("0.115", "0.116")),
                 "row 1", "'0.115'", "'0.116'")
        tampered("a row dropped from the data", lambda: data.write_text("".join(data.read_text().splitlines(True)[:-1])),
                 "2 rows in plots/p0.tsv", "3 plotted rows")
        listing = report / "plots" / "plots.json"
        tampered("a row left out without being listed",
                 lambda: listing.write_text(listing.read_text().replace('"left_out": [{"row": 3', '"left_out": [{"row": 2')),
                 "do not account")
        tampered("a column the record does not have",
                 lambda: listing.write_text(listing.read_text().replace('"time (s)"', '"time (ms)"', 1)),
                 "no column 'time (ms)'")
        taken = report / "plots" / "p3.tsv"
        tampered("a number taken out of a text cell, changed", lambda: taken.write_text(taken.read_text().replace("86.9", "87")),
                 "row 1", "'86.9'", "'87'")
        labels = report / "plots" / "p1.tsv"
        tampered("a point labelled with another row's text", lambda: labels.write_text(labels.read_text().replace('"a"', '"b"')),
                 "label 'b'")
    for f in failures:
        print(f"FAILED: {f}")
    print(f"test_plots: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
