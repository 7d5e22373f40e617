"""The runner hands its review the timed rounds and a way to time more: rounds the review drops are
replaced by new rounds of the same step and K, and every figure is read from the rounds it keeps."""

from dataclasses import replace

from aorta.device import Device
from aorta.hw_queue import runner
from aorta.hw_queue.workloads.large_gemm_only import LargeGemmOnly
from aorta.timing import TimingPlan


def test_a_dropped_round_is_replaced_and_the_figures_come_from_the_kept_rounds():
    cpu = Device.open("cpu")
    seen = {}

    def review(run, more):
        seen["first"] = [r.device_ms for r in run.rounds]
        new = more(2)
        seen["k"] = (run.iterations_per_round, new.iterations_per_round)
        kept = [run.rounds[0], run.rounds[2], *new.rounds]  # round 1 dropped, two added
        seen["kept"] = [r.device_ms for r in kept]
        return replace(run, rounds=kept), {"throttle_handling": {"policy": "replaced"}}

    res = runner.run_workload(
        cpu,
        LargeGemmOnly(cpu, 1, size="smoke"),
        cpu.streams(1),
        TimingPlan(warmup_rounds=1, rounds=3, iterations_per_round=2),
        review=review,
    )
    assert len(seen["first"]) == 3 and seen["k"] == (2, 2)
    extra = res.extra_info
    assert [ms * 2 for ms in extra["device_ms_per_iteration"]] == seen["kept"]  # 4 rounds: 2 first, 2 new
    assert extra["throttle_handling"]["policy"] == "replaced"
    assert extra["throttle_handling"]["figures_timed_rounds"][0] == "device_ms"
    assert "tflops" in extra["throttle_handling"]["figures_timed_rounds"]
    assert "review" in extra["host_phase_s"]
