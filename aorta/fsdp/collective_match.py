"""Match each collective across ranks, align the ranks' clocks, split kernel time into wait and transfer
(pure: no torch).

A collective kernel on one rank runs from the moment that rank launched it until the data has moved, so
its time includes waiting for the slowest peer to arrive. Matched across ranks (same process group, same
position in that group's sequence: NCCL/RCCL run a group's collectives in issue order on every rank), the
kernels of one collective end together (the last chunk reaches every rank at about the same time) and
start apart. So, per collective, on clocks aligned between ranks:

- start skew   = latest start - earliest start;
- transfer     = the last-arriving rank's kernel time (it waited for nobody);
- wait (rank)  = that rank's kernel time - transfer (time spent waiting for peers; 0 for the last rank).

Clocks of different GPUs are not comparable as they are. Rank r's offset to the first rank is the median,
over matched collectives, of (end on r - end on the first rank); the alignment error is the largest
|residual| of those ends after the offset is removed (how far from "ending together" the matched kernels
were: it bounds the error of every wait figure).

Input: per rank, its communication kernels (``KernelEvent`` from ``aorta.fsdp.trace_analysis``) with the
profiled step each one ran in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from aorta import stats
from aorta.trace_events import COMPUTE


@dataclass(frozen=True)
class CommKernel:
    """One collective kernel on one rank, in that rank's own clock (µs)."""

    kind: str
    group: str  # the process group, or the stream it ran on where the profiler gave no group
    start_us: float
    end_us: float
    step: int

    @property
    def dur_us(self) -> float:
        return self.end_us - self.start_us


@dataclass(frozen=True)
class Collective:
    """One collective matched across ranks; times aligned to the first rank's clock (µs)."""

    group: str
    index: int  # position in its group's sequence
    kind: str
    step: int
    start_us: dict[int, float]  # rank -> aligned start
    dur_us: dict[int, float]  # rank -> its kernel time

    @property
    def last_rank(self) -> int:
        """The rank that arrived last (the latest aligned start; lowest rank on a tie)."""
        return max(sorted(self.start_us), key=lambda r: self.start_us[r])

    @property
    def start_skew_us(self) -> float:
        return max(self.start_us.values()) - min(self.start_us.values())

    @property
    def transfer_us(self) -> float:
        return self.dur_us[self.last_rank]

    def wait_us(self, rank: int) -> float:
        """Time ``rank``'s kernel spent waiting for its peers (never below 0)."""
        return max(0.0, self.dur_us[rank] - self.transfer_us)


@dataclass
class Matching:
    """Every matched collective, the clock offsets and the alignment error; what could not be matched."""

    ranks: list[int]
    collectives: list[Collective] = field(default_factory=list)
    offset_us: dict[int, float] = field(default_factory=dict)  # rank clock - first rank's clock
    alignment_error_us: float | None = None
    problems: list[str] = field(default_factory=list)  # groups left out, with the reason

    @property
    def available(self) -> bool:
        return bool(self.collectives)


def comm_kernels(kernels_by_step: Sequence[Sequence], *, step_base: int = 0) -> list[CommKernel]:
    """The communication kernels of one rank, step by step (``kernels_by_step[i]``: the ``KernelEvent``s of
    profiled step i), each labelled with its group: the profiler's process group name, else its stream."""
    out = []
    for i, kernels in enumerate(kernels_by_step):
        for k in kernels:
            if k.kind == COMPUTE:
                continue
            group = f"pg:{k.process_group}" if k.process_group else f"stream:{k.stream}"
            out.append(CommKernel(k.kind, group, k.ts_us, k.end_us, step_base + i))
    return sorted(out, key=lambda c: (c.start_us, c.end_us))


def _sequences(kernels: Sequence[CommKernel]) -> dict[str, list[CommKernel]]:
    """Kernels by group, in issue order. Streams are renamed by order of first use (``stream#0`` ...): stream
    ids are per process and need not agree between ranks; the order their first collective ran in does."""
    by_group: dict[str, list[CommKernel]] = {}
    for k in sorted(kernels, key=lambda c: c.start_us):
        by_group.setdefault(k.group, []).append(k)
    renamed, n = {}, 0
    for g in by_group:  # dict order = order of first use
        if g.startswith("stream:"):
            renamed[g], n = f"stream#{n}", n + 1
        else:
            renamed[g] = g
    return {renamed[g]: ks for g, ks in by_group.items()}


def match(per_rank: Mapping[int, Sequence[CommKernel]]) -> Matching:
    """Match collectives across ranks by (group, position); align clocks by the matched kernels' ends."""
    ranks = sorted(per_rank)
    result = Matching(ranks)
    if len(ranks) < 2:
        result.problems.append("one rank: nothing to match across ranks")
        return result
    seqs = {r: _sequences(per_rank[r]) for r in ranks}
    groups = sorted(set().union(*(set(s) for s in seqs.values())))
    matched: list[tuple[str, int, dict[int, CommKernel]]] = []
    for g in groups:
        lists = {r: seqs[r].get(g, []) for r in ranks}
        counts = {r: len(v) for r, v in lists.items()}
        if len(set(counts.values())) != 1:
            result.problems.append(f"{g}: ranks ran different numbers of collectives {counts}")
            continue
        for i in range(counts[ranks[0]]):
            at = {r: lists[r][i] for r in ranks}
            kinds = {k.kind for k in at.values()}
            if len(kinds) != 1:
                result.problems.append(f"{g}: collective #{i} is {sorted(kinds)} on different ranks")
                break
            matched.append((g, i, at))
    if not matched:
        return result
    first = ranks[0]
    offsets = {r: stats.median([at[r].end_us - at[first].end_us for _, _, at in matched]) for r in ranks}
    residuals = [abs(at[r].end_us - offsets[r] - at[first].end_us) for _, _, at in matched for r in ranks]
    result.offset_us = offsets
    result.alignment_error_us = max(residuals)
    for g, i, at in matched:
        result.collectives.append(
            Collective(
                group=g,
                index=i,
                kind=at[first].kind,
                step=at[first].step,
                start_us={r: at[r].start_us - offsets[r] for r in ranks},
                dur_us={r: at[r].dur_us for r in ranks},
            )
        )
    result.collectives.sort(key=lambda c: min(c.start_us.values()))
    return result
