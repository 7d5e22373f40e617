"""The test-only slowdown is calibrated the way the benchmark is timed."""

from types import SimpleNamespace

from aorta import slowdown
from aorta.device import Device
from aorta.timing import TimingPlan


def test_calibration_times_the_step_with_the_runs_launch_hold_and_sync_mode(monkeypatch):
    plans = []

    def fake_time_rounds(device, streams, step, plan, record_intervals):
        plans.append(plan)
        return SimpleNamespace(per_iteration_ms=[1.0] * plan.rounds)

    monkeypatch.setattr(slowdown, "time_rounds", fake_time_rounds)
    run_plan = TimingPlan(
        warmup_rounds=3, rounds=40, hold_cycles=123_456, sync_mode="end_only", iterations_per_round=2
    )
    slowdown.calibrate(Device.open("cpu"), lambda rec: None, [], 0.05, run_plan)
    step_plans = [p for i, p in enumerate(plans) if i != 1]  # the second pass times the spin alone
    assert step_plans and all(p.hold_cycles == 123_456 and p.iterations_per_round == 2 for p in step_plans)
    assert all(p.sync_mode == "end_only" and p.rounds == 5 and p.warmup_rounds == 1 for p in plans)
    assert plans[1].hold_cycles == 0  # the spin's own cost is measured without a hold in front of it
