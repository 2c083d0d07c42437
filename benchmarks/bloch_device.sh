#!/bin/sh
# Bloch-periodic boundaries on the GPU (docs/electromagnetics.md, "Bloch-periodic boundaries"):
# the CUDA tests against the CPU, then the step's cost against the plain periodic step (the plain
# one takes the fused whole step, the Bloch pair the stage path), and the oblique continuous TF/SF
# plane wave's slab study on CUDA (4 runs on a 26-element cell; not yet timed on a GPU: the CPU took
# 34-69 s a run). About 5 minutes on an H100 before the slab study.
#
#     sh benchmarks/bloch_device.sh
set -e
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
python -m pytest tests/unit/test_maxwell_bloch_gpu.py tests/unit/test_maxwell_bloch.py -q
python benchmarks/bloch_periodic.py --backend cuda --elements 16 --order 7 --steps 20 --skip-bands \
    --json benchmarks/bloch_periodic_cuda.json
python benchmarks/bloch_tfsf_slab.py --backend cuda --json benchmarks/bloch_tfsf_slab_cuda.json
