#!/usr/bin/env bash
# The performance observatory's two-GPU measurements (issue 16), for a machine with 2 GPUs
# (nvidia-h200-x2); each stage fits in one 600 s device call.
#   bash benchmarks/run_observatory_two_gpu.sh STAGE      STAGE: transfers | model | scaling
# transfers: lobatto sysbench on 1 rank (device STREAM, GEMM, host<->device) and on 2 ranks
#            (GPU<->GPU over NCCL, CUDA-aware MPI where present, host staging in chunks; MPI
#            ping-pong and allreduce), then lobatto doctor on 2 ranks (one GPU each).
# model:     benchmarks/comm_model_validate.py --backend cuda on 1 and 2 GPUs, with the fit from
#            `lobatto bench comm-model --measure --backend cuda` on 2 GPUs, and the model fed the
#            NCCL rows of the sysbench file (--transport nccl).
# scaling:   lobatto bench scaling --weak and --strong on 1 and 2 GPUs.
# Logs, JSON and PNGs go to $OUT (default ./observatory_two_gpu); a short table is printed last.
set -u
STAGE=${1:?stage: transfers, model or scaling}
OUT=${OUT:-$PWD/observatory_two_gpu}
mkdir -p "$OUT"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=1
PY=${PY:-python3}
MPI="mpiexec --allow-run-as-root --oversubscribe -x NCCL_NVLS_ENABLE -x PYTHONPATH -x PYTHONUNBUFFERED -x OMP_NUM_THREADS"
{ date -u; git rev-parse --short HEAD 2>/dev/null; nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
  nvidia-smi topo -m; } > "$OUT/machine_$STAGE.txt" 2>&1
ngpu=$(nvidia-smi -L | wc -l)
if [ "$ngpu" -lt 2 ]; then echo "this machine has $ngpu GPU(s); the stages need 2"; exit 2; fi
case $STAGE in
transfers)
  timeout 200 $PY -m lobatto sysbench --json "$OUT/sysbench_1rank.json" --png "$OUT" > "$OUT/sysbench_1rank.log" 2>&1
  echo "sysbench 1 rank rc=$?"
  timeout 250 $MPI -n 2 $PY -m lobatto sysbench --only gpu_gpu mpi_pingpong mpi_allreduce \
      --json "$OUT/sysbench_2gpu.json" --png "$OUT" > "$OUT/sysbench_2gpu.log" 2>&1
  echo "sysbench 2 ranks rc=$?"
  timeout 100 $MPI -n 2 $PY -m lobatto doctor --json "$OUT/doctor_2gpu.json" > "$OUT/doctor_2gpu.log" 2>&1
  echo "doctor 2 ranks rc=$?"
  tail -30 "$OUT/sysbench_2gpu.log"; tail -25 "$OUT/doctor_2gpu.log" ;;
model)
  timeout 150 $MPI -n 2 $PY -m lobatto bench comm-model --measure --backend cuda --order-points 7 --network none \
      --max-ranks 2 --json "$OUT/comm_model_measure_2gpu.json" > "$OUT/comm_model_measure.log" 2>&1
  echo "measure rc=$?"
  timeout 300 $PY benchmarks/comm_model_validate.py --backend cuda --ranks 1 2 --order 7 --block 16 16 16 \
      --cores 2 --params "$OUT/comm_model_measure_2gpu.json" --json "$OUT/comm_model_validate_2gpu.json" \
      > "$OUT/comm_model_validate.log" 2>&1
  echo "validate rc=$?"
  if [ -f "$OUT/sysbench_2gpu.json" ]; then
    timeout 60 $PY -m lobatto bench comm-model --sysbench "$OUT/sysbench_2gpu.json" --transport nccl \
        --json "$OUT/comm_model_nccl.json" --png "$OUT/comm_model_nccl.png" > "$OUT/comm_model_nccl.log" 2>&1
    echo "model from the NCCL rows rc=$?"
  fi
  tail -8 "$OUT/comm_model_validate.log" ;;
scaling)
  timeout 270 $PY -m lobatto bench scaling --weak --backend cuda --ranks 1 2 --sizes 4096 19683 \
      --json "$OUT/weak_2gpu.json" > "$OUT/weak.log" 2>&1
  echo "weak rc=$?"
  timeout 270 $PY -m lobatto bench scaling --strong --backend cuda --ranks 1 2 --sizes 32768 110592 \
      --json "$OUT/strong_2gpu.json" > "$OUT/strong.log" 2>&1
  echo "strong rc=$?"
  tail -12 "$OUT/weak.log"; tail -12 "$OUT/strong.log" ;;
*) echo "unknown stage $STAGE (transfers, model, scaling)"; exit 2 ;;
esac
