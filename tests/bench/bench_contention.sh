#!/usr/bin/env bash
# How much a busy machine slows the test suite down, and which spin of lib's thread pool to use.
#
#   tests/bench/bench_contention.sh [BUILD_DIR] [CTEST_REGEX] [SPIN_US ...]
#
# Runs the same ctest selection (default: the golden and chapter-02 stage tests, about half a
# minute on a quiet 2-core machine) on a quiet machine and then beside two busy processes
# (shell loops that never sleep), for each spin time of the pool's idle workers (INFER_SPIN_US,
# default: the library's own and 0 / 100 / 10 000 µs around it). It prints the times and their
# ratio, loaded ÷ quiet; the target (issue 17) is a ratio of at most 4 with two busy processes
# on the machine. Nothing else should run meanwhile: the quiet column must be quiet.
set -euo pipefail

build=${1:-build}
regex=${2:-'matches llama.cpp|chapter 02 .KV cache'}
shift $(( $# > 2 ? 2 : $# ))
spins=("$@")
[[ ${#spins[@]} -eq 0 ]] && spins=(default 0 100 10000)

[[ -d $build ]] || { echo "bench_contention: no build directory '$build' (cmake --preset default first)" >&2; exit 2; }
n_tests=$(ctest --test-dir "$build" -N -R "$regex" | sed -n 's/^Total Tests: //p')
[[ ${n_tests:-0} -gt 0 ]] || { echo "bench_contention: no test matches '$regex'" >&2; exit 2; }

# Seconds taken by one ctest run of the selection; a failing test aborts the benchmark.
timed_run() {
  local start end
  start=$(date +%s.%N)
  ctest --test-dir "$build" -R "$regex" -j1 >/tmp/bench_contention.log 2>&1 ||
    { echo "bench_contention: tests failed, see /tmp/bench_contention.log" >&2; exit 1; }
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

busy=()
start_load() { for _ in 1 2; do (while :; do :; done) & busy+=($!); done; }
stop_load() { [[ ${#busy[@]} -gt 0 ]] && kill "${busy[@]}" 2>/dev/null; wait "${busy[@]}" 2>/dev/null || true; busy=(); }
trap stop_load EXIT

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "tests: $n_tests matching '$regex' from $build, run one at a time; load: 2 busy shell loops"
printf '\n%-14s %12s %12s %16s  %s\n' "spin (µs)" "quiet (s)" "loaded (s)" "loaded ÷ quiet" "target ≤ 4"
for spin in "${spins[@]}"; do
  if [[ $spin == default ]]; then unset INFER_SPIN_US; label="library default"; else export INFER_SPIN_US=$spin; label=$spin; fi
  quiet=$(timed_run)
  start_load
  loaded=$(timed_run)
  stop_load
  ratio=$(echo "scale=2; $loaded / $quiet" | bc)
  verdict=$(echo "$ratio <= 4" | bc | sed 's/1/met/;s/0/MISSED/')
  printf '%-14s %12.1f %12.1f %16s  %s\n' "$label" "$quiet" "$loaded" "$ratio" "$verdict"
done
