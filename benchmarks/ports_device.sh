#!/bin/sh
# Waveguide ports on the GPU (docs/electromagnetics.md, "Ports and S-parameters"): the CUDA
# S-matrix against the CPU's (the two-port guide of tests/unit/test_ports.py, both ports
# driven: four runs of about 900 steps on 20 elements), then the CPU tests of the ports.
# A few minutes on an H100, most of it the CPU runs and the kernels' compilation.
#
#     sh benchmarks/ports_device.sh
set -e
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
python -m pytest tests/unit/test_ports_gpu.py tests/unit/test_ports.py -q
