#!/usr/bin/env python3
"""Golden greedy-decoding fixtures from an independent implementation: llama.cpp via llama-cpp-python.

Usage (see tests/golden/README.md):
    python3 tests/golden/convert_to_f32.py data/models/SmolLM2-135M-Instruct.Q4_1.gguf \
        data/cache/SmolLM2-135M-Instruct.F32.gguf
    python3 tests/golden/make_golden.py [--model data/cache/SmolLM2-135M-Instruct.F32.gguf] \
        [--source data/models/SmolLM2-135M-Instruct.Q4_1.gguf] [--out tests/fixtures/golden_tokens.json]

It loads the F32 copy of the model (why F32: see convert_to_f32.py), and for each fixed prompt
tokenizes it (no BOS: the model's tokenizer.ggml.add_bos_token is false; special tokens parsed, so the
ChatML markers become single tokens), evaluates the prompt in one batch, then greedily decodes STEPS
tokens, evaluating one token per step. The argmax is taken here from the raw logits (first index on a
tie), so no sampler, temperature or repetition penalty is involved. Decoding does not stop at
end-of-sequence tokens: every prompt has exactly STEPS steps.

Each prompt gets a fresh Llama context, so its results do not depend on the other prompts. The K/V
cache is F32 (llama.cpp's default is F16, which would round keys and values to fp16) and flash
attention is off (llama-cpp-python's default; llama.cpp's CPU flash attention computes in fp16), so
llama.cpp runs the whole forward pass in fp32. Thread counts are fixed at 2 for both single-token and
batch evaluation.

Output JSON:
  generator, command, model facts, settings, and
  prompts[i] = {text, prompt_ids, prompt_top5, steps: [{token, top5: [[id, logit] x5], max}], generated_text}
steps[k] is the k-th generated token and the distribution it was chosen from: steps[0] comes from the
logits at the prompt's last position (so steps[0].top5 == prompt_top5), steps[k] from the logits at the
position of generated token k-1. Logits are the exact float32 values, written with Python's shortest
round-trip repr.
"""

import argparse
import hashlib
import json
import os
import shlex
import statistics
import sys
import time

import numpy as np

STEPS = 32
TOPK = 5

PROMPTS = [
    "Once upon a time, there was a little girl who",
    "The capital of France is",
    "def fibonacci(n):",
    "The first ten prime numbers are 2, 3, 5, 7,",
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
    "<|im_start|>user\nWhat is the tallest mountain in the world?<|im_end|>\n<|im_start|>assistant\n",
    "Photosynthesis is the process by which green plants, algae and some bacteria turn light into "
    "chemical energy. Inside the chloroplasts, chlorophyll absorbs mostly red and blue light, and the "
    "energy is used to split water molecules, releasing oxygen. The plant then uses carbon dioxide from "
    "the air to build sugars, which",
]

DEFAULT_MODEL = "data/cache/SmolLM2-135M-Instruct.F32.gguf"
DEFAULT_SOURCE = "data/models/SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_OUT = "tests/fixtures/golden_tokens.json"


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def top_k(logits: np.ndarray, k: int) -> list:
    # stable sort on -logit: equal logits keep ascending id order, matching argmax's first-index rule
    order = np.argsort(-logits, kind="stable")[:k]
    return [[int(i), float(logits[i])] for i in order]


def dump(result: dict) -> str:
    """JSON with one line per step, so diffs between regenerations stay readable."""
    j = lambda v: json.dumps(v, ensure_ascii=False)  # noqa: E731
    lines = ["{"]
    for key, val in result.items():
        if key != "prompts":
            lines.append(f" {j(key)}: {j(val)},")
    lines.append(' "prompts": [')
    for pi, p in enumerate(result["prompts"]):
        lines.append("  {")
        for key in ("text", "prompt_ids", "prompt_top5", "generated_text"):
            lines.append(f"   {j(key)}: {j(p[key])},")
        lines.append('   "steps": [')
        lines += [f"    {j(s)}" + ("," if si + 1 < len(p["steps"]) else "") for si, s in enumerate(p["steps"])]
        lines.append("   ]")
        lines.append("  }" + ("," if pi + 1 < len(result["prompts"]) else ""))
    lines.append(" ]")
    lines.append("}")
    text = "\n".join(lines) + "\n"
    assert json.loads(text) == json.loads(json.dumps(result))
    return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=DEFAULT_MODEL, help="F32 GGUF made by convert_to_f32.py")
    ap.add_argument("--source", default=DEFAULT_SOURCE, help="the quantized GGUF the F32 file came from")
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--verbose", action="store_true", help="let llama.cpp log (model facts, timings)")
    args = ap.parse_args()

    for p in (args.model, args.source):
        if not os.path.isfile(p):
            print(f"missing file: {p}", file=sys.stderr)
            return 1

    import llama_cpp
    from llama_cpp import Llama

    # K/V cache in F32: llama.cpp's default F16 cache rounds every key and value to fp16, which moves
    # logits by ~0.02 on this model. Flash attention stays off: llama.cpp's CPU flash attention
    # also works in fp16 (~0.02 again). With both, its sequential and batched logits agree to ~4e-5.
    settings = dict(n_ctx=512, n_batch=512, n_threads=2, n_threads_batch=2, seed=0,
                    logits_all=True, flash_attn=False,
                    type_k=llama_cpp.GGML_TYPE_F32, type_v=llama_cpp.GGML_TYPE_F32)
    decode_times = []
    out_prompts = []
    for text in PROMPTS:
        llm = Llama(model_path=args.model, verbose=args.verbose, **settings)
        n_vocab = llm.n_vocab()
        ids = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        llm.eval(ids)
        assert llm.n_tokens == len(ids)
        logits = np.array(llm.scores[llm.n_tokens - 1, :n_vocab], dtype=np.float32)
        prompt_top5 = top_k(logits, TOPK)
        steps = []
        generated = []
        for step in range(STEPS):
            tok = int(np.argmax(logits))
            steps.append({"token": tok, "top5": top_k(logits, TOPK), "max": float(logits.max())})
            generated.append(tok)
            if step + 1 == STEPS:
                break
            t0 = time.perf_counter()
            llm.eval([tok])
            decode_times.append(time.perf_counter() - t0)
            assert llm.n_tokens == len(ids) + len(generated)
            logits = np.array(llm.scores[llm.n_tokens - 1, :n_vocab], dtype=np.float32)
        gen_text = llm.detokenize(generated, prev_tokens=ids, special=True).decode("utf-8", errors="replace")
        out_prompts.append({"text": text, "prompt_ids": ids, "prompt_top5": prompt_top5,
                            "steps": steps, "generated_text": gen_text})
        print(f"--- prompt ({len(ids)} tokens): {text!r}\n+++ generated: {gen_text!r}", file=sys.stderr)
        if args.verbose:
            llama_cpp.llama_perf_context_print(llm._ctx.ctx)
        del llm

    print(f"single-token eval: median {1e3 * statistics.median(decode_times):.2f} ms over "
          f"{len(decode_times)} steps (n_threads=2, wall clock incl. Python)", file=sys.stderr)

    result = {
        "generator": f"llama-cpp-python {llama_cpp.__version__}, F32 GGUF converted from {sha256(args.source)}",
        "command": shlex.join(["python3", "tests/golden/convert_to_f32.py", args.source, args.model])
                   + " && " + shlex.join(["python3", "tests/golden/make_golden.py"] + sys.argv[1:]),
        "source_model": os.path.basename(args.source),
        "source_sha256": sha256(args.source),
        "f32_model_sha256": sha256(args.model),
        "settings": {**settings, "type_k": "f32", "type_v": "f32", "add_bos": False, "special": True,
                     "steps": STEPS, "selection": "argmax of raw logits"},
        "prompts": out_prompts,
    }
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(dump(result))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
