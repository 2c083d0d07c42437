#!/bin/bash
# Maxwell sources on the fused whole-step CUDA path (source_term.py) on one GPU: the GPU tests
# of the sources and of the other time-dependent term (TF/SF, now replayed as a CUDA graph with
# a device clock), the ranks test (1-3 ranks sharing the GPU), then
# benchmarks/bench_maxwell_physics.py at 28^3 elements, N = 7 (plain, PML, TF/SF, Drude, the
# dielectric ball, a dipole alone and PML + TF/SF + dipole, the case: target >= 0.8 of
# the plain step). Two parts, each within one 10-minute device call: "tests" (about 5 minutes
# on an H100, the tests' CPU reference runs most of it) and "bench" (about 3 minutes).
# Usage (device machine, repository root):
#   OUT=dir bash benchmarks/run_sources_gpu.sh bench      # or: tests, all (the default)
set -u
PART=${1:-all}
export PYTHONUNBUFFERED=1
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONPATH=src:${PYTHONPATH:-}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
if [ "$PART" != bench ]; then
timeout 240 python3 -m pytest -q -rs -p no:cacheprovider tests/unit/test_maxwell_sources_gpu.py \
  tests/unit/test_maxwell_physics_gpu.py tests/unit/test_maxwell_terms_gpu.py tests/unit/test_maxwell_tfsf_discrete_gpu.py \
  2>&1 | tail -15 | tee "$OUT/gpu_tests.log"
timeout 200 python3 -m pytest -q -rs -p no:cacheprovider tests/gpu/test_maxwell_terms_ranks_gpu.py 2>&1 | tail -12 \
  | tee "$OUT/ranks_gpu_tests.log"
fi
if [ "$PART" != tests ]; then
timeout 300 python3 benchmarks/bench_maxwell_physics.py --backend cuda --elements 28 --order 7 \
  --json "$OUT/maxwell_physics.json" 2>&1 | tee "$OUT/bench_maxwell_physics.log"
fi
