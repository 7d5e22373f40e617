import pytest

from aorta.hw_queue.workloads.async_dataload import AsyncDataload

pytestmark = [pytest.mark.p2, pytest.mark.pipeline]


def test_async_dataload(hw_queue, streams):
    hw_queue(AsyncDataload, streams)
