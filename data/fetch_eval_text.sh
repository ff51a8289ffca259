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
# (chapter 08) may use Genesis–Judges. The result is pinned by its sha256: a different package
# version or a different diatheke makes this script fail instead of silently changing the text.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest_dir="$here/text"
dest="$dest_dir/web.txt"
module="engWEB2015eb"  # the SWORD module installed by sword-text-web
package_version="426.0-1"
books=(Genesis Exodus Leviticus Numbers Deuteronomy Joshua Judges Ruth)
sha256="cbbc77b921154ea382dab427ec61935049a461ab3205f2ae667dfbcc44623768"

die() { echo "fetch_eval_text: error: $*" >&2; exit 1; }

if [[ -f "$dest" ]] && echo "$sha256  $dest" | sha256sum --check --status; then
  echo "fetch_eval_text: $dest is present and its sha256 matches"
  exit 0
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
if [[ "$installed" != "$package_version" ]]; then
  echo "fetch_eval_text: warning: sword-text-web is $installed, the pinned text came from $package_version" >&2
fi

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
if [[ "$actual" != "$sha256" ]]; then
  die "sha256 of the exported text is $actual, expected $sha256 (different sword-text-web or diatheke version?); the text was not written"
fi
mkdir -p "$dest_dir"
mv "$tmp/web.txt" "$dest"
echo "fetch_eval_text: stored $dest ($(wc -c < "$dest") bytes, $(wc -w < "$dest") words)"
