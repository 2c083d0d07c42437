#!/bin/bash
# Every GPU test on one GPU: tests/gpu and the CUDA tests that live beside their CPU tests.
# Usage (device machine, repository root): OUT=dir bash benchmarks/run_gpu_tests.sh
export PYTHONPATH=src
OUT=${OUT:-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
python3 -m pytest -q -rs tests/gpu tests/unit/*_gpu.py \
  > "$OUT/gpu_tests.log" 2>&1
grep -E "passed|failed|SKIPPED|FAILED|Error" "$OUT/gpu_tests.log" | tail -20
