#!/usr/bin/env bash
# Issue 32 item 2: Nsight Compute profiles of the curved (split-form) Maxwell stage kernel at the
# sizes of the speed targets (N = 7 on 32^3, N = 14 on 16^3; float64 and float32), to explain
# where each missed target's time goes. One stage kernel launch per case is profiled
# (--launch-skip past the warm-up), clocks left alone (--clock-control none).
#   OUT=dir bash benchmarks/profile_split_stage_gpu.sh      (about 4 minutes on an H100)
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/src CUPY_CACHE_DIR=/tmp/lobatto_cupy_cache PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/device.txt"
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats
  --section WarpStateStats --section ComputeWorkloadAnalysis --section SchedulerStats --section InstructionStats"
p() {  # LABEL ORDER NX PRECISION
  local label=$1 n=$2 e=$3 prec=$4
  # the bench without graph replay so that each stage launch is its own kernel for ncu
  timeout 240 ncu --clock-control none --kernel-name regex:maxwell_stage --launch-skip 40 --launch-count 1 \
    $SECTIONS -o "$OUT/$label" -f \
    python3 -m lobatto bench maxwell --backend cuda --curved --order $n --elements $e $e $e \
      --precision $prec --steps 20 --repeats 1 --no-graph --no-kernels --copy-bytes 0 > "$OUT/$label.run.log" 2>&1
  echo "$label rc=$?"
  ncu --import "$OUT/$label.ncu-rep" --page details > "$OUT/$label.details.txt" 2>&1
  ncu --import "$OUT/$label.ncu-rep" --page raw --csv --metrics \
gpu__time_duration.sum,dram__bytes.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,\
sm__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,\
sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,\
launch__shared_mem_per_block_dynamic,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,\
smsp__inst_executed.sum,sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active,\
l1tex__throughput.avg.pct_of_peak_sustained_active,lts__throughput.avg.pct_of_peak_sustained_elapsed \
    > "$OUT/$label.metrics.csv" 2>&1
}
p n7_f64 7 32 float64
p n14_f64 14 16 float64
p n7_f32 7 32 float32
p n14_f32 14 16 float32
# the same sizes timed with graph replay (the figures the targets speak of), in this call
for c in "7 32 float64" "14 16 float64"; do
  set -- $c
  timeout 120 python3 -m lobatto bench maxwell --backend cuda --curved --order $1 --elements $2 $2 $2 \
    --precision $3 --json "$OUT/bench_n$1_$3.json" > "$OUT/bench_n$1_$3.log" 2>&1
  echo "bench N=$1 $3: $(grep -i 'point-stage' "$OUT/bench_n$1_$3.log" | head -3 | tr '\n' ' ')"
done
for f in "$OUT"/*.details.txt; do
  echo "== $f"; grep -E "Duration|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Dynamic Shared|L1/TEX Hit|Executed Ipc A|Issue Slots Busy|No Eligible|One or More Eligible|Warp Cycles Per Issued" "$f" | head -30
done
# the device hands back only a few files: one archive of the text reports
tar czf "$OUT/split_profiles.tgz" -C "$OUT" $(cd "$OUT" && ls *.details.txt *.metrics.csv *.log *.json 2>/dev/null)
