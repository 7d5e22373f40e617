"""Where a benchmark's host wall went, phase by phase (``extra_info["host_phase_s"]``), and each phase's kind.

A run's wall is start-up (interpreter, torch, CUDA context, process group, collection), then each benchmark's
phases, then teardown. The gate's budget is for measuring (docs/gate.md, "Where a gate's wall goes"), so each
phase belongs to one of three kinds:

- ``timed``: the rounds or steps that give the judged samples of device time (their warm-up included: the
  timing loop runs both, aorta/timing/loop.py);
- ``checks_and_passes``: output and known-answer checks, kernel, labelled, profiled and reference passes, trace
  analysis: work that checks or gives the kernel-timeline figures;
- ``setup``: building the workload or model, gathering results, writing records.

Pure: a clock in, plain numbers out.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

TIMED, CHECKS_AND_PASSES, SETUP = "timed", "checks_and_passes", "setup"
KINDS = (TIMED, CHECKS_AND_PASSES, SETUP)

# Phase names as the hardware-queue runner (aorta/hw_queue/runner.py) and the FSDP suite (aorta/fsdp/measure.py,
# benchmarks/fsdp/test_collective_sweep.py) write them; any other name counts as checks_and_passes.
PHASE_KINDS = {
    "timed_rounds": TIMED,  # hardware-queue rounds; the collective sweep's judged point
    "timed_steps": TIMED,  # FSDP warm-up and timed steps
    "setup": SETUP,
    "warm": SETUP,  # a lean hardware-queue run's untimed warm-up in place of the check
    "mode": SETUP,
    "first_step": SETUP,  # a lean FSDP run's first step, unchecked
    "exchange": SETUP,  # every rank's result gathered to rank 0
    "records": SETUP,
}


class HostPhases:
    """Host wall seconds of each phase of one benchmark: ``done(name)`` closes the phase that ran since the
    last mark (a name given twice adds up). ``clock``: seconds, ``time.perf_counter`` unless a test gives one."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self.seconds: dict[str, float] = {}
        self._last = clock()

    def done(self, name: str) -> None:
        now = self._clock()
        self.seconds[name] = round(self.seconds.get(name, 0.0) + now - self._last, 4)
        self._last = now

    def skip(self) -> None:
        """Start the next phase now: the time since the last mark belongs to no phase (another's, measured
        elsewhere)."""
        self._last = self._clock()


def phase_kind(name: str) -> str:
    return PHASE_KINDS.get(name, CHECKS_AND_PASSES)


def by_kind(host_phase_s: Mapping[str, float] | None) -> dict[str, float]:
    """``host_phase_s`` summed by kind: ``{"timed": s, "checks_and_passes": s, "setup": s}`` (each kind present)."""
    out = dict.fromkeys(KINDS, 0.0)
    for name, seconds in (host_phase_s or {}).items():
        out[phase_kind(name)] += float(seconds)
    return {k: round(v, 4) for k, v in out.items()}
