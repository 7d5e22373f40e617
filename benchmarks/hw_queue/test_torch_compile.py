import pytest

from aorta.hw_queue.workloads.torch_compile import TorchCompile

pytestmark = [pytest.mark.p3, pytest.mark.compile]


def test_torch_compile(hw_queue, streams):
    hw_queue(TorchCompile, streams)
