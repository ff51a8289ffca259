#!/usr/bin/env bash
# The course on 64-bit Arm (aarch64), from an x86-64 Debian machine: Debian's cross toolchain
# (crossbuild-essential-arm64), the arm64 -dev packages by multiarch, a build in build-arm64/ with
# tools/toolchains/aarch64-linux-gnu.cmake, and the unit, golden and stage tests run under
# qemu-user (CTest runs each test binary through CMAKE_CROSSCOMPILING_EMULATOR).
#
#   tools/platforms/aarch64.sh                 install what is missing, build, run the tests
#   tools/platforms/aarch64.sh --no-install    assume the packages are there (no root needed)
#   tools/platforms/aarch64.sh --build-only    stop after the build
#   tools/platforms/aarch64.sh --labels "unit" run only these CTest labels (default: unit golden stage)
#
# Environment: BUILD_DIR (default build-arm64), JOBS (build jobs, default 2), CTEST_JOBS (tests
# at once, default 1), TEST_TIMEOUT (seconds per test, default 7200; the model runs over 100x
# slower emulated: the golden test did not finish in 58 min on 2 Zen 4 cores, 2026-12-07),
# QEMU_CPU (the emulated CPU, read by qemu itself; default "max", which has SVE, which the build
# leaves out; "cortex-a72" is a NEON-only core). Exit status 0 only when the build and every test
# passed; the last line printed is a one-line summary.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# The CPU target of the build. A cross build must not take the build machine's -march=native.
ARCH_FLAGS=(-DINFER_ARCH=portable)   # native would take the build machine's -march=native
BUILD_DIR=${BUILD_DIR:-build-arm64}
TOOLCHAIN=tools/toolchains/aarch64-linux-gnu.cmake
JOBS=${JOBS:-2}
CTEST_JOBS=${CTEST_JOBS:-1}
TEST_TIMEOUT=${TEST_TIMEOUT:-7200}
labels="unit golden stage"
install=1 run_tests=1

while (($#)); do
  case "$1" in
    --no-install) install=0 ;;
    --build-only) run_tests=0 ;;
    --labels) labels=${2:?--labels needs a list}; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "aarch64: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

summary() { echo "aarch64: $*"; }
die() { echo "aarch64: error: $*" >&2; summary "FAILED ($*)"; exit 1; }

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
apt_install() {
  local missing=() p
  for p in "$@"; do installed "$p" || missing+=("$p"); done
  ((${#missing[@]})) || return 0
  echo "aarch64: installing ${missing[*]}"
  $sudo apt-get update -qq || return 1
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

if ((install)); then
  command -v dpkg >/dev/null || die "this script needs Debian's dpkg and apt (use --no-install elsewhere)"
  sudo=""; [[ $(id -u) -ne 0 ]] && sudo="sudo"
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "aarch64: adding the arm64 architecture to dpkg (multiarch)"
    $sudo dpkg --add-architecture arm64 || die "dpkg --add-architecture arm64 failed"
    $sudo apt-get update -qq || die "apt-get update failed"
  fi
  # The build machine's tools and the header-only libraries (the same packages setup.sh installs:
  # Debian's libxtensor-dev:arm64 cannot be installed beside them, since it depends on
  # xtl-dev:arm64 and xtl-dev is Architecture: all without Multi-Arch: foreign; the toolchain file
  # uses their amd64 CMake configs, which name nothing arch-specific).
  host=(cmake pkg-config python3 python3-pip unzip crossbuild-essential-arm64 qemu-user
        libxtensor-dev xtl-dev libxtensor-blas-dev catch2 libcli11-dev nlohmann-json3-dev
        sword-text-web diatheke)   # the evaluation text of the stage tests (data/fetch_eval_text.sh)
  # The arm64 libraries by multiarch (each Multi-Arch: same, so it sits beside the amd64 one at
  # the same version). pkgconf:arm64 brings aarch64-linux-gnu-pkg-config.
  target=(pkgconf:arm64 libopenblas-openmp-dev:arm64 libpcre2-dev:arm64 libfmt-dev:arm64
          libssl-dev:arm64 libhwy-dev:arm64 libxsimd-dev:arm64)
  apt_install "${host[@]}" "${target[@]}" || die "apt-get could not install the packages above"
  # OpenBLAS's Fortran runtime for the cross linker (-lgfortran): libgfortran-N-dev:arm64 puts
  # libgfortran.so under /usr/lib/gcc/, which the cross compiler does not search; the -cross
  # package of the cross compiler's own version puts it where it does.
  gcc_major=$(aarch64-linux-gnu-gcc -dumpversion | cut -d. -f1)
  apt_install "libgfortran-${gcc_major}-dev-arm64-cross" || die "apt-get could not install libgfortran-${gcc_major}-dev-arm64-cross"
fi
command -v aarch64-linux-gnu-g++ >/dev/null || die "aarch64-linux-gnu-g++ not found (apt-get install crossbuild-essential-arm64)"
command -v qemu-aarch64 >/dev/null || command -v qemu-aarch64-static >/dev/null ||
  die "qemu-aarch64 not found (apt-get install qemu-user)"

start=$SECONDS
cmake -S . -B "$BUILD_DIR" --toolchain "$TOOLCHAIN" -DCMAKE_BUILD_TYPE=Release "${ARCH_FLAGS[@]}" ||
  die "configuring $BUILD_DIR failed"
cmake --build "$BUILD_DIR" -j "$JOBS" || die "the build in $BUILD_DIR failed"
build_min=$(((SECONDS - start + 59) / 60))
if ((!run_tests)); then summary "build OK in ${build_min} min ($BUILD_DIR, ${ARCH_FLAGS[*]})"; exit 0; fi

# One CTest run per label, each with its own summary; fixtures (the model, the evaluation text)
# are fetched by their setup tests, on the build machine.
status=0 results=()
for label in $labels; do
  log="$BUILD_DIR/ctest-$label.log"
  t0=$SECONDS
  ctest --test-dir "$BUILD_DIR" -L "^${label}\$" -j "$CTEST_JOBS" --timeout "$TEST_TIMEOUT" \
    --output-on-failure --no-tests=error 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  line=$(grep -E '^[0-9]+% tests passed' "$log" | tail -1)
  passed=$(sed -nE 's/.*, ([0-9]+) tests failed out of ([0-9]+).*/\2 \1/p' <<<"$line")
  if [[ -n $passed ]]; then
    read -r total failed <<<"$passed"
    results+=("$label $((total - failed))/$total")
  else
    results+=("$label no result")
  fi
  echo "aarch64: label $label: ${results[-1]} in $(((SECONDS - t0 + 59) / 60)) min (log: $log)"
  ((rc == 0)) || status=1
done
verdict=$([[ $status == 0 ]] && echo OK || echo FAILED)
summary "$verdict: build ${build_min} min; tests passed under qemu (QEMU_CPU=${QEMU_CPU:-max}): $(IFS=,; echo "${results[*]}" | sed 's/,/, /g'); $(((SECONDS - start + 59) / 60)) min in all"
exit $status
