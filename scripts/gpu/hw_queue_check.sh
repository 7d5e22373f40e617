#!/usr/bin/env bash
# The hardware-queue suite as a user runs it, timed, with the figures that say whether it measured the GPU:
#   1. the default suite (every workload) at AORTA_STREAMS (default 1,4,16) in AORTA_MODE (default: the
#      plugin's default), wall time printed;
#   2. the P0 workloads at 64 and 128 streams;
#   3. the kernel-timeline known answers (N streams read N, one at a time reads 1, depth-first 64 streams
#      agrees with the throughput figure);
# then one table per step (scripts/gpu/summarize.py): mode, device ms, CV, GPU busy share, concurrency,
# distinct streams, headline, reading notes. Logs and JSON under $OUT (default artifacts/hw_queue_check).
# Examples:
#   scripts/gpu/hw_queue_check.sh                       # one H100: about 6 minutes
#   AORTA_MODE=eager AORTA_STEPS=suite scripts/gpu/hw_queue_check.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/artifacts/hw_queue_check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
STEPS=${AORTA_STEPS:-suite,p0_wide,known}
MODE=()
[ -n "${AORTA_MODE:-}" ] && MODE=("--aorta-mode=$AORTA_MODE")
PYTEST=("$PY" -m pytest -p no:cacheprovider -q -rs --tb=line)
failed=0

step() {  # step NAME CMD...: run (at most AORTA_STEP_TIMEOUT s), log in $OUT/NAME.log, exit code and wall time
  local name=$1; shift
  local t0; t0=$(date +%s)
  timeout "${AORTA_STEP_TIMEOUT:-600}" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc after $(( $(date +%s) - t0 )) s wall (log: $OUT/$name.log)"
  [ "$rc" -eq 0 ] || failed=1
  grep -hE "^FAILED|^ERROR" "$OUT/$name.log" | cut -c1-200 | head -10
  return 0
}

case ",$STEPS," in *,suite,*)
  step suite "${PYTEST[@]}" benchmarks/hw_queue -k "not known_answer" "${MODE[@]}" \
      "--aorta-streams=${AORTA_STREAMS:-1,4,16}" --benchmark-json="$OUT/suite.json" ;; esac
case ",$STEPS," in *,p0_wide,*)
  step p0_wide "${PYTEST[@]}" benchmarks/hw_queue -m p0 -k "not known_answer" "${MODE[@]}" --aorta-streams=64,128 \
      --benchmark-json="$OUT/p0_wide.json" ;; esac
case ",$STEPS," in *,known,*)
  step known "${PYTEST[@]}" benchmarks/hw_queue/test_kernel_timeline_known_answer.py -rA --benchmark-disable -s
  grep -E "concurrency|PASSED|FAILED" "$OUT/known.log" | head -12 ;; esac

for name in suite p0_wide; do
  if [ -f "$OUT/$name.json" ]; then
    echo "== $name"
    "$PY" scripts/gpu/summarize.py "$OUT/$name.json"
  fi
done
exit "$failed"
