"""Where each rank runs (fake sysfs) and the evidence beside a straggler (pure; hand-worked answers)."""

import pytest

from aorta.fsdp.rank_host import format_cpulist, gpu_numa_node, parse_cpulist, pci_sysfs_name, rank_host
from aorta.fsdp.rank_result import RankResult
from aorta.fsdp.straggler_evidence import evidence_lines, rank_evidence


def test_cpulists_round_trip():
    assert parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert format_cpulist([11, 0, 1, 2, 3, 8, 10]) == "0-3,8,10-11"
    assert format_cpulist([5]) == "5" and format_cpulist([]) == ""
    with pytest.raises(ValueError, match="not a cpulist: 'a-b'"):
        parse_cpulist("a-b")


@pytest.fixture
def sysfs(tmp_path):
    for node, cpus in ((0, "0-3"), (1, "4-7")):
        (tmp_path / "node" / f"node{node}").mkdir(parents=True)
        (tmp_path / "node" / f"node{node}" / "cpulist").write_text(cpus + "\n")
    for bus, node in (("0000:19:00.0", "1"), ("0000:3b:00.0", "-1")):
        (tmp_path / "pci" / bus).mkdir(parents=True)
        (tmp_path / "pci" / bus / "numa_node").write_text(node + "\n")
    return tmp_path


def test_rank_host_reads_numa_nodes_of_its_cpus_and_of_its_gpu(sysfs):
    assert pci_sysfs_name("00000000:3B:00.0") == "0000:3b:00.0"
    roots = {"node_root": sysfs / "node", "pci_root": sysfs / "pci"}
    h = rank_host("00000000:19:00.0", affinity=[2, 3, 4], **roots)
    assert (h["cpus_allowed"], h["cpu_count"], h["cpu_numa_nodes"]) == ("2-4", 3, [0, 1])
    assert (h["gpu_numa_node"], h["cpus_on_gpu_numa_node"]) == (1, True)
    far = rank_host("00000000:19:00.0", affinity=[0, 1], **roots)
    assert far["cpu_numa_nodes"] == [0] and far["cpus_on_gpu_numa_node"] is False
    unknown = rank_host("00000000:3B:00.0", affinity=[0], **roots)  # the platform says -1
    assert unknown["gpu_numa_node"] is None and unknown["cpus_on_gpu_numa_node"] is None
    assert gpu_numa_node(None) is None and gpu_numa_node("00000000:99:00.0", sysfs / "pci") is None


def _step(compute_only, overlapped, overlapped_wait, exposed_wait, idle):
    return {
        "compute_only_ms": compute_only,
        "overlapped_ms": overlapped,
        "overlapped_wait_ms": overlapped_wait,
        "exposed_wait_ms": exposed_wait,
        "idle_ms": idle,
    }


# The explicit_prefetch pattern: rank 1 computes as much as the others (compute only + overlapped ~ 77-81) but
# little of it beside a collective, idles, and arrives last; the others' overlap is mostly waiting for it.
STEPS = {
    "0": [
        _step(40.0, 41.0, 30.0, 17.0, 2.0),
        _step(42.0, 39.0, 28.0, 15.0, 3.0),
        _step(39.0, 42.0, 31.0, 19.0, 2.0),
    ],
    "1": [
        _step(69.8, 6.9, 0.0, 0.0, 23.0),
        _step(70.0, 7.0, 0.0, 0.0, 22.0),
        _step(69.0, 6.0, 0.0, 0.0, 24.0),
    ],
    "2": [
        _step(41.0, 40.0, 29.0, 16.0, 1.0),
        _step(43.0, 38.0, 27.0, 18.0, 2.0),
        _step(40.0, 41.0, 30.0, 17.0, 1.0),
    ],
}
HOSTS = {
    0: {
        "hostname": "a",
        "cpus_allowed": "0-3",
        "cpu_numa_nodes": [0],
        "gpu_numa_node": 0,
        "cpus_on_gpu_numa_node": True,
    },
    1: {
        "hostname": "a",
        "cpus_allowed": "2-5",
        "cpu_numa_nodes": [0, 1],
        "gpu_numa_node": 1,
        "cpus_on_gpu_numa_node": True,
    },
    2: {
        "hostname": "b",
        "cpus_allowed": "0-3",
        "cpu_numa_nodes": [0],
        "gpu_numa_node": 1,
        "cpus_on_gpu_numa_node": False,
    },
}
PER_RANK = [
    RankResult(rank=2, host_enqueue_ms=[60.0, 61.0, 59.0], host=HOSTS[2]),
    RankResult(rank=0, host_enqueue_ms=[58.0, 70.0, 60.0], host=HOSTS[0]),
    RankResult(rank=1, host_enqueue_ms=[85.0, 80.0, 90.0], host=HOSTS[1]),
]


def test_rank_evidence_medians_and_shared_cpus_on_the_same_host_only():
    rows = rank_evidence(STEPS, PER_RANK)
    assert [r["rank"] for r in rows] == [0, 1, 2]
    r1 = rows[1]
    assert (r1["compute_only_ms"], r1["overlapped_ms"], r1["idle_ms"]) == (69.8, 6.9, 23.0)  # medians
    assert r1["host_enqueue_ms"] == 85.0  # median of 85, 80, 90 (mean 85 too; rank 0's: 60, mean 62.7)
    assert rows[0]["host_enqueue_ms"] == 60.0
    assert rows[0]["shares_cpus_with"] == [1] and rows[1]["shares_cpus_with"] == [0]
    assert rows[2]["shares_cpus_with"] == []  # same CPU numbers as rank 0, but another host


def test_evidence_lines_set_the_straggler_against_the_others_median():
    lines = evidence_lines(rank_evidence(STEPS, PER_RANK), 1)
    assert lines[0].startswith("straggler rank 1 evidence")
    assert "compute only 69.80 (others 40.50)" in lines[0]  # median of ranks 0 and 2: 40 and 41
    assert "overlapped wait 0.00 (others 29.50)" in lines[0]
    assert "host enqueue 85.00 (others 60.00)" in lines[0]
    assert "rank 1: host a, CPUs 2-5 (NUMA [0, 1]), GPU on NUMA 1; shares CPUs with rank(s) [0]" in lines
    assert any(
        line.startswith("rank 2:") and "no allowed CPU on its GPU's NUMA node" in line for line in lines
    )
    assert not any("evidence" in line for line in evidence_lines(rank_evidence(STEPS, PER_RANK), None))


def test_overlapped_wait_is_compute_beside_waiting_not_beside_transfer():
    from aorta.fsdp import wait_transfer as wt
    from aorta.fsdp.collective_match import Collective, Matching

    # rank 0 starts at 0 and waits for rank 1 (starts at 60); transfer 60-100 on both. Rank 0 computes 20-80:
    # beside its wait 20-60 (40 µs) and beside the transfer 60-80 (20 µs).
    c = Collective("stream#0", 0, "all_gather", 0, {0: 0.0, 1: 60.0}, {0: 100.0, 1: 40.0})
    m = Matching([0, 1], [c], {0: 0.0, 1: 0.0}, 0.0)
    (s0,) = wt.rank_steps(0, m, [[(20.0, 80.0)]], [(0.0, 100.0)])
    assert s0.overlapped_ms == pytest.approx(0.060) and s0.overlapped_wait_ms == pytest.approx(0.040)
    (s1,) = wt.rank_steps(1, m, [[(20.0, 80.0)]], [(0.0, 100.0)])
    assert s1.overlapped_ms == pytest.approx(0.020) and s1.overlapped_wait_ms == 0.0
