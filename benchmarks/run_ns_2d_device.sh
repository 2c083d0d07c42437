#!/bin/bash
# Navier–Stokes on 2-D meshes on one GPU; each part fits one device call (< 10 min):
#   kernels (default, about 7 min): the 2-D GPU tests (kernels against the extruded reference,
#     operators against the 2-D NumPy reference, 2-D runs against the CPU), the 3-D kernel and
#     Navier–Stokes GPU tests (the 3-D kernels must be unchanged), bench_ns_kernels.py in 3-D
#     (24^3 elements, N = 7: 7.1 M points) and in 2-D at about the same points (333^2 quads),
#     and navier_stokes_2d_device.py (whole steps, 2-D against the extruded run);
#   cylinder (about 5 min): the 2-D GPU tests, then the Schäfer–Turek cylinder as
#     examples/2d/cylinder.toml (quads) and as examples/cylinder.toml (the same blocks extruded
#     one layer deep), each to t = 2 on CUDA: s/step and the forces' last row (the 2-D run's
#     Cx = cD per unit depth; the 3-D file's Cx uses A = D x 0.1, so the two compare directly).
# Each step has its own time limit.
# Usage (device machine, repository root): OUT=dir bash benchmarks/run_ns_2d_device.sh [kernels|cylinder]
export PYTHONPATH=src PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=/tmp/cupy_cache
OUT=${OUT:-out}; mkdir -p "$OUT"
PART=${1:-kernels}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
timeout 150 python3 -m pytest -q -rs tests/gpu/test_navier_stokes_2d_gpu.py \
  tests/gpu/test_navier_stokes_2d_system_gpu.py > "$OUT/ns2d_tests.log" 2>&1
echo "2-D tests rc=$?"; grep -E "passed|failed|FAILED|SKIPPED|Error" "$OUT/ns2d_tests.log" | head -20
if [ "$PART" = cylinder ]; then
  for case in examples/2d/cylinder.toml examples/cylinder.toml; do
    name=$(basename "$(dirname "$case")")_$(basename "$case" .toml)
    timeout 70 python3 - "$case" "$OUT/$name" > "$OUT/$name.log" 2>&1 <<'PY'
import sys
from lobatto.api import Simulation, load_case, with_changes
case = with_changes(load_case(sys.argv[1]), {"time": {"integrator": "bdf2", "dt": 5e-3, "t_end": 2.0},
                                             "output": {"formats": [], "forces": load_case(sys.argv[1]).output.forces.to_dict()}})
sim = Simulation(case, backend="cuda", output_dir=sys.argv[2])
summary = sim.run()
print("seconds_per_step", summary.get("seconds_per_step"), "points", sim.system.points)
PY
    echo "$case rc=$?"; grep -E "seconds_per_step|s/step" "$OUT/$name.log" | tail -2
    tail -1 "$OUT/$name/cylinder_forces.csv" 2>/dev/null
  done
  echo "total ${SECONDS}s"; exit 0
fi
timeout 120 python3 -m pytest -q -rs -n 4 tests/unit/test_ns_kernels_gpu.py tests/gpu/test_advection_gpu.py \
  tests/unit/test_navier_stokes_gpu.py > "$OUT/ns3d_tests.log" 2>&1
echo "3-D tests rc=$?"; grep -E "passed|failed|FAILED|Error" "$OUT/ns3d_tests.log" | head -20
timeout 60 python3 benchmarks/bench_ns_kernels.py --elements 24 --kernels advection_contravariant advection_apply \
  curl weighted_curl weak_divergence_minus_curl mass_minus_gradient --json "$OUT/bench3d.json" > "$OUT/bench3d.log" 2>&1
echo "bench 3-D rc=$?"; tail -8 "$OUT/bench3d.log"
timeout 60 python3 benchmarks/bench_ns_kernels.py --dim 2 --elements 333 --kernels advection_contravariant \
  advection_apply curl weighted_curl weak_divergence_minus_curl mass_minus_gradient --json "$OUT/bench2d.json" \
  > "$OUT/bench2d.log" 2>&1
echo "bench 2-D rc=$?"; tail -8 "$OUT/bench2d.log"
if [ "$SECONDS" -lt 380 ]; then
  timeout $((560 - SECONDS)) python3 benchmarks/navier_stokes_2d_device.py --json "$OUT/steps.json" \
    > "$OUT/steps.log" 2>&1
  echo "steps rc=$?"; tail -8 "$OUT/steps.log"
fi
echo "total ${SECONDS}s"
