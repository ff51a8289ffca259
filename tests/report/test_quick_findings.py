#!/usr/bin/env python3
"""A quick run of the course never states a finding its own repeat could reverse (issue 45.4):
docs/course/course.py withholds, in a quick run, every verdict chapters.py names (a Finding) that
rests on medians of fewer than QUICK_REPEATS timings or lies within QUICK_MARGIN of its threshold,
and the page says "quick run: see the README's full run" in its place, and how many timings the
verdicts it states rest on.

A made-up chapter's table of drafts ("median of N runs", a speed-up and a verdict per row), a note
that judges, and a headline, through the report's own functions and chapter template:
- quick run, medians of 1: every verdict, the note and the headline are withheld, the page links the
  README and says why ("one timing");
- quick run, medians of 3: the verdicts are stated, but for the row 4% from 1× ("within 10%");
- full run, medians of 1: everything is stated, as the README's run is;
- a verdict cell no Finding names stops the report, naming the cell;
- a count the spec cannot find ("median of" missing from the title) stops the report.

    tests/report/test_quick_findings.py     exit 0 when every case holds, 1 otherwise;
                                            77 (skipped) without jinja2 (as the report itself)
"""
import copy
import sys
from html import unescape
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "docs" / "course"))
import course  # noqa: E402
from chapters import Chapter, Finding, Headline, Run, ratio_margin  # noqa: E402

TABLE = {"title": "Each draft at γ = 4: 32 tokens, median of {n} runs", "number": "",
         "headers": ["draft", "speed-up (×)", "verdict"],
         "rows": [["none: plain decoding", "1.00", ""], ["Q8_0", "1.55", "faster"], ["Q4_1", "1.04", "faster"],
                  ["first 10 layers", "0.36", "SLOWER"]],
         "notes": ["Best draft: Q8_0, 1.55× over plain decoding.", "c: a guess's time ÷ a decode step."]}

CHAPTER = Chapter("00", "00_made_up", "A made-up chapter", "A lesson.", runs=[Run("tables", [])],
                  headline=Headline("speed-up, Q8_0", "tables", "Each draft", "Q8_0", "speed-up", repeats="title"),
                  findings=[Finding("tables", "Each draft", column="verdict", repeats="title",
                                    margin=ratio_margin("speed-up")),
                            Finding("tables", "Each draft", note="Best draft", repeats="title")])

failures = []


def expect(case, condition, said):
    if condition:
        print(f"ok: {case}")
    else:
        failures.append(f"{case}: {said}")


def page(mode, n, chapter=CHAPTER, title=None, readme="README.md"):
    """The made-up run's table after the findings, and its page as the report renders it."""
    table = copy.deepcopy(TABLE)
    table["title"] = title or table["title"].format(n=n)
    tables = {"tables": [table]}
    runs = [{"chapter": "00", "run": "tables", "command": "ch00 --repeats {n}", "status": 0, "seconds": 1.0, "mode": mode}]
    manifest = {"mode": mode, "runs": runs}
    headline = course.looked_up(chapter.headline, tables, {"tables"}, {"tables": runs[0]["command"]},
                                {"tables": mode == "quick"})
    course.apply_findings(chapter, tables, runs, manifest)
    p = {"chapter": chapter, "runs": runs, "tables": tables, "plots": [], "own_plots": [], "pictures": [], "missing_plots": [], "texts": [],
         "course": [], "headline": headline, "readme": "README.md", "readmes": {"tables": readme}, "failed": False,
         "seconds": 1.0}
    common = {"machine": {"cpu": "a CPU", "cores": 2, "simd": [], "read_bandwidth": None, "threads": 2, "commit": "x",
                          "date": "today"}, "pages": [p], "mode": mode, "total_seconds": 1.0,
              "quick_note": course.QUICK_NOTE, "quick_repeats": course.QUICK_REPEATS,
              "quick_margin": course.QUICK_MARGIN, "stage_tokens": 24}
    html = course.environment().get_template("chapter.html.j2").render(page=p, **common)
    return table, headline, unescape(html)


def stops(case, run, *words):
    """The report must stop (course.fail: exit 1) with a line naming the problem."""
    import contextlib
    import io
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            run()
    except SystemExit as e:
        expect(case, e.code == 1 and all(w in err.getvalue() for w in words), f"it said {err.getvalue()!r}")
        return
    failures.append(f"{case}: the report went on")


def main():
    try:
        import jinja2  # noqa: F401
    except ImportError:
        print("skipped: the Python module jinja2 is missing (Debian: python3-jinja2)")
        return 77
    note = course.QUICK_NOTE

    table, headline, html = page("quick", 1)
    verdicts = [r[2] for r in table["rows"]]
    expect("quick, medians of 1: every verdict withheld", verdicts == ["", note, note, note], f"verdicts {verdicts}")
    expect("quick, medians of 1: the judging note withheld",
           table["notes"][0].startswith(note) and "one timing" in table["notes"][0] and table["notes"][1] == TABLE["notes"][1],
           f"notes {table['notes']}")
    expect("quick, medians of 1: the headline withheld", headline["withheld"] and headline["text"] == note, f"{headline}")
    expect("quick, medians of 1: the page links the README in their place and says why",
           html.count(f'<a class="quick" href="README.md">{note}</a>') == 4 and "faster" not in html.replace("Q8_0", "")
           .split("<h2>Tables</h2>")[1].split("Withheld in this quick run")[0] and "one timing, where a quick run needs 3" in html,
           "the page does not show the withheld verdicts as such")

    _, _, html = page("quick", 1, readme="packed/README.md")
    expect("quick, medians of 1, a run shown in a part's README: the page links that README",
           html.count(f'<a class="quick" href="packed/README.md">{note}</a>') == 4 and 'href="README.md"' not in html,
           "the withheld cells do not link the run's own README")

    table, headline, html = page("quick", 3)
    verdicts = [r[2] for r in table["rows"]]
    expect("quick, medians of 3: verdicts stated, the one 4% from 1× withheld",
           verdicts == ["", "faster", note, "SLOWER"] and "“faster” in row “Q4_1” (4% from its threshold, where a quick run needs 10%)" in html, f"verdicts {verdicts}")
    expect("quick, medians of 3: the page says how many", "The verdicts here rest on timings: median of 3 timings each" in html,
           "no 'median of 3 timings' on the page")
    expect("quick, medians of 3: the headline stated with its count",
           headline["text"] == "1.55×" and headline["timings"] == "median of 3 timings", f"{headline}")

    table, headline, html = page("full", 1)
    verdicts = [r[2] for r in table["rows"]]
    expect("full, medians of 1: stated as the README's run states them",
           verdicts == ["", "faster", "faster", "SLOWER"] and not headline["withheld"] and note not in html
           and "rest on timings: one timing each" in html, f"verdicts {verdicts}, headline {headline}")

    bare = Chapter("00", "00_made_up", "A made-up chapter", "A lesson.", runs=[Run("tables", [])],
                   headline=CHAPTER.headline, findings=[CHAPTER.findings[1]])
    stops("a verdict no Finding names stops the report", lambda: page("quick", 3, bare),
          "states 'faster'", "row 'Q8_0'", "column 'verdict'", "no Finding")
    stops("a count the spec cannot find stops the report",
          lambda: page("quick", 3, title="Each draft at γ = 4: 32 tokens"), "cannot tell how many timings", "'title'")
    for f in failures:
        print(f"FAILED: {f}")
    print(f"test_quick_findings: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
