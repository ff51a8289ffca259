#!/usr/bin/env bash
# The CTest test "exercises: mutants fail" (label exercise).
#   check_mutants_fail.sh BUILD_DIR NAME...
# Each exercise's mutants/*.patch turns its solution.cpp into a plausible wrong answer (the
# patch's first line, and the exercise's README, say what it gets wrong). Every one must apply,
# compile and FAIL the exercise's test; one that passes is a mistake the test cannot see. The
# mutants are built in rounds, one per exercise at a time, all exercises of a round in a single
# two-job build of their variant slots.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common/exercises.sh"
build=$1
shift
make_tmp
bad=0 total=0 start=$SECONDS
for ((round = 0; ; ++round)); do
  pairs=()
  for name in "$@"; do
    patches=("$exercises_dir/$name"/mutants/*.patch)
    [[ -f ${patches[0]} ]] || patches=()
    if [[ $round -eq 0 && ${#patches[@]} -lt 3 ]]; then
      echo "  $name: ${#patches[@]} mutants in mutants/, at least 3 wanted"
      bad=1
    fi
    ((round < ${#patches[@]})) || continue
    # The wrong answer, under a path that names the patch (run_variants shows it).
    mutant=$tmp/$name/mutants/$(basename "${patches[round]}")
    mkdir -p "$(dirname "$mutant")"
    if ! patch -s -o "$mutant" "$exercises_dir/$name/solution.cpp" "${patches[round]}" >"$tmp/patch.log" 2>&1; then
      printf '  %-26s %-40s FAILED: does not apply to solution.cpp\n' "$name" "mutants/$(basename "${patches[round]}")"
      head -n 3 "$tmp/patch.log"
      bad=1
      continue
    fi
    pairs+=("$name" "$mutant")
  done
  ((${#pairs[@]})) || break
  total=$((total + ${#pairs[@]} / 2))
  run_variants "$build" "${pairs[@]}" || bad=1
done
echo "$total mutants built and run in $((SECONDS - start)) s"
exit $bad
