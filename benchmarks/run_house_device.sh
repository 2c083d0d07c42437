#!/bin/bash
# The house issue's speed check on a GPU machine: old and new trees side by side in one call.
# Usage (from the repository root, the old tree unpacked by
#   mkdir -p .baseline && git archive f38c108 src | tar -x -C .baseline):
#   OUT=out bash benchmarks/run_house_device.sh [steps|kernels|ns|tests]
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
case "${1:-steps}" in
  steps)  # whole `lobatto run` processes: seconds per step and process wall time
    python3 benchmarks/house_step_times.py --old .baseline/src --new src --backend cuda --rounds 3 \
      --json "$OUT/house_step_times_cuda.json" 2>&1 | tee "$OUT/house_step_times.txt" ;;
  kernels)  # `lobatto bench maxwell`: point-stage updates per second of the fused step
    python3 benchmarks/compare_trees.py --old .baseline/src --new src --rounds 3 \
      --configs cuda-N7-curved cuda-N14-curved --json "$OUT/compare_trees_cuda.json" 2>&1 | tee "$OUT/compare_trees.txt" ;;
  ns)  # the Navier-Stokes case alone, longer runs and more rounds (its step time varies more)
    python3 benchmarks/house_step_times.py --old .baseline/src --new src --backend cuda --rounds 5 --steps 150 \
      --cases navier_stokes-TGV-N7-24^3 --json "$OUT/house_step_times_ns.json" 2>&1 | tee "$OUT/house_step_times_ns.txt" ;;
  tests)
    PYTHONPATH=src python3 -m pytest -q -p no:cacheprovider tests/gpu tests/unit/*_gpu.py 2>&1 | tail -40 | tee "$OUT/gpu_tests.txt" ;;
esac
