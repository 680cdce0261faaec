#!/usr/bin/env bash
# Build every lecture deck (slides/NN-*.md) with Marp into OUTDIR: one HTML file per deck,
# plus a PDF per deck when Chromium is installed (or SLIDES_PDF=0 to skip it), and the
# img/ and charts/ folders the decks link to, so OUTDIR can be copied or served as it is.
# Usage: slides/build.sh OUTDIR [deck.md ...]     (default: every deck)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: slides/build.sh OUTDIR [deck.md ...]}
shift
decks=("$@")
[ ${#decks[@]} -gt 0 ] || decks=("$here"/[0-9][0-9]-*.md)

marp=$here/node_modules/.bin/marp
if [ ! -x "$marp" ]; then
  echo "slides: Marp is not installed; run 'npm ci --prefix slides' once (needs Node 18 or later)" >&2
  exit 1
fi

# PDF export drives a headless Chromium; HTML needs none. Debian's package is /usr/bin/chromium.
chrome=${CHROME_PATH:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
pdf=${SLIDES_PDF:-$([ -n "$chrome" ] && echo 1 || echo 0)}

mkdir -p "$out"
cp -R "$here/img" "$here/charts" "$out/"
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
common=(--no-stdin --no-config-file --theme-set "$here/theme/kit.css")

# Run one Marp per deck (Marp writes one output file per process), all at once; print a
# deck's log only when it fails.
convert() {  # convert <extension> [marp options]: every deck to OUTDIR/<deck>.<extension>
  local ext=$1; shift
  local pids=() status=0 i name
  for deck in "${decks[@]}"; do
    name=$(basename "$deck" .md)
    "$marp" "${common[@]}" "$@" -o "$out/$name.$ext" "$deck" >"$logs/$name.$ext.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    name=$(basename "${decks[$i]}" .md)
    if ! wait "${pids[$i]}" || grep -q "ERROR" "$logs/$name.$ext.log"; then
      echo "slides: ${decks[$i]} failed to build ($ext):" >&2
      cat "$logs/$name.$ext.log" >&2
      status=1
    fi
  done
  return $status
}

convert html
if [ "$pdf" = 1 ]; then
  # Each PDF is printed by a headless Chromium; local images need --allow-local-files.
  CHROME_PATH=$chrome convert pdf --pdf --allow-local-files
  echo "slides: ${#decks[@]} decks in $out/ (HTML and PDF)"
else
  echo "slides: ${#decks[@]} decks in $out/ (HTML; PDF needs Chromium: apt-get install chromium)"
fi
