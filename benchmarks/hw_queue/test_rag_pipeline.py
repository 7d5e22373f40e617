import pytest

from aorta.hw_queue.workloads.rag_pipeline import RagPipeline

pytestmark = [pytest.mark.p2, pytest.mark.inference]


def test_rag_pipeline(hw_queue, streams):
    hw_queue(RagPipeline, streams)
