# Issue 23: a lab's class graded by the class bench on one GPU of this host (CUDA_VISIBLE_DEVICES=0), then on every
# GPU (one grading for all), in one session, so that the two times compare. Each run is stopped (SIGTERM: the bench
# reports what it graded) at BUDGET seconds. EXTRA adds class_bench options (--judge-per-program, say) to every run.
#   LAB=01-vector-add N=200 WHICH="one all" BUDGET=290 bash docs/gpu-runs/scripts/gpus.sh
# Writes $OUT/r/<which>.json (the bench's report), $OUT/r/<which>.log and $OUT/r/<which>-students.tsv (each
# student's span, the GPU they were scored on and the GPUs their programs ran on), tarred into $OUT/gpus.tgz.
source "$(dirname "$0")/common.sh"
mkdir -p "$OUT/r"
# A fresh machine is slower at first (files read for the first time, memory the host grows as it is used): a
# class of WARM students first, on every GPU, so that neither timed run pays for it (0: none).
if [ "${WARM:-10}" -gt 0 ]; then
  echo "== warm-up: ${WARM:-10} students at $(elapsed)s"
  python3 -m grader.bench.class_bench --lab "${LAB:-01-vector-add}" --n "${WARM:-10}" --out /tmp/bench/warm \
    > "$OUT/r/warm.log" 2>&1 || echo "warm-up rc=$?"
fi
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
  # Each student's GPUs and when their first program began and their last ended (s from the first of all):
  # where the GPUs' time went, beside the bench's sums.
  python3 - "/tmp/bench/$which" > "$OUT/r/$which-students.tsv" <<'PY' || true
import json, sys
from pathlib import Path
rows = []
for path in sorted(Path(sys.argv[1]).glob("*/student-*/results.json")):
    extra = json.loads(path.read_text()).get("extra_data", {})
    programs = extra.get("programs", [])
    if programs:
        ran_on = ",".join(sorted({p.get("gpu", "?")[:12] for p in programs}))
        rows.append((path.parent.name, extra.get("scored_on_gpu", {}).get("key", "?")[:12], ran_on,
                     min(p["at"][0] for p in programs), max(p["at"][1] for p in programs), len(programs)))
start = min((r[3] for r in rows), default=0)
print("student\tscored_on\tran_on\tfirst_s\tlast_s\tprograms")
for name, gpu, ran_on, first, last, count in sorted(rows, key=lambda r: r[3]):
    print(f"{name}\t{gpu}\t{ran_on}\t{first - start:.1f}\t{last - start:.1f}\t{count}")
PY
  grep -E "s a student|students graded|wall" "$OUT/r/$which.log" | tail -2
done
tar -C "$OUT" -czf "$OUT/gpus.tgz" r gpu.txt
echo "done at $(elapsed)s"
