#!/usr/bin/env bash
# The CTest test "exercises: untouched skeletons fail" (label exercise).
#   check_skeletons_fail.sh BUILD_DIR EXERCISE_BINARY_DIR NAME...
# For every exercise whose skeleton.cpp is as committed: build exercise_NAME_student (one small
# file to compile, the test itself is already built), run its model-free cases, and require a
# non-zero exit. A skeleton that passes means a test that cannot fail. The student binary is
# removed afterwards, so the "student: NAME" test goes back to reporting "not built".
# A skeleton the student has edited is skipped: this checks the course, not their answer.
set -uo pipefail
build=$1 bindir=$2
shift 2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
bad=0
for name in "$@"; do
  skeleton=$here/$name/skeleton.cpp
  if git -C "$here" rev-parse --git-dir >/dev/null 2>&1 && ! git -C "$here" diff --quiet HEAD -- "$skeleton" 2>/dev/null; then
    printf '%-28s skipped: skeleton.cpp has been edited\n' "$name"
    continue
  fi
  target=exercise_${name}_student
  start=$SECONDS
  if ! cmake --build "$build" --target "$target" -j 2 >"$log" 2>&1; then
    printf '%-28s FAILED: the skeleton does not compile\n' "$name"
    tail -n 30 "$log"
    bad=1
    continue
  fi
  # Model-free cases only ([model] cases print the README's figure from the real model).
  timeout 300 "$bindir/$target" '~[model]' >"$log" 2>&1
  rc=$?
  rm -f "$bindir/$target"
  if [[ $rc -eq 0 ]]; then
    printf '%-28s FAILED: the untouched skeleton passes its test\n' "$name"
    bad=1
  else
    printf '%-28s ok: fails as it should (%s, %ds)\n' "$name" "$(grep -E '^test cases:' "$log" | head -n 1)" $((SECONDS - start))
  fi
done
exit $bad
