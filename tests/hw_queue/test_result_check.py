"""The check every workload's multi-stream result passes against its one-stream reference before it is timed
(aorta.hw_queue.workload.compare_results): a wrong result fails the test and is never saved."""

import pytest
import torch

from aorta.hw_queue.workload import WorkloadCheckError, compare_results


def test_a_result_missing_an_output_of_the_reference_fails_naming_both_sets():
    ref = {"logits": torch.ones(2), "loss": torch.zeros(1)}
    with pytest.raises(
        WorkloadCheckError, match=r"result: keys differ: \['logits'\] vs \['logits', 'loss'\]"
    ):
        compare_results({"logits": torch.ones(2)}, ref, 1e-3, 1e-3)


def test_an_infinite_result_fails_even_where_the_reference_is_infinite_too():
    ref = torch.tensor([1.0, float("inf")])
    with pytest.raises(
        WorkloadCheckError, match=r"result\[0\]: non-finite values in the multi-stream result"
    ):
        compare_results([ref.clone()], [ref], 1e-3, 1e-3)


def test_a_differing_element_is_named_by_its_place_and_a_close_one_passes():
    ref = {"experts": [torch.ones(4), torch.ones(4)]}
    compare_results({"experts": [torch.ones(4), torch.ones(4) + 1e-6]}, ref, 1e-3, 1e-3)
    with pytest.raises(
        WorkloadCheckError, match=r"result\['experts'\]\[1\]: differs from the one-stream reference"
    ):
        compare_results({"experts": [torch.ones(4), torch.full((4,), 2.0)]}, ref, 1e-3, 1e-3)
    with pytest.raises(WorkloadCheckError, match=r"result\['experts'\]: 1 items vs 2 in the reference"):
        compare_results({"experts": [torch.ones(4)]}, ref, 1e-3, 1e-3)
