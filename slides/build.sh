#!/usr/bin/env bash
# Build every lecture deck (slides/NN-*.md) with Marp into OUTDIR: one HTML file per deck,
# plus a PDF per deck when Chromium is installed (SLIDES_PDF=0 skips it, SLIDES_PDF=1 insists),
# and the img/ and charts/ folders the decks link to, so OUTDIR can be copied or served as it is.
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
out=$(cd "$out" && pwd)
rm -rf "$out/img" "$out/charts"
cp -R "$here/img" "$here/charts" "$out/"
rm -f "$out/img/draw.py" "$out/charts/make_charts.py" "$out/charts/sources.json"

# One Marp process converts a whole folder (starting one per deck costs a second each), so the
# decks are copied into a folder of their own, next to links to the images they use. The copies
# leave out the marks of measured figures (<!-- measured: ... -->, grader/figures.py): Marp would
# show them as presenter notes.
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for deck in "${decks[@]}"; do
  perl -pe 's/<!--\s*(?:un)?measured\b.*?-->//g' "$deck" >"$stage/$(basename "$deck")"
done
ln -s "$here/img" "$stage/img"
ln -s "$here/charts" "$stage/charts"

run_marp() {  # run_marp <log> [marp options]: every staged deck into OUTDIR; the log only on failure
  local log=$1; shift
  if ! "$marp" --no-stdin --no-config-file --theme-set "$here/theme/kit.css" \
       --input-dir "$stage" --output "$out" "$@" >"$log" 2>&1 || grep -q "ERROR" "$log"; then
    cat "$log" >&2
    return 1
  fi
}

run_marp "$stage/html.log" || { echo "slides: a deck failed to build (HTML)" >&2; exit 1; }
if [ "$pdf" = 1 ]; then
  [ -n "$chrome" ] || { echo "slides: SLIDES_PDF=1 but no Chromium found (set CHROME_PATH)" >&2; exit 1; }
  # Local images in a PDF need --allow-local-files (Chromium reads them from disk).
  CHROME_PATH=$chrome run_marp "$stage/pdf.log" --pdf --allow-local-files \
    || { echo "slides: a deck failed to export to PDF" >&2; exit 1; }
  echo "slides: ${#decks[@]} decks in $out/ (HTML and PDF)"
else
  echo "slides: ${#decks[@]} decks in $out/ (HTML; for PDF too, install Chromium: apt-get install chromium)"
fi
