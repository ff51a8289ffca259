#!/usr/bin/env python3
"""Writes the generated parts of the docs, so they cannot go stale.

1. Each chapter README's "## The change" section: the lesson function beside its predecessor,
   quoted from regions of the source between marker comment lines

       // the-change: begin NAME
       ...
       // the-change: end NAME

   (NAME is unique within its file). What each README shows is listed in CHANGES below.
2. The line-count tables of docs/architecture.md (between <!-- line-counts: begin --> and
   <!-- line-counts: end -->): each chapter's layer, main.cpp and study folders, and lib's parts.

    python3 docs/tools/gen_docs.py            rewrite every generated part
    python3 docs/tools/gen_docs.py --check    exit 1, naming each file, when a part differs from
                                              what would be written (a CTest test runs this)
    --only the-change | line-counts           restrict either mode to one kind of part

Python 3 standard library only.
"""
from __future__ import annotations

import argparse
import dataclasses
import difflib
import pathlib
import re
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[2]
COMMAND = "python3 docs/tools/gen_docs.py"
SOURCE_SUFFIXES = {".cpp", ".hpp", ".h", ".cu", ".cuh"}
MARKER = re.compile(r"^\s*// the-change: (begin|end) (\S+)\s*$")


class Stale(Exception):
    """A marker or a README that the generator cannot use; the message names it."""


# ---------------------------------------------------------------------------------------------
# Regions of the source


def regions(path: str) -> dict[str, list[str]]:
    """Every marked region of a source file: name → its lines, common indentation removed,
    marker lines of other (nested) regions left out."""
    file = ROOT / path
    if not file.is_file():
        raise Stale(f"{path}: no such file")
    lines = file.read_text().splitlines()
    open_at: dict[str, int] = {}
    found: dict[str, list[str]] = {}
    for i, line in enumerate(lines):
        m = MARKER.match(line)
        if not m:
            continue
        kind, name = m.groups()
        if kind == "begin":
            if name in open_at or name in found:
                raise Stale(f"{path}:{i + 1}: a second '// the-change: begin {name}'")
            open_at[name] = i
        else:
            if name not in open_at:
                raise Stale(f"{path}:{i + 1}: '// the-change: end {name}' without a begin")
            start = open_at.pop(name)
            body = [l for l in lines[start + 1:i] if not MARKER.match(l)]
            found[name] = textwrap.dedent("\n".join(body) + "\n").splitlines()
    if open_at:
        name, i = next(iter(open_at.items()))
        raise Stale(f"{path}:{i + 1}: '// the-change: begin {name}' without an end")
    return found


def region(path: str, name: str) -> list[str]:
    found = regions(path)
    if name not in found:
        raise Stale(f"{path}: no region '// the-change: begin {name}' … '// the-change: end {name}'")
    return found[name]


# ---------------------------------------------------------------------------------------------
# What each README's "The change" shows


@dataclasses.dataclass
class Text:
    markdown: str
    wrap: bool = True  # False: written as given (a formula block)


@dataclasses.dataclass
class Code:
    path: str
    name: str


@dataclasses.dataclass
class Diff:
    """A unified diff, whole regions as context, of (old path, old name) → (new path, new name)
    pairs, in one block."""
    pairs: list[tuple[tuple[str, str], tuple[str, str]]]


CH01 = "chapters/01_naive_loop"
CH02 = "chapters/02_kv_cache"
CH03 = "chapters/03_gqa"
CH04 = "chapters/04_batching"
CH04W = "chapters/04_batching/workload"  # the chapter's part 2, with its own README
CH05 = "chapters/05_paged_blocks"
CH05A = "chapters/05_paged_blocks/admission"  # the chapter's part 1b, with its own README
CH05S = "chapters/05_paged_blocks/sharing"  # the chapter's part 2, with its own README
CH06 = "chapters/06_quantization"
CH06S = "chapters/06_quantization/schemes"  # the chapter's part 1b, with its own README
CH06P = "chapters/06_quantization/packed"  # the chapter's part 2, with its own README
CH07 = "chapters/07_speculative_decoding"
CH07T = "chapters/07_speculative_decoding/tree"  # the chapter's part 2, with its own README
CH08 = "chapters/08_distillation"
CH08T = "chapters/08_distillation/training"  # the chapter's part 2, with its own README
CH08V = "chapters/08_distillation/variants"  # the chapter's part 3, with its own README
CH08F = "chapters/08_distillation/files"  # the chapter's part 4, with its own README

CHANGES: dict[str, list] = {
    CH01: [
        Text("The starting point, with nothing before it to compare: generation is a loop around the "
             "model, and every step hands the model the whole sequence, from position 0."),
        Code(f"{CH01}/naive_generate.cpp", "generate_naive"),
        Text("`model.forward` is the Llama forward pass, top to bottom: embed the tokens, run every "
             "layer on the residual stream, and turn the last row (or every row) into logits. "
             "`layer` (in the same file) is one transformer block with the shapes in comments:"),
        Code("lib/model/llama.cpp", "Llama::forward"),
        Text("Inside each layer, attention asks a `KvStore` for the keys and values of earlier "
             "positions; `NoCache` remembers none, so attention sees only what this pass computed — "
             "which is everything, every step:"),
        Code(f"{CH01}/naive_generate.cpp", "NoCache::attend"),
        Text("Chapter 02 changes this loop; every later chapter keeps the forward pass."),
    ],
    CH02: [
        Text("Chapter 01's loop against chapter 02's: the first step feeds the prompt (prefill), "
             "every later step only the token just sampled (decode), at its position, with a cache "
             "in place of `NoCache`."),
        Diff([((f"{CH01}/naive_generate.cpp", "generate_naive"), (f"{CH02}/cached_generate.cpp", "generate_cached"))]),
        Text("The cache is where attention now finds the past: each step writes its new keys and "
             "values into their slots, then attends over every slot written so far."),
        Code(f"{CH02}/kv_cache.cpp", "KvCache::attend"),
    ],
    CH03: [
        Text("Chapter 02's cache copied each key/value head into the slot of every query head that "
             "reads it. The grouped cache asks its base for H_kv heads per position instead of H, "
             "and stores k and v as the projections produce them. Attention, the loop and the "
             "forward pass are unchanged: query head h reads key/value head h / (H / H_kv)."),
        Diff([((f"{CH02}/kv_cache.hpp", "KvCache::KvCache"), (f"{CH03}/grouped_kv_cache.hpp", "GroupedKvCache::GroupedKvCache")),
              ((f"{CH02}/kv_cache.cpp", "KvCache::store"), (f"{CH03}/grouped_kv_cache.hpp", "GroupedKvCache::store"))]),
    ],
    CH04: [
        Text("Chapters 02 and 03 step one sequence: its new tokens through `Llama::forward`, against "
             "its own cache, and one token sampled from the last row:"),
        Code(f"{CH02}/cached_generate.cpp", "decode_step"),
        Text("Chapter 04 steps every admitted request at once. One chunk per request — its new "
             "tokens (the whole prompt on its first step, then one token), its position, its own "
             "cache — one pass over all of them, and each row sampled by the request's own sampler:"),
        Code(f"{CH04}/batch_decode.cpp", "BatchDecoder::step"),
        Code(f"{CH04}/batch_decode.cpp", "forward_and_sample"),
        Text("The pass stacks the chunks' tokens into one [N, d] matrix, so every weight is read "
             "once for all N tokens; the layers are `forward`'s, and only attention is split back "
             "per sequence (`ChunkedAttention`, in the same file). The static and continuous "
             "policies (`StaticBatcher`, `Scheduler::step`) decide which requests a step takes."),
        Code("lib/model/llama_batch.cpp", "Llama::forward_batch"),
        Text("Part 2 ([`workload/`](workload/README.md)) serves a skewed stream of requests through "
             "either policy and summarises what the users saw; it replays the same policy code on a "
             "cost model."),
    ],
    CH04W: [
        Text("Part 1 ends with policies that can step requests. This part runs a whole stream through "
             "one of them and summarises what the users saw. The policy code is part 1's, unchanged; "
             "only the engine and the clock are passed in:"),
        Code(f"{CH04W}/simulate.cpp", "serve"),
        Text("The real run passes part 1's `BatchDecoder` and a `WallClock`. The simulation passes an "
             "engine that runs no model. Each step it advances a virtual clock by what a step feeding "
             "that many tokens cost in the batch sweep:"),
        Code(f"{CH04W}/simulate.cpp", "SimulatedEngine::step"),
        Code(f"{CH04W}/simulate.cpp", "simulate"),
    ],
    CH05: [
        Text("**Part 1: paging.** Chapter 04's step against chapter 05's: the same pass over the same "
             "chunks, but each request's cache is a block table into one shared pool. Before the pass "
             "a request reserves blocks for its new tokens (the scheduler preempts when the pool is "
             "out); after it, newly filled blocks enter the prefix cache (part 2) so later requests "
             "can share them."),
        Diff([((f"{CH04}/batch_decode.cpp", "BatchDecoder::step"), (f"{CH05}/paged_engine.cpp", "PagedEngine::step"))]),
        Text("Reserving takes blocks from the pool as the sequence grows, all or nothing, so a "
             "sequence never holds more than the tail of its last block unwritten."),
        Code(f"{CH05}/block_table.cpp", "BlockTable::reserve"),
        Text("Attention writes each new row into its block and reads every earlier one through the "
             "block table: position p lives in logical block p / B, row p % B."),
        Code(f"{CH05}/paged_kv_cache.cpp", "PagedKvCache::attend"),
        Text("Reading in place needs no attention code of the chapter's own: the library's CPU kernel "
             "(the one `ops::attention` runs on chapter 04's contiguous cache) asks a `KvRows` where "
             "row j lies, and the cache answers with the blocks of its table."),
        Code(f"{CH05}/paged_kv_cache.cpp", "PagedKvCache::attend_in_place"),
        Text("Part 2 ([`sharing/`](sharing/README.md)) lets two block tables list the same block: a "
             "cached prefix, or samples forked from one prompt, copied on write when they part."),
    ],
    CH05A: [
        Text("**Part 1b: the scheduler's seams, filled in.** Chapter 04's `Scheduler` asks "
             "`can_admit` before the longest-waiting request takes a free slot, and calls "
             "`before_run` after admission, before the step. By default the first says yes and the "
             "second does nothing:"),
        Code(f"{CH04}/scheduler.hpp", "Scheduler::seams"),
        Text("The paged scheduler admits a request only when the engine has the blocks for its prompt "
             "(less what the prefix cache of [part 2](../sharing/README.md) already holds) together "
             "with what the running requests need this step:"),
        Code(f"{CH05A}/paged_scheduler.cpp", "PagedScheduler::can_admit"),
        Text("Before the step, every running request, oldest first, reserves the blocks for its new "
             "positions. When the pool is out, the newest running request gives its blocks back and "
             "waits at the front of the queue with the tokens it has generated. Admitted again, it "
             "recomputes prompt and tokens in one prefill chunk (recomputation, vLLM's default, "
             "rather than swapping the blocks out to host memory):"),
        Code(f"{CH05A}/paged_scheduler.cpp", "PagedScheduler::before_run"),
    ],
    CH05S: [
        Text("**Part 2: sharing (prefix reuse, fork, copy-on-write).** Part 1 gave every block one "
             "holder. Two block tables may list the same block instead: a cached prefix, or samples "
             "forked from one prompt. A full block's keys and values depend only on its own tokens "
             "and every token before it, so the prefix cache names it by a chained hash, and a new "
             "prompt takes the longest run of cached blocks it finds (their tokens compared too) and "
             "prefills only the rest:"),
        Code(f"{CH05S}/prefix_cache.cpp", "PrefixCache::lookup"),
        Text("Samples of one prompt: the prompt is prefilled once, and each further sample gets a "
             "table that lists the same blocks, one more holder each. It recomputes only the prompt's "
             "last position, to draw its own first token from its own sampler:"),
        Code(f"{CH05S}/fork.cpp", "PagedEngine::fork"),
        Text("A shared block is only read. Part 1's `BlockTable::reserve` calls this before a step, "
             "so a writer into a shared block (the prompt's last, partly filled one) first gets a "
             "private copy; the other holders keep reading the original, and blocks that stay "
             "identical stay shared:"),
        Code(f"{CH05S}/fork.cpp", "BlockTable::copy_on_write"),
    ],
    CH06: [
        Text("**Part 1: the numbers.** Chapters 01–05 computed with the file's fp32 weights and "
             "changed only how the work is organised. Part 1 changes the weights and not the code: "
             "every matrix is replaced by its round trip through a scheme, Ŵ = dequantize(quantize(W)), "
             "kept as a plain fp32 `DenseLinear`, so the forward pass is chapter 01's and only the "
             "numbers differ. The packed bytes are counted, not kept."),
        Code(f"{CH06}/quantize_model.cpp", "quantize_model"),
        Text("The simplest scheme gives every group of weights (a whole tensor, a row, or 128 "
             "consecutive weights) one scale, its largest magnitude over the largest code, stored "
             "in fp16, and every weight the nearest code. The other schemes (part 1b, "
             "[`schemes/`](schemes/README.md): asymmetric INT4, NF4, the float formats, llama.cpp's "
             "blocks) change only this function and its inverse:"),
        Code(f"{CH06}/absmax.cpp", "AbsmaxScheme::quantize"),
        Text("Part 2 ([`packed/`](packed/README.md)) keeps the bytes and multiplies from them."),
    ],
    CH06S: [
        Text("**Part 1b: the other schemes.** Part 1's `AbsmaxScheme` gives each group one scale, "
             "its largest magnitude over the largest code, and spaces the codes evenly around 0. "
             "Every scheme here is another `QuantScheme`: a [rows, cols] fp32 matrix in, packed "
             "bytes out, and back to fp32, so part 1's `quantize_model` and tables, and part 2's "
             "kernels, take it unchanged. What changes is `quantize` and its inverse. Asymmetric "
             "INT4 fits each group's own range [lo, hi] instead of [−max|w|, max|w|]: the scale is "
             "(hi − lo)/15, and a one-byte zero point per group says which of the 16 codes means 0:"),
        Diff([((f"{CH06}/absmax.cpp", "AbsmaxScheme::quantize"), (f"{CH06S}/asymmetric.cpp", "AsymmetricInt4Scheme::quantize"))]),
        Text("NF4 keeps absmax's blocks and one fp16 number per block (the absmax itself, not "
             "divided by a largest code) and changes where the levels sit: each weight over the "
             "absmax goes to the nearest of 16 fixed levels in [−1, 1] at quantiles of a normal "
             "distribution (`kNf4Levels` in `nf4.hpp`), dense near 0 where most weights are. The "
             "code is the level's index: a codebook lookup in place of a rounding. "
             "`Nf4Scheme::quantize` is absmax's loop with the rounding line replaced by "
             "`q = nf4_nearest(clamp(w / absmax, −1, 1))`; the lookup counts the midpoints between "
             "neighbouring levels that lie below x:"),
        Code(f"{CH06S}/nf4.cpp", "nf4_nearest"),
        Text("The float formats (`FloatScheme`: fp16, bf16, fp8 E4M3) need no scale at all: each "
             "weight is rounded on its own to the nearest value of the format. llama.cpp's blocks "
             "(`GgmlBlockScheme`, 32 weights along a row) are absmax INT8 (Q8_0) and an asymmetric "
             "4-bit scheme that stores the block's minimum in place of a zero point (Q4_1), "
             "written operation for operation as ggml's reference quantizers."),
    ],
    CH06P: [
        Text("**Part 2: the bytes.** Part 1 multiplied with Ŵ in fp32, so a decode step still "
             "streamed 4 bytes per weight. Every weight matrix of the forward pass is a `Linear`: "
             "lib's `DenseLinear` keeps fp32 weights and multiplies with `ops::matmul_t`; "
             "`PackedLinear` keeps only the packed bytes of a scheme (8 or 4 bits per weight plus "
             "scales) and multiplies with a kernel that decodes them on the fly. The forward pass "
             "does not change: it calls `forward` as before, and `weight_bytes` now counts what a "
             "decode step really streams."),
        Diff([(("lib/model/linear.hpp", "DenseLinear"), (f"{CH06P}/packed_linear.hpp", "PackedLinear")),
              (("lib/model/linear.cpp", "DenseLinear::forward"), (f"{CH06P}/packed_linear.cpp", "PackedLinear::forward"))]),
        Text("The idea is inside the kernel. For one token (a decode step), a row of int4-g128 "
             "weights is read as packed bytes and decoded in registers, 2·W weights per load "
             "(W = 16 fp32 lanes on AVX-512, 8 on AVX2, 4 on SSE4 and NEON): the low nibbles are "
             "the even columns, the high nibbles the odd ones, (q − 8)·s is one fused "
             "multiply-add, and the fp32 weight exists only in a register, never in memory. x was "
             "reordered once per call into the same even/odd order:"),
        Code(f"{CH06P}/cpu/packed_kernels.cpp", "dot_int4_row"),
        Text("The other formats' rows (`dot_int8_row`, `dot_q8_0_row`, `dot_q4_1_row`, "
             "`dot_nf4_row`) follow in the same file; a prefill decodes a panel of rows once for "
             "sgemm instead. The kernels are declared in `packed_kernels.hpp`; the bytes are what "
             "part 1's schemes write (`scheme_for`)."),
    ],
    CH07: [
        Text("Chapter 02 generates one token per pass of the target model:"),
        Code(f"{CH02}/cached_generate.cpp", "generate_cached"),
        Text("Chapter 07 keeps the prefill and replaces each decode step by a round: the draft "
             "guesses, one target pass over the last token and the guesses gives the target's "
             "distribution at every position, the acceptance rule (`accept_draft`) keeps a prefix "
             "of the guesses plus one token of the target's own, and the cache forgets the "
             "rejected positions:"),
        Code(f"{CH07}/speculative_decode.cpp", "generate_speculative"),
        Text("Part 2 ([`tree/`](tree/README.md)) drafts a tree of guesses instead of a chain and "
             "verifies every branch in the same single pass."),
    ],
    CH07T: [
        Text("**Part 2: a tree.** Part 1's round drafts a chain of γ guesses, verifies them in one "
             "target pass over γ + 1 consecutive positions, keeps a prefix (`accept_draft`) and "
             "truncates the cache after it. Part 2's round drafts a tree (`TreeDrafter::propose`), "
             "verifies every node in one target pass through a tree mask (`forward_tree`), keeps "
             "the longest branch the target agrees with (`accept_tree`) and moves that branch's "
             "keys and values into place (`keep_path`). It is greedy only, so each row's argmax "
             "replaces the sampler's distributions:"),
        Diff([((f"{CH07}/speculative_decode.cpp", "generate_speculative"), (f"{CH07T}/tree_decode.cpp", "generate_tree"))]),
        Text("The mask lives at lib's attention seam. For node j's query the cache hands lib's CPU "
             "attention kernel the rows it may read: the text before the root, then the root, …, "
             "j's parent, j. Each node therefore computes exactly what a decode step of its own "
             "draft sequence would:"),
        Code(f"{CH07T}/tree_kv_cache.cpp", "TreeKvCache::attend_tree"),
        Text("Acceptance is part 1's greedy rule along the one branch that agrees: the children of "
             "a node carry distinct tokens, so at most one of them is the target's argmax there."),
        Code(f"{CH07T}/tree_decode.cpp", "accept_tree"),
    ],
    CH08: [
        Text("Inference so far asked one thing of a model: its logits. Training asks a second: how "
             "the loss changes with every weight. The whole of it is one step, `train_step`: zero "
             "the gradients, a forward pass that keeps every activation, the loss and its "
             "gradient with respect to the logits, the backward pass, clipping, AdamW."),
        Code(f"{CH08}/train_step.cpp", "train_step"),
        Text("The loss is where distillation differs. Chapter 03's perplexity averaged the "
             "hard-label cross-entropy −log q[y] of the true next token y; as a training loss, "
             "with its gradient q − onehot(y), it is this branch of `distillation_loss`:"),
        Code(f"{CH08}/distill_loss.cpp", "hard_loss"),
        Text("Distillation replaces the one true token by the teacher's distribution p: its top k "
             "tokens and one more bucket for all the others (the tail), both sides softened by the "
             "temperature τ; it scales the KL divergence by τ² so that runs at different "
             "temperatures share one learning rate:"),
        Code(f"{CH08}/distill_loss.cpp", "soft_loss"),
        Text("""
```
hard   L = −log q₁[y]                                  ∂L/∂s = q₁ − onehot(y)
soft   L = T² · Σ_b p_T[b] (log p_T[b] − log q_T[b])   ∂L/∂s_v = T (q_T[v] − p_T[v])         v in the top k
       over k + 1 buckets b: the top k, the tail       ∂L/∂s_v = T q_T[v] (1 − p_tail / q_tail)  v in the tail
       p_T = softmax(z / T) of the teacher,  q_T = softmax(s / T),  p_tail, q_tail = the mass outside the top k
mix    w · hard + (1 − w) · soft, both over the same positions
```
""", wrap=False),
        Text("Part 2 ([`training/`](training/README.md)) is what runs under `s.backward` and "
             "`optimizer.step`: the backward pass of every piece of the block, by hand, and AdamW. "
             "Part 3 ([`variants/`](variants/README.md)) changes the recipe in two places: the two "
             "`fake_quant` lines of this step (quantization-aware training), and a cut of heads and "
             "neurons instead of layers (width pruning). Part 4 ([`files/`](files/README.md)) "
             "writes and checks the two files the chapter leaves on disk: the teacher's labels and "
             "the student as a GGUF."),
    ],
    CH08T: [
        Text("**Part 2: the backward passes.** Part 1's `train_step` calls `s.backward(d_logits)` and "
             "`optimizer.step`. Under them, every piece of the Llama block has a forward that saves "
             "what its backward needs, and a backward that takes d_out = ∂L/∂output and *adds* the "
             "gradients of its inputs and weights into arrays the caller zeroed (llm.c's convention: "
             "paths that meet — the residual, q, k and v reading one input — simply add up). RMSNorm "
             "is the piece whose backward is more than a product rule: every output of a row depends "
             "on every input of the row through r, so dx has a second term:"),
        Text("""
```
forward    y = x · r ⊙ w,   r = 1 / √(mean(x²) + ε) per row          saves r
backward   g = d_out ⊙ w:   dx += r·g − x · r³ · mean(g ⊙ x),   dw += Σ_rows d_out ⊙ x · r
```
""", wrap=False),
        Code(f"{CH08T}/train_kernels.cpp", "rmsnorm_backward"),
        Text("A block's backward walks its forward in reverse: the MLP sub-layer from W_down back to "
             "ffn_norm, then the attention sub-layer from W_o through attention and the inverse RoPE "
             "rotation back to attn_norm. The residual additions hand the gradient down unchanged "
             "(`dx_mid` starts as `d_out`, and `dx_in` receives `dx_mid` before the attention adds its "
             "part): that identity path is why a deep stack of blocks trains."),
        Code(f"{CH08T}/train_block.cpp", "block_backward"),
        Text("Then AdamW moves every parameter θ by its gradient's two moments, corrected for their "
             "start at zero (t counts the steps, this one included); the weight decay λ acts on θ "
             "itself, not through the gradient:"),
        Text("""
```
m = β1 m + (1 − β1) g,   v = β2 v + (1 − β2) g²,   m̂ = m / (1 − β1ᵗ),   v̂ = v / (1 − β2ᵗ)
θ −= lr · (m̂ / (√v̂ + ε) + λ θ)
```
""", wrap=False),
        Code(f"{CH08T}/adamw.cpp", "AdamW::step"),
    ],
    CH08V: [
        Text("**Part 3, quantization-aware training: two lines in `train_step`.** Nothing in the passes "
             "changes. Before the forward, `quantize_weights` sets the fp32 master W aside and puts "
             "Ŵ = dequant(quant(W)) in its place, so the forward, the loss and the backward all compute "
             "with the model as it will be deployed; after the backward, `restore_master` puts W back "
             "under the gradients ∂L/∂Ŵ, and AdamW applies them to W (the straight-through estimator):"),
        Code(f"{CH08}/train_step.cpp", "qat_step"),
        Text("Ŵ is chapter 06's round trip, matrix by matrix, over the seven projections of every "
             "block; the norms stay fp32:"),
        Code(f"{CH08V}/fake_quant.cpp", "fake_quantized"),
        Text("**Width pruning: a slice of the teacher.** Part 1's `Student::from_teacher` keeps whole "
             "layers. The width cut keeps every layer and, in each, the rows of W_q, W_k, W_v and the "
             "columns of W_o of the kept key/value groups (a group: one key/value head with its query "
             "heads), and the rows of W_gate, W_up and the columns of W_down of the kept neurons; which "
             "ones is chosen by their activations on calibration text (`width_importance`, "
             "`width_cut`). d, the head size, the norms, the embedding and the head stay the "
             "teacher's:"),
        Code(f"{CH08V}/width_importance.cpp", "width_pruned"),
    ],
    CH08F: [
        Text("**Part 4: the two files.** The teacher file is the labels' arrays one after another "
             "behind a 36-byte header, and its last 8 bytes are a 64-bit FNV-1a checksum of every "
             "byte before them:"),
        Code(f"{CH08F}/teacher_file.cpp", "TeacherLabels::save"),
        Text("`load` trusts nothing it reads. It checks the magic, the version and the header's "
             "counts, and the file's length against what the header promises, comparing counts "
             "before it multiplies so nothing overflows. Then it checks the checksum:"),
        Code(f"{CH08F}/teacher_file.cpp", "checksum"),
        Text("After the checksum it checks the numbers: every token and id inside the vocabulary, no "
             "id twice in a row, the logits finite and falling. The checksum says the bytes are the "
             "ones written; these checks say the writer kept its promises."),
        Text("The student's GGUF takes the teacher's metadata, with the shape keys rewritten from the "
             "student's config, and writes one F32 tensor per weight under llama.cpp's names. A "
             "[out, in] matrix is written with ggml's dims {in, out}:"),
        Code(f"{CH08F}/student_gguf.cpp", "student_tensors"),
    ],
}

NOTE = (f"<sub>Quoted from the source between `// the-change: begin/end` marker lines by `{COMMAND}`; "
        "the `docs_the_change` test fails when this section differs from the code.</sub>")


def link(readme_dir: str, path: str) -> str:
    """A Markdown link to `path` (from the root) as seen from the README in `readme_dir`."""
    here, target = pathlib.PurePosixPath(readme_dir).parts, pathlib.PurePosixPath(path).parts
    common = 0
    while common < min(len(here), len(target)) and here[common] == target[common]:
        common += 1
    rel = pathlib.PurePosixPath(*([".."] * (len(here) - common)), *target[common:])
    return f"[`{path}`]({rel})"


def render_diff(pairs) -> list[str]:
    out: list[str] = []
    for (old_path, old_name), (new_path, new_name) in pairs:
        old, new = region(old_path, old_name), region(new_path, new_name)
        if out:
            out.append("")
        out.append(f"--- {old_path}  {old_name}")
        out.append(f"+++ {new_path}  {new_name}")
        for line in difflib.unified_diff(old, new, n=max(len(old), len(new)), lineterm=""):
            if line.startswith(("---", "+++", "@@")):
                continue
            out.append(line.rstrip())
    return out


def the_change(chapter: str) -> str:
    """The "## The change" section of a chapter's README, ending in one blank line."""
    out = ["## The change", ""]
    for part in CHANGES[chapter]:
        if isinstance(part, Text) and part.wrap:
            out += textwrap.wrap(part.markdown, width=100, break_long_words=False, break_on_hyphens=False)
        elif isinstance(part, Text):
            out += part.markdown.strip("\n").splitlines()
        elif isinstance(part, Code):
            out.append(f"{link(chapter, part.path)}, `{part.name}`:")
            out += ["", "```cpp", *region(part.path, part.name), "```"]
        elif isinstance(part, Diff):
            olds = list(dict.fromkeys(old_path for (old_path, _), _ in part.pairs))
            news = list(dict.fromkeys(new_path for _, (new_path, _) in part.pairs))
            out.append(", ".join(link(chapter, p) for p in olds) + " → " + ", ".join(link(chapter, p) for p in news) + ":")
            out += ["", "```diff", *render_diff(part.pairs), "```"]
        out.append("")
    out += [NOTE, ""]
    return "\n".join(out) + "\n"


def split_sections(text: str) -> list[tuple[int, str]]:
    """(line index, heading) of every '## ' heading outside fenced code blocks."""
    heads, fenced = [], False
    for i, line in enumerate(text.splitlines()):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("## "):
            heads.append((i, line))
    return heads


def with_the_change(readme: str, section: str) -> str:
    """The README text with its "## The change" section replaced (or, when it has none, inserted
    before its first '## ' heading)."""
    lines = readme.splitlines(keepends=True)
    heads = split_sections(readme)
    starts = [i for i, (at, h) in enumerate(heads) if h.rstrip() == "## The change"]
    if len(starts) > 1:
        raise Stale("more than one '## The change' section")
    if starts:
        k = starts[0]
        begin = heads[k][0]
        end = heads[k + 1][0] if k + 1 < len(heads) else len(lines)
    else:
        if not heads:
            raise Stale("no '## ' heading to put 'The change' before")
        begin = end = heads[0][0]
    return "".join(lines[:begin]) + section + "".join(lines[end:])


def marker_names_in_tree() -> set[tuple[str, str]]:
    names = set()
    for top in ("chapters", "lib"):
        for f in sorted((ROOT / top).rglob("*")):
            if f.suffix in SOURCE_SUFFIXES and f.is_file() and "the-change:" in f.read_text(errors="replace"):
                rel = f.relative_to(ROOT).as_posix()
                names |= {(rel, n) for n in regions(rel)}
    return names


def used_regions() -> set[tuple[str, str]]:
    used = set()
    for parts in CHANGES.values():
        for part in parts:
            if isinstance(part, Code):
                used.add((part.path, part.name))
            elif isinstance(part, Diff):
                for a, b in part.pairs:
                    used |= {a, b}
    return used


def run_the_change(write: bool) -> list[str]:
    problems = []
    for rel, name in sorted(marker_names_in_tree() - used_regions()):
        problems.append(f"{rel}: region '{name}' is marked but no README shows it (add it to CHANGES in "
                        f"docs/tools/gen_docs.py or remove its markers)")
    for chapter in CHANGES:
        readme = ROOT / chapter / "README.md"
        rel = readme.relative_to(ROOT).as_posix()
        try:
            text = readme.read_text()
            fresh = with_the_change(text, the_change(chapter))
        except Stale as e:
            problems.append(f"{rel}: {e}")
            continue
        if fresh != text:
            if write:
                readme.write_text(fresh)
                print(f"wrote {rel}")
            else:
                problems.append(f"{rel}: 'The change' differs from the source it quotes (run {COMMAND})")
    return problems


# ---------------------------------------------------------------------------------------------
# Line counts for docs/architecture.md


def count_lines(files) -> int:
    return sum(len(f.read_text(errors="replace").splitlines()) for f in files)


def sources(directory: pathlib.Path, recursive: bool) -> list[pathlib.Path]:
    it = directory.rglob("*") if recursive else directory.iterdir()
    return sorted(f for f in it if f.is_file() and f.suffix in SOURCE_SUFFIXES)


def part_row(directory: pathlib.Path, label: str) -> str:
    """One row of the table: a chapter, or a part of one (a folder with its own README.md)."""
    top = sources(directory, recursive=False)
    layer = [f for f in top if f.name != "main.cpp"]
    main = [f for f in top if f.name == "main.cpp"]
    sub = {d.name: count_lines(sources(d, recursive=True))
           for d in sorted(directory.iterdir()) if d.is_dir() and not (d / "README.md").exists()}
    tables = sub.pop("tables", None)
    cuda = sub.pop("cuda", None)
    other = ", ".join(f"{name}/ {n}" for name, n in sub.items() if n) or ""
    cells = [count_lines(layer) if layer else None, count_lines(main) if main else None, tables, cuda]
    return f"| `{label}` | " + " | ".join("—" if n is None else str(n) for n in cells) + f" | {other or '—'} |"


def line_counts() -> str:
    rows = ["| chapter | layer | main.cpp | tables/ (studies) | cuda/ | other folders |",
            "|---|--:|--:|--:|--:|---|"]
    for chapter in sorted(p for p in (ROOT / "chapters").iterdir() if p.is_dir()):
        rows.append(part_row(chapter, chapter.name))
        for part in sorted(d for d in chapter.iterdir() if d.is_dir() and (d / "README.md").exists()):
            rows.append(part_row(part, f"{chapter.name}/{part.name}"))
    rows += ["", "| lib part | files | lines |", "|---|--:|--:|"]
    for part in sorted(p for p in (ROOT / "lib").iterdir() if p.is_dir()):
        files = sources(part, recursive=True)
        rows.append(f"| `lib/{part.name}` | {len(files)} | {count_lines(files)} |")
    return "\n".join(rows) + "\n"


LC_BEGIN, LC_END = "<!-- line-counts: begin -->", "<!-- line-counts: end -->"


def run_line_counts(write: bool) -> list[str]:
    doc = ROOT / "docs" / "architecture.md"
    text = doc.read_text()
    if text.count(LC_BEGIN) != 1 or text.count(LC_END) != 1 or text.index(LC_BEGIN) > text.index(LC_END):
        return [f"docs/architecture.md: needs one '{LC_BEGIN}' line before one '{LC_END}' line"]
    head, rest = text.split(LC_BEGIN + "\n", 1)
    _, tail = rest.split(LC_END, 1)
    fresh = head + LC_BEGIN + "\n" + line_counts() + LC_END + tail
    if fresh == text:
        return []
    if write:
        doc.write_text(fresh)
        print("wrote docs/architecture.md")
        return []
    return [f"docs/architecture.md: the line counts differ from the tree (run {COMMAND})"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a part is stale")
    parser.add_argument("--only", choices=("the-change", "line-counts"))
    args = parser.parse_args()
    problems = []
    try:
        if args.only in (None, "the-change"):
            problems += run_the_change(write=not args.check)
        if args.only in (None, "line-counts"):
            problems += run_line_counts(write=not args.check)
    except Stale as e:
        problems.append(str(e))
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
