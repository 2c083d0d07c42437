#!/bin/bash
# Elliptic figures on one GPU: the solver GPU tests, the iteration growth of MG-FCG over
# 9^3 -> 18^3 -> 36^3 elements at N = 7, and the 36^3 solve with a looser coarse solve.
# Usage (device machine, repository root): OUT=dir bash benchmarks/run_elliptic_gpu.sh
set -u
export PYTHONPATH=src
OUT=${OUT:-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
git rev-parse HEAD 2>/dev/null | tee -a "$OUT/device.txt"
python3 -m pytest -q -rs tests/unit/test_solvers_gpu.py > "$OUT/solvers_gpu_tests.log" 2>&1; tail -3 "$OUT/solvers_gpu_tests.log"
for e in 9 18; do
  python3 -m lobatto bench poisson --backend cuda --order 7 --elements $e $e $e --repeats 3 \
    --json "$OUT/poisson_cuda_$e.json" > "$OUT/poisson_$e.log" 2>&1; tail -4 "$OUT/poisson_$e.log"
done
python3 -m lobatto bench poisson --backend cuda --order 7 --elements 36 36 36 --repeats 3 --coarse-tolerance 0.1 \
  --json "$OUT/poisson_cuda_36_coarse01.json" > "$OUT/poisson_36_coarse01.log" 2>&1
cat "$OUT/poisson_36_coarse01.log"
for e in 9 18; do grep -E "iterations|solve \(|coarse it" "$OUT/poisson_$e.log" | sed "s/^/E=$e^3 /"; done
