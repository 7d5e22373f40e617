"""A profiled window split into its steps (pure: no torch): the profiler marks the wait and warm-up steps
with ProfilerStep ranges too, so the active steps are the last N ranges, never the first N."""

import pytest

from aorta.fsdp.profiled_steps import split_by_step, step_figures
from aorta.timeline.device_op import DeviceOp

# Four ProfilerStep ranges: one warm-up step (the profiler records it, the figures must not) then 3 active
RANGES = [(0.0, 100.0), (100.0, 200.0), (200.0, 300.0), (300.0, 400.0)]


def kernel(launch_us: float, dur_us: float) -> DeviceOp:
    return DeviceOp("gemm", 7, launch_us + 5.0, dur_us, launch_us=launch_us)


def test_the_active_steps_are_the_last_n_ranges_the_profiler_marked():
    kernels = [kernel(10.0, 10.0), kernel(110.0, 20.0), kernel(210.0, 30.0), kernel(310.0, 40.0)]
    per_step, timeline, reason, note = step_figures(kernels, RANGES, steps=3, world_size=1)
    assert reason is None and note.startswith("left out of the per-step figures: 1 of 4 kernels whose launch")
    assert [s["compute_busy_ms"] for s in per_step] == pytest.approx([0.02, 0.03, 0.04])
    assert timeline["window_us"] == [(115.0, 135.0), (215.0, 245.0), (315.0, 355.0)]


def test_kernels_launched_in_the_warm_up_step_are_left_out_and_said():
    kernels = [
        kernel(10.0, 10.0),
        kernel(50.0, 10.0),
        kernel(110.0, 20.0),
        kernel(210.0, 30.0),
        kernel(310.0, 40.0),
    ]
    per_step, _, _, note = step_figures(kernels, RANGES, steps=3, world_size=1)
    assert len(per_step) == 3
    assert note == (
        "left out of the per-step figures: 2 of 5 kernels whose launch is in no step range (a kernel goes to "
        "the step holding its launch)"
    )


def test_fewer_ranges_than_profiled_steps_give_no_figures_and_say_why():
    assert step_figures([kernel(10.0, 1.0)], RANGES[:2], steps=3, world_size=1)[2] == (
        "the profiler marked 2 step ranges (ProfilerStep#N) for 3 profiled steps: kernels cannot be given to steps"
    )


def test_a_step_that_launched_no_kernel_is_left_out_not_counted_as_zeros():
    kernels = [kernel(110.0, 20.0), kernel(310.0, 40.0)]  # nothing launched in the second active step
    per_step, timeline, _, note = step_figures(kernels, RANGES, steps=3, world_size=1)
    assert [s["compute_busy_ms"] for s in per_step] == pytest.approx([0.02, 0.04])
    assert timeline["window_us"] == [(115.0, 135.0), (315.0, 355.0)]
    assert note == (
        "left out of the per-step figures: 1 of 3 profiled steps, which launched no kernel (step [1]), rather "
        "than zeros (a kernel goes to the step holding its launch)"
    )


def test_a_kernel_whose_launch_the_trace_lacks_goes_by_its_device_start_unless_launched_before_the_window():
    # correlation ids rise in launch order: 5 is below the first recorded launch (7), launched before the
    # window; 9 was launched by a call the profiler did not record, and runs inside the second step
    launched = DeviceOp("gemm", 7, 15.0, 10.0, launch_us=10.0, correlation=7)
    before = DeviceOp("early", 7, 5.0, 1.0, correlation=5)
    unrecorded = DeviceOp("late", 7, 150.0, 5.0, correlation=9)
    split = split_by_step([before, launched, unrecorded], RANGES[:2])
    assert [[k.name for k in ks] for ks in split.by_step] == [["gemm"], ["late"]]
    assert (split.before_window, split.by_device_start, split.outside) == (1, 1, 0)
