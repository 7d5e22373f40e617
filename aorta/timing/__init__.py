"""The one timing loop (``loop.time_rounds``) and what it returns; ``replay_clock`` hands its device times to
pytest-benchmark, ``slowdown`` pads a step by a calibrated fraction (``--aorta-test-slowdown``)."""

from aorta.timing.loop import (
    RoundRecorder,
    RoundTiming,
    StepFn,
    TimedRun,
    TimingPlan,
    choose_iterations,
    run_forked,
    time_rounds,
)

__all__ = [
    "RoundRecorder",
    "RoundTiming",
    "StepFn",
    "TimedRun",
    "TimingPlan",
    "choose_iterations",
    "run_forked",
    "time_rounds",
]
