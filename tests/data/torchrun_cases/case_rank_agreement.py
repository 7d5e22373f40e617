"""Run under torchrun by tests/test_fsdp_torchrun_cpu.py (not collected by CI itself: no test_ prefix).

Each test misbehaves on one rank only; the plugin must make every rank agree on the outcome.
"""

import os

import pytest
import torch
import torch.distributed as dist

RANK = int(os.environ.get("RANK", "0"))


def test_fails_on_rank_1_only():
    assert RANK != 1, "rank 1 disagrees"


def test_skips_on_rank_1_only():
    if RANK == 1:
        pytest.skip("rank 1 has no such device")


def test_next_test_starts_in_step(dist_env):
    t = torch.ones(1) * (dist_env.rank + 1)
    dist.all_reduce(t)  # would hang or mismatch if the ranks had fallen out of step
    assert t.item() == sum(range(1, dist_env.world_size + 1))
