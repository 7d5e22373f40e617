"""The scale figures on a real trace (MI300X, RCCL; ../shared/amd_traces, skipped where absent): two ranks made
of the trace's kernels, rank 1 a copy 2500 µs ahead whose profiler named no collective (as in
tests/fsdp/test_amd_traces.py). Identical ranks wait for nobody, so transfer = kernel time: busbw from transfer time
must equal Σ bytes / Σ kernel time of the in-step all-reduces (factor 2(n-1)/n = 1 at n = 2), the clock
alignment error is 0, no split is unresolvable, and the exposed time summed over both ranks is twice rank 0's."""

from importlib import util
from pathlib import Path

import amd_traces
import pytest

from aorta.fsdp.rank_figures import kernel_figures

_spec = util.spec_from_file_location("amd", Path(__file__).with_name("test_amd_traces.py"))
amd = util.module_from_spec(_spec)
_spec.loader.exec_module(amd)


@pytest.mark.parametrize("events", amd_traces.EVENTS)
def test_transfer_busbw_and_split_resolution_on_a_real_rccl_trace(events, amd_trace):
    t = amd.trace(amd_trace(amd.MI300X_RCCL, events))
    by_step, _ = amd.launched_by_step(t)
    in_step = [e for ks in by_step for e in ks if amd.is_rccl(e)]
    all_reduce = [e for e in in_step if e["args"].get("Collective name") == "allreduce"]
    assert all_reduce  # the trace's in-step all-reduces carry their sizes
    size = sum(e["args"]["In msg nelems"] * amd.DTYPE_BYTES[e["args"]["dtype"]] for e in all_reduce)
    expected_busbw = size / (sum(e["dur"] for e in all_reduce) * 1e-6) / 1e9  # x 2(2-1)/2
    exposed_rank0_ms = 0.0
    for ks in by_step:
        comm = [amd.span(e) for e in ks if amd.is_rccl(e)]
        compute = [amd.span(e) for e in ks if not amd.is_rccl(e)]
        exposed_rank0_ms += (amd.length_us(comm) - amd.overlap_us(compute, comm)) / 1e3

    ranks = amd.two_ranks(t)
    _, _, details = kernel_figures(ranks)

    ar = details["transfer_busbw"]["all_reduce"]
    assert ar["collectives"] == len(all_reduce)
    assert ar["busbw_gbps"] == pytest.approx(expected_busbw, rel=1e-6)
    res = details["split_resolution"]
    assert res["alignment_error_us"] == pytest.approx(0.0, abs=1e-3)
    assert res["unresolved_collectives"] == 0 and res["unresolved_share"] == 0.0
    assert res["collectives"] == len(in_step)
    assert res["exposed_ms"] == pytest.approx(2 * exposed_rank0_ms, abs=1e-4)
