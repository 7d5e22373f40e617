"""A stream whose work does not run must fail the one-stream check, for every workload and every stream.

The double below hands the step a recorder whose blocks on stream ``drop`` (``rec.on`` / ``rec.use``) run
with every write skipped (in-place ops and ``out=`` arguments do nothing; the schema says which arguments
an op writes): as if that stream's kernels never ran. The runner poisons every buffer region the reference
step wrote (aorta/hw_queue/write_log.py), so the missing writes must reach the result as poison or as wrong values.
"""

from __future__ import annotations

import contextlib

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from aorta.device import Device
from aorta.hw_queue.runner import check_against_one_stream
from aorta.hw_queue.workload import WorkloadCheckError, WorkloadUnavailable
from aorta.hw_queue.workloads import REGISTRY
from aorta.hw_queue.write_log import written_args

N_STREAMS = 3
# Workloads whose stream's work cannot be dropped on its own, with the reason.
CANNOT_DROP: dict[tuple[str, int], str] = {}


class SkipWrites(TorchDispatchMode):
    """Every op that writes a tensor does nothing and hands back what it would have written."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        written = written_args(func, args, kwargs)
        if not written:
            return func(*args, **kwargs)
        n = len(func._schema.returns)
        return None if n == 0 else written[0] if n == 1 else tuple(written[:n])


class DropStream:
    """The recorder, but the blocks on stream ``drop`` write nothing."""

    def __init__(self, rec, drop: int):
        self._rec, self._drop = rec, drop

    def __getattr__(self, name):
        return getattr(self._rec, name)

    @contextlib.contextmanager
    def on(self, i, label=None):
        with self._rec.on(i, label) as s, SkipWrites() if i == self._drop else contextlib.nullcontext():
            yield s

    def use(self, i):
        return self.on(i)


def dropping(cls, drop: int):
    class Dropping(cls):
        def step(self, rec):
            multi = rec.stream(0) is not rec.stream(rec.n_streams - 1)  # the reference runs on one stream
            super().step(DropStream(rec, drop) if multi else rec)

    Dropping.__name__ = f"{cls.__name__}Dropping{drop}"
    return Dropping


def cases():
    for name in sorted(REGISTRY):
        cls = REGISTRY[name]
        for drop in range(N_STREAMS):
            marks = (
                [pytest.mark.skip(reason=CANNOT_DROP[(name, drop)])] if (name, drop) in CANNOT_DROP else []
            )
            yield pytest.param(cls, drop, id=f"{name}-s{drop}", marks=marks)


@pytest.fixture(scope="module")
def cpu():
    torch.set_num_threads(1)
    return Device.open("cpu")


@pytest.mark.parametrize(("cls", "drop"), list(cases()))
def test_dropping_a_streams_work_fails_the_check(cpu, cls, drop):
    n = max(N_STREAMS, cls.spec.min_streams)
    workload = dropping(cls, drop)(cpu, n, size="smoke")
    try:
        workload.setup()
    except WorkloadUnavailable as e:
        pytest.skip(str(e))
    with pytest.raises(WorkloadCheckError):
        check_against_one_stream(cpu, workload, workload.make_streams())


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_the_same_workload_passes_with_every_stream(cpu, name):
    cls = REGISTRY[name]
    workload = cls(cpu, max(N_STREAMS, cls.spec.min_streams), size="smoke")
    try:
        workload.setup()
    except WorkloadUnavailable as e:
        pytest.skip(str(e))
    check_against_one_stream(cpu, workload, workload.make_streams())
