#!/usr/bin/env python3
"""llama.cpp's decode and prefill speed on the course model, for comparison with chapter 06.

Measures what `ch06_quantization --speed` measures, with llama.cpp doing the work:

  decode   one token at position 128 against a cache of 128 tokens, timed step by step (the
           token is removed from the cache after each step, so every step sees context 128);
           tokens/s = 1 / median step
  prefill  256 tokens in one llama_decode call from an empty cache; tokens/s = 256 / median

All the models are loaded at once and timed in turn, round after round (--repeats rounds of
--decode-steps decode steps and one prefill each), so that other work on the machine slows
them alike; every figure is a median over the rounds.

for the F32 model file and llama.cpp's own Q8_0 and Q4_1 quantizations of it, on a fixed number
of threads (default 2). By default every matrix is quantized to the type, the tied
embedding/output matrix included (llama.cpp's "pure" mode), as our --quant packs every matrix;
--llama-defaults keeps llama.cpp's choice instead (the tied embedding becomes Q6_K for Q4_1).
The model file the course ships (projections Q4_1, embedding Q8_0) is timed too, as is.

llama.cpp comes from the llama-cpp-python package, through its low-level ctypes API: the library
it bundles, built for this machine's CPU when pip built it from the source package (the command is
in compare_llama_cpp.py, which times our engine and this one on the same files in one run).
With --llama-bench PATH, llama.cpp's own llama-bench binary (built from the same package's
vendor/llama.cpp) also runs, on the same files, as a cross-check (`-p 256 -n 0`, and `-p 0 -n 16
-d 128`: its decode figure averages 16 generated tokens after a 128-token context).

  python3 tests/bench/llama_cpp_decode.py                       # table on stdout
  python3 tests/bench/llama_cpp_decode.py --json out.json       # and the figures as JSON
  python3 tests/bench/llama_cpp_decode.py --threads 2 --repeats 9 --llama-bench /path/llama-bench

Timings on a shared machine are noisy: every figure is a median over --repeats.
"""
import argparse
import ctypes
import json
import os
import random
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.path.join(ROOT, "data", "cache")
F32_MODEL = os.path.join(CACHE, "SmolLM2-135M-Instruct.F32.gguf")
SHIPPED_MODEL = os.path.join(ROOT, "data", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")


def quiet_logs(llama_cpp):
    """Silences llama.cpp's log lines (model loading prints hundreds)."""
    callback = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
    llama_cpp.llama_log_set(callback, ctypes.c_void_p(0))
    return callback  # keep a reference: the library calls it later


def quantize(llama_cpp, src, dst, ftype, pure, threads):
    params = llama_cpp.llama_model_quantize_default_params()
    params.nthread = threads
    params.ftype = ftype
    params.pure = pure
    rc = llama_cpp.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(params))
    if rc != 0:
        raise RuntimeError(f"llama_model_quantize({src} -> {dst}) failed with {rc}")


def model_files(llama_cpp, args):
    """(label, path) for every file to time, quantizing what is missing into data/cache."""
    if not os.path.exists(args.f32):
        sys.exit(f"{args.f32} not found: python3 tests/golden/convert_to_f32.py writes it")
    files = [("F32", args.f32)]
    suffix = "llamacpp-default" if args.llama_defaults else "llamacpp-pure"
    for name, ftype in (("Q8_0", llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0), ("Q4_1", llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_1)):
        dst = os.path.join(CACHE, f"SmolLM2-135M-Instruct.{name}.{suffix}.gguf")
        if not os.path.exists(dst):
            print(f"quantizing {os.path.basename(args.f32)} to {name} with llama.cpp ...", file=sys.stderr)
            quantize(llama_cpp, args.f32, dst, ftype, not args.llama_defaults, args.threads)
        files.append((name, dst))
    if os.path.exists(SHIPPED_MODEL):
        files.append(("Q4_1 file as shipped", SHIPPED_MODEL))
    return files


class Context:
    """A model and a context with a batch large enough for the prefill."""

    def __init__(self, llama_cpp, path, threads, n_ctx, extra_buffers=True):
        self.L = llama_cpp
        mparams = llama_cpp.llama_model_default_params()
        mparams.n_gpu_layers = 0
        # llama.cpp's "extra buffer types" hold weights repacked for the CPU's instructions (AMX
        # tiles on Sapphire Rapids, interleaved rows elsewhere); off, every matrix is multiplied
        # from the file's own layout. compare_llama_cpp.py turns them off after a crash in them.
        if not extra_buffers:
            mparams.use_extra_bufts = False
        self.model = llama_cpp.llama_model_load_from_file(path.encode(), mparams)
        if not self.model:
            raise RuntimeError(f"cannot load {path}")
        cparams = llama_cpp.llama_context_default_params()
        cparams.n_ctx = n_ctx
        cparams.n_batch = n_ctx
        cparams.n_ubatch = n_ctx
        cparams.n_threads = threads
        cparams.n_threads_batch = threads
        cparams.no_perf = True
        self.ctx = llama_cpp.llama_init_from_model(self.model, cparams)
        if not self.ctx:
            raise RuntimeError(f"cannot create a context for {path}")
        self.memory = llama_cpp.llama_get_memory(self.ctx)
        self.batch = llama_cpp.llama_batch_init(n_ctx, 0, 1)
        vocab = llama_cpp.llama_model_get_vocab(self.model)
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
        self.bytes = llama_cpp.llama_model_size(self.model)
        self.params = llama_cpp.llama_model_n_params(self.model)

    def decode(self, tokens, pos0):
        """One llama_decode of `tokens` at positions pos0 …; logits for the last token only."""
        b = self.batch
        b.n_tokens = len(tokens)
        for i, t in enumerate(tokens):
            b.token[i] = t
            b.pos[i] = pos0 + i
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = 0
            b.logits[i] = 1 if i == len(tokens) - 1 else 0
        rc = self.L.llama_decode(self.ctx, b)
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc}")
        self.L.llama_synchronize(self.ctx)

    def clear(self):
        self.L.llama_memory_clear(self.memory, True)

    def close(self):
        self.L.llama_batch_free(self.batch)
        self.L.llama_free(self.ctx)
        self.L.llama_model_free(self.model)


class Timing:
    """One model file's context and its timings, filled round by round."""

    def __init__(self, llama_cpp, path, args, extra_buffers=True):
        self.L, self.path, self.args = llama_cpp, path, args
        self.c = Context(llama_cpp, path, args.threads, max(args.context + 1, args.prefill) + 16, extra_buffers)
        rng = random.Random(128)
        self.tokens = [rng.randrange(100, self.c.n_vocab - 100) for _ in range(max(args.context + 1, args.prefill))]
        self.steps, self.prefills = [], []
        self.fill_context()
        for _ in range(args.warmup):
            self.decode_step()
        self.prefill()  # warm-up
        self.fill_context()

    def fill_context(self):
        self.c.clear()
        self.c.decode(self.tokens[: self.args.context], 0)  # positions 0 … context − 1

    def decode_step(self):
        """The token at position `context`, then removed again: every step sees the same cache."""
        t0 = time.perf_counter()
        self.c.decode([self.tokens[self.args.context]], self.args.context)
        dt = time.perf_counter() - t0
        self.L.llama_memory_seq_rm(self.c.memory, 0, self.args.context, -1)
        return dt

    def prefill(self):
        self.c.clear()
        t0 = time.perf_counter()
        self.c.decode(self.tokens[: self.args.prefill], 0)
        return time.perf_counter() - t0

    def round(self):
        self.fill_context()
        self.steps += [self.decode_step() for _ in range(self.args.decode_steps)]
        self.prefills.append(self.prefill())

    def result(self):
        step, prefill = statistics.median(self.steps), statistics.median(self.prefills)
        c = self.c
        return {
            "file_bytes": os.path.getsize(self.path),
            "model_bytes": c.bytes,
            "parameters": c.params,
            "bits_per_weight": 8.0 * c.bytes / c.params,
            "decode_step_s_median": step,
            "decode_tokens_per_s": 1.0 / step,
            "decode_tokens_per_s_best": 1.0 / min(self.steps),
            "decode_steps_timed": len(self.steps),
            "prefill_s_median": prefill,
            "prefill_tokens_per_s": self.args.prefill / prefill,
            "prefills_timed": len(self.prefills),
        }


def llama_bench(binary, path, args):
    """llama-bench's own figures (tokens/s, averaged over its repetitions): a prefill from an
    empty cache, and 16 generated tokens after a context of --context tokens (-d)."""
    result = {}
    for key, flags in (("prefill", ["-p", str(args.prefill), "-n", "0"]),
                       ("decode", ["-p", "0", "-n", "16", "-d", str(args.context)])):
        cmd = [binary, "-m", path, "-t", str(args.threads), "-r", str(args.repeats), "-o", "json"] + flags
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        test = json.loads(out)[0]
        result[f"{key}_tokens_per_s"] = test["avg_ts"]
        result[f"{key}_tokens_per_s_stddev"] = test.get("stddev_ts")
        result[f"{key}_command"] = " ".join(cmd)
        result["build"] = f"{test.get('build_commit', '?')} ({test.get('build_number', '?')})"
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--f32", default=F32_MODEL, help="the F32 model file (default: %(default)s)")
    ap.add_argument("--threads", "-t", type=int, default=2)
    ap.add_argument("--context", type=int, default=128, help="decode: tokens already in the cache")
    ap.add_argument("--prefill", type=int, default=256, help="prefill: tokens in one call")
    ap.add_argument("--repeats", type=int, default=5, help="rounds: each times --decode-steps decode steps and one prefill per model")
    ap.add_argument("--decode-steps", type=int, default=9)
    ap.add_argument("--warmup", type=int, default=3, help="decode steps run before timing")
    ap.add_argument("--llama-defaults", action="store_true",
                    help="quantize with llama.cpp's per-tensor choices instead of every matrix in the type")
    ap.add_argument("--llama-bench", metavar="PATH", help="also run this llama-bench binary on the same files")
    ap.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    args = ap.parse_args()

    import llama_cpp  # pip install llama-cpp-python

    keep = quiet_logs(llama_cpp)
    llama_cpp.llama_backend_init()
    files = model_files(llama_cpp, args)
    report = {
        "engine": "llama.cpp via llama-cpp-python " + llama_cpp.__version__,
        "system_info": llama_cpp.llama_print_system_info().decode().strip(),
        "threads": args.threads,
        "context": args.context,
        "prefill_tokens": args.prefill,
        "repeats": args.repeats,
        "decode_steps": args.decode_steps,
        "quantization": "llama.cpp defaults" if args.llama_defaults else "pure: every matrix in the type",
        "results": [],
    }
    # All models are held at once and timed in turn, round after round, so that whatever else the
    # machine does slows them alike (as ch06_quantization --speed does).
    timings = []
    for label, path in files:
        print(f"loading {label} ({os.path.basename(path)}) ...", file=sys.stderr)
        timings.append((label, path, Timing(llama_cpp, path, args)))
    for r in range(args.repeats):
        print(f"round {r + 1} of {args.repeats} ...", file=sys.stderr)
        for _, _, t in timings:
            t.round()
    for label, path, t in timings:
        row = {"type": label, "file": os.path.relpath(path, ROOT)}
        row.update(t.result())
        t.c.close()
        if args.llama_bench:
            row["llama_bench"] = llama_bench(args.llama_bench, path, args)
        report["results"].append(row)
    del keep

    f32 = report["results"][0]
    print(f"llama.cpp ({report['engine']}), {args.threads} threads; {report['system_info']}")
    print(f"decode: one token at context {args.context}, median of {args.repeats * args.decode_steps} steps; "
          f"prefill: {args.prefill} tokens in one call, median of {args.repeats}; models timed in turn, "
          f"{args.repeats} rounds")
    header = (f"{'type':22} {'model MB':>9} {'bits/w':>7} {'decode tok/s':>13} {'× F32':>6} {'best step':>10} "
              f"{'prefill tok/s':>14} {'× F32':>6}")
    if args.llama_bench:
        header += f" {'llama-bench tg':>15} {'pp':>8}"
    print(header)
    print("-" * len(header))
    for r in report["results"]:
        line = (f"{r['type']:22} {r['model_bytes'] / 1e6:9.1f} {r['bits_per_weight']:7.2f} {r['decode_tokens_per_s']:13.1f} "
                f"{r['decode_tokens_per_s'] / f32['decode_tokens_per_s']:6.2f} {r['decode_tokens_per_s_best']:10.1f} "
                f"{r['prefill_tokens_per_s']:14.1f} "
                f"{r['prefill_tokens_per_s'] / f32['prefill_tokens_per_s']:6.2f}")
        if args.llama_bench:
            lb = r["llama_bench"]
            line += f" {lb.get('decode_tokens_per_s', float('nan')):15.1f} {lb.get('prefill_tokens_per_s', float('nan')):8.1f}"
        print(line)
    print("best step: 1 / the fastest decode step, what the machine gives when nothing else runs; far above the "
          "median means the timing was contended")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
        print(f"figures written to {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
