"""A deliberate, real slowdown for testing the regression gate (``--aorta-test-slowdown FRACTION``).

Never for real results: every benchmark run with it records ``test_slowdown`` in its run record, the
gate's header says so, and a run with it cannot be saved as a baseline.

The slowdown is real device work, not an edited time: after each iteration of the step, every stream
joins the origin stream, one spin kernel runs there, and the streams fork from it again. Its length
is calibrated with the one timing loop so the padded iteration takes about ``(1 + FRACTION)`` times
the plain one; what the calibration measured is recorded next to the request.

Calibrating costs several times the benchmark's own timed rounds. A gate's fresh runs (and ``aorta ab``'s side)
share one store (``UNITS_ENV``: a JSON file the orchestrator names for its runs): the first run of a
configuration calibrates and writes its spin units there, later runs add the same units, as a real regression
adds the same work to every run, and record where they were calibrated (``reused``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from aorta import stats
from aorta.timing import TimingPlan, time_rounds

UNITS_ENV = (
    "AORTA_SLOWDOWN_UNITS"  # a JSON file: configuration -> calibrated spin units, shared by a gate's runs
)
CALIBRATION_WARMUP_ROUNDS, CALIBRATION_ROUNDS = 1, 5
LANDED, WITHIN_NOISE, MISSED = "landed", "within noise", "missed"  # how a calibration ended
MEDIAN_SE_FACTOR = 1.25  # a median's standard error against a mean's, for near-normal rounds
PROBE_UNITS = 200_000  # ~0.1-0.2 ms of spin on a GPU (clock cycles), 0.2 ms of busy loop on a CPU (ns)


def padded_step(device, step, streams: Sequence, units: int):
    """``step`` followed by a spin of ``units`` on the origin stream, serialized with every stream."""

    def run(rec) -> None:
        step(rec)
        origin = device.current_stream()
        for s in streams:
            device.wait_stream(
                origin, s
            )  # join: the spin starts after the iteration's work, so it adds to it
        device.spin(units)
        for s in streams:
            device.wait_stream(s, origin)  # fork: the next iteration starts after the spin

    return run


def _rounds_ms(device, streams, step, plan: TimingPlan) -> list[float]:
    return list(time_rounds(device, streams, step, plan, record_intervals=False).per_iteration_ms)


def _median_ms(device, streams, step, plan: TimingPlan) -> float:
    return stats.median(_rounds_ms(device, streams, step, plan))


def padded_ratio(padded_ms: Sequence[float], plain_ms: Sequence[float]) -> tuple[float, float]:
    """``median(padded) / median(plain) - 1`` from two passes' rounds, and its standard error (of the log
    ratio, from the rounds' spread: a median's is about 1.25 times a mean's). Rounds that all read the same
    give 0."""
    se = MEDIAN_SE_FACTOR * math.sqrt(
        sum(float(np.var(np.log(r), ddof=1)) / len(r) if len(r) > 1 else 0.0 for r in (padded_ms, plain_ms))
    )
    return stats.median(padded_ms) / stats.median(plain_ms) - 1.0, se


def calibrate(device, step, streams: Sequence, fraction: float, run_plan: TimingPlan) -> tuple[int, dict]:
    """Spin units that make one iteration about ``fraction`` slower, and what calibration measured.

    Calibration times the step the way the benchmark will (``run_plan``: launch hold, graph, sync mode,
    iterations per round) with fewer rounds: timed another way, the padding can hide behind host
    launches in calibration and show in full in the run, or the reverse. The plain step is re-timed
    right after each padded pass, so a drift of the device (clocks, other load) between passes does
    not enter the measured ratio.

    The units first come from the spin's own speed; a padded pass that reads off the fraction by more than a
    fifth of it corrects them, unless the miss lies within the pass's own noise (two standard errors): a
    correction from noise chases it (a power-capped bf16 GEMM at 2-4% round noise ended at 8 times the units
    and a 17% slowdown for 2% asked, H200, issue 45). After three passes the closest one is kept. The info
    says how it ended: ``landed`` (within a fifth), ``within noise`` (the units from the spin's speed, a miss
    the rounds cannot tell from noise) or ``missed``.
    """
    if not 0.0 < fraction <= 10.0:
        raise ValueError(f"--aorta-test-slowdown must be in (0, 10], got {fraction}")
    plan = replace(run_plan, warmup_rounds=CALIBRATION_WARMUP_ROUNDS, rounds=CALIBRATION_ROUNDS)
    plain = _rounds_ms(device, streams, step, plan)
    spin_plan = TimingPlan(
        warmup_rounds=CALIBRATION_WARMUP_ROUNDS, rounds=CALIBRATION_ROUNDS, sync_mode=plan.sync_mode
    )
    spin_ms = _median_ms(device, [], lambda _rec: device.spin(PROBE_UNITS), spin_plan)
    ms_per_unit = max(spin_ms, 1e-6) / PROBE_UNITS
    units = max(0, round(fraction * stats.median(plain) / ms_per_unit))
    tries: list[dict] = []
    for _pass in range(3):
        padded = _rounds_ms(device, streams, padded_step(device, step, streams, units), plan)
        plain = _rounds_ms(device, streams, step, plan)
        base_ms = stats.median(plain)  # the plain step as the device runs it now
        measured, se = padded_ratio(padded, plain)
        miss = abs(measured - fraction)
        outcome = LANDED if miss <= 0.2 * fraction else WITHIN_NOISE if miss <= 2.0 * se else MISSED
        tries.append(
            {"spin_units": units, "ratio": measured, "se": se, "base_ms": base_ms, "outcome": outcome}
        )
        if outcome != MISSED:
            break
        # The join/fork around the spin costs a few microseconds of its own: correct for it.
        units = max(0, round(units + (fraction - measured) * base_ms / ms_per_unit))
    kept = (
        tries[-1] if tries[-1]["outcome"] != MISSED else min(tries, key=lambda t: abs(t["ratio"] - fraction))
    )
    return kept["spin_units"], {
        "requested_ratio": fraction,
        "calibrated_ratio": kept["ratio"],
        "calibration_base_ms": kept["base_ms"],
        "calibration_se": kept["se"],
        "calibration_outcome": kept["outcome"],
        "calibration_passes": [[t["spin_units"], t["ratio"]] for t in tries],
        "spin_units": kept["spin_units"],
        "spin_unit": "GPU clock cycles (one spin kernel)" if device.is_gpu else "ns of host busy loop",
        "note": "deliberate extra device work for testing the regression gate; not a real result",
    }


def store_key(identity: str, mode: object, plan: TimingPlan) -> str:
    """The configuration a calibration belongs to: the workload, its round mode, and how the plan runs the step
    (sync mode, graph). Not the plan's launch hold or iterations per round: a run measures those afresh (the
    hold from its host's enqueue time), and a key holding them would match no other run of the gate (on an H100
    every lean run calibrated again, each to its own units, issue 45)."""
    return f"{identity} {mode} sync={plan.sync_mode} graph={plan.graph}"


def calibrated_units(
    device, step, streams: Sequence, fraction: float, run_plan: TimingPlan, *, store: Path | None, key: str
) -> tuple[int, dict]:
    """``calibrate``'s answer for configuration ``key``, read from ``store`` where an earlier run of the same
    fraction wrote it (then the info says so: ``reused``), else calibrated here and written there."""
    entries = _read_store(store)
    entry = entries.get(key)
    if (
        isinstance(entry, dict)
        and entry.get("requested_ratio") == fraction
        and isinstance(entry.get("spin_units"), int)
    ):
        return entry["spin_units"], {
            **entry,
            "reused": "spin units calibrated by an earlier run of this gate",
        }
    units, info = calibrate(device, step, streams, fraction, run_plan)
    if store is not None:
        entries[key] = info
        tmp = store.with_name(store.name + f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(entries, sort_keys=True))
        os.replace(tmp, store)
    return units, info


def _read_store(store: Path | None) -> dict:
    if store is None:
        return {}
    try:
        data = json.loads(store.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
