#!/usr/bin/env bash
# One-command set-up on a fresh machine running one of the supported distributions
# (Debian 12 "bookworm", Debian 13 "trixie", Ubuntu 22.04, Ubuntu 24.04):
#   1. the distribution's packages the course builds with (idempotent: apt skips what is there),
#      CMake from pip where the distribution's is older than the presets need (3.25),
#   2. the default model (data/fetch_model.sh: pinned version, checked sha256),
#   3. a Release build of the library, the chapters and the tests,
#   4. chapter 01's demo, unless --no-demo.
#
#   ./setup.sh              everything, then the demo
#   ./setup.sh --deps-only  only step 1 (what CI uses before its own build)
#   ./setup.sh --no-demo    steps 1-3
#
# Two parts are optional and skipped with one line where the distribution lacks their packages:
# the report's browser check (tests/report: chromium, its driver, selenium) and the fuzz preset
# (tests/fuzz: clang, its libFuzzer runtime, its OpenMP).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

deps_only=0 demo=1
for arg in "$@"; do
  case "$arg" in
    --deps-only) deps_only=1 ;;
    --no-demo) demo=0 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option $arg (see --help)" >&2; exit 2 ;;
  esac
done

supported="Debian 12, Debian 13, Ubuntu 22.04, Ubuntu 24.04"
distro_id="" distro_version="" distro_name="an unknown system"
if [[ -r /etc/os-release ]]; then
  distro_id="$(. /etc/os-release && echo "${ID:-}")"
  distro_version="$(. /etc/os-release && echo "${VERSION_ID:-}")"
  distro_name="$(. /etc/os-release && echo "${PRETTY_NAME:-$ID $VERSION_ID}")"
fi

# The package map: what differs between the distributions.
#   catch2      Catch2 v2 (Debian 12, Ubuntu 22.04) or v3 (Debian 13, Ubuntu 24.04); CMake handles both
#   fuzz        clang and its libFuzzer runtime: libclang-rt-dev where llvm-defaults has it
#   browser     Ubuntu ships Chromium only as a snap (chromium-browser is a transitional package)
case "$distro_id:$distro_version" in
  debian:12|debian:13)
    fuzz_packages=(clang libclang-rt-dev libomp-dev)
    browser_packages=(chromium chromium-driver python3-selenium) ;;
  ubuntu:24.04)
    fuzz_packages=(clang libclang-rt-dev libomp-dev)
    browser_packages=() ;;
  ubuntu:22.04)
    fuzz_packages=(clang libclang-common-14-dev libomp-dev)
    browser_packages=() ;;
  *)
    echo "setup: error: $distro_name is not supported; supported: $supported (see README.md)" >&2
    exit 1 ;;
esac

core_packages=(
  build-essential cmake pkg-config git python3 python3-pip unzip time
  libxtensor-dev xtl-dev libxsimd-dev libxtensor-blas-dev
  libopenblas-openmp-dev gfortran  # OpenBLAS sharing our OpenMP threads; linked statically, it needs libgfortran
  catch2 libcli11-dev libpcre2-dev nlohmann-json3-dev libfmt-dev
  libhwy-dev                       # Highway SIMD: chapter 06's packed kernels
  libssl-dev                       # OpenSSL: the sha256 of the model file in run records
  sword-text-web diatheke          # the evaluation text (data/fetch_eval_text.sh)
  python3-jinja2 gnuplot-nox       # the course report (docs/course/course.py): pages and plots
)

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup: error: not root and no sudo to run apt-get" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
available() { [[ -n "$(apt-cache policy "$1" 2>/dev/null | sed -n 's/^ *Candidate: //p' | grep -v '(none)')" ]]; }
missing_of() { local p; for p in "$@"; do installed "$p" || echo "$p"; done; }

mapfile -t missing_core < <(missing_of "${core_packages[@]}")
mapfile -t missing_fuzz < <(missing_of "${fuzz_packages[@]}")
mapfile -t missing_browser < <(missing_of "${browser_packages[@]}")

if ((${#missing_core[@]} + ${#missing_fuzz[@]} + ${#missing_browser[@]})); then
  $sudo apt-get update -qq
fi

if ((${#missing_core[@]})); then
  unavailable=()
  for p in "${missing_core[@]}"; do available "$p" || unavailable+=("$p"); done
  if ((${#unavailable[@]})); then
    hint=""; [[ $distro_id == ubuntu ]] && hint=" (enable the 'universe' component)"
    echo "setup: error: $distro_name's package index has no ${unavailable[*]}$hint" >&2
    exit 1
  fi
  echo "setup: installing ${missing_core[*]}"
  $sudo apt-get install -y -qq --no-install-recommends "${missing_core[@]}" \
    || { echo "setup: error: apt-get could not install the packages above" >&2; exit 1; }
else
  echo "setup: all required packages present"
fi

# optional_part NAME WHAT packages...: install them, or say in one line why the part is skipped.
optional_part() {
  local name="$1" what="$2"; shift 2
  local p unavailable=()
  (($#)) || return 0
  for p in "$@"; do available "$p" || unavailable+=("$p"); done
  if ((${#unavailable[@]})); then
    echo "setup: skipping the $name ($what): $distro_name has no package ${unavailable[*]}"
    return 0
  fi
  echo "setup: installing $* (the $name)"
  $sudo apt-get install -y -qq --no-install-recommends "$@" \
    || echo "setup: skipping the $name ($what): apt-get could not install $*"
}
optional_part "fuzz preset" "tests/fuzz, cmake --preset fuzz" "${missing_fuzz[@]}"
if ((${#browser_packages[@]} == 0)); then
  echo "setup: skipping the report's browser check (tests/report): $distro_name ships Chromium only as a snap;" \
       "the test course_report_in_browser reports itself skipped"
else
  optional_part "report's browser check" "tests/report" "${missing_browser[@]}"
fi

# The presets need CMake 3.25; older distributions (Ubuntu 22.04: 3.22) get it from pip, per user.
cmake_bin=cmake
version_at_least() { [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" == "$2" ]]; }
cmake_version="$(cmake --version 2>/dev/null | sed -n 's/^cmake version \([0-9.]*\).*/\1/p')"
if ! version_at_least "${cmake_version:-0}" 3.25; then
  echo "setup: $distro_name's CMake is ${cmake_version:-missing}, the presets need 3.25: installing cmake from PyPI (pip --user)"
  pip_flags=(--user --upgrade --no-warn-script-location)
  python3 -m pip install --help 2>/dev/null | grep -q -- --break-system-packages && pip_flags+=(--break-system-packages)
  python3 -m pip install -q "${pip_flags[@]}" 'cmake>=3.25,<4' \
    || { echo "setup: error: pip could not install cmake>=3.25,<4" >&2; exit 1; }
  cmake_bin="$(python3 -m site --user-base)/bin/cmake"
  echo "setup: CMake $("$cmake_bin" --version | sed -n '1s/^cmake version //p') is in $(dirname "$cmake_bin"): put it first on PATH"
fi
((deps_only)) && exit 0

data/fetch_model.sh
"$cmake_bin" --preset default
"$cmake_bin" --build --preset default
((demo)) && ./build/chapters/01_naive_loop/ch01_naive_loop
exit 0
