# Sourced first by each script here: the tools grading needs, and a record of the machine in $OUT/gpu.txt.
# A GPU machine without bubblewrap and doctest installed (and no package registry) gets them from Debian
# packages carried along in $DEBS (default .exp/debs: `apt-get download bubblewrap doctest-dev` there).
# The device tool sends the working tree, but its checkout may keep an older HEAD: pass the commit the run is of
# as COMMIT (`run` with command "COMMIT=<hash> bash ..."), or gpu.txt names that older one.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD
OUT=${OUT:-gpu-run-out}; mkdir -p "$OUT"; export OUT
T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 )); }
if ! command -v bwrap >/dev/null || [ ! -f /usr/include/doctest/doctest.h ]; then
  mkdir -p /tmp/deb && for f in "${DEBS:-.exp/debs}"/*.deb; do [ -f "$f" ] && dpkg -x "$f" /tmp/deb; done
  export PATH=/tmp/deb/usr/bin:$PATH CMAKE_PREFIX_PATH=/tmp/deb/usr
fi
# Said where it shows, not only in gpu.txt: on 2026-11-29 a checkout without .exp/debs ran four calls unsandboxed,
# and the class bench in the last refused to grade at all.
command -v bwrap >/dev/null || echo "WARNING: no bubblewrap here and none in ${DEBS:-.exp/debs}: the class bench will" \
  "refuse to grade, self-checks and tests grade without the OS sandbox (apt-get download bubblewrap doctest-dev there)"
nvidia-smi --query-gpu=index,name,driver_version,persistence_mode,memory.total --format=csv,noheader | tee -a "$OUT/gpu.txt"
echo "cores $(nproc); $(bwrap --version 2>&1); Linux $(uname -r); commit ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}; $(date -u)" \
  | tee -a "$OUT/gpu.txt"
