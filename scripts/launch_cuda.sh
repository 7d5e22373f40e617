#!/usr/bin/env bash
# Run the FSDP suite under torchrun on every visible NVIDIA GPU. See --help.
set -euo pipefail
SCRIPT_NAME=launch_cuda.sh
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/common.sh
. "$here/lib/common.sh"

usage() {
    cat <<'USAGE'
usage: scripts/launch_cuda.sh [--dry-run] [--nproc N] [pytest arguments...]

Runs `torchrun --standalone --nproc_per_node N -m pytest benchmarks/fsdp [pytest arguments...]`
from the repository root, one process per visible NVIDIA GPU.

N (processes per node), first that applies:
  --nproc N or AORTA_NPROC=N
  the entries of CUDA_VISIBLE_DEVICES, when it is set
  the GPUs that `nvidia-smi -L` lists
  1, when none of these can tell (with a warning)

Scheduling environment, exported only where you have not set it yourself:
  CUDA_DEVICE_MAX_CONNECTIONS=32  hardware work queues per device (CUDA default 8): fewer false
                                  dependencies between the compute and communication streams
  TORCH_NCCL_HIGH_PRIORITY=1      NCCL communication streams at high priority
NCCL_NVLS_ENABLE and the other NCCL_* settings are left as you set them (set NCCL_NVLS_ENABLE=0 where
NVLink SHARP must stay off).

Options:
  --dry-run        print the environment and the command, run nothing (also AORTA_DRY_RUN=1)
  --nproc N        processes per node (overrides detection)
  -h, --help       this text
  TORCHRUN_ARGS    extra torchrun arguments (default: --standalone)
  PYTHON           interpreter used when torchrun is not on PATH (default python3)

Exit codes: 0 success or dry run; 2 bad usage; 127 torchrun (PyTorch) not found; otherwise
rank 0's pytest exit code (1 tests failed, 4 usage error, 5 nothing collected, the gate's 10-14), through
`python3 -m aorta torchrun` where PYTHON imports aorta; plain torchrun (used otherwise) exits 1 for any of them.
USAGE
}

dry_run=0
dry_run_from_env && dry_run=1
nproc=${AORTA_NPROC:-}
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --dry-run) dry_run=1; shift ;;
        --nproc) [ $# -ge 2 ] || die_usage "--nproc needs a number"; nproc=$2; shift 2 ;;
        --nproc=*) nproc=${1#--nproc=}; shift ;;
        --) shift; break ;;
        *) break ;;
    esac
done

detect_source=""
if [ -n "$nproc" ]; then
    if ! [[ "$nproc" =~ ^[1-9][0-9]*$ ]]; then
        die_usage "--nproc / AORTA_NPROC must be a whole number >= 1, got '$nproc'"
    fi
    detect_source="--nproc / AORTA_NPROC"
elif [ -n "${CUDA_VISIBLE_DEVICES+x}" ]; then
    nproc=$(count_device_list "$CUDA_VISIBLE_DEVICES")
    detect_source="CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
elif command -v nvidia-smi >/dev/null 2>&1; then
    nproc=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
    detect_source="nvidia-smi -L"
fi
if ! [[ "$nproc" =~ ^[0-9]+$ ]] || [ "$nproc" -lt 1 ]; then
    echo "$SCRIPT_NAME: could not count visible GPUs (${detect_source:-no CUDA_VISIBLE_DEVICES, no nvidia-smi}); using 1 process" >&2
    nproc=1
    detect_source="fallback"
fi

default_env CUDA_DEVICE_MAX_CONNECTIONS 32
default_env TORCH_NCCL_HIGH_PRIORITY 1

if command -v torchrun >/dev/null 2>&1; then
    launcher=(torchrun)
elif "${PYTHON:-python3}" -c "import torch.distributed.run" >/dev/null 2>&1; then
    launcher=("${PYTHON:-python3}" -m torch.distributed.run)
else
    launcher=()
fi
read -r -a torchrun_args <<<"${TORCHRUN_ARGS:---standalone}"
if [ ${#launcher[@]} -gt 0 ] && "${PYTHON:-python3}" -c "import aorta.launch.torchrun, torch.distributed.run" >/dev/null 2>&1; then
    launcher=("${PYTHON:-python3}" -m aorta torchrun)  # torchrun that exits with rank 0's pytest code
fi
cmd=("${launcher[@]:-torchrun}" "${torchrun_args[@]}" --nproc_per_node "$nproc" -m pytest benchmarks/fsdp "$@")

cd "$here/.."
echo "$SCRIPT_NAME: $nproc process(es) per node (from $detect_source)" >&2
for line in "${ENV_REPORT[@]}"; do echo "$SCRIPT_NAME: $line" >&2; done
if [ "$dry_run" = 1 ]; then
    [ ${#launcher[@]} -eq 0 ] && echo "$SCRIPT_NAME: note: torchrun is not installed here" >&2
    echo "dry run, would run: $(show_cmd "${cmd[@]}")"
    exit 0
fi
[ ${#launcher[@]} -gt 0 ] || tool_missing "torchrun not found: neither torchrun on PATH nor torch.distributed.run in ${PYTHON:-python3} (install PyTorch)"
exec "${cmd[@]}"
