#!/bin/bash
# Usage (on a GPU machine, from the repository root, with the old tree unpacked by
#   mkdir -p .baseline && git archive d50470a src | tar -x -C .baseline): OUT=out bash benchmarks/run_compare_trees_gpu.sh
# lobatto run of one GPU case with the old and the new tree, alternating; prints seconds_per_step
cat > /tmp/big.toml <<'CASE'
[mesh]
elements = [32, 32, 32]
[mesh.deform]
x = "0.05*sin(pi*x)*sin(pi*y)*sin(pi*z)"
[discretization]
order = 7
[initial]
Ez = "sin(pi*x)*sin(pi*y)"
[time]
t_end = 0.25
[output]
formats = []
[backend]
name = "cuda"
CASE
for round in 1 2; do
  for tree in old new; do
    if [ $tree = old ]; then src=$PWD/.baseline/src; else src=$PWD/src; fi
    rm -rf /tmp/o_$tree$round
    PYTHONPATH=$src python3 -m lobatto run /tmp/big.toml -o /tmp/o_$tree$round -q > /dev/null 2>$OUT/err_$tree$round.txt
    python3 - $tree $round /tmp/o_$tree$round/summary.json <<'PY'
import json, sys
s = json.load(open(sys.argv[3]))
print(sys.argv[1], sys.argv[2], "s/step %.5e" % s["seconds_per_step"], "steps", s["steps"], "rate_steps", s["rate_steps"], "pt-steps/s %.4e" % s["point_steps_per_second"], "graph", s["cuda_graph"])
PY
  done
done
