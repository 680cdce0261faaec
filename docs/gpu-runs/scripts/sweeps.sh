# Issue 20's probes on this machine's GPU (CUDA_ARCH, as the kit's builds take it: default 90, or a list "80;90"): the GEMM designs against cuBLAS at 4096, the
# single-pass scans against CUB at 2^28, vector add against the copy at 2^26 and 2^28, N-body's tiled kernel
# against the SMs' issue rate at the clock they keep, PCIe both ways at once against one way (lab 08's floor).
# Each is built with the harness's error checks into BIN (default /tmp/kit-probes), then run, writing
# $OUT/<probe>.txt. And issue 23's host probe (host_probe.cu): a program's start, IPC mappings and allocations on one
# GPU, quiet and while six shells start programs on another GPU (on the same one where the host has one GPU). And
# issue 19's set-up probe (setup_probe.cu): the pieces of labs 08's and 12's timing set-ups, a gigabyte at a time.
# BUILD_ONLY=1 builds them and stops (the CPU test that keeps them buildable). PROBES picks some:
#   bash docs/gpu-runs/scripts/sweeps.sh
#   PROBES="gemm_sweep pcie_probe" bash docs/gpu-runs/scripts/sweeps.sh
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../../..
BIN=${BIN:-/tmp/kit-probes}
mkdir -p "$BIN"
IFS=';' read -ra archs <<< "${CUDA_ARCH:-90}"
targets=()
for arch in "${archs[@]}"; do targets+=("--generate-code=arch=compute_$arch,code=sm_$arch"); done
# The GEMM sweep times lab 04's reference kernel too, compiled from its solution; GEMM_LINKED (a path from the
# repository's root) links another file of the lab in its place, such as a journey step, to time that step's own
# kernel the probe's way beside the grader's figure for it.
gemm_linked=${GEMM_LINKED:-solutions/04-tiled-matmul/tiled_matmul.cu}
gemm_sweep_extra=(-I"$root/labs/04-tiled-matmul" "$root/$gemm_linked" -DGEMM_LINKED="\"$gemm_linked\"")
probes=${PROBES:-gemm_sweep scan_sweep vector_add_probe nbody_probe pcie_probe host_probe setup_probe}
wanted() { [[ " $probes " == *" $1 "* ]]; }
build() {
  local extra=()
  [ "$1" = gemm_sweep ] && extra=("${gemm_sweep_extra[@]}")
  [ "$1" = setup_probe ] && extra=(-lcufft)
  nvcc -O3 -std=c++17 "${targets[@]}" -I"$root/harness/include" -o "$BIN/$1" "$here/$1.cu" "${extra[@]}" \
    "$root/harness/src/cuda_check.cpp" "$root/harness/src/cublas.cu" -lcublas
}
# One build a core at once (CI has two); a probe that does not build leaves a note, and stops the script.
rm -f "$BIN"/.unbuilt-*
for probe in $probes; do
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n; done
  { build "$probe" || touch "$BIN/.unbuilt-$probe"; } &
done
wait
if compgen -G "$BIN/.unbuilt-*" > /dev/null; then
  echo "these probes did not build: $(cd "$BIN" && ls .unbuilt-* | sed 's/^.unbuilt-//' | tr '\n' ' ')"; exit 1
fi
[ "${BUILD_ONLY:-0}" = 1 ] && exit 0

source "$here/common.sh"
wanted gemm_sweep && "$BIN/gemm_sweep" 4096 | tee "$OUT/gemm_sweep.txt"
wanted scan_sweep && "$BIN/scan_sweep" 28 | tee "$OUT/scan_sweep.txt"
wanted vector_add_probe && { "$BIN/vector_add_probe" 26; "$BIN/vector_add_probe" 28; } | tee "$OUT/vector_add_probe.txt"
# Lab 09's 2^18 bodies, then 270,336 = 132 SMs x 8 blocks x 256 (whole waves on an H100): 2^18 leaves 32 of
# the SMs a block short, and the gap between the two says what that costs.
wanted nbody_probe && { "$BIN/nbody_probe" 262144; "$BIN/nbody_probe" 270336; } | tee "$OUT/nbody_probe.txt"
wanted pcie_probe && "$BIN/pcie_probe" 1024 | tee "$OUT/pcie_probe.txt"
gpus=$(nvidia-smi -L | wc -l)
wanted host_probe && "$BIN/host_probe" $(( gpus > 1 ? 1 : 0 )) 0 6 | tee "$OUT/host_probe.txt"
wanted setup_probe && "$BIN/setup_probe" | tee "$OUT/setup_probe.txt"
echo "done at $(elapsed)s"
