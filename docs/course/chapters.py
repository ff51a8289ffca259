"""What the course report runs and shows, chapter by chapter.

Each chapter names its binary, the runs that make its tables (a quick form for the report's
~15 minutes on 2 cores, and the README's longer form), the plots drawn from its CSV tables, the
plots its binary draws itself and where the record holds their points, the course's own figures
to put beside ours, its headline number for the index, and the findings its pages state from
measurements that a quick run may not support. Tables are found by the number in their printed
title ("3. Decode ..." is table 3); columns by the start of their header, as the CSV file writes
it (plain numbers, the unit in brackets: see lib/measure/csv_numbers.hpp).

{out} in an argument is the run's output folder.

Quick runs (issue 45.4): a finding a page states from timings rests on medians of at least
QUICK_REPEATS timings, and the pages say how many. Where a quick run's timings are fewer, or its
measured value lies within QUICK_MARGIN of the verdict's threshold, the page says "quick run: see
the README's full run" instead (docs/course/course.py, `supported`). The quick runs' arguments below
ask for QUICK_REPEATS repeats wherever a table's verdicts rest on them.
"""
import math
import re
from dataclasses import dataclass, field

QUICK_REPEATS = 3     # a quick run's timed finding rests on medians of at least this many timings
QUICK_MARGIN = 0.10   # ... and lies at least this far (relative) from its verdict's threshold: the
                      # spread the issue found between two tables of one quick run (1.20× against 1.08×)

# REPEATS, the `repeats` of a spec: how many timings each value is the median of (said on the page; a quick
# run's finding needs QUICK_REPEATS), one of
#     an int                     that many
#     "title"                    the table title's "median of N"
#     "note:<regex>"             group 1 of the regex in the table's notes ("note:decode: .*?median of (\d+) steps")
#     "column <header>"          the row's cell in that column ("column runs"; for a note: the smallest)
#     "arg <flag>=<default>"     the run's command-line value of the flag, its default when absent
#     a function (table, row)    anything else (row: the row's cells, None for a note)
# and None where no timing is involved.


@dataclass
class Run:
    name: str                 # records/<chapter>-<name>.csv/.json/.log
    quick: list | None        # arguments of the quick run (None: a README run only, --full alone runs it)
    full: list | None = None  # arguments of the README's run (None: the same as quick)
    threads: bool = True      # False for a run that refuses -t (it measures nothing)
    binary: str | None = None  # another program than the chapter's binary: a path in the build folder
                               # (a benchmark of tests/bench whose figures the README quotes) or a
                               # script of the repository (tests/bench/compare_llama_cpp.py)
    tables: bool = True       # False: the page shows the run's generated text, not its tables (another
                              # chapter's binary run on this chapter's output: its tables are not this chapter's)
    csv: bool = True          # False: a demo-only run, which prints no table and refuses --csv
    readme: str = "README.md"  # the README (in the chapter's directory) that shows this run's full
                               # output: a figure a quick run withholds links there


@dataclass
class Ref:
    """A reference line on a plot (grey, dotted, in the key): a value, a row's value, or a power law."""
    label: str                # "{value}" in it is replaced by the value of `row`
    value: float | None = None  # a horizontal line (a vertical one on bars) at this value
    row: str | None = None    # ... at the plot's first value column in the row whose first cell starts so
    power: float | None = None  # a line ∝ x^power through the first point of value column `of`
    of: int = 0
    course: bool = False      # the course text's figure (its own colour and dash), not a baseline of ours


@dataclass
class Plot:
    """A figure drawn with gnuplot (docs/course/plots.py) from one CSV table: x against one or more
    value columns. Columns are named by their header, exactly or by a prefix that only one header
    has; axis titles get their unit from the headers. Every row is plotted unless `rows` or `skip`
    leaves it out, and a plotted cell that is not a number stops the report."""
    run: str                  # which run's CSV
    table: str                # the table's number as printed ("3"), or how an unnumbered title starts
    x: str                    # column header (prefix): x, or the bars' category
    ys: list                  # value column headers (prefixes): one line, series of points or bar each
    title: str
    xlabel: str               # axis titles: the unit in a header ("time (ms)") is added, never typed here;
    ylabel: str               # a header without one ("KiB/token at 128k") leaves it to the title
    logx: bool = False
    logy: bool = False        # on bars: the value axis
    labels: str | None = None  # a column whose text labels each point (a scatter, no lines)
    rows: str | None = None    # only rows whose first cell starts with this
    skip: tuple = ()           # leave out rows whose first cell starts with one of these
    bars: bool = False         # x is a category (text): one horizontal bar per row and value column
    category: object = None    # bars: a function of the row ({header: cell}) giving its label (default: the x cell)
    predicted: tuple = ()      # value columns that are predictions: dashed lines, hatched bars
    refs: list = field(default_factory=list)
    clip: float | None = None  # scatter: points above clip × the median are drawn at the top edge, marked off scale
    names: list | None = None  # the key's names of the value columns (default: their headers without the unit)
    parse: dict = field(default_factory=dict)  # {column header: regex}: the number is the regex's group 1 in a
                               # text cell ("507 (86.9)" → 86.9 with r"\((\S+)\)"); plots.json records it
    repeats: object = None     # timings: how many each plotted value is a median of (see REPEATS), said in the caption


@dataclass
class Series:
    """One curve of a plot a binary draws itself (OwnPlot) and where the run's record holds its points.
    lib/measure/svg_plot writes each curve's points into the SVG (<metadata id="plot-data">); the
    report lists what they must be in plots/own_plots.json and tests/report/check_report.py compares
    the two: point i of the curve with row i of the rows named here, x and y each to the digits the
    record's cell prints, or with entry i of a list of the --json record's figures."""
    name: str                  # the curve's name in the SVG; "{}" in it: one curve per group (below)
    table: str | None = None   # CSV: the table (its number as printed, or how its title starts)
    x: str = ""                # CSV: column headers (exactly, or a prefix only one header has)
    y: str = ""
    rows: str | None = None    # only the rows whose first cell starts so
    group: bool = False        # one curve per distinct first cell, in print order; "{}" in name is that cell
    law: tuple | None = None   # (a, k): every point lies on y = a·x^k (a formula drawn beyond the table's
                               # rows); the rows must still each have their point
    value: float | None = None  # a reference line: y = value from the rows' first x to their last
    figures: str | None = None  # JSON instead: figures[figures] is a list, one curve per entry, point i its
                                # loss[i] ÷ loss[0] against tokens_seen (chapter 08's loss curves);
                                # "{field}" in name from the entry
    timed: bool = True         # its points are timings (the OwnPlot's repeats count them); False: a model's


@dataclass
class OwnPlot:
    """A plot a binary draws itself (--plot, lib's SVG plotter), shown as it is; its curves are
    checked against the record (series)."""
    file: str                 # in the report folder, as the run's arguments name it
    run: str
    caption: str
    points: object = None     # a function of the record's figures: the points per curve; under 2, no plot
    too_few: str = ""         # what the page says instead
    series: list = field(default_factory=list)  # every curve the SVG has, in its order
    repeats: object = None    # timings: how many each point is a median of (see REPEATS), said in the caption


@dataclass
class Picture:
    """A picture of the mechanism (docs/course/mechanisms.py), drawn from a run's record: its kind
    ("timeline", "blocks", "rounds") names the drawing and the check."""
    run: str
    kind: str
    caption: str


@dataclass
class CourseFigure:
    """A figure the course text gives, beside the cell of ours that measures the same thing."""
    what: str
    course: str               # as the course states it
    run: str
    table: str
    row: str                  # the row whose first cells start with these ("16|7B|int8"; "" = first row)
    column: str               # header prefix
    why: str = ""             # why ours may differ
    over: str | None = None   # show the ratio cell(row) ÷ cell(over), same column
    value: float | None = None  # the course's figure as a number, for a reference line (course_ref)
    repeats: object = None    # ours from timings: how many each is a median of (see REPEATS)


def course_ref(figure, label):
    """The course's figure as a reference line on one of our plots."""
    return Ref(f"the course: {label}", value=figure.value, course=True)


@dataclass
class Headline:
    """The index's one number for a chapter: a cell of a table, or the ratio of two."""
    what: str
    run: str
    table: str
    row: str                  # as CourseFigure.row
    column: str               # header prefix
    over: str | None = None   # the ratio cell(row) ÷ cell(over), same column
    repeats: object = None    # from timings: how many each value is a median of (see REPEATS); None: no timing
    never: str | None = None  # no quick run supports it: why (the index says "quick run: ..." instead)


@dataclass
class Finding:
    """A verdict a chapter's page shows from its run's tables that may not hold in a quick run:
    the cells of one column ("faster", "← knee", "✓ (best agreement)", a speed-up) or the note lines
    under a table that start with `note`. In a quick run each is shown only where it rests on medians
    of at least QUICK_REPEATS timings (repeats) and, with margin, lies at least QUICK_MARGIN from its
    threshold; else the page says "quick run: see the README's full run" in its place. The report
    stops on a verdict cell (VERDICT_CELLS) that no Finding names, in any run: a quick run could
    state it unsupported."""
    run: str
    table: str
    column: str | None = None  # the verdict column (its non-empty cells), or
    note: str | None = None    # the note lines starting so
    rows: str | None = None    # only the rows whose first cells start so ("a|b": the first two cells)
    skip: tuple = ()           # not the rows whose first cell starts with one of these (the baseline itself)
    repeats: object = None     # see REPEATS
    margin: object = None      # a function (table, row index) → the relative distance of the measured
                               # value from the verdict's threshold; None: repeats alone decide
    never: str | None = None   # no quick run supports it: why


# A table's verdict cells: each must belong to a Finding (the report stops otherwise).
VERDICT_CELLS = re.compile(r"^(faster|slower|SLOWER|← knee|✓ \(best agreement\))$")


def ratio_margin(column, threshold=1.0):
    """A Finding's margin: how far the row's number in `column` ("1.55" or "1.55×") lies from threshold."""
    def margin(table, i):
        header = next(h for h in table["headers"] if h.startswith(column))
        value = float(table["rows"][i][table["headers"].index(header)].rstrip("×").strip())
        return abs(value / threshold - 1)
    return margin


def knee_margin(table, i):
    """Chapter 04's knee (tables/batch_sweep.cpp): the last B whose doubling raised latency by at most
    √2, so that every later doubling raised it by more. The verdict rests on that doubling and every
    later one; returns how far the nearest of them lies from √2 (i is not needed: one knee per table)."""
    c = next(j for j, h in enumerate(table["headers"]) if h.startswith("from B/2: latency"))
    ratios = [float(r[c].rstrip("×")) if r[c].strip() else None for r in table["rows"]]
    knee = max((k for k, r in enumerate(ratios) if r is not None and r <= math.sqrt(2)), default=0)
    return min(abs(r / math.sqrt(2) - 1) for r in ratios[max(knee, 1):] if r is not None)


def decode_steps(table, row):
    """Chapter 02's demo (table 1): the decode figure is the median of its generated tokens' steps but the first."""
    return int(re.search(r"(\d+) generated", table["title"]).group(1)) - 1


@dataclass
class Chapter:
    number: str
    directory: str            # chapters/<directory>; its binary is "ch" + directory
    title: str
    lesson: str
    runs: list
    plots: list = field(default_factory=list)
    own_plots: list = field(default_factory=list)
    pictures: list = field(default_factory=list)
    course: list = field(default_factory=list)
    headline: Headline | None = None
    findings: list = field(default_factory=list)

    @property
    def binary(self):
        return "ch" + self.directory


def shape_label(row):
    """Table 7's bars: the model, with its window where it has one, so the rows of one shape at
    several windows get labels of their own ("the same" is this model, the row above them)."""
    model = row["model"].strip().replace("the same", "this model")
    window = re.search(r"window (\d+)", row["configuration"])
    return f"{model}, window {window.group(1)}" if window and "window" not in model else model


# Chapter 06's decode speed: the median of 9 steps in each of --rounds rounds (its notes say how many).
DECODE_STEPS_06 = r"note:decode: .*?median of (\d+) steps"
# Chapter 08's quick run trains each student for one step: which label wins is noise there.
ONE_STEP = "a quick run trains each student for one step"

# The course's figures that are also drawn as reference lines on our plots.
VERIFY_COST = CourseFigure("one verification pass over γ + 1 = 5 positions ÷ one decode step", "1.00× (one pass)",
                           "tables", "What verifying costs", "4", "÷ decode step",
                           "the course counts a pass over γ + 1 positions as one decode step; on a CPU the extra "
                           "positions' arithmetic shows", value=1.0, repeats="title")

CHAPTERS = [
    Chapter(
        "01", "01_naive_loop", "The naive generation loop",
        "Generating one token re-runs the whole sequence through the model, so a step costs more "
        "the longer the text gets and a whole answer costs quadratically many operations.",
        runs=[Run("demo", ["-n", "32"]),
              Run("sweep", ["--sweep", "--repeats", "3"]),
              # The top-level README's yardstick: one forward pass against the read bandwidth.
              Run("bench", None, [], binary="tests/bench/bench_forward")],
        plots=[Plot("sweep", "One naive step", "T", ["time ("], "Cost of one naive step against sequence length",
                    "tokens in the sequence, T", "time of one step", logx=True, logy=True,
                    refs=[Ref("∝ T, through the first point", power=1)], repeats="title")],
        headline=Headline("one naive step at T = 512 ÷ at T = 16 (time)", "sweep", "One naive step", "512", "time (",
                          over="16", repeats="title"),
        findings=[Finding("sweep", "One naive step", note="fitted: step time", repeats="title")],
    ),
    Chapter(
        "02", "02_kv_cache", "The KV cache",
        "Keep every position's keys and values: the prompt is processed once (prefill, a "
        "matrix-matrix product) and each new token is one cheap decode step over the cache.",
        runs=[Run("tables", ["--repeats", "3", "--growth-tokens", "128", "--workload-tokens", "64", "--tiled-tokens", "1024",
                             "--plot", "{out}/ch02_prefill_vs_decode.svg", "--scores-plot", "{out}/ch02_score_bytes.svg"],
                  ["--repeats", "5", "--plot", "{out}/ch02_prefill_vs_decode.svg",
                   "--scores-plot", "{out}/ch02_score_bytes.svg"]),
              Run("bench", None, [], binary="tests/bench/bench_decode")],
        # Table 6 (a decode step against the cache length) is the decode curve of the binary's own plot.
        plots=[Plot("tables", "3", "T", ["recompute", "with cache"], "Work to generate T tokens: recompute vs cache",
                    "tokens generated, T", "multiply-accumulates", logx=True, logy=True,
                    refs=[Ref("∝ T²", power=2, of=0), Ref("∝ T", power=1, of=1)])],
        own_plots=[OwnPlot("ch02_prefill_vs_decode.svg", "tables", "Prefill and decode time per token (tables 5 and 6)",
                           series=[Series("prefill: time per prompt token", "5", "P (", "per token"),
                                   Series("decode: time per generated token", "6", "C (", "step (")],
                           repeats="column runs"),
                   OwnPlot("ch02_score_bytes.svg", "tables", "Score-matrix bytes of one head, one step (table 2)",
                           # 4-byte floats: n² of them recomputed, n with a cache; table 2 prints n = 256 … 4096
                           series=[Series("recompute: n × n scores (naive loop)", "2", "n (", "scores n×n", law=(4, 2)),
                                   Series("with a cache: 1 × n scores", "2", "n (", "scores 1×n", law=(4, 1))])],
        course=[CourseFigure("peak memory, the uncached loop ÷ the cached loop (as the course writes them)",
                             "8.3×", "tables", "8", "course naive ÷ course cached", "40 + 256",
                             "the course measures a 0.5B model (24 layers, 2 kv heads) at its own lengths; "
                             "chapter 01 itself avoids the n×n scores and keeps one logit row (row ch01 ÷ ch02)"),
                CourseFigure("decode step at 1024 cached tokens ÷ at 16", "no measurable change", "tables", "6",
                             "1024", "step", "on a CPU the attention over 1024 positions is a visible share of "
                             "a 135M model's step; the course's GPU hides it", over="16", repeats="column runs")],
        headline=Headline("decode speed, KV cache ÷ naive loop", "tables", "1", "decode", "ch02 speedup",
                          repeats=decode_steps),
        findings=[Finding("tables", "1", column="ch02 speedup", rows="time to first token", repeats=1),
                  Finding("tables", "1", column="ch02 speedup", rows="decode", repeats=decode_steps,
                          margin=ratio_margin("ch02 speedup")),
                  Finding("tables", "1", column="ch02 speedup", rows="whole generation", repeats=1),
                  Finding("tables", "2", column="speedup", repeats="column runs", margin=ratio_margin("speedup"))],
    ),
    Chapter(
        "03", "03_gqa", "Grouped-query attention",
        "Query heads share key/value heads, so the cache stores only the distinct ones: the same "
        "tokens from a cache H/H_kv times smaller.",
        runs=[Run("tables", ["--eval-tokens", "1024", "--window", "256", "--sliding-windows", "64,128"],
                  ["--eval-tokens", "2048"]),
              # Table 10 at the contexts its README section discusses (the README-only run).
              Run("layout", None, ["--no-eval", "-n", "8", "--sweep-contexts", "128,1024,4096,8192"])],
        plots=[Plot("tables", "7", "model", ["KiB/token at 128k"], "K/V cache per token at 128k tokens (2-byte elements)",
                    "", "KiB per token, over a 128k-token sequence", logy=True, bars=True, category=shape_label),
               Plot("tables", "4", "cache bytes", ["perplexity, all positions"],
                    "Perplexity against the cache a window keeps (no retraining)", "K/V cache of the text",
                    "perplexity (held-out text)", logy=True, labels="cache",
                    refs=[Ref("full cache: {value:.2f}", row="full")])],
        course=[CourseFigure("cache of full multi-head ÷ grouped (query heads ÷ kv heads)", "7× (14 ÷ 2)", "tables",
                             "2", "MHA", "fp16 B/token", "this model has 9 query heads over 3 kv heads: 3×",
                             over="grouped")],
        headline=Headline("K/V cache per token, grouped ÷ multi-head (identical tokens)", "tables", "2", "grouped",
                          "vs MHA"),
    ),
    Chapter(
        "04", "04_batching", "Batching",
        "A decode step streams every weight once whether it serves one sequence or many, so a batch "
        "multiplies throughput almost for free until compute, not memory, becomes the limit; "
        "continuous batching refills a slot the moment its request ends.",
        runs=[Run("tables", ["--requests", "16", "--repeats", "3", "--plot", "{out}/ch04_throughput_vs_latency.svg"],
                  ["--repeats", "5", "--plot", "{out}/ch04_throughput_vs_latency.svg"])],
        # Table 1's throughput against latency is the binary's own plot, with the roofline model beside it.
        plots=[Plot("tables", "4", "request", ["static: latency", "continuous: latency"],
                    "Latency of each request in the static batch that holds the longest", "", "latency", bars=True,
                    category=lambda r: f"request {r['request'].strip()}: {r['tokens'].strip()} tokens",
                    names=["static batching", "continuous batching"], repeats=1)],
        own_plots=[OwnPlot("ch04_throughput_vs_latency.svg", "tables",
                           "Throughput against step latency, B = 1, 2, 4, … (table 1), measured and the roofline model (table 2)",
                           series=[Series("measured", "1", "step latency", "throughput ("),
                                   Series("analytic model (roofline)", "2", "model latency", "model tokens/s",
                                          timed=False)],
                           repeats="title")],
        pictures=[Picture("tables", "timeline",
                          "Static against continuous batching: which request holds which slot at each step (table 3's real runs)")],
        course=[CourseFigure("mean latency, static ÷ continuous batching", "more than 10×", "tables", "3",
                             "static|real", "mean latency", "64 skewed requests in the course; the quick run takes 16 "
                             "(course.py; --full runs all 64)", over="continuous|real", repeats=1),
                CourseFigure("throughput, continuous ÷ static batching", "1.6×", "tables", "3",
                             "continuous ÷ static|real", "throughput",
                             "the course's lengths have a lighter tail (the README's differences)", repeats=1),
                CourseFigure("throughput at B = 16 ÷ at B = 1", "×6.0", "tables", "1", "16", "throughput × B=1",
                             "its model and GPU, ours on a CPU", repeats="title"),
                CourseFigure("step latency at B = 16 ÷ at B = 1", "×2.67", "tables", "1", "16", "latency × B=1",
                             "its model and GPU, ours on a CPU", repeats="title")],
        headline=Headline("throughput, a batch of 16 ÷ one sequence", "tables", "1", "16", "throughput × B=1",
                          repeats="title"),
        findings=[Finding("tables", "1", column="", repeats="title", margin=knee_margin),  # "" : the "← knee" column
                  Finding("tables", "1", note="Knee at", repeats="title", margin=knee_margin),
                  Finding("tables", "1", note="No knee", repeats="title", margin=knee_margin),
                  Finding("tables", "3", column="throughput", rows="continuous ÷ static|real", repeats=1),
                  Finding("tables", "3", column="mean latency", rows="continuous ÷ static|real", repeats=1)],
    ),
    Chapter(
        "05", "05_paged_blocks", "Paged KV blocks",
        "Store the cache in fixed-size blocks found through a block table: no memory reserved for "
        "tokens never written, prefixes shared between requests, copy-on-write when they part.",
        runs=[Run("tables", ["--requests", "16", "--repeats", "3", "--prefix-requests", "8"],
                  ["--repeats", "9"])],
        plots=[Plot("tables", "5", "layout", ["waste"], "Cache reserved but never written, by layout (the workload of table 1)",
                    "", "reserved but unwritten", bars=True)],
        pictures=[Picture("tables", "blocks",
                          "The block table over time: blocks allocated, shared by a prefix or a fork, copied on write, "
                          "freed by a preemption (table 7's run)")],
        headline=Headline("K/V memory reserved, paged (blocks of 16) ÷ contiguous (prompt + the cap)", "tables", "1",
                          "paged, blocks of 16", "mean reserved", over="contiguous, reserved for prompt"),
        findings=[Finding("tables", "5", column="× contiguous", skip=("contiguous",), repeats="title",
                          margin=ratio_margin("× contiguous")),
                  Finding("tables", "3", column="prefill time", rows="shared ÷ cold", repeats=1)],
    ),
    Chapter(
        "06", "06_quantization", "Weight quantization",
        "Store each weight in fewer bits with a scale per group: decode streams fewer bytes and runs "
        "faster, at a measured cost in error, perplexity and agreement with the full model.",
        runs=[Run("quality", ["--eval-tokens", "512", "--agree-tokens", "16", "--answer-tokens", "12"],
                  []),
              Run("quant", ["--quant", "nf4", "-n", "24"], readme="packed/README.md"),
              # INT4 calibrated on text, AWQ and GPTQ (part 1's README, "AWQ and GPTQ"): --full only, about 3 minutes
              # on 2 cores (the quick report would double chapter 06's time for one table). 8192 calibration
              # tokens: at 512, XᵀX has rank ≤ 512, under the 576 and 1536 inputs GPTQ fits.
              Run("calibrated", None, ["--calibrated", "--calib-tokens", "8192"]),
              Run("speed", ["--speed", "--rounds", "3", "--eval-tokens", "512"], ["--speed", "--rounds", "3"],
                  readme="packed/README.md"),
              Run("memory", ["--memory"], threads=False, readme="packed/README.md"),
              # Ours ÷ llama.cpp built natively, same files and threads (needs llama-cpp-python; the
              # script's docstring says how to install it): the README's comparison, --full only.
              Run("llama", None, [], binary="tests/bench/compare_llama_cpp.py", readme="packed/README.md")],
        plots=[Plot("quality", "Quality", "bits/weight", ["perplexity"], "Perplexity against bits per weight",
                    "bits per weight", "perplexity (held-out text)", logx=True, labels="scheme", clip=20,
                    refs=[Ref("fp32: {value:.2f}", row="fp32")]),
               Plot("quality", "Quality", "bits/weight", ["top-1 same"], "Agreement with fp32 against bits per weight",
                    "bits per weight", "top-1 token same as fp32 on text", logx=True, labels="scheme"),
               Plot("speed", "Decode", "bits/weight", ["decode tok/s"], "Decode speed against bits per weight",
                    "bits per weight", "decode speed at context 128 (tokens/s)", logx=True, labels="scheme",
                    refs=[Ref("fp32: {value:.1f} tokens/s", row="fp32")], repeats=DECODE_STEPS_06),
               Plot("quality", "Activation outliers", "layer", ["max |x|", "without position 0: largest", "median dim"],
                    "Largest activation after each layer: an outlier dimension", "layer",
                    "max |x| of the residual stream", logy=True,
                    names=["largest, every position", "largest, position 0 left out", "median dimension"],
                    parse={"without position 0: largest": r"\((\S+)\)"})],
        course=[CourseFigure("context tokens next to int8 weights on a 16 GB card: 7B, 8 kv heads of 128", "65 378",
                             "memory", "The course's setting", "16|7B|int8", "context tokens",
                             "computed from the same formula and reserve; a difference would be a bug"),
                CourseFigure("the same for 13B with 40 kv heads (multi-head)", "3 136", "memory",
                             "The course's setting", "16|13B|int8", "context tokens",
                             "computed from the same formula and reserve; a difference would be a bug")],
        headline=Headline("decode speed, INT8 per-row weights ÷ fp32", "speed", "Decode", "INT8 per-row",
                          "decode speed-up", repeats=DECODE_STEPS_06),
        findings=[Finding("speed", "Decode", column="decode speed-up", skip=("fp32",), repeats=DECODE_STEPS_06,
                          margin=ratio_margin("decode speed-up")),
                  Finding("speed", "Decode", column="prefill speed-up", skip=("fp32",),
                          repeats=r"note:prefill: .*?median of (\d+)", margin=ratio_margin("prefill speed-up"))],
    ),
    Chapter(
        "07", "07_speculative_decoding", "Speculative decoding",
        "A cheap draft guesses several tokens and the target checks them all in one pass: the same "
        "tokens, faster exactly when the guesses are cheap and often right.",
        runs=[Run("tables", ["-n", "32", "--repeats", "3", "--drafts", "q8_0,q4_1,layers-10,lookup",
                             "--gammas", "1,2,4,6", "--plot", "{out}/ch07_speedup_vs_gamma.svg"],
                  ["--plot", "{out}/ch07_speedup_vs_gamma.svg"]),
              Run("bench", None, [], binary="tests/bench/bench_speculative"),
              # Tree verification against linear γ (part 2's README, tree/README.md): --full only, about 3 minutes.
              Run("tree", None, ["--tree", "--no-tables"], readme="tree/README.md"),
              # The picture of the rounds: the Q4_1 draft guesses wrong often enough to show rejections
              # (the INT8 draft of the run above keeps 98% of its guesses).
              Run("rounds", ["--draft", "q4_1", "--no-tables", "-n", "48"], tables=False, csv=False)],
        pictures=[Picture("rounds", "rounds",
                          "Draft-then-verify, round by round: each guess accepted or rejected, and where the target's "
                          "own token comes from (the Q4_1 draft)")],
        plots=[Plot("tables", "Each draft", "draft", ["speed-up", "predicted"],
                    "Each draft at γ = 4: measured and predicted speed-up", "", "speed-up over plain decoding", bars=True,
                    skip=("none",), predicted=("predicted",), refs=[Ref("plain decoding (1×)", value=1.0)],
                    repeats="title"),
               Plot("tables", "α is the agreement", "draft", ["agreement", "α"],
                    "Agreement with fp32 (chapter 06) and α as a draft, on the same positions", "",
                    "share of positions (agreement) or of checked guesses (α)", bars=True),
               Plot("tables", "What verifying costs", "positions in the pass", ["÷ decode step"],
                    "Verifying γ guesses: one pass over γ + 1 positions", "positions in the pass, γ + 1",
                    "time ÷ one decode step", names=["measured: one pass ÷ one decode step"],
                    refs=[course_ref(VERIFY_COST, "one pass costs one step"),
                          Ref("∝ positions: each one a decode step", power=1)], repeats="title")],
        own_plots=[OwnPlot("ch07_speedup_vs_gamma.svg", "tables", "Speed-up against γ, measured (solid) and predicted (dashed)",
                           series=[Series("{}: measured", "γ sweep", "γ", "speed-up", group=True),
                                   Series("{}: predicted", "γ sweep", "γ", "predicted", group=True, timed=False),
                                   Series("plain decoding", "γ sweep", "γ", "speed-up", value=1.0, timed=False)],
                           repeats="title")],
        course=[CourseFigure("tokens kept per round at α = 0.3, γ = 4", "1.4", "tables", "Expected tokens", "0.3",
                             "γ = 4", "a formula, E = (1 − α^(γ+1)) / (1 − α): it must agree"),
                VERIFY_COST],
        headline=Headline("speed-up, the Q8_0 self-draft at γ = 4", "tables", "Each draft", "Q8_0", "speed-up",
                          repeats="title"),
        findings=[Finding("tables", "Each draft", column="verdict", repeats="title", margin=ratio_margin("speed-up")),
                  Finding("tables", "γ sweep", column="verdict", repeats="title", margin=ratio_margin("speed-up")),
                  Finding("tables", "α by kind of text", column="verdict", repeats="arg --repeats=3",
                          margin=ratio_margin("speed-up"))],
    ),
    Chapter(
        "08", "08_distillation", "Distillation",
        "Train a smaller model to imitate the bigger one: the teacher's whole distribution, "
        "flattened by a temperature, carries more than the right answer alone.",
        runs=[Run("tables", ["--tokens", "256", "--labels", "hard,soft", "--temperature", "1",
                             "--eval-tokens", "256", "--repeats", "3", "-n", "16",
                             "--out", "{out}/ch08_student.gguf", "--plot", "{out}/ch08_loss_curves.svg"],
                  ["--tokens", "8192", "--student-layers", "20,12",
                   "--out", "{out}/ch08_student.gguf", "--plot", "{out}/ch08_loss_curves.svg"]),
              # Quantization-aware training against post-training INT4 (part 3's README, section 6): --full
              # only, as it trains two more students (about 2 minutes on 2 cores).
              Run("qat", None, ["--labels", "soft", "--temperature", "1", "--no-draft", "--qat-steps", "16",
                                "--out", "{out}/ch08_qat_student.gguf", "--plot", "{out}/ch08_qat_loss_curves.svg"],
                  readme="variants/README.md"),
              # Width against depth pruning at an equal parameter count (part 3's README, section 7): --full
              # only, as it trains two students per label (about 5 minutes on 2 cores).
              Run("width", None, ["--labels", "soft", "--temperature", "1", "--no-draft", "--width-prune",
                                  "--tokens", "8192", "--out", "{out}/ch08_width_student.gguf",
                                  "--plot", "{out}/ch08_width_loss_curves.svg"], readme="variants/README.md"),
              # The student the run above wrote, loaded by chapter 03's binary like any model file.
              # (one depth writes --out itself; several write one file per depth, named -L<layers>).
              Run("student", ["-m", "{out}/ch08_student.gguf", "--no-eval", "-n", "16",
                              "-p", "And Naomi said to her daughters-in-law,"],
                  ["-m", "{out}/ch08_student-L20.gguf", "--no-eval", "-n", "16",
                   "-p", "And Naomi said to her daughters-in-law,"], binary="chapters/03_gqa/ch03_gqa", tables=False),
              Run("bench", None, [], binary="tests/bench/bench_distillation")],
        plots=[Plot("tables", "Layer importance", "layer", ["block influence"],
                    "Layer importance: how far each block turns the stream", "layer",
                    "block influence = 1 − cos(stream in, stream out)", logy=True)],
        own_plots=[OwnPlot("ch08_loss_curves.svg", "tables", "Training loss of each student ÷ its first value",
                           points=lambda figures: min(len(r["loss"]) for r in figures["training_runs"]),
                           too_few="Quick run: one training step per student, so no loss curve; see the README's full run.",
                           series=[Series("{layers} layers, {labels}", figures="training_runs")])],
        course=[CourseFigure("top-1 ÷ top-3 probability at T = 1 (\"In the beginning God created the\")", "2.24",
                             "tables", "Soft labels", "In the beginning", "p1/p3 at T=1",
                             "the course's phrase and model differ; the rule p_T ratio = ratio^(1/T) is exact"),
                CourseFigure("the same at T = 2", "1.50 (the square root)", "tables", "Soft labels",
                             "In the beginning", "T=2", "")],
        headline=Headline("agreement with the teacher, 20-layer student after training on soft labels (T = 1)",
                          "tables", "Training at an equal budget", "20|soft T=1", "agreement with the teacher",
                          never=ONE_STEP),
        findings=[Finding("tables", "Training at an equal budget", column="student kept", never=ONE_STEP),
                  Finding("qat", "Training at an equal budget", column="student kept", never=ONE_STEP),
                  Finding("width", "Training at an equal budget", column="student kept", never=ONE_STEP),
                  Finding("tables", "The student as chapter 07's draft", column="verdict", repeats="title",
                          margin=ratio_margin("speed-up"))],
    ),
]

# The stage-to-stage page: the same prompts, greedy, through each exact stage.
STAGE_PROMPTS = [
    "The three most important ideas in computer science are",
    "In the beginning God created the heaven and the earth. And the earth was",
]
STAGE_TOKENS = 24
# (name, label, binary, extra arguments, the stage it is compared with by stage_diff).
# Chapters 04 and 05 run workloads, not one prompt: their own runs check every request's tokens
# (against the other batching policy, against the contiguous cache), and the page shows that verdict.
STAGES = [
    ("01", "01 naive loop", "ch01_naive_loop", [], None),
    ("02", "02 KV cache", "ch02_kv_cache", ["--skip-tables"], "01"),
    ("03", "03 grouped KV cache", "ch03_gqa", ["--no-eval"], "02"),
    ("07-lookup", "07 speculative, prompt-lookup draft", "ch07_speculative_decoding",
     ["--no-tables", "--draft", "lookup"], "03"),
    ("07-q8_0", "07 speculative, Q8_0 self-draft", "ch07_speculative_decoding",
     ["--no-tables", "--draft", "q8_0"], "03"),
]
