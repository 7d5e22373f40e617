import pytest

from aorta.hw_queue.workloads.stream_concurrency import StreamConcurrency

pytestmark = [pytest.mark.p0, pytest.mark.scheduling]


def test_stream_concurrency(hw_queue, streams, issue_order):
    hw_queue(StreamConcurrency, streams, issue_order=issue_order)
