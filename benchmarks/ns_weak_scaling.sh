#!/usr/bin/env bash
# Navier-Stokes (TGV Re 1600, N = 7) scaling on 1 and 2 GPUs, in one device call (nvidia-h100-x2):
#   bash benchmarks/ns_weak_scaling.sh [STUDIES...]
# STUDIES (default all, in this order; each skipped when the time left is short):
#   weak24     24^3 elements on 1 GPU, 48x24x24 on 2 (7.1e6 points per GPU), the same dt
#   weak16     16^3 on 1 GPU, 32x16x16 on 2 (2.1e6 points per GPU)
#   strong36   36^3 on 1 and on 2 GPUs (2.39e7 points)
#   nooverlap  the 2-GPU runs of weak24 and weak16 again with LOBATTO_ASSEMBLY_OVERLAP=0 (the
#              exchange not overlapped with the element operator), against the same 1-GPU runs
#   nooverlap36  the 2-GPU run of strong36 again with LOBATTO_ASSEMBLY_OVERLAP=0
# Each run: benchmarks/ns_weak_scaling.py under mpiexec (one rank per GPU), --warmup 10 and
# --steps 20 (STEPS, WARMUP override), JSON in $OUT; the efficiency table is printed last.
# SRC=other/src runs another tree (a baseline: its runs lack the collective counts).
# NS_EXCHANGE=nccl|host|cuda-aware-mpi sets the case's [parallel] exchange (default auto).
# BACKEND=cpu SCALE=tiny runs the same on CPU ranks at 4^3 / 8x4x4 / 6^3, order 3 (a check).
set -u
OUT=${OUT:-$PWD/ns_scaling_out}
mkdir -p "$OUT"
SRC=${SRC:-$PWD/src}
export PYTHONPATH=$SRC PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-/tmp/lobatto_cupy_cache}   # shared by the runs: compile once
export NS_EXCHANGE=${NS_EXCHANGE:-auto}
PY=${PY:-python3}
BACKEND=${BACKEND:-cuda}
SCALE=${SCALE:-full}
STEPS=${STEPS:-20}
WARMUP=${WARMUP:-10}
BUDGET=${BUDGET:-560}
DEADLINE=$((SECONDS + BUDGET))
SCRIPT=$(cd "$(dirname "$0")" && pwd)/ns_weak_scaling.py
LOG=$OUT/log.txt
STUDIES=${*:-weak24 weak16 strong36 nooverlap}

if mpiexec --version 2>&1 | grep -qi "open mpi\|open-mpi\|openrte"; then
  MPI="mpiexec --allow-run-as-root --oversubscribe -x NCCL_NVLS_ENABLE -x PYTHONPATH -x PYTHONUNBUFFERED -x CUPY_CACHE_DIR -x OMP_NUM_THREADS -x NS_EXCHANGE -x LOBATTO_ASSEMBLY_OVERLAP"
else
  MPI="mpiexec"
fi
export LOBATTO_ASSEMBLY_OVERLAP=${LOBATTO_ASSEMBLY_OVERLAP:-auto}

if [ "$SCALE" = tiny ]; then
  ORDER=3; E24="4 4 4"; E24x2="8 4 4"; B24=4; E16="4 4 4"; E16x2="8 4 4"; B16=4; E36="6 6 6"; B36=6
else
  ORDER=7; E24="24 24 24"; E24x2="48 24 24"; B24=24; E16="16 16 16"; E16x2="32 16 16"; B16=16; E36="36 36 36"; B36=36
fi

{ date -u; git -C "$SRC/.." rev-parse HEAD 2>/dev/null; nvidia-smi --query-gpu=name,memory.total --format=csv 2>/dev/null
  nvidia-smi topo -m 2>/dev/null; mpiexec --version 2>&1 | head -1; } >> "$LOG" 2>&1

one() {  # LABEL RANKS BASE ELEMENTS... : one run, unless the time left is short
  local label=$1 ranks=$2 base=$3; shift 3
  local left=$((DEADLINE - SECONDS))
  if [ "$left" -lt 60 ]; then echo "$label: skipped ($left s left)" | tee -a "$LOG"; return; fi
  timeout $((left - 10)) $MPI -n "$ranks" $PY "$SCRIPT" --backend "$BACKEND" --order $ORDER --base "$base" \
      --elements "$@" --steps "$STEPS" --warmup "$WARMUP" --label "$label" --json "$OUT/$label.json" \
      > "$OUT/$label.log" 2>&1
  local rc=$?
  echo "$label rc=$rc: $(tail -n 1 "$OUT/$label.log")" | tee -a "$LOG"
}

for study in $STUDIES; do
  case $study in
    weak24)   one weak24_P1 1 $B24 $E24; one weak24_P2 2 $B24 $E24x2 ;;
    weak16)   one weak16_P1 1 $B16 $E16; one weak16_P2 2 $B16 $E16x2 ;;
    strong36) one strong36_P1 1 $B36 $E36; one strong36_P2 2 $B36 $E36 ;;
    nooverlap)
      LOBATTO_ASSEMBLY_OVERLAP=0 one weak24_P2_nooverlap 2 $B24 $E24x2
      LOBATTO_ASSEMBLY_OVERLAP=0 one weak16_P2_nooverlap 2 $B16 $E16x2 ;;
    nooverlap36) LOBATTO_ASSEMBLY_OVERLAP=0 one strong36_P2_nooverlap 2 $B36 $E36 ;;
    *) echo "unknown study $study" ;;
  esac
done

echo "==== efficiencies (weak: t1 / t2; strong: t1 / (2 t2)); counts per step"
$PY "$SCRIPT" --report "$OUT"/*.json | tee "$OUT/report.txt"
