#!/usr/bin/env bash
# Proof that the gate sees overlap (issue 15), on two GPUs, FSDP `baseline` scenario:
#   0. one warm-up run, neither saved nor compared, so one-time start-up stays out of the baseline (in one
#      call on 2x H200 the first run read an overlap ratio of 0.48 and exposed wait 22 ms per step against
#      0.74-0.83 and 1-3 ms for every later run; in the next call the warm-up run read 0.77, like the rest);
#   1. two runs saved as one baseline (two separate processes: the gate needs their spread);
#   2. two A/A runs of the same code compared with it          -> expected: no SLOWER, exit 0;
#   3. one run with CUDA_DEVICE_MAX_CONNECTIONS=1 compared      -> expected: SLOWER on the overlap ratio, exit 10.
# Each run: torchrun --nproc_per_node 2 -m pytest benchmarks/fsdp -k baseline (10 timed + 10 profiled steps;
# the compute-only reference is off to keep the script within its budget). pytest's own exit code is taken
# per rank (torchrun itself reports any non-zero child as 1). Prints per run its wall time, and last a table:
# per-rank figures, wait vs transfer per step, straggler, verdict lines and exit codes.
# Knobs (environment): OUT (artifacts/gate_overlap), AORTA_PROOF_BUDGET_S (400: runs that would start past
# it are not started, and the summary says so), AORTA_PROOF_RUNS (the runs to make, default
# "warm base1 base2 aa1 aa2 conn1"), AORTA_PROOF_BASELINE_FROM (a baselines folder saved by an earlier call, for
# a call that saves none), PYTHON (python3). Extra arguments go to every pytest.
# The conn1 run changes a scheduling setting on purpose, so it names it (--aorta-allow-env-diff): without,
# the gate refuses the comparison with exit 14 before any GPU work.
# Files in $OUT: summary.txt, env.txt, proof.tar.gz (logs, run JSON, verdict JSON, per-rank JSONL).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/artifacts/gate_overlap}
PY=${PYTHON:-python3}
BUDGET_S=${AORTA_PROOF_BUDGET_S:-400}
RUNS=" ${AORTA_PROOF_RUNS:-warm base1 base2 aa1 aa2 conn1} "
WORK="$OUT/work"
rm -rf "$WORK"
mkdir -p "$WORK/rc"
[ -n "${AORTA_PROOF_BASELINE_FROM:-}" ] && { cp -r "$AORTA_PROOF_BASELINE_FROM" "$WORK/baselines" || exit 2; }
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on the lent machines
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
t_start=$(date +%s)

{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader 2>/dev/null || true
  "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version() if torch.cuda.is_available() else None)"
} | tee "$OUT/env.txt"

last_s=0
run() {  # run LABEL [ENV=VALUE ...] -- PYTEST_ARGS...: one torchrun launch; pytest's exit code per rank
  local label=$1; shift
  case "$RUNS" in *" $label "*) ;; *) return 0 ;; esac
  local envs=()
  while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local now; now=$(date +%s)
  if (( now - t_start + last_s > BUDGET_S )); then
    echo "$label: NOT RUN: $(( now - t_start )) s spent, the last run took ${last_s} s, budget ${BUDGET_S} s" \
      | tee -a "$WORK/not_run.txt"
    return 0
  fi
  echo "+ ${envs[*]} torchrun --nproc_per_node 2 -m pytest benchmarks/fsdp -k baseline $*" | tee "$WORK/$label.log"
  # shellcheck disable=SC2016  # the single-quoted script is expanded by the rank's own shell
  env "${envs[@]}" timeout 300 "$PY" -m torch.distributed.run --standalone --nproc_per_node 2 --no-python \
    sh -c '"$0" -m pytest "$@"; rc=$?; echo "$rc" > "'"$WORK"'/rc/'"$label"'.rank$RANK"; exit "$rc"' "$PY" \
    benchmarks/fsdp -k baseline -p no:cacheprovider -q --aorta-dist-timeout 120 \
    --override profiling.reference=false \
    --aorta-baseline-dir="$WORK/baselines" --aorta-artifacts="$WORK/art_$label" \
    --benchmark-json="$WORK/$label.json" "$@" >> "$WORK/$label.log" 2>&1
  local trc=$?
  last_s=$(( $(date +%s) - now ))
  echo "torchrun $trc" > "$WORK/rc/$label.torchrun"
  echo "$label: pytest exit $(cat "$WORK/rc/$label.rank0" 2>/dev/null || echo '?') (rank 0), torchrun exit $trc, ${last_s} s"
  rm -rf "$WORK/art_$label/torch_profiler"  # traces: hundreds of MB; the figures are in the JSON
}

run warm -- "$@"
run base1 -- --aorta-save-baseline=gate-overlap "$@"
run base2 -- --aorta-save-baseline=gate-overlap "$@"
for i in 1 2; do
  run "aa$i" -- --aorta-compare=gate-overlap --aorta-verdict-json="$WORK/aa$i.verdict.json" "$@"
done
run conn1 CUDA_DEVICE_MAX_CONNECTIONS=1 -- --aorta-compare=gate-overlap \
  --aorta-allow-env-diff=CUDA_DEVICE_MAX_CONNECTIONS --aorta-verdict-json="$WORK/conn1.verdict.json" "$@"
echo "all runs: $(( $(date +%s) - t_start )) s"

PYTHONPATH=$PWD "$PY" - "$WORK" > "$OUT/summary.txt" 2>&1 <<'PY'
import json, os, sys
from aorta.fsdp.breakdown_text import breakdown_lines
from aorta.record import record_of
from aorta.table import format_table

work = sys.argv[1]
LABELS = ["warm", "base1", "base2", "aa1", "aa2", "conn1"]
EXPECT = {"warm": "exit 0, not saved", "aa1": "no SLOWER, exit 0", "aa2": "no SLOWER, exit 0", "conn1": "SLOWER on overlap_ratio_worst_rank, exit 10"}
FIGS = ["overlap_ratio_worst_rank", "exposed_transfer_ms_worst_rank", "exposed_wait_ms_worst_rank",
        "comm_busy_ms_worst_rank", "compute_busy_ms_worst_rank", "step_ms"]


def read(path):
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return "?"


def bench(label):
    try:
        doc = json.load(open(os.path.join(work, f"{label}.json")))
    except (OSError, ValueError):
        return None
    return next((b for b in doc["benchmarks"] if "baseline" in b["name"]), None)


rows, per_step = [], []
for label in LABELS:
    b = bench(label)
    if b is None:
        print(f"{label}: no benchmark JSON (see its log)")
        continue
    rec = record_of(b)
    m = rec.metrics
    rows.append([label] + [f"{m[f].value:.4g}" if f in m and m[f].value is not None else "n/a" for f in FIGS])
    print(f"--- {label}: per rank (median profiled step)")
    for line in breakdown_lines(rec):
        print(f"  {line}")
    for rank, steps in sorted((rec.get("per_rank_steps") or {}).items()):
        for s in steps:
            per_step.append([label, rank, s["step"], f"{s['transfer_ms']:.2f}", f"{s['wait_ms']:.2f}",
                             f"{s['exposed_transfer_ms']:.2f}", f"{s['exposed_wait_ms']:.2f}",
                             f"{s['overlap_ratio']:.3f}" if s["overlap_ratio"] is not None else "n/a"])
print("\nwait vs transfer per step (ms):")
for line in format_table(["run", "rank", "step", "transfer", "wait", "exposed transfer", "exposed wait",
                          "overlap ratio"], per_step):
    print(line)
print("\nverdicts:")
for label in ["aa1", "aa2", "conn1"]:
    try:
        doc = json.load(open(os.path.join(work, f"{label}.verdict.json")))
    except (OSError, ValueError):
        print(f"{label}: no verdict file")
        continue
    for c in doc["comparisons"]:
        print(f"{label}: {c['summary']} (expected: {EXPECT[label]})")
        for v in c["verdicts"]:
            if v["outcome"] != "SAME" or v["metric"] == "overlap_ratio_worst_rank":
                print(f"  {v['metric']}: {v['outcome']}: {v['reason']}")
print("\nfigures (worst rank per step, median over steps):")
for line in format_table(["run", *FIGS], rows):
    print(line)
print("\nexit codes (pytest rank 0 / rank 1 / torchrun), expected:")
for label in LABELS:
    rc = [read(os.path.join(work, "rc", f"{label}.rank{r}")) for r in (0, 1)]
    print(f"  {label}: {rc[0]} / {rc[1]} / {read(os.path.join(work, 'rc', f'{label}.torchrun'))}"
          f"   expected: {EXPECT.get(label, 'exit 0, baseline saved')}")
nr = os.path.join(work, "not_run.txt")
if os.path.exists(nr):
    print("\n" + read(nr))
PY
tar -czf "$OUT/proof.tar.gz" -C "$WORK" . && rm -rf "$WORK"
echo "script: $(( $(date +%s) - t_start )) s in all; files: $OUT/summary.txt $OUT/env.txt $OUT/proof.tar.gz"
cat "$OUT/summary.txt"
