#!/usr/bin/env bash
# One device session on a machine with 2 GPUs (nvidia-h200-x2): checks, then measurements.
#   bash benchmarks/run_two_gpu.sh [PHASE]    PHASE: all (default) | tests | bench
# 1. `lobatto run` of benchmarks/cases/two_gpu.toml on 2 ranks with an empty kernel cache
#    (what a user sees on a machine started bare), then the same run again with the cache filled.
# 2. The GPU tests (tests/gpu) with both GPUs visible.
# 3. benchmarks/bench_exchange_gpu.py --parts maxwell (weak scaling 1 -> 2 GPUs).
# Logs and JSON go to $OUT (default ./two_gpu_out); a short table is printed last.
set -u
PHASE=${1:-all}
OUT=${OUT:-$PWD/two_gpu_out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=1
export CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-$(mktemp -d)}   # empty: the first run compiles everything
PY=${PY:-python3}
MPI="mpiexec --allow-run-as-root --oversubscribe -x NCCL_NVLS_ENABLE -x PYTHONPATH -x PYTHONUNBUFFERED -x CUPY_CACHE_DIR -x OMP_NUM_THREADS"
LOG=$OUT/log.txt
summary=$OUT/summary.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }

{
  date -u; git rev-parse HEAD 2>/dev/null; git status --short 2>/dev/null | head -20
  nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv
  nvidia-smi topo -m
  $PY -c "import cupy, numpy, mpi4py; from cupy.cuda import nccl; print('cupy', cupy.__version__, 'numpy', numpy.__version__, 'mpi4py', mpi4py.__version__, 'nccl', nccl.get_version())"
  mpiexec --version | head -1
} >> "$LOG" 2>&1

show_run() {  # summary.json -> one line
  $PY - "$1" <<'PYEOF'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
except Exception as e:
    print("no summary:", e); raise SystemExit
o = s["overlap"]
t = o.get("auto_trial", {})
print(f"ranks {s['ranks']} steps {s['steps']} {s['seconds_per_step'] * 1e3:.2f} ms/step, wall {s['wall_seconds']:.2f} s, "
      f"exchange {s['exchange']}, overlap {o['setting']}->{o['enabled']}"
      + (f" (trial {t['seconds_per_step_with'] * 1e3:.2f} with / {t['seconds_per_step_without'] * 1e3:.2f} without)" if t else "")
      + f", graph {s['cuda_graph']} ({s.get('cuda_graph_note')})")
PYEOF
}

if [ "$PHASE" = all ] || [ "$PHASE" = tests ]; then
  for pass in cold warm; do
    t0=$SECONDS
    timeout 240 $MPI -n 2 $PY -m lobatto run benchmarks/cases/two_gpu.toml --backend cuda \
        --output "/tmp/run_$pass" --quiet >> "$LOG" 2>&1
    say "run 2 GPUs $pass cache rc=$? $((SECONDS - t0))s: $(cp /tmp/run_$pass/summary.json "$OUT/run_$pass.json"; show_run "$OUT/run_$pass.json")"
  done
  t0=$SECONDS
  timeout 300 $PY -m pytest -q tests/gpu tests/unit/test_cuda_compile.py -p no:cacheprovider --durations=6 \
      > "$OUT/pytest.txt" 2>&1
  say "pytest tests/gpu rc=$? $((SECONDS - t0))s: $(grep -E 'passed|failed' "$OUT/pytest.txt" | tail -1)"
fi

if [ "$PHASE" = all ] || [ "$PHASE" = bench ]; then
  t0=$SECONDS
  timeout 400 $MPI -n 2 $PY benchmarks/bench_exchange_gpu.py --parts maxwell --json "$OUT/bench_exchange_gpu.json" \
      > "$OUT/bench.txt" 2>&1
  say "bench maxwell rc=$? $((SECONDS - t0))s"
fi

echo "==== log tail"; tail -n 25 "$LOG"
[ -f "$OUT/pytest.txt" ] && { echo "==== pytest"; grep -vE '^\s*$' "$OUT/pytest.txt" | tail -n 25; }
[ -f "$OUT/bench.txt" ] && { echo "==== bench"; tail -n 14 "$OUT/bench.txt"; }
echo "==== summary"; cat "$summary"
