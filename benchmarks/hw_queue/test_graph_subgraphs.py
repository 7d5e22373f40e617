import pytest

from aorta.hw_queue.workloads.graph_subgraphs import GraphSubgraphs

pytestmark = [pytest.mark.p2, pytest.mark.compile]


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_graph_subgraphs(hw_queue, streams, mode):
    hw_queue(GraphSubgraphs, streams, mode=mode)
