# Issue 23: a lab's class graded by the class bench on one GPU of this host (CUDA_VISIBLE_DEVICES=0), then on every
# GPU (a lane each), in one session, so that the two times compare. Each run is stopped (SIGTERM: the bench reports
# what it graded) at BUDGET seconds. EXTRA adds class_bench options (--judge-per-program, say) to every run.
#   LAB=01-vector-add N=200 WHICH="one all" BUDGET=290 bash docs/gpu-runs/scripts/lanes.sh
# Writes $OUT/r/<which>.json (the bench's report) and $OUT/r/<which>.log, tarred into $OUT/lanes.tgz.
source "$(dirname "$0")/common.sh"
mkdir -p "$OUT/r"
for which in ${WHICH:-one all}; do
  case $which in
    one*) visible=0 ;;
    all*) visible=$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd,) ;;
    *) echo "WHICH names one or all runs (one, all, one-per-program...), not $which"; exit 2 ;;
  esac
  echo "== $which: CUDA_VISIBLE_DEVICES=$visible at $(elapsed)s"
  # shellcheck disable=SC2086 # EXTRA is a list of options
  CUDA_VISIBLE_DEVICES=$visible timeout -s TERM -k 30 "${BUDGET:-290}" python3 -m grader.bench.class_bench \
    --lab "${LAB:-01-vector-add}" --n "${N:-200}" --out "/tmp/bench/$which" ${EXTRA:-} > "$OUT/r/$which.log" 2>&1
  echo "rc=$?"
  cp "/tmp/bench/$which/bench.json" "$OUT/r/$which.json" 2>/dev/null || echo "$which: no bench.json"
  grep -E "s a student|students graded|wall" "$OUT/r/$which.log" | tail -2
done
tar -C "$OUT" -czf "$OUT/lanes.tgz" r gpu.txt
echo "done at $(elapsed)s"
