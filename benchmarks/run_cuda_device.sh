#!/usr/bin/env bash
# One device session of the CUDA backend's checks and measurements (see benchmarks/notes-cuda.md).
#   bash benchmarks/run_cuda_device.sh PHASE      (PHASE: check | tune2 | tune3 | final | combine | verify)
# Flags as they are now: the solver's default on one GPU is the fused-exchange whole step;
# --stages times the stage-by-stage path with the gather-scatter (earlier calls spelled these
# --fused-exchange and the plain default; --gs-combine is now part of the --stages path).
# Logs and JSON go to $OUT (default ./cuda_out); CuPy's kernel cache is kept in .cucache
# (carry it to the next call to skip NVRTC compilations) and packed into $OUT/cucache.tgz.
set -u
PHASE=${1:-check}
OUT=${OUT:-$PWD/cuda_out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=$PWD/.cucache
mkdir -p "$CUPY_CACHE_DIR"
PY=${PY:-python3}
LOG=$OUT/log.txt
summary=$OUT/summary.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }

{
  nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv
  $PY -c "import cupy, numpy; print('cupy', cupy.__version__, 'numpy', numpy.__version__)"
  nproc; which ncu nsys || true
} >> "$LOG" 2>&1

bench() {  # name, args...
  local name=$1; shift
  local t0=$SECONDS
  $PY -m lobatto bench maxwell "$@" --json "$OUT/$name.json" >> "$LOG" 2>&1
  local rc=$?
  say "$name rc=$rc $((SECONDS - t0))s: $($PY - "$OUT/$name.json" <<'EOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("no json", e); raise SystemExit
ks = r.get("kernel_seconds", {})
print(f"{r['point_stage_updates_per_s']:.3e} pt-st/s {r['gflops']:.0f} GF/s "
      f"bw {r.get('bandwidth_model_bytes_per_s', 0)/1e9:.0f} GB/s ({r.get('percent_of_copy', 0):.0f}% of copy "
      f"{(r.get('copy_bandwidth') or {}).get('peak', 0)/1e9:.0f}) graph={r.get('graph')} "
      + " ".join(f"{k}={v*1e6:.0f}us" for k, v in ks.items()))
EOF
)"
}

case "$PHASE" in
check)
  t0=$SECONDS
  $PY -m pytest -q -x tests/gpu tests/unit/test_cuda_compile.py -p no:cacheprovider --durations=8 >> "$LOG" 2>&1
  say "pytest rc=$? $((SECONDS - t0))s"
  bench n7_curved_f64 --backend cuda --order 7 --elements 32 32 32 --curved --stages
  bench n7_curved_f32 --backend cuda --order 7 --elements 32 32 32 --curved --stages --precision float32 --copy-bytes 0
  bench n14_curved_f64 --backend cuda --order 14 --elements 16 16 16 --curved --stages --copy-bytes 0
  t0=$SECONDS
  $PY benchmarks/tune_cuda.py --order 7 --elements 32 32 32 --curved --variants 1,128 1,512 2,256 1,256,80 1,128,128 \
      >> "$LOG" 2>&1
  say "tune rc=$? $((SECONDS - t0))s"
  ;;
tune2)
  R=$OUT/r; mkdir -p "$R"
  t0=$SECONDS
  $PY -m pytest -q tests/gpu tests/unit/test_cuda_compile.py -p no:cacheprovider --durations=5 >> "$LOG" 2>&1
  say "pytest rc=$? $((SECONDS - t0))s"
  t0=$SECONDS
  $PY benchmarks/cavity_cuda.py --json "$R/cavity.json" >> "$LOG" 2>&1
  say "cavity rc=$? $((SECONDS - t0))s"
  t0=$SECONDS
  $PY benchmarks/tune_cuda.py --order 7 --elements 32 32 32 --curved --precisions float64 float32 \
      --kernels stage pairs --variants 1,256 1,64 2,128 2,256 4,256 --json "$R/tune7.json" >> "$LOG" 2>&1
  say "tune7 rc=$? $((SECONDS - t0))s"
  t0=$SECONDS
  $PY benchmarks/tune_cuda.py --order 14 --elements 16 16 16 --curved --precisions float64 float32 \
      --kernels stage pairs --variants 1,256 1,384 1,640 1,768,80 1,1024,64 --json "$R/tune14.json" >> "$LOG" 2>&1
  say "tune14 rc=$? $((SECONDS - t0))s"
  OUTJ=$R
  bench_r() { local name=$1; shift; local t0=$SECONDS
    $PY -m lobatto bench maxwell "$@" --json "$R/$name.json" >> "$LOG" 2>&1; say "$name rc=$? $((SECONDS - t0))s"; }
  bench_r n7_fused_f64 --backend cuda --order 7 --elements 32 32 32 --curved --copy-bytes 0
  bench_r n14_fused_f64 --backend cuda --order 14 --elements 16 16 16 --curved --copy-bytes 0
  t0=$SECONDS
  ncu --profile-from-start off --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
      --section LaunchStats --section WarpStateStats \
      --metrics dram__bytes_read.sum,dram__bytes_write.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum \
      $PY benchmarks/profile_cuda.py --order 7 --elements 16 16 16 --curved > "$R/ncu_n7.txt" 2>&1
  say "ncu7 rc=$? $((SECONDS - t0))s"
  t0=$SECONDS
  ncu --profile-from-start off --section SpeedOfLight --section Occupancy --section WarpStateStats \
      --metrics dram__bytes_read.sum,dram__bytes_write.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum \
      $PY benchmarks/profile_cuda.py --order 14 --elements 12 12 12 --curved > "$R/ncu_n14.txt" 2>&1
  say "ncu14 rc=$? $((SECONDS - t0))s"
  t0=$SECONDS
  OMP_NUM_THREADS=$(nproc) timeout 150 $PY -m lobatto bench maxwell --backend cpu --order 7 --elements 12 12 12 --curved \
      --steps 2 --repeats 2 --no-kernels --json "$R/cpu_n7.json" >> "$LOG" 2>&1
  say "cpu7 rc=$? $((SECONDS - t0))s"
  tar czf "$OUT/results.tgz" -C "$R" . && rm -rf "$R"
  grep -E "^(kernel|stage|pairs|N=)" "$LOG" | tail -n 40
  ;;
tune3)
  R=$OUT/r; mkdir -p "$R"
  t0=$SECONDS
  $PY -m pytest -q tests/gpu tests/unit/test_cuda_compile.py -p no:cacheprovider --durations=5 >> "$LOG" 2>&1
  say "pytest rc=$? $((SECONDS - t0))s"
  t0=$SECONDS
  $PY benchmarks/tune_cuda.py --order 7 --elements 32 32 32 --curved --precisions float64 float32 \
      --kernels stage pairs --variants 1,128,0,0 1,256,0,1 1,128,96,1 1,192,0,1 2,128,0,1 --json "$R/tune7.json" >> "$LOG" 2>&1
  say "tune7 rc=$? $((SECONDS - t0))s"
  t0=$SECONDS
  $PY benchmarks/tune_cuda.py --order 14 --elements 16 16 16 --curved --precisions float64 float32 \
      --kernels stage pairs --variants 1,512,0,0 1,384,0,1 1,256,0,1 1,768,80,1 1,1024,64,1 --json "$R/tune14.json" >> "$LOG" 2>&1
  say "tune14 rc=$? $((SECONDS - t0))s"
  bench_r() { local name=$1; shift; local t0=$SECONDS
    $PY -m lobatto bench maxwell "$@" --json "$R/$name.json" >> "$LOG" 2>&1; say "$name rc=$? $((SECONDS - t0))s"; }
  bench_r n7_std_f64 --backend cuda --order 7 --elements 32 32 32 --curved --stages
  bench_r n7_fused_f64 --backend cuda --order 7 --elements 32 32 32 --curved --copy-bytes 0
  bench_r n14_std_f64 --backend cuda --order 14 --elements 16 16 16 --curved --stages --copy-bytes 0
  bench_r n14_fused_f64 --backend cuda --order 14 --elements 16 16 16 --curved --copy-bytes 0
  tar czf "$OUT/results.tgz" -C "$R" . && rm -rf "$R"
  grep -E "^(kernel|stage|pairs|N=)|skipped|point-stage|time per step" "$LOG" | tail -n 60
  ;;
final)
  R=$OUT/r; mkdir -p "$R"
  t0=$SECONDS
  $PY -m pytest -q tests/gpu tests/unit/test_cuda_compile.py -p no:cacheprovider --durations=5 >> "$LOG" 2>&1
  say "pytest rc=$? $((SECONDS - t0))s"
  bench_r() { local name=$1; shift; local t0=$SECONDS
    $PY -m lobatto bench maxwell "$@" --json "$R/$name.json" >> "$LOG" 2>&1; say "$name rc=$? $((SECONDS - t0))s"; }
  bench_r n7_std_f64 --backend cuda --order 7 --elements 32 32 32 --curved --stages
  bench_r n7_fused_f64 --backend cuda --order 7 --elements 32 32 32 --curved --copy-bytes 0
  bench_r n7_std_f32 --backend cuda --order 7 --elements 32 32 32 --curved --stages --precision float32 --copy-bytes 0
  bench_r n7_fused_f32 --backend cuda --order 7 --elements 32 32 32 --curved --precision float32 --copy-bytes 0
  bench_r n14_std_f64 --backend cuda --order 14 --elements 16 16 16 --curved --stages --copy-bytes 0
  bench_r n14_fused_f64 --backend cuda --order 14 --elements 16 16 16 --curved --copy-bytes 0
  bench_r n14_std_f32 --backend cuda --order 14 --elements 16 16 16 --curved --stages --precision float32 --copy-bytes 0
  bench_r n7_std_f64_affine --backend cuda --order 7 --elements 32 32 32 --copy-bytes 0 --stages
  t0=$SECONDS
  $PY -m lobatto bench maxwell --backend cuda --sweep --curved --stages --orders 7 14 --max-points 3.4e7 \
      --json "$R/sweep_std.json" >> "$LOG" 2>&1
  say "sweep_std rc=$? $((SECONDS - t0))s"
  t0=$SECONDS
  $PY -m lobatto bench maxwell --backend cuda --sweep --curved --orders 7 --max-points 1.7e7 \
      --json "$R/sweep_fused.json" >> "$LOG" 2>&1
  say "sweep_fused rc=$? $((SECONDS - t0))s"
  tar czf "$OUT/results.tgz" -C "$R" . && rm -rf "$R"
  grep -E "point-stage|time per step|^(traces|exchange|gs_|stage)|n_1/2|peak" "$LOG" | tail -n 80
  ;;
combine)
  R=$OUT/r; mkdir -p "$R"
  t0=$SECONDS
  $PY -m pytest -q tests/gpu/test_cuda_backend.py -k "combine or gather_scatter or graph" -p no:cacheprovider >> "$LOG" 2>&1
  say "pytest rc=$? $((SECONDS - t0))s"
  bench_r() { local name=$1; shift; local t0=$SECONDS
    $PY -m lobatto bench maxwell "$@" --json "$R/$name.json" >> "$LOG" 2>&1; say "$name rc=$? $((SECONDS - t0))s"; }
  bench_r n7_std_f64 --backend cuda --order 7 --elements 32 32 32 --curved --stages
  bench_r n7_comb_f64 --backend cuda --order 7 --elements 32 32 32 --curved --stages --copy-bytes 0
  bench_r n7_comb_f32 --backend cuda --order 7 --elements 32 32 32 --curved --stages --precision float32 --copy-bytes 0
  bench_r n14_comb_f64 --backend cuda --order 14 --elements 16 16 16 --curved --stages --copy-bytes 0
  tar czf "$OUT/results.tgz" -C "$R" . && rm -rf "$R"
  grep -E "passed|failed|point-stage|time per step|^(traces|exchange|gs_|stage)|percent" "$LOG" | tail -n 60
  ;;
verify)
  R=$OUT/r; mkdir -p "$R"
  t0=$SECONDS
  $PY -m pytest -q tests/gpu tests/unit/test_cuda_compile.py -p no:cacheprovider --durations=5 >> "$LOG" 2>&1
  say "pytest rc=$? $((SECONDS - t0))s"
  for ex in cavity cavity_curved plane_wave; do
    t0=$SECONDS
    $PY -m lobatto run examples/$ex.toml --backend cuda --output "$R/$ex" --quiet >> "$LOG" 2>&1
    say "run $ex rc=$? $((SECONDS - t0))s: $($PY -c "import json,sys; s=json.load(open('$R/$ex/summary.json')); print(s['step_path'], 'graph', s['cuda_graph'], 'L2', s['errors']['all']['l2'], 'pt-steps/s', '%.3g' % s['point_steps_per_second'])")"
  done
  bench_r() { local name=$1; shift; local t0=$SECONDS
    $PY -m lobatto bench maxwell "$@" --json "$R/$name.json" >> "$LOG" 2>&1; say "$name rc=$? $((SECONDS - t0))s"; }
  bench_r n7_f64 --backend cuda --order 7 --elements 32 32 32 --curved
  bench_r n7_stages_f64 --backend cuda --order 7 --elements 32 32 32 --curved --stages --copy-bytes 0
  bench_r n7_f32 --backend cuda --order 7 --elements 32 32 32 --curved --precision float32 --copy-bytes 0
  bench_r n14_f64 --backend cuda --order 14 --elements 16 16 16 --curved --copy-bytes 0
  bench_r n14_stages_f64 --backend cuda --order 14 --elements 16 16 16 --curved --stages --copy-bytes 0
  bench_r n14_f32 --backend cuda --order 14 --elements 16 16 16 --curved --precision float32 --copy-bytes 0
  t0=$SECONDS
  $PY -m lobatto bench maxwell --backend cuda --sweep --curved --orders 7 14 --max-points 1.7e7 \
      --json "$R/sweep.json" >> "$LOG" 2>&1
  say "sweep rc=$? $((SECONDS - t0))s"
  cp "$R"/*.json "$OUT"/ 2>/dev/null; tar czf "$OUT/results.tgz" -C "$R" . && rm -rf "$R"
  grep -E "passed|failed|point-stage|time per step|n_1/2|peak|percent" "$LOG" | tail -n 60
  ;;
verify2)
  R=$OUT/r; mkdir -p "$R"
  t0=$SECONDS
  $PY -m pytest -q tests/gpu tests/unit/test_bench_cli.py -p no:cacheprovider >> "$LOG" 2>&1
  say "pytest rc=$? $((SECONDS - t0))s"
  bench_r() { local name=$1; shift; local t0=$SECONDS
    $PY -m lobatto bench maxwell "$@" --json "$R/$name.json" >> "$LOG" 2>&1; say "$name rc=$? $((SECONDS - t0))s"; }
  bench_r n7_f64 --backend cuda --order 7 --elements 32 32 32 --curved
  bench_r n7_stages_f64 --backend cuda --order 7 --elements 32 32 32 --curved --stages --copy-bytes 0
  bench_r n7_f32 --backend cuda --order 7 --elements 32 32 32 --curved --precision float32 --copy-bytes 0
  bench_r n14_f64 --backend cuda --order 14 --elements 16 16 16 --curved --copy-bytes 0
  bench_r n14_stages_f64 --backend cuda --order 14 --elements 16 16 16 --curved --stages --copy-bytes 0
  bench_r n14_f32 --backend cuda --order 14 --elements 16 16 16 --curved --precision float32 --copy-bytes 0
  cp "$R"/*.json "$OUT"/ 2>/dev/null; rm -rf "$R"
  grep -E "passed|failed|point-stage|time per step|percent|copy" "$LOG" | tail -n 40
  ;;
*)
  echo "unknown phase $PHASE"; exit 2;;
esac

tar czf "$OUT/cucache.tgz" -C "$CUPY_CACHE_DIR" . 2>/dev/null
echo "==== log tail"; tail -n 60 "$LOG"
echo "==== summary"; cat "$summary"
