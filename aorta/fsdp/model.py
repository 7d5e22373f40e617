"""The synthetic ranking transformer and its seeded on-device dataset.

Each sample is a sequence of T events; each event has F sparse categorical features (one embedding table
per feature) and D_dense dense features. Both are projected to ``d_model``, run through ``n_layers``
pre-norm encoder blocks, mean-pooled and scored by a small head (one logit per sample, BCE loss).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from aorta.fsdp.config import DatasetConfig, ModelConfig


class Block(nn.Module):
    """Pre-norm transformer encoder block (attention through scaled_dot_product_attention, GELU MLP)."""

    def __init__(self, d_model: int, n_heads: int, ffn_mult: int):
        super().__init__()
        self.n_heads = n_heads
        self.norm1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, ffn_mult * d_model)
        self.fc2 = nn.Linear(ffn_mult * d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (B, T, D)
        b, t, d = x.shape
        q, k, v = (
            self.qkv(self.norm1(x)).view(b, t, 3, self.n_heads, d // self.n_heads).unbind(2)
        )  # (B, T, H, Dh)
        att = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        )  # (B, H, T, Dh)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class RankingTransformer(nn.Module):
    def __init__(self, cfg: ModelConfig, seq_len: int):
        super().__init__()
        self.embeddings = nn.ModuleList(
            nn.Embedding(cfg.vocab_size, cfg.embedding_dim) for _ in range(cfg.n_sparse_features)
        )
        self.sparse_proj = nn.Linear(cfg.n_sparse_features * cfg.embedding_dim, cfg.d_model)
        self.dense_proj = nn.Linear(cfg.n_dense_features, cfg.d_model)
        self.pos = nn.Parameter(torch.randn(seq_len, cfg.d_model) * 0.02)  # (T, D)
        self.blocks = nn.ModuleList(
            Block(cfg.d_model, cfg.n_heads, cfg.ffn_mult) for _ in range(cfg.n_layers)
        )
        self.norm = nn.LayerNorm(cfg.d_model)
        self.head = nn.Sequential(
            nn.Linear(cfg.d_model, cfg.d_model // 2 or 1), nn.GELU(), nn.Linear(cfg.d_model // 2 or 1, 1)
        )

    def forward(self, sparse_ids: torch.Tensor, dense: torch.Tensor) -> torch.Tensor:
        # sparse_ids: (B, T, F) int64; dense: (B, T, D_dense)
        emb = torch.cat(
            [table(sparse_ids[..., f]) for f, table in enumerate(self.embeddings)], dim=-1
        )  # (B,T,F*E)
        x = self.sparse_proj(emb) + self.dense_proj(dense.to(emb.dtype)) + self.pos[: sparse_ids.shape[1]]
        for block in self.blocks:
            x = block(x)  # (B, T, D)
        # (B, 1) -> (B,) by a sum, not a view: FSDP2 cannot hook backward through a view of the root's output
        return self.head(self.norm(x).mean(dim=1)).sum(dim=-1)  # (B,) logits


def build_model(cfg: ModelConfig, seq_len: int, seed: int, device: torch.device) -> RankingTransformer:
    """Same weights on every rank for the same seed (FSDP shards them; DDP broadcasts rank 0's anyway)."""
    torch.manual_seed(seed)
    return RankingTransformer(cfg, seq_len).to(device)


def loss_fn(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.binary_cross_entropy_with_logits(logits.float(), labels)


@dataclass
class Batch:
    sparse_ids: torch.Tensor  # (B, T, F) int64
    dense: torch.Tensor  # (B, T, D_dense) fp32
    labels: torch.Tensor  # (B,) fp32 in {0, 1}


def make_batches(
    model_cfg: ModelConfig, data_cfg: DatasetConfig, rank: int, device: torch.device
) -> list[Batch]:
    """``n_batches`` seeded batches generated on the device; each rank draws its own (data parallel).

    Labels depend on the inputs (a fixed random projection of the dense features and one sparse feature)
    so the loss has something to learn and falls over the steps.
    """
    gen = torch.Generator(device=device)
    gen.manual_seed(data_cfg.seed)
    w = torch.randn(model_cfg.n_dense_features, generator=gen, device=device)  # same rule on every rank
    gen.manual_seed(data_cfg.seed + 1000 * (rank + 1))
    b, t = data_cfg.batch_size, data_cfg.seq_len
    out = []
    for _ in range(data_cfg.n_batches):
        ids = torch.randint(
            0, model_cfg.vocab_size, (b, t, model_cfg.n_sparse_features), generator=gen, device=device
        )
        dense = torch.randn(b, t, model_cfg.n_dense_features, generator=gen, device=device)
        score = (dense @ w).mean(dim=1) + (ids[..., 0].float().mean(dim=1) / model_cfg.vocab_size - 0.5)
        out.append(Batch(ids, dense, (score > 0).float()))
    return out
