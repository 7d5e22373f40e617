"""The profiler capture (aorta/kernel_capture.py) on a machine without a GPU: no trace, and why."""

from aorta import kernel_timeline as kt
from aorta.device import Device


def test_on_cpu_the_capture_says_why_there_are_no_kernels():
    with Device.open("cpu").kernel_capture() as cap:
        pass
    assert cap.trace() is None and cap.reason == kt.NO_KERNELS_ON_CPU and cap.cost == {}


def test_without_a_device_activity_the_user_scope_session_is_refused_and_the_capture_falls_back():
    import pytest
    import torch

    from aorta import kernel_capture

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(RuntimeError, match="no device activity"):
        kernel_capture._UserScopeSession()
