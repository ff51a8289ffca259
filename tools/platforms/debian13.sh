#!/usr/bin/env bash
# The course on Debian 13 "trixie" (g++ 14, CMake 3.31, Catch2 3, Highway 1.2, ...), from any
# Debian-family machine: a minimal Debian 13 root made with debootstrap (or reused), the checkout
# bind-mounted into it at the same path, and inside it `./setup.sh --deps-only`, a Release build in
# build-deb13/ (the host's build/ is left alone) and the whole default test suite.
#
#   tools/platforms/debian13.sh                  make or reuse the root, set up, build, run every test
#   tools/platforms/debian13.sh --build-only     stop after the build
#   tools/platforms/debian13.sh --labels "unit"  run only these CTest labels (default: all tests)
#   tools/platforms/debian13.sh --root DIR       the root's directory (default: DEB13_ROOT, else
#                                                deb13/ beside the checkout, outside the repository)
#
# Needs root (debootstrap, mount, chroot). Environment: JOBS (build jobs, default 2), MIRROR (the
# Debian mirror; default: the host's apt source for Debian, else http://deb.debian.org/debian).
# Exit status 0 only when set-up, build and every test passed; the last line printed is a one-line
# summary. The mounts are undone on exit; the root and build-deb13/ stay for the next run.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
repo="$(pwd -P)"

root="${DEB13_ROOT:-$(dirname "$repo")/deb13}"
build_dir=build-deb13
JOBS=${JOBS:-2}
labels=""
run_tests=1

while (($#)); do
  case "$1" in
    --build-only) run_tests=0 ;;
    --labels) labels=${2:?--labels needs a list}; shift ;;
    --root) root=${2:?--root needs a directory}; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "debian13: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

summary() { echo "debian13: $*"; }
die() { echo "debian13: error: $*" >&2; summary "FAILED ($*)"; exit 1; }

[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, mount and chroot)"
command -v dpkg >/dev/null || die "needs a Debian-family host (dpkg, apt-get, debootstrap)"
case "$root" in "$repo"|"$repo"/*) die "the root $root must lie outside the repository $repo" ;; esac

# The root: made once with debootstrap, reused while it is a Debian 13.
root_version() { [[ -r "$root/etc/os-release" ]] && (. "$root/etc/os-release" && echo "${ID:-}:${VERSION_ID:-}"); }
if [[ "$(root_version)" != "debian:13" ]]; then
  [[ -e "$root" && -n "$(ls -A "$root" 2>/dev/null)" ]] && die "$root exists and is not a Debian 13 root; remove it or pass --root"
  if ! command -v debootstrap >/dev/null; then
    echo "debian13: installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null \
      || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; } \
      || die "apt-get could not install debootstrap"
  fi
  if [[ -z "${MIRROR:-}" ]]; then
    MIRROR="$(grep -hoE '(https?://[^ ]+/debian)/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
                /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -1 | tr -d ' ')"
    MIRROR="${MIRROR%/}"
    MIRROR="${MIRROR:-http://deb.debian.org/debian}"
  fi
  echo "debian13: making a Debian 13 root in $root from $MIRROR (debootstrap, a few minutes)"
  mkdir -p "$root"
  debootstrap --variant=minbase --include=ca-certificates trixie "$root" "$MIRROR" > "$root.debootstrap.log" 2>&1 \
    || die "debootstrap failed (log: $root.debootstrap.log)"
fi
cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true

# The mounts: /proc, /sys, /dev and the checkout at its own path, undone on exit (innermost first).
mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -R "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}"; done
}
trap cleanup EXIT
mount_once() {  # mount_once TARGET mount-arguments...
  local target="$1"; shift
  mountpoint -q "$target" && return 0
  mkdir -p "$target"
  mount "$@" "$target" || die "mount $* $target failed"
  mounted+=("$target")
}
mount_once "$root/proc" -t proc proc
mount_once "$root/sys" --rbind /sys && mount --make-rslave "$root/sys"
mount_once "$root/dev" --rbind /dev && mount --make-rslave "$root/dev"
mount_once "$root$repo" --bind "$repo"
# The evaluation text is the export of the root's sword-text-web, another version than the host's
# (data/fetch_eval_text.sh): the root gets its own data/text/, so the host's file stays as it is.
mkdir -p "$repo/data/text" "$root/var/lib/infer-course/text"
mount_once "$root$repo/data/text" --bind "$root/var/lib/infer-course/text"

# in_root COMMAND: run bash -c COMMAND in the root, in the checkout, with a clean environment.
in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" ${CI:+CI=$CI} \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c "cd '$repo' && $1"
}

echo "debian13: ./setup.sh --deps-only in the root"
in_root "./setup.sh --deps-only" || die "setup.sh --deps-only failed in the Debian 13 root"

echo "debian13: versions in the root"
in_root "g++ --version | head -1; cmake --version | head -1
  dpkg-query -W -f='  \${Package} \${Version}\n' catch2 libhwy-dev libxsimd-dev libxtensor-dev libxtensor-blas-dev \
    xtl-dev libcli11-dev libfmt-dev nlohmann-json3-dev libopenblas-openmp-dev libpcre2-dev libssl-dev \
    sword-text-web diatheke clang chromium python3-selenium 2>/dev/null" || true

echo "debian13: configure and build in $build_dir/ (-j$JOBS)"
in_root "nice -n 10 cmake -S . -B $build_dir -DCMAKE_BUILD_TYPE=Release" || die "cmake configure failed"
in_root "nice -n 10 cmake --build $build_dir -j$JOBS" || die "build failed (g++ 14 in the Debian 13 root)"
if ((!run_tests)); then
  summary "PASSED (setup and build; tests not run: --build-only)"
  exit 0
fi

label_args=""
[[ -n "$labels" ]] && label_args="-L '^($(echo "$labels" | tr ' ' '|'))\$'"
echo "debian13: ctest --test-dir $build_dir -j1 --output-on-failure $label_args"
log="$repo/$build_dir/debian13-ctest.log"
in_root "ctest --test-dir $build_dir -j1 --output-on-failure --no-tests=error $label_args" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
result="$(grep -E '^[0-9]+% tests passed' "$log" | tail -1)"
skipped="$(grep -c -E '\*\*\*Skipped|Not Run.*Disabled' "$log")"
if ((rc != 0)); then
  summary "FAILED (${result:-ctest exited $rc}; log: $log)"
  exit 1
fi
summary "PASSED (${result}; $skipped skipped)"
