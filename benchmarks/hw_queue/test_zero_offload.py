from aorta.hw_queue.marks import spec_marks
from aorta.hw_queue.workloads.zero_offload import ZeroOffload

pytestmark = spec_marks(ZeroOffload)


def test_zero_offload(hw_queue, streams):
    hw_queue(ZeroOffload, streams)
