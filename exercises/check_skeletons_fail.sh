#!/usr/bin/env bash
# The CTest test "exercises: untouched skeletons fail" (label exercise).
#   check_skeletons_fail.sh BUILD_DIR NAME...
# Every exercise's skeleton, as the course ships it, must compile and FAIL its test: a skeleton
# that passes means a test that cannot fail. "As shipped" is the pristine skeleton recorded in
# pristine_skeletons.txt, not the file in the work tree, so a student who has filled in (and even
# committed) skeleton.cpp does not break the suite: the pristine text is built in the exercise's
# variant slot, never over the student's file.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common/exercises.sh"
build=$1
shift
make_tmp
pairs=() bad=0
for name in "$@"; do
  mkdir -p "$tmp/$name"
  if ! pristine_skeleton "$name" >"$tmp/$name/skeleton.cpp"; then
    bad=1
    continue
  fi
  if [[ $(blob_id "$exercises_dir/$name/skeleton.cpp") != "$(pristine_id "$name")" ]]; then
    echo "  $name: skeleton.cpp is edited; checking the pristine one from git"
    # So that messages name the exercise's file rather than the temporary copy.
    pairs+=("$name" "$tmp/$name/skeleton.cpp")
  else
    pairs+=("$name" "$exercises_dir/$name/skeleton.cpp")
  fi
done
start=$SECONDS
run_variants "$build" "${pairs[@]}" || bad=1
echo "$((${#pairs[@]} / 2)) skeletons built and run in $((SECONDS - start)) s"
exit $bad
