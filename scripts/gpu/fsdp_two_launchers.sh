#!/usr/bin/env bash
# Two torchrun launchers on one host, as two "nodes" would run them: each launcher has NPROC ranks and its
# own devices (CUDA_VISIBLE_DEVICES split: launcher 0 the first NPROC GPUs, launcher 1 the next NPROC), they
# meet through a c10d rendezvous on localhost, so every cross-launcher path (rendezvous, the store's control
# plane, rank agreement, gathering to rank 0, clock alignment by matched collectives) is the multi-node one.
#
#   NCCL_NVLS_ENABLE=0 scripts/gpu/fsdp_two_launchers.sh                  # 4 GPUs: 2 launchers x 2 ranks, baseline
#   SELECT="baseline or explicit_prefetch" scripts/gpu/fsdp_two_launchers.sh --override training.steps=20
#   NET=1 scripts/gpu/fsdp_two_launchers.sh    # NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1: the network transport
#   DEVICE=cpu NPROC=1 scripts/gpu/fsdp_two_launchers.sh   # CPU, gloo: what tests/fsdp/test_scale_cpu.py runs
#
# NCCL sees both launchers on one host and still uses NVLink between them unless NET=1. Writes
# $OUT/two_launchers.json (rank 0's pytest-benchmark JSON), $OUT/two_launchers_node{0,1}.log and
# $OUT/artifacts_two_launchers/; exit code 0 only when both launchers exit 0. Extra arguments go to pytest.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$(pwd)/reports/gpu-two-launchers}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
NPROC=${NPROC:-2}
DEVICE=${DEVICE:-auto}
SELECT=${SELECT:-baseline}
PORT=${PORT:-$(( 29500 + RANDOM % 1000 ))}
LIMIT=${LIMIT:-300}
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
if [ "${NET:-0}" = 1 ]; then export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1; fi

launcher() {  # launcher NODE_RANK VISIBLE_DEVICES PYTEST_ARGS...
  local node=$1 visible=$2; shift 2
  local env=()
  [ -n "$visible" ] && env=(env "CUDA_VISIBLE_DEVICES=$visible" "HIP_VISIBLE_DEVICES=$visible")
  timeout "$LIMIT" "${env[@]}" "$PY" -m torch.distributed.run --nnodes 2 --node_rank "$node" \
    --nproc_per_node "$NPROC" --rdzv-backend c10d --rdzv-endpoint "localhost:$PORT" --rdzv-id "aorta-$PORT" \
    -m pytest benchmarks/fsdp -k "$SELECT" -p no:cacheprovider -p no:randomly -rA --aorta-device "$DEVICE" \
    --benchmark-json="$OUT/two_launchers.json" --aorta-artifacts="$OUT/artifacts_two_launchers" \
    --aorta-dist-timeout 120 "$@" > "$OUT/two_launchers_node$node.log" 2>&1
}
visible0="" visible1=""
if [ "$DEVICE" != cpu ]; then
  visible0=$(seq -s, 0 $(( NPROC - 1 )))
  visible1=$(seq -s, "$NPROC" $(( 2 * NPROC - 1 )))
fi
start=$(date +%s)
launcher 0 "$visible0" "$@" & pid0=$!
launcher 1 "$visible1" "$@" & pid1=$!
wait "$pid0"; rc0=$?
wait "$pid1"; rc1=$?
echo "two launchers (2 x $NPROC ranks, rendezvous localhost:$PORT): node0 rc $rc0, node1 rc $rc1, $(( $(date +%s) - start )) s"
grep -hE "passed|failed|^FAILED|^ERROR" "$OUT"/two_launchers_node*.log | tail -6
[ "$rc0" = 0 ] && [ "$rc1" = 0 ]
