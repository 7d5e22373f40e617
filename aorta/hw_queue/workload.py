"""What every workload implements: the ``Workload`` base class and the one-stream result check.

A workload is a small class pointing at its frozen ``WorkloadSpec`` in ``aorta.hw_queue.specs`` (name,
category, priority, stream range, its metric, its typed parameters) and three methods: ``setup``
allocates seeded inputs, ``step(rec)`` enqueues one iteration on the streams it was given
(``with rec.on(i):``), ``result`` returns what the last step produced; ``expected_work`` declares the least
work one step puts on each stream, from the configuration alone.
The runner checks the multi-stream result against the same step run on one stream before timing, and after
the timed rounds each stream's kernels against ``expected_work`` (aorta/hw_queue/stream_work.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import torch

from aorta.hw_queue.specs import DTYPE_NAMES, ISSUE_ORDERS, SIZE_NAMES, WorkloadSpec
from aorta.hw_queue.stream_work import WorkSpec
from aorta.record.metric import Metric

DTYPES = dict(zip(DTYPE_NAMES, (torch.bfloat16, torch.float32, torch.float16)))  # bf16, fp32, fp16


class WorkloadCheckError(AssertionError):
    """The multi-stream result differs from the one-stream reference: never timed, never saved."""


class StreamWorkError(WorkloadCheckError):
    """After the timed rounds, a stream ran less than the workload declares for it (aorta/hw_queue/stream_work.py):
    the run is never saved."""


class WorkloadUnavailable(RuntimeError):
    """The workload cannot run here (e.g. no GPU for graphs, no compiler for torch.compile).

    Raised from ``setup``; the plugin turns it into a skip carrying this message as the reason.
    """


class Workload:
    spec: ClassVar[WorkloadSpec]

    def __init__(
        self,
        device,
        n_streams: int,
        *,
        size: str = "full",
        dtype: str | None = None,
        issue_order: str = "breadth",
        seed: int = 0,
        **params: Any,
    ):
        if size not in SIZE_NAMES:
            raise ValueError(f"size must be one of {SIZE_NAMES}, got {size!r}")
        if issue_order not in ISSUE_ORDERS:
            raise ValueError(f"issue_order must be one of {ISSUE_ORDERS}, got {issue_order!r}")
        dtype = dtype or self.spec.dtypes[0]
        if dtype not in self.spec.dtypes:
            raise ValueError(f"{self.spec.name}: dtype {dtype!r} not supported; allowed: {self.spec.dtypes}")
        self.device = device
        self.n_streams = n_streams
        self.size = size
        self.dtype_name = dtype
        self.dtype = DTYPES[dtype]
        self.issue_order = issue_order
        self.seed = seed
        self.params = self.spec.check_params(params)  # a misspelled or mistyped parameter is a TypeError

    @staticmethod
    def dtype_of(name: str) -> torch.dtype:
        return DTYPES[name]

    # -- to implement -----------------------------------------------------------------
    def setup(self) -> None:
        raise NotImplementedError

    def step(self, rec) -> None:
        raise NotImplementedError

    def result(self) -> Any:
        raise NotImplementedError

    def metrics(self, per_iteration_ms: Sequence[float]) -> list[Metric]:
        raise NotImplementedError

    # -- may override -----------------------------------------------------------------
    def tolerance(self) -> tuple[float, float]:
        """(rtol, atol) for the one-stream check; bf16 rounding differs with reduction order."""
        return (2e-2, 2e-2) if self.dtype in (torch.bfloat16, torch.float16) else (1e-4, 1e-4)

    def size_label(self) -> str:
        """Human-readable size, named in out-of-memory failures."""
        given = {k: v for k, v in self.params.items() if v is not None}
        return f"{self.size} {given}" if given else self.size

    def identity(self) -> tuple:
        """What makes two runs of this workload the same configuration: class, streams, size, dtype, issue
        order (moot on one stream), seed and parameters."""
        order = self.issue_order if self.n_streams > 1 else None
        params = tuple(sorted((k, repr(v)) for k, v in self.params.items()))
        return (type(self), self.n_streams, self.size, self.dtype_name, order, self.seed, params)

    def info(self) -> dict:
        """Workload-specific facts for extra_info (shapes, counts)."""
        return {}

    def extra_metrics(self, run) -> tuple[list[Metric], dict[str, str]]:
        """Metrics that need the whole timed run (e.g. overlap from intervals) and unavailable ones."""
        return [], {}

    def has_kernel_figures(self) -> bool:
        """Whether this workload reads figures from the kernel timeline (overrides ``extra_metrics``): a
        gate's lean repeat run keeps its kernel pass, or those figures would have one sample in all."""
        return type(self).extra_metrics is not Workload.extra_metrics

    def reference_reads_timed_rounds(self) -> bool:
        """Whether a benchmark that reads this configuration as its reference run (``record=False``) reads the
        reference's timed rounds. One that reads only kernel-pass figures (hetero_kernels' tiny kernels alone)
        has its reference time one round (the K probe's) before the kernel pass (``REFERENCE_TIMED_ROUNDS``)."""
        return True

    def unavailable(self) -> dict[str, str]:
        """Figures this workload cannot give whatever the device (name -> why), e.g. an overlap on one stream."""
        return {}

    def measure_reference(self, plan) -> None:
        """Time this workload's own reference (e.g. a bare matmul); the runner calls it right before and
        right after the timed rounds, so a drift of clocks or power falls on both."""

    def reference_metrics(
        self, mine: Mapping[str, Metric], reference: Mapping[str, Metric] | None
    ) -> tuple[list[Metric], dict[str, str]]:
        """Figures read against a reference: ``reference`` holds the figures of a reference run of the same
        workload that the benchmark passed (``hw_queue(..., reference=result)``: the one-stream run, the
        tiny kernels alone), ``mine`` this run's. Returns the figures and the unavailable ones (name -> why)."""
        return [], {}

    def expected_work(self) -> WorkSpec | None:
        """The least work one iteration of ``step`` puts on each stream index (GEMMs, spins, other ops), from
        the workload's own configuration, never from running it: after the timed rounds the runner checks
        it against the kernel timeline (the launch log on CPU) and fails a run whose streams did less
        (aorta/hw_queue/stream_work.py). ``None``: nothing declared, and the record says so."""
        return None

    def uses_graph(self) -> bool:
        return False

    def launch_hold_cycles(self) -> int:
        """Spin cycles the timing loop runs before each round so its launches start from a full queue."""
        return 0

    def round_barrier(self) -> Callable[[], None] | None:
        """For a round across ranks: what each rank enqueues after its hold so that every rank's round starts
        together (``TimingPlan.round_barrier``); ``None`` for a round of one process."""
        return None

    def gpu_mode_unavailable_reason(self) -> str | None:
        """Why this workload cannot queue a whole round on the GPU before it starts (``None``: it can)."""
        return None

    def graph_unavailable_reason(self) -> str | None:
        """Why this workload's round cannot be captured as a graph (``None``: it can; GPU mode then replays
        it). A step that reads a device value on the host, or launches differently from one call to the
        next, cannot be replayed."""
        return None

    def interval_unavailable_reason(self) -> str | None:
        """Why this workload records no per-stream intervals (``None``: it records them)."""
        return None

    def make_streams(self) -> list:
        """The streams this workload runs on; override to ask for stream priorities."""
        return self.device.streams(self.n_streams)

    # -- helpers ----------------------------------------------------------------------
    def sized(self, sizes: dict[str, dict]) -> dict:
        """This size's entry of ``sizes``, with any of its keys overridden by the workload's params.

        The spec declares those keys as parameters, so ``check_params`` has already refused a misspelled one.
        """
        cfg = dict(sizes[self.size])
        cfg.update({k: v for k, v in self.params.items() if k in cfg and v is not None})
        return cfg

    def generator(self) -> torch.Generator:
        g = torch.Generator(device=self.device.torch_device)
        g.manual_seed(self.seed)
        return g

    def randn(self, *shape: int, gen: torch.Generator, dtype=None, scale: float = 1.0) -> torch.Tensor:
        t = torch.randn(*shape, generator=gen, device=self.device.torch_device, dtype=torch.float32)
        return (t * scale).to(dtype or self.dtype)

    def stream_order(self) -> list[int]:
        return list(range(self.n_streams))


def compare_results(out: Any, ref: Any, rtol: float, atol: float, where: str = "result") -> None:
    """Raise ``WorkloadCheckError`` naming the first element that differs (tensors, lists, dicts)."""
    if isinstance(ref, dict):
        if set(out) != set(ref):
            raise WorkloadCheckError(f"{where}: keys differ: {sorted(out)} vs {sorted(ref)}")
        for k in ref:
            compare_results(out[k], ref[k], rtol, atol, f"{where}[{k!r}]")
        return
    if isinstance(ref, (list, tuple)):
        if len(out) != len(ref):
            raise WorkloadCheckError(f"{where}: {len(out)} items vs {len(ref)} in the reference")
        for i, (o, r) in enumerate(zip(out, ref)):
            compare_results(o, r, rtol, atol, f"{where}[{i}]")
        return
    if isinstance(ref, torch.Tensor):
        if out.shape != ref.shape:
            raise WorkloadCheckError(f"{where}: shape {tuple(out.shape)} vs reference {tuple(ref.shape)}")
        o, r = out.float(), ref.float()
        if not torch.isfinite(o).all():
            raise WorkloadCheckError(f"{where}: non-finite values in the multi-stream result")
        if not torch.allclose(o, r, rtol=rtol, atol=atol):
            diff = (o - r).abs().max().item()
            raise WorkloadCheckError(
                f"{where}: differs from the one-stream reference (max abs diff {diff:.3g}, "
                f"rtol={rtol}, atol={atol})"
            )
        return
    if out != ref:
        raise WorkloadCheckError(f"{where}: {out!r} vs reference {ref!r}")


def clone_result(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, dict):
        return {k: clone_result(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(clone_result(v) for v in value)
    return value
