from aorta.hw_queue.marks import spec_marks
from aorta.hw_queue.workloads.stream_concurrency import StreamConcurrency

pytestmark = spec_marks(StreamConcurrency)


def test_stream_concurrency(hw_queue, streams, issue_order):
    hw_queue(StreamConcurrency, streams, issue_order=issue_order)
