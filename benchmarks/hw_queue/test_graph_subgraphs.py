import pytest

from aorta.hw_queue.marks import spec_marks
from aorta.hw_queue.workloads.graph_subgraphs import GraphSubgraphs

pytestmark = spec_marks(GraphSubgraphs)


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_graph_subgraphs(hw_queue, streams, mode):
    hw_queue(GraphSubgraphs, streams, mode=mode)
