#!/usr/bin/env bash
# The CTest test "student: NN_name" (label student): grades the student's skeleton.cpp.
#   run_student.sh EXE NAME MODEL_FILE
# Exit code 77 (CTest: skipped) while the student target has not been built or the skeleton is
# still the pristine one, so that a normal `ctest` run does not grade skeletons nobody started. Without the model file, the cases
# that need it ([model]) are left out, so that grading works offline. exercises/grade prints the
# same verdict as a scoreboard.
set -euo pipefail
exe=$1 name=$2 model=$3
if [[ ! -x "$exe" ]]; then
  echo "exercise $name: not built; run  cmake --build <build dir> --target exercise_${name}_student  (or exercises/grade $name)"
  exit 77
fi
source "$(dirname "${BASH_SOURCE[0]}")/common/exercises.sh"
if [[ $(blob_id "$exercises_dir/$name/skeleton.cpp") == "$(pristine_id "$name")" ]]; then
  echo "exercise $name: not started (skeleton.cpp is as shipped)"
  exit 77
fi
if [[ ! -f $model ]]; then
  echo "exercise $name: the [model] cases are left out: they need the model (run data/fetch_model.sh)"
  exec "$exe" '~[model]'
fi
exec "$exe"
