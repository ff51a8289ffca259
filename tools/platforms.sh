#!/usr/bin/env bash
# Checks the platforms the course supports (README.md, "Supported platforms"), one command each:
#
#   tools/platforms.sh x86-matrix [--compile-only]   the SIMD files compiled for x86-64-v2, v3,
#                          v4, Sapphire Rapids and Zen 4; then the portable build (INFER_ARCH=
#                          portable) and its unit tests with every SIMD target this CPU has, in turn
#   tools/platforms.sh aarch64      cross-built for arm64, unit/golden/stage tests under qemu-user
#   tools/platforms.sh debian13     a Debian 13 root (debootstrap): setup.sh, build, the whole suite
#   tools/platforms.sh all          all three
#
# Each exits non-zero on any failure; CI runs `x86-matrix --compile-only` on every change.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
case "${1:-}" in
  x86-matrix) shift; exec "$here/platforms/x86-matrix.sh" "$@" ;;
  aarch64) shift; exec "$here/platforms/aarch64.sh" "$@" ;;
  debian13) shift; exec "$here/platforms/debian13.sh" "$@" ;;
  all)
    status=0
    for check in x86-matrix aarch64 debian13; do
      echo "=== platforms: $check"
      "$here/platforms/$check.sh" || { status=1; echo "platforms: $check FAILED"; }
    done
    exit $status ;;
  -h|--help|"") sed -n '2,12p' "$0"; [[ -n "${1:-}" ]] && exit 0 || exit 2 ;;
  *) echo "platforms.sh: unknown check '$1' (x86-matrix, aarch64, debian13, all)" >&2; exit 2 ;;
esac
