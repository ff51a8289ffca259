#!/usr/bin/env bash
# One-command set-up on a fresh Debian (12 "bookworm" or later) machine:
#   1. the Debian packages the course builds with (idempotent: apt skips what is there),
#   2. the default model (data/fetch_model.sh: pinned version, checked sha256),
#   3. a Release build of the library, the chapters and the tests,
#   4. chapter 01's demo, unless --no-demo.
#
#   ./setup.sh              everything, then the demo
#   ./setup.sh --deps-only  only step 1 (what CI uses before its own build)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

deps_only=0 demo=1
for arg in "$@"; do
  case "$arg" in
    --deps-only) deps_only=1 ;;
    --no-demo) demo=0 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option $arg (see --help)" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake pkg-config git python3 python3-pip unzip
  libxtensor-dev xtl-dev libxsimd-dev libxtensor-blas-dev
  libopenblas-openmp-dev           # OpenBLAS sharing our OpenMP threads
  catch2 libcli11-dev libpcre2-dev nlohmann-json3-dev libfmt-dev
  libhwy-dev                       # Highway SIMD: chapter 06's packed kernels
  libssl-dev                       # OpenSSL: the sha256 of the model file in run records
  sword-text-web diatheke          # the evaluation text (data/fetch_eval_text.sh)
  clang libclang-rt-dev libomp-dev # the fuzz preset (tests/fuzz): clang, its libFuzzer, its OpenMP
  python3-jinja2 gnuplot-nox       # the course report (docs/course/course.py): pages and plots
  chromium chromium-driver python3-selenium  # its check in a headless browser (tests/report)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""; [[ $(id -u) -ne 0 ]] && sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    || { echo "setup: error: apt-get could not install the packages above" >&2; exit 1; }
else
  echo "setup: all Debian packages present"
fi
((deps_only)) && exit 0

data/fetch_model.sh
cmake --preset default
cmake --build --preset default
((demo)) && ./build/chapters/01_naive_loop/ch01_naive_loop
exit 0
