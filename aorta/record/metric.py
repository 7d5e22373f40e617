"""One reported figure: value, unit, direction, per-round samples, source (pure).

Written into the run record (aorta/record) as ``{value, unit, higher_is_better, samples, source, judged}``;
``source``, ``judged: false``, ``part_of_step: true`` and ``from_pass: true`` only where set. A figure's noise is not declared here: the gate measures
it between fresh-process runs (aorta.stats.noise); a ``noise_floor`` in an older record is ignored."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aorta import stats


@dataclass(frozen=True)
class Metric:
    """One figure a workload reports; ``samples`` holds one value per timed round where derivable."""

    name: str
    value: float | None  # None: read from a record that stores null (the figure was unavailable)
    unit: str
    higher_is_better: bool
    samples: tuple[float, ...] = field(default=())
    source: str = ""  # where the figure comes from when not the timed rounds (e.g. "kernel timestamps")
    # False: reported, never judged by the gate (e.g. time spent waiting for a peer rank: launch skew,
    # not the stack); the record says why in ``source``.
    judged: bool = True
    # True: a per-step part of the benchmark's device time (exposed transfer per step, ...): the gate bounds
    # its MDE by the share of the step it is (aorta.gate.verdicts.verdict.part_bound), not by the step's own bound.
    part_of_step: bool = False
    # True: measured in a kernel or labelled pass, whose profiled rounds are few by design (a gate's runs
    # profile 2: aorta/hw_queue/kernel_pass.py). The run's figure is the median of the pass's rounds, judged as
    # one value per run against the between-run noise (aorta.record.run_samples.per_round_figures), never
    # refused as "too few samples": the pass ran every round it planned.
    from_pass: bool = False

    def as_dict(self) -> dict:
        d: dict[str, Any] = {
            "value": self.value,
            "unit": self.unit,
            "higher_is_better": self.higher_is_better,
        }
        if self.samples:
            d["samples"] = list(self.samples)
        if self.source:
            d["source"] = self.source
        if not self.judged:
            d["judged"] = False
        if self.part_of_step:
            d["part_of_step"] = True
        if self.from_pass:
            d["from_pass"] = True
        return d

    @classmethod
    def from_dict(cls, name: str, d: Mapping[str, Any]) -> Metric:
        value = d.get("value")
        return cls(
            name,
            None if value is None else float(value),
            str(d.get("unit", "")),
            bool(d.get("higher_is_better", True)),
            tuple(float(v) for v in d.get("samples") or ()),
            str(d.get("source") or ""),
            d.get("judged", True) is not False,
            d.get("part_of_step") is True,
            d.get("from_pass") is True,
        )


def percentile_metrics(
    prefix: str, per_round: list[list[float]], percentiles: tuple[int, ...], unit: str = "ms"
) -> tuple[list[Metric], dict[str, str]]:
    """``{prefix}_p{q}_{unit}`` over all rounds' samples pooled, with one per-round percentile as samples.

    Lower is better (latencies). Rounds without samples are dropped; with none left every figure is
    unavailable with the reason (no per-segment intervals, e.g. graph replay).
    """
    names = [f"{prefix}_p{q}_{unit}" for q in percentiles]
    rounds = [s for s in per_round if s]
    if not rounds:
        reason = "no per-segment intervals recorded (graph replay)"
        return [], dict.fromkeys(names, reason)
    pooled = [x for s in rounds for x in s]
    return [
        Metric(name, stats.percentile(pooled, q), unit, False, tuple(stats.percentile(s, q) for s in rounds))
        for name, q in zip(names, percentiles)
    ], {}
