"""fsdp_tp: per-layer compute beside FSDP-style communication on comm streams.

Under ``torchrun --nproc_per_node N -m pytest benchmarks/hw_queue -k fsdp_tp`` (N > 1) the communication is
real collectives over the session's process group (aorta's FSDP plugin starts it, one rank per device):
``extra_info["comm"] == "collectives"``, every rank's device times in ``extra_info["per_rank"]``. Without
torchrun it is one process and each collective is the same-size device-to-device copy, labelled
``d2d_copies_single_process``.
"""

import pytest

from aorta.fsdp.distributed import launch_info
from aorta.hw_queue.marks import spec_marks
from aorta.hw_queue.workloads.fsdp_tp import FsdpTp
from aorta.record import write_record
from aorta.stats import median

pytestmark = spec_marks(FsdpTp)


@pytest.fixture
def tp_group(request):
    """The session's process group under torchrun with more than one rank (None for one process)."""
    if launch_info().world_size < 2:
        return None
    return request.getfixturevalue("dist_env")


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_fsdp_tp(hw_queue, streams, dtype, tp_group, benchmark, request):
    result = hw_queue(FsdpTp, streams, dtype=dtype)
    info = result.record.details["workload_info"]
    if tp_group is None:
        write_record(benchmark, result.record.with_details(comm=info["comm"]))
        return
    assert info["comm"] == "collectives" and info["world_size"] == tp_group.world_size, (
        f"fsdp_tp under torchrun with {tp_group.world_size} ranks ran {info['comm']} "
        f"over world size {info['world_size']}"
    )
    # Every rank's device times to rank 0. The record's step times are rank 0's: every rank's round starts
    # behind one all-reduce after its hold (the workload's round barrier), so the ranks time the same span;
    # per_rank_spread (largest over smallest rank median) says how far they still differ.
    everyone = tp_group.exchange(
        f"fsdp_tp/{request.node.nodeid}",
        {"rank": tp_group.rank, "device_ms_per_iteration": list(result.record.device_ms_per_iteration)},
        abort_if=f"outcome/{request.node.nodeid}/call",
    )
    medians = [median(r["device_ms_per_iteration"]) for r in everyone]
    spread = max(medians) / min(medians) if min(medians) > 0 else None
    details = {
        "comm": info["comm"],
        "per_rank": everyone,
        "per_rank_median_ms": medians,
        "per_rank_spread": spread,
    }
    write_record(benchmark, result.record.with_details(**details))
