#!/usr/bin/env bash
# Fetch the course's evaluation text: Genesis–Ruth of the World English Bible (public domain),
# from Debian's package sword-text-web, exported as plain text with the SWORD front end diatheke.
#
#   data/fetch_eval_text.sh        write data/text/web.txt (skipped if present and valid)
#
# The export, line by line:
#   - diatheke prints one verse per line as "Book C:V: text" (poetry continues on further lines);
#     the verse reference is removed, so only the translation's own words remain;
#   - footnotes are asked for (-o f) and then deleted with their brackets: without -o f the module
#     drops them together with the space beside them ("Godcreated");
#   - each book starts with a line holding only its name (e.g. "Ruth") after a blank line;
#   - spaces are collapsed, trailing spaces and empty lines removed, diatheke's "(module)" line dropped.
#
# Held-out slice: the book of Ruth, i.e. everything after the line "Ruth" (the last book of the
# file). Chapters that evaluate (perplexity, agreement) read only that slice; chapters that train
# (chapter 08) may use Genesis–Judges. The result is pinned by its sha256, one per package version
# we have exported (known_sha256 below: the distributions' versions); an unknown package version, or
# a known one whose export differs (another diatheke), makes this script fail instead of silently
# changing the text.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest_dir="$here/text"
dest="$dest_dir/web.txt"
module="engWEB2015eb"  # the SWORD module installed by sword-text-web
books=(Genesis Exodus Leviticus Numbers Deuteronomy Joshua Judges Ruth)
# The export's sha256 for each sword-text-web version it was made from.
declare -A known_sha256=(
  [426.0-1]=cbbc77b921154ea382dab427ec61935049a461ab3205f2ae667dfbcc44623768  # Debian 12
  [522.0-1]=bf53cd832296cafb7066f7e50f0a25fda42ecb3c4d0a3eb65dee785328ac8e78  # Debian 13
)
known_versions() { local v; for v in "${!known_sha256[@]}"; do printf '%s ' "$v"; done | xargs -n1 | sort -V | xargs; }

die() { echo "fetch_eval_text: error: $*" >&2; exit 1; }

# A present file is kept when it is the export of the installed package version (or, without the
# package, of any known version); another version's export is replaced.
installed="$(dpkg-query -W -f='${Version}' sword-text-web 2>/dev/null || true)"
if [[ -f "$dest" ]]; then
  present="$(sha256sum "$dest" | cut -d' ' -f1)"
  for v in "${!known_sha256[@]}"; do
    [[ "$present" == "${known_sha256[$v]}" ]] || continue
    if [[ -z "$installed" || "$installed" == "$v" ]]; then
      echo "fetch_eval_text: $dest is present and its sha256 matches (sword-text-web $v's export)"
      exit 0
    fi
    echo "fetch_eval_text: $dest is sword-text-web $v's export; the installed version is $installed: exporting again"
  done
fi

if ! command -v diatheke >/dev/null || ! dpkg-query -W -f='${Status}' sword-text-web 2>/dev/null | grep -q "install ok installed"; then
  echo "fetch_eval_text: installing diatheke and sword-text-web with apt-get ..."
  sudo=""
  if [[ "$(id -u)" -ne 0 ]]; then
    command -v sudo >/dev/null || die "not root and no sudo: run 'apt-get install sword-text-web diatheke' as root"
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y sword-text-web diatheke >/dev/null \
    || { $sudo apt-get update >/dev/null && $sudo apt-get install -y sword-text-web diatheke >/dev/null; } \
    || die "apt-get could not install sword-text-web and diatheke"
fi
installed="$(dpkg-query -W -f='${Version}' sword-text-web 2>/dev/null || true)"
sha256="${known_sha256[$installed]:-}"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for book in "${books[@]}"; do
  diatheke -b "$module" -f plain -o f -k "$book" > "$tmp/raw.txt" || die "diatheke failed on $book"
  grep -q "^$book 1:1: " "$tmp/raw.txt" || die "diatheke printed no '$book 1:1' (is module $module installed?)"
  {
    [[ "$book" == "${books[0]}" ]] || echo
    echo "$book"
    echo
    perl -CSD -ne '
      chomp;
      next if /^\(\Q'"$module"'\E\)\s*$/;  # diatheke names the module on the last line
      s/^\Q'"$book"'\E \d+:\d+: //;        # the verse reference
      s/\s*\[\d+:\d+[^\]]*\]//g;           # footnotes, "[1:1 The Hebrew word …]"
      s/[ \t]+/ /g; s/^ //; s/ $//;
      s/ ([,;:.!?’”])/$1/g;                 # a space left before punctuation by a removed note
      print "$_\n" if length;
    ' "$tmp/raw.txt"
  } >> "$tmp/web.txt"
done

actual="$(sha256sum "$tmp/web.txt" | cut -d' ' -f1)"
if [[ -z "$sha256" ]]; then
  die "sword-text-web $installed is a version this script does not know (known: $(known_versions)); its export's sha256 is $actual: check the text, then add [$installed]=$actual to known_sha256 in $0; the text was not written"
fi
if [[ "$actual" != "$sha256" ]]; then
  die "sha256 of the exported text is $actual, expected $sha256 for sword-text-web $installed (a different diatheke?); the text was not written"
fi
mkdir -p "$dest_dir"
mv "$tmp/web.txt" "$dest"
echo "fetch_eval_text: stored $dest ($(wc -c < "$dest") bytes, $(wc -w < "$dest") words)"
