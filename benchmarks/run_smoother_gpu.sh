#!/bin/bash
# The Schwarz smoother on one GPU: its GPU tests, then benchmarks/bench_smoother.py (Chebyshev-
# Jacobi against Chebyshev-Schwarz at degrees 2 and 3, float64 and float32 preconditioners) on
# the Poisson case at 36^3 elements, N = 7, to 1e-8; the 24^3 x N = 7 TGV (10 steps after 5,
# CFL 0.5) with each pressure smoother; last, bench_smoother at 16^3 x N = 13 (float64).
# About 6 to 7 minutes on an H100 (estimated, not run: the 36^3 set-ups are most of it); each
# step has its own timeout (600 s in all at worst), and bench_smoother rewrites its JSON after
# each measurement, so a cut-off step keeps what it measured.
# Usage (device machine, repository root; pyamg carried as a wheel in .whl/ if it is missing):
#   OUT=dir bash benchmarks/run_smoother_gpu.sh
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-out}; mkdir -p "$OUT"
if ! python3 -c "import pyamg" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/pyamg .whl/pyamg-*.whl || exit 1
  export PYTHONPATH=/tmp/pyamg:${PYTHONPATH:-}
fi
export PYTHONPATH=$PWD/src:${PYTHONPATH:-}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
(git log --oneline -1 2>/dev/null || true) | tee -a "$OUT/device.txt"
timeout 90 python3 -m pytest -q -rs -s -p no:cacheprovider tests/unit/test_solvers_schwarz_gpu.py 2>&1 | tail -15 \
  | tee "$OUT/schwarz_gpu_tests.log"
for precision in float64 float32; do  # one process each: a cut-off one keeps the other's numbers
  timeout 150 python3 benchmarks/bench_smoother.py --backend cuda --elements 36 --order 7 --repeats 3 \
    --precisions $precision --json "$OUT/smoother_36_n7_$precision.json" 2>&1 | tee "$OUT/bench_smoother_36_n7_$precision.log"
done
for smoother in jacobi schwarz; do
  timeout 70 python3 -m lobatto bench navier-stokes --backend cuda --elements 24 --order 7 --steps 10 --warmup 5 \
    --pressure-smoother "$smoother" --json "$OUT/tgv24_$smoother.json" 2>&1 | tee "$OUT/tgv24_$smoother.log"
done
timeout 90 python3 benchmarks/bench_smoother.py --backend cuda --elements 16 --order 13 --repeats 3 \
  --precisions float64 --json "$OUT/smoother_16_n13.json" 2>&1 | tee "$OUT/bench_smoother_16_n13.log"
