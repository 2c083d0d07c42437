#!/bin/bash
# The AMG coarse solve on one GPU: its GPU tests, then benchmarks/bench_coarse.py (pcg, amg x1,
# amg x2 and, where it fits, cholesky; float64 and float32 preconditioners) at 13^3 and 36^3
# elements, N = 7, to 1e-8. About 3 minutes on an H100 (the 36^3 set-ups are most of it).
# Usage (device machine, repository root; pyamg carried as a wheel in .whl/ if it is missing):
#   OUT=dir bash benchmarks/run_coarse_gpu.sh
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-out}; mkdir -p "$OUT"
if ! python3 -c "import pyamg" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/pyamg .whl/pyamg-*.whl || exit 1
  export PYTHONPATH=/tmp/pyamg:${PYTHONPATH:-}
fi
export PYTHONPATH=src:${PYTHONPATH:-}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
python3 -c "import scipy, cupy, pyamg; print('scipy', scipy.__version__, 'cupy', cupy.__version__, 'pyamg', pyamg.__version__)" \
  | tee -a "$OUT/device.txt"
timeout 90 python3 -m pytest -q -rs -s -p no:cacheprovider tests/unit/test_solvers_amg_gpu.py 2>&1 | tail -12 \
  | tee "$OUT/amg_gpu_tests.log"
timeout 400 python3 benchmarks/bench_coarse.py --backend cuda --elements 13 36 --order 7 --repeats 2 \
  --json "$OUT/coarse.json" 2>&1 | tee "$OUT/bench_coarse.log"
