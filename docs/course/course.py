#!/usr/bin/env python3
"""The whole course on this machine, in one command: run every chapter's binary, compare the
exact stages token by token, and write a static report (index.html plus a page per chapter).

    docs/course/course.py                   quick runs (about 15 minutes on 2 cores), then the report
    docs/course/course.py --full            the READMEs' longer runs (and the benchmarks they quote)
    docs/course/course.py --full --chapters 06 --runs llama --update-readmes
                                            one run again, and the README blocks made from it
                                            (only those: with --chapters, no other block is rewritten)
    docs/course/course.py --report-only     rebuild the pages from the records of the last run
    docs/course/course.py --update-readmes  also rewrite the chapter READMEs' output blocks from the records
    docs/course/course.py --check-readmes   only check that no README output block was edited by hand
    cmake --build --preset default --target course    the same as the first line

The binaries write their tables with --csv (plain numbers, units in the headers) and their
figures with --json; the report reads only those files, so every number on a page comes from
the run that made it. Plots are drawn by gnuplot from the same CSV tables (a real plotting tool,
and a student can rerun its script: each plot's .gp file sits beside its .svg; docs/course/plots.py
checks every table before drawing and stops the report on one that cannot be plotted truthfully);
where a binary draws its own plot with lib's SVG plotter (--plot), the report shows that file.
The notes printed under each table come from the run's log, the generated text from its --json record.
The index opens with one headline number per chapter; the stage-to-stage page puts each stage's cost
(time per token, and the work its record counts) beside its verdict. A quick run states no finding
its own repeat could reverse: chapters.py names each verdict the pages show from timings, and where
a quick run's medians rest on too few timings, or the value lies too near its threshold, the page
says "quick run: see the README's full run" in its place (`supported`).
"""
import argparse
import csv
import datetime
import io
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from chapters import (CHAPTERS, QUICK_MARGIN, QUICK_REPEATS, STAGE_PROMPTS, STAGE_TOKENS, STAGES,  # noqa: E402
                      VERDICT_CELLS)
import mechanisms  # noqa: E402
import plots as plotting  # noqa: E402
import readme_blocks  # noqa: E402


def fail(message):
    print(f"course: error: {message}", file=sys.stderr)
    sys.exit(1)


# --- the machine ---------------------------------------------------------------------------------

def machine_facts(threads):
    cpu, flags = "unknown", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and cpu == "unknown":
                cpu = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    simd = [name for name, flag in [("AVX2", "avx2"), ("FMA", "fma"), ("AVX-512F", "avx512f"),
                                    ("AVX-512 VNNI", "avx512_vnni"), ("AVX-512 BF16", "avx512_bf16")]
            if flag in flags]
    def git(*args):
        r = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else ""
    commit = git("rev-parse", "--short=12", "HEAD") or "unknown"
    if git("status", "--porcelain", "--untracked-files=no"):
        commit += " (with uncommitted changes)"
    return {"cpu": cpu, "cores": os.cpu_count(), "simd": simd, "threads": threads, "commit": commit,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


# --- running -------------------------------------------------------------------------------------

class Runner:
    def __init__(self, build, out, threads):
        self.build, self.out, self.threads = build, out, threads
        self.records = out / "records"
        self.records.mkdir(parents=True, exist_ok=True)

    def binary(self, name, path=None):
        """A chapter's binary by name, or `path` under the build folder (a benchmark)."""
        for found in ([self.build / path, ROOT / path] if path else self.build.glob(f"chapters/*/{name}")):
            if found.exists():
                return found
        fail(f"{path or name} not found under {self.build}; build first (cmake --build --preset default"
             f"{' --target bench' if path and path.startswith('tests/bench') else ''})")

    def run(self, label, command, log):
        """Runs one command, its output to `log`; returns (exit status, seconds)."""
        shown = " ".join(shlex.quote(str(c)) for c in command).replace(str(ROOT) + "/", "")
        print(f"  {label:<44} ", end="", flush=True)
        start = time.monotonic()
        with open(log, "w") as f:
            f.write(f"$ {shown}\n")
            f.flush()
            # Line-buffered stdout (coreutils' stdbuf), so that a note written to stderr in the
            # middle of a table lands between its lines, not inside one.
            status = subprocess.run(["stdbuf", "-oL", *(str(c) for c in command)], stdout=f,
                                    stderr=subprocess.STDOUT, cwd=ROOT).returncode
        seconds = time.monotonic() - start
        print(f"{seconds:6.1f} s" + ("" if status == 0 else f"   FAILED (exit {status}; see {log})"), flush=True)
        return status, seconds, shown

    def chapter_runs(self, chapter, full, only=()):
        results = []
        for run in chapter.runs:
            args = run.full if (full and run.full is not None) else run.quick
            if args is None or (only and run.name not in only):  # a README run only, or not asked for
                continue
            args = [a.replace("{out}", str(self.out)) for a in args]
            stem = self.records / f"{chapter.number}-{run.name}"
            for suffix in (".csv", ".json"):  # --csv appends: start from nothing
                stem.with_suffix(suffix).unlink(missing_ok=True)
            threads = ["-t", str(self.threads)] if run.threads else []
            csv_file = ["--csv", stem.with_suffix(".csv")] if run.csv else []
            command = [self.binary(chapter.binary, run.binary), *args, *threads, *csv_file, "--json", stem.with_suffix(".json")]
            label = Path(run.binary).name if run.binary else chapter.binary
            status, seconds, shown = self.run(f"{label} ({run.name})", command, stem.with_suffix(".log"))
            results.append({"chapter": chapter.number, "run": run.name, "command": shown,
                            "status": status, "seconds": seconds})
        return results

    def stages(self):
        stage_dir = self.out / "stages"
        stage_dir.mkdir(exist_ok=True)
        results = []
        for p, prompt in enumerate(STAGE_PROMPTS):
            for name, label, binary, args, _ in STAGES:
                record = stage_dir / f"{name}-p{p}.json"
                record.unlink(missing_ok=True)
                command = [self.binary(binary), *args, "-p", prompt, "-n", str(STAGE_TOKENS), "-t", str(self.threads),
                           "--json", record]
                status, seconds, shown = self.run(f"{label}, prompt {p + 1}", command, record.with_suffix(".log"))
                results.append({"stage": name, "prompt": p, "command": shown, "status": status, "seconds": seconds})
        return results


# --- reading what the runs wrote -----------------------------------------------------------------

TITLE_NUMBER = re.compile(r"^(\d+[a-z]?)\.\s")


def read_tables(path):
    """The CSV file of one run: [{"title", "number", "headers", "rows"}] in print order."""
    tables = []
    if not path.exists():
        return tables
    for block in re.split(r"\n\s*\n", path.read_text()):
        lines = block.strip("\n").split("\n")
        if not lines or not lines[0].startswith("# "):
            continue
        title = lines[0][2:]
        rows = list(csv.reader(io.StringIO("\n".join(lines[1:]))))
        if not rows:
            continue
        m = TITLE_NUMBER.match(title)
        tables.append({"title": title, "number": m.group(1) if m else "", "headers": rows[0], "rows": rows[1:]})
    return tables


def number(cell):
    try:
        return float(cell)
    except (TypeError, ValueError):
        return None


def readable(cell):
    """A CSV number as a page shows it: whole numbers of 5 digits or more in groups of three."""
    value = number(cell)
    if value is None or not re.fullmatch(r"-?\d{5,}", cell.strip()):
        return cell
    return f"{int(value):,}".replace(",", "\u2009")


def find_table(tables, wanted):
    """By the number in the printed title ("3"), or for an unnumbered table by how the title starts."""
    return next((t for t in tables if t["number"] == wanted or (not t["number"] and t["title"].startswith(wanted))),
                None)


def find_column(table, prefix):
    return next((i for i, h in enumerate(table["headers"]) if h.startswith(prefix)), None)


def row_matches(row, keys):
    """Whether a row's first cells start with `keys` ("16|7B|int8": the first three cells; "" matches any row)."""
    keys = keys.split("|")
    return len(row) >= len(keys) and all(c.strip().startswith(k) for c, k in zip(row, keys))


def find_row(table, keys):
    return next((i for i, r in enumerate(table["rows"]) if row_matches(r, keys)), None)


def cell(tables, table_number, row, column):
    """The cell of table `table_number` in the row whose first cells start with `row` ("16|7B|int8"),
    column `column`."""
    t = find_table(tables, table_number)
    if t is None:
        return None
    c = find_column(t, column)
    i = find_row(t, row)
    return None if c is None or i is None else t["rows"][i][c]


# --- what a page shows beside the tables ---------------------------------------------------------

def table_notes(log, tables):
    """Each table's notes, as its run printed them under the rows (the CSV file holds no notes):
    from the title line, past the header, the rule and the rows, to the blank line. Tables are
    looked for in print order; a table whose printed form is not found gets no notes."""
    if not log.exists():
        return
    lines = log.read_text(errors="replace").split("\n")
    at = 0
    for t in tables:
        t["notes"] = []
        try:
            start = lines.index(t["title"], at)
        except ValueError:
            continue
        # title, header, rule, then each row (a cell with line breaks prints over several lines)
        end = start + 3 + sum(1 + sum(c.count("\n") for c in row) for row in t["rows"])
        if start + 2 >= len(lines) or set(lines[start + 2].strip()) != {"-"}:
            continue
        notes = []
        while end < len(lines) and lines[end].strip():
            notes.append(lines[end])
            end += 1
        t["notes"], at = notes, end


def generated_text(record):
    """(prompt, text) of a run that generated text, from its --json record; None otherwise."""
    if not record.exists():
        return None
    try:
        r = json.loads(record.read_text())
    except ValueError:
        return None
    return (r.get("prompt", ""), r["text"]) if r.get("kind") == "generation" and r.get("text") else None


# --- what a quick run may state (issue 45.4) -----------------------------------------------------

QUICK_NOTE = "quick run: see the README's full run"


def repeats_of(spec, table, row, command):
    """How many timings a value is the median of, by a spec's `repeats` (chapters.py lists the forms);
    None where the spec names no timing. A form that finds nothing stops the report: a page must not
    guess how many."""
    if spec is None:
        return None
    if callable(spec):
        return int(spec(table, row))
    if isinstance(spec, int):
        return spec
    if spec == "title":
        if m := re.search(r"median of (\d+)", table["title"]):
            return int(m.group(1))
    elif spec.startswith("note:"):
        for note in table.get("notes", []):
            if m := re.search(spec[len("note:"):], note):
                return int(m.group(1))
    elif spec.startswith("column "):
        c = find_column(table, spec[len("column "):])
        cells = [number(r[c]) for r in ([row] if row is not None else table["rows"])] if c is not None else [None]
        if cells and None not in cells:
            return int(min(cells))
    elif spec.startswith("arg "):
        flag, default = spec[len("arg "):].split("=")
        words = shlex.split(command)
        return int(words[words.index(flag) + 1]) if flag in words else int(default)
    fail(f"table '{table['title'][:60]}': cannot tell how many timings its values are medians of ('{spec}')")


def supported(quick, repeats, margin=None, never=None):
    """Whether a page may state a finding: always after a full run; after a quick run only when it rests
    on medians of at least QUICK_REPEATS timings and lies at least QUICK_MARGIN from its threshold."""
    if not quick:
        return True
    if never:
        return False
    return (repeats is None or repeats >= QUICK_REPEATS) and (margin is None or margin >= QUICK_MARGIN)


def why_not(repeats, margin, never):
    """Why a quick run cannot state a finding, in a few words."""
    if never:
        return never
    if repeats is not None and repeats < QUICK_REPEATS:
        return f"{'one timing' if repeats == 1 else f'medians of {repeats} timings'}, where a quick run needs {QUICK_REPEATS}"
    return f"{margin:.0%} from its threshold, where a quick run needs {QUICK_MARGIN:.0%}"


def row_label(table, i):
    """A row as the page names it: its first cell, with the second where rows share the first."""
    first = [r[0].strip() for r in table["rows"]]
    row = table["rows"][i]
    if first.count(first[i]) > 1 and len(row) > 1:
        return f"{first[i]}, {table['headers'][1]} {row[1].strip()}"
    return first[i]


def how_many(ns):
    """'median of 3 timings', 'medians of 1–3 timings' (ns: the repeat counts of the values said)."""
    ns = sorted({n for n in ns if n is not None})
    if not ns:
        return ""
    if len(ns) == 1:
        return "one timing" if ns[0] == 1 else f"median of {ns[0]} timings"
    return f"medians of {ns[0]}–{ns[-1]} timings"


def column_of(table, header, what):
    """A spec's column: the header exactly, or the one header that starts so; anything else stops the report."""
    if table["headers"].count(header) == 1:
        return table["headers"].index(header)
    found = [i for i, h in enumerate(table["headers"]) if h.startswith(header)]
    if len(found) != 1 or table["headers"].count(header) > 1:
        fail(f"{what}: column '{header}' names {len(found)} columns of table '{table['title'][:60]}'")
    return found[0]


def apply_findings(chapter, tables, runs, manifest):
    """Each Finding of the chapter on its run's tables: in a quick run, a verdict cell or note line
    that its timings cannot support becomes QUICK_NOTE, and each table with findings says how many
    timings they rest on (t["findings"]) and why any was withheld (t["withheld"]). A verdict cell
    (VERDICT_CELLS) that no Finding covers stops the report: a quick run could state it unsupported."""
    for run_name, run_tables in tables.items():
        record = next((r for r in runs if r["run"] == run_name), None)
        if record is None:
            continue
        quick = record.get("mode", manifest["mode"]) == "quick"
        covered = set()
        for f in (f for f in chapter.findings if f.run == run_name):
            what = f"chapter {chapter.number}, finding on table '{f.table}'"
            t = find_table(run_tables, f.table)
            if t is None:
                fail(f"{what}: run '{run_name}' printed no such table")
            t.setdefault("findings", []), t.setdefault("withheld", [])
            t["quick"] = quick
            if f.note is not None:
                for k, line in enumerate(t.get("notes", [])):
                    if not line.startswith(f.note):
                        continue
                    n = repeats_of(f.repeats, t, None, record["command"])
                    margin = f.margin(t, None) if f.margin else None
                    t["findings"].append(n)
                    if not supported(quick, n, margin, f.never):
                        t["notes"][k] = f"{QUICK_NOTE} (a note withheld: {why_not(n, margin, f.never)})"
                continue
            c = column_of(t, f.column, what)
            for i, row in enumerate(t["rows"]):
                if (f.rows is not None and not row_matches(row, f.rows)) or c >= len(row) or not row[c].strip() \
                        or any(row[0].strip().startswith(k) for k in f.skip):
                    continue
                covered.add((id(t), i, c))
                n = repeats_of(f.repeats, t, row, record["command"])
                margin = f.margin(t, i) if f.margin else None
                t["findings"].append(n)
                if not supported(quick, n, margin, f.never):
                    t["withheld"].append(f"“{row[c].strip()}” in row “{row_label(t, i)}” ({why_not(n, margin, f.never)})")
                    row[c] = QUICK_NOTE
        for t in run_tables:
            for i, row in enumerate(t["rows"]):
                for c, value in enumerate(row):
                    if VERDICT_CELLS.match(value.strip()) and (id(t), i, c) not in covered:
                        fail(f"chapter {chapter.number}: table '{t['title'][:60]}' states '{value.strip()}' (row "
                             f"'{row[0].strip()}', column '{t['headers'][c]}') and no Finding in chapters.py says what "
                             f"it rests on: a quick run could state it unsupported")


def timed_value(spec_repeats, table, rows, command, quick, never=None):
    """(repeats, stated) for a value the page computes from table rows (a headline, a course figure)."""
    ns = [repeats_of(spec_repeats, table, table["rows"][i], command) for i in rows] if spec_repeats is not None else []
    n = min(ns) if ns else None
    return n, supported(quick, n, None, never)


def svg_size(path):
    m = re.search(r'<svg[^>]*?\swidth="([\d.]+)"[^>]*?\sheight="([\d.]+)"', path.read_text()[:2000], re.S)
    return (round(float(m.group(1))), round(float(m.group(2)))) if m else (None, None)


# --- the report ----------------------------------------------------------------------------------

def stage_cost(record):
    """What one stage's run cost, from its --json record: the time of each step (the first is the
    prompt's pass, the time to first token; the others one token each, their median said with how
    many) and the work its record counts (chapter 01: multiply-accumulates; 03: the cache's bytes;
    07: target passes and guesses kept). None when the record is missing."""
    if not record.exists():
        return None
    try:
        r = json.loads(record.read_text())
        seconds = [float(step["seconds"]) for step in r["steps"]]
    except (ValueError, KeyError, TypeError) as e:
        fail(f"{record}: no step times ({type(e).__name__}: {e})")
    if len(seconds) < 2:
        fail(f"{record}: {len(seconds)} step(s): no decode steps to take a median of")
    figures = r.get("figures") or {}
    demo = figures.get("demo", {}) if isinstance(figures.get("demo"), dict) else {}
    if "total_macs" in figures:
        work = f"{figures['total_macs'] / 1e9:.1f} GMAC: every step runs the whole sequence again"
    elif "grouped_cache_bytes" in demo:
        work = (f"K/V cache {demo['grouped_cache_bytes'] / 1e6:.2f} MB, against "
                f"{demo['chapter_02_cache_bytes'] / 1e6:.2f} MB in chapter 02's layout")
    elif "rounds" in demo:
        work = (f"{demo['rounds']} target passes after the prompt for {demo['tokens']} tokens; "
                f"{demo['accepted']} of {demo['drafted']} guesses kept")
    else:
        work = f"{len(seconds)} forward passes: the prompt, then one token each"
    return {"ttft_ms": seconds[0] * 1e3, "step_ms": statistics.median(seconds[1:]) * 1e3, "steps": len(seconds) - 1,
            "total_ms": sum(seconds) * 1e3, "work": work}


def cost_change(before, after):
    """A stage's time per token against the stage before, as a verdict only beyond QUICK_MARGIN (both
    are medians of their decode steps, the pages say how many)."""
    if before is None or after is None:
        return ""
    ratio = after["step_ms"] / before["step_ms"]
    if abs(ratio - 1) < QUICK_MARGIN:
        return f"{ratio:.2f}×: the same, within {QUICK_MARGIN:.0%}"
    return f"{ratio:.2f}×: {'cheaper' if ratio < 1 else 'dearer'}"


def stage_results(build, out):
    """Per prompt, per stage: its cost (stage_cost) and, for each stage compared with an earlier one,
    stage_diff's verdict (its exit status: 0 the same prompt and tokens, 1 they differ), what it prints
    (the largest logit difference) and the time per token against that stage."""
    stage_dir = out / "stages"
    diff = build / "tools" / "stage_diff" / "stage_diff"
    labels = {name: label for name, label, *_ in STAGES}
    pages = []
    for p, prompt in enumerate(STAGE_PROMPTS):
        rows = []
        costs = {name: stage_cost(stage_dir / f"{name}-p{p}.json") for name, *_ in STAGES}
        for name, label, binary, args, against in STAGES:
            row = {"b": label, "cost": costs[name], "a": labels.get(against, ""), "compared": against is not None}
            if against is not None:
                a, b = stage_dir / f"{against}-p{p}.json", stage_dir / f"{name}-p{p}.json"
                if a.exists() and b.exists():
                    r = subprocess.run([str(diff), str(a), str(b)], capture_output=True, text=True)
                    status, text = r.returncode, r.stdout + r.stderr
                else:
                    status, text = -1, "not run"
                row.update(identical=status == 0, detail=text.strip(), change=cost_change(costs[against], costs[name]))
            rows.append(row)
        record = stage_dir / f"01-p{p}.json"
        generated = json.loads(record.read_text()).get("text", "") if record.exists() else ""
        pages.append({"prompt": prompt, "text": generated, "rows": rows})
    return pages


def workload_verdicts(out):
    """Chapters whose runs check tokens themselves (04, 05, and 07's drafts): every table column
    headed "tokens = ..." with cells "k of n" or "✓"/"✗", and chapter 04's count of requests whose
    tokens agree under static and continuous batching."""
    verdicts = []
    for chapter in CHAPTERS:
        for run in chapter.runs:
            stem = out / "records" / f"{chapter.number}-{run.name}"
            for t in read_tables(stem.with_suffix(".csv")):
                for c, header in enumerate(t["headers"]):
                    if not header.startswith("tokens ="):
                        continue
                    for row in t["rows"]:
                        value = row[c].strip()
                        if not value:
                            continue
                        m = re.fullmatch(r"(\d+) of (\d+)", value)
                        same = (m.group(1) == m.group(2)) if m else value in ("✓", "yes")
                        verdicts.append({"chapter": chapter.number, "table": t["title"], "row": row[0].strip(),
                                         "check": header, "value": value, "identical": same})
            if chapter.number == "04" and stem.with_suffix(".json").exists():
                figures = json.loads(stem.with_suffix(".json").read_text()).get("figures", {})
                same, n = figures.get("identical_tokens_across_policies"), figures.get("workload", {}).get("requests")
                if same is not None and n:
                    verdicts.append({"chapter": "04", "table": "the workload", "row": "every request",
                                     "check": "tokens: static = continuous batching", "value": f"{same} of {n}",
                                     "identical": same == n})
    return verdicts


def looked_up(spec, tables, ok, command, quick):
    """A headline's or course figure's value from its run's table: the cell, or with `over` the ratio
    of two cells, with how many timings it rests on; withheld (QUICK_NOTE) where a quick run cannot
    support it. {"text", "withheld", "timings", "value"}."""
    missing = {"text": "not in this run", "withheld": False, "timings": "", "value": None}
    t = find_table(tables.get(spec.run, []), spec.table)
    if spec.run not in ok or t is None:
        return missing
    c, i = find_column(t, spec.column), find_row(t, spec.row)
    j = find_row(t, spec.over) if spec.over is not None else i
    if c is None or i is None or j is None:
        return missing
    a, b = number(t["rows"][i][c].rstrip("×")), number(t["rows"][j][c].rstrip("×"))
    if spec.over is not None:
        if a is None or not b:
            return missing
        text, value = f"{a / b:.2f}×", a / b
    else:
        unit = plotting.unit_of(t["headers"][c])[1]
        text, value = t["rows"][i][c].strip() + ({"%": " %", "×": "×"}.get(unit, f" {unit}") if unit else ""), a
    n, stated = timed_value(getattr(spec, "repeats", None), t, sorted({i, j}), command[spec.run], quick[spec.run],
                            getattr(spec, "never", None))
    if not stated:
        return {"text": QUICK_NOTE, "withheld": True, "value": None,
                "timings": why_not(n, None, getattr(spec, "never", None))}
    return {"text": text, "withheld": False, "timings": how_many([n]), "value": value}


def environment():
    """The pages' templates (docs/course/templates), with the filters they use."""
    import jinja2  # Debian: python3-jinja2
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).resolve().parent / "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["isnum"] = lambda c: number(c) is not None
    env.filters["num"] = readable
    env.filters["how_many"] = how_many
    return env


def report(build, out, manifest):
    env = environment()
    shutil.copy(Path(__file__).resolve().parent / "templates" / "style.css", out / "style.css")
    plots_dir = out / "plots"
    if plots_dir.exists():  # no plot of an earlier report survives into this one
        shutil.rmtree(plots_dir)
    plots_dir.mkdir()
    pages, manifest_plots, manifest_own, manifest_pictures = [], [], [], []
    for chapter in CHAPTERS:
        runs = [r for r in manifest["runs"] if r["chapter"] == chapter.number]
        ok = {r["run"] for r in runs if r["status"] == 0}
        command = {r["run"]: r["command"] for r in runs}
        quick = {r["run"]: r.get("mode", manifest["mode"]) == "quick" for r in runs}
        records = out / "records"
        readme = Path(os.path.relpath(ROOT / "chapters" / chapter.directory / "README.md", out)).as_posix()
        # Each run's README (a part of a chapter may have its own, as chapter 06's packed/ has).
        readmes = {run.name: Path(os.path.relpath(ROOT / "chapters" / chapter.directory / run.readme, out)).as_posix()
                   for run in chapter.runs}
        tables = {run.name: read_tables(records / f"{chapter.number}-{run.name}.csv") for run in chapter.runs}
        for run in chapter.runs:
            table_notes(records / f"{chapter.number}-{run.name}.log", tables[run.name])
        # Figures computed before any cell is withheld: the plots draw every measured value (their
        # captions say how many timings each is a median of); the findings then act on the tables shown.
        plots, missing = [], []
        for i, plot in enumerate(chapter.plots):
            if plot.run not in ok:  # not run, or failed: the page says so; nothing to draw from
                missing.append(f"{plot.title}: its run ({plot.run}) {'failed' if plot.run in {r['run'] for r in runs} else 'was not run'}")
                continue
            svg = plots_dir / f"ch{chapter.number}-{i + 1}.svg"
            try:
                entry = plotting.draw(plot, tables[plot.run], svg, f"{chapter.number}-{plot.run}.csv")
            except plotting.PlotError as e:
                fail(f"chapter {chapter.number}: {e}")
            manifest_plots.append(dict(entry, chapter=chapter.number))
            table = find_table(tables[plot.run], plot.table)
            timings = how_many(repeats_of(plot.repeats, table, table["rows"][k], command[plot.run]) for k in entry["rows"]) \
                if plot.repeats is not None else ""
            plots.append({"file": entry["svg"], "title": plot.title, "script": entry["script"], "size": svg_size(svg),
                          "left_out": entry["left_out"], "timings": timings})
        own_plots = []
        for p in chapter.own_plots:
            if p.run not in ok:
                continue
            path = out / p.file
            if not path.exists():
                fail(f"chapter {chapter.number}: run '{p.run}' succeeded but wrote no plot {p.file}")
            record = records / f"{chapter.number}-{p.run}.json"
            try:
                figures = json.loads(record.read_text())["figures"]
            except (OSError, ValueError, KeyError, TypeError) as e:
                fail(f"chapter {chapter.number}: {p.file}: cannot read the figures of {record.name} ({type(e).__name__}: {e})")
            shown = True
            if p.points is not None:
                try:
                    shown = p.points(figures) >= 2
                except (KeyError, TypeError, ValueError) as e:
                    fail(f"chapter {chapter.number}: {p.file}: cannot count its points in {record.name} ({type(e).__name__}: {e})")
            try:
                series = plotting.own_series(p, tables[p.run], figures, f"{p.file}")
            except plotting.PlotError as e:
                fail(f"chapter {chapter.number}: {e}")
            if shown:
                manifest_own.append({"svg": p.file, "chapter": chapter.number, "csv": f"records/{chapter.number}-{p.run}.csv",
                                     "json": f"records/{record.name}", "series": series})
            counts = []  # how many timings each measured point is a median of
            for e in (e for e in series if e.get("timed") and p.repeats is not None):
                t = next(t for t in tables[p.run] if t["title"] == e["table"])
                counts += [repeats_of(p.repeats, t, t["rows"][k], command[p.run]) for k in e["rows"]]
            timings = how_many(counts)
            own_plots.append({"file": p.file, "caption": p.caption, "size": svg_size(path), "shown": shown,
                              "instead": p.too_few, "timings": timings})
        pictures = []  # the mechanism, drawn from a run's record (docs/course/mechanisms.py)
        for pic in chapter.pictures:
            if pic.run not in ok:
                missing.append(f"{pic.caption}: its run ({pic.run}) {'failed' if pic.run in {r['run'] for r in runs} else 'was not run'}")
                continue
            record = records / f"{chapter.number}-{pic.run}.json"
            svg = plots_dir / f"ch{chapter.number}-{pic.kind}.svg"
            try:
                mechanisms.draw(pic.kind, json.loads(record.read_text())["figures"], svg)
            except (OSError, ValueError, KeyError, TypeError) as e:
                fail(f"chapter {chapter.number}: the {pic.kind} picture: cannot read {record.name} ({type(e).__name__}: {e})")
            except mechanisms.PictureError as e:
                fail(f"chapter {chapter.number}: the {pic.kind} picture: {e}")
            rel = svg.relative_to(out).as_posix()
            manifest_pictures.append({"svg": rel, "chapter": chapter.number, "kind": pic.kind, "json": f"records/{record.name}"})
            pictures.append({"file": rel, "caption": pic.caption, "size": svg_size(svg)})
        texts = []
        for run in chapter.runs:
            if run.name in ok and (generated := generated_text(records / f"{chapter.number}-{run.name}.json")):
                texts.append({"run": run.name, "prompt": generated[0], "text": generated[1]})
        course = []
        for f in chapter.course:
            value = looked_up(f, tables, ok, command, quick)
            course.append({"what": f.what, "course": f.course, "ours": value["text"], "withheld": value["withheld"],
                           "readme": readmes.get(f.run, readme),
                           "timings": value["timings"],
                           "where": f"table {f.table}" if f.table[0].isdigit() else f"the table “{f.table}…”", "why": f.why})
        headline = None
        if chapter.headline is not None:
            headline = dict(looked_up(chapter.headline, tables, ok, command, quick), what=chapter.headline.what)
        apply_findings(chapter, tables, runs, manifest)
        shown_tables = {run.name: tables[run.name] for run in chapter.runs if run.tables}
        pages.append({"chapter": chapter, "runs": runs, "tables": shown_tables, "plots": plots, "own_plots": own_plots,
                      "pictures": pictures,
                      "missing_plots": missing, "texts": texts, "course": course, "headline": headline, "readme": readme,
                      "readmes": readmes,
                      "failed": any(r["status"] != 0 for r in runs), "seconds": sum(r["seconds"] for r in runs)})
    (plots_dir / "plots.json").write_text(json.dumps(manifest_plots, indent=1, ensure_ascii=False))
    (plots_dir / "own_plots.json").write_text(json.dumps(manifest_own, indent=1, ensure_ascii=False))
    (plots_dir / "pictures.json").write_text(json.dumps(manifest_pictures, indent=1, ensure_ascii=False))
    stages = stage_results(build, out)
    common = {"machine": manifest["machine"], "pages": pages, "mode": manifest["mode"],
              "total_seconds": manifest["total_seconds"]}
    common.update(quick_note=QUICK_NOTE, quick_repeats=QUICK_REPEATS, quick_margin=QUICK_MARGIN, stage_tokens=STAGE_TOKENS)
    for page in pages:
        (out / f"ch{page['chapter'].number}.html").write_text(env.get_template("chapter.html.j2").render(page=page, **common))
    (out / "stages.html").write_text(env.get_template("stages.html.j2").render(
        stages=stages, workloads=workload_verdicts(out), **common))
    (out / "index.html").write_text(env.get_template("index.html.j2").render(stages=stages, **common))
    return out / "index.html"


def bandwidth(out):
    """The machine's read bandwidth as a chapter measured it (figures.machine in its record)."""
    for record in sorted((out / "records").glob("*.json")):
        try:
            figures = json.loads(record.read_text()).get("figures", {})
        except (OSError, ValueError):
            continue
        bw = figures.get("machine", {}).get("read_bandwidth_bytes_per_s") if isinstance(figures, dict) else None
        if bw:
            return bw
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--build", type=Path, default=ROOT / "build", help="the build folder with the chapter binaries")
    parser.add_argument("--out", type=Path, default=None, help="where the records and pages go (default BUILD/course)")
    parser.add_argument("--full", action="store_true", help="the READMEs' longer runs instead of the quick ones")
    parser.add_argument("--chapters", default="", help="only these chapters, e.g. 01,02 (default: all)")
    parser.add_argument("--runs", default="", help="with --chapters: only these runs of them, e.g. student "
                        "(the names in docs/course/chapters.py; the other runs keep their last records)")
    parser.add_argument("--no-stages", action="store_true", help="skip the stage-to-stage comparison")
    parser.add_argument("--report-only", action="store_true", help="only rebuild the pages from the last run's records")
    parser.add_argument("--update-readmes", action="store_true",
                        help="rewrite the chapter READMEs' output blocks from the records (docs/course/readme_blocks.py)")
    parser.add_argument("--check-readmes", action="store_true",
                        help="only check that every README output block is as generated (exit 1 if one was edited)")
    parser.add_argument("-t", "--threads", type=int, default=os.cpu_count(), help="threads for every binary")
    args = parser.parse_args()
    if args.check_readmes:
        blocks, problems = readme_blocks.check(ROOT)
        for p in problems:
            print(f"course: {p}", file=sys.stderr)
        print(f"course: {blocks} README output blocks, {len(problems)} edited by hand")
        sys.exit(1 if problems else 0)
    out = (args.out or args.build / "course").resolve()
    build = args.build.resolve()
    if args.threads < 1:
        parser.error("--threads must be at least 1")
    wanted = [c.strip() for c in args.chapters.split(",") if c.strip()]
    unknown = [w for w in wanted if w not in {c.number for c in CHAPTERS}]
    if unknown:
        parser.error(f"--chapters: no chapter {', '.join(unknown)} (there are {', '.join(c.number for c in CHAPTERS)})")
    only_runs = {r.strip() for r in args.runs.split(",") if r.strip()}
    if only_runs:
        known = {run.name for c in CHAPTERS if c.number in wanted for run in c.runs}
        if not wanted or only_runs - known:
            parser.error(f"--runs needs --chapters and names of their runs ({', '.join(sorted(known)) or 'none'})")
    if shutil.which("gnuplot") is None:
        fail("gnuplot not found (Debian: gnuplot-nox; ./setup.sh --deps-only installs it)")
    try:
        import jinja2  # noqa: F401
    except ImportError:
        fail(f"the Python module jinja2 is missing for {sys.executable} (Debian: python3-jinja2)")

    if not (build / "tools" / "stage_diff" / "stage_diff").exists():
        fail(f"{build}/tools/stage_diff/stage_diff not found; build first (cmake --build --preset default)")
    manifest_path = out / "manifest.json"
    if args.report_only:
        if not manifest_path.exists():
            fail(f"{manifest_path} not found: run the course first")
        manifest = json.loads(manifest_path.read_text())
    else:
        out.mkdir(parents=True, exist_ok=True)
        runner = Runner(build, out, args.threads)
        mode = "full" if args.full else "quick"
        print(f"course: {mode} runs of {'chapters ' + ', '.join(wanted) if wanted else 'every chapter'}, "
              f"{args.threads} threads, records in {out}")
        start = time.monotonic()
        runs = []
        for chapter in CHAPTERS:
            if not wanted or chapter.number in wanted:
                runs += runner.chapter_runs(chapter, args.full, only_runs)
        stage_runs = [] if args.no_stages else (print("  stage to stage:") or runner.stages())
        for r in runs:
            r["mode"] = mode
        manifest = {"mode": mode, "machine": machine_facts(args.threads), "runs": runs, "stage_runs": stage_runs,
                    "total_seconds": time.monotonic() - start}
        if wanted and manifest_path.exists():  # a few chapters again: keep the others' records
            old = json.loads(manifest_path.read_text())
            again = {(r["chapter"], r["run"]) for r in runs}
            manifest["runs"] = [r for r in old["runs"] if (r["chapter"], r["run"]) not in again] + runs
            manifest["runs"].sort(key=lambda r: r["chapter"])
            if args.no_stages:
                manifest["stage_runs"] = old.get("stage_runs", [])
            modes = sorted({r.get("mode", old["mode"]) for r in manifest["runs"]})
            manifest["mode"] = " and ".join(modes)
            manifest["total_seconds"] = sum(r["seconds"] for r in manifest["runs"] + manifest["stage_runs"])
        manifest["machine"]["read_bandwidth"] = bandwidth(out)
        manifest_path.write_text(json.dumps(manifest, indent=1))
    index = report(build, out, manifest)
    if args.update_readmes:
        m = manifest["machine"]
        origin = f"{m['cpu']}, {m['threads']} threads, {m['date'][:10]}"
        full_runs = {f"{r['chapter']}-{r['run']}" for r in manifest["runs"]
                     if r.get("mode", manifest["mode"]) == "full" and r["status"] == 0}
        # Named chapters rewrite only the blocks of the runs just made: another chapter's record in
        # the same folder may come from another day or a slower minute, and would be stamped as this run.
        only = {f"{r['chapter']}-{r['run']}" for r in runs} if wanted and not args.report_only else None
        missing = readme_blocks.update(ROOT, out / "records", origin, full_runs, only)
        for name in missing:
            print(f"course: warning: README block not written: {name} (run its chapter first)", file=sys.stderr)
    failed = [r for r in manifest["runs"] + manifest["stage_runs"] if r["status"] != 0]
    print(f"course: report in {index} ({manifest['total_seconds'] / 60:.1f} min of runs)")
    if failed:
        fail(f"{len(failed)} run(s) failed: " + "; ".join(r["command"] for r in failed))


if __name__ == "__main__":
    main()
