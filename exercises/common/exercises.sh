# Shell functions shared by exercises/grade, exercises/reset and the checks that wrong answers
# fail (check_skeletons_fail.sh, check_mutants_fail.sh). Sourced, never run.

exercises_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# One line per exercise, "<git blob id of the pristine skeleton.cpp>  <NN_name>": what the course
# ships, so that a skeleton the student has filled in (and committed) can still be told apart.
pristine_list=$exercises_dir/pristine_skeletons.txt

# A scratch directory $tmp for the calling script, removed when it exits.
make_tmp() {
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
}

# The git object id of a file's content ("blob <size>\0<bytes>" through SHA-1), computed without
# git, so that a copy of the course without its history can still tell an edited skeleton.
blob_id() {
  { printf 'blob %d\0' "$(wc -c <"$1")"; cat "$1"; } | sha1sum | cut -d' ' -f1
}

# Every exercise directory name, in order.
all_exercises() {
  local d
  for d in "$exercises_dir"/[0-9][0-9]_*/; do basename "$d"; done
}

pristine_id() {
  awk -v n="$1" '$2 == n { print $1 }' "$pristine_list"
}

# Writes the pristine skeleton of exercise $1 to stdout: the file itself while it is untouched,
# else the recorded blob from git's history. Fails with one line on stderr when neither is there.
pristine_skeleton() {
  local name=$1 id
  id=$(pristine_id "$name")
  if [[ -z $id ]]; then
    echo "$name: no pristine skeleton recorded in $pristine_list (exercises/reset --record)" >&2
    return 1
  fi
  if [[ $(blob_id "$exercises_dir/$name/skeleton.cpp") == "$id" ]]; then
    cat "$exercises_dir/$name/skeleton.cpp"
  elif ! git -C "$exercises_dir" cat-file blob "$id" 2>/dev/null; then
    echo "$name: skeleton.cpp is edited and git has no copy of the pristine one ($id)" >&2
    return 1
  fi
}

# The build tool's keep-going flag: one wrong answer that does not compile must not stop the rest.
keep_going_flag() {
  if grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja' "$1/CMakeCache.txt" 2>/dev/null; then echo "-k0"; else echo "-k"; fi
}

# run_variants BUILD_DIR NAME FILE [NAME FILE ...]
# Builds every FILE in place of exercise NAME's skeleton (the exercise_NAME_variant targets, all
# in one build at two jobs) and runs its test's model-free, non-figure cases. Prints one line per
# pair and returns 1 if any variant passes its test or does not compile: each must compile and fail.
run_variants() {
  local build=$1
  shift
  local bindir=$build/exercises log names=() files=() bad=0 i
  log=$(mktemp)
  while (($#)); do
    names+=("$1") files+=("$2")
    mkdir -p "$bindir/variants"
    # #line: compiler messages name the exercise's file (a pristine skeleton may come from git).
    { printf '#line 1 "exercises/%s/%s"\n' "$1" "${2##*/"$1"/}"; cat "$2"; } >"$bindir/variants/$1.cpp"
    rm -f "$bindir/exercise_$1_variant"
    shift 2
  done
  cmake --build "$build" --target exercise_variants -j 2 -- "$(keep_going_flag "$build")" >"$log" 2>&1
  for i in "${!names[@]}"; do
    local name=${names[i]} file=${files[i]##*/"${names[i]}"/} exe=$bindir/exercise_${names[i]}_variant rc
    if [[ ! -x $exe ]]; then
      printf '  %-26s %-40s FAILED: does not compile\n' "$name" "$file"
      grep -E "error" "$log" | grep -F "exercises/$name/$file" | head -n 5
      bad=1
      continue
    fi
    timeout 120 "$exe" '~[model]~[figure]' >"$log.run" 2>&1
    rc=$?
    if [[ $rc -eq 0 ]]; then
      printf '  %-26s %-40s FAILED: passes the test\n' "$name" "$file"
      bad=1
    else
      printf '  %-26s %-40s ok, fails: %s\n' "$name" "$file" \
        "$(grep -E '^test cases:' "$log.run" | head -n 1 | sed 's/^test cases: *//' | tr -s ' ' || true)$([[ $rc -eq 124 ]] && echo 'timed out')"
    fi
  done
  rm -f "$log" "$log.run"
  return $bad
}
