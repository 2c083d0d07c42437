#!/usr/bin/env bash
# Issue 17, "Scaling past two GPUs": everything it asks, on one host with 4 or 8 GPUs.
#   bash benchmarks/run_multi_gpu.sh NGPU STAGE [RANKS] [OVERLAPS]
# NGPU: GPUs to use (4 or 8). RANKS: rank counts of a scaling stage (default 1 2 4 ... NGPU);
# OVERLAPS: its --overlap settings (default per stage). Each stage stays under about 560 s
# (one device call is limited to 600 s): a scaling stage runs one `lobatto bench scaling` per
# rank count, writing $OUT/<stage>_P<p>.json, and skips the rank counts it has no time left for
# (it says which; run the stage again with those RANKS). `report` merges each study's files.
#
#   info       versions, GPUs, topology
#   equal      benchmarks/ranks_equal.py: fields of 4 and 8 GPUs against 1 GPU, to 1e-13
#              (curved + materials and PML + dipole under rsb, plain box under rcb)
#   gs         benchmarks/gs_methods_ranks.py at 4 and 8 ranks: rsb and rcb on 13x11x7 and
#              39x33x21 elements (rsb gives a rank 7 neighbours at P = 8), each method's time, auto's pick
#   weak7      weak scaling, N = 7, 27^3 elements per GPU (1.01e7 points), overlap on off auto
#   weak7big   weak scaling, N = 7, 39^3 elements per GPU (3.04e7 points), overlap on off auto
#   weak14     weak scaling, N = 14, 5^3 elements per GPU (NekCEM's 125*15^3 = 4.2e5 points)
#   strong     strong scaling, N = 7, 8^3, 16^3, 32^3 elements in all (2.6e5 to 1.7e7 points)
#   strong1e8  strong scaling, N = 7, 64^3 elements in all (1.34e8 points)
#   model      sysbench gpu_gpu + MPI ping-pong and comm-model --measure on 2 GPUs, the NCCL LogGP
#   report     merge, tables, figures (where matplotlib is), each study against the model
#   all        every stage in this order (where no time limit applies)
# Logs and JSON go to $OUT (default ./multi_gpu_out); a short table is printed last.
# BACKEND=cpu SCALE=tiny runs the same stages on CPU ranks at tiny sizes (a check of this script).
set -u
NGPU=${1:?usage: run_multi_gpu.sh NGPU STAGE [RANKS] [OVERLAPS]}
STAGE=${2:?usage: run_multi_gpu.sh NGPU STAGE [RANKS] [OVERLAPS]}
OUT=${OUT:-$PWD/multi_gpu_out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
export CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-/tmp/lobatto_cupy_cache}   # kept between the calls of one machine
PY=${PY:-python3}
BACKEND=${BACKEND:-cuda}
SCALE=${SCALE:-full}
OVERLAPS=${4:-}
BUDGET=${BUDGET:-560}          # seconds of one call
DEADLINE=$((SECONDS + BUDGET))
LOG=$OUT/log.txt
summary=$OUT/summary.txt
touch "$summary"
say() { echo "$*" | tee -a "$summary"; }

# Open MPI (the GPU hosts): root, oversubscription, and the environment passed on with -x
if mpiexec --version 2>&1 | grep -qi "open mpi\|open-mpi\|openrte"; then
  XARGS=""
  for v in NCCL_NVLS_ENABLE PYTHONPATH PYTHONUNBUFFERED CUPY_CACHE_DIR LOBATTO_SHARE_GPUS OMP_NUM_THREADS; do
    [ -n "${!v:-}" ] && XARGS="$XARGS -x $v"
  done
  MPI="mpiexec --allow-run-as-root --oversubscribe$XARGS"
else
  XARGS=""
  MPI="mpiexec"
fi

powers() { local p=1 out=""; while [ "$p" -le "$1" ]; do out="$out $p"; p=$((p * 2)); done
           case " $out " in *" $1 "*) ;; *) out="$out $1";; esac; echo $out; }
RANKS_ALL=$(powers "$NGPU")
RANKS=${3:-$RANKS_ALL}
BIG=""; for p in 4 8; do [ "$p" -le "$NGPU" ] && BIG="$BIG $p"; done
BIG=$(echo ${BIG:-$NGPU})

left() { echo $((DEADLINE - SECONDS)); }

show_study() {  # a scaling JSON -> one line per run
  $PY - "$1" <<'PYEOF'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
except Exception as e:
    print("no study:", e); raise SystemExit
for r in s["runs"]:
    used = {None: "-", True: "on", False: "off"}[r.get("overlap_used")]
    print(f"  P={r['ranks']} {r['size']} overlap {r.get('overlap_setting')}->{used}: {r['seconds_per_step'] * 1e3:.3f} ms/step, "
          f"{r['points_per_rank']:.3g} points/rank, exchange {r['exchange_method']}/{r['exchange']}, graph {r['cuda_graph']}")
PYEOF
}

show_gs() {  # a gs_methods_ranks JSON -> one line per partitioner
  $PY - "$1" <<'PYEOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("no result:", e); raise SystemExit
for s in r["studies"]:
    us = ", ".join(f"{m} {v['median_us']:.0f}/{v['exchange_only_us']:.0f}" for m, v in s["methods"].items())
    picks = ", ".join(f"{p['method']} ({p['verdict']}, {p['ratio_to_fastest']:.2f})" for p in s["auto"])
    print(f"  {s['partitioner']}: neighbours max {s['neighbours_max']} mean {s['neighbours_mean']:.2f}; "
          f"us apply/exchange: {us}; auto: {picks}")
PYEOF
}

# one `lobatto bench scaling` per rank count: $1 stage, $2 weak|strong, $3 order, $4 sizes,
# $5 overlaps, $6 steps
scaling_stage() {
  local stage=$1 mode=$2 order=$3 sizes=$4 overlaps=${OVERLAPS:-$5} steps=$6 p t0 rc
  if [ "$SCALE" = tiny ]; then order=3; steps=5; sizes=2x2x1; [ "$mode" = strong ] && sizes="8 16"; fi
  for p in $RANKS; do
    if [ "$(left)" -lt 40 ]; then
      say "$stage P=$p: SKIPPED, out of time (run: bash benchmarks/run_multi_gpu.sh $NGPU $stage \"$p\" \"$overlaps\")"
      continue
    fi
    t0=$SECONDS
    timeout "$(left)" $PY -m lobatto bench scaling --$mode --backend "$BACKEND" --ranks "$p" --order "$order" \
        --sizes $sizes --overlap $overlaps --steps "$steps" --timeout "$(left)" \
        --mpiexec-args "$XARGS" --json "$OUT/${stage}_P$p.json" --png "$OUT/${stage}_P$p.png" \
        > "$OUT/${stage}_P$p.txt" 2>&1
    rc=$?
    say "$stage P=$p rc=$rc $((SECONDS - t0))s"
    if [ $rc -eq 0 ]; then show_study "$OUT/${stage}_P$p.json" | tee -a "$summary"
    else tail -n 5 "$OUT/${stage}_P$p.txt" | tee -a "$summary"; fi
  done
}

stage_info() {
  {
    date -u; git rev-parse HEAD 2>/dev/null; git status --short 2>/dev/null | head -20
    nvidia-smi --query-gpu=index,name,memory.total,clocks.max.sm,driver_version --format=csv
    nvidia-smi topo -m
    $PY -c "import cupy, numpy, mpi4py; from cupy.cuda import nccl; print('cupy', cupy.__version__, 'numpy', numpy.__version__, 'mpi4py', mpi4py.__version__, 'nccl', nccl.get_version())"
    mpiexec --version | head -1; nproc; free -g | head -2
  } > "$OUT/info.txt" 2>&1
  local n; n=$(nvidia-smi -L 2>/dev/null | wc -l)
  say "info: $n GPU(s) visible, NGPU=$NGPU, ranks $RANKS_ALL; $(grep -m1 -i nccl "$OUT/info.txt")"
  [ "$n" -lt "$NGPU" ] && [ "${LOBATTO_SHARE_GPUS:-0}" != 1 ] && say "WARNING: fewer GPUs than NGPU (set LOBATTO_SHARE_GPUS=1 to share them)"
}

stage_equal() {
  local case part elements t0 rc order=7
  for spec in "materials rsb 24 20 16" "pml rsb 24 20 16" "plain rcb 32 32 32"; do
    set -- $spec; case=$1 part=$2 elements="$3 $4 $5"
    [ "$SCALE" = tiny ] && { elements="6 5 4"; order=3; }
    [ "$(left)" -lt 60 ] && { say "equal $case: SKIPPED, out of time"; continue; }
    t0=$SECONDS
    timeout "$(left)" $PY benchmarks/ranks_equal.py --backend "$BACKEND" --ranks $BIG --partitioner "$part" --case "$case" \
        --elements $elements --order $order --steps 20 --mpiexec-args "$XARGS" --timeout "$(left)" \
        --json "$OUT/equal_${case}_$part.json" > "$OUT/equal_${case}_$part.txt" 2>&1
    rc=$?
    say "equal $case/$part P=$BIG rc=$rc $((SECONDS - t0))s: $(grep -E '^ +[0-9]+ ' "$OUT/equal_${case}_$part.txt" | awk '{print "P" $1, $2 " steps", $3, $4 "/" $5, "overlap " $6, "worst", $7, $NF}' | tr '\n' ';') $(grep -E '^(PASS|FAIL)' "$OUT/equal_${case}_$part.txt")"
  done
}

stage_gs() {
  local p box t0 rc order=7 boxes="13x11x7 39x33x21"
  [ "$SCALE" = tiny ] && { order=3; boxes="13x11x7"; }
  for p in $BIG; do
    for box in $boxes; do
      box=$(echo $box | tr x ' ')
      [ "$(left)" -lt 60 ] && { say "gs P=$p $box: SKIPPED, out of time"; continue; }
      t0=$SECONDS
      local name="gs_P${p}_$(echo $box | tr ' ' x)"
      timeout "$(left)" $MPI -n "$p" $PY benchmarks/gs_methods_ranks.py --backend "$BACKEND" --box $box --order $order \
          --partitioners rsb rcb --trials 30 --auto-repeats 3 --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1
      rc=$?
      say "$name rc=$rc $((SECONDS - t0))s"
      show_gs "$OUT/$name.json" | tee -a "$summary"
    done
  done
}

stage_model() {
  local t0=$SECONDS transport=nccl
  [ "$BACKEND" = cpu ] && transport=mpi
  timeout 200 $MPI -n 2 $PY -m lobatto sysbench --only gpu_gpu mpi_pingpong --json "$OUT/sysbench_2gpu.json" --no-png \
      > "$OUT/sysbench_2gpu.txt" 2>&1
  say "sysbench gpu_gpu + mpi_pingpong (2 GPUs) rc=$? $((SECONDS - t0))s"
  $PY -m lobatto bench comm-model --sysbench "$OUT/sysbench_2gpu.json" --transport $transport --max-ranks 8 \
      --json "$OUT/comm_model_nccl.json" > "$OUT/comm_model_nccl.txt" 2>&1
  say "comm-model from the $transport ping-pong rc=$?: $(grep -m1 '^LogGP' "$OUT/comm_model_nccl.txt" | cut -c1-160)"
  t0=$SECONDS
  timeout "$(left)" $MPI -n 2 $PY -m lobatto bench comm-model --measure --backend "$BACKEND" --max-ranks 8 \
      --json "$OUT/comm_model_cuda.json" > "$OUT/comm_model_cuda.txt" 2>&1
  say "comm-model --measure --backend $BACKEND (2 ranks) rc=$? $((SECONDS - t0))s: $(grep -m1 '^LogGP' "$OUT/comm_model_cuda.txt" | cut -c1-160)"
}

stage_report() {
  local study files model
  for study in weak7 weak7big weak14 strong strong1e8; do
    files=$(ls "$OUT/${study}"_P*.json 2>/dev/null | sort -V)
    [ -z "$files" ] && continue
    $PY -m lobatto bench scaling --plot-from $files --json "$OUT/$study.json" --png "$OUT/$study.png" \
        > "$OUT/$study.report.txt" 2>&1
    say "report $study rc=$?: $(echo $files | wc -w) files"
    for model in nccl cuda; do
      [ -f "$OUT/comm_model_$model.json" ] || continue
      $PY -m lobatto bench scaling --plot-from $files --model "$OUT/comm_model_$model.json" \
          --json "$OUT/${study}_model_$model.json" --png "$OUT/${study}_model_$model.png" \
          > "$OUT/${study}_model_$model.txt" 2>&1
      say "model ($model) against $study rc=$?"
    done
  done
}

run_stage() {
  case "$1" in
    info) stage_info ;;
    equal) stage_equal ;;
    gs) stage_gs ;;
    weak7) scaling_stage weak7 weak 7 27x27x27 "on off auto" 200 ;;
    weak7big) scaling_stage weak7big weak 7 39x39x39 "on off auto" 100 ;;
    weak14) scaling_stage weak14 weak 14 5x5x5 "on off auto" 200 ;;
    strong) scaling_stage strong strong 7 "8x8x8 16x16x16 32x32x32" auto 200 ;;
    strong1e8) scaling_stage strong1e8 strong 7 64x64x64 auto 100 ;;
    model) stage_model ;;
    report) stage_report ;;
    *) echo "unknown stage '$1': info equal gs weak7 weak7big weak14 strong strong1e8 model report all" >&2; exit 2 ;;
  esac
}

echo "==== $(date -u +%FT%TZ) stage $STAGE, $NGPU GPUs, ranks $RANKS" >> "$LOG"
if [ "$STAGE" = all ]; then
  DEADLINE=$((SECONDS + 86400))
  for s in info equal gs weak7 weak14 strong model weak7big strong1e8 report; do run_stage "$s"; done
else
  run_stage "$STAGE"
fi

if [ "$STAGE" = report ] || [ "$STAGE" = all ]; then
  for f in "$OUT"/weak7.report.txt "$OUT"/weak7big.report.txt "$OUT"/weak14.report.txt "$OUT"/strong.report.txt \
           "$OUT"/strong1e8.report.txt; do
    [ -f "$f" ] && { echo "==== $(basename "$f")"; grep -vE '^\s*$|figure' "$f"; }
  done
  for f in "$OUT"/weak7_model_nccl.txt "$OUT"/weak7big_model_nccl.txt "$OUT"/weak14_model_nccl.txt \
           "$OUT"/strong_model_nccl.txt "$OUT"/strong1e8_model_nccl.txt; do
    [ -f "$f" ] && { echo "==== $(basename "$f")"; sed -n '/against the communication model/,$p' "$f"; }
  done
fi
echo "==== summary ($OUT/summary.txt)"; tail -n 40 "$summary"
