"""A rank's result crosses processes as a dict and lands in the record's ``per_rank``: it comes back field for
field, and the record keeps exactly the keys the dataclass writes (the saved JSON's per-rank schema)."""

from __future__ import annotations

import json
import pickle

import pytest

from aorta.fsdp.figures import build_result
from aorta.fsdp.rank_result import NOT_RECORDED, RankResult, recorded_keys

# The keys of each ``per_rank`` entry in saved runs, in order: a change here changes the benchmark JSON.
PER_RANK_KEYS = (
    "rank",
    "device_index",
    "step_ms",
    "peak_memory_bytes",
    "samples_per_step",
    "check",
    "overlap",
    "overlap_reason",
    "per_step",
    "per_step_reason",
    "per_step_note",
    "compute_slowdown_ratio",
    "slowdown_reason",
    "stream_busy_ms",
    "trace_file",
    "trace_note",
    "host_enqueue_ms",
    "comm_ballast",
    "host",
    "warnings",
    "telemetry",
    "lean_run",
    "host_phase_s",
)


def _full(rank: int) -> RankResult:
    """Every field set to something other than its default."""
    step = {
        "compute_busy_ms": 10.0 + rank,
        "overlapped_ms": 2.0,
        "exposed_comm_ms": 1.0,
        "comm_busy_ms": 3.0,
        "idle_ms": 0.5,
        "window_ms": 11.5 + rank,
        "busbw_gbps": {"all_gather": 100.0},
    }
    return RankResult(
        rank=rank,
        device_index=rank,
        step_ms=[20.0 + rank, 21.0, 22.0],
        peak_memory_bytes=1000 * (rank + 1),
        samples_per_step=4,
        check={"loss": 1.0, "reference_loss": 1.0},
        overlap={
            "window_ms": 23.0,
            "compute_busy_ms": 20.0,
            "comm_busy_ms": 6.0,
            "overlapped_ms": 4.0,
            "steps": 2,
        },
        overlap_reason="none",
        per_step=[step, step],
        per_step_reason="none",
        per_step_note="1 kernel outside the steps",
        timeline={"comm": [], "compute_us": [[(0.0, 1.0)]], "window_us": [(0.0, 2.0)]},
        compute_slowdown_ratio=1.1,
        slowdown_reason="none",
        stream_busy_ms={"7": 20.0},
        kernel_summary={"kernels": {}},
        trace_file="rank0/x.pt.trace.json",
        trace_note="kept",
        host_enqueue_ms=[19.0, 20.0, 21.0],
        comm_ballast={"ratio": 0.5},
        host={"hostname": "h", "cpus_allowed": "0-3"},
        warnings=["w"],
        telemetry={"source": "nvml", "rounds": 3},
        lean_run="a gate's repeat run",
        host_phase_s={"setup": 0.5, "timed_steps": 0.25},
    )


def test_a_rank_result_round_trips_through_its_dict_and_the_exchange():
    r = _full(1)
    assert RankResult.from_dict(r.as_dict()) == r
    assert RankResult.from_dict(pickle.loads(pickle.dumps(r.as_dict()))) == r  # what DistEnv.exchange does
    assert list(r.as_dict()) == [
        *PER_RANK_KEYS[:11],
        "timeline",
        *PER_RANK_KEYS[11:14],
        "kernel_summary",
        *PER_RANK_KEYS[14:],
    ]
    assert RankResult.from_dict({"rank": 3}) == RankResult(rank=3)


def test_a_key_that_is_not_a_field_is_refused():
    with pytest.raises(ValueError, match=r"unknown keys \['stepms'\]"):
        RankResult.from_dict({"rank": 0, "stepms": [1.0]})


def test_the_records_per_rank_keys_are_exactly_the_fields_it_writes():
    assert recorded_keys() == PER_RANK_KEYS
    assert set(NOT_RECORDED).isdisjoint(PER_RANK_KEYS)
    ranks = [_full(1), _full(0)]
    _, record = build_result(
        {"id": "baseline"}, ranks, world_size=2, seq_len=8, backend="cuda", comm_library="nccl", config={}
    )
    per_rank = record.details["per_rank"]
    assert [tuple(r) for r in per_rank] == [PER_RANK_KEYS, PER_RANK_KEYS]
    assert per_rank == [_full(0).record_dict(), _full(1).record_dict()]  # in rank order, values as sent
    # what goes to disk reads back to the same fields (JSON turns tuples into lists; these hold none)
    back = json.loads(json.dumps(record.to_extra_info()))["per_rank"]
    assert [RankResult.from_dict(r) for r in back] == [
        RankResult.from_dict({**_full(r).as_dict(), "timeline": None, "kernel_summary": None}) for r in (0, 1)
    ]
