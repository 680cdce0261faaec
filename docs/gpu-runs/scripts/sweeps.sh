# Issue 20's sweeps on this machine's GPU (CUDA_ARCH, default 90): the GEMM designs against cuBLAS at 4096,
# the single-pass scans against CUB at 2^28, vector add against the copy at 2^26 and 2^28, N-body's tiled
# kernel against the SMs' issue rate at the clock they keep, PCIe both ways at once against one way (lab 08's
# floor). Writes $OUT/<probe>.txt for each.
#   bash docs/gpu-runs/scripts/sweeps.sh
source "$(dirname "$0")/common.sh"
here=$(dirname "$0")
arch=sm_${CUDA_ARCH:-90}
nvcc -O3 -std=c++17 -arch=$arch -o /tmp/gemm_sweep "$here/gemm_sweep.cu" -lcublas && /tmp/gemm_sweep 4096 | tee "$OUT/gemm_sweep.txt"
nvcc -O3 -std=c++17 -arch=$arch -o /tmp/scan_sweep "$here/scan_sweep.cu" && /tmp/scan_sweep 28 | tee "$OUT/scan_sweep.txt"
nvcc -O3 -std=c++17 -arch=$arch -o /tmp/vector_add_probe "$here/vector_add_probe.cu" \
  && { /tmp/vector_add_probe 26; /tmp/vector_add_probe 28; } | tee "$OUT/vector_add_probe.txt"
nvcc -O3 -std=c++17 -arch=$arch -o /tmp/nbody_probe "$here/nbody_probe.cu" && /tmp/nbody_probe 262144 | tee "$OUT/nbody_probe.txt"
nvcc -O3 -std=c++17 -arch=$arch -o /tmp/pcie_probe "$here/pcie_probe.cu" && /tmp/pcie_probe 1024 | tee "$OUT/pcie_probe.txt"
echo "done at $(elapsed)s"
