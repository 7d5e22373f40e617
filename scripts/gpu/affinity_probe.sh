#!/usr/bin/env bash
# Does CPU placement explain the process-to-process spread of eager launch cost (12.8-22 us on the lent H100)?
# Runs the eager tiny_kernel_stress benchmark in fresh processes, interleaving placements:
#   free   - no pinning (the scheduler places the process)
#   local  - pinned to the CPUs local to the GPU (sysfs local_cpulist)
#   core   - pinned to one core of that list
# and prints the per-process µs per launch for each placement.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/artifacts/affinity}
mkdir -p "$OUT"
REPS=${AORTA_PROBE_REPS:-5}
{
  nproc; lscpu | grep -E "Model name|Socket|NUMA|Thread|MHz" ; cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null
} > "$OUT/topology.txt" 2>&1
cat "$OUT/topology.txt"
LIST=$(python3 - <<'PY'
import glob
from aorta.device import Device
bus = Device.open().pci_bus_id()
paths = glob.glob(f"/sys/bus/pci/devices/*:{bus[-7:].lower()}") if bus else []
print(open(f"{paths[0]}/local_cpulist").read().strip() if paths else "")
PY
)
[ -z "$LIST" ] && LIST="0-$(( $(nproc) - 1 ))"
CORE=$(echo "$LIST" | cut -d, -f1 | cut -d- -f1)
CORE=$((CORE + 2))
echo "local list: $LIST; single core: $CORE"
CMD=(python3 -m pytest benchmarks/hw_queue -k "tiny_kernel_stress and eager" --aorta-streams=1,16 --aorta-rounds=10 -q -p no:cacheprovider)
for i in $(seq 1 "$REPS"); do
  for kind in free local core; do
    case $kind in
      free) pre=() ;;
      local) pre=(taskset -c "$LIST") ;;
      core) pre=(taskset -c "$CORE") ;;
    esac
    "${pre[@]}" "${CMD[@]}" --benchmark-json="$OUT/${kind}_$i.json" > "$OUT/${kind}_$i.log" 2>&1
    echo "$kind $i rc $?"
  done
done
python3 - "$OUT" <<'PY'
import json, glob, sys, collections
rows = collections.defaultdict(list)
for path in sorted(glob.glob(f"{sys.argv[1]}/*_*.json")):
    kind = path.rsplit("/", 1)[1].split("_")[0]
    for b in json.load(open(path))["benchmarks"]:
        m = b["extra_info"]["metrics"]["us_per_launch"]["value"]
        rows[(kind, b["extra_info"].get("streams_requested"))].append(m)
for (kind, s), v in sorted(rows.items()):
    print(f"{kind:6s} streams={s:<3} us/launch per process: " + " ".join(f"{x:5.1f}" for x in v)
          + f"   spread {max(v)/min(v)-1:+.0%}")
PY
