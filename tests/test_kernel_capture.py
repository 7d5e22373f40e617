"""The profiler capture (aorta/kernel_capture.py) on a machine without a GPU: no trace, and why."""

from aorta import kernel_timeline as kt
from aorta.device import Device


def test_on_cpu_the_capture_says_why_there_are_no_kernels():
    with Device.open("cpu").kernel_capture() as cap:
        pass
    assert cap.trace() is None and cap.reason == kt.NO_KERNELS_ON_CPU and cap.cost == {}
