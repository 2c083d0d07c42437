#!/bin/bash
# Navier–Stokes in 2-D on one GPU, in one device call (about 5 min): the 2-D GPU tests, then
# the Schäfer–Turek cylinder as examples/2d/cylinder.toml (quads) and as examples/cylinder.toml
# (the same blocks extruded one layer deep), each to t = 2 on CUDA: the summary's s/step and the
# forces' last row of each (the 2-D run's Cx = cD per unit depth; the 3-D file's Cx uses A = D x
# 0.1, so the two Cx compare directly). Needs the ns2d and ns2dgpu branches merged.
# Usage (device machine, repository root): OUT=dir bash benchmarks/navier_stokes_2d_device.sh
export PYTHONPATH=src PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=/tmp/cupy_cache
OUT=${OUT:-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
timeout 150 python3 -m pytest -q -rs -x tests/gpu/test_navier_stokes_2d_system_gpu.py \
  tests/gpu/test_navier_stokes_2d_gpu.py > "$OUT/tests_2d.log" 2>&1
echo "2-D GPU tests rc=$?"; grep -E "passed|failed|skipped|SKIPPED|FAILED|Error" "$OUT/tests_2d.log" | head -20
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
echo "total ${SECONDS}s"
