"""Match each collective across ranks, align the ranks' clocks, split kernel time into wait and transfer
(pure: no torch).

A collective kernel on one rank runs from the moment that rank launched it until the data has moved, so
its time includes waiting for the slowest peer to arrive. Matched across ranks (same process group, same
position in that group's sequence: NCCL/RCCL run a group's collectives in issue order on every rank), the
kernels of one collective end together (the last chunk reaches every rank at about the same time) and
start apart.

A process group's collectives run in issue order on that group's own communication stream, so a rank's
sequences are its communication streams, named by order of first use (``stream#0`` ...: stream ids are per
process; the order of first use agrees between ranks). The profiler's process group name only labels a
sequence: it is recorded on some kernels and not others (RCCL kernels launched before the profiled window
carry no args), so keying on it split one stream into two sequences and failed the match against a rank
whose args covered other kernels. So, per collective, on clocks aligned between ranks:

- start skew   = latest start - earliest start;
- transfer     = the last-arriving rank's kernel time (it waited for nobody);
- wait (rank)  = that rank's kernel time - transfer (time spent waiting for peers; 0 for the last rank).

Clocks of different GPUs are not comparable as they are. Rank r's offset to the first rank is the median,
over matched collectives, of (end on r - end on the first rank); the alignment error is the largest
|residual| of those ends after the offset is removed (how far from "ending together" the matched kernels
were: it bounds the error of every wait figure).

Input: per rank, its communication kernels (``DeviceOp`` from ``aorta.fsdp.trace_analysis``) with the
profiled step each one ran in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from aorta import stats
from aorta.timeline.trace_events import COMM_KINDS

# The kind of a communication kernel that names no known collective (RCCL's generic kernel without args, or
# a collective with no kind of its own): in a match it agrees with whatever the other ranks name.
UNNAMED = "other_comm"


@dataclass(frozen=True)
class CommKernel:
    """One collective kernel on one rank, in that rank's own clock (µs)."""

    kind: str
    group: str  # the process group (``pg:<name>``) where its stream's kernels name one, else ``stream:<id>``
    start_us: float
    end_us: float
    step: int
    stream: str | None = None  # the stream it ran on (the sequence it belongs to); None: ``group`` is the key
    message_bytes: int | None = None  # the profiler's message size (full buffer), where recorded

    @property
    def dur_us(self) -> float:
        return self.end_us - self.start_us


@dataclass(frozen=True)
class Collective:
    """One collective matched across ranks; times aligned to the first rank's clock (µs)."""

    group: str  # its sequence (``stream#i``), with the process group where a rank's profiler named one
    index: int  # position in its group's sequence
    kind: str
    step: int
    start_us: dict[int, float]  # rank -> aligned start
    dur_us: dict[int, float]  # rank -> its kernel time
    message_bytes: int | None = None  # the full buffer, from the first rank that recorded it

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
    """The communication kernels of one rank, step by step (``kernels_by_step[i]``: the ``DeviceOp``s of
    profiled step i), each with its stream and labelled with its group: the process group that any kernel
    on its stream names, else the stream."""
    comm = [(i, k) for i, kernels in enumerate(kernels_by_step) for k in kernels if k.kind in COMM_KINDS]
    names: dict[str, set[str]] = {}
    for _, k in comm:
        names.setdefault(str(k.stream), set())
        if k.process_group:
            names[str(k.stream)].add(k.process_group)
    out = []
    for i, k in comm:
        named = sorted(names[str(k.stream)])
        group = f"pg:{'+'.join(named)}" if named else f"stream:{k.stream}"
        out.append(
            CommKernel(k.kind, group, k.start_us, k.end_us, step_base + i, str(k.stream), k.message_bytes)
        )
    return sorted(out, key=lambda c: (c.start_us, c.end_us))


def _sequences(kernels: Sequence[CommKernel]) -> dict[str, list[CommKernel]]:
    """Kernels by sequence, in issue order: by stream, renamed by order of first use (``stream#0`` ...):
    stream ids are per process and need not agree between ranks; the order their first collective ran in
    does. Kernels without a stream are keyed by their group."""
    by_key: dict[str, list[CommKernel]] = {}
    for k in sorted(kernels, key=lambda c: c.start_us):
        by_key.setdefault(f"stream:{k.stream}" if k.stream is not None else k.group, []).append(k)
    renamed, n = {}, 0
    for key in by_key:  # dict order = order of first use
        if key.startswith("stream:"):
            renamed[key], n = f"stream#{n}", n + 1
        else:
            renamed[key] = key
    return {renamed[key]: ks for key, ks in by_key.items()}


def _label(key: str, kernels: Sequence[CommKernel]) -> str:
    """A sequence's name in the results: its process group where some rank's profiler named one."""
    named = sorted({k.group for k in kernels if k.group.startswith("pg:")})
    return f"{key} ({', '.join(named)})" if named and key.startswith("stream#") else key


def match(per_rank: Mapping[int, Sequence[CommKernel]]) -> Matching:
    """Match collectives across ranks by (group, position); align clocks by the matched kernels' ends."""
    ranks = sorted(per_rank)
    result = Matching(ranks)
    if len(ranks) < 2:
        result.problems.append("one rank: nothing to match across ranks")
        return result
    seqs = {r: _sequences(per_rank[r]) for r in ranks}
    groups = sorted(set().union(*(set(s) for s in seqs.values())))
    matched: list[tuple[str, int, dict[int, CommKernel], str]] = []
    for g in groups:
        lists = {r: seqs[r].get(g, []) for r in ranks}
        counts = {r: len(v) for r, v in lists.items()}
        if len(set(counts.values())) != 1:
            result.problems.append(f"{g}: ranks ran different numbers of collectives {counts}")
            continue
        label = _label(g, [k for v in lists.values() for k in v])
        for i in range(counts[ranks[0]]):
            at = {r: lists[r][i] for r in ranks}
            kinds = {k.kind for k in at.values()}
            known = kinds - {UNNAMED}  # a rank whose profiler gave no collective name agrees with any
            if len(known) > 1:
                result.problems.append(f"{g}: collective #{i} is {sorted(kinds)} on different ranks")
                break
            matched.append((label, i, at, known.pop() if known else UNNAMED))
    if not matched:
        return result
    first = ranks[0]
    offsets = {r: stats.median([at[r].end_us - at[first].end_us for _, _, at, _ in matched]) for r in ranks}
    residuals = [abs(at[r].end_us - offsets[r] - at[first].end_us) for _, _, at, _ in matched for r in ranks]
    result.offset_us = offsets
    result.alignment_error_us = max(residuals)
    for g, i, at, kind in matched:
        result.collectives.append(
            Collective(
                group=g,
                index=i,
                kind=kind,
                step=at[first].step,
                start_us={r: at[r].start_us - offsets[r] for r in ranks},
                dur_us={r: at[r].dur_us for r in ranks},
                message_bytes=next((at[r].message_bytes for r in ranks if at[r].message_bytes), None),
            )
        )
    result.collectives.sort(key=lambda c: min(c.start_us.values()))
    return result
