#!/usr/bin/env bash
# The chapter binaries' command lines, as a user meets them: bad flags and unwritable outputs
# refused before any work, in one line, with exit status 2 (bad usage) or 1 (the run failed);
# run records that are valid JSON and say how they were made; stage_diff on real records.
#
#   check_cli.sh flags DIR       needs no model: everything that must fail before loading one
#   check_cli.sh model DIR MODEL runs the binaries on MODEL (a few tokens each, ~25 s on 2 idle cores)
#
# DIR holds the binaries (ch01_naive_loop ... ch08_distillation under DIR/chapters/*/, stage_diff
# under DIR/tools/stage_diff/). Every failed check is printed; the exit status is the number of them.
set -u
mode=$1
dir=$(cd "$2" && pwd)
model=${3:-}
[[ -z $model || $model == /* ]] || model=$PWD/$model
# A Llama-shaped GGUF file of 9 KB with a context of 64 tokens (tests/fuzz/make_seeds.py): enough
# for the checks of flags whose limits come from the model's metadata, without the real model.
mini_model=$(cd "$(dirname "${BASH_SOURCE[0]}")/../fuzz/corpus/gguf" && pwd)/mini_llama.gguf
bin() { find "$dir/chapters" "$dir/tools" -maxdepth 2 -type f -name "$1" -perm -u+x | head -1; }
ch01=$(bin ch01_naive_loop) ch02=$(bin ch02_kv_cache) ch03=$(bin ch03_gqa) ch04=$(bin ch04_batching)
ch05=$(bin ch05_paged_blocks) ch06=$(bin ch06_quantization) ch07=$(bin ch07_speculative_decoding)
ch08=$(bin ch08_distillation) stage_diff=$(bin stage_diff)
all=("$ch01" "$ch02" "$ch03" "$ch04" "$ch05" "$ch06" "$ch07")
for b in "${all[@]}" "$ch08" "$stage_diff"; do [[ -x $b ]] || { echo "check_cli: a binary is missing under $dir" >&2; exit 1; }; done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A cross build (tools/toolchains/) runs its binaries under an emulator: INFER_TEST_EMULATOR holds
# that command (CMake's CMAKE_CROSSCOMPILING_EMULATOR). Each binary's variable then names a
# two-line script that runs it there, so the checks below read the same.
if [[ -n ${INFER_TEST_EMULATOR:-} ]]; then
  mkdir "$work/emulated"
  for name in ch01 ch02 ch03 ch04 ch05 ch06 ch07 ch08 stage_diff; do
    wrapper="$work/emulated/$(basename "${!name}")"
    printf '#!/bin/sh\nexec %s "%s" "$@"\n' "$INFER_TEST_EMULATOR" "${!name}" >"$wrapper"
    chmod +x "$wrapper"
    printf -v "$name" '%s' "$wrapper"
  done
  all=("$ch01" "$ch02" "$ch03" "$ch04" "$ch05" "$ch06" "$ch07")
fi
cd "$work"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect STATUS REGEX COMMAND...: the command exits with STATUS and its stderr is one line
# matching REGEX (grep -E). Prints the command and what it said when it does not.
expect() {
  local want=$1 pattern=$2
  shift 2
  local err got
  err=$("$@" 2>&1 >/dev/null)
  got=$?
  local lines
  lines=$(printf '%s' "$err" | grep -c '')
  if [[ $got != "$want" ]]; then fail "exit $got, expected $want: ${*##*/}"$'\n'"      $err"; return; fi
  if ! grep -Eq -- "$pattern" <<<"$err"; then fail "message does not match /$pattern/: $*"$'\n'"      $err"; return; fi
  if [[ $lines != 1 ]]; then fail "$lines lines on stderr, expected one: $*"$'\n'"$err"; fi
}

# within SECONDS COMMAND...: the command finishes in under SECONDS (its status is not checked).
within() {
  local limit=$1
  shift
  local start=$EPOCHREALTIME
  "$@" >/dev/null 2>&1
  local took
  took=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
  awk -v t="$took" -v l="$limit" 'BEGIN { exit !(t < l) }' || fail "took ${took}s (limit ${limit}s): $*"
}

if [[ $mode == flags ]]; then
  # --- output paths: checked before the model is even opened ---
  missing=/nonexistent-dir/out
  for b in "${all[@]}"; do
    expect 2 "error: --json $missing/r.json: directory $missing does not exist" "$b" --json $missing/r.json
    expect 2 "error: --csv $missing/t.csv: directory $missing does not exist" "$b" --csv $missing/t.csv
    within 1 "$b" --json $missing/r.json
  done
  expect 2 "error: --json $work: that is a directory" "$ch01" --json "$work"
  expect 2 "error: --plot $missing/p.svg" "$ch02" --plot $missing/p.svg
  expect 2 "error: --plot $missing/p.svg" "$ch04" --plot $missing/p.svg
  expect 2 "error: --plot $missing/p.svg" "$ch07" --plot $missing/p.svg
  within 1 "$ch04" --plot $missing/p.svg

  # --- numbers: readable messages, no NaN, no infinities ---
  expect 2 "error: --n-predict: must be at least 1, not '0'" "$ch01" -n 0
  expect 2 "error: --n-predict: 'abc' is not a whole number" "$ch01" -n abc
  expect 2 "error: --n-predict: must be at most 2147483647, not '1{20}…'" "$ch01" -n "$(printf '1%.0s' {1..309})"
  expect 2 "error: --temp: must be a finite number, not 'nan'" "$ch01" --temp nan
  expect 2 "error: --temp: must be a finite number, not 'inf'" "$ch02" --temp inf
  expect 2 "error: --top-p: must be more than 0, not '0'" "$ch01" --top-p 0
  grep -q -- "> 0 and ≤ 1" <("$ch01" --help) || fail "ch01 --help does not state --top-p's bounds"
  expect 2 "error: --seed: must be at least -1, not '-2'" "$ch01" --seed -2
  expect 2 "error: --slots: must be at most 64, not '65'" "$ch04" --slots 65
  expect 2 "error: --block-size: must be at most 8192, not '100000'" "$ch05" --block-size 100000
  expect 2 "error: --gap-steps: must be a finite number, not 'nan'" "$ch04" --gap-steps nan
  expect 2 "error: --gamma: must be at most 8, not '9'" "$ch07" --gamma 9
  expect 2 "error: --tree: tree verification here is greedy only" "$ch07" --tree --temp 0.5
  within 1 "$ch07" --tree --temp 0.5
  expect 2 "error: --rounds: 'x' is not a whole number" "$ch06" --rounds x
  expect 2 "error: --window: must be at least 2, not '1'" "$ch03" --window 1

  # --- limits that depend on the model: read from its metadata, refused before the weights load ---
  expect 2 "error: --window 100 exceeds the context length 64" "$ch03" -m "$mini_model" --window 100
  expect 2 "error: --cached 64 leaves no room in the context of 64" "$ch04" -m "$mini_model" --cached 64
  expect 2 "error: --cached 64 leaves no room in the context of 64" "$ch05" -m "$mini_model" --cached 64
  within 1 "$ch03" --window 100000   # the real model (context 8192), when it is there

  # --- --seed -1: a random seed, printed before the work (here the missing model stops it) ---
  err=$("$ch01" --seed -1 -m "$work/none.gguf" 2>&1 >/dev/null)
  grep -Eq "^seed: [0-9]+ \(drawn at random; --seed [0-9]+ repeats this run\)$" <<<"$err" || fail "--seed -1 printed no seed: $err"
  # --- more threads than cores: one warning line ---
  err=$("$ch01" -t 100000 -m "$work/none.gguf" 2>&1 >/dev/null)
  grep -Eq "^warning: -t 100000 asks for more threads than the [0-9]+ cores here" <<<"$err" || fail "-t 100000 gave no warning: $err"

  # --- --backend: a known name, checked as it is parsed; INFER_BACKEND the same, before any work ---
  for b in "${all[@]}" "$ch08"; do
    expect 2 "error: --backend: must be fast or reference, not 'simd'" "$b" --backend simd
  done
  expect 2 "error: INFER_BACKEND=turbo: expected fast or reference" env INFER_BACKEND=turbo "$ch01" -m "$work/none.gguf"
  expect 2 "error: model file $work/none.gguf not found" env INFER_BACKEND=turbo "$ch01" --backend fast -m "$work/none.gguf"
  expect 2 "error: --backend reference runs on the CPU, not on --device cuda:0" "$ch02" --backend reference --device cuda
  "$ch01" --help | grep -q -- "--backend" || fail "ch01 --help does not offer --backend"

  # --- flags a binary or a mode would ignore ---
  for flag in "-p x" "-n 4" "--chat"; do
    expect 2 "error: .*(not expected|extras).*" "$ch04" $flag
    expect 2 "error: .*(not expected|extras).*" "$ch05" $flag
  done
  expect 2 "error: --prompt is not used by --sweep" "$ch01" --sweep -p hello
  expect 2 "error: --n-predict is not used by --sweep" "$ch01" --sweep -n 8
  expect 2 "error: --repeats is not used by the demo" "$ch01" --repeats 2
  expect 2 "error: --csv is not used by --skip-tables" "$ch02" --skip-tables --csv t.csv
  expect 2 "error: --plot is not used by --skip-tables" "$ch02" --skip-tables --plot p.svg
  expect 2 "error: --window is not used by --no-eval" "$ch03" --no-eval --window 64
  expect 2 "error: --prompt is not used by the tables" "$ch06" -p hello
  expect 2 "error: --temp is not used by the tables" "$ch06" --temp 0.5
  expect 2 "error: --(memory|speed) excludes --(speed|memory)" "$ch06" --memory --speed
  expect 2 "error: --prompt is not used by --speed" "$ch06" --speed -p hello
  expect 2 "error: --rounds is not used by --quant" "$ch06" --quant int8 --rounds 2
  expect 2 "error: --int8-activations requires --quant" "$ch06" --int8-activations
  expect 2 "error: --int8-activations: no int8-activation kernel for int4-g128" "$ch06" --quant int4-g128 --int8-activations
  expect 2 "error: --threads is not used by --memory" "$ch06" --memory -t 2
  expect 2 "error: --csv is not used by --no-tables" "$ch07" --no-tables --csv t.csv
  expect 2 "error: --plot is not used by --no-tables" "$ch07" --no-tables --plot p.svg
  expect 2 "error: --csv is not used by a run that names its draft \(add --tables\)" "$ch07" --draft q8_0 --csv t.csv
  expect 2 "error: --tables excludes --no-tables" "$ch07" --tables --no-tables

  # --- exit 2 for bad usage, 1 for a failed run, in every binary ---
  printf 'this is not a GGUF file, just some bytes long enough to be read as a header....' > bad.gguf
  for b in "${all[@]}" "$ch08"; do
    expect 2 "error: .*--no-such-flag" "$b" --no-such-flag
    expect 2 "error: model file $work/none.gguf not found" "$b" -m "$work/none.gguf"
    expect 1 "error: " "$b" -m bad.gguf
    # --device: an unknown name is bad usage; a CUDA device that is not there is a failed run,
    # named before the model file is read (bad.gguf is never opened).
    expect 2 "error: unknown device 'gpu'" "$b" -m bad.gguf --device gpu
    if [[ ! -e /dev/nvidia0 && ! -d /proc/driver/nvidia/gpus ]]; then  # no GPU here
      expect 1 "error: --device cuda:0 requested but no CUDA device found" "$b" -m bad.gguf --device cuda
    fi
  done
  expect 2 "error: " "$stage_diff" only-one.json
  "$stage_diff" --help | grep -q "Exit status: 0 when" || fail "stage_diff --help does not document its exit status"

  # --- default outputs go to the working directory, never into the source tree ---
  "$ch02" --help | grep -Eq -- "--plot TEXT( \[|=)ch02_prefill_vs_decode.svg" || fail "ch02's default plot is not in the working directory"
  "$ch04" --help | grep -Eq -- "--plot TEXT( \[|=)ch04_throughput_vs_latency.svg" || fail "ch04's default plot is not in the working directory"
  for b in "${all[@]}"; do
    if "$b" --help | grep -Eq "=[^ ]*/docs/"; then fail "${b##*/}: a default output path points into docs/"; fi
  done
  exit $failures
fi

# ---- mode "model": short real runs ----
[[ -f $model ]] || { echo "check_cli: model $model not found" >&2; exit 1; }
sha=$(sha256sum "$model" | cut -d' ' -f1)
prompt='The capital of France is'

# --- --device cuda where there is none: "no CUDA device found", not the driver ---
if [[ ! -e /dev/nvidia0 && ! -d /proc/driver/nvidia/gpus ]]; then  # no GPU here
  expect 1 "error: --device cuda:0 requested but no CUDA device found" "$ch01" -m "$model" --device cuda
fi

# --- a prompt that is not UTF-8: the record is written, valid, with the exact bytes ---
"$ch01" -m "$model" -p $'caf\xc3\xa9 \xff\xfe' -n 2 --json bad_utf8.json >/dev/null 2>err.txt || fail "ch01 with an invalid UTF-8 prompt failed: $(cat err.txt)"
python3 - "$sha" <<'PY' || fail "the record of the invalid-UTF-8 prompt is wrong"
import json, sys
r = json.load(open("bad_utf8.json", encoding="utf-8"))  # strict UTF-8
assert r["prompt"] == "café \ufffd\ufffd", r["prompt"]
assert bytes(r["prompt_bytes"]) == b"caf\xc3\xa9 \xff\xfe"
assert r["binary"] == "ch01_naive_loop" and r["kind"] == "generation"
assert r["model"]["sha256"] == sys.argv[1], r["model"]
assert r["settings"] == {"temperature": 0.0, "top_k": 0, "top_p": 1.0, "seed": 42, "chat": False, "n_predict": 2, "device": "cpu"}, r["settings"]
assert all("text" in s for s in r["steps"])
PY
ls -a | grep -q '\.tmp-' && fail "a temporary record file was left behind"

# --- chapter 06 refuses a count that does not fit before packing anything ---
err=$("$ch06" -m "$model" --quant int8 -n 100000000 2>&1 >/dev/null)
[[ $? == 2 ]] || fail "ch06 --quant -n 100000000 did not exit 2: $err"
grep -q "exceeds the context length" <<<"$err" || fail "ch06 --quant -n 100000000: $err"
grep -q "packed every matrix" <<<"$err" && fail "ch06 packed the matrices before refusing -n 100000000"

# --- chapter 07: a run that names its draft shows that draft's demo, not every table; a
#     --draft-model draft is named by its file name, in the output and in the record ---
ln -s "$model" student.gguf
"$ch07" -m "$model" -p "$prompt" -n 8 --draft-model student.gguf --json spec.json >spec.txt 2>&1 || fail "ch07 --draft-model failed: $(cat spec.txt)"
grep -q 'tokens with draft "student.gguf"' spec.txt || fail "ch07 does not name the --draft-model draft by its file: $(cat spec.txt)"
grep -q "preparing draft" spec.txt && fail "ch07 with a named draft ran the tables: $(cat spec.txt)"
python3 -c 'import json, sys; sys.exit(json.load(open("spec.json"))["figures"]["demo"]["draft"] != "student.gguf")' ||
  fail "ch07's record does not name the --draft-model draft by its file name"

# --- stage_diff on real records ---
# Short runs (the naive loop's steps are the slow part): greedy in chapters 01 and 02, a sampled
# run, and a record of tables only; bad_utf8.json above serves as a run of another prompt.
"$ch01" -m "$model" -p "$prompt" -n 3 --json a.json >/dev/null 2>&1 || fail "ch01 run failed"
"$ch02" -m "$model" -p "$prompt" -n 3 --json b.json --skip-tables >/dev/null 2>&1 || fail "ch02 run failed"
"$ch02" -m "$model" -p "$prompt" -n 3 --temp 1.5 --seed 3 --json c.json --skip-tables >/dev/null 2>&1 || fail "ch02 sampled run failed"
"$ch06" -m "$model" --memory --json tables.json >/dev/null 2>&1 || fail "ch06 --memory failed"

out=$("$stage_diff" a.json b.json) || fail "stage_diff: ch01 and ch02 differ: $out"
grep -q "generated tokens:  identical over 3 steps" <<<"$out" || fail "stage_diff a b: $out"
out=$("$stage_diff" a.json c.json)
[[ $? == 1 ]] || fail "stage_diff greedy vs sampled: exit status not 1"
head -1 <<<"$out" | grep -q "^setting:           DIFFERENT temperature 0 vs 1.5" || fail "stage_diff does not state the settings first: $out"
grep -Eq "diverge at step [0-9]+ \(A: [0-9]+ \"[^\"]*\", B: [0-9]+ \"" <<<"$out" || fail "stage_diff shows no token text: $out"
out=$("$stage_diff" a.json bad_utf8.json)
[[ $? == 1 ]] || fail "stage_diff different prompts: exit status not 1"
grep -q "prompt tokens:     DIFFERENT" <<<"$out" || fail "stage_diff different prompts: $out"
grep -q "top logits" <<<"$out" && fail "stage_diff compared logits after different prompts: $out"
expect 2 "error: .*a generation record and .* a tables record" "$stage_diff" a.json tables.json
expect 2 "error: .* has no generated steps" "$stage_diff" tables.json tables.json

# --- the reference backend: the banner and the record say so; the tokens are the fast backend's ---
"$ch02" -m "$model" -p "$prompt" -n 3 --json ref.json --skip-tables --backend reference >/dev/null 2>ref.txt ||
  fail "ch02 --backend reference failed: $(cat ref.txt)"
grep -q "on cpu, reference backend (lib's operations in plain loops, one thread" ref.txt ||
  fail "ch02 --backend reference: the banner does not name the backend: $(cat ref.txt)"
INFER_BACKEND=reference "$ch02" -m "$model" -p "$prompt" -n 1 --json env.json --skip-tables >/dev/null 2>&1 || fail "ch02 with INFER_BACKEND=reference failed"
INFER_BACKEND=reference "$ch02" -m "$model" -p "$prompt" -n 1 --json override.json --skip-tables --backend fast >/dev/null 2>&1 ||
  fail "ch02 --backend fast with INFER_BACKEND=reference failed"
python3 - <<'PY' || fail "the records do not state the backends they ran on"
import json
backends = {f: json.load(open(f))["backend"] for f in ("ref.json", "env.json", "override.json", "b.json")}
assert backends == {"ref.json": "reference", "env.json": "reference", "override.json": "fast", "b.json": "fast"}, backends
PY
out=$("$stage_diff" b.json ref.json) || fail "stage_diff: the fast and reference backends give different tokens: $out"
grep -q "^backend:           A fast, B reference" <<<"$out" || fail "stage_diff does not name the two backends: $out"
grep -q "generated tokens:  identical over 3 steps" <<<"$out" || fail "stage_diff b ref: $out"
"$stage_diff" a.json b.json | grep -q "^backend:" && fail "stage_diff names the backend of two runs on the same one"

# Memory: reading two records takes a few times their size, not hundreds of MB.
rss_kb=$(/usr/bin/time -f %M "$stage_diff" a.json b.json 2>&1 >/dev/null | tail -1)
if [[ -n ${INFER_TEST_EMULATOR:-} ]]; then  # the emulator's own ~20 MB: count what reading adds to --help
  rss_kb=$((rss_kb - $(/usr/bin/time -f %M "$stage_diff" --help 2>&1 >/dev/null | tail -1)))
fi
(( rss_kb < 20000 )) || fail "stage_diff used ${rss_kb} KB to read two small records"
exit $failures
