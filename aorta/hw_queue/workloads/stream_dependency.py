"""stream_dependency: tiny kernels that wait on each other's events across streams; added µs per dependent kernel.

ROCm 7.14 mapped a stream that waits on another stream's event to a different hardware queue: about 1 us more
per kernel, -20% decode at low concurrency on MI355X (ROCm/rocm-systems issue 11212), invisible to the
throughput workloads. The patterns (``chain``, ``fan``) and the arithmetic live in aorta/hw_queue/parts/stream_dependencies.py
(pure); this module enqueues them. Every kernel is one 1-element op (add, mul, or a sum over the fan's row),
so a hop's latency is not hidden behind the work.

- ``dependencies="events"``: each kernel waits on the events of the kernels it reads
  (``Device.wait_event`` on an event ``Device.record_event`` recorded right after its producer).
- ``dependencies="none"``: the reference, the same kernels each reading a constant that holds its producer's
  value, no event waits. The benchmark passes it as the reference run (the chain's on one stream).
- ``extra_hops`` (``--aorta-extra-deps``): a deliberate extra dependency per kernel: every event a kernel waits
  on is relayed first through that many relay streams (a wait, a 1-element relay kernel, then a new event, on
  each). For proving that the gate sees an added dependency; the record says so. The relay kernel gives the
  hop a node in a graph replay too (a wait and an event alone capture as the same edge: measured on an H100,
  the graph variant did not move without it), so the knob acts on both modes.
- ``mode``: ``eager`` (real streams and events; under ``--aorta-mode gpu`` the round is queued behind a hold,
  so the GPU's dependency latency is measured, not the host's launch rate) or ``graph`` (the iteration captured
  as one CUDA/HIP graph, the waits as graph edges, and replayed).

Correct before fast: every kernel's output is checked against the one-stream run, with every buffer poisoned
first (a kernel that ran before its producer reads poison or a wrong value), and every wait the pattern
requires must have been issued (``dependency_failure``: on the CPU, where ops run in issue order, a missing wait
cannot show in the values).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial

import torch

from aorta.hw_queue.parts import stream_dependencies as deps
from aorta.hw_queue.specs import SPECS
from aorta.hw_queue.stream_work import StreamWork, WorkSpec
from aorta.hw_queue.workload import Metric, Workload, WorkloadCheckError, WorkloadUnavailable
from aorta.stats import median

MODES = ("eager", "graph")
MAX_EXTRA_HOPS = 8
# Chain: kernels per iteration (the same total at every stream count); fan: levels per iteration. About 2 us a
# tiny kernel with the queue full (H100, docs/reference_floors.md): a chain of 128 is ~0.25 ms a round, well above
# the event floor. Each stream's commands (kernel, event record, waits) must fit the queue a hold fills (one
# stream blocked the host before 512 launches, H100): the chain on one stream is ~380, a fan level puts
# n + 6 on stream 0 (its join waits on every fan kernel), so 8 levels at 32 streams ~300.
SIZES = {"full": {"kernels": 128, "levels": 8}, "smoke": {"kernels": 16, "levels": 3}}
REFERENCE_SOURCE = "reference run: the same kernels without event dependencies (dependencies=none)"


class StreamDependency(Workload):
    spec = SPECS["stream_dependency"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.pattern = self.params.get("pattern") or "chain"
        self.mode = self.params.get("mode") or "eager"
        self.dependencies = self.params.get("dependencies") or "events"
        self.extra_hops = self.params.get("extra_hops") or 0
        name = self.spec.name
        for param, value, allowed in (
            ("pattern", self.pattern, deps.PATTERNS),
            ("mode", self.mode, MODES),
            ("dependencies", self.dependencies, deps.DEPENDENCIES),
        ):
            if value not in allowed:
                raise ValueError(f"{name}: {param} must be one of {allowed}, got {value!r}")
        if not 0 <= self.extra_hops <= MAX_EXTRA_HOPS:
            raise ValueError(f"{name}: extra_hops must be 0 to {MAX_EXTRA_HOPS}, got {self.extra_hops}")
        if self.extra_hops and self.dependencies == "none":
            raise ValueError(
                f"{name}: extra_hops={self.extra_hops} needs dependencies='events' (none to relay)"
            )
        cfg = self.sized(SIZES)
        for param in ("kernels", "levels"):
            if cfg[param] < 1:
                raise ValueError(f"{name}: {param} must be >= 1, got {cfg[param]}")
        self.cfg = cfg
        # Issue order is the dependency order: a kernel can only wait on an event already recorded, so breadth
        # and depth issue the same launches (the record keeps the order asked for).
        self.kernels = deps.chain_kernels(self.n_streams, cfg["kernels"])
        self.plan = deps.plan_for(
            self.pattern, self.n_streams, self.kernels, cfg["levels"], self.dependencies
        )
        self.dependent = deps.dependent_kernels(self.pattern, self.kernels, cfg["levels"])

    # ------------------------------------------------------------------------------ set-up
    def setup(self) -> None:
        if self.mode == "graph" and not self.device.supports_graphs():
            raise WorkloadUnavailable("CUDA/HIP graphs need a GPU")
        dev, n = self.device.torch_device, self.n_streams
        expected = deps.expected_values(self.plan, n)
        self.out = torch.empty(len(self.plan), device=dev)  # (kernels,): kernel k writes out[k]
        self.start = torch.full((1,), deps.START_VALUE, device=dev)
        self.weights = torch.tensor(deps.fan_weights(n), device=dev)  # (n,)
        # What each kernel reads in the reference: the value its producer would have written.
        self.constants = torch.tensor(_reference_inputs(self.plan, expected, n), device=dev)  # (kernels, n)
        self._ops = [self._op(k) for k in self.plan]
        # one scratch element per relay stream: its kernel adds 0, a node between the producer and the consumer
        self.relay = torch.zeros(max(self.extra_hops, 1), device=dev)
        self._waited_on = {p for k in self.plan for p in k.waits}
        self._issued: list[tuple[int, int]] = []
        self._stepped = False

    def _op(self, k: deps.Kernel) -> Callable[[], object]:
        """Kernel ``k`` as one call: a 1-element add (chain, root), mul (fan) or sum over the level's row (join).

        With events it reads its producer's output; in the reference, the constant holding that value."""
        dst = self.out[k.index : k.index + 1]  # (1,)
        if self.dependencies == "none":
            src = self.constants[k.index] if k.role == "join" else self.constants[k.index, :1]  # (n,) / (1,)
        elif k.role == "join":
            src = self.out[k.waits[0] : k.waits[-1] + 1]  # (n,): the level's fan outputs
        elif k.waits:
            src = self.out[k.waits[0] : k.waits[0] + 1]  # (1,): the chain's previous kernel, the fan's root
        elif k.index == 0:
            src = self.start
        else:  # a root after the first: the previous level's join, before it on stream 0 (stream order)
            src = self.out[k.index - 1 : k.index]
        if k.role in ("chain", "root"):
            return partial(torch.add, src, 1.0, out=dst)
        if k.role == "fan":
            return partial(torch.mul, src, self.weights[k.stream : k.stream + 1], out=dst)
        return partial(torch.sum, src, 0, keepdim=True, out=dst)

    # ------------------------------------------------------------------------------ one iteration
    def step(self, rec) -> None:
        self._issued = []
        events: dict[int, object] = {}
        for k, op in zip(self.plan, self._ops):
            stream = rec.stream(k.stream)
            with rec.use(k.stream):
                for p in k.waits:
                    self._wait(stream, events[p], p, k.index)
                op()
                if k.index in self._waited_on:
                    events[k.index] = self._record(rec, stream)
        self._stepped = True

    def _wait(self, stream, event, producer: int, consumer: int) -> None:
        """``stream`` (kernel ``consumer``'s) waits for kernel ``producer``'s event; the wait is noted for the check."""
        self.device.wait_event(stream, event)
        self._issued.append((producer, consumer))

    def _record(self, rec, stream):
        """The event a consumer waits on: recorded after the producer, relayed through ``extra_hops`` streams."""
        event = self.device.record_event(stream)
        for hop in range(self.extra_hops):
            relay = rec.stream(self.n_streams + hop)
            # the relay stream waits for the producer (or the relay before it), then stands in for it
            with rec.use(self.n_streams + hop):
                self.device.wait_event(relay, event)
                torch.add(self.relay[hop : hop + 1], 0.0, out=self.relay[hop : hop + 1])
                event = self.device.record_event(relay)
        return event

    def make_streams(self) -> list:
        # The work streams, then one relay stream per extra hop (its relay kernels only).
        return self.device.streams(self.n_streams + self.extra_hops)

    def result(self):
        """Every kernel's output, once the waits the pattern requires were all issued (else the check fails)."""
        if self._stepped:  # against the pattern built anew: a plan edited after set-up cannot excuse itself
            required = deps.plan_for(
                self.pattern, self.n_streams, self.kernels, self.cfg["levels"], self.dependencies
            )
            failure = deps.dependency_failure(required, self._issued)
            if failure is not None:
                raise WorkloadCheckError(f"{self.spec.name}: {failure}")
        return self.out

    def expected_work(self) -> WorkSpec:
        per_stream: dict[int, int] = {}
        for k in self.plan:
            per_stream[k.stream] = per_stream.get(k.stream, 0) + 1
        relayed = len({p for k in self.plan for p in k.waits})  # events recorded per iteration
        for hop in range(self.extra_hops):  # a relay kernel per event waited on, on each relay stream
            per_stream[self.n_streams + hop] = relayed
        return WorkSpec({i: StreamWork(other=c) for i, c in sorted(per_stream.items())})

    # ------------------------------------------------------------------------------ modes
    def uses_graph(self) -> bool:
        return self.mode == "graph"

    def graph_unavailable_reason(self) -> str | None:
        if self.mode == "eager":
            return (
                "the eager variant measures event waits between real streams (queued behind a hold); its graph "
                "variant is the same dependencies captured as graph edges"
            )
        return None

    # ------------------------------------------------------------------------------ figures
    def metrics(self, per_iteration_ms: Sequence[float]) -> list[Metric]:
        per_kernel = [ms * 1e3 / len(self.plan) for ms in per_iteration_ms]
        return [Metric("us_per_kernel", median(per_kernel), "us", False, tuple(per_kernel))]

    def reference_metrics(self, mine, reference):
        """The headline, against the same kernels without dependencies: added µs per dependent kernel (one
        sample per round of this run, against the reference run's median), and the reference's own time."""
        name = "added_us_per_dependent_kernel"
        if self.dependencies == "none":
            return [], {name: "this is the no-dependency reference run itself"}
        here, ref = mine.get("us_per_kernel"), (reference or {}).get("us_per_kernel")
        if here is None or ref is None or ref.value is None:
            reason = "no reference run given (the benchmark passes the dependencies=none run as reference=)"
            return [], {name: reason, "reference_us_per_kernel": reason}
        kernels = len(self.plan)
        iteration_us = [us * kernels for us in here.samples]
        value, samples = deps.added_us_per_dependent_kernel(iteration_us, ref.value, kernels, self.dependent)
        return [
            Metric(name, value, "us", False, samples, source=REFERENCE_SOURCE),
            replace(ref, name="reference_us_per_kernel", source=REFERENCE_SOURCE),
        ], {}

    def info(self) -> dict:
        return {
            "pattern": self.pattern,
            "mode": self.mode,
            "dependencies": self.dependencies,
            "kernels_per_iteration": len(self.plan),
            "dependent_kernels_per_iteration": self.dependent,
            "event_waits_per_iteration": len(deps.required_edges(self.plan)),
            "extra_hops": self.extra_hops,
            "relay_streams": self.extra_hops,
            "levels": self.cfg["levels"] if self.pattern == "fan" else None,
            "same_stream_waits": self.n_streams == 1,
        }

    def size_label(self) -> str:
        return f"{self.pattern} of {len(self.plan)} tiny kernels on {self.n_streams} streams ({self.mode})"


def _reference_inputs(plan: Sequence[deps.Kernel], expected: Sequence[float], n: int) -> list[list[float]]:
    """Per kernel, a row of ``n`` values: what it reads when its producers ran (a single input in element 0,
    a join's fan outputs in all ``n``)."""
    rows = []
    for k in plan:
        if k.role == "join":
            rows.append([expected[i] for i in range(k.index - n, k.index)])
            continue
        if k.role == "fan":
            value = expected[k.index - 1 - k.stream]  # the level's root
        elif k.index == 0:
            value = deps.START_VALUE
        else:
            value = expected[k.index - 1]  # the chain's previous kernel, or the previous level's join
        rows.append([value] + [0.0] * (n - 1))
    return rows
