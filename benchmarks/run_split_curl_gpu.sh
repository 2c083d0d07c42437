#!/bin/bash
# The split-form curl on one GPU: the kernel tests against the reference (curved and mixed
# meshes, N = 1..15), the energy tests, the energy growth benchmark and the cost benchmark.
# Usage (device machine, repository root): OUT=dir bash benchmarks/run_split_curl_gpu.sh
export PYTHONPATH=src
OUT=${OUT:-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
timeout 280 python3 -m pytest -q -rs -x tests/unit/test_maxwell_energy_curved_gpu.py tests/gpu/test_cuda_backend.py \
  > "$OUT/tests.log" 2>&1
tail -3 "$OUT/tests.log"
[ -n "$SKIP_GROWTH" ] || timeout 60 python3 benchmarks/curved_energy_growth.py --backend cuda --json "$OUT/curved_energy_growth_cuda.json" \
  > "$OUT/growth.log" 2>&1
tail -10 "$OUT/growth.log"
timeout 220 python3 benchmarks/bench_split_curl.py --json "$OUT/split_curl_float64.json" > "$OUT/bench.log" 2>&1
tail -12 "$OUT/bench.log"
