#!/usr/bin/env bash
# Runs the kernel tests once per SIMD target: every target this build compiled (INFER_ARCH=
# portable: SSSE3, SSE4, AVX2, AVX3, AVX3_DL on x86-64) that this CPU can run, forced with INFER_SIMD
# (lib/tensor/simd_target.hpp). So the SSE4 and AVX2 kernels are tested on an AVX-512 machine too.
#
#   run_each_simd_target.sh LISTER BINARY SPEC [BINARY SPEC ...]
#     LISTER   prints the targets, one per line (tests/simd_targets.cpp)
#     BINARY   a Catch2 test executable, SPEC its test spec (e.g. "[ops]")
set -euo pipefail
lister=$1; shift
# A cross build runs the binaries under an emulator (INFER_TEST_EMULATOR, e.g. qemu-aarch64).
read -r -a emulator <<<"${INFER_TEST_EMULATOR:-}"
(( $# >= 2 && $# % 2 == 0 )) || { echo "usage: $0 LISTER BINARY SPEC [BINARY SPEC ...]" >&2; exit 2; }
mapfile -t targets < <("${emulator[@]}" "$lister")
(( ${#targets[@]} )) || { echo "run_each_simd_target: $lister listed no target" >&2; exit 1; }
echo "SIMD targets compiled and supported here: ${targets[*]}"
failed=0 runs=0
for target in "${targets[@]}"; do
  args=("$@")
  for ((i = 0; i < ${#args[@]}; i += 2)); do
    binary=${args[i]} spec=${args[i + 1]}
    runs=$((runs + 1))
    if out=$(INFER_SIMD=$target "${emulator[@]}" "$binary" "$spec" 2>&1); then
      echo "$target  $(basename "$binary") $spec: $(echo "$out" | tail -n 1 | tr -s '\n' ' ')"
    else
      failed=$((failed + 1))
      echo "$out"
      echo "$target  $(basename "$binary") $spec: FAILED"
    fi
  done
done
echo "$((runs - failed)) passed, $failed failed"
(( failed == 0 ))
