#!/usr/bin/env python3
"""The course report's check of the plots a binary draws itself (check_report.py's check_own_plots)
fails on a deliberately wrong point.

A made-up run record (CSV tables and a --json record) and plots drawn from it by lib's SVG plotter
(svg_plot_sample, built beside this test from tests/report/svg_plot_sample.cpp), listed in
plots/own_plots.json as the report lists them (docs/course/plots.py's own_series), must pass the
check; then the check must name each defect: a point whose value is not the record's, a point
drawn where its data does not put it, a tick label moved, a curve the record does not have, a
curve the record has and the plot lacks, a point off its formula, a loss curve unlike the record,
and an SVG that does not carry its points.

    tests/report/test_own_plots.py [EMULATOR ...] BUILD/tests/report/svg_plot_sample
                                        exit 0 when every case holds, 1 otherwise
                                        (EMULATOR: a cross build's, e.g. qemu-aarch64)
"""
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "docs" / "course"))
sys.path.insert(0, str(HERE))
import course  # noqa: E402
import plots  # noqa: E402
from chapters import OwnPlot, Series  # noqa: E402
from check_report import check_own_plots  # noqa: E402
from tampering import expect_problem  # noqa: E402

CSV = """# 5. Prefill (a made-up run)
P (prompt tokens),runs,per token (ms)
16,3,1.967
64,3,1.876
256,3,1.443
1024,1,1.596

# 6. Decode (a made-up run)
C (cached tokens),runs,step (ms)
16,3,15.96
64,3,16.54
256,3,19.06

# 2. Score bytes (a made-up run)
n (tokens),scores n×n (bytes)
256,262000
512,1050000

# γ sweep (a made-up run), median of 3 runs
draft,γ,speed-up (×),predicted (×)
A,1,1.00,1.13
A,2,1.19,1.34
B,1,0.61,0.62
B,2,0.52,0.49

"""
RECORD = {"figures": {"training_runs": [{"layers": 20, "labels": "hard", "tokens": 512, "loss": [4.0, 3.0, 2.5, 2.0]}]}}

# The curves as a binary would draw them: the record's numbers at full precision.
PREFILL = ("prefill: time per prompt token", "measured", [16, 64, 256, 1024], [1.96748, 1.87612, 1.44303, 1.59627])
DECODE = ("decode: time per generated token", "measured", [16, 64, 256], [15.9633, 16.5411, 19.0588])
NS = [16 * 2 ** k for k in range(10)]
SCORES = ("recompute: n × n scores", "measured", NS, [4.0 * n * n for n in NS])
SWEEP = [("A: measured", "measured", [1, 2], [1.00355, 1.19]), ("A: predicted", "predicted", [1, 2], [1.1305, 1.3402]),
         ("B: measured", "measured", [1, 2], [0.6102, 0.5198]), ("B: predicted", "predicted", [1, 2], [0.62, 0.4911]),
         ("plain decoding", "reference", [1, 2], [1.0, 1.0])]
LOSS = ("20 layers, hard, with details the record does not name", "measured", [0, 128, 256, 384], [1.0, 0.75, 0.625, 0.5])

SPECS = {"p1.svg": (OwnPlot("p1.svg", "tables", "prefill and decode",
                            series=[Series("prefill: time per prompt token", "5", "P (", "per token"),
                                    Series("decode: time per generated token", "6", "C (", "step (")]), ["--log-x"]),
         "p2.svg": (OwnPlot("p2.svg", "tables", "score bytes",
                            series=[Series("recompute: n × n scores", "2", "n (", "scores n×n", law=(4, 2))]),
                    ["--log-x", "--log-y"]),
         "p3.svg": (OwnPlot("p3.svg", "tables", "γ sweep",
                            series=[Series("{}: measured", "γ sweep", "γ", "speed-up", group=True),
                                    Series("{}: predicted", "γ sweep", "γ", "predicted", group=True),
                                    Series("plain decoding", "γ sweep", "γ", "speed-up", value=1.0)]), []),
         "p4.svg": (OwnPlot("p4.svg", "tables", "loss", series=[Series("{layers} layers, {labels}", figures="training_runs")]),
                    [])}
CURVES = {"p1.svg": [PREFILL, DECODE], "p2.svg": [SCORES], "p3.svg": SWEEP, "p4.svg": [LOSS]}

failures = []


def draw(sample, path, curves, flags):
    """The plot as lib's plotter draws it."""
    lines = "".join(f"{name}\t{style}\t{' '.join(map(repr, xs))}\t{' '.join(map(repr, ys))}\n" for name, style, xs, ys in curves)
    r = subprocess.run([*sample, str(path), *flags], input=lines, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"svg_plot_sample failed: {r.stderr}")


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    sample = sys.argv[1:]  # the sample binary, after its emulator if any
    with tempfile.TemporaryDirectory() as d:
        report = Path(d)
        (report / "plots").mkdir()
        (report / "records").mkdir()
        (report / "records" / "00-tables.csv").write_text(CSV)
        (report / "records" / "00-tables.json").write_text(json.dumps(RECORD))
        tables = course.read_tables(report / "records" / "00-tables.csv")
        listing = []
        for name, (spec, flags) in SPECS.items():
            draw(sample, report / name, CURVES[name], flags)
            listing.append({"svg": name, "chapter": "00", "csv": "records/00-tables.csv", "json": "records/00-tables.json",
                            "series": plots.own_series(spec, tables, RECORD["figures"], name)})
        (report / "plots" / "own_plots.json").write_text(json.dumps(listing))
        if problems := check_own_plots(report):
            failures.append(f"a sound report fails the check: {problems}")
        else:
            print("ok: the binaries' plots of a sound report pass")

        def broken(case, edit, *words):
            expect_problem(failures, case, list(report.glob("p*.svg")), edit, lambda: check_own_plots(report), *words)

        def redraw(name, curves):
            return lambda: draw(sample, report / name, curves, SPECS[name][1])

        wrong = (PREFILL[0], PREFILL[1], PREFILL[2], [1.96748, 2.5, 1.44303, 1.59627])
        broken("a wrong point, drawn where its wrong value belongs", redraw("p1.svg", [wrong, DECODE]),
               "curve 'prefill: time per prompt token' point 2 (y)", "the plot has 2.5", "'1.876'")

        def move_point():
            svg = report / "p1.svg"
            svg.write_text(re.sub(r'(<polyline points=")([\d.]+),([\d.]+)', lambda m: f"{m[1]}{m[2]},{float(m[3]) - 30:.1f}",
                                  svg.read_text(), count=1))
        broken("a point drawn where its data does not put it", move_point, "point 1: its line is drawn at")

        def move_tick():
            svg = report / "p1.svg"
            svg.write_text(re.sub(r'data-tick="y">([\d.]+)<', lambda m: f'data-tick="y">{float(m[1]) + 1:g}<', svg.read_text(),
                                  count=1))
        broken("a tick label that lies", move_tick, "the y tick")
        broken("a curve the record does not have", redraw("p3.svg", SWEEP + [("C: measured", "measured", [1, 2], [1.1, 1.2])]),
               "curve 'C: measured' is in no record")
        broken("a curve the plot lacks", redraw("p1.svg", [PREFILL]), "no curve 'decode: time per generated token'")
        off = (SCORES[0], SCORES[1], NS, [4.0 * n * n for n in NS[:-1]] + [3.0 * NS[-1] ** 2])
        broken("a point off its formula", redraw("p2.svg", [off]), "off its formula")
        broken("the reference line moved", redraw("p3.svg", SWEEP[:-1] + [("plain decoding", "reference", [1, 2], [1.1, 1.1])]),
               "curve 'plain decoding': a line at 1")
        bad_loss = (LOSS[0], LOSS[1], LOSS[2], [1.0, 0.75, 0.6, 0.5])
        broken("a loss curve unlike the record", redraw("p4.svg", [bad_loss]), "point 3: 0.6", "0.625")

        def strip_metadata():
            svg = report / "p1.svg"
            svg.write_text(re.sub(r"<metadata.*?</metadata>\n", "", svg.read_text(), flags=re.S))
        broken("an SVG without its points", strip_metadata, "p1.svg: no <metadata")
    for f in failures:
        print(f"FAILED: {f}")
    print(f"test_own_plots: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
