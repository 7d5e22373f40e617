from aorta.hw_queue.marks import spec_marks
from aorta.hw_queue.workloads.rag_pipeline import RagPipeline

pytestmark = spec_marks(RagPipeline)


def test_rag_pipeline(hw_queue, streams):
    hw_queue(RagPipeline, streams)
