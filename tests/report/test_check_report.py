#!/usr/bin/env python3
"""The browser check of the course report (check_report.py) fails on a deliberately broken plot.

A one-page report with two plots drawn as the report draws them (docs/course/plots.py) must pass
check_report.py, and so must a picture of a mechanism drawn from a made-up record
(docs/course/mechanisms.py); the same report must then fail, naming each defect, when a plot's
data or a picture's marks no longer match their record, when a figure is shown scaled down, and when a figure's texts overlap, are
under 11 px or run outside it (a made-up SVG, as a careless plot would draw them).

    tests/report/test_check_report.py     exit 0 when both verdicts are right, 1 otherwise,
                                          77 (skipped) without gnuplot or the browser (as check_report.py)
"""
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "docs" / "course"))
import mechanisms  # noqa: E402
import plots  # noqa: E402
from chapters import Plot, Ref  # noqa: E402

CSV = """# 1. Step time against tokens (a made-up run)
T (tokens),time (s),scheme
16,0.0642,INT8 per-row
32,0.115,INT4 g128
64,0.217,NF4
128,0.336,Q4_1

"""
# A picture of a mechanism (docs/course/mechanisms.py): two rounds of a made-up speculative demo.
ROUNDS = {"demo": {"draft": "Q4_1", "gamma": 2, "tokens": 5, "rounds": 2, "drafted": 4, "accepted": 3, "alpha": 0.75,
                   "round_log": [{"guesses": [" a", " b"], "accepted": 2, "next": " c", "bonus": True, "emitted": 3},
                                 {"guesses": [" d", " e"], "accepted": 1, "next": " x", "bonus": False, "emitted": 1}]}}
BROKEN_SVG = """<svg xmlns="http://www.w3.org/2000/svg" width="400" height="200" viewBox="0 0 400 200">
<rect width="100%" height="100%" fill="white"/>
<text x="20" y="50" font-size="13">a legend entry on top of</text>
<text x="60" y="54" font-size="13">a data label</text>
<text x="20" y="150" font-size="8">tiny tick label</text>
<text x="200" y="100" font-size="13" text-anchor="middle">a title far too long for the width of this little figure, cut off at both ends</text>
</svg>
"""


def page(images):
    body = "".join(f'<figure><img src="{src}" alt="plot" width="{w}" height="{h}"></figure>' for src, w, h in images)
    return f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>t</title></head><body>{body}</body></html>'


def check(report):
    r = subprocess.run([sys.executable, str(HERE / "check_report.py"), str(report)], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def main():
    if shutil.which("gnuplot") is None:
        print("skipped: gnuplot not found (Debian: gnuplot-nox)")
        return 77
    failures = []
    with tempfile.TemporaryDirectory() as d:
        report = Path(d)
        (report / "plots").mkdir()
        (report / "records").mkdir()
        (report / "records" / "00-sweep.csv").write_text(CSV)
        t = {"title": CSV.split("\n")[0][2:], "number": "1", "headers": ["T (tokens)", "time (s)", "scheme"],
             "rows": [r.split(",") for r in CSV.strip().split("\n")[2:]]}
        entries = [plots.draw(Plot("sweep", "1", "T", ["time ("], "Step time against tokens", "tokens", "time of one step",
                                   logx=True, refs=[Ref("∝ T", power=1)]), [t], report / "plots" / "p1.svg", "00-sweep.csv"),
                   plots.draw(Plot("sweep", "1", "T", ["time ("], "Step time, labelled", "tokens", "time of one step",
                                   logx=True, labels="scheme"), [t], report / "plots" / "p2.svg", "00-sweep.csv")]
        (report / "plots" / "plots.json").write_text(json.dumps(entries))
        (report / "plots" / "own_plots.json").write_text("[]")  # no plot drawn by a binary (test_own_plots.py has them)
        (report / "records" / "00-rounds.json").write_text(json.dumps({"figures": ROUNDS}))
        picture = report / "plots" / "ch00-rounds.svg"
        mechanisms.draw("rounds", ROUNDS, picture)
        (report / "plots" / "pictures.json").write_text(json.dumps(
            [{"svg": "plots/ch00-rounds.svg", "chapter": "00", "kind": "rounds", "json": "records/00-rounds.json"}]))
        size = [int(float(v)) for v in re.search(r'width="([\d.]+)" height="([\d.]+)"', picture.read_text()).groups()]
        good = [("plots/p1.svg", 760, 460), ("plots/p2.svg", 760, 460), ("plots/ch00-rounds.svg", *size)]
        (report / "index.html").write_text(page(good))
        status, said = check(report)
        if status == 77:
            print(said.strip())
            return 77
        if status != 0:
            failures.append(f"a sound report fails the check (exit {status}):\n{said}")
        else:
            print("ok: a sound report passes")

        # The same report, broken four ways.
        (report / "broken.svg").write_text(BROKEN_SVG)
        (report / "index.html").write_text(page([("plots/p1.svg", 380, 230), ("plots/p2.svg", 760, 460), ("broken.svg", 400, 200),
                                                 ("plots/ch00-rounds.svg", *size)]))
        picture.write_text(picture.read_text().replace('data-state="rejected"', 'data-state="accepted"', 1))
        data = report / "plots" / "p2.tsv"
        data.write_text(data.read_text().replace("0.217", "0.2"))
        status, said = check(report)
        expected = {"the data edited": "the record has '0.217', the plot's data '0.2'",
                    "a figure scaled down": "plots/p1.svg is shown at 380 px of its 760",
                    "texts overlapping": "texts overlap: 'a legend entry on top of' and 'a data label'",
                    "text under 11 px": "text 'tiny tick label' is 8 px",
                    "text cut off": "text 'a title far too long for the width of this little figure, cut off at both ends' runs outside",
                    "a figure whose data nobody checks": "broken.svg: a binary's plot that own_plots.json does not list",
                    "a picture unlike its record": "plots/ch00-rounds.svg: rounds: round 2 is drawn"}
        if status != 1:
            failures.append(f"a broken report passes the check (exit {status}):\n{said}")
        for what, line in expected.items():
            if line not in said:
                failures.append(f"{what}: check_report did not say \"{line}\":\n{said}")
            else:
                print(f"ok: {what}: caught")
    for f in failures:
        print(f"FAILED: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
