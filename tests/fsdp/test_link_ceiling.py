"""busbw from transfer time against the swept ceiling (pure; answers worked by hand)."""

import pytest

from aorta.fsdp.collective_match import Collective
from aorta.fsdp.link_ceiling import busbw_gbps, ceiling_at, shares_of_ceiling, transfer_busbw


def test_nccl_tests_factors():
    # 1 GB in 10 ms: algbw 100 GB/s
    assert busbw_gbps("all_reduce", 1e9, 2, 0.01) == 100.0  # x 2*1/2, GB = 1e9 bytes exactly
    assert busbw_gbps("all_gather", 1e9, 4, 0.01) == pytest.approx(75.0)  # x 3/4
    assert busbw_gbps("reduce_scatter", 1e9, 2, 0.01) == pytest.approx(50.0)  # x 1/2
    assert busbw_gbps("all_reduce", 1e9, 4, 0.01) == pytest.approx(150.0)  # x 2*3/4
    assert busbw_gbps("all_reduce", 1e9, 8, 0.01) == pytest.approx(175.0)  # x 2*7/8
    with pytest.raises(ValueError, match="no busbw factor"):
        busbw_gbps("gossip", 1e9, 4, 0.01)
    with pytest.raises(ValueError, match="time must be > 0"):
        busbw_gbps("all_reduce", 1e9, 4, 0.0)


def test_ceiling_is_interpolated_log_log_and_never_extrapolated():
    points = [[1e8, 1000.0], [1e6, 10.0]]  # unsorted on purpose
    assert ceiling_at(points, 1e6) == 10.0
    assert ceiling_at(points, 1e8) == 1000.0
    assert ceiling_at(points, 1e7) == pytest.approx(100.0)  # geometric midpoint; linear would read 505
    assert ceiling_at(points, 5e5) is None and ceiling_at(points, 2e8) is None
    assert ceiling_at([], 1e6) is None


def test_ceiling_ignores_empty_points_and_interpolates_between_the_neighbours():
    # a size or busbw of zero is no measurement: ignored, so it neither widens the range nor bends the line
    assert ceiling_at([[0.0, 5.0], [1e6, 10.0], [1e8, 1000.0]], 1e3) is None
    assert ceiling_at([[0.5, 5.0], [1e6, 10.0], [1e8, 1000.0]], 1e3) == pytest.approx(
        5.0 * (10.0 / 5.0) ** ((3 - (-0.30103)) / (6 - (-0.30103))), rel=1e-4
    )  # sizes under one byte count as swept (only zero is ignored)
    assert ceiling_at([[1e6, 0.0], [1e7, 20.0], [1e8, 1000.0]], 1e6) is None
    assert ceiling_at([[1e6, 0.5], [1e7, 20.0]], 1e6) == 0.5  # a busbw under 1 GB/s is still a point
    # three points: 4 MiB lies between the 1 MiB and 16 MiB points, not on the outer pair
    pts = [[2**20, 10.0], [2**24, 160.0], [2**28, 320.0]]
    assert ceiling_at(pts, 2**22) == pytest.approx(40.0)  # log-log: a quarter of the way in log2 size ... x4
    assert ceiling_at(pts, 2**26) == pytest.approx(160.0 * 2**0.5)
    # tiny sizes whose busbw exceeds their byte count: the neighbours are found by size alone
    assert ceiling_at([[1, 50.0], [4, 100.0], [16, 400.0]], 8) == pytest.approx(200.0)


def _ag(index, start, dur, size):
    return Collective("stream#0", index, "all_gather", 0, start, dur, size)


def test_transfer_busbw_uses_the_last_ranks_kernel_not_the_waiting_one():
    cs = [
        _ag(0, {0: 0.0, 1: 100.0}, {0: 300.0, 1: 200.0}, 1_000_000),  # transfer 200 µs (rank 1 last)
        _ag(1, {0: 900.0, 1: 500.0}, {0: 400.0, 1: 800.0}, 3_000_000),  # transfer 400 µs (rank 0 last)
        _ag(2, {0: 2000.0, 1: 2000.0}, {0: 50.0, 1: 50.0}, None),  # no size: left out
    ]
    t = transfer_busbw(cs, 2)
    # 4e6 B / 600 µs = 6.667 GB/s algbw, x 1/2; rank 0's kernel time (700 µs) would give 2.857
    assert t["all_gather"]["busbw_gbps"] == pytest.approx(4e6 / 600e-6 / 1e9 / 2)
    assert t["all_gather"]["message_bytes_median"] == 2_000_000
    assert t["all_gather"]["collectives"] == 2
    assert "all_reduce" not in t


def test_transfer_busbw_counts_each_kind_and_only_transfers_above_zero():
    cs = [
        Collective("g", 0, "all_gather", 0, {0: 0.0, 1: 0.0}, {0: 0.5, 1: 0.5}, 1_000),  # transfer 0.5 µs
        Collective(
            "g", 1, "all_gather", 0, {0: 0.0, 1: 0.0}, {0: 0.0, 1: 0.0}, 9_000
        ),  # no transfer: left out
        Collective("g", 2, "reduce_scatter", 0, {0: 0.0, 1: 0.0}, {0: 1.0, 1: 1.0}, 3_000),
    ]
    t = transfer_busbw(cs, 2)
    assert t["all_gather"]["collectives"] == 1 and t["all_gather"]["message_bytes_median"] == 1_000
    assert t["all_gather"]["busbw_gbps"] == pytest.approx(1_000 / 0.5e-6 / 1e9 / 2)
    assert t["reduce_scatter"]["busbw_gbps"] == pytest.approx(3_000 / 1e-6 / 1e9 / 2)  # after an earlier kind
    # a kind with none (all-gather) does not end the search for the kinds after it
    assert list(transfer_busbw(cs[2:], 2)) == ["reduce_scatter"]


def test_share_of_ceiling_at_the_scenarios_message_size():
    transfer = {
        "all_gather": {"busbw_gbps": 50.0, "message_bytes_median": 1e7, "collectives": 3},
        "all_reduce": {"busbw_gbps": 1.0, "message_bytes_median": 1e3, "collectives": 1},
        "reduce_scatter": {"busbw_gbps": 5.0, "message_bytes_median": 1e7, "collectives": 1},
    }
    ceiling = {"all_gather": [[1e6, 10.0], [1e8, 1000.0]], "all_reduce": [[1e6, 10.0], [1e8, 1000.0]]}
    s = shares_of_ceiling(transfer, ceiling)
    assert s["all_gather"]["ceiling_gbps"] == pytest.approx(100.0)
    assert s["all_gather"]["share_of_ceiling"] == pytest.approx(0.5)
    assert "outside the swept range 1000000-100000000 B" in s["all_reduce"]["reason"]
    assert s["reduce_scatter"]["reason"] == "no reduce_scatter in the collective sweep"
    assert "note" not in s["all_gather"]


def test_a_share_above_the_sweeps_figure_says_why_the_two_differ():
    transfer = {"all_reduce": {"busbw_gbps": 135.0, "message_bytes_median": 4 * 2**20, "collectives": 90}}
    row = shares_of_ceiling(transfer, {"all_reduce": [[4 * 2**20, 98.5]]})["all_reduce"]
    assert row["share_of_ceiling"] == pytest.approx(135.0 / 98.5)
    assert row["note"].startswith("above the sweep's figure at this size: the sweep times back-to-back")
    exact = shares_of_ceiling(transfer, {"all_reduce": [[4 * 2**20, 135.0]]})["all_reduce"]
    assert exact["share_of_ceiling"] == pytest.approx(1.0) and "note" not in exact


def test_sweep_point_is_the_slowest_rank_per_round_then_the_median():
    from aorta.fsdp.link_ceiling import ceiling_from_points, size_label, sweep_point

    # 1 MB all-reduce over 2 ranks; rank 1 slower in round 0, rank 0 in rounds 1 and 2
    p = sweep_point("all_reduce", 1_000_000, [[0.010, 0.040, 0.020], [0.020, 0.010, 0.010]])
    assert p["ms_per_op"] == [0.020, 0.040, 0.020]
    # busbw = 1e6 B / t x 2(n-1)/n = 1e6 / t: 50, 25, 50 GB/s; median 50 (the fastest rank's would be 100)
    assert p["busbw_gbps"] == pytest.approx([50.0, 25.0, 50.0])
    assert p["busbw_gbps_median"] == pytest.approx(50.0)
    assert p["n_ranks"] == 2
    with pytest.raises(ValueError, match="different numbers of rounds"):
        sweep_point("all_reduce", 1, [[1.0], [1.0, 2.0]])
    with pytest.raises(ValueError, match="different numbers of rounds"):
        sweep_point("all_reduce", 1, [[], []])  # every rank timed nothing
    q = sweep_point("all_reduce", 4_000, [[0.001], [0.001]])
    assert ceiling_from_points([p, q]) == {
        "all_reduce": [[4000.0, pytest.approx(4.0)], [1e6, pytest.approx(50.0)]]
    }
    assert [size_label(b) for b in (4096, 65536, 1 << 28, 1 << 30, 1000)] == [
        "4KiB",
        "64KiB",
        "256MiB",
        "1GiB",
        "1000B",
    ]
    assert size_label(0) == "0B"  # divisible by every unit, but below each


def test_scenario_record_gets_its_share_and_the_terminal_line_says_it():
    from types import SimpleNamespace

    from aorta.fsdp.breakdown_text import breakdown_lines
    from aorta.fsdp.plugin import LEAN_NO_CEILING, _busbw_vs_ceiling
    from aorta.record import BenchRecord

    record = BenchRecord("fsdp_baseline", "cuda", "events", "device_events", [1.0], "step_ms")
    record.details["transfer_busbw"] = {
        "all_gather": {"busbw_gbps": 50.0, "message_bytes_median": 1e7, "collectives": 3}
    }
    _busbw_vs_ceiling(record, SimpleNamespace(link_ceiling=None, link_ceiling_source=None, lean=True))
    assert record.details["busbw_vs_ceiling"]["reason"] == LEAN_NO_CEILING  # a lean run's sweep keeps none
    _busbw_vs_ceiling(record, SimpleNamespace(link_ceiling=None, link_ceiling_source=None, lean=False))
    assert "no collective sweep" in record.details["busbw_vs_ceiling"]["reason"]
    assert any("busbw vs ceiling: no collective sweep" in line for line in breakdown_lines(record))
    state = SimpleNamespace(
        link_ceiling={"all_gather": [[1e6, 10.0], [1e8, 1000.0]]}, link_ceiling_source="x", lean=False
    )
    _busbw_vs_ceiling(record, state)
    assert record.details["busbw_vs_ceiling"]["all_gather"]["share_of_ceiling"] == pytest.approx(0.5)
    (line,) = [x for x in breakdown_lines(record) if x.startswith("busbw from transfer time")]
    assert "all_gather 50 GB/s = 50% of 100 at 9.54 MiB" in line
