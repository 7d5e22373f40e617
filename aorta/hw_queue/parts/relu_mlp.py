"""Forward and backward of one ``relu(x @ W + b)`` layer, written out by hand into given buffers.

Shared by the training-pattern workloads (``fsdp_tp``, ``grad_accum``): a hand-written backward puts
every kernel on the stream the caller chose (autograd would pick streams itself) and every output in a
buffer allocated once in ``setup``, so nothing crosses streams through the caching allocator.
"""

from __future__ import annotations

import torch


def forward(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, h: torch.Tensor, a: torch.Tensor) -> None:
    """h = x @ W + b, a = relu(h).  x (B, Din), W (Din, Dout), b (Dout,), h and a (B, Dout)."""
    torch.addmm(b, x, w, out=h)
    torch.clamp_min(h, 0.0, out=a)


def backward(
    da: torch.Tensor,
    x: torch.Tensor,
    w: torch.Tensor,
    h: torch.Tensor,
    dh: torch.Tensor,
    dw: torch.Tensor,
    db: torch.Tensor,
    dx: torch.Tensor | None,
) -> None:
    """Gradients of one layer given dL/da (B, Dout): dW (Din, Dout), db (Dout,), dx (B, Din) if wanted."""
    torch.mul(da, (h > 0).to(da.dtype), out=dh)  # relu'(h)
    torch.mm(x.t(), dh, out=dw)
    torch.sum(dh, dim=0, out=db)
    if dx is not None:
        torch.mm(dh, w.t(), out=dx)


def flops(batch: int, d_in: int, d_out: int, with_dx: bool = True) -> float:
    """GEMM FLOPs of one layer's forward plus backward (2 or 3 GEMMs of 2*B*Din*Dout)."""
    return 2.0 * batch * d_in * d_out * (3 if with_dx else 2)
