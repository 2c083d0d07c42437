#!/bin/bash
# The turbulent channel at Re_tau = 180 (examples/channel180.toml) on one GPU, chained across
# device calls of at most 10 minutes: each call runs chunks of simulated time, each chunk a
# `lobatto run` that ends cleanly at its own t_end (statistics file and final checkpoint
# written), continued by the next with --restart latest. The averages live in the checkpoints
# ([output.statistics] state), so every chunk's NAME_statistics.h5 holds the whole window
# from [output.statistics] start to the chunk's end.
#
# Usage (device machine, repository root):
#   OUT=dir BUDGET_S=540 bash benchmarks/channel180_device.sh
# env:
#   BUDGET_S   wall seconds this call may use (default 540: the 600 s call limit less margin)
#   T_END      simulated time to reach over all calls (default 300, the example's t_end)
#   RUN_DIR    the run's output directory (default channel180_out, git-ignored: it stays on a
#              warm device machine between calls; its checkpoint (~270 MB) is too big to carry)
#   CASE       the case (default examples/channel180.toml); RATE seconds per time unit to
#              assume for the first chunk (default: measured by a first chunk of FIRST time units)
#   FIRST      time units of the first chunk when the rate is unknown (default 5)
#   BACKEND    cuda (default); cpu to try the chain on a tiny case (CASE=...)
# Leaves under $OUT: chunk_<t_end>/ (statistics .h5/.csv, summary.json, the last step lines),
# rate.txt, and benchmarks/channel180.py's table of the newest statistics (channel180.json/.png).
set -u
export PYTHONPATH=src
OUT=${OUT:-out}; mkdir -p "$OUT"
BUDGET_S=${BUDGET_S:-540}; T_END=${T_END:-300}; RUN_DIR=${RUN_DIR:-channel180_out}
CASE=${CASE:-examples/channel180.toml}; FIRST=${FIRST:-5}; RATE=${RATE:-}
START=$(date +%s)
BACKEND=${BACKEND:-cuda}
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/device.txt"
[ -f "$RUN_DIR/rate.txt" ] && [ -z "$RATE" ] && RATE=$(cat "$RUN_DIR/rate.txt")

checkpoint_time() {  # the newest checkpoint's time in $RUN_DIR, 0 without one
  python3 - "$RUN_DIR" <<'EOF'
import sys
from lobatto.io.checkpoint import Checkpoint
from lobatto.io.checkpoint_dir import find_checkpoints
found = find_checkpoints(sys.argv[1], "channel180")
print(Checkpoint(found[-1][1]).attrs["time"] if found else 0.0)
EOF
}

while :; do
  now=$(date +%s); left=$((BUDGET_S - (now - START)))
  t0=$(checkpoint_time)
  # the chunk's simulated time: what fits in the time left (less 60 s of start-up and writing)
  chunk=$(python3 -c "
t0, t_end, left, rate, first = $t0, $T_END, $left, '${RATE}', $FIRST
span = first if not rate else 0.85 * (left - 60) / float(rate)
print(f'{min(span, t_end - t0):.3f}')")
  if python3 -c "import sys; sys.exit(0 if $chunk > 0.05 and $left > 90 else 1)"; then :; else break; fi
  t_next=$(python3 -c "print(f'{$t0 + $chunk:.3f}')")
  sed "s/^t_end = .*/t_end = $t_next/" "$CASE" > "$OUT/case_$t_next.toml"
  restart=(); [ "$(python3 -c "print($t0 > 0)")" = "True" ] && restart=(--restart latest --overwrite)
  echo "chunk: t = $t0 -> $t_next ($left s left, rate ${RATE:-unknown} s per time unit)"
  begin=$(date +%s)
  timeout -s TERM $((left - 15)) python3 -m lobatto run "$OUT/case_$t_next.toml" --backend "$BACKEND" -o "$RUN_DIR" \
    --quiet "${restart[@]}" > "$OUT/chunk_$t_next.log" 2>&1
  rc=$?; took=$(( $(date +%s) - begin ))
  tail -4 "$OUT/chunk_$t_next.log"
  mkdir -p "$OUT/chunk_$t_next"
  cp "$RUN_DIR"/channel180_statistics.* "$RUN_DIR/summary.json" "$OUT/chunk_$t_next/" 2>/dev/null
  tail -50 "$RUN_DIR/steps.jsonl" > "$OUT/chunk_$t_next/steps_tail.jsonl" 2>/dev/null
  if [ $rc -ne 0 ]; then echo "chunk ended with exit $rc after $took s"; break; fi
  RATE=$(python3 -c "print(f'{$took / $chunk:.4f}')"); echo "$RATE" > "$RUN_DIR/rate.txt"; echo "$RATE" > "$OUT/rate.txt"
done
python3 benchmarks/channel180.py "$RUN_DIR/channel180_statistics.h5" --json "$OUT/channel180.json" \
  --plot "$OUT/channel180.png" 2>&1 | tee "$OUT/channel180_table.txt"
