"""The machine's collective ceiling: all-gather, reduce-scatter and all-reduce alone, over the message sizes
the scenarios use, busbw as nccl-tests defines it (aorta/fsdp/link_ceiling.py). Runs first in benchmarks/fsdp
(file order), so each scenario after it shows its transfer-time busbw as a share of this ceiling at its
message size (``extra_info["busbw_vs_ceiling"]``). On CPU (gloo): host/gloo figures at tiny sizes.

The benchmark's device time is the largest all-reduce's time per operation (the sweep's judged point, timed
last); a gate's lean repeat run times that point only: the ceiling is the check run's.
"""

import pytest

from aorta.fsdp import collective_sweep as sweep
from aorta.fsdp.link_ceiling import ceiling_from_points, size_label
from aorta.fsdp.plugin import LEAN_NO_CEILING
from aorta.record import BenchRecord
from aorta.record.host_phases import HostPhases
from aorta.record.metric import Metric

pytestmark = [pytest.mark.fsdp, pytest.mark.lean_mode]

GPU_FIGURES = "device events around K back-to-back collectives per round, slowest rank per round"
CPU_FIGURES = "host/gloo figures: host clock over gloo on CPU at tiny sizes, not a GPU link ceiling"


def test_collective_sweep(dist_env, fsdp_record, fsdp_link_ceiling, fsdp_lean_run):
    env = dist_env
    if env.world_size < 2:
        pytest.skip("needs two or more ranks (torchrun --nproc_per_node N, N >= 2): one rank moves no data")
    gpu = env.device.is_gpu
    pairs = sweep.points(sweep.GPU_SIZES_BYTES if gpu else sweep.CPU_SIZES_BYTES, lean=fsdp_lean_run)
    phases = HostPhases()
    points = sweep.run_sweep(env, pairs[:-1])
    phases.done("ceiling_points")
    points += sweep.run_sweep(env, pairs[-1:])  # the judged point, last as always
    phases.done("timed_rounds")
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
    top = points[-1]
    details = {
        "category": "training",
        "world_size": env.world_size,
        "comm_library": env.comm_library,
        "figures_are": figures_are,
        "points": points,
    }
    if fsdp_lean_run:
        details["lean_run"] = LEAN_NO_CEILING
    else:
        details["ceiling"] = ceiling_from_points(points)
        fsdp_link_ceiling(details["ceiling"], figures_are)
    details["host_phase_s"] = phases.seconds
    record = BenchRecord(
        workload="fsdp_collective_sweep",
        backend=env.device.backend,
        timing_method="events_k_batched",
        clock="device_events" if gpu else "host_clock",
        device_ms_per_iteration=top["ms_per_op"],
        headline_metric=f"all_reduce_busbw_gbps_{size_label(top['message_bytes'])}",
        details=details,
    ).add(*metrics)
    fsdp_record(top["ms_per_op"], record, group="fsdp_collective_sweep")
