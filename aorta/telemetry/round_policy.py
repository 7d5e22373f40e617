"""What a benchmark does with its throttled timed rounds, decided by each round's cause (pure: no torch).

Measured on four lent H100s (docs/measurements.md, "Throttled rounds on H100"): in 5,760 timed rounds of the
full default suite the only cause was ``sw_power_cap``, held through all 10 rounds of 5 to 8 GEMM-heavy
benchmarks per run. That is the GPU's steady state under that load, not an accident of a few rounds:
dropping those rounds leaves nothing to measure, and normalising device time by the telemetry clock (1 to 5
samples per benchmark at 100 ms) raised the between-run spread (CV 0.94% -> 9.3% for large_gemm_only fp32 at
one stream). Hence, per round:

- **power limit** (``sw_power_cap`` only): kept, and the record says so; its run-to-run effect is part of
  the noise the gate measures between runs;
- **transient** (thermal or hardware slowdown, power brake, an SM clock under 75% of its maximum with no
  reason given): dropped and **replaced** by as many new rounds, once; a replacement throttled again is
  dropped too;
- with ``--aorta-drop-throttled`` every throttled round, power limit included, is dropped and replaced.

The record's ``throttle_handling`` names the policy applied, the rounds it touched and the figures it
covers (``figures_timed_rounds``, added by the runner); the kernel-timestamp pass is not reviewed, and its
entry ``kernel_pass`` says so.
"""

from __future__ import annotations

from collections.abc import Sequence

POWER_LIMIT = frozenset({"sw_power_cap"})

RoundCause = str | None | bool  # the cause (throttled), None (not throttled), False (no sample matched)

WHAT = {
    "none": "no timed round was throttled",
    "kept_power_limited": (
        "throttled rounds kept: the power limit only (the GPU's steady state under this load; its run-to-run "
        "effect is in the noise the gate measures between runs)"
    ),
    "replaced": "throttled rounds dropped and replaced by as many new rounds, none of them throttled",
    "dropped": "throttled rounds dropped; replacements throttled again were dropped too (fewer rounds)",
    "kept_throttled": (
        "every round and every replacement was throttled: all first rounds kept, the figures were measured "
        "while throttled"
    ),
}


KERNEL_PASS = (
    "not reviewed: the kernel-timestamp pass's figures (busy, concurrency, stage times) are read within each "
    "of its rounds, whatever the clock"
)


def is_transient(cause: str) -> bool:
    """A cause other than the power limit alone (``"sw_power_cap,hw_slowdown"``, the reasons of one sample
    joined, is transient)."""
    return cause not in POWER_LIMIT


def rounds_to_drop(causes: Sequence[RoundCause], *, drop_all: bool) -> list[int]:
    """Indices of the rounds to drop: transient causes, or every throttled round with ``drop_all``."""
    return [i for i, c in enumerate(causes) if isinstance(c, str) and (drop_all or is_transient(c))]


def handling(
    first: Sequence[RoundCause], replacements: Sequence[RoundCause], *, drop_all: bool
) -> tuple[str, list[int], list[int]]:
    """``(policy, dropped first-round indices, kept replacement indices)`` for one benchmark's rounds.

    ``first``: each timed round's cause; ``replacements``: the causes of the new rounds timed for the dropped
    ones (empty when none were timed)."""
    dropped = rounds_to_drop(first, drop_all=drop_all)
    if not dropped:
        throttled = any(isinstance(c, str) for c in first)
        return ("kept_power_limited" if throttled else "none"), [], []
    again = set(rounds_to_drop(replacements, drop_all=drop_all))
    kept_new = [i for i in range(len(replacements)) if i not in again]
    if len(kept_new) == len(dropped):
        return "replaced", dropped, kept_new
    if len(dropped) == len(first) and not kept_new:
        return "kept_throttled", [], []
    return "dropped", dropped, kept_new


def handling_record(
    policy: str, first: Sequence[RoundCause], dropped: Sequence[int], added: int, kept: int
) -> dict:
    """The record's ``throttle_handling`` entry (the runner adds the figures it covers)."""
    return {
        "policy": policy,
        "what": WHAT[policy],
        "rounds_throttled": sum(1 for c in first if isinstance(c, str)),
        "rounds_dropped": len(dropped),
        "rounds_added": added,
        "rounds_kept": kept,
        "kernel_pass": KERNEL_PASS,
    }


def reading_note(entry: dict | None) -> str | None:
    """The benchmark's reading note where its rounds ran at the power limit (a NOT_GATEABLE verdict shows it
    as the likely reason for its noise), else None."""
    if not entry or entry.get("policy") != "kept_power_limited":
        return None
    return (
        f"power-limited: sw_power_cap in {entry['rounds_throttled']} of {entry['rounds_kept']} timed rounds; "
        "the clock follows the power draw, so device time moves with it from run to run"
    )
