"""Each stream's work as the workload declares it, against what ran: the per-stream kernel check (pure: no torch).

A workload declares the least work one iteration of its step puts on each of its streams
(``Workload.expected_work``: so many GEMMs, spin kernels and other ops on stream ``i``). After the timed rounds
the runner compares that declaration with what ran, so a workload that launches less than it claims, or on
fewer streams, fails instead of being timed as if it had done the work:

- GPU: the kernel-timestamp pass (aorta/timeline/kernel_timeline.py): the device ops of each round by the block
  (``aorta.s<i>``) that launched them. A graph replay's round carries no blocks (its ranges are not replayed),
  so there the round's totals are compared with the declared totals; the labelled pass beside it, where there
  is one, is compared stream by stream.
- CPU (no kernel timestamps): the launch log of one untimed iteration after the timed rounds
  (aorta/hw_queue/launch_log.py): the aten ops dispatched and the spin kernels enqueued inside each ``rec.use(i)`` /
  ``rec.on(i)`` block.

Kinds: ``gemm`` (a GEMM kernel on the GPU, an ``mm``-family op on the CPU), ``spin`` (``Device.spin``) and
``other``; ``ops`` counts all three (for a stream whose work a compiler or library may launch either way). Declared counts are minimums: a library may launch more device ops for one op (a split-K reduce, a
copy's memset). A kind the spec names in ``placed`` is placed on purpose: a stream declared without it must show
none (a GEMM moved onto a tiny-kernel stream fails). The best round is judged: a workload that launches less
than it claims does so in every round, while a profiler that loses records under load does not.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

KINDS = ("gemm", "spin", "other")

# Device-op names, NVIDIA and AMD side by side (as torch.profiler writes them):
# - spin: ``at::cuda::(anonymous namespace)::spin_kernel(long)`` (``torch.cuda._sleep``, also on ROCm);
# - GEMM: cuBLAS ``sm90_xmma_gemm_*``, ``nvjet_*`` (cuBLAS 12.8+ on Hopper), ``ampere_*gemm*``, CUTLASS
#   ``cutlass*gemm*``, GEMV kernels (a matmul of few rows); rocBLAS / hipBLASLt Tensile ``Cijk_*``.
SPIN_KERNEL = re.compile(r"spin_kernel")
GEMM_KERNEL = re.compile(r"gemm|gemv|nvjet|xmma|^Cijk_", re.IGNORECASE)


@functools.lru_cache(maxsize=8192)  # a round repeats a few names many times (9 s per H100 suite run uncached)
def kernel_kind(name: str) -> str:
    """``spin``, ``gemm`` or ``other`` for a device op's name."""
    if SPIN_KERNEL.search(name):
        return "spin"
    if GEMM_KERNEL.search(name):
        return "gemm"
    return "other"


@dataclass(frozen=True)
class StreamWork:
    """The least work one iteration puts on one stream, by kind."""

    gemm: int = 0
    spin: int = 0
    other: int = 0
    ops: int = (
        0  # ops of any kind (a stream whose work the device may launch as GEMMs or not: fused, compiled)
    )

    def __post_init__(self) -> None:
        for kind in (*KINDS, "ops"):
            value = getattr(self, kind)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"StreamWork.{kind} must be an int >= 0, got {value!r}")

    def counts(self) -> dict[str, int]:
        return {kind: getattr(self, kind) for kind in KINDS}

    @property
    def least_ops(self) -> int:
        """Ops of any kind this stream must show: ``ops``, or the kinds' sum where that is more."""
        return max(self.ops, self.gemm + self.spin + self.other)


@dataclass(frozen=True)
class WorkSpec:
    """Per stream index, the least work of one iteration; ``placed``: kinds only the declaring streams run."""

    streams: Mapping[int, StreamWork]
    placed: tuple[str, ...] = ()
    note: str = ""
    totals: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        for kind in self.placed:
            if kind not in KINDS:
                raise ValueError(f"WorkSpec.placed: unknown kind {kind!r} (allowed: {', '.join(KINDS)})")
        if not self.streams or any(not isinstance(i, int) or i < 0 for i in self.streams):
            raise ValueError(
                f"WorkSpec.streams: stream indices must be ints >= 0, got {sorted(self.streams)}"
            )
        totals = {kind: sum(w.counts()[kind] for w in self.streams.values()) for kind in KINDS}
        totals["ops"] = sum(w.least_ops for w in self.streams.values())
        object.__setattr__(self, "totals", totals)

    def to_info(self) -> dict:
        """For extra_info: streams with declared work, the totals, the placed kinds."""
        return {
            "streams_declared": len(self.streams),
            "totals_per_iteration": dict(self.totals),
            "placed": list(self.placed),
        }


def every_stream(n_streams: int, work: StreamWork, note: str = "") -> WorkSpec:
    """``work`` on each of streams ``0 .. n_streams - 1`` (a workload that spreads its work over every stream)."""
    return WorkSpec(dict.fromkeys(range(n_streams), work), note=note)


Counts = Mapping[str, int]


def stream_shortfalls(spec: WorkSpec, observed: Mapping[int, Counts], iterations: int = 1) -> list[str]:
    """What ``observed`` (per stream index, kind -> count, over ``iterations`` iterations) lacks of ``spec``."""
    problems = []
    for i in sorted(spec.streams):
        seen = dict(observed.get(i, {}))
        seen["ops"] = sum(seen.get(kind, 0) for kind in KINDS)
        short = [
            f"stream {i}: {_per_iteration(seen.get(kind, 0), iterations)} {_ops(kind)} per iteration, "
            f"declared at least {least}"
            for kind, least in (*spec.streams[i].counts().items(), ("ops", spec.streams[i].least_ops))
            if seen.get(kind, 0) < least * iterations
        ]
        problems += short[:1]  # the first shortfall names the stream; its total follows from it
    for kind in spec.placed:
        for i in sorted(observed, key=str):
            declared = spec.streams.get(i) if isinstance(i, int) else None
            if observed[i].get(kind, 0) and (declared is None or not declared.counts()[kind]):
                problems.append(
                    f"stream {i}: {_per_iteration(observed[i][kind], iterations)} {kind} op(s) per iteration, "
                    f"declared none (only streams {_streams_with(spec, kind)} run {kind} ops)"
                )
    return problems


def total_shortfalls(spec: WorkSpec, observed: Counts, iterations: int = 1) -> list[str]:
    """What the round's ops, all streams together (a graph replay: no blocks), lack of the declared totals."""
    seen = {**observed, "ops": sum(observed.get(kind, 0) for kind in KINDS)}
    return [
        f"all streams: {_per_iteration(seen.get(kind, 0), iterations)} {_ops(kind)} per iteration, "
        f"declared at least {least}"
        for kind, least in spec.totals.items()
        if seen.get(kind, 0) < least * iterations
    ]


def _ops(kind: str) -> str:
    return "op(s) of any kind" if kind == "ops" else f"{kind} op(s)"


def _per_iteration(count: int, iterations: int) -> str:
    return str(count) if iterations == 1 else f"{count / iterations:g}"


def _streams_with(spec: WorkSpec, kind: str) -> str:
    return ", ".join(str(i) for i in sorted(spec.streams) if spec.streams[i].counts()[kind]) or "none"


@dataclass(frozen=True)
class Verdict:
    """The check's outcome over one pass: the best round's problems (empty: the declared work ran)."""

    source: str
    rounds: int
    problems: tuple[str, ...]
    by_stream: bool
    streams_with_work: int | None = None  # stream indices that ran ops in the judged round (None: no indices)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_info(self) -> dict:
        return {
            "source": self.source,
            "rounds_checked": self.rounds,
            "by_stream": self.by_stream,
            "streams_with_work": self.streams_with_work,
            "ok": self.ok,
            "problems": list(self.problems[:20]),
        }


def judge(
    spec: WorkSpec,
    rounds: Sequence[tuple[Mapping[int, Counts], Counts]],
    iterations: int,
    source: str,
    *,
    by_stream: bool,
) -> Verdict:
    """The best of ``rounds`` (each: per-stream counts, total counts) against ``spec``. ``by_stream`` False: the
    rounds carry no stream index (a graph replay), so only the totals are compared."""
    best: list[str] | None = None
    with_work = None
    for per_stream, total in rounds:
        problems = stream_shortfalls(spec, per_stream, iterations) if by_stream else []
        problems += total_shortfalls(spec, total, iterations) if not by_stream else []
        if best is None or len(problems) < len(best):
            best = problems
            with_work = sum(1 for c in per_stream.values() if sum(c.values())) if by_stream else None
    if best is None:
        best = ["no round to check"]
    return Verdict(source, len(rounds), tuple(best), by_stream, with_work)


def kernel_round_counts(blocks: Iterable, ops: Iterable) -> tuple[dict[int, Counter], Counter]:
    """Per stream index (from the round's blocks) and over the whole round, device ops by kind."""
    per_stream: dict[int, Counter] = {}
    for block in blocks:
        counter = per_stream.setdefault(block.stream_index, Counter())
        counter.update(kernel_kind(op.name) for op in block.ops)
    return per_stream, Counter(kernel_kind(op.name) for op in ops)


def failure_message(workload: str, verdict: Verdict) -> str:
    shown = "; ".join(verdict.problems[:8]) + (
        f"; and {len(verdict.problems) - 8} more" if len(verdict.problems) > 8 else ""
    )
    return (
        f"{workload}: the work that ran is less than the workload declares ({verdict.source}, best of "
        f"{verdict.rounds} round(s)): {shown}"
    )
