"""Throttle reasons and the rule that calls a sample throttled. Pure: no torch, no vendor library.

NVML reports active "clocks event reasons" (formerly "clocks throttle reasons") as a bitmask; the bit
values are those of ``nvml.h`` (``nvmlClocksEventReason*``), which ``nvidia-smi`` prints as
``clocks_event_reasons.active`` (``0x0000000000000004``).
"""

from __future__ import annotations

from aorta.telemetry.sample import Sample

NVML_REASON_BITS = {
    0x0000000000000001: "gpu_idle",
    0x0000000000000002: "applications_clocks_setting",
    0x0000000000000004: "sw_power_cap",
    0x0000000000000008: "hw_slowdown",
    0x0000000000000010: "sync_boost",
    0x0000000000000020: "sw_thermal_slowdown",
    0x0000000000000040: "hw_thermal_slowdown",
    0x0000000000000080: "hw_power_brake_slowdown",
    0x0000000000000100: "display_clock_setting",
}

# Reasons that do not mean the GPU was held back while working: idle (no work at that instant) and
# clocks pinned by the user on purpose (application clocks).
BENIGN_REASONS = frozenset({"gpu_idle", "applications_clocks_setting"})

# A sample whose SM clock is under this share of the maximum counts as throttled.
SM_CLOCK_FLOOR_RATIO = 0.75


def decode_nvml_reasons(mask: int) -> tuple[str, ...]:
    """Names of the bits set in an NVML clocks-event-reasons mask; unknown bits as ``bit_0x...``."""
    if mask < 0:
        raise ValueError(f"a reasons bitmask cannot be negative, got {mask}")
    names = [name for bit, name in NVML_REASON_BITS.items() if mask & bit]
    unknown = mask & ~sum(NVML_REASON_BITS)
    bit = 1
    while unknown:
        if unknown & bit:
            names.append(f"bit_{bit:#x}")
            unknown &= ~bit
        bit <<= 1
    return tuple(names)


def parse_reason_mask(text: str) -> tuple[str, ...] | None:
    """``"0x0000000000000004"`` (nvidia-smi) -> ``("sw_power_cap",)``; ``None`` for N/A or garbage."""
    text = text.strip()
    try:
        return decode_nvml_reasons(int(text, 16) if text.lower().startswith("0x") else int(text))
    except ValueError:
        return None


def throttle_cause(sample: Sample, sm_clock_max_mhz: float | None) -> str | None:
    """Why ``sample`` counts as throttled, or ``None`` if it does not (or cannot be told).

    Throttled: a reason other than the benign ones is active, or the SM clock is under 75% of its
    maximum while the GPU was not idle (an idle GPU drops its clock, which is not throttling).
    """
    reasons = sample.throttle_reasons or ()
    bad = [r for r in reasons if r not in BENIGN_REASONS]
    if bad:
        return ",".join(bad)
    if "gpu_idle" in reasons:
        return None
    clock = sample.sm_clock_mhz
    if clock is not None and sm_clock_max_mhz and clock < SM_CLOCK_FLOOR_RATIO * sm_clock_max_mhz:
        return f"sm_clock_below_{int(SM_CLOCK_FLOOR_RATIO * 100)}pct_of_max"
    return None


class AllRoundsThrottled(Exception):
    """``--aorta-drop-throttled`` would keep no round: every timed round was taken while the GPU was throttled.

    Raised by ``Monitor.review`` before any figure is derived from an empty run; the message is the reason
    the caller gives when it fails the test."""

    def __init__(self, n_rounds: int, causes: dict):
        self.n_rounds, self.causes = n_rounds, dict(causes)
        super().__init__(
            f"--aorta-drop-throttled: all {n_rounds} timed rounds were taken while the GPU was "
            f"throttled ({self.causes}); nothing is recorded"
        )
