#!/usr/bin/env bash
# Issue 30 on one GPU: the GPU tests of the new code and the old/new measurements side by side,
# in one device call. The old tree is .baseline/ (`git archive <old> src benchmarks examples |
# tar -x -C .baseline`), pyamg a wheel in .whl/, the TGV reference in .scratch/.
#   OUT=dir bash benchmarks/run_issue30_device.sh MODE...
# MODES: tests | throughput36 | coarse36 | tgv10 | tgv2 | float32
set -u
export PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=/tmp/lobatto_cupy_cache
OUT=${OUT:-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/pyamg .whl/pyamg-*.whl >/dev/null 2>&1
NEW=/tmp/pyamg:$PWD/src
OLD=$PWD/.baseline/src
REF=$PWD/.scratch/spectral_Re1600_512.gdiag
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
for mode in "$@"; do
  echo "=== $mode $(date -u +%T)"
  case $mode in
    tests)
      PYTHONPATH=$NEW timeout 420 python3 -m pytest -q -rs -p no:cacheprovider tests/unit/test_solvers_amg_gpu.py \
        tests/unit/test_fused_reductions_gpu.py tests/unit/test_ns_kernels_gpu.py tests/unit/test_navier_stokes_gpu.py \
        tests/unit/test_solvers_gpu.py tests/unit/test_ns_kernels.py 2>&1 | tail -15 | tee "$OUT/tests.log" ;;
    throughput36)  # today's settings: CFL 0.5, no sub-steps, old and new
      PYTHONPATH=$OLD timeout 240 python3 .baseline/benchmarks/bench_tgv.py --backend cuda --elements 36 --steps 20 \
        --warmup 10 --json "$OUT/tp36_old.json" 2>&1 | tee "$OUT/tp36_old.log" | head -12
      PYTHONPATH=$NEW timeout 240 python3 -m lobatto bench navier-stokes --backend cuda --elements 36 --cfl 0.5 \
        --steps 20 --warmup 10 --json "$OUT/tp36_new.json" 2>&1 | tee "$OUT/tp36_new.log" | tail -30 ;;
    coarse36)
      PYTHONPATH=$NEW timeout 300 python3 benchmarks/bench_coarse.py --backend cuda --elements 36 --order 7 --repeats 2 \
        --json "$OUT/coarse36.json" 2>&1 | tee "$OUT/coarse36.log" | tail -25 ;;
    tgv10)  # time to t = 10, 24^3 x N = 7, as a user runs it: old at target_cfl 0.5, new at ${TGV_NEW:-target_cfl=2,substeps=2}
      python3 benchmarks/tgv_time_to_solution.py --tree old=$OLD --tree new=$NEW --elements 24 --t-end ${T_END:-10} \
        --reference "$REF" ${TGV_OLD:+--variant old:$TGV_OLD} $(for v in ${TGV_NEW:-target_cfl=2,substeps=2}; do echo --variant new:$v; done) \
        --json "$OUT/tgv10.json" --keep "$OUT" 2>&1 | tee "$OUT/tgv10.log" ;;
  esac
done
