"""Which of a workload's buffers a step writes, so the one-stream check can poison every one of them.

Poisoning only a step's final output lets a multi-stream run pass with a stream's work missing: an
intermediate buffer that stream should have written (a copied batch, a prefetched weight) still holds the
reference run's values, and the readers downstream compute the right answer from them. So the reference
step runs under ``WriteLog``, a ``TorchDispatchMode`` that notes the region every op writes (in-place ops
and ``out=`` arguments, from the op's schema); ``written_views`` maps those regions back onto the
workload's own tensors (its attributes, through lists, tuples and dicts) and returns one view per region.
Temporaries of the step are left out: no attribute holds their storage. Ops that write only some elements
of their argument (``index_copy_``, ``scatter_``, ``masked_fill_`` ...) are left out too: poisoning the
whole argument would destroy what the step leaves alone (a KV cache's prefilled rows); the buffers such an
op fills are read downstream, where the poison of the rest of the step shows. Untimed: the check only.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# aten op names (without "aten::" and the trailing "_") that write only part of the written argument
PARTIAL_WRITES = (
    "index_copy",
    "index_put",
    "_index_put_impl",
    "index_fill",
    "index_add",
    "index_reduce",
    "scatter",
    "scatter_add",
    "scatter_reduce",
    "masked_fill",
    "masked_scatter",
    "put",
)

Region = tuple[
    int, torch.dtype, tuple[int, ...], tuple[int, ...], int
]  # storage ptr, dtype, size, stride, offset


def written_args(func, args, kwargs) -> list[torch.Tensor]:
    """The tensors an aten op writes: arguments its schema marks as written (``Tensor(a!)``)."""
    out: list[torch.Tensor] = []
    positional = [a for a in func._schema.arguments if not a.kwarg_only]
    for n, arg in enumerate(func._schema.arguments):
        if arg.alias_info is None or not arg.alias_info.is_write:
            continue
        if not arg.kwarg_only and n < len(positional) and n < len(args):
            value = args[n]
        else:
            value = kwargs.get(arg.name)
        if isinstance(value, torch.Tensor):
            out.append(value)
        elif isinstance(value, (list, tuple)):
            out.extend(v for v in value if isinstance(v, torch.Tensor))
    return out


class WriteLog(TorchDispatchMode):
    """Notes the region of every tensor written while active; the ops themselves run unchanged."""

    def __init__(self) -> None:
        super().__init__()
        self.regions: dict[Region, None] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func._schema.name.removeprefix("aten::").rstrip("_") in PARTIAL_WRITES:
            return func(*args, **kwargs)
        for t in written_args(func, args, kwargs):
            if t.device.type != "meta" and t.numel():
                self.regions[
                    (
                        t.untyped_storage().data_ptr(),
                        t.dtype,
                        tuple(t.shape),
                        tuple(t.stride()),
                        t.storage_offset(),
                    )
                ] = None
        return func(*args, **kwargs)


def held_tensors(obj: Any, depth: int = 4) -> Iterator[torch.Tensor]:
    """Tensors held by ``obj``'s attributes (through lists, tuples and dicts, ``depth`` levels down)."""
    seen: set[int] = set()

    def walk(value: Any, d: int) -> Iterator[torch.Tensor]:
        if id(value) in seen or d < 0:
            return
        seen.add(id(value))
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, dict):
            for v in value.values():
                yield from walk(v, d - 1)
        elif isinstance(value, (list, tuple)):
            for v in value:
                yield from walk(v, d - 1)

    for v in vars(obj).values():
        yield from walk(v, depth)


def written_views(obj: Any, log: WriteLog) -> list[torch.Tensor]:
    """One view per region ``log`` saw written, on the tensor of ``obj`` that holds its storage."""
    by_storage: dict[int, torch.Tensor] = {}
    for t in held_tensors(obj):
        if t.device.type != "meta":
            by_storage.setdefault(t.untyped_storage().data_ptr(), t)
    views = []
    for ptr, dtype, size, stride, offset in log.regions:
        base = by_storage.get(ptr)
        if base is None or base.dtype != dtype:
            continue  # a temporary of the step, or a reinterpreting view: nothing the next run reads
        views.append(base.detach().as_strided(size, stride, offset))
    return views
