#!/usr/bin/env bash
# Rayleigh–Bénard throughput on one GPU at the size per GPU of the jubench nekRS RBC case:
# examples/rbc.toml (Ra = 1e5, Pr = 0.7, free-fall units, a 4 x 4 x 1 box) on 30 x 30 x 25 =
# 22,500 elements at order 8 (9 points per direction: 16.4 M points), sub-stepped BDF2 at
# target CFL 4 with 2 sub-steps as jubench runs nekRS; 10 warm-up and 20 timed steps of
# `lobatto bench navier-stokes` (docs/benchmarks.md), then its ms/step and point-steps/s beside
# nekRS's A100 figure (jubench-nekrs, JUWELS Booster: 0.421 s/step for 16.4 M points, 3.9e7
# point-steps/s). The flow is the example's start (rolls of 0.16 free-fall velocity), not
# nekRS's developed turbulence: iteration counts per step differ from a developed flow's.
#
#   bash benchmarks/rbc_gpu.sh [OUT.json]      (default benchmarks/results/rbc_gpu.json)
#
# Expected to take under 3 minutes on an H100, set-up included (the 36^3 TGV, 24 M points, took
# 72 s to set up; this case has 16.4 M): not measured yet.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-benchmarks/results/rbc_gpu.json}
CASE=$(mktemp --suffix=.toml)
trap 'rm -f "$CASE"' EXIT
sed -e 's/^elements = \[8, 8, 4\]/elements = [30, 30, 25]/' -e 's/^formats = \["nek", "hdf5"\]/formats = []/' \
    examples/rbc.toml > "$CASE"
grep -q '^elements = \[30, 30, 25\]' "$CASE" && grep -q '^formats = \[\]' "$CASE" || {
    echo "rbc_gpu.sh: examples/rbc.toml no longer has the lines this script changes" >&2; exit 2; }
mkdir -p "$(dirname "$OUT")"
PYTHONPATH=src${PYTHONPATH:+:$PYTHONPATH} python3 -m lobatto bench navier-stokes --backend cuda --case "$CASE" \
    --order 8 --target-cfl 4 --substeps 2 --warmup 10 --steps 20 --no-profile --json "$OUT"
python3 - "$OUT" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
points, per_step = r["case"]["points"], r["seconds_per_step"]
nek_points, nek_step = 16.4e6, 0.421  # jubench-nekrs RBC, one A100 (JUWELS Booster), CFL 4, 2 sub-steps
print(f"\n{'code':<34} {'points':>12} {'ms/step':>9} {'point-steps/s':>14}")
print(f"{'lobatto (' + r['meta'].get('device', '?')[:22] + ')':<34} {points:>12,} {1e3 * per_step:>9.1f} "
      f"{points / per_step:>14.3e}")
print(f"{'nekRS (A100, jubench)':<34} {int(nek_points):>12,} {1e3 * nek_step:>9.1f} {nek_points / nek_step:>14.3e}")
print(f"iterations per step: pressure {r['pressure_iterations_per_step']:.1f}, velocity "
      f"{r['velocity_iterations_per_step']:.1f}; largest CFL {r['cfl']:.2f}")
PY
