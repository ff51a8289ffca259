#!/usr/bin/env bash
# x86-64 from x86-64-v2 to AVX-512 with VNNI/FP16 (tools/platforms.sh x86-matrix [--compile-only]).
#
# 1. Compile matrix: every file with SIMD kernels, compiled as a -march=native build would
#    compile it on each CPU class below (the project's own flags from a configured build's
#    compile_commands.json, -march replaced, the optimisation kept: some target-attribute errors
#    appear only when the optimiser inlines):
#      x86-64-v2  x86-64-v3 (AVX2, Haswell / Zen 1-3)  x86-64-v4 (AVX-512, Skylake-X)
#      sapphirerapids (AVX-512 FP16, VNNI, AMX)  znver4 (AVX-512 with VNNI, BF16)
#    and once with the portable build's flags (every target in one object).
# 2. Unless --compile-only: the portable build (build-portable/, INFER_ARCH=portable) and its
#    unit tests, among them kernels_on_each_simd_target, which runs the kernel tests with every
#    SIMD target this CPU supports forced in turn (INFER_SIMD).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
compile_only=0
[[ "${1:-}" == "--compile-only" ]] && compile_only=1
jobs=${JOBS:-2}
cxx=${CXX:-g++}

matrix_dir=build-matrix
mkdir -p "$matrix_dir"
cmake -S . -B "$matrix_dir" -DCMAKE_BUILD_TYPE=Release -DINFER_ARCH=portable -DINFER_CUDA=OFF >"$matrix_dir/configure.log" 2>&1 ||
  { cat "$matrix_dir/configure.log"; echo "x86-matrix: cmake configure failed" >&2; exit 1; }

simd_files=(lib/tensor/small_matmul.cpp lib/tensor/cpu_attention.cpp lib/tensor/cpu_silu.cpp lib/tensor/simd_target.cpp
            chapters/06_quantization/packed/cpu/packed_kernels.cpp chapters/06_quantization/packed/cpu/int8_activations.cpp)

# A CPU class the compiler may not know by name (GCC 12 has no znver4): its features spelled out.
march_flags() {
  case "$1" in
    znver4)
      if echo 'int main(){}' | "$cxx" -x c++ -march=znver4 -c -o /dev/null - 2>/dev/null; then echo "-march=znver4"
      else echo "-march=znver3 -mavx512f -mavx512cd -mavx512bw -mavx512dq -mavx512vl -mavx512ifma -mavx512vbmi" \
                "-mavx512vbmi2 -mavx512vnni -mavx512bitalg -mavx512vpopcntdq -mavx512bf16 -mgfni -mvpclmulqdq"; fi ;;
    portable) echo "-march=x86-64-v2" ;;
    *) echo "-march=$1" ;;
  esac
}

# The compile command of a source file, from compile_commands.json, as one shell line.
command_for() {
  python3 - "$matrix_dir/compile_commands.json" "$PWD/$1" <<'PY'
import json, shlex, sys
for entry in json.load(open(sys.argv[1])):
    if entry["file"] == sys.argv[2]:
        args = shlex.split(entry["command"])
        out, skip = [], False
        for a in args:
            if skip: skip = False; continue
            if a in ("-o", "-MT", "-MF"): skip = True; continue
            if a.startswith("-march=") or a == "-MD": continue
            out.append(a)
        print(shlex.join(out)); break
else:
    sys.exit(f"{sys.argv[2]} is not in compile_commands.json")
PY
}

# One line per (class, file), $jobs compiles at a time; a failure shows its first errors.
compile_one() {  # ARCH FILE
  local flags base log
  flags=$(march_flags "$1")
  base=$(command_for "$2")
  if log=$(cd "$matrix_dir" && eval "$base $flags -o /dev/null" 2>&1); then
    printf '  %-15s %-55s ok\n' "$1" "$2"
  else
    printf '  %-15s %-55s FAILED\n' "$1" "$2"
    echo "$log" | grep -E 'error' | head -5 | sed 's/^/      /'
  fi
}
export -f compile_one march_flags command_for
export matrix_dir cxx
results=$(for arch in x86-64-v2 x86-64-v3 x86-64-v4 sapphirerapids znver4 portable; do
            for file in "${simd_files[@]}"; do printf '%s %s\n' "$arch" "$file"; done
          done | xargs -P "$jobs" -n 2 bash -c 'compile_one "$0" "$1"')
echo "$results"
total=$(grep -c ' ok$\| FAILED$' <<<"$results")
failures=$(grep -c ' FAILED$' <<<"$results" || true)
echo "x86-matrix compile: $((total - failures)) passed, $failures failed"
(( failures == 0 )) || exit 1
(( compile_only )) && exit 0

echo "x86-matrix: the portable build (build-portable/) and its unit tests"
cmake -S . -B build-portable -DCMAKE_BUILD_TYPE=Release -DINFER_ARCH=portable -DINFER_CUDA=OFF >/dev/null
cmake --build build-portable -j"$jobs"
ctest --test-dir build-portable -L unit -j1 --output-on-failure
