#!/usr/bin/env bash
# smoke.sh HARNESS CORPUS SECONDS FINDINGS_DIR
#
# A short fuzzing run for CI: HARNESS starts from the committed CORPUS (read, never written: new
# inputs go to a scratch directory) and runs for SECONDS. Any crash, leak, sanitizer report,
# timeout (10 s on one input) or out-of-memory (2 GB) fails the run; the input that caused it is
# kept in FINDINGS_DIR, and the command to replay it is printed.
set -euo pipefail
harness=$1 corpus=$2 seconds=$3 findings=$4
name=${harness##*/}
[[ -x $harness ]] || { echo "smoke: $harness is not built" >&2; exit 1; }
[[ -d $corpus ]] || { echo "smoke: corpus $corpus is missing" >&2; exit 1; }
mkdir -p "$findings"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

status=0
"$harness" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$findings/$name-" "$scratch" "$corpus" >"$scratch/log" 2>&1 || status=$?
grep -E "^(#[0-9]+ +DONE|Done [0-9]+ runs|stat::number_of_executed_units)" "$scratch/log" | tail -2 || true
if ((status != 0)); then
  tail -60 "$scratch/log"
  echo "FUZZ FINDING: $name exited with status $status; the input is under $findings/" >&2
  echo "replay it with: $harness $findings/$name-<file>" >&2
  exit 1
fi
echo "$name: no finding in ${seconds}s"
