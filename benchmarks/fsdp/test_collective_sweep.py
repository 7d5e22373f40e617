"""The machine's collective ceiling: all-gather, reduce-scatter and all-reduce alone, over the message sizes
the scenarios use, busbw as nccl-tests defines it (aorta/fsdp/link_ceiling.py). Runs first in benchmarks/fsdp
(file order), so each scenario after it shows its transfer-time busbw as a share of this ceiling at its
message size (``extra_info["busbw_vs_ceiling"]``). On CPU (gloo): host/gloo figures at tiny sizes.
"""

import pytest

from aorta.fsdp import collective_sweep as sweep
from aorta.fsdp.link_ceiling import ceiling_from_points, size_label
from aorta.record import BenchRecord
from aorta.record.metric import Metric

pytestmark = [pytest.mark.fsdp]

GPU_FIGURES = "device events around K back-to-back collectives per round, slowest rank per round"
CPU_FIGURES = "host/gloo figures: host clock over gloo on CPU at tiny sizes, not a GPU link ceiling"


def test_collective_sweep(dist_env, fsdp_record, fsdp_link_ceiling):
    env = dist_env
    if env.world_size < 2:
        pytest.skip("needs two or more ranks (torchrun --nproc_per_node N, N >= 2): one rank moves no data")
    gpu = env.device.is_gpu
    points = sweep.run_sweep(env, sweep.GPU_SIZES_BYTES if gpu else sweep.CPU_SIZES_BYTES)
    figures_are = GPU_FIGURES if gpu else CPU_FIGURES
    metrics = [
        Metric(
            f"{p['kind']}_busbw_gbps_{size_label(p['message_bytes'])}",
            p["busbw_gbps_median"],
            "GB/s",
            True,
            tuple(p["busbw_gbps"]),
            source=figures_are,
            judged=False,
        )
        for p in points
    ]
    top = max((p for p in points if p["kind"] == "all_reduce"), key=lambda p: p["message_bytes"])
    ceiling = ceiling_from_points(points)
    record = BenchRecord(
        workload="fsdp_collective_sweep",
        backend=env.device.backend,
        timing_method="events_k_batched",
        clock="device_events" if gpu else "host_clock",
        device_ms_per_iteration=top["ms_per_op"],
        headline_metric=f"all_reduce_busbw_gbps_{size_label(top['message_bytes'])}",
        details={
            "category": "training",
            "world_size": env.world_size,
            "comm_library": env.comm_library,
            "figures_are": figures_are,
            "ceiling": ceiling,
            "points": points,
        },
    ).add(*metrics)
    fsdp_link_ceiling(ceiling, figures_are)
    fsdp_record(top["ms_per_op"], record, group="fsdp_collective_sweep")
