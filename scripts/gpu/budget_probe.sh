#!/usr/bin/env bash
# Where a p0 run's wall goes on a GPU: one full (check) run, three lean runs, pytest --durations, JSONs.
# Usage (device tool): bash scripts/gpu/budget_probe.sh  (writes under $OUT)
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
out=${OUT:-/tmp/out}; mkdir -p "$out/p"
t() { local s=$(date +%s.%N); "$@"; local rc=$?; echo "WALL $(echo "$(date +%s.%N) - $s" | bc) rc=$rc :: ${*: -1}"; }
t python3 -c "import time; t=time.time(); import torch; a=time.time(); torch.cuda.init(); torch.zeros(1,device='cuda'); print('import', a-t, 'cuda init', time.time()-a)" "probe"
t python3 -m pytest benchmarks/hw_queue -m p0 --durations=60 -q -p no:cacheprovider --benchmark-json=$out/p/full.json > $out/p/full.log 2>&1
for i in 1 2 3; do
t python3 -m pytest benchmarks/hw_queue -m p0 --durations=60 -q -p no:cacheprovider --aorta-lean-run --benchmark-json=$out/p/lean$i.json > $out/p/lean$i.log 2>&1
done
tar czf $out/probe.tgz -C $out p
grep -h -E "passed|failed|error" $out/p/*.log | tail -5
