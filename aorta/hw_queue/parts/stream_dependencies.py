"""The cross-stream dependency patterns of ``stream_dependency``, and their figures (pure: no torch).

ROCm 7.14 mapped a stream that waits on another stream's event to a different hardware queue, and each such
kernel paid about 1 us more (-20% decode at low concurrency on MI355X; ROCm/rocm-systems issue 11212). No
throughput workload sees that; this pattern does. One iteration is a list of tiny kernels, each on a stream,
each waiting on the events of the kernels it reads (``Kernel.waits``):

- ``chain``: ``kernels`` kernels, kernel ``j`` on stream ``j % n``, each reading the one before it: kernel ``j``
  waits on kernel ``j - 1``'s event (on the stream before it). The whole iteration is one critical path of
  ``kernels - 1`` cross-stream hops.
- ``fan``: ``levels`` levels of fan-out / fan-in. Per level a root kernel on stream 0 (after the previous
  level's join, in stream order), one fan kernel on each stream ``i`` that waits on the root's event, and a
  join on stream 0 that waits on every fan kernel's event. Two hops per level on the critical path.

``dependencies="none"`` is the reference: the same kernels, each reading a constant holding the value its
producer would have written, and no event waits. Its critical path has no hop: the chain's reference is the
same kernels on one stream (stream order), the fan's the same kernels on the same streams (stream 0 carries
root, fan and join, three kernels a level either way). The added time per dependent kernel is then
``(iteration time with events - the reference's for as many kernels) / dependent kernels``
(``added_us_per_dependent_kernel``).

Where the producer and the consumer share a stream (one stream, or the fan's kernel on stream 0) the wait is
still issued: one stream measures what an event wait costs when no queue changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from aorta.stats import median

PATTERNS = ("chain", "fan")
DEPENDENCIES = ("events", "none")
ROLES = ("chain", "root", "fan", "join")
START_VALUE = 0.5  # the chain's and the first root's input: every kernel's value differs from its neighbours'


@dataclass(frozen=True)
class Kernel:
    """One kernel of an iteration: its position, stream, role, level, and the kernels whose events it waits on."""

    index: int
    stream: int
    role: str
    level: int
    waits: tuple[int, ...] = ()


def chain_plan(n_streams: int, kernels: int, dependencies: str = "events") -> list[Kernel]:
    """``kernels`` kernels, kernel ``j`` on stream ``j % n_streams``, each waiting on the one before it."""
    _check(n_streams, kernels, dependencies, "kernels")
    return [
        Kernel(j, j % n_streams, "chain", j, (j - 1,) if j and dependencies == "events" else ())
        for j in range(kernels)
    ]


def fan_plan(n_streams: int, levels: int, dependencies: str = "events") -> list[Kernel]:
    """Per level: root on stream 0, one fan kernel per stream waiting on the root, a join on stream 0 waiting
    on every fan kernel. ``n_streams + 2`` kernels a level."""
    _check(n_streams, levels, dependencies, "levels")
    events = dependencies == "events"
    plan: list[Kernel] = []
    for level in range(levels):
        root = len(plan)
        plan.append(Kernel(root, 0, "root", level))
        fans = [root + 1 + i for i in range(n_streams)]
        plan.extend(Kernel(k, i, "fan", level, (root,) if events else ()) for i, k in enumerate(fans))
        plan.append(Kernel(len(plan), 0, "join", level, tuple(fans) if events else ()))
    return plan


def plan_for(pattern: str, n_streams: int, kernels: int, levels: int, dependencies: str) -> list[Kernel]:
    if pattern == "chain":
        return chain_plan(n_streams, kernels, dependencies)
    if pattern == "fan":
        return fan_plan(n_streams, levels, dependencies)
    raise ValueError(f"stream_dependency: pattern must be one of {PATTERNS}, got {pattern!r}")


def chain_kernels(n_streams: int, total: int) -> int:
    """Kernels of one chain: ``total`` rounded down to a multiple of ``n_streams``, at least two per stream (so
    each stream's next-iteration kernel is ordered after every read of the slot it overwrites)."""
    return max(2, total // n_streams) * n_streams


def _check(n_streams: int, count: int, dependencies: str, what: str) -> None:
    if n_streams < 1:
        raise ValueError(f"stream_dependency: need at least one stream, got {n_streams}")
    if count < 1:
        raise ValueError(f"stream_dependency: {what} must be >= 1, got {count}")
    if dependencies not in DEPENDENCIES:
        raise ValueError(
            f"stream_dependency: dependencies must be one of {DEPENDENCIES}, got {dependencies!r}"
        )


# ---------------------------------------------------------------------------------------- the check
def required_edges(plan: Sequence[Kernel]) -> set[tuple[int, int]]:
    """(producer, consumer) for every event wait the plan requires."""
    return {(p, k.index) for k in plan for p in k.waits}


def missing_edges(plan: Sequence[Kernel], issued: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The required waits that were not issued (sorted): a kernel launched without waiting for its input."""
    return sorted(required_edges(plan) - set(issued))


def dependency_failure(
    plan: Sequence[Kernel], issued: Iterable[tuple[int, int]], shown: int = 3
) -> str | None:
    """Why the issued waits do not honour the plan (naming the first missing ones), or ``None``."""
    missing = missing_edges(plan, issued)
    if not missing:
        return None
    by_index = {k.index: k for k in plan}
    named = ", ".join(
        f"kernel {c} ({by_index[c].role}, stream {by_index[c].stream}) did not wait on kernel {p} "
        f"(stream {by_index[p].stream})"
        for p, c in missing[:shown]
    )
    more = f" and {len(missing) - shown} more" if len(missing) > shown else ""
    return f"dependency order not honoured: {len(missing)} of {len(required_edges(plan))} waits missing: {named}{more}"


# ---------------------------------------------------------------------------------------- known values
def expected_values(plan: Sequence[Kernel], n_streams: int) -> list[float]:
    """Each kernel's output when every dependency was honoured (float arithmetic, as the kernels compute):
    chain ``x_j = x_{j-1} + 1`` from ``START_VALUE``; fan: root ``r = previous join + 1``, fan kernel ``i``
    ``r * fan_weights[i]``, join the sum of its level's fan outputs (= r: the weights sum to 1)."""
    weights = fan_weights(n_streams)
    out: list[float] = []
    last = root = START_VALUE
    for k in plan:
        if k.role in ("chain", "root"):
            last = last + 1.0
            out.append(last)
            root = last
        elif k.role == "fan":
            out.append(root * weights[k.stream])
        else:
            fans = [out[i] for i in range(k.index - n_streams, k.index)]
            last = sum(fans)
            out.append(last)
    return out


def fan_weights(n_streams: int) -> list[float]:
    """Fan kernel ``i`` multiplies the root by ``(i + 1) / (n (n + 1) / 2)``: distinct per stream, summing to 1
    (the join's value stays near the root's, level after level, whatever the stream count)."""
    total = n_streams * (n_streams + 1) / 2
    return [(i + 1) / total for i in range(n_streams)]


# ---------------------------------------------------------------------------------------- figures
def dependent_kernels(pattern: str, kernels: int, levels: int) -> int:
    """Kernels per iteration that wait on an event on the critical path: a chain's every kernel after the
    first; a fan's two per level (the last fan kernel to start, and the join)."""
    if pattern == "chain":
        return kernels - 1
    if pattern == "fan":
        return 2 * levels
    raise ValueError(f"stream_dependency: pattern must be one of {PATTERNS}, got {pattern!r}")


def added_us_per_dependent_kernel(
    iteration_us: Sequence[float], reference_us_per_kernel: float, kernels: int, dependent: int
) -> tuple[float, tuple[float, ...]]:
    """(value, per-round samples) of ``(iteration time - the reference's for as many kernels) / dependent``.

    The reference's time is its µs per kernel times this iteration's ``kernels`` (a chain of 126 kernels on 3
    streams against its one-stream reference of 128: the kernels are serial in both). One sample per timed
    round of the run with events, each against the reference run's median; the value is the samples' median
    (the map is monotonic). Negative where the run with events was faster than the reference (noise)."""
    if dependent < 1 or kernels < 1:
        raise ValueError(f"kernels and dependent kernels must be >= 1, got {kernels} and {dependent}")
    if not iteration_us:
        raise ValueError("no timed rounds to read")
    reference_us = reference_us_per_kernel * kernels
    samples = tuple((us - reference_us) / dependent for us in iteration_us)
    return (median(iteration_us) - reference_us) / dependent, samples
