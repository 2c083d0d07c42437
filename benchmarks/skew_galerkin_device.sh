#!/bin/sh
# The Galerkin form's skew-symmetric volume term at Q = N + 1 on the GPU (notes-curved-maxwell.md
# section 11), in one call: the CUDA tests against the CPU; the speed of the new kernel and of the
# previous one (the strong form at Q = max(ceil(3N/2), N + 1), from the tree in $BASELINE, e.g.
# `git archive 5983b3b | tar -x -C .baseline`) on the same card, one after the other; the split
# form at N + 1 beside the Galerkin form at N; NekCEM's cylwave at N = 11 (REA: NekCEM's
# tests/cylwave/cylwave.rea, not in this repository; skipped without it). Output under $OUT.
#
#     OUT=$OUT REA=path/to/cylwave.rea BASELINE=.baseline sh benchmarks/skew_galerkin_device.sh
set -e
cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="${OUT:-.}"
mkdir -p "$OUT"
export PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}"
LOBATTO_NO_CKERNELS=1 python -m pytest tests/unit/test_maxwell_galerkin_cuda.py tests/unit/test_maxwell_galerkin_gpu.py \
    tests/unit/test_step_check_gpu.py -q 2>&1 | tail -5
python benchmarks/galerkin_cuda_speed.py --cases 7:16 8:16 11:8 12:8 --precisions float64 \
    --no-array --json "$OUT/skew_speed_float64.json"
python benchmarks/galerkin_cuda_speed.py --cases 7:16 11:8 --precisions float32 --launches "" --no-earlier \
    --no-array --json "$OUT/skew_speed_float32.json"
if [ -n "$BASELINE" ] && [ -d "$BASELINE" ]; then
    (cd "$BASELINE" && PYTHONPATH="$PWD/src" python benchmarks/galerkin_cuda_speed.py --cases 7:16 11:8 \
        --precisions float64 float32 --launches "" --no-array --no-earlier --json "$OUT/baseline_speed.json")
fi
if [ -n "$REA" ] && [ -f "$REA" ]; then
    python benchmarks/nekcem_cylwave.py "$REA" --backend cuda --forms galerkin,split \
        --json "$OUT/nekcem_cylwave_skew.json"
else
    echo "REA not set or missing: NekCEM's cylwave skipped"
fi
