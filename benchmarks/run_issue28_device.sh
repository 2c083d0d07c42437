#!/bin/bash
# Issue 28 on one GPU host: every GPU test, then the reproducible sums' cost side by side
# (benchmarks/ns_reproducible_cost.py) on the GPU and on the host's CPU cores.
# Usage (device machine, repository root): OUT=dir bash benchmarks/run_issue28_device.sh [tests|cost|all]
export PYTHONPATH=src PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
OUT=${OUT:-out}; mkdir -p "$OUT"; what=${1:-all}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
nproc | tee -a "$OUT/device.txt"; git rev-parse --short HEAD 2>/dev/null | tee -a "$OUT/device.txt"
if [ "$what" != cost ]; then
  timeout 330 python3 -m pytest -q -rs -p no:cacheprovider tests/gpu tests/unit/*_gpu.py > "$OUT/gpu_tests.log" 2>&1
  grep -E "passed|failed|FAILED|Error" "$OUT/gpu_tests.log" | tail -15
fi
if [ "$what" != tests ]; then
  python3 benchmarks/ns_reproducible_cost.py --backend cuda --elements 16 --order 7 --steps 20 --warmup 5 \
    --repeats 4 --json "$OUT/gpu_16.json" 2>&1 | tail -6
  MPI="mpiexec"; mpiexec --version 2>&1 | grep -qi "open mpi\|open-mpi\|openrte" && MPI="mpiexec --allow-run-as-root --oversubscribe"
  for p in 16 4; do
    OMP_NUM_THREADS=1 timeout 200 $MPI -n $p python3 benchmarks/ns_reproducible_cost.py --backend cpu --elements 8 \
      --order 7 --steps 10 --warmup 3 --repeats 4 --json "$OUT/cpu${p}_8.json" 2>&1 | tail -6
  done
fi
