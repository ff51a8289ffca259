#!/usr/bin/env python3
"""Ours ÷ llama.cpp: decode and prefill speed on the same GGUF files, threads and machine, one run.

Issue 17's target: ours ÷ llama.cpp (built with native flags) ≥ 1.0 for F32, Q8_0 and Q4_1
decode at context 128 and for a 512-token prefill, on 2 threads. This script measures both
engines in one run and prints the ratios with their verdicts:

  decode   one token at position 128 against a cache of 128 tokens; tokens/s = 1 / step time
  prefill  512 tokens in one pass from an empty cache; tokens/s = 512 / pass time

Each round runs our side, then llama.cpp's, on every file (F32, Q8_0, Q4_1), so that whatever
else the machine does in that minute slows both alike. A round times --decode-steps decode steps
and one prefill per file and engine; a figure is the median over the rounds of each round's
median step (decode) or of each round's prefill, for both engines alike.

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
  python3 tests/bench/compare_llama_cpp.py -t 2 --rounds 9 --json out.json
  python3 tests/bench/compare_llama_cpp.py --skip-if-missing      # what `--target bench` runs
"""
import argparse
import csv
import json
import os
import platform
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
TARGET = 1.0  # ours ÷ llama.cpp, every row (issue 17)
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", "-t", type=int, default=2, help="threads of both engines")
    ap.add_argument("--rounds", type=int, default=7, help="rounds, each timing every file with both engines")
    ap.add_argument("--decode-steps", type=int, default=9, help="decode steps timed per file, engine and round")
    ap.add_argument("--context", type=int, default=128, help="decode: tokens already in the cache")
    ap.add_argument("--prefill", type=int, default=512, help="prefill: tokens in one pass")
    ap.add_argument("--ours", default=os.path.join(ROOT, "build", "tests", "bench", "bench_quant"),
                    help="our bench_quant binary (default: %(default)s)")
    ap.add_argument("--cache", default=os.path.join(ROOT, "data", "cache"),
                    help="where the F32 file is and llama.cpp's quantizations go (default: %(default)s)")
    ap.add_argument("--skip-if-missing", action="store_true",
                    help="exit 0 with one line when llama-cpp-python or the model files are missing (the bench target)")
    ap.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    ap.add_argument("--csv", metavar="PATH", help="append the table as CSV (plain numbers, units in the headers)")
    args = ap.parse_args()
    for name in ("threads", "rounds", "decode_steps", "context", "prefill"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")

    try:
        llama_cpp = import_llama_cpp()
        f32 = f32_file(args.cache)
    except Missing as e:
        if args.skip_if_missing:
            print(f"compare_llama_cpp: skipped: {e}")
            sys.exit(0)
        sys.exit(f"compare_llama_cpp: {e}")
    if not os.access(args.ours, os.X_OK):
        sys.exit(f"compare_llama_cpp: {args.ours} not found: cmake --build build --target bench_quant")

    import llama_cpp_decode as lcd  # the llama.cpp side: Context, Timing, quantize (same folder)

    keep_logs = lcd.quiet_logs(llama_cpp)
    llama_cpp.llama_backend_init()
    files = {"F32": f32}
    for name, ftype in (("Q8_0", llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0), ("Q4_1", llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_1)):
        path = os.path.join(args.cache, f"SmolLM2-135M-Instruct.{name}.llamacpp-pure.gguf")
        if not os.path.exists(path):
            print(f"quantizing {F32_NAME} to {name} with llama.cpp (every matrix) ...", file=sys.stderr)
            lcd.quantize(llama_cpp, f32, path, ftype, True, args.threads)
        files[name] = path

    # Are our packed bytes llama.cpp's? (same F32 source, same block formats)
    packing = run_ours(args, f32, ["--check-packing", files["Q8_0"], "--check-packing", files["Q4_1"]])["packing"]

    # llama.cpp: every file loaded once, warmed up, then timed round by round below.
    cp = llama_cpp.llama_context_default_params()
    kv_type = {0: "F32", 1: "F16"}.get(cp.type_k, f"ggml type {cp.type_k}")
    flash = {-1: "auto", 0: "off", 1: "on"}.get(getattr(cp, "flash_attn_type", None), "?")  # llama.cpp's default
    opts = types.SimpleNamespace(threads=args.threads, context=args.context, prefill=args.prefill,
                                 decode_steps=args.decode_steps, warmup=3)
    theirs = {}
    for name in FORMATS:
        progress(f"loading {os.path.basename(files[name])} into llama.cpp ...")
        theirs[name] = lcd.Timing(llama_cpp, files[name], opts)

    ours_cmd = ["--formats", "q8_0,q4_1", "--rounds", "1", "--steps", str(args.decode_steps),
                "--context", str(args.context), "--prefill", str(args.prefill)]
    ours_rounds = []  # per round: {(flag, activations): bench_quant's row}
    bandwidths = []
    for r in range(args.rounds):
        progress(f"round {r + 1} of {args.rounds}: ours ...")
        figures = run_ours(args, f32, ours_cmd)
        ours_rounds.append({(row["flag"], row["activations"]): row for row in figures["speed"]})
        bandwidths.append(figures["machine"]["read_bandwidth_bytes_per_s"])
        progress(f"round {r + 1} of {args.rounds}: llama.cpp ...")
        for name in FORMATS:
            theirs[name].round()

    rows = []
    for name in FORMATS:
        flag = OUR_FLAG[name]
        t = theirs[name]
        their_step = median_of_round_medians(t.steps, args.decode_steps)
        their_prefill = statistics.median(t.prefills)
        for activations in ("fp32", "int8"):
            if (flag, activations) not in ours_rounds[0]:
                continue  # F32: fp32 activations only
            ours_step = statistics.median(rr[(flag, activations)]["decode_seconds"] for rr in ours_rounds)
            rows.append({"format": name, "workload": f"decode, context {args.context}", "ours_activations": activations,
                         "ours_tokens_per_s": 1 / ours_step, "llama_cpp_tokens_per_s": 1 / their_step})
        ours_prefill = statistics.median(rr[(flag, "fp32")]["prefill_seconds"] for rr in ours_rounds)
        rows.append({"format": name, "workload": f"prefill, {args.prefill} tokens", "ours_activations": "fp32",
                     "ours_tokens_per_s": args.prefill / ours_prefill,
                     "llama_cpp_tokens_per_s": args.prefill / their_prefill})
        t.c.close()
    del keep_logs
    for row in rows:
        row["ratio"] = row["ours_tokens_per_s"] / row["llama_cpp_tokens_per_s"]
        row["target"] = TARGET
        row["met"] = row["ratio"] >= TARGET

    system_info = llama_cpp.llama_print_system_info().decode().strip()
    print(f"Ours ÷ llama.cpp on the same GGUF files, {args.threads} threads, {args.rounds} rounds "
          f"(each: ours, then llama.cpp, on every file)")
    print(f"machine: {machine_line(args.threads)}; read bandwidth {statistics.median(bandwidths) / 1e9:.1f} GB/s "
          f"(bench_quant, median of rounds)")
    print(our_build_line(args.ours))
    print(f"llama.cpp: llama-cpp-python {llama_cpp.__version__}; {system_info}")
    print()
    header = (f"{'format':6}  {'workload':20}  {'our x':5}  {'ours tok/s':>10}  {'llama.cpp tok/s':>15}  "
              f"{'ours ÷ llama.cpp':>16}  {'target':>6}  verdict")
    print(header)
    print("-" * len(header))
    for row in rows:
        print(f"{row['format']:6}  {row['workload']:20}  {row['ours_activations']:5}  {row['ours_tokens_per_s']:10.1f}  "
              f"{row['llama_cpp_tokens_per_s']:15.1f}  {row['ratio']:16.3f}  {'≥ ' + format(TARGET, '.1f'):>6}  "
              f"{'met' if row['met'] else 'NOT met'}")
    print()
    print("files: " + "; ".join(f"{n} {os.path.relpath(p, ROOT)}" for n, p in files.items()))
    for p in packing:
        print(f"weights: ours packs the F32 file's matrices into {p['equal']} of {p['matrices']} "
              f"{os.path.basename(p['file'])} matrices byte for byte"
              + (f", {p['other_types']} matrices in other types" if p["other_types"] else "")
              + (f" (first: {p['first_difference']})" if p["first_difference"] else ""))
    print(f"decode: one token at position {args.context}, median over rounds of each round's median of "
          f"{args.decode_steps} steps; prefill: {args.prefill} tokens in one pass, median of {args.rounds}; "
          f"both engines compute the logits of the last token only.")
    print(f"differences: ours loads the F32 file and packs Q8_0 / Q4_1 itself at load (bytes checked above), "
          f"llama.cpp reads its quantized files; llama.cpp rounds the activations to 8 bits for Q8_0 / Q4_1 "
          f"matrices (integer dot products), ours does too in the rows 'our x' = int8 (--int8-activations, decode "
          f"only) and multiplies fp32 activations in the rows fp32; KV cache: ours fp32, llama.cpp {kv_type} "
          f"(flash attention: {flash}); tokens: ours a repeated English text, llama.cpp random ids "
          f"(the cost does not depend on which tokens).")

    if args.csv:
        with open(args.csv, "a", newline="") as f:
            f.write(f"# Ours ÷ llama.cpp on the same GGUF files, {args.threads} threads, {args.rounds} rounds\n")
            w = csv.writer(f)
            w.writerow(["format", "workload", "our activations", "ours (tokens/s)", "llama.cpp (tokens/s)", "ours ÷ llama.cpp",
                        "target (ours ÷ llama.cpp)", "verdict"])
            for row in rows:
                w.writerow([row["format"], row["workload"], row["ours_activations"], f"{row['ours_tokens_per_s']:.1f}",
                            f"{row['llama_cpp_tokens_per_s']:.1f}", f"{row['ratio']:.3f}", row["target"],
                            "met" if row["met"] else "NOT met"])
            f.write("\n")

    if args.json:
        report = {"threads": args.threads, "rounds": args.rounds, "decode_steps": args.decode_steps,
                  "context": args.context, "prefill_tokens": args.prefill, "machine": machine_line(args.threads),
                  "read_bandwidth_bytes_per_s": statistics.median(bandwidths),
                  "llama_cpp": {"version": llama_cpp.__version__, "system_info": system_info, "kv_type": kv_type},
                  "files": files, "packing": packing, "results": rows}
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
        progress(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
