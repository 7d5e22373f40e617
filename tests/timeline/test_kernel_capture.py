"""The profiler capture (aorta/timeline/kernel_capture.py): what it says when it cannot give kernel timestamps."""

import pytest
import torch

from aorta.device import Device
from aorta.timeline import kernel_capture
from aorta.timeline import kernel_timeline as kt


def test_on_cpu_the_capture_says_why_there_are_no_kernels():
    with kernel_capture.KernelCapture(Device.open("cpu")) as cap:
        pass
    assert cap.trace() is None and cap.reason == kt.NO_KERNELS_ON_CPU and cap.cost == {}


def test_without_a_device_activity_the_user_scope_session_is_refused_and_the_capture_falls_back():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(RuntimeError, match="no device activity"):
        kernel_capture._UserScopeSession()


def _ev(cat, name="x"):
    return {"ph": "X", "cat": cat, "name": name, "ts": 0, "dur": 1, "args": {"correlation": 1}}


def test_a_recording_with_launches_and_no_device_op_names_the_way_around_it():
    missed = {
        "traceEvents": [_ev("user_annotation", "aorta.round.0"), _ev("cuda_runtime", "cudaLaunchKernel")]
    }
    reason = kernel_capture.no_device_ops_reason(missed, user_scope_only=True)
    assert "no device kernel" in reason and "AORTA_PROFILER_RECORDING=full" in reason
    assert "AORTA_PROFILER_RECORDING" not in kernel_capture.no_device_ops_reason(
        missed, user_scope_only=False
    )
    recorded = {"traceEvents": [*missed["traceEvents"], _ev("kernel")]}
    assert kernel_capture.no_device_ops_reason(recorded, user_scope_only=True) is None
    nothing_launched = {"traceEvents": [_ev("user_annotation", "aorta.round.0")]}
    assert kernel_capture.no_device_ops_reason(nothing_launched, user_scope_only=True) is None


def test_the_recording_is_chosen_by_the_environment_and_a_wrong_one_is_refused():
    assert kernel_capture.recording_from_env({}) == "user_scope"
    assert kernel_capture.recording_from_env({"AORTA_PROFILER_RECORDING": " full "}) == "full"
    with pytest.raises(
        ValueError, match=r"AORTA_PROFILER_RECORDING='all': allowed values are user_scope, full"
    ):
        kernel_capture.recording_from_env({"AORTA_PROFILER_RECORDING": "all"})
    with pytest.raises(ValueError, match="recording must be one of"):
        kernel_capture.KernelCapture(Device.open("cpu"), "everything")
