#!/bin/sh
# Whole-process wall clock of the curved Maxwell forms (confirms the kernel benchmarks'
# per-step figures): `python -m lobatto run` of the curved box of `lobatto bench maxwell --curved`
# (unit box, 16^3 elements, N = 7, PEC, 0.1 sin sin sin deformation), float64, on the CUDA
# backend, with S and 3S steps of a fixed dt, after a warm-up run of 10 steps that fills the
# kernel cache (the first process of each form compiles its kernels; the timed ones load them);
# per step = (T(3S) - T(S)) / 2S, which removes the set-up time (start-up varies by a second or
# two: S = 2000 keeps that to a few per cent), beside each run's own seconds_per_step. Prints one
# line per form.
# Output under $OUT.
#
#     OUT=$OUT [S=1000] sh benchmarks/galerkin_wallclock.sh [FORMS]      # FORMS default "split galerkin"
set -e
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
OUT="${OUT:-.}"
mkdir -p "$OUT"
S=${S:-1000}
DT=0.0005
for form in ${1:-split galerkin}; do
    for steps in 10 $S $((3 * S)); do
        case="$OUT/wall_${form}_${steps}.toml"
        cat > "$case" <<CASE
[mesh]
elements = [16, 16, 16]
boundary = "pec"
[mesh.deform]
x = "0.1*sin(pi*x)*sin(pi*y)*sin(pi*z)"
y = "0.1*sin(pi*x)*sin(pi*y)*sin(pi*z)"
z = "0.05*sin(pi*x)*sin(pi*y)*sin(pi*z)"
[discretization]
order = 7
volume_form = "$form"
[physics]
equations = "maxwell"
[initial]
Ez = "sin(pi*x)*sin(pi*y)"
[time]
dt = $DT
t_end = $(python3 -c "print($steps * $DT)")
cfl_check = false
[output]
formats = []
[backend]
name = "cuda"
CASE
        start=$(date +%s.%N)
        python -m lobatto run "$case" --output "$OUT/wall_${form}_${steps}" --quiet > "$OUT/wall_${form}_${steps}.log" 2>&1
        end=$(date +%s.%N)
        own=$(python3 -c "import json; print(json.load(open('$OUT/wall_${form}_${steps}/summary.json'))['seconds_per_step'])")
        [ "$steps" = 10 ] || echo "$form $steps $(python3 -c "print($end - $start)") $own" >> "$OUT/wallclock.txt"
    done
done
python3 - "$OUT/wallclock.txt" "$S" <<'PY'
import sys
rows = [line.split() for line in open(sys.argv[1])]
s = int(sys.argv[2])
t = {(r[0], int(r[1])): float(r[2]) for r in rows}
for form in dict.fromkeys(r[0] for r in rows):
    per = (t[(form, 3 * s)] - t[(form, s)]) / (2 * s)
    own = [float(r[3]) * 1e3 for r in rows if r[0] == form]
    print(f"{form:>9}: {t[(form, s)]:.2f} s ({s} steps), {t[(form, 3 * s)]:.2f} s ({3 * s}): {per * 1e3:.3f} ms per step; "
          f"the runs' own seconds_per_step (summary.json): {own[0]:.3f}, {own[1]:.3f} ms")
PY
