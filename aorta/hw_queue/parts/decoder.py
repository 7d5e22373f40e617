"""A small decoder-only transformer with a KV cache, written out in functions (shared by the inference
workloads ``speculative_decode`` and ``continuous_batch``).

Each layer: RMS-norm, fused QKV projection, the new keys/values written into the caller's cache by a
callable it passes (positions differ per workload), scaled-dot-product attention over the cache,
output projection, RMS-norm, SiLU MLP; residual adds around both. Weights are random (seeded): the
workloads measure scheduling of the real kernels, and their correctness checks compare one-stream
and multi-stream runs of the same weights.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass
class LayerWeights:
    wqkv: torch.Tensor  # (D, 3D)
    wo: torch.Tensor  # (D, D)
    w1: torch.Tensor  # (D, F)
    w2: torch.Tensor  # (F, D)


@dataclass
class DecoderWeights:
    embed: torch.Tensor  # (V, D)
    layers: list[LayerWeights]
    head: torch.Tensor  # (D, V)
    heads: int

    @property
    def d_model(self) -> int:
        return self.embed.shape[1]


def make_decoder(
    workload,
    gen: torch.Generator,
    *,
    vocab: int,
    d_model: int,
    d_ff: int,
    layers: int,
    heads: int,
    branch_scale: float = 0.5,
) -> DecoderWeights:
    """Seeded weights; ``branch_scale`` shrinks what each layer adds to the residual stream."""
    if d_model % heads:
        raise ValueError(f"d_model {d_model} is not divisible by heads {heads}")
    D, Fd = d_model, d_ff
    rnd = workload.randn
    return DecoderWeights(
        embed=rnd(vocab, D, gen=gen),
        layers=[
            LayerWeights(
                rnd(D, 3 * D, gen=gen, scale=D**-0.5),
                rnd(D, D, gen=gen, scale=branch_scale * D**-0.5),
                rnd(D, Fd, gen=gen, scale=D**-0.5),
                rnd(Fd, D, gen=gen, scale=branch_scale * Fd**-0.5),
            )
            for _ in range(layers)
        ],
        head=rnd(D, vocab, gen=gen, scale=D**-0.5),
        heads=heads,
    )


def embed(weights: DecoderWeights, tokens: torch.Tensor) -> torch.Tensor:
    """Embedding rows of ``tokens`` (any shape) -> (..., D).

    Tokens are taken modulo the vocabulary: they always are in range, but a token buffer that the
    one-stream check poisoned and a racing stream failed to write then reads as a wrong token (and
    fails the check) instead of tripping a device-side index assert that would end the process.
    """
    return weights.embed[tokens.remainder(weights.embed.shape[0])]


def layer(
    x: torch.Tensor,
    w: LayerWeights,
    heads: int,
    write_kv: Callable[[torch.Tensor, torch.Tensor], None],
    keys: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor | None,
) -> torch.Tensor:
    """One layer over new positions.

    x (B, T, D): the T new positions. ``write_kv(k, v)`` stores their keys/values (B, T, D) in the cache;
    ``keys``/``values`` (B, S, D) are cache views that then hold all S attended positions. ``mask`` is a
    boolean (B or 1, 1, T, S) of allowed positions, or None for all.
    """
    B, T, D = x.shape
    S = keys.shape[1]
    dh = D // heads
    q, k, v = (F.rms_norm(x, (D,)) @ w.wqkv).split(D, dim=-1)
    write_kv(k, v)
    q = q.reshape(B, T, heads, dh).transpose(1, 2)  # (B, H, T, dh)
    kk = keys.reshape(B, S, heads, dh).transpose(1, 2)  # (B, H, S, dh)
    vv = values.reshape(B, S, heads, dh).transpose(1, 2)
    o = F.scaled_dot_product_attention(q, kk, vv, attn_mask=mask)  # (B, H, T, dh)
    x = x + o.transpose(1, 2).reshape(B, T, D) @ w.wo
    return x + F.silu(F.rms_norm(x, (D,)) @ w.w1) @ w.w2


def next_tokens(x: torch.Tensor, weights: DecoderWeights) -> torch.Tensor:
    """Greedy next token at every position: argmax of the logits.  x (B, T, D) -> (B, T) int64."""
    return (F.rms_norm(x, (weights.d_model,)) @ weights.head).argmax(dim=-1)
