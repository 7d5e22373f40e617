"""What one iteration of a step launches, per stream index, seen from the host: the CPU side of the per-stream
kernel check (aorta/hw_queue/stream_work.py).

On the CPU backend there are no device kernel timestamps. What the step does is still observable where it
happens: every aten op it dispatches (a ``TorchDispatchMode``, as aorta/hw_queue/write_log.py) and every spin kernel it
enqueues (``Device.spin`` notes itself here), each filed under the stream index of the innermost
``rec.use(i)`` / ``rec.on(i)`` block open at that moment (``RoundRecorder`` tells the log when a block opens
and closes). Ops that launch no kernel on a GPU (views, ``empty``, ``detach``) are not counted. Untimed: the
runner runs one iteration under it after the timed rounds.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator

from torch.utils._python_dispatch import TorchDispatchMode

# aten ops (name without "aten::") that are GEMMs: one GEMM kernel (or more) each on a GPU
GEMM_OPS = frozenset(
    {"mm", "addmm", "bmm", "baddbmm", "addbmm", "_scaled_mm", "_int_mm", "_grouped_mm", "_addmm_activation"}
)
# aten ops that allocate or re-describe memory without launching a kernel
NO_KERNEL_OPS = frozenset(
    {
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "detach",
        "alias",
        "lift_fresh",
        "lift_fresh_copy",
        "set_",
        "resize_",
        "record_stream",
        "is_pinned",
        "_pin_memory",
        "sym_size",
        "sym_stride",
        "sym_numel",
        "sym_storage_offset",
        "dim",
        "size",
        "stride",
    }
)


def op_kind(func) -> str | None:
    """``gemm``, ``other``, or ``None`` for an op that launches no kernel."""
    if getattr(func, "is_view", False):
        return None
    name = func._schema.name.removeprefix("aten::")
    if name in NO_KERNEL_OPS:
        return None
    return "gemm" if name.rstrip("_") in GEMM_OPS else "other"


class LaunchLog(TorchDispatchMode):
    """Counts the ops dispatched and spins enqueued inside each stream block while active; ops run unchanged.

    ``counts[i]``: kind -> count for stream index ``i``; work outside every block is under ``None``."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[int | None, Counter] = {}
        self._blocks: list[int] = []

    @contextlib.contextmanager
    def block(self, stream_index: int) -> Iterator[None]:
        self._blocks.append(stream_index)
        try:
            yield
        finally:
            self._blocks.pop()

    def note(self, kind: str) -> None:
        self.counts.setdefault(self._blocks[-1] if self._blocks else None, Counter())[kind] += 1

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kind = op_kind(func)
        if kind is not None:
            self.note(kind)
        return func(*args, **(kwargs or {}))

    def per_stream(self) -> dict[int, Counter]:
        return {i: c for i, c in self.counts.items() if i is not None}

    def total(self) -> Counter:
        out: Counter = Counter()
        for c in self.counts.values():
            out.update(c)
        return out
