"""The profiler leaves nothing attached after a kernel pass: Kineto detaches CUPTI only when
``TEARDOWN_CUPTI=1``, so aorta sets it before any profiler starts, where that is safe, and says why not
where it is not (aorta/device/profiler_detach.py)."""

from __future__ import annotations

import pytest

from aorta.device import profiler_detach


@pytest.mark.parametrize("version", ["12.6", "12.6.85", "12.8", "12.10", "13.0"])
def test_a_cuda_build_at_or_past_12_6_detaches_cupti(version):
    env: dict[str, str] = {}
    why = profiler_detach.apply("cuda", version, env)
    assert env["TEARDOWN_CUPTI"] == "1"
    assert "detaches CUPTI" in why


def test_the_users_own_setting_is_kept():
    env = {"TEARDOWN_CUPTI": "0"}
    why = profiler_detach.apply("cuda", "13.0", env)
    assert env == {"TEARDOWN_CUPTI": "0"}
    assert "set by the user" in why


def test_cuda_before_12_6_stays_attached_and_says_what_that_costs():
    for version in ("12.5", "12.5.82", "12.4", "11.8", "11", None, "unknown"):
        env: dict[str, str] = {}
        why = profiler_detach.apply("cuda", version, env)
        assert env == {}
        assert "stays attached" in why and "12.6" in why


def test_rocm_and_cpu_are_left_alone():
    for backend in ("rocm", "cpu"):
        env: dict[str, str] = {}
        profiler_detach.apply(backend, None, env)
        assert env == {}


def test_the_setting_is_recorded_with_each_run():
    from aorta.device import SCHEDULING_ENV_PATTERN

    assert SCHEDULING_ENV_PATTERN.match("TEARDOWN_CUPTI")


def test_a_second_decision_or_a_child_process_gives_the_first_ones_reason():
    env: dict[str, str] = {}
    first = profiler_detach.apply("cuda", "13.0", env)
    assert profiler_detach.apply("cuda", "13.0", env) == first  # not "set by the user"
    child = dict(env)  # a gate child inherits the parent's environment
    assert profiler_detach.apply("cuda", "13.0", child) == first
    child["TEARDOWN_CUPTI"] = "0"  # the user changed it after aorta set it: theirs, kept
    assert "set by the user" in profiler_detach.apply("cuda", "13.0", child)


def test_the_build_decides_not_the_device_in_use():
    assert profiler_detach.build_backend("13.0", None) == "cuda"
    assert profiler_detach.build_backend(None, "6.4.1") == "rocm"
    assert profiler_detach.build_backend(None, None) == "cpu"
