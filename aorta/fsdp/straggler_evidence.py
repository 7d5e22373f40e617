"""The evidence beside a straggler, per rank (pure: no torch): the median profiled step's compute only,
overlapped (and the part of it beside waiting for peers), exposed wait and idle time; the host's time to
enqueue a step; where the rank runs (host, CPUs, NUMA nodes, its GPU's NUMA node, ranks it shares CPUs with).

How to read it (issue 26, explicit_prefetch on 4x H200: rank 1 compute only 69.8 ms against about 40,
overlapped 6.9 against about 41, idle 23 ms, last in 10 of 10 steps). Compute only + overlapped is the rank's
compute; when it is about equal on every rank, the compute is not what differs. The other ranks' collectives
start early and wait for the straggler while their own compute runs, and that waiting counts as overlapped
(``overlapped_wait_ms``); the straggler's own collectives start last and wait for nobody, so little of its
compute has a collective beside it. What makes it late is then in its idle time and its host: a longer host
enqueue time, CPUs on another NUMA node than its GPU, or CPUs shared with another rank.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aorta import stats
from aorta.fsdp.rank_host import parse_cpulist
from aorta.fsdp.rank_result import RankResult

STEP_FIGURES = ("compute_only_ms", "overlapped_ms", "overlapped_wait_ms", "exposed_wait_ms", "idle_ms")
HOST_FIELDS = ("hostname", "cpus_allowed", "cpu_numa_nodes", "gpu_numa_node", "cpus_on_gpu_numa_node")


def rank_evidence(
    per_rank_steps: Mapping[str, Sequence[Mapping]], per_rank: Sequence[RankResult]
) -> list[dict]:
    """One row per rank: the medians of ``STEP_FIGURES`` over its profiled steps, its median host enqueue
    time per step, its host facts (``measure``'s ``host``) and the ranks on the same host whose allowed CPUs
    overlap its own."""
    hosts = {r.rank: r.host or {} for r in per_rank}
    cpus = {
        rank: set(parse_cpulist(h["cpus_allowed"])) if h.get("cpus_allowed") else set()
        for rank, h in hosts.items()
    }
    rows = []
    for r in sorted(per_rank, key=lambda r: r.rank):
        rank = r.rank
        steps = per_rank_steps.get(str(rank)) or []
        row: dict = {"rank": rank, "steps": len(steps)}
        for key in STEP_FIGURES:
            values = [s[key] for s in steps if s.get(key) is not None]
            row[key] = stats.median(values) if values else None
        enqueue = r.host_enqueue_ms
        row["host_enqueue_ms"] = stats.median(enqueue) if enqueue else None
        host = hosts[rank]
        row.update({k: host.get(k) for k in HOST_FIELDS})
        row["shares_cpus_with"] = [
            other
            for other in sorted(hosts)
            if other != rank
            and hosts[other].get("hostname") == host.get("hostname")
            and cpus[rank] & cpus[other]
        ]
        rows.append(row)
    return rows


def _others_median(rows: Sequence[Mapping], rank: int, key: str) -> float | None:
    values = [r[key] for r in rows if r["rank"] != rank and r.get(key) is not None]
    return stats.median(values) if values else None


def evidence_lines(rows: Sequence[Mapping], straggler: int | None) -> list[str]:
    """Text: the straggler's figures against the other ranks' median, then where each rank runs."""
    lines = []
    me = next((r for r in rows if r["rank"] == straggler), None)
    if me is not None:
        parts = []
        for key in (*STEP_FIGURES, "host_enqueue_ms"):
            mine, others = me.get(key), _others_median(rows, me["rank"], key)
            if mine is not None and others is not None:
                parts.append(f"{key.removesuffix('_ms').replace('_', ' ')} {mine:.2f} (others {others:.2f})")
        if parts:
            lines.append(f"straggler rank {me['rank']} evidence, ms per step: {', '.join(parts)}")
    for r in rows:
        if r.get("hostname") is None:
            continue
        where = (
            f"rank {r['rank']}: host {r['hostname']}, CPUs {r['cpus_allowed']} (NUMA {r['cpu_numa_nodes']}), "
            f"GPU on NUMA {r['gpu_numa_node'] if r['gpu_numa_node'] is not None else 'unknown'}"
        )
        if r.get("cpus_on_gpu_numa_node") is False:
            where += ": no allowed CPU on its GPU's NUMA node"
        if r.get("shares_cpus_with"):
            where += f"; shares CPUs with rank(s) {r['shares_cpus_with']}"
        lines.append(where)
    return lines
