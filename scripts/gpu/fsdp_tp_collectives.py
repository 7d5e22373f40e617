"""fsdp_tp with real collectives: run under torchrun with >= 2 GPUs (NCCL_NVLS_ENABLE=0 on NVIDIA).

Each rank runs the workload through the runner (one-stream check, then timing) on its own GPU;
rank 0 writes $OUT/fsdp_tp_collectives.json and prints the comm label and figures.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch.distributed as dist

from aorta.device import Device
from aorta.runner import run_workload
from aorta.timing import TimingPlan
from aorta.workloads.fsdp_tp import FsdpTp


def main() -> None:
    local = int(os.environ.get("LOCAL_RANK", "0"))
    dev = Device.open("auto", index=local)
    dist.init_process_group("nccl", device_id=dev.torch_device)
    try:
        out = {}
        for n in (2, 4, 16):
            w = FsdpTp(dev, n, size="full")
            res = run_workload(
                dev, w, dev.streams(n), TimingPlan(warmup_rounds=3, rounds=10, iterations_per_round=1)
            )  # same K on every rank
            e = res.extra_info
            out[n] = {
                "comm": e["workload_info"]["comm"],
                "world_size": e["workload_info"]["world_size"],
                "metrics": e["metrics"],
                "device_ms": e["device_ms_per_iteration"],
                "effective_concurrency": e["effective_concurrency"],
            }
            if dist.get_rank() == 0:
                m = e["metrics"]
                print(
                    f"streams={n:<3d} comm={out[n]['comm']} world={out[n]['world_size']} "
                    f"samples/s={m['samples_per_s']['value']:.4g} "
                    f"overlap={m.get('comm_overlap_ratio', {}).get('value')} "
                    f"exposed_ms={m.get('exposed_comm_ms', {}).get('value')}",
                    flush=True,
                )
        if dist.get_rank() == 0 and os.environ.get("OUT"):
            Path(os.environ["OUT"], "fsdp_tp_collectives.json").write_text(json.dumps(out, indent=1))
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
