#!/usr/bin/env bash
# The CTest test "student: NN_name" (label student): grades the student's skeleton.cpp.
#   run_student.sh EXE NAME
# Exit code 77 (CTest: skipped) while the student target has not been built, so that a normal
# `ctest` run does not grade skeletons nobody has started.
set -euo pipefail
exe=$1 name=$2
if [[ ! -x "$exe" ]]; then
  echo "exercise $name: not built; run  cmake --build <build dir> --target exercise_${name}_student"
  exit 77
fi
exec "$exe"
