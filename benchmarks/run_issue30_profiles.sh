#!/usr/bin/env bash
# Issue 30's profiles on two GPUs (nvidia-h100-x2), one device call: where the two-GPU step's
# extra time goes (the pressure solve's parts on 1 and 2 ranks, AMG and PCG coarse solves) and
# the parts of the sub-stepped 24^3 TGV step on one GPU. pyamg comes as a wheel in .whl/.
#   OUT=dir bash benchmarks/run_issue30_profiles.sh    (stops starting runs after $BUDGET s)
set -u
BUDGET=${BUDGET:-230}
OUT=${OUT:-out}; mkdir -p "$OUT/x"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/pyamg .whl/pyamg-*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/pyamg:$PWD/src NCCL_NVLS_ENABLE=0 CUPY_CACHE_DIR=/tmp/lobatto_cupy_cache PYTHONUNBUFFERED=1
export NS_EXCHANGE=auto NS_COARSE=${NS_COARSE:-} LOBATTO_ASSEMBLY_OVERLAP=auto OMP_NUM_THREADS=1
MPI="mpiexec --allow-run-as-root --oversubscribe -x NCCL_NVLS_ENABLE -x PYTHONPATH -x PYTHONUNBUFFERED -x CUPY_CACHE_DIR -x OMP_NUM_THREADS -x NS_EXCHANGE -x NS_COARSE -x LOBATTO_ASSEMBLY_OVERLAP"
r() {  # LABEL RANKS ARGS...
  local label=$1 n=$2; shift 2
  if [ $SECONDS -gt $BUDGET ]; then echo "$label: skipped"; return; fi
  timeout 150 $MPI -n $n python3 benchmarks/ns_weak_scaling.py --backend cuda --label $label \
    --json $OUT/x/$label.json --output /tmp/ws_$label "$@" > $OUT/x/$label.log 2>&1
  echo "$label rc=$? $(tail -n 1 $OUT/x/$label.log)"
}
r weak16_P1 1 --elements 16 16 16 --base 16 --profile
r weak16_P2 2 --elements 32 16 16 --base 16 --profile
if [ $SECONDS -le $BUDGET ]; then
  CUDA_VISIBLE_DEVICES=0 timeout 120 python3 -m lobatto bench navier-stokes --backend cuda --elements 24 \
    --target-cfl 2 --substeps 2 --steps 10 --warmup 10 --json $OUT/x/substeps24.json > $OUT/x/substeps24.log 2>&1
  tail -32 $OUT/x/substeps24.log
fi
NS_COARSE=pcg r weak16pcg_P1 1 --elements 16 16 16 --base 16 --profile
NS_COARSE=pcg r weak16pcg_P2 2 --elements 32 16 16 --base 16 --profile
r weak24_P1 1 --elements 24 24 24 --base 24 --profile
r weak24_P2 2 --elements 48 24 24 --base 24 --profile
python3 benchmarks/ns_weak_scaling.py --report $OUT/x/*.json | tee $OUT/x/report.txt
python3 - "$OUT/x" <<'PY'
import json, sys, glob, os
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*_P*.json"))):
    d = json.load(open(f))
    parts = d.get("pressure_parts") or {}
    print(f"{d['label']:14s} coarse={d.get('coarse')} " + " ".join(f"{k}={v['ms_per_step']:.2f}" for k, v in parts.items()))
PY
tar czf $OUT/profiles.tgz -C $OUT x
