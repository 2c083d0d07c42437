#!/bin/sh
# The iris two-port (examples/waveguide_iris.toml) on the GPU against mode matching
# (docs/electromagnetics.md, "Port modes of any cross-section"), once the ports are merged: S11, S21, S12, S22 errors, passivity and
# reciprocity at N = 4 ... 7 (two runs, one per driven port, per order). Expected: 10-20 minutes
# on an H100, an estimate (284 elements, then 1136; on the 2-core CPU N = 4 took 466 s, N = 5 988 s).
#
#     sh benchmarks/waveguide_iris_device.sh
set -e
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
python -m pytest tests/unit/test_port_mode_solver.py tests/unit/test_waveguide_mode_matching.py \
    tests/unit/test_waveguide_iris_case.py -q
python benchmarks/waveguide_iris.py --backend cuda --orders 4 5 6 7 --t-end 60 \
    --json benchmarks/waveguide_iris_cuda.json
# the same with elements halved in x and z (1136 hexahedra): does the edge singularity limit N?
python benchmarks/waveguide_iris.py --backend cuda --orders 4 5 6 --t-end 60 --refine 2 \
    --json benchmarks/waveguide_iris_cuda_refine2.json
