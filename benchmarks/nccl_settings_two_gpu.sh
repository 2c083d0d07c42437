#!/usr/bin/env bash
#   bash benchmarks/nccl_settings_two_gpu.sh    (2 GPUs; OUT must name a folder for the logs)
# Each setting: benchmarks/bench_exchange_gpu.py --parts maxwell --points 1e7 under mpiexec -n 2.
# Experiment: NCCL settings that might let the ghost exchange overlap better (1e7 points per GPU).
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=1 CUPY_CACHE_DIR=/tmp/cc
i=0
for setting in "" "NCCL_P2P_USE_CUDA_MEMCPY=1" "NCCL_MAX_NCHANNELS=4" "NCCL_MAX_NCHANNELS=1" "NCCL_PROTO=Simple"; do
  i=$((i+1))
  env_flags=""; [ -n "$setting" ] && { export "$setting"; env_flags="-x ${setting%%=*}"; }
  timeout 150 mpiexec --allow-run-as-root --oversubscribe -x NCCL_NVLS_ENABLE -x PYTHONPATH -x CUPY_CACHE_DIR $env_flags -n 2 \
     python3 benchmarks/bench_exchange_gpu.py --parts maxwell --points 1e7 --json $OUT/env$i.json > $OUT/env$i.txt 2>&1
  echo "[$setting] rc=$? $(grep -E '^ +1.01e\+07' $OUT/env$i.txt)"
  [ -n "$setting" ] && unset "${setting%%=*}"
done
