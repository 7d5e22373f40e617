#!/usr/bin/env bash
# The same figures before and after a change that must not move them (a refactor): runs of a commit from
# before it (a `git archive` tar of that commit, carried beside the checkout) and runs of this checkout,
# alternating, each a fresh process, on one machine; scripts/gpu/same_figures.py then judges the after runs
# against the before runs with `aorta compare` (an A/A: exit 0, nothing SLOWER or FASTER).
#   git archive -o before.tar <commit>   # untracked, not committed: it travels with the checkout
#   scripts/gpu/same_figures.sh          # one device call; several calls (machines) give more runs a side
# Knobs: AORTA_BEFORE_TAR (before.tar), AORTA_SAME_SUITE (hw_queue or fsdp), AORTA_SAME_RUNS (1: runs a
# side), AORTA_SAME_FIRST (before: which side runs first), AORTA_SAME_TAG (m1: names this call's pools).
# Everything lands in one file, $OUT/same_figures_<tag>.tgz (before/ and after/: gate_pool.sh's pools, the
# runs' JSON and logs; a device call brings back 8 files at most); the runs' lines are printed.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/artifacts/same_figures}
TAR=${AORTA_BEFORE_TAR:-before.tar}
SUITE=${AORTA_SAME_SUITE:-hw_queue}
RUNS=${AORTA_SAME_RUNS:-1}
FIRST=${AORTA_SAME_FIRST:-before}
TAG=${AORTA_SAME_TAG:-m1}
case "$FIRST" in before) ORDER=(before after) ;; after) ORDER=(after before) ;;
  *) echo "AORTA_SAME_FIRST=$FIRST: allowed before, after" >&2; exit 2 ;; esac
[ -f "$TAR" ] || { echo "AORTA_BEFORE_TAR=$TAR: no such file (git archive -o $TAR <commit>)" >&2; exit 2; }
BEFORE=$(mktemp -d)
tar xf "$TAR" -C "$BEFORE" || exit 2
mkdir -p "$OUT"
for k in $(seq 1 "$RUNS"); do
  for side in "${ORDER[@]}"; do
    tree=$PWD; [ "$side" = before ] && tree=$BEFORE
    # each run is a pool of one (gate_pool.sh of that tree: the suite's launch as it was then), order seed k
    (cd "$tree" && OUT="$OUT/$side" AORTA_POOL_TAG="${side}_${TAG}_$k" AORTA_POOL_MAX=1 AORTA_POOL_SEED0="$k" \
      AORTA_POOL_SUITE="$SUITE" bash scripts/gpu/gate_pool.sh > "$OUT/${side}_${TAG}_$k.txt" 2>&1)
    tail -n 1 "$OUT/$side/pool_${side}_${TAG}_$k/runs.txt" 2>/dev/null || echo "$side run $k: no record"
  done
done
(cd "$OUT" && tar czf "same_figures_$TAG.tgz" before after ./*_"$TAG"_*.txt)
rm -rf "${OUT:?}/before" "${OUT:?}/after" "$OUT"/*_"${TAG}"_*.txt
