# The journeys of LABS (default: every lab whose solutions/<lab>/hidden.toml has a [journey]), each step timed
# beside its peer in one run, on a build of every lab for this GPU (CUDA_ARCH, default 90). Writes
# $OUT/<lab>-journey.json and $OUT/<lab>-journey.log.
#   LABS="06-scan 01-vector-add" bash docs/gpu-runs/scripts/journeys.sh
source "$(dirname "$0")/common.sh"
labs=${LABS:-$(grep -l '^\[journey\]' solutions/*/hidden.toml | xargs -n1 dirname | xargs -n1 basename)}
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCUDA_ARCH="${CUDA_ARCH:-90}" > "$OUT/build.log" 2>&1 \
    && cmake --build build --parallel "$(nproc)" >> "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  echo "built at $(elapsed)s"
fi
for lab in $labs; do
  python3 -m grader journey --lab "$lab" --build-dir build > "$OUT/$lab-journey.log" 2>&1
  echo "$lab journey rc=$? at $(elapsed)s"; tail -12 "$OUT/$lab-journey.log"
  cp "build/$lab/journey.json" "$OUT/$lab-journey.json" 2>/dev/null
done
