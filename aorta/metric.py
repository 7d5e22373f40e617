"""One reported figure: extra_info["metrics"][name] = {value, unit, higher_is_better, samples} (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Metric:
    """One figure a workload reports; ``samples`` holds one value per timed round where derivable."""

    name: str
    value: float
    unit: str
    higher_is_better: bool
    samples: tuple[float, ...] = field(default=())

    def as_dict(self) -> dict:
        d: dict[str, Any] = {"value": self.value, "unit": self.unit, "higher_is_better": self.higher_is_better}
        if self.samples:
            d["samples"] = list(self.samples)
        return d
