#!/bin/bash
# Navier-Stokes on one GPU: CUDA = CPU tests, then TGV throughput at 16^3 and 36^3 elements, N = 7.
# Usage (device machine, repository root): OUT=dir bash benchmarks/run_ns_gpu.sh [sizes...]
set -u
export PYTHONPATH=src
OUT=${OUT:-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
python3 -m pytest -q -rs tests/unit/test_navier_stokes_gpu.py tests/gpu/test_advection_gpu.py > "$OUT/ns_gpu_tests.log" 2>&1
tail -3 "$OUT/ns_gpu_tests.log"
for e in ${@:-16 36}; do
  python3 benchmarks/bench_tgv.py --backend cuda --elements $e --order 7 --steps 20 --warmup 10 \
    --json "$OUT/tgv_bench_$e.json" > "$OUT/tgv_bench_$e.log" 2>&1
  cat "$OUT/tgv_bench_$e.log" | tail -12
done
