#!/usr/bin/env python3
"""Ours ÷ llama.cpp: decode and prefill speed on the same GGUF files, threads and machine, one run.

Issue 49's target: ours ÷ llama.cpp (built with native flags) ≥ 1.15 for F32, Q8_0 and Q4_1
decode at contexts 128 and 2 048 and for a 512-token prefill, on 2 threads (issue 17 asked for
1.0). This script measures both engines in one run and prints the ratios with their verdicts:

  decode   one token at position C against a cache of C tokens, for each C of --contexts;
           tokens/s = 1 / step time
  prefill  512 tokens in one pass from an empty cache; tokens/s = 512 / pass time

Each round runs our side, then llama.cpp's, on every file (F32, Q8_0, Q4_1) and context, so that
whatever else the machine does in that minute slows both alike. A round times --decode-steps
decode steps per file, engine and context and one prefill per file and engine; a figure is the
median over the rounds of each round's median step (decode) or of each round's prefill, for both
engines alike.

llama.cpp runs in a child process of this script for every file, context and round (and for its
quantizer), never in the script itself: llama-cpp-python built natively has crashed inside
llama_decode on some CPUs (on a Sapphire Rapids Xeon, on its own Q8_0 and Q4_1 files), and a crash
then ends one child, is reported as such (signal, and what llama.cpp was doing), and the run goes
on. With --llama-extra-buffers auto (the default) a file that crashed is tried again with
llama.cpp's "extra buffer types" off (llama_model_params.use_extra_bufts: its weights repacked for
AMX tiles or interleaved rows), the rows measured that way say so, and a file that crashes even
then is printed as not measured.

  ours       tests/bench/bench_quant (chapter 06's kernels, kernel_speed.hpp), run once per round:
             -m F32 file --formats q8_0,q4_1 --rounds 1 --json: it loads the F32 file, packs it in
             Q8_0 and Q4_1 with chapter 06's quantizers and times fp32, Q8_0 and Q4_1 — the packed
             formats twice: multiplied with fp32 activations, and with activations rounded to int8
             (--int8-activations, int8_activations.hpp), which is what llama.cpp does for these
             types. Decode has a row for each; prefill keeps fp32 activations in both (one row).
  llama.cpp  through llama-cpp-python's ctypes API (tests/bench/llama_cpp_decode.py's Context and
             Timing), on the F32 file and llama.cpp's own Q8_0 and Q4_1 quantizations of it, every
             matrix in the type ("pure": the tied embedding too), written once into data/cache.
             Before timing, bench_quant --check-packing checks that our Q8_0 / Q4_1 bytes are those
             files' bytes, so both engines multiply by the same weights.

Install llama.cpp natively built (the llama-cpp-python source package compiles it with
-march=native; about 10 minutes on 2 cores, OpenMP threads like ours):

  CMAKE_ARGS="-DGGML_NATIVE=ON -DGGML_OPENMP=ON" FORCE_CMAKE=1 \\
      python3 -m pip install --no-binary llama-cpp-python llama-cpp-python==0.3.36

Measured with that version (the table prints it), installed from its downloaded sdist by

  CMAKE_ARGS="-DGGML_NATIVE=ON -DGGML_OPENMP=ON" FORCE_CMAKE=1 pip install llama_cpp_python-0.3.36.tar.gz

(9.5 minutes on 2 cores); llama_print_system_info(), printed with the table, shows what it uses
(AVX512, AVX512_VNNI, ... = 1). The script runs with the python3 that has it. The F32 file
is written from the shipped model by tests/golden/convert_to_f32.py (needs `pip install gguf`) when
it is missing.

  python3 tests/bench/compare_llama_cpp.py -t 2                   # the table
  python3 tests/bench/compare_llama_cpp.py -t 2 --contexts 128   # one context only (faster)
  python3 tests/bench/compare_llama_cpp.py -t 2 --rounds 9 --json out.json
  python3 tests/bench/compare_llama_cpp.py --skip-if-missing      # what `--target bench` runs
"""
import argparse
import csv
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHIPPED_MODEL = os.path.join(ROOT, "data", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
F32_NAME = "SmolLM2-135M-Instruct.F32.gguf"
INSTALL = ('CMAKE_ARGS="-DGGML_NATIVE=ON -DGGML_OPENMP=ON" FORCE_CMAKE=1 '
           f"{os.path.basename(sys.executable)} -m pip install --no-binary llama-cpp-python llama-cpp-python==0.3.36")
TARGET = 1.15  # ours ÷ llama.cpp, every row (issue 49; issue 17 asked for 1.0)
FORMATS = ("F32", "Q8_0", "Q4_1")
OUR_FLAG = {"F32": "", "Q8_0": "q8_0", "Q4_1": "q4_1"}  # bench_quant's row for each file
SIMD_FLAGS = ("avx2", "fma", "f16c", "avx_vnni", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
              "amx_int8")


class Missing(Exception):
    """A prerequisite is not installed: one line saying how to get it."""


def machine_line(threads):
    cpu, flags = platform.processor() or "unknown CPU", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    cpu = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
    except OSError:
        pass
    simd = " ".join(f for f in SIMD_FLAGS if f in flags) or "none of " + " ".join(SIMD_FLAGS)
    return f"{cpu}; {os.cpu_count()} cores; SIMD: {simd}; {threads} threads"


def import_llama_cpp():
    try:
        import llama_cpp  # noqa: F401  (llama-cpp-python)
    except ImportError:
        raise Missing(f"llama-cpp-python is not installed for {sys.executable}; install it built natively: {INSTALL}")
    return llama_cpp


def f32_file(cache):
    """The F32 model file, written from the shipped model when missing."""
    path = os.path.join(cache, F32_NAME)
    if os.path.exists(path):
        return path
    if not os.path.exists(SHIPPED_MODEL):
        raise Missing(f"{SHIPPED_MODEL} not found: data/fetch_model.sh downloads it")
    try:
        import gguf  # noqa: F401
    except ImportError:
        raise Missing(f"{path} not found, and the gguf package that writes it is not installed: "
                      f"{os.path.basename(sys.executable)} -m pip install gguf")
    try:
        os.makedirs(cache, exist_ok=True)
    except OSError as e:
        raise Missing(f"cannot create {cache} for the F32 file: {e}")
    print(f"writing {path} from the shipped model ...", file=sys.stderr)
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "golden", "convert_to_f32.py"), SHIPPED_MODEL, path],
                   check=True, stdout=sys.stderr)
    return path


def build_dir_of(binary):
    """The CMake build directory holding `binary` (its CMakeCache.txt), or None."""
    d = os.path.dirname(os.path.abspath(binary))
    while d != os.path.dirname(d):
        if os.path.exists(os.path.join(d, "CMakeCache.txt")):
            return d
        d = os.path.dirname(d)
    return None


def our_build_line(binary):
    build = build_dir_of(binary)
    arch = "?"
    if build:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("INFER_ARCH:"):
                    arch = "INFER_ARCH=" + line.strip().split("=", 1)[1]
    return f"ours: {os.path.relpath(binary, ROOT)} ({arch})"


def run_ours(args, f32, extra):
    """One bench_quant run; its --json figures."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "figures.json")
        cmd = [args.ours, "-m", f32, "-t", str(args.threads), "--json", out] + extra
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"compare_llama_cpp: {' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
        with open(out) as f:
            return json.load(f)["figures"]  # bench_quant's run record (lib/app/run_record.hpp)


def progress(line):
    """A progress line on a terminal; none in a log (the course report keeps the output as a record)."""
    if sys.stderr.isatty():
        print(line, file=sys.stderr)


def median_of_round_medians(times, per_round):
    rounds = [times[i:i + per_round] for i in range(0, len(times), per_round)]
    return statistics.median(statistics.median(r) for r in rounds)


class Crash(Exception):
    """llama.cpp's worker process died: one line saying how and where."""


def llama_worker(args):
    """The llama.cpp side of one round for one file and context, in a process of its own, so that
    a crash inside llama.cpp (a signal in its C code) ends this process only. Writes its timings,
    or, for --quantize-to, llama.cpp's quantization of the file, and its version and system line."""
    import faulthandler
    faulthandler.enable()  # a signal in llama.cpp prints where Python was, on stderr
    llama_cpp = import_llama_cpp()
    import llama_cpp_decode as lcd  # Context, Timing, quantize (same folder)

    def stage(name):  # the last stage on stderr says where a crash happened
        print(f"stage: {name}", file=sys.stderr, flush=True)

    keep_logs = lcd.quiet_logs(llama_cpp)
    llama_cpp.llama_backend_init()
    out = {"version": llama_cpp.__version__, "system_info": llama_cpp.llama_print_system_info().decode().strip()}
    if args.quantize_to:
        stage("llama_model_quantize")
        ftype = {"Q8_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0, "Q4_1": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_1}[args.quantize_type]
        lcd.quantize(llama_cpp, args.llama_worker, args.quantize_to, ftype, True, args.threads)
    else:
        cp = llama_cpp.llama_context_default_params()
        out["kv_type"] = {0: "F32", 1: "F16"}.get(cp.type_k, f"ggml type {cp.type_k}")
        out["flash_attn"] = {-1: "auto", 0: "off", 1: "on"}.get(getattr(cp, "flash_attn_type", None), "?")
        opts = types.SimpleNamespace(threads=args.threads, context=args.contexts[0], prefill=args.prefill,
                                     decode_steps=args.decode_steps, warmup=3)
        stage("loading the model, filling the cache, warming up (llama_decode)")
        t = lcd.Timing(llama_cpp, args.llama_worker, opts, extra_buffers=args.llama_extra_buffers == "on")
        stage("timed decode steps and prefill (llama_decode)")
        t.round()
        out["steps"], out["prefill"] = t.steps, t.prefills[0]
        t.c.close()
    del keep_logs
    with open(args.json, "w") as f:
        json.dump(out, f)


def run_theirs(args, path, context, extra_buffers, quantize=None):
    """One llama_worker process; its JSON. Raises Crash when the process dies or fails."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "theirs.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--llama-worker", path, "-t", str(args.threads),
               "--contexts", str(context), "--prefill", str(args.prefill), "--decode-steps", str(args.decode_steps),
               "--llama-extra-buffers", "on" if extra_buffers else "off", "--json", out]
        if quantize:
            cmd += ["--quantize-to", quantize[0], "--quantize-type", quantize[1]]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode == 0:
            with open(out) as f:
                return json.load(f)
        stages = [line[len("stage: "):] for line in done.stderr.splitlines() if line.startswith("stage: ")]
        where = f" while {stages[-1]}" if stages else ""
        if done.returncode < 0:
            try:
                how = signal.Signals(-done.returncode).name
            except ValueError:
                how = f"signal {-done.returncode}"
            raise Crash(f"killed by {how}{where}")
        last = [line for line in done.stderr.splitlines() if line.strip()]
        raise Crash(f"exit status {done.returncode}{where}: {last[-1] if last else 'no message'}")


class LlamaSide:
    """llama.cpp's timings of every file and context, gathered one child process at a time, and
    what crashed. A file whose child crashed is tried again without llama.cpp's extra buffer
    types (--llama-extra-buffers auto), and given up when it crashes once more."""

    def __init__(self, args, files):
        self.args, self.files = args, files
        self.extra = {name: args.llama_extra_buffers != "off" for name in files}  # None: given up
        self.crashes = {name: [] for name in files}  # what went wrong on each file, one line each
        self.without_extra = set()  # files measured with the extra buffer types off after a crash
        self.timings = {(name, c): {"steps": [], "prefills": []} for name in files for c in args.contexts}
        self.info = {}  # the last child's version, system line, cache type

    def round(self, name, context, r):
        while self.extra[name] is not None:
            try:
                got = run_theirs(self.args, self.files[name], context, self.extra[name])
            except Crash as e:
                self.crashes[name].append(f"round {r + 1}, context {context}, extra buffer types "
                                          f"{'on' if self.extra[name] else 'off'}: {e}")
                retry = self.extra[name] and self.args.llama_extra_buffers == "auto"
                self.extra[name] = False if retry else None
                continue
            self.timings[(name, context)]["steps"] += got["steps"]
            self.timings[(name, context)]["prefills"].append(got["prefill"])
            self.info = got
            if not self.extra[name] and self.args.llama_extra_buffers == "auto":
                self.without_extra.add(name)
            return


def parse_contexts(text):
    try:
        contexts = [int(c) for c in text.split(",") if c.strip()]
    except ValueError:
        contexts = []
    if not contexts or any(c < 1 or c > 8191 for c in contexts):
        raise argparse.ArgumentTypeError(f"{text!r}: a comma-separated list of contexts from 1 to 8191")
    return contexts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", "-t", type=int, default=2, help="threads of both engines")
    ap.add_argument("--rounds", type=int, default=7, help="rounds, each timing every file with both engines")
    ap.add_argument("--decode-steps", type=int, default=9, help="decode steps timed per file, engine, context and round")
    ap.add_argument("--contexts", type=parse_contexts, default=[128, 2048],
                    help="decode: tokens already in the cache, comma-separated (default: 128,2048)")
    ap.add_argument("--prefill", type=int, default=512, help="prefill: tokens in one pass")
    ap.add_argument("--llama-extra-buffers", choices=("auto", "on", "off"), default="auto",
                    help="llama.cpp's repacked weight buffers (AMX tiles, interleaved rows): auto = on, and off for a "
                         "file whose run crashed with them (default: %(default)s)")
    ap.add_argument("--ours", default=os.path.join(ROOT, "build", "tests", "bench", "bench_quant"),
                    help="our bench_quant binary (default: %(default)s)")
    ap.add_argument("--cache", default=os.path.join(ROOT, "data", "cache"),
                    help="where the F32 file is and llama.cpp's quantizations go (default: %(default)s)")
    ap.add_argument("--skip-if-missing", action="store_true",
                    help="exit 0 with one line when llama-cpp-python or the model files are missing (the bench target)")
    ap.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    ap.add_argument("--csv", metavar="PATH", help="append the table as CSV (plain numbers, units in the headers)")
    ap.add_argument("--llama-worker", metavar="FILE", help=argparse.SUPPRESS)  # run_theirs's child process
    ap.add_argument("--quantize-to", help=argparse.SUPPRESS)
    ap.add_argument("--quantize-type", choices=("Q8_0", "Q4_1"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    for name in ("threads", "rounds", "decode_steps", "prefill"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.llama_worker:
        return llama_worker(args)

    try:
        import_llama_cpp()
        f32 = f32_file(args.cache)
    except Missing as e:
        if args.skip_if_missing:
            print(f"compare_llama_cpp: skipped: {e}")
            sys.exit(0)
        sys.exit(f"compare_llama_cpp: {e}")
    if not os.access(args.ours, os.X_OK):
        sys.exit(f"compare_llama_cpp: {args.ours} not found: cmake --build build --target bench_quant")

    # llama.cpp runs only in child processes (run_theirs): when it crashes, the comparison says so
    # and goes on with what it can still measure.
    files = {"F32": f32}
    for name in ("Q8_0", "Q4_1"):
        path = os.path.join(args.cache, f"SmolLM2-135M-Instruct.{name}.llamacpp-pure.gguf")
        if not os.path.exists(path):
            print(f"quantizing {F32_NAME} to {name} with llama.cpp (every matrix) ...", file=sys.stderr)
            try:
                run_theirs(args, f32, args.contexts[0], True, quantize=(path, name))
            except Crash as e:
                sys.exit(f"compare_llama_cpp: llama.cpp's quantizer {e}")
        files[name] = path

    # Are our packed bytes llama.cpp's? (same F32 source, same block formats)
    packing = run_ours(args, f32, ["--check-packing", files["Q8_0"], "--check-packing", files["Q4_1"]])["packing"]

    theirs = LlamaSide(args, files)
    ours_rounds = {c: [] for c in args.contexts}  # per context, per round: {(flag, activations): bench_quant's row}
    bandwidths = []
    for r in range(args.rounds):
        for c in args.contexts:
            progress(f"round {r + 1} of {args.rounds}, context {c}: ours ...")
            # The prefill row comes from the first context's run; the others time a 1-token one (bench_quant
            # always times a prefill), so that the round does not pay for the same prefill twice.
            prefill = args.prefill if c == args.contexts[0] else 1
            figures = run_ours(args, f32, ["--formats", "q8_0,q4_1", "--rounds", "1", "--steps", str(args.decode_steps),
                                           "--context", str(c), "--prefill", str(prefill)])
            ours_rounds[c].append({(row["flag"], row["activations"]): row for row in figures["speed"]})
            bandwidths.append(figures["machine"]["read_bandwidth_bytes_per_s"])
        for name in FORMATS:
            for c in args.contexts:
                progress(f"round {r + 1} of {args.rounds}, context {c}: llama.cpp on {name} ...")
                theirs.round(name, c, r)
    crashes, without_extra, info = theirs.crashes, theirs.without_extra, theirs.info

    rows = []
    for name in FORMATS:
        flag = OUR_FLAG[name]
        for c in args.contexts:
            t = theirs.timings[(name, c)]
            their_step = median_of_round_medians(t["steps"], args.decode_steps) if t["steps"] else None
            for activations in ("fp32", "int8"):
                if (flag, activations) not in ours_rounds[c][0]:
                    continue  # F32: fp32 activations only
                ours_step = statistics.median(rr[(flag, activations)]["decode_seconds"] for rr in ours_rounds[c])
                rows.append({"format": name, "workload": f"decode, context {c}", "ours_activations": activations,
                             "ours_tokens_per_s": 1 / ours_step,
                             "llama_cpp_tokens_per_s": 1 / their_step if their_step else None})
        first = args.contexts[0]
        prefills = theirs.timings[(name, first)]["prefills"]
        ours_prefill = statistics.median(rr[(flag, "fp32")]["prefill_seconds"] for rr in ours_rounds[first])
        rows.append({"format": name, "workload": f"prefill, {args.prefill} tokens", "ours_activations": "fp32",
                     "ours_tokens_per_s": args.prefill / ours_prefill,
                     "llama_cpp_tokens_per_s": args.prefill / statistics.median(prefills) if prefills else None})
    for row in rows:
        their = row["llama_cpp_tokens_per_s"]
        row["ratio"] = row["ours_tokens_per_s"] / their if their else None
        row["target"] = TARGET
        row["met"] = row["ratio"] >= TARGET if their else None
        row["llama_cpp_without_extra_buffers"] = row["format"] in without_extra

    print(f"Ours ÷ llama.cpp on the same GGUF files, {args.threads} threads, {args.rounds} rounds "
          f"(each: ours, then llama.cpp, on every file and context)")
    print(f"machine: {machine_line(args.threads)}; read bandwidth {statistics.median(bandwidths) / 1e9:.1f} GB/s "
          f"(bench_quant, median of rounds)")
    print(our_build_line(args.ours))
    print(f"llama.cpp: llama-cpp-python {info.get('version', '?')}; {info.get('system_info', '(no run finished)')}")
    print()
    header = (f"{'format':6}  {'workload':21}  {'our x':5}  {'ours tok/s':>10}  {'llama.cpp tok/s':>15}  "
              f"{'ours ÷ llama.cpp':>16}  {'target':>6}  verdict")
    print(header)
    print("-" * len(header))
    for row in rows:
        measured = row["ratio"] is not None
        their = f"{row['llama_cpp_tokens_per_s']:15.1f}" if measured else f"{'crashed':>15}"
        ratio = f"{row['ratio']:16.3f}" if measured else f"{'—':>16}"
        verdict = ("met" if row["met"] else "NOT met") if measured else "not measured: llama.cpp crashed"
        if measured and row["llama_cpp_without_extra_buffers"]:
            verdict += " (llama.cpp without extra buffer types, after a crash)"
        print(f"{row['format']:6}  {row['workload']:21}  {row['ours_activations']:5}  {row['ours_tokens_per_s']:10.1f}  "
              f"{their}  {ratio}  {'≥ ' + format(TARGET, '.2f'):>6}  {verdict}")
    print()
    print("files: " + "; ".join(f"{n} {os.path.relpath(p, ROOT)}" for n, p in files.items()))
    for p in packing:
        print(f"weights: ours packs the F32 file's matrices into {p['equal']} of {p['matrices']} "
              f"{os.path.basename(p['file'])} matrices byte for byte"
              + (f", {p['other_types']} matrices in other types" if p["other_types"] else "")
              + (f" (first: {p['first_difference']})" if p["first_difference"] else ""))
    print(f"decode: one token at each context's position, median over rounds of each round's median of "
          f"{args.decode_steps} steps; prefill: {args.prefill} tokens in one pass, median of {args.rounds}; "
          f"both engines compute the logits of the last token only.")
    print(f"differences: ours loads the F32 file and packs Q8_0 / Q4_1 itself at load (bytes checked above), "
          f"llama.cpp reads its quantized files; llama.cpp rounds the activations to 8 bits for Q8_0 / Q4_1 "
          f"matrices (integer dot products), ours does too in the rows 'our x' = int8 (--int8-activations, decode "
          f"only) and multiplies fp32 activations in the rows fp32; KV cache: ours fp32, llama.cpp "
          f"{info.get('kv_type', '?')} (flash attention: {info.get('flash_attn', '?')}); tokens: ours a repeated "
          f"English text, llama.cpp random ids (the cost does not depend on which tokens).")
    print("llama.cpp runs in a process of its own for each file, context and round, so a crash in it ends that "
          "process only.")
    for name in FORMATS:
        for line in crashes[name]:
            print(f"llama.cpp crashed on {name}: {line}")
    if any(crashes.values()):
        print("with --llama-extra-buffers auto a file whose run crashed is retried with llama_model_params."
              "use_extra_bufts = false: no repacked weights (AMX tiles, interleaved rows), which is where crashes "
              "on CPUs with AMX have come from; a row that still crashed is left unmeasured.")

    if args.csv:
        with open(args.csv, "a", newline="") as f:
            f.write(f"# Ours ÷ llama.cpp on the same GGUF files, {args.threads} threads, {args.rounds} rounds\n")
            w = csv.writer(f)
            w.writerow(["format", "workload", "our activations", "ours (tokens/s)", "llama.cpp (tokens/s)", "ours ÷ llama.cpp",
                        "target (ours ÷ llama.cpp)", "verdict"])
            for row in rows:
                measured = row["ratio"] is not None
                w.writerow([row["format"], row["workload"], row["ours_activations"], f"{row['ours_tokens_per_s']:.1f}",
                            f"{row['llama_cpp_tokens_per_s']:.1f}" if measured else "",
                            f"{row['ratio']:.3f}" if measured else "", row["target"],
                            ("met" if row["met"] else "NOT met") if measured else "not measured"])
            f.write("\n")

    if args.json:
        report = {"threads": args.threads, "rounds": args.rounds, "decode_steps": args.decode_steps,
                  "contexts": args.contexts, "prefill_tokens": args.prefill, "machine": machine_line(args.threads),
                  "read_bandwidth_bytes_per_s": statistics.median(bandwidths),
                  "llama_cpp": {"version": info.get("version"), "system_info": info.get("system_info"),
                                "kv_type": info.get("kv_type")},
                  "files": files, "packing": packing, "crashes": crashes, "results": rows}
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
        progress(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
