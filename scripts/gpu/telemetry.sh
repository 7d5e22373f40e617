#!/usr/bin/env bash
# Telemetry on one NVIDIA GPU: a benchmark run with telemetry (NVML), the same through the nvidia-smi
# fallback, their telemetry summary and machine_info read back from the JSON, whether sampling disturbs
# host-bound timing (eager tiny kernels with telemetry off and at 100 ms, alternating, twice each), and
# what the CUDA launch script would run.
# Writes under $OUT: telemetry.json, telemetry.log, telemetry_nvidia_smi.*, tiny_<interval>_<i>.json,
# launch_dry_run.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}

set +e
"$PY" -m pytest benchmarks/hw_queue -k "large_gemm" --aorta-streams=1,4 \
    --benchmark-json="$OUT/telemetry.json" 2>&1 | tee "$OUT/telemetry.log"
rc=${PIPESTATUS[0]}
# The command-line fallback on the same GPU: nvidia-smi instead of NVML (parsers on live output).
"$PY" -m pytest benchmarks/hw_queue -k "large_gemm and bf16" --aorta-streams=4 --aorta-telemetry-source=nvidia-smi \
    --benchmark-json="$OUT/telemetry_nvidia_smi.json" >"$OUT/telemetry_nvidia_smi.log" 2>&1
rc2=$?
set -e
echo "pytest exit code: $rc (NVML run), $rc2 (nvidia-smi run)"

"$PY" - "$OUT/telemetry.json" "$OUT/telemetry_nvidia_smi.json" <<'PY' || echo "could not read $OUT/telemetry.json (see $OUT/telemetry.log)"
import json
import sys

data = json.load(open(sys.argv[1]))
try:
    fallback = json.load(open(sys.argv[2]))["benchmarks"]
except (OSError, ValueError, KeyError):
    fallback = []
mi = data["machine_info"].get("aorta", {})
gpu = mi.get("gpu", {})
print("\n== machine_info (aorta) ==")
for key in ("backend", "gpu_name", "gpu_arch", "driver", "torch", "cuda", "nccl", "hardware_queues", "env"):
    print(f"{key:>16}: {mi.get(key)}")
print(f"{'host':>16}: {mi.get('host')}")
for key in ("source", "pci_bus_id", "driver_version", "cuda_driver_version", "vbios_version", "sm_clock_max_mhz",
            "mem_clock_max_mhz", "power_limit_w", "power_default_limit_w", "ecc_enabled", "persistence_mode",
            "pcie_link_gen_current", "pcie_link_width_current", "telemetry_source", "telemetry_limits"):
    print(f"{'gpu.' + key:>28}: {gpu.get(key)}")
print(f"{'gpu.unavailable':>28}: {gpu.get('unavailable')}")
print("gpu.topology:\n" + str(gpu.get("topology")))

print("\n== telemetry per benchmark ==")
head = (f"{'benchmark':<36} {'src':<10} {'n':>3} {'sm MHz min/med/max':>20} {'mem MHz':>7} "
        f"{'power W min/med/max':>21} {'temp C':>11} {'util%':>5} {'throttled':>9}  causes")
print(head)
for b in data["benchmarks"] + fallback:
    t = b["extra_info"].get("telemetry", {})
    f = t.get("figures", {})

    def mmm(name, f=f):
        v = f.get(name)
        return "-" if not v else f"{v['min']:.0f}/{v['median']:.0f}/{v['max']:.0f}"

    def med(name, f=f):
        v = f.get(name)
        return "-" if not v else f"{v['median']:.0f}"

    thr = f"{t.get('throttled_rounds')}/{t.get('rounds')}" if t.get("rounds") is not None else "n/a"
    print(f"{b['name']:<36} {t.get('source', '?')[:10]:<10} {t.get('samples', 0):>3} {mmm('sm_clock_mhz'):>20} "
          f"{med('mem_clock_mhz'):>7} {mmm('power_w'):>21} {mmm('temperature_c'):>11} {med('gpu_util_pct'):>5} "
          f"{thr:>9}  {t.get('throttle_causes', t.get('reason'))}")
print("\nfull telemetry of the first benchmark:")
print(json.dumps(data["benchmarks"][0]["extra_info"].get("telemetry"), indent=1) if data["benchmarks"] else "none")
PY

echo
echo "== tiny kernels (eager, 1 stream): telemetry off (0) and at 100 ms =="
for i in 1 2; do for iv in 0 100; do
  "$PY" -m pytest benchmarks/hw_queue -k "tiny_kernel and eager" --streams=1 --aorta-telemetry-interval-ms=$iv \
      --benchmark-json="$OUT/tiny_${iv}_$i.json" -p no:cacheprovider -q > /dev/null 2>&1 || true
  "$PY" -c "import json, sys; b = json.load(open(sys.argv[1]))['benchmarks'][0]
print(f\"telemetry {sys.argv[2]:>3} ms, pass {sys.argv[3]}: {b['extra_info']['metrics']['us_per_launch']['value']:.2f} us/launch\")" \
      "$OUT/tiny_${iv}_$i.json" "$iv" "$i" 2>/dev/null || echo "telemetry $iv ms, pass $i: no result"
done; done

echo
echo "== scripts/launch_cuda.sh --dry-run =="
scripts/launch_cuda.sh --dry-run 2>&1 | tee "$OUT/launch_dry_run.txt"
[ "$rc" -ne 0 ] && exit "$rc"
exit "$rc2"
