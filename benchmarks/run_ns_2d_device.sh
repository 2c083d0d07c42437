#!/bin/bash
# The Navier–Stokes CUDA kernels on 2-D meshes on one GPU, in one device call (about 7 minutes):
# the 2-D GPU tests (kernels against the extruded reference, operators against the 2-D NumPy
# reference, a 2-D run against the CPU), the 3-D kernel and Navier–Stokes GPU tests (the 3-D
# kernels must be unchanged), bench_ns_kernels.py in 3-D (24^3 elements, N = 7: 7.1 M points)
# and in 2-D at about the same points (333^2 quads), and navier_stokes_2d_device.py (whole
# steps, 2-D against the extruded run). Each step has its own time limit.
# Usage (device machine, repository root): OUT=dir bash benchmarks/run_ns_2d_device.sh
export PYTHONPATH=src PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=/tmp/cupy_cache
OUT=${OUT:-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
timeout 150 python3 -m pytest -q -rs tests/gpu/test_navier_stokes_2d_gpu.py > "$OUT/ns2d_tests.log" 2>&1
echo "2-D tests rc=$?"; grep -E "passed|failed|FAILED|SKIPPED|Error" "$OUT/ns2d_tests.log" | head -20
timeout 120 python3 -m pytest -q -rs -n 4 tests/unit/test_ns_kernels_gpu.py tests/gpu/test_advection_gpu.py \
  tests/unit/test_navier_stokes_gpu.py > "$OUT/ns3d_tests.log" 2>&1
echo "3-D tests rc=$?"; grep -E "passed|failed|FAILED|Error" "$OUT/ns3d_tests.log" | head -20
timeout 60 python3 benchmarks/bench_ns_kernels.py --elements 24 --kernels advection_contravariant advection_apply \
  curl weighted_curl weak_divergence_minus_curl mass_minus_gradient --json "$OUT/bench3d.json" > "$OUT/bench3d.log" 2>&1
echo "bench 3-D rc=$?"; tail -8 "$OUT/bench3d.log"
timeout 60 python3 benchmarks/bench_ns_kernels.py --dim 2 --elements 333 --kernels advection_contravariant \
  advection_apply curl weighted_curl weak_divergence_minus_curl mass_minus_gradient --json "$OUT/bench2d.json" \
  > "$OUT/bench2d.log" 2>&1
echo "bench 2-D rc=$?"; tail -8 "$OUT/bench2d.log"
if [ "$SECONDS" -lt 380 ]; then
  timeout $((560 - SECONDS)) python3 benchmarks/navier_stokes_2d_device.py --json "$OUT/steps.json" \
    > "$OUT/steps.log" 2>&1
  echo "steps rc=$?"; tail -8 "$OUT/steps.log"
fi
echo "total ${SECONDS}s"
