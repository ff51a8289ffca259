"""What the course report runs and shows, chapter by chapter.

Each chapter names its binary, the runs that make its tables (a quick form for the report's
~15 minutes on 2 cores, and the README's longer form), the plots drawn from its CSV tables and
the course's own figures to put beside ours. Tables are found by the number in their printed
title ("3. Decode ..." is table 3); columns by the start of their header, as the CSV file writes
it (plain numbers, the unit in brackets: see lib/measure/csv_numbers.hpp).

{out} in an argument is the run's output folder.
"""
import re
from dataclasses import dataclass, field


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


@dataclass
class Ref:
    """A reference line on a plot (grey, dotted, in the key): a value, a row's value, or a power law."""
    label: str                # "{value}" in it is replaced by the value of `row`
    value: float | None = None  # a horizontal line (a vertical one on bars) at this value
    row: str | None = None    # ... at the plot's first value column in the row whose first cell starts so
    power: float | None = None  # a line ∝ x^power through the first point of value column `of`
    of: int = 0


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


@dataclass
class OwnPlot:
    """A plot a binary draws itself (--plot, lib's SVG plotter), shown as it is."""
    file: str                 # in the report folder, as the run's arguments name it
    run: str
    caption: str
    points: object = None     # a function of the record's figures: the points per curve; under 2, no plot
    too_few: str = ""         # what the page says instead


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


@dataclass
class Chapter:
    number: str
    directory: str            # chapters/<directory>; its binary is "ch" + directory
    title: str
    lesson: str
    runs: list
    plots: list = field(default_factory=list)
    own_plots: list = field(default_factory=list)
    course: list = field(default_factory=list)

    @property
    def binary(self):
        return "ch" + self.directory


def shape_label(row):
    """Table 7's bars: the model, with its window where it has one, so the rows of one shape at
    several windows get labels of their own ("the same" is this model, the row above them)."""
    model = row["model"].strip().replace("the same", "this model")
    window = re.search(r"window (\d+)", row["configuration"])
    return f"{model}, window {window.group(1)}" if window and "window" not in model else model


CHAPTERS = [
    Chapter(
        "01", "01_naive_loop", "The naive generation loop",
        "Generating one token re-runs the whole sequence through the model, so a step costs more "
        "the longer the text gets and a whole answer costs quadratically many operations.",
        runs=[Run("demo", ["-n", "32"]),
              Run("sweep", ["--sweep", "--repeats", "1"], ["--sweep", "--repeats", "3"]),
              # The top-level README's yardstick: one forward pass against the read bandwidth.
              Run("bench", None, [], binary="tests/bench/bench_forward")],
        plots=[Plot("sweep", "One naive step", "T", ["time ("], "Cost of one naive step against sequence length",
                    "tokens in the sequence, T", "time of one step", logx=True, logy=True,
                    refs=[Ref("∝ T, through the first point", power=1)])],
    ),
    Chapter(
        "02", "02_kv_cache", "The KV cache",
        "Keep every position's keys and values: the prompt is processed once (prefill, a "
        "matrix-matrix product) and each new token is one cheap decode step over the cache.",
        runs=[Run("tables", ["--repeats", "2", "--growth-tokens", "128", "--workload-tokens", "64",
                             "--plot", "{out}/ch02_prefill_vs_decode.svg", "--scores-plot", "{out}/ch02_score_bytes.svg"],
                  ["--repeats", "5", "--plot", "{out}/ch02_prefill_vs_decode.svg",
                   "--scores-plot", "{out}/ch02_score_bytes.svg"]),
              Run("bench", None, [], binary="tests/bench/bench_decode")],
        # Table 6 (a decode step against the cache length) is the decode curve of the binary's own plot.
        plots=[Plot("tables", "3", "T", ["recompute", "with cache"], "Work to generate T tokens: recompute vs cache",
                    "tokens generated, T", "multiply-accumulates", logx=True, logy=True,
                    refs=[Ref("∝ T²", power=2, of=0), Ref("∝ T", power=1, of=1)])],
        own_plots=[OwnPlot("ch02_prefill_vs_decode.svg", "tables", "Prefill and decode time per token (tables 5 and 6)"),
                   OwnPlot("ch02_score_bytes.svg", "tables", "Score-matrix bytes of one head, one step (table 2)")],
        course=[CourseFigure("peak memory, the uncached loop ÷ the cached loop (as the course writes them)",
                             "8.3×", "tables", "8", "course naive ÷ course cached", "40 + 256",
                             "the course measures a 0.5B model (24 layers, 2 kv heads) at its own lengths; "
                             "chapter 01 itself avoids the n×n scores and keeps one logit row (row ch01 ÷ ch02)"),
                CourseFigure("decode step at 1024 cached tokens ÷ at 16", "no measurable change", "tables", "6",
                             "1024", "step", "on a CPU the attention over 1024 positions is a visible share of "
                             "a 135M model's step; the course's GPU hides it", over="16")],
    ),
    Chapter(
        "03", "03_gqa", "Grouped-query attention",
        "Query heads share key/value heads, so the cache stores only the distinct ones: the same "
        "tokens from a cache H/H_kv times smaller.",
        runs=[Run("tables", ["--eval-tokens", "1024", "--window", "256", "--sliding-windows", "64,128"],
                  ["--eval-tokens", "2048"])],
        plots=[Plot("tables", "7", "model", ["KiB/token at 128k"], "K/V cache per token at 128k tokens (2-byte elements)",
                    "", "KiB per token, over a 128k-token sequence", logy=True, bars=True, category=shape_label)],
        course=[CourseFigure("cache of full multi-head ÷ grouped (query heads ÷ kv heads)", "7× (14 ÷ 2)", "tables",
                             "2", "MHA", "fp16 B/token", "this model has 9 query heads over 3 kv heads: 3×",
                             over="grouped")],
    ),
    Chapter(
        "04", "04_batching", "Batching",
        "A decode step streams every weight once whether it serves one sequence or many, so a batch "
        "multiplies throughput almost for free until compute, not memory, becomes the limit; "
        "continuous batching refills a slot the moment its request ends.",
        runs=[Run("tables", ["--requests", "16", "--repeats", "2", "--plot", "{out}/ch04_throughput_vs_latency.svg"],
                  ["--repeats", "5", "--plot", "{out}/ch04_throughput_vs_latency.svg"])],
        # Table 1's throughput against latency is the binary's own plot, with the roofline model beside it.
        own_plots=[OwnPlot("ch04_throughput_vs_latency.svg", "tables",
                           "Throughput against step latency, B = 1, 2, 4, … (table 1), measured and the roofline model (table 2)")],
        course=[CourseFigure("mean latency, static ÷ continuous batching", "more than 10×", "tables", "3",
                             "static", "mean latency", "64 skewed requests in the course; the quick run takes 16 "
                             "(course.py; --full runs all 64)", over="continuous")],
    ),
    Chapter(
        "05", "05_paged_blocks", "Paged KV blocks",
        "Store the cache in fixed-size blocks found through a block table: no memory reserved for "
        "tokens never written, prefixes shared between requests, copy-on-write when they part.",
        runs=[Run("tables", ["--requests", "16", "--repeats", "3", "--prefix-requests", "8"],
                  ["--repeats", "9"])],
        plots=[Plot("tables", "5", "layout", ["waste"], "Cache reserved but never written, by layout (the workload of table 1)",
                    "", "reserved but unwritten", bars=True)],
    ),
    Chapter(
        "06", "06_quantization", "Weight quantization",
        "Store each weight in fewer bits with a scale per group: decode streams fewer bytes and runs "
        "faster, at a measured cost in error, perplexity and agreement with the full model.",
        runs=[Run("quality", ["--eval-tokens", "512", "--agree-tokens", "16", "--answer-tokens", "12"],
                  []),
              Run("quant", ["--quant", "nf4", "-n", "24"]),
              Run("speed", ["--speed", "--rounds", "1", "--eval-tokens", "512"], ["--speed", "--rounds", "3"]),
              Run("memory", ["--memory"], threads=False),
              # Ours ÷ llama.cpp built natively, same files and threads (needs llama-cpp-python; the
              # script's docstring says how to install it): the README's comparison, --full only.
              Run("llama", None, [], binary="tests/bench/compare_llama_cpp.py")],
        plots=[Plot("quality", "Quality", "bits/weight", ["perplexity"], "Perplexity against bits per weight",
                    "bits per weight", "perplexity (held-out text)", logx=True, labels="scheme", clip=20,
                    refs=[Ref("fp32: {value:.2f}", row="fp32")]),
               Plot("quality", "Quality", "bits/weight", ["top-1 same"], "Agreement with fp32 against bits per weight",
                    "bits per weight", "top-1 token same as fp32 on text", logx=True, labels="scheme"),
               Plot("speed", "Decode", "bits/weight", ["decode tok/s"], "Decode speed against bits per weight",
                    "bits per weight", "decode speed at context 128 (tokens/s)", logx=True, labels="scheme",
                    refs=[Ref("fp32: {value:.1f} tokens/s", row="fp32")])],
        course=[CourseFigure("context tokens next to int8 weights on a 16 GB card: 7B, 8 kv heads of 128", "65 378",
                             "memory", "The course's setting", "16|7B|int8", "context tokens",
                             "computed from the same formula and reserve; a difference would be a bug"),
                CourseFigure("the same for 13B with 40 kv heads (multi-head)", "3 136", "memory",
                             "The course's setting", "16|13B|int8", "context tokens",
                             "computed from the same formula and reserve; a difference would be a bug")],
    ),
    Chapter(
        "07", "07_speculative_decoding", "Speculative decoding",
        "A cheap draft guesses several tokens and the target checks them all in one pass: the same "
        "tokens, faster exactly when the guesses are cheap and often right.",
        runs=[Run("tables", ["-n", "32", "--repeats", "1", "--drafts", "q8_0,q4_1,layers-10,lookup",
                             "--gammas", "1,2,4,6", "--plot", "{out}/ch07_speedup_vs_gamma.svg"],
                  ["--plot", "{out}/ch07_speedup_vs_gamma.svg"]),
              Run("bench", None, [], binary="tests/bench/bench_speculative")],
        plots=[Plot("tables", "Each draft", "draft", ["speed-up", "predicted"],
                    "Each draft at γ = 4: measured and predicted speed-up", "", "speed-up over plain decoding", bars=True,
                    skip=("none",), predicted=("predicted",), refs=[Ref("plain decoding (1×)", value=1.0)]),
               Plot("tables", "α is the agreement", "draft", ["agreement", "α"],
                    "Agreement with fp32 (chapter 06) and α as a draft, on the same positions", "",
                    "share of positions (agreement) or of checked guesses (α)", bars=True)],
        own_plots=[OwnPlot("ch07_speedup_vs_gamma.svg", "tables", "Speed-up against γ, measured (solid) and predicted (dashed)")],
        course=[CourseFigure("tokens kept per round at α = 0.3, γ = 4", "1.4", "tables", "Expected tokens", "0.3",
                             "γ = 4", "a formula, E = (1 − α^(γ+1)) / (1 − α): it must agree")],
    ),
    Chapter(
        "08", "08_distillation", "Distillation",
        "Train a smaller model to imitate the bigger one: the teacher's whole distribution, "
        "flattened by a temperature, carries more than the right answer alone.",
        runs=[Run("tables", ["--tokens", "256", "--labels", "hard,soft", "--temperature", "1",
                             "--eval-tokens", "256", "--repeats", "1", "-n", "16",
                             "--out", "{out}/ch08_student.gguf", "--plot", "{out}/ch08_loss_curves.svg"],
                  ["--tokens", "8192", "--student-layers", "20,12",
                   "--out", "{out}/ch08_student.gguf", "--plot", "{out}/ch08_loss_curves.svg"]),
              # The student the run above wrote, loaded by chapter 03's binary like any model file.
              # (one depth writes --out itself; several write one file per depth, named -L<layers>).
              Run("student", ["-m", "{out}/ch08_student.gguf", "--no-eval", "-n", "16",
                              "-p", "And Naomi said to her daughters-in-law,"],
                  ["-m", "{out}/ch08_student-L20.gguf", "--no-eval", "-n", "16",
                   "-p", "And Naomi said to her daughters-in-law,"], binary="chapters/03_gqa/ch03_gqa", tables=False),
              Run("bench", None, [], binary="tests/bench/bench_distillation")],
        own_plots=[OwnPlot("ch08_loss_curves.svg", "tables", "Training loss of each student ÷ its first value",
                           points=lambda figures: min(len(r["loss"]) for r in figures["training_runs"]),
                           too_few="Quick run: one training step per student, so no loss curve; see the README's full run.")],
        course=[CourseFigure("top-1 ÷ top-3 probability at T = 1 (\"In the beginning God created the\")", "2.24",
                             "tables", "Soft labels", "In the beginning", "p1/p3 at T=1",
                             "the course's phrase and model differ; the rule p_T ratio = ratio^(1/T) is exact"),
                CourseFigure("the same at T = 2", "1.50 (the square root)", "tables", "Soft labels",
                             "In the beginning", "T=2", "")],
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
