"""A simulated run history from recorded runs, to measure the change-point detector (pure: numpy).

Each figure's recorded runs (fresh processes on machines of one model) give its between-run noise as it is:
the log run figures less their mean. A simulated history of ``n_runs`` runs draws each run's noise from those
residuals (with replacement), and multiplies the figure by ``1 + step`` at each injected change, where the
stack changed (a field named per change); the stack also changes at decoy places where nothing moves. A found
change counts as found where it lies within ``tolerance`` runs of an injected one, and as named where the
stack field it names is the one changed there; any other found change is false.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from aorta.history.changepoints import detect, difference_noise

# (run index, the stack field that changed there, whether the figure moves there, its direction)
STACK_PLAN: tuple[tuple[int, str, bool, int], ...] = (
    (25, "versions.cublas", False, 0),
    (50, "versions.torch", True, +1),
    (75, "versions.python", False, 0),
    (100, "settings.CUDA_DEVICE_MAX_CONNECTIONS", True, +1),
    (125, "hardware.power_limit_w", False, 0),
    (150, "versions.driver", True, -1),
    (175, "versions.nccl", False, 0),
)
TOLERANCE = 2


@dataclass
class Tally:
    injected: int = 0
    found: int = 0
    named: int = 0
    false: int = 0
    runs: int = 0

    def add(self, other: Tally) -> None:
        for k in ("injected", "found", "named", "false", "runs"):
            setattr(self, k, getattr(self, k) + getattr(other, k))


def residuals(run_values: Sequence[float]) -> np.ndarray:
    logs = np.log(np.asarray(run_values, dtype=float))
    return logs - logs.mean()


def simulate(
    res: np.ndarray, step: float, rng: np.random.Generator, n_runs: int = 200, stack_aware: bool = True
) -> Tally:
    """One simulated history of one figure with steps of ``step`` (0: an A/A history), judged."""
    x = rng.choice(res, size=n_runs, replace=True)
    for at, _, moves, sign in STACK_PLAN:
        if moves and step:
            x[at:] += sign * math.log1p(step)
    values = np.exp(x)
    stack_at = {at: field for at, field, _, _ in STACK_PLAN}
    sigma = None if stack_aware else _blind_sigma(values)
    found = detect(values, list(stack_at) if stack_aware else [], sigma=sigma)
    truth = {at: field for at, field, moves, _ in STACK_PLAN if moves and step}
    t = Tally(injected=len(truth), runs=n_runs)
    hit: set[int] = set()
    for cp in found:
        near = [at for at in truth if abs(cp.index - at) <= TOLERANCE and at not in hit]
        if not near:
            t.false += 1
            continue
        at = near[0]
        hit.add(at)
        t.found += 1
        named = name_at(cp.index, stack_at)
        t.named += named == truth[at]
    return t


def _blind_sigma(values: np.ndarray) -> float | None:
    """The noise a detector that knows no stack would use: robust, from successive differences."""
    return difference_noise(list(values))


def name_at(index: int, stack_at: dict[int, str], snap: int = TOLERANCE) -> str:
    """The stack field changed at ``index``, else at the nearest stack change within ``snap`` runs; "" none."""
    near = sorted((abs(at - index), at) for at in stack_at if abs(at - index) <= snap)
    return stack_at[near[0][1]] if near else ""


NOISE_BANDS: tuple[tuple[float, float], ...] = (
    (0.0, 0.005),
    (0.005, 0.01),
    (0.01, 0.02),
    (0.02, 0.05),
    (0.05, math.inf),
)
STEPS = (0.0, 0.02, 0.05, 0.2)


def band_of(sigma: float) -> tuple[float, float]:
    return next(b for b in NOISE_BANDS if b[0] <= sigma < b[1])


def band_text(band: tuple[float, float]) -> str:
    lo, hi = band
    return f">= {lo * 100:g}%" if math.isinf(hi) else f"{lo * 100:g}-{hi * 100:g}%"


def run_simulation(
    figure_runs: dict[str, Sequence[float]], *, seed: int, repeats: int, stack_aware: bool
) -> dict[tuple[float, tuple[float, float] | None], Tally]:
    """Per (step, noise band) and per (step, None: every figure), the tally of ``repeats`` simulated histories
    of each figure (its recorded run figures in ``figure_runs``)."""
    rng = np.random.default_rng(seed)
    out: dict[tuple[float, tuple[float, float] | None], Tally] = {}
    for step in STEPS:
        for _name, values in sorted(figure_runs.items()):
            res = residuals(values)
            band = band_of(float(res.std(ddof=1)))
            for _ in range(repeats):
                t = simulate(res, step, rng, stack_aware=stack_aware)
                for key in ((step, band), (step, None)):
                    out.setdefault(key, Tally()).add(t)
    return out


def table_lines(aware: dict, blind: dict, counts: dict[tuple[float, float] | None, int]) -> list[str]:
    """The markdown table: per step and noise band, found / named / false change points, with the stack and
    without it."""
    lines = [
        "| step | figures' between-run noise | figures | changes injected | found | named right (of found) "
        "| false per 100 runs | found, stack-blind | false per 100 runs, stack-blind |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]

    def pct(a: int, b: int) -> str:
        return f"{100 * a / b:.1f}%" if b else "-"

    for step in STEPS:
        for band in (*NOISE_BANDS, None):
            t, b = aware.get((step, band)), blind.get((step, band))
            if t is None or b is None:
                continue
            label = "all" if band is None else band_text(band)
            lines.append(
                f"| {'none (A/A)' if step == 0 else f'{step * 100:g}%'} | {label} | {counts.get(band, 0)} | "
                f"{t.injected} | {pct(t.found, t.injected)} | {pct(t.named, t.found)} | "
                f"{100 * t.false / t.runs:.2f} | {pct(b.found, b.injected)} | {100 * b.false / b.runs:.2f} |"
            )
    return lines
