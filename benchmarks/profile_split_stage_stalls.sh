#!/usr/bin/env bash
# Issue 32 item 2: warp-stall breakdown, shared-memory bank conflicts and occupancy of the curved
# (split-form) Maxwell stage kernel at the targets' sizes (N = 7 on 32^3, N = 14 on 16^3, float64),
# one profiled launch each, clocks left alone. Companion of profile_split_stage_gpu.sh.
#   OUT=dir bash benchmarks/profile_split_stage_stalls.sh      (about 1 minute on an H100)
set -u
export PYTHONPATH=$PWD/src CUPY_CACHE_DIR=/tmp/lobatto_cupy_cache
S=smsp__average_warps_issue_stalled
M=""
for r in barrier long_scoreboard short_scoreboard mio_throttle lg_throttle math_pipe_throttle wait not_selected selected dispatch_stall no_instruction membar drain imc_miss tex_throttle sleeping branch_resolving misc; do M="$M,${S}_${r}_per_issue_active.ratio"; done
M="gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active$M"
for c in "7 32 float64" "14 16 float64"; do
  set -- $c
  timeout 200 ncu --clock-control none --kernel-name regex:maxwell_stage --launch-skip 40 --launch-count 1 --metrics $M \
    --csv --page raw python3 -m lobatto bench maxwell --backend cuda --curved --order $1 --elements $2 $2 $2 \
      --precision $3 --steps 20 --repeats 1 --no-graph --no-kernels --copy-bytes 0 > $OUT/stall_n$1.csv 2>&1
  echo "N=$1 rc=$?"
  python3 - $OUT/stall_n$1.csv <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head, units, vals = rows[0], rows[1], rows[-1]
for h, u, v in zip(head, units, vals):
    if "__" in h: print(f"  {h.replace('smsp__average_warps_issue_stalled_','stall:'):70s} {v} {u}")
PY
done
