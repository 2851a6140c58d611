"""A variant of the network: self-attention among a program's computations instead of recursive LSTMs.

Each computation vector (which already holds its loop levels after scheduling)
goes through the same feed-forward embedding as in the LSTM network. Layers
of multi-head self-attention then let every computation read the others;
the loop tree enters as a learned bias per head on each pair's number of
shared loops (their fusion depth) and program order. Mean and max pooling
over the computations feed the regression head. No recursion: one batch is a
few dense matrix products, whatever the trees' shapes.
"""

from __future__ import annotations

import torch
from torch import nn

from ..features import layout
from .batch import Batch
from .network import Standardized, mlp


class _Block(nn.Module):
    def __init__(self, width: int, heads: int, ff: int, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ff = nn.Sequential(nn.Linear(width, ff), nn.GELU(), nn.Dropout(dropout), nn.Linear(ff, width))
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        b, n, w = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, n, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4)
        att = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        x = x + self.drop(self.proj(att.transpose(1, 2).reshape(b, n, w)))
        return x + self.drop(self.ff(self.norm2(x)))


class TreeTransformer(Standardized):
    """``forward(batch) -> (B,)`` predicted log-speedups."""

    def __init__(self, comp_size: int, loop_size: int, embed: tuple[int, ...] = (600, 350, 192),
                 layers: int = 3, heads: int = 6, ff: int = 384, head: tuple[int, ...] = (200, 180),
                 dropout: float = 0.05, arch: str = "transformer") -> None:
        super().__init__()
        self.config = {"arch": arch, "comp_size": comp_size, "loop_size": loop_size, "embed": list(embed),
                       "layers": layers, "heads": heads, "ff": ff, "head": list(head), "dropout": dropout}
        width = embed[-1]
        if width % heads:
            raise ValueError(f"embedding width {width} is not a multiple of {heads} heads")
        self.heads = heads
        self.comp_embed = mlp([comp_size, *embed], dropout)
        # one bias per head for each (shared loops, order) pair: order is before / same / after
        self.pair_bias = nn.Embedding(3 * (layout.MAX_DEPTH + 1), heads)
        self.blocks = nn.ModuleList(_Block(width, heads, ff, dropout) for _ in range(layers))
        self.norm = nn.LayerNorm(width)
        self.head = mlp([2 * width, *head, 1], dropout, last_act=False)
        self._standardization(comp_size, loop_size)

    def forward(self, b: Batch) -> torch.Tensor:
        ce = self.comp_embed(self.standardized_comps(b.comps))
        x = ce[b.comp_slots]                                           # (B, C, W)
        n = x.shape[1]
        pos = torch.arange(n, device=x.device)
        order = torch.sign(pos[None, :] - pos[:, None]) + 1            # (C, C): 0 before, 1 same, 2 after
        bucket = b.shared.clamp(max=layout.MAX_DEPTH) * 3 + order
        bias = self.pair_bias(bucket).permute(0, 3, 1, 2)              # (B, H, C, C)
        bias = bias.masked_fill(~b.comp_mask[:, None, None, :], float("-inf"))
        for block in self.blocks:
            x = block(x, bias)
        x = self.norm(x)
        m = b.comp_mask[:, :, None]
        mean = (x * m).sum(1) / m.sum(1).clamp_min(1)
        top = x.masked_fill(~m, float("-inf")).max(1).values
        return self.head(torch.cat([mean, top], dim=1)).squeeze(1)
