#!/usr/bin/env bash
# Fails when a kernel object that asks for cache lines ahead has lost its prefetch instructions.
#
# A compiler may delete a software prefetch without a word: to GCC a prefetch has no effect on
# memory, so a function that only prefetches was removed with every call to it, and chapter 06's
# decode kernels ran for weeks at half their speed (packed_kernels.cpp, prefetch_row). This
# disassembles each named member of a static library and counts its prefetch instructions
# (x86 prefetcht0/1/2/nta/w, arm64 prfm).
#
#   check_prefetch.sh OBJDUMP ARCHIVE MEMBER [MEMBER ...]
#     MEMBER   the end of an object's name in the archive, e.g. packed_kernels.cpp.o
set -euo pipefail
(( $# >= 3 )) || { echo "usage: $0 OBJDUMP ARCHIVE MEMBER [MEMBER ...]" >&2; exit 2; }
objdump=$1 archive=$2; shift 2
listing=$("$objdump" -d "$archive") || { echo "check_prefetch: $objdump could not read $archive" >&2; exit 1; }
failed=0
for member in "$@"; do
  # objdump starts each member with "NAME:     file format …"; count prefetches until the next one.
  count=$(awk -v m="$member" '
    / file format / { inside = index($1, m ":") > 0 && substr($1, length($1) - length(m)) == m ":"; seen = seen || inside; next }
    inside && /(prefetch(t0|t1|t2|nta|w)|prfm)[[:space:]]/ { n++ }
    END { print seen ? n + 0 : -1 }' <<<"$listing")
  if (( count < 0 )); then
    echo "$member: not in $archive"; failed=1
  elif (( count == 0 )); then
    echo "$member: no prefetch instruction left (the compiler deleted them)"; failed=1
  else
    echo "$member: $count prefetch instructions"
  fi
done
exit $failed
