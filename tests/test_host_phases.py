"""Host seconds per phase of a benchmark, and the kind each phase is (timed, checks and passes, setup)."""

from aorta.record.host_phases import HostPhases, by_kind, phase_kind


def test_each_phase_gets_the_seconds_since_the_last_mark_and_a_repeated_name_adds_up():
    ticks = iter([10.0, 10.5, 12.0, 12.25, 13.0, 13.5])
    phases = HostPhases(clock=lambda: next(ticks))
    phases.done("setup")  # 10.0 -> 10.5
    phases.done("timed_steps")  # 10.5 -> 12.0
    phases.skip()  # 12.0 -> 12.25 belongs to no phase
    phases.done("profiled_steps")  # 12.25 -> 13.0
    phases.done("setup")  # 13.0 -> 13.5, added to setup
    assert phases.seconds == {"setup": 1.0, "timed_steps": 1.5, "profiled_steps": 0.75}


def test_phases_sum_by_kind_and_an_unknown_phase_is_a_check_or_pass():
    assert phase_kind("timed_rounds") == phase_kind("timed_steps") == "timed"
    assert (
        phase_kind("kernel_pass") == phase_kind("reference_pass") == phase_kind("new") == "checks_and_passes"
    )
    seconds = {"setup": 0.5, "check": 2.0, "timed_rounds": 1.0, "kernel_pass": 3.0, "exchange": 0.25}
    assert by_kind(seconds) == {"timed": 1.0, "checks_and_passes": 5.0, "setup": 0.75}
    assert by_kind(None) == {"timed": 0.0, "checks_and_passes": 0.0, "setup": 0.0}
