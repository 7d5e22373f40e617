"""Which collectives' wait/transfer split the clock alignment can resolve, and how much of the exposed
communication the rest covers (pure: no torch).

Ranks' clocks are aligned by the ends of matched collectives (``aorta.fsdp.collective_match``); the alignment
error is the largest residual of those ends. A collective whose transfer (the last-arriving rank's kernel
time) is not longer than that error could be all transfer or all wait as far as the aligned clocks can tell:
its split is flagged **not resolvable**. On 4x H200 the error was 29-227 µs per scenario while many
collectives last well under a millisecond (issue 26), so the share matters.

Per scenario, summed over ranks and profiled steps, on each rank's own (aligned) timeline:

- exposed      = |all matched collectives' kernel spans \\ compute|
- unresolved   = |spans of the not-resolvable collectives \\ compute|
- share        = unresolved / exposed (None when nothing is exposed)

so ``share`` is the part of the exposed communication whose wait/transfer split is not to be trusted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from aorta.fsdp.collective_match import Collective, Matching
from aorta.timeline import overlap


def resolvable(collective: Collective, alignment_error_us: float) -> bool:
    """Whether the aligned clocks can tell this collective's wait from its transfer: its transfer is longer
    than the alignment error."""
    return collective.transfer_us > alignment_error_us


@dataclass(frozen=True)
class SplitResolution:
    alignment_error_us: float
    collectives: int
    unresolved_collectives: int
    exposed_ms: float  # Σ over ranks and steps of exposed matched communication
    unresolved_exposed_ms: float  # the part of it in not-resolvable collectives
    unresolved_by_kind: dict[str, int] = field(default_factory=dict)  # not-resolvable collectives per kind

    @property
    def unresolved_share(self) -> float | None:
        return self.unresolved_exposed_ms / self.exposed_ms if self.exposed_ms > 0 else None

    def as_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        return {**d, "unresolved_share": self.unresolved_share}

    def sentence(self) -> str:
        return resolution_sentence(self.as_dict())


def resolution_sentence(d: Mapping) -> str:
    """``SplitResolution.as_dict()`` (as a record holds it) in words."""
    share = d["unresolved_share"]
    covered = "no exposed communication" if share is None else f"{share:.0%} of exposed communication"
    return (
        f"{d['unresolved_collectives']} of {d['collectives']} collectives transfer for no longer than the "
        f"clock alignment error ({d['alignment_error_us']:.1f} µs): their wait/transfer split is not "
        f"resolvable ({covered}, {d['unresolved_exposed_ms']:.3f} of {d['exposed_ms']:.3f} ms over all "
        f"ranks and steps{'; ' + str(d['unresolved_by_kind']) if d.get('unresolved_by_kind') else ''})"
    )


def split_resolution(
    matching: Matching, compute_us_by_rank: Mapping[int, Sequence[Sequence[tuple[float, float]]]]
) -> SplitResolution | None:
    """The resolution of every matched collective's split. ``compute_us_by_rank[r][step]``: rank r's compute
    intervals of that step in its own clock (µs). None when nothing was matched."""
    err = matching.alignment_error_us
    if not matching.collectives or err is None:
        return None
    unresolved = [c for c in matching.collectives if not resolvable(c, err)]
    exposed = unresolved_exposed = 0.0
    for rank, compute_by_step in compute_us_by_rank.items():
        shift = matching.offset_us.get(rank, 0.0)
        for step, compute_us in enumerate(compute_by_step):
            compute = [((s - shift) / 1e3, (e - shift) / 1e3) for s, e in compute_us]

            def spans(
                cs: Sequence[Collective], step: int = step, rank: int = rank
            ) -> list[tuple[float, float]]:
                return [
                    (c.start_us[rank] / 1e3, (c.start_us[rank] + c.dur_us[rank]) / 1e3)
                    for c in cs
                    if c.step == step and rank in c.start_us
                ]

            exposed += overlap.exposed_ms(compute, spans(matching.collectives))
            unresolved_exposed += overlap.exposed_ms(compute, spans(unresolved))
    by_kind: dict[str, int] = {}
    for c in unresolved:
        by_kind[c.kind] = by_kind.get(c.kind, 0) + 1
    return SplitResolution(
        err,
        len(matching.collectives),
        len(unresolved),
        exposed,
        unresolved_exposed,
        dict(sorted(by_kind.items())),
    )
