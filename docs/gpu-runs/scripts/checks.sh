# Every lab built for this GPU (CUDA_ARCH, default 90), every ctest but the self-checks (CTEST_S seconds at
# most), then the attack test that runs student code in the judge's own process (ATTACK_S at most).
#   bash docs/gpu-runs/scripts/checks.sh
source "$(dirname "$0")/common.sh"
cmake -S . -B build -G Ninja -DCUDA_ARCH="${CUDA_ARCH:-90}" > "$OUT/build.log" 2>&1 \
  && cmake --build build --parallel "$(nproc)" >> "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "built at $(elapsed)s"
(cd build && timeout -k 10 "${CTEST_S:-330}" ctest -LE selfcheck --parallel 4 --output-on-failure > "$OUT/ctest.log" 2>&1)
echo "ctest rc=$? at $(elapsed)s"
grep -E "tests passed|tests failed|Total Test time|\*\*\*|Failed|Not Run" "$OUT/ctest.log" | tail -25
timeout -k 10 "${ATTACK_S:-170}" python3 -m pytest -q -p no:cacheprovider grader/tests/test_attacks.py -k in_process \
  > "$OUT/attack.log" 2>&1
echo "attack rc=$? at $(elapsed)s"; tail -5 "$OUT/attack.log"
