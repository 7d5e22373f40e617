"""The one timing loop (``loop.time_rounds``) and what it returns."""

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
