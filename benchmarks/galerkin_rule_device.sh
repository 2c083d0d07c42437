#!/bin/sh
# The Galerkin form with the smaller Gauss rule Q = max(ceil(3N/2), N + 1) and the invariant
# curl-form cofactors, and its affine closed-form kernel, on the GPU (notes-curved-maxwell.md
# section 9): the CUDA tests against the CPU (the sheared box and the cylinder take the affine
# kernel), the speed of the new operator and of the earlier one (exact cofactors, Q = 2N) in one
# process, and NekCEM's cylwave with both. REA: NekCEM's tests/cylwave/cylwave.rea (not in this
# repository; the cylwave step is skipped without it). Output under $OUT (default: .).
# About 8 minutes on an H100 (tests 2, speed 4-5, cylwave 1-2).
#
#     OUT=$OUT REA=path/to/cylwave.rea sh benchmarks/galerkin_rule_device.sh
set -e
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
OUT="${OUT:-.}"
mkdir -p "$OUT"
python -m pytest tests/unit/test_maxwell_galerkin_cuda.py tests/unit/test_maxwell_galerkin_gpu.py -q
python benchmarks/galerkin_cuda_speed.py --json "$OUT/galerkin_cuda_speed_q3n2.json"
if [ -n "$REA" ] && [ -f "$REA" ]; then
    python benchmarks/nekcem_cylwave.py "$REA" --backend cuda --forms galerkin,galerkin:exact:2N,split \
        --json "$OUT/nekcem_cylwave_galerkin_q3n2.json"
else
    echo "REA not set or missing: NekCEM's cylwave skipped"
fi
