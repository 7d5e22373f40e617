"""A calibrated communication slowdown for proving the FSDP gate: ballast bytes in every all-gather.

``--aorta-test-comm-ballast RATIO`` gives each transformer block, before ``fully_shard``, one frozen
parameter of ``RATIO`` times the block's own parameter count. FSDP2 shards it with the block's parameters
and all-gathers it with them before every forward and backward of the block, so each all-gather moves
``1 + RATIO`` times its bytes inside its own window, on the collective stream, with the NCCL/RCCL settings
untouched; no compute reads it and, frozen, it has no gradient, so reduce-scatters and the loss are as
without it. A run with ballast is marked in its record (``test_slowdown``) and can never be saved as a
baseline. DDP moves gradients only: a frozen parameter adds nothing there, and its record says so.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn

BALLAST_NAME = "aorta_comm_ballast"
DDP_REASON = (
    "--aorta-test-comm-ballast adds bytes to FSDP all-gathers; DDP moves gradients only, so a frozen "
    "ballast parameter adds no communication here: no slowdown applied"
)


def add_ballast(blocks: Iterable[nn.Module], ratio: float) -> dict:
    """Give each block a frozen ballast parameter of ``ratio`` times its parameter count (the block's first
    parameter's dtype and device: FSDP's mixed-precision cast treats it as the block's own). Returns what
    was added, for the record."""
    if ratio <= 0:
        raise ValueError(f"ballast ratio must be > 0, got {ratio}")
    per_block = []
    for block in blocks:
        params = [p for p in block.parameters()]
        numel = max(1, round(ratio * sum(p.numel() for p in params)))
        first = params[0]
        ballast = torch.zeros(numel, dtype=first.dtype, device=first.device)  # (numel,), never read
        block.register_parameter(BALLAST_NAME, nn.Parameter(ballast, requires_grad=False))
        per_block.append(numel)
    return {
        "kind": "comm_ballast",
        "ratio": ratio,
        "ballast_elements_per_block": per_block,
        "note": "deliberate extra bytes in each FSDP all-gather (a frozen parameter no compute reads), for "
        "proving the gate only: not a real result",
    }


def ballast_is_sharded(blocks: Iterable[nn.Module]) -> bool:
    """True when FSDP manages every block's ballast (a DTensor after ``fully_shard``): it is all-gathered."""
    from torch.distributed.tensor import DTensor

    found = [getattr(b, BALLAST_NAME, None) for b in blocks]
    return bool(found) and all(isinstance(p, DTensor) for p in found)
