"""One telemetry reading. Pure data: no torch, no vendor library."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

# The figures summarized per benchmark (min / median / max), in the order they are reported.
FIGURES = ("sm_clock_mhz", "mem_clock_mhz", "power_w", "temperature_c", "gpu_util_pct", "mem_util_pct")


@dataclass(frozen=True)
class Sample:
    """What one read of the GPU returned. ``None`` means the source could not give that figure."""

    t_s: float  # host clock (time.perf_counter, the timing loop's clock) when the read was taken
    sm_clock_mhz: float | None = None  # graphics / SM clock (sclk on AMD)
    mem_clock_mhz: float | None = None  # memory clock (mclk on AMD)
    power_w: float | None = None
    temperature_c: float | None = None  # GPU core (NVIDIA) / junction, else edge (AMD)
    gpu_util_pct: float | None = None
    mem_util_pct: float | None = None
    throttle_reasons: tuple[str, ...] | None = None  # None: the source cannot tell; () : none active

    def figure(self, name: str) -> float | None:
        return getattr(self, name)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Limits:
    """Static ceilings the samples are judged against (from the same source)."""

    sm_clock_max_mhz: float | None = None
    mem_clock_max_mhz: float | None = None
    power_limit_w: float | None = None
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        out = {
            "sm_clock_max_mhz": self.sm_clock_max_mhz,
            "mem_clock_max_mhz": self.mem_clock_max_mhz,
            "power_limit_w": self.power_limit_w,
        }
        out.update(self.extra)
        return out
