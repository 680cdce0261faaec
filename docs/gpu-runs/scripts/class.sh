# Each lab's class of 200 graded by the class bench on this machine's GPU, one lab after another, each stopped
# (SIGTERM: it reports what it graded) at its budget, capped so that the whole script ends within DEADLINE s.
# A stopped run of 20 students or more is held to issue 19's target at its pace.
#   PLAN="02-picture-kernel:210 07-transpose:115" DEADLINE=560 bash docs/gpu-runs/scripts/class.sh
# An item lab:budget:k grades that lab with k correctness programs at once (--gpu-jobs k) instead of the default.
# Writes $OUT/results.tgz: r/<lab>.json (the bench's report) and r/<lab>.log.
source "$(dirname "$0")/common.sh"
mkdir -p "$OUT/r"
for item in $PLAN; do
  IFS=: read -r lab budget gpu_jobs <<< "$item"
  left=$(( ${DEADLINE:-560} - $(elapsed) - 35 ))  # the stop lets the programs in flight finish: about 30 s
  [ "$budget" -gt "$left" ] && budget=$left
  [ "$budget" -lt 40 ] && { echo "$lab: no time left"; continue; }
  echo "== $lab budget ${budget}s at $(elapsed)s"
  timeout -s TERM -k 30 "$budget" python3 -m grader.bench.class_bench --lab "$lab" --n 200 --out "/tmp/bench/$lab" \
    ${gpu_jobs:+--gpu-jobs "$gpu_jobs"} \
    > "$OUT/r/$lab.log" 2>&1; echo "rc=$?"
  cp "/tmp/bench/$lab/bench.json" "$OUT/r/$lab.json" 2>/dev/null || echo "$lab: no bench.json"
  grep -E "s a student|students graded" "$OUT/r/$lab.log" | tail -1
done
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
echo "done at $(elapsed)s"
