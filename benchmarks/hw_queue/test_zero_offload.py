import pytest

from aorta.hw_queue.workloads.zero_offload import ZeroOffload

pytestmark = [pytest.mark.p2, pytest.mark.training]


def test_zero_offload(hw_queue, streams):
    hw_queue(ZeroOffload, streams)
