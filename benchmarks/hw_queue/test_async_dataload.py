from aorta.hw_queue.marks import spec_marks
from aorta.hw_queue.workloads.async_dataload import AsyncDataload

pytestmark = spec_marks(AsyncDataload)


def test_async_dataload(hw_queue, streams):
    hw_queue(AsyncDataload, streams)
