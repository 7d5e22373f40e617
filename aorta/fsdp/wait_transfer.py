"""Per step and per rank: how a step's device time splits into compute alone, overlapped, exposed transfer,
exposed wait and idle; and which rank straggled (pure: no torch).

Built on the matched collectives of ``aorta.fsdp.collective_match``. All times are on the first rank's
clock (µs in, ms out): a rank's own intervals are shifted by its clock offset. Each collective kernel on a
rank is split into its wait (from its start, ``wait_us`` long) and its transfer (the rest). Then, per
step, with C = the rank's compute kernels:

- transfer       = ∪ transfer pieces;         exposed transfer = |transfer \\ C|
- wait           = ∪ wait pieces \\ transfer;  exposed wait     = |wait \\ C|
- overlapped     = |C ∩ (transfer ∪ wait)|;   compute only     = |C| - overlapped
- idle           = step window - |C ∪ transfer ∪ wait|

so exposed transfer + exposed wait = exposed communication. Exposed transfer is what "communication got
slower" means; exposed wait is launch skew between ranks. Communication kernels that could not be matched
(see ``Matching.problems``) count as transfer, and the record says how many there were.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aorta import stats
from aorta.fsdp.collective_match import Collective, CommKernel, Matching
from aorta.record import rank_breakdown
from aorta.timeline import overlap


@dataclass(frozen=True)
class RankStep:
    """One rank's profiled step (ms); see the module docstring."""

    rank: int
    step: int
    compute_only_ms: float
    overlapped_ms: float
    exposed_transfer_ms: float
    exposed_wait_ms: float
    idle_ms: float
    transfer_ms: float
    wait_ms: float
    window_ms: float
    # The part of ``overlapped_ms`` where compute ran beside waiting for peers (not beside a transfer): a rank
    # that waits for a straggler while computing shows this as overlap the straggler itself cannot have.
    overlapped_wait_ms: float = 0.0
    # Copies and memsets with no kernel beside them (issue 37): device work, so not idle; with it the parts
    # (compute only, overlapped, exposed transfer and wait, copy only, idle) add up to the window.
    copy_only_ms: float = 0.0

    @property
    def comm_busy_ms(self) -> float:
        return self.transfer_ms + self.wait_ms

    @property
    def exposed_comm_ms(self) -> float:
        return self.exposed_transfer_ms + self.exposed_wait_ms

    @property
    def overlap_ratio(self) -> float | None:
        return self.overlapped_ms / self.comm_busy_ms if self.comm_busy_ms > 0 else None

    def as_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        return {**d, "exposed_comm_ms": self.exposed_comm_ms, "overlap_ratio": self.overlap_ratio}


@dataclass(frozen=True)
class Straggler:
    """The rank that arrived last at most of a step's collectives, and how late (median start skew)."""

    step: int
    rank: int
    last_in: int  # collectives at which it arrived last
    collectives: int  # matched collectives in the step
    median_skew_ms: float  # over the collectives it arrived last at: latest - earliest start

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _ms(intervals: Sequence[tuple[float, float]], shift_us: float) -> list[tuple[float, float]]:
    return [((s - shift_us) / 1e3, (e - shift_us) / 1e3) for s, e in intervals]


def rank_steps(
    rank: int,
    matching: Matching,
    compute_us_by_step: Sequence[Sequence[tuple[float, float]]],
    window_us_by_step: Sequence[tuple[float, float]],
    unmatched: Sequence[CommKernel] = (),
    *,
    copy_us_by_step: Sequence[Sequence[tuple[float, float]]] | None = None,
) -> list[RankStep]:
    """The breakdown of each profiled step of ``rank``. ``compute_us_by_step[i]`` and ``window_us_by_step[i]``
    are in the rank's own clock; ``unmatched``: its communication kernels no collective matched;
    ``copy_us_by_step``: its copies and memsets, device work that is not idle."""
    shift = matching.offset_us.get(rank, 0.0)
    mine: dict[int, list[Collective]] = {}
    for c in matching.collectives:
        mine.setdefault(c.step, []).append(c)
    out = []
    for step, (compute_us, window_us) in enumerate(zip(compute_us_by_step, window_us_by_step)):
        transfer, wait = [], []
        for c in mine.get(step, []):
            start, w = c.start_us[rank], c.wait_us(rank)
            wait.append((start / 1e3, (start + w) / 1e3))
            transfer.append(((start + w) / 1e3, (start + c.dur_us[rank]) / 1e3))
        transfer += _ms([(k.start_us, k.end_us) for k in unmatched if k.step == step], shift)
        compute = _ms(compute_us, shift)
        wait_only = overlap.difference(wait, transfer)
        comm = overlap.union(transfer + wait_only)
        overlapped = overlap.overlapped_ms(compute, comm)
        (w0, w1) = _ms([window_us], shift)[0]
        copies = _ms(copy_us_by_step[step], shift) if copy_us_by_step else []
        busy = overlap.length_ms(compute + comm + copies)
        out.append(
            RankStep(
                rank=rank,
                step=step,
                compute_only_ms=overlap.length_ms(compute) - overlapped,
                overlapped_ms=overlapped,
                exposed_transfer_ms=overlap.exposed_ms(compute, transfer),
                exposed_wait_ms=overlap.exposed_ms(compute, wait_only),
                idle_ms=max(0.0, (w1 - w0) - busy),
                transfer_ms=overlap.length_ms(transfer),
                wait_ms=overlap.length_ms(wait_only),
                window_ms=w1 - w0,
                overlapped_wait_ms=overlap.overlapped_ms(compute, wait_only),
                copy_only_ms=overlap.exposed_ms(compute + comm, copies),
            )
        )
    return out


def stragglers(matching: Matching, steps: int) -> list[Straggler | None]:
    """Per step, the rank that arrived last most often (lowest rank on a tie); None for a step without
    matched collectives."""
    out: list[Straggler | None] = []
    for step in range(steps):
        cs = [c for c in matching.collectives if c.step == step]
        if not cs:
            out.append(None)
            continue
        counts: dict[int, int] = {}
        for c in cs:
            counts[c.last_rank] = counts.get(c.last_rank, 0) + 1
        rank = max(sorted(counts), key=lambda r: counts[r])
        skews = [c.start_skew_us / 1e3 for c in cs if c.last_rank == rank]
        out.append(Straggler(step, rank, counts[rank], len(cs), stats.median(skews)))
    return out


def worst_per_step(
    per_rank: Mapping[int, Sequence[RankStep]], figure: str, *, higher_is_better: bool
) -> list[float]:
    """Step i's figure on the worst rank at step i (the lowest of a higher-is-better figure, else the
    highest). Steps that some rank lacks, or where the figure is undefined on a rank, are left out."""
    return rank_breakdown.worst_per_step(
        [[getattr(s, figure) for s in steps] for steps in per_rank.values()],
        higher_is_better=higher_is_better,
    )
