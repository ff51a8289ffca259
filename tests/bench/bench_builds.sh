#!/usr/bin/env bash
# The portable build against the native build on this machine: a single-token forward pass
# (bench_forward, fp32 weights) from each build, in turn, round after round, so that both see the
# same minutes of a shared machine. Target (issue: platforms): the portable build's pass within
# 5% of the native build's time. A benchmark, never a test.
#
#   tests/bench/bench_builds.sh [NATIVE_BUILD [PORTABLE_BUILD [ROUNDS]]]
#     defaults: build (cmake --preset default), build-portable (-DINFER_ARCH=portable), 5 rounds
#   each round runs `bench_forward -t 2 --repeats 15` once per build, one after the other; the
#   figure is the median over the rounds of portable ÷ native in the same round (on a busy machine
#   the pass time moves by 2-3× from minute to minute, and a round's two runs share their minute).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
native=${1:-build} portable=${2:-build-portable} rounds=${3:-5}
for b in "$native" "$portable"; do
  [[ -x $b/tests/bench/bench_forward ]] ||
    { echo "bench_builds: $b/tests/bench/bench_forward not built (cmake --build $b --target bench_forward)" >&2; exit 1; }
done

# The pass time of one run, in milliseconds, from its "forward pass time" row.
pass_ms() {
  "$1/tests/bench/bench_forward" -t 2 --repeats 15 2>/dev/null | awk '
    /forward pass time/ { v = $(NF - 1); u = $NF
      if (u == "s") v *= 1000; else if (u == "µs" || u == "us") v /= 1000
      print v }'
}
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

kernels() { "$1/tests/bench/bench_forward" -t 2 --repeats 1 2>&1 | sed -n 's/.*threads, \([A-Z0-9_]*\) kernels.*/\1/p'; }
echo "native:   $native ($(kernels "$native") kernels)"
echo "portable: $portable ($(kernels "$portable") kernels)"
: >/tmp/bench_builds.$$.native; : >/tmp/bench_builds.$$.portable; : >/tmp/bench_builds.$$.ratio
trap 'rm -f /tmp/bench_builds.$$.*' EXIT
for ((r = 1; r <= rounds; ++r)); do
  n=$(pass_ms "$native"); p=$(pass_ms "$portable")
  echo "$n" >>/tmp/bench_builds.$$.native; echo "$p" >>/tmp/bench_builds.$$.portable
  awk -v p="$p" -v n="$n" 'BEGIN { print p / n }' >>/tmp/bench_builds.$$.ratio
  printf 'round %d: native %.2f ms, portable %.2f ms, portable ÷ native %.3f\n' "$r" "$n" "$p" "$(tail -n 1 /tmp/bench_builds.$$.ratio)"
done
n=$(median </tmp/bench_builds.$$.native); p=$(median </tmp/bench_builds.$$.portable)
ratio=$(median </tmp/bench_builds.$$.ratio | awk '{ printf "%.3f", $1 }')
verdict=$(awk -v r="$ratio" 'BEGIN { print (r <= 1.05) ? "met" : "NOT met" }')
printf 'single-token forward pass, 2 threads, median of %d rounds: native %.2f ms, portable %.2f ms\n' "$rounds" "$n" "$p"
echo "portable ÷ native time, median of the rounds' ratios: $ratio (target ≤ 1.05: $verdict)"
