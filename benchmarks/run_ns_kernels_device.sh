#!/bin/bash
# The fused Navier–Stokes kernels on one GPU, in one device call: their GPU tests against the
# NumPy oracle, the Navier–Stokes and solver GPU-equals-CPU tests, and bench_ns_kernels.py (old
# against new, against the copy bandwidth). Each step has its own time limit (about 230 s in all).
# Usage (device machine, repository root): OUT=dir bash benchmarks/run_ns_kernels_device.sh
export PYTHONPATH=src PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=/tmp/cupy_cache
OUT=${OUT:-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
timeout 70 python3 -m pytest -q -rs -n 8 tests/unit/test_ns_kernels_gpu.py > "$OUT/kernel_tests.log" 2>&1
echo "kernel tests rc=$?"; grep -E "passed|failed|FAILED|Error|error" "$OUT/kernel_tests.log" | head -30
timeout 90 python3 benchmarks/bench_ns_kernels.py --elements 24 36 --precision float64 float32 \
  --json "$OUT/bench.json" > "$OUT/bench.log" 2>&1
echo "bench rc=$?"; tail -45 "$OUT/bench.log"
if [ "$SECONDS" -lt 175 ]; then
  timeout $((228 - SECONDS)) python3 -m pytest -q -x -n 4 tests/unit/test_navier_stokes_gpu.py \
    tests/unit/test_solvers_gpu.py > "$OUT/ns_tests.log" 2>&1
  echo "ns/solver tests rc=$?"; tail -5 "$OUT/ns_tests.log"
fi
if [ "$SECONDS" -lt 200 ]; then
  timeout $((230 - SECONDS)) python3 benchmarks/bench_ns_kernels.py --elements 36 --sweep \
    --kernels advection_contravariant advection_apply curl weak_divergence_minus_curl \
    --json "$OUT/sweep.json" > "$OUT/sweep.log" 2>&1
  echo "sweep rc=$?"; grep sweep "$OUT/sweep.log"
fi
echo "total ${SECONDS}s"
