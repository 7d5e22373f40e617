#!/usr/bin/env bash
# Proof of the regression gate on one GPU (H100 / H200):
#   1. save a baseline of the P0 benchmarks, AORTA_GATE_BASELINE_RUNS times (default 2: separate processes,
#      so a SLOWER verdict must also exceed the spread between them);
#   2. N A/A comparisons: the same code run again and compared with the baseline -> no SLOWER verdict;
#   3. N runs with a deliberate ~5% slowdown (--aorta-test-slowdown: real, calibrated extra device work,
#      labelled in extra_info) compared with the baseline -> exit 10 with device time SLOWER every time.
# A/A and slowdown runs are interleaved so that any drift of the GPU over the script hits both alike.
#
# Knobs (environment): AORTA_GATE_N (10), AORTA_GATE_SLOWDOWN (0.05), AORTA_GATE_STREAMS (1,16),
# AORTA_GATE_ROUNDS (20), AORTA_GATE_SELECT (-m p0), AORTA_GATE_BASELINE_RUNS (2), AORTA_GATE_BASELINE_FROM
# (a baselines folder from an earlier call: used as it is, none saved; with AORTA_GATE_FIRST, the number of
# the first A/A and slowdown run, a proof can span calls), AORTA_GATE_BUDGET_S (330: wall-clock budget; if the
# baseline run shows that 2N more runs would not fit, later runs narrow to AORTA_GATE_SUBSET, and the
# summary says so; runs that would start past the budget are not started and the counts say how many ran).
# Logs, run JSON and verdict JSON land in $OUT (default artifacts/gate_aa).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/artifacts/gate_aa}
mkdir -p "$OUT"
N=${AORTA_GATE_N:-10}
SLOWDOWN=${AORTA_GATE_SLOWDOWN:-0.05}
STREAMS=${AORTA_GATE_STREAMS:-1,16}
ROUNDS=${AORTA_GATE_ROUNDS:-20}
read -r -a SELECT <<< "${AORTA_GATE_SELECT:--m p0}"
SUBSET=${AORTA_GATE_SUBSET:-large_gemm or stream_concurrency}
BUDGET_S=${AORTA_GATE_BUDGET_S:-330}
BASELINE_RUNS=${AORTA_GATE_BASELINE_RUNS:-2}
FIRST=${AORTA_GATE_FIRST:-1}
BDIR="$OUT/baselines"
rm -rf "$BDIR"
if [ -n "${AORTA_GATE_BASELINE_FROM:-}" ]; then
  cp -r "$AORTA_GATE_BASELINE_FROM" "$BDIR" || exit 2
  BASELINE_RUNS=0
fi

BASE=(python3 -m pytest benchmarks/hw_queue "${SELECT[@]}" "--aorta-streams=$STREAMS" "--aorta-rounds=$ROUNDS"
      -p no:cacheprovider -q "--aorta-baseline-dir=$BDIR")
NARROW=()
t_start=$(date +%s)

run() {  # run LABEL ARGS...: one pytest process, log in $OUT/LABEL.log, exit code in $OUT/LABEL.rc
  local label=$1; shift
  local cmd=("${BASE[@]}" "${NARROW[@]}" "$@")
  echo "+ ${cmd[*]}" | tee "$OUT/$label.log"
  local t0; t0=$(date +%s)
  "${cmd[@]}" >> "$OUT/$label.log" 2>&1
  local rc=$?
  echo "$rc" > "$OUT/$label.rc"
  echo "  $label: exit $rc in $(( $(date +%s) - t0 )) s"
  return 0
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader 2>/dev/null | tee "$OUT/gpu.txt"

base_s=50  # the duration of one run where no baseline is saved here (a guess, for the budget only)
for b in $(seq 1 "$BASELINE_RUNS"); do
  t0=$(date +%s)
  run "baseline_$b" --aorta-save-baseline=gate-a --benchmark-json="$OUT/baseline_$b.json"
  base_s=$(( $(date +%s) - t0 ))
  if [ "$(cat "$OUT/baseline_$b.rc")" != 0 ]; then
    echo "baseline run $b failed (exit $(cat "$OUT/baseline_$b.rc")); see $OUT/baseline_$b.log"
    tail -30 "$OUT/baseline_$b.log"; exit 1
  fi
done
if (( base_s * (2 * N + 1) > BUDGET_S )); then
  echo "NOTE: the baseline run took ${base_s} s; ${N}+${N} more would pass the ${BUDGET_S} s budget:"
  echo "      the comparison runs are narrowed to -k \"$SUBSET\" (the other baseline benchmarks are listed as missing)"
  NARROW=(-k "$SUBSET")
  echo "narrowed to -k \"$SUBSET\" after a ${base_s} s baseline run" > "$OUT/narrowed.txt"
fi

for i in $(seq "$FIRST" $(( FIRST + N - 1 ))); do
  for kind in aa slow; do
    if (( $(date +%s) - t_start + base_s > BUDGET_S + 30 )); then
      echo "budget reached: stopping before ${kind}_$i"; break 2
    fi
    extra=()
    [ "$kind" = slow ] && extra=("--aorta-test-slowdown=$SLOWDOWN")
    run "${kind}_$i" --aorta-compare=gate-a "--aorta-verdict-json=$OUT/${kind}_$i.verdict.json" \
        --benchmark-json="$OUT/${kind}_$i.json" "${extra[@]}"
  done
done

python3 - "$OUT" "$N" "$SLOWDOWN" "$FIRST" <<'EOF'
import json, sys, glob, os, statistics
out, n, slowdown, first = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])

def load(kind):
    runs = []
    for i in range(first, first + n):
        vpath, rc_path = f"{out}/{kind}_{i}.verdict.json", f"{out}/{kind}_{i}.rc"
        if not os.path.exists(rc_path):
            continue
        rc = int(open(rc_path).read().strip())
        doc = json.load(open(vpath)) if os.path.exists(vpath) else None
        runs.append((i, rc, doc))
    return runs

aa, slow = load("aa"), load("slow")
def verdicts(doc):
    return [] if doc is None else doc["comparisons"][0]["verdicts"]

aa_slower_runs = sum(any(v["outcome"] == "SLOWER" for v in verdicts(d)) for _, _, d in aa)
aa_slower_verdicts = sum(v["outcome"] == "SLOWER" for _, _, d in aa for v in verdicts(d))
slow_flagged = sum(rc == 10 for _, rc, _ in slow)
print()
print(f"A/A runs: {len(aa)} of {n} ran; runs with any SLOWER verdict: {aa_slower_runs} (must be 0); "
      f"SLOWER verdicts in all: {aa_slower_verdicts}; exit codes {[rc for _, rc, _ in aa]}")
print(f"slowdown {slowdown:.0%} runs: {len(slow)} of {n} ran; flagged (exit 10): {slow_flagged} of {len(slow)} "
      f"(must be all); exit codes {[rc for _, rc, _ in slow]}")

# Per benchmark: device time change in A/A (noise floor) and under the slowdown, and SLOWER counts.
rows = {}
for kind, runs in (("aa", aa), ("slow", slow)):
    for _, _, d in runs:
        for v in verdicts(d):
            if v["metric"] != "device_ms":
                continue
            r = rows.setdefault(v["benchmark"].split("::")[-1], {"aa": [], "slow": [], "aa_s": 0, "slow_s": 0})
            r[kind].append(v["change_ratio"] or 0.0)
            r[f"{kind}_s"] += v["outcome"] == "SLOWER"
calib = {}
for path in glob.glob(f"{out}/slow_*.json"):
    if path.endswith(".verdict.json"):
        continue
    for b in json.load(open(path))["benchmarks"]:
        info = b["extra_info"].get("test_slowdown_info") or {}
        calib.setdefault(b["name"], []).append(info.get("calibrated_ratio"))
print()
print(f"{'benchmark':45s} {'A/A max|d|':>10s} {'A/A SLOWER':>10s} {'slow med d':>10s} {'slow SLOWER':>11s} {'calibrated':>10s}")
for name, r in sorted(rows.items()):
    aa_max = max((abs(x) for x in r["aa"]), default=float("nan"))
    slow_med = statistics.median(r["slow"]) if r["slow"] else float("nan")
    cal = [c for c in calib.get(name, []) if c is not None]
    cal_s = f"{statistics.median(cal):+.1%}" if cal else "n/a"
    print(f"{name:45s} {aa_max:>10.1%} {r['aa_s']:>4d}/{len(r['aa']):<5d} {slow_med:>+10.1%} "
          f"{r['slow_s']:>5d}/{len(r['slow']):<5d} {cal_s:>10s}")
aa_bad = [(i, v) for i, _, d in aa for v in verdicts(d) if v["outcome"] == "SLOWER"]
if aa_bad:
    print("\nA/A SLOWER verdicts (false alarms):")
    for i, v in aa_bad:
        print(f"  aa_{i}: {v['benchmark'].split('::')[-1]} [{v['metric']}]: {v['reason']}")
missed = [(i, v) for i, rc, d in slow if rc != 10 for v in verdicts(d) if v["metric"] == "device_ms"]
if missed:
    print("\nslowdown runs not flagged, their device-time verdicts:")
    for i, v in missed:
        print(f"  slow_{i}: {v['benchmark'].split('::')[-1]}: {v['outcome']}: {v['reason']}")
narrowed = f"{out}/narrowed.txt"
if os.path.exists(narrowed):
    print("\nNOTE:", open(narrowed).read().strip())
print(f"\nlogs, run JSON and verdict JSON: {out}")
EOF
echo "wall time: $(( $(date +%s) - t_start )) s"
