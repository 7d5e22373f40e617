#!/usr/bin/env bash
# Scale proof on one 4-GPU host (nvidia-h200-x4 / nvidia-h100-x4), within 600 s:
#   1. fsdp4    the FSDP suite at 4 ranks (-k "not compile": collective sweep, known-answer test, scenarios)
#   1b. large   the baseline scenario with config/large.yaml (a model that fills the GPUs): peak memory, step
#   2. fsdp2    the FSDP suite at 2 ranks (the 2-rank side of the scaling view; FSDP2_SELECT narrows it)
#   3. tp2, tp4 the fsdp_tp benchmark (real collectives) at 2 and 4 ranks, bf16, 2/4/16 streams
#   4. two      two torchrun launchers of 2 ranks each, c10d rendezvous on localhost (TWO_SELECT: sweep +
#               baseline unless named; "not compile" gives every scenario across the two launchers)
#   4b. bind4   explicit_prefetch at 4 ranks, each bound to its GPU's NUMA node (torchrun --numa-binding node)
#   5. aorta report of fsdp2 vs fsdp4 (the world-size scaling view), then a short table, printed last.
# Each step is cut at its own limit and at what is left of BUDGET (default 570 s). Every step at its full size
# does not fit one device call (600 s): run it as two calls on one warm machine, SKIP="tp2 tp4 two bind4" then
# SKIP="fsdp4 large fsdp2 report". Writes under $OUT: the
# rank-0 JSONs, steps.tsv (step, exit code, seconds), summary.txt, and scale_proof_logs.tar.gz (logs,
# per-rank JSONL, the report; profiler traces left out): 9 files, one more than a device call brings back, so
# there run it with OUT=/tmp/sp and `tar czf $OUT/scale.tgz -C /tmp sp` after.
#
#   NCCL_NVLS_ENABLE=0 OUT=/tmp/out scripts/gpu/scale_proof.sh
#   DRY=1 scripts/gpu/scale_proof.sh                       # print the commands only
#   SKIP="fsdp4 large" scripts/gpu/scale_proof.sh          # the steps not named run (a later call's rest)
#   DEVICE=cpu NPROC=2 FSDP_SELECT=baseline scripts/gpu/scale_proof.sh   # CPU (gloo) smoke of the whole path
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$(pwd)/reports/gpu-scale}
mkdir -p "$OUT"
# Logs and per-rank files go to a scratch folder, tarred into $OUT at the end: only ~16 files come back.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/aorta-scale.XXXXXX")
PY=${PYTHON:-python3}
NPROC=${NPROC:-4}
HALF=$(( NPROC / 2 ))
DEVICE=${DEVICE:-auto}
BUDGET=${BUDGET:-570}
FSDP_SELECT=${FSDP_SELECT:-not compile}
FSDP2_SELECT=${FSDP2_SELECT:-$FSDP_SELECT}
TWO_SELECT=${TWO_SELECT:-sweep or baseline}
TWO_LIMIT=${TWO_LIMIT:-120}
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
PYTHONPATH="$(pwd)${PYTHONPATH:+:$PYTHONPATH}"  # this checkout's aorta, installed or not
export PYTHONPATH
start=$(date +%s)
: > "$OUT/steps.tsv"

step() {  # step NAME LIMIT_S COMMAND...
  local name=$1 limit=$2; shift 2
  case " ${SKIP:-} " in *" $name "*) echo "$name: skipped (SKIP)" | tee -a "$OUT/steps.tsv"; return 0 ;; esac
  local left=$(( BUDGET - ($(date +%s) - start) ))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "${DRY:-0}" = 1 ]; then echo "[$name, ${limit}s] $*"; return 0; fi
  if [ "$limit" -lt 15 ]; then
    echo "$name: not run, ${left}s of the ${BUDGET}s budget left" | tee -a "$OUT/steps.tsv"; return 0
  fi
  local t0; t0=$(date +%s)
  timeout "$limit" "$@" > "$WORK/$name.log" 2>&1
  local rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" | tee -a "$OUT/steps.tsv"
  return 0
}
TR=("$PY" -m torch.distributed.run --standalone --nproc_per_node)  # then: N -m pytest ...
PT=(-m pytest -p no:cacheprovider -p no:randomly -rA --aorta-device "$DEVICE" --aorta-dist-timeout 120)

[ "${DRY:-0}" = 1 ] || { nvidia-smi topo -m 2>/dev/null || true; "$PY" -c "import torch; print('torch', torch.__version__, 'nccl', torch.cuda.nccl.version() if torch.cuda.is_available() else None)"; } > "$WORK/env.txt" 2>&1

step fsdp4 270 "${TR[@]}" "$NPROC" "${PT[@]}" benchmarks/fsdp -k "$FSDP_SELECT" \
  --benchmark-json="$OUT/fsdp4.json" --aorta-artifacts="$WORK/art_fsdp4"
# The large configuration (config/large.yaml, issue 26 item 6): does it fill the GPUs (peak memory, step)?
step large 150 "${TR[@]}" "$NPROC" "${PT[@]}" benchmarks/fsdp -k "scenario and baseline" \
  --aorta-config config/large.yaml --benchmark-json="$OUT/large.json" --aorta-artifacts="$WORK/art_large"
step fsdp2 240 "${TR[@]}" "$HALF" "${PT[@]}" benchmarks/fsdp -k "$FSDP2_SELECT" \
  --benchmark-json="$OUT/fsdp2.json" --aorta-artifacts="$WORK/art_fsdp2"
for n in "$HALF" "$NPROC"; do
  step "tp$n" 60 "${TR[@]}" "$n" "${PT[@]}" benchmarks/hw_queue/test_fsdp_tp.py -k bf16 --aorta-streams 2,4,16 \
    --benchmark-json="$OUT/fsdp_tp$n.json"
done
step two "$TWO_LIMIT" env OUT="$WORK/two" NPROC="$HALF" DEVICE="$DEVICE" SELECT="$TWO_SELECT" \
  LIMIT=$(( TWO_LIMIT - 10 )) \
  bash scripts/gpu/fsdp_two_launchers.sh
[ "${DRY:-0}" = 1 ] || cp "$WORK/two/two_launchers.json" "$OUT/two_launchers.json" 2>/dev/null
# explicit_prefetch again with each rank bound to the CPUs of its GPU's NUMA node (torchrun --numa-binding,
# torch >= 2.9): if the straggler of issue 26 goes away, the harness's unbound ranks were the cause.
if [ "$DEVICE" = cpu ]; then
  echo "bind4: not run on CPU (--numa-binding binds to the GPUs' nodes)" | tee -a "$OUT/steps.tsv"
elif [ "${DRY:-0}" = 1 ] || "$PY" -m torch.distributed.run --help 2>/dev/null | grep -q -- --numa-binding; then
  step bind4 90 "${TR[@]}" "$NPROC" --numa-binding node "${PT[@]}" benchmarks/fsdp -k explicit_prefetch \
    --benchmark-json="$OUT/fsdp4_numa.json" --aorta-artifacts="$WORK/art_bind4"
else
  echo "bind4: not run, this torchrun has no --numa-binding" | tee -a "$OUT/steps.tsv"
fi
step report 40 "$PY" -m aorta report --run "$OUT/fsdp2.json" --label "${HALF}ranks" \
  --run "$OUT/fsdp4.json" --label "${NPROC}ranks" --output "$WORK/report"

[ "${DRY:-0}" = 1 ] && { rm -rf "$WORK"; exit 0; }
tar czf "$OUT/scale_proof_logs.tar.gz" --exclude=torch_profiler -C "$WORK" .
"$PY" scripts/gpu/scale_summary.py "${HALF}ranks=$OUT/fsdp2.json" "${NPROC}ranks=$OUT/fsdp4.json" \
  "${NPROC}ranks_large=$OUT/large.json" "two_launchers=$OUT/two_launchers.json" "${NPROC}ranks_numa_bound=$OUT/fsdp4_numa.json" "tp${HALF}=$OUT/fsdp_tp$HALF.json" "tp${NPROC}=$OUT/fsdp_tp$NPROC.json" \
  > "$OUT/summary.txt" 2>&1
echo "scale proof: $(( $(date +%s) - start )) s; steps (name, exit code, seconds):"
cat "$OUT/steps.tsv"
grep -hE "^(FAILED|ERROR)" "$WORK"/*.log "$WORK"/two/*.log 2>/dev/null | head -8
echo "4-rank breakdown lines (straggler evidence, unresolved splits, busbw against the ceiling):"
grep -hE "straggler|resolvable|busbw from transfer|busbw vs ceiling|^test_fsdp_scenario.*rank [0-9]+: host" \
  "$WORK/fsdp4.log" 2>/dev/null | cut -c1-300 | head -40
cat "$OUT/summary.txt"
"$PY" - "$OUT/large.json" <<'PYEOF'  # the large configuration: memory per GPU and step time
import json, sys
try:
    bench = json.load(open(sys.argv[1]))["benchmarks"][0]["extra_info"]
except (OSError, ValueError, IndexError, KeyError) as exc:
    sys.exit(f"large: no result ({exc})")
m = bench.get("metrics") or {}
val = lambda k: (m.get(k) or {}).get("value")
print(f"large: peak memory {(val('peak_memory_bytes') or 0) / 2**30:.1f} GiB a rank, step {val('step_ms')} ms, "
      f"tokens/s {val('tokens_per_s')}, GPU idle share rank 0 {val('gpu_idle_share_rank0')}")
PYEOF
rm -rf "$WORK"
