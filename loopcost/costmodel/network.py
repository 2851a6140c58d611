"""The paper's recursive-LSTM network, batched depth by depth over trees of any shape.

Computation vectors go through a feed-forward embedding. At every loop node,
one LSTM reads the embeddings of the node's computations and another the
embeddings of its child loops (in program order); their last states,
concatenated with the loop's own features, go through a feed-forward layer
to make the loop's embedding. A root node per program does the same over its
top-level loops, and a regression head maps the root embedding to the
predicted speedup.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from ..errors import LoopcostError
from .batch import Batch


def mlp(sizes: list[int], dropout: float, last_act: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = []
    for k, (a, b) in enumerate(zip(sizes, sizes[1:], strict=False)):
        layers.append(nn.Linear(a, b))
        if k < len(sizes) - 2 or last_act:
            layers += [nn.ELU(), nn.Dropout(dropout)]
    return nn.Sequential(*layers)


def _inverse_scale(x: torch.Tensor) -> torch.Tensor:
    """1 / the standard deviation of each column of ``x``; 0 where a column never varies (dropped, not
    amplified when it varies later)."""
    std = x.std(0)
    return torch.where(std > 1e-6, 1.0 / std.clamp_min(1e-6), 0.0)


class Standardized(nn.Module):
    """Input standardization, fitted on the training set (``fit_inputs``) and saved with the weights."""

    def _standardization(self, comp_size: int, loop_size: int) -> None:
        for name, size in (("comp", comp_size), ("loop", loop_size)):
            self.register_buffer(f"{name}_shift", torch.zeros(size))
            self.register_buffer(f"{name}_scale", torch.ones(size))

    def standardized_comps(self, comps: torch.Tensor) -> torch.Tensor:
        """Computation vectors standardized, cut to this network's width: a network of an older layout
        reads the fields it knows, which a newer layout keeps first (``layout.READS``)."""
        width = self.comp_shift.shape[0]
        if comps.shape[1] < width:
            raise LoopcostError(f"this network reads {width} fields per computation; the vectors have "
                                f"{comps.shape[1]} (features of an older layout: export the dataset again)")
        return (comps[:, :width] - self.comp_shift) * self.comp_scale

    def set_dropout(self, p: float) -> None:
        """Drop ``p`` of the activations in training from now on (a network fine-tuned with another dropout
        than its own), and say so in its configuration."""
        for m in self.modules():
            if isinstance(m, nn.Dropout):
                m.p = p
        self.config["dropout"] = p

    def widen(self, comps: torch.Tensor) -> None:
        """Read the fields a newer layout appends to each computation vector (``comps``: training vectors of the
        new width; ``layout.READS``): the first layer of the computation embedding gains zero weights for them,
        so the network predicts as before until training moves them, and their standardization is fitted on
        ``comps``. A fine-tune of a network of an older layout starts here."""
        old, new = self.comp_shift.shape[0], comps.shape[1]
        if new <= old:
            return
        first = self.comp_embed[0]
        wider = nn.Linear(new, first.out_features)
        with torch.no_grad():
            wider.weight.zero_()
            wider.weight[:, :old] = first.weight
            wider.bias.copy_(first.bias)
        self.comp_embed[0] = wider
        added = comps[:, old:]
        self.comp_shift = torch.cat([self.comp_shift, added.mean(0)])
        self.comp_scale = torch.cat([self.comp_scale, _inverse_scale(added)])
        self.config["comp_size"] = new

    def fit_inputs(self, comps: torch.Tensor, loops: torch.Tensor) -> None:
        """Standardize each input field to mean 0 and variance 1 over the training vectors; a field that
        never varies there is dropped (scale 0) rather than amplified when it varies later."""
        for name, x in (("comp", comps), ("loop", loops)):
            getattr(self, f"{name}_shift").copy_(x.mean(0))
            getattr(self, f"{name}_scale").copy_(_inverse_scale(x))


class RecursiveLSTM(Standardized):
    """``forward(batch) -> (B,)`` predicted log-speedups."""

    def __init__(self, comp_size: int, loop_size: int, embed: tuple[int, ...] = (600, 350, 200, 180),
                 hidden: int = 180, head: tuple[int, ...] = (200, 180), dropout: float = 0.05,
                 arch: str = "lstm") -> None:
        super().__init__()
        self.config = {"arch": arch, "comp_size": comp_size, "loop_size": loop_size, "embed": list(embed),
                       "hidden": hidden, "head": list(head), "dropout": dropout}
        e = embed[-1]
        self.comp_embed = mlp([comp_size, *embed], dropout)
        self.comps_lstm = nn.LSTM(e, hidden, batch_first=True)
        self.nodes_lstm = nn.LSTM(hidden, hidden, batch_first=True)
        self.no_comps = nn.Parameter(torch.zeros(hidden))
        self.no_children = nn.Parameter(torch.zeros(hidden))
        self.node_ff = mlp([2 * hidden + loop_size, hidden, hidden], dropout)
        self.head = mlp([hidden, *head, 1], dropout, last_act=False)
        self.hidden = hidden
        self._standardization(comp_size, loop_size)

    def _summary(self, lstm: nn.LSTM, seqs: torch.Tensor, lengths: torch.Tensor, empty: torch.Tensor) -> torch.Tensor:
        out = empty.expand(len(lengths), -1).clone()
        has = lengths > 0
        if has.any():
            packed = pack_padded_sequence(seqs[has], lengths[has].cpu(), batch_first=True, enforce_sorted=False)
            _, (h, _) = lstm(packed)
            out[has] = h[-1]
        return out

    def forward(self, b: Batch) -> torch.Tensor:
        ce = self.comp_embed(self.standardized_comps(b.comps))
        loops = (b.loops - self.loop_shift) * self.loop_scale
        emb = torch.zeros(len(b.loops), self.hidden, device=ce.device)
        for lv in b.levels:  # deepest first: children are done before their parents
            comps = self._summary(self.comps_lstm, ce[lv.comp_idx], lv.comp_len, self.no_comps)
            kids = self._summary(self.nodes_lstm, emb[lv.child_idx], lv.child_len, self.no_children)
            node = self.node_ff(torch.cat([comps, kids, loops[lv.nodes]], dim=1))
            emb = emb.index_copy(0, lv.nodes, node)
        return self.head(emb[b.roots]).squeeze(1)
