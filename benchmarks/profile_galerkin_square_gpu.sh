#!/usr/bin/env bash
# Issue 32 item 2 with volume_form = "auto" (the Galerkin form on curved meshes): Nsight Compute
# profiles of galerkin_square_kernel (Q = N + 1, the whole rhs at the Gauss points) at the sizes of
# the speed targets (N = 7 on 32^3, N = 14 on 16^3; float64), one launch each past the warm-up
# (--launch-skip), clocks left alone, the bench without graph replay so that each launch is its
# own kernel; then the whole step of both forms with graph replay, side by side in this call.
#   OUT=dir bash benchmarks/profile_galerkin_square_gpu.sh      (about 3 minutes on an H100)
#   SKIP_BENCH=1 OUT=dir bash benchmarks/profile_galerkin_square_gpu.sh   (the profiles only)
#   PROFILES="g7_f32:7:32:float32 g14_f32:14:16:float32" SKIP_BENCH=1 OUT=dir bash ...   (other cases)
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/src CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-/tmp/lobatto_cupy_cache} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/device.txt"
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats
  --section WarpStateStats --section ComputeWorkloadAnalysis --section SchedulerStats --section InstructionStats"
p() {  # LABEL ORDER NX PRECISION
  local label=$1 n=$2 e=$3 prec=$4
  timeout 300 ncu --clock-control none --kernel-name regex:galerkin_square --launch-skip 20 --launch-count 1 \
    $SECTIONS -o "$OUT/$label" -f \
    python3 -m lobatto bench maxwell --backend cuda --curved --volume-form galerkin --order $n --elements $e $e $e \
      --precision $prec --steps 8 --repeats 1 --no-graph --no-kernels --copy-bytes 0 > "$OUT/$label.run.log" 2>&1
  echo "$label rc=$?"
  ncu --import "$OUT/$label.ncu-rep" --page details > "$OUT/$label.details.txt" 2>&1
  ncu --import "$OUT/$label.ncu-rep" --page raw --csv --metrics \
gpu__time_duration.sum,dram__bytes.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,\
sm__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,\
l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,sm__warps_active.avg.pct_of_peak_sustained_active,\
launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__occupancy_limit_shared_mem,\
launch__occupancy_limit_registers,smsp__inst_executed.sum,sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active,\
sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active,l1tex__throughput.avg.pct_of_peak_sustained_active,\
lts__throughput.avg.pct_of_peak_sustained_elapsed,smsp__average_warp_latency_issue_stalled_barrier.ratio,\
smsp__average_warp_latency_issue_stalled_short_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,\
smsp__average_warp_latency_issue_stalled_mio_throttle.ratio,smsp__average_warp_latency_issue_stalled_math_pipe_throttle.ratio,\
smsp__average_warp_latency_issue_stalled_wait.ratio \
    > "$OUT/$label.metrics.csv" 2>&1
}
# LABEL:ORDER:NX:PRECISION of each profile (PROFILES= to choose others)
for spec in ${PROFILES:-g7_f64:7:32:float64 g14_f64:14:16:float64}; do p $(echo "$spec" | tr ':' ' '); done
[ -n "${SKIP_BENCH:-}" ] || for c in "7 32 float64" "14 16 float64" "7 32 float32" "14 16 float32"; do
  set -- $c
  for form in split galerkin; do
    timeout 150 python3 -m lobatto bench maxwell --backend cuda --curved --volume-form $form --order $1 \
      --elements $2 $2 $2 --precision $3 --no-kernels --copy-bytes 0 --json "$OUT/bench_${form}_n$1_$3.json" \
      > "$OUT/bench_${form}_n$1_$3.log" 2>&1
    echo "bench $form N=$1 $3: $(grep -E 'time per step|point-stage' "$OUT/bench_${form}_n$1_$3.log" | tr -s ' ' | tr '\n' ' ')"
  done
done
for f in "$OUT"/*.details.txt; do
  echo "== $f"; grep -E "Duration|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Dynamic Shared|Executed Ipc A|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|FP64" "$f" | head -30
done
# the device hands back only a few files: one archive of the text reports, nothing else
(cd "$OUT" && tar czf galerkin_profiles.tgz $(ls *.details.txt *.metrics.csv *.log *.json device.txt 2>/dev/null) \
  && rm -f *.details.txt *.metrics.csv *.log *.json *.ncu-rep)
