"""The grader's own small language models, for the tests of stages 07 and 08.

A test of ``train`` or ``generate`` must not depend on the student's ``GPT``: it runs on
one of these instead. Neither is a transformer, both take ``(idx, targets=None)`` and
return ``(logits, loss)`` as a GPT does, carry a ``config`` with every field a GPT's
has, refuse more than ``config.block_size`` tokens, and note every call (mode, grad
state, inputs, loss) for the checks.

Example:
    >>> model = CausalMean(seed=1, vocab_size=5, block_size=4)
    >>> logits, loss = model(torch.zeros(2, 3, dtype=torch.long), torch.ones(2, 3, dtype=torch.long))
    >>> tuple(logits.shape), model.log[-1]["mode"], model.config.block_size
    ((2, 3, 5), 'train', 4)
"""

from dataclasses import dataclass

import torch

from .cases import grad_mode, mode_of, set_parameters


@dataclass
class StandInConfig:
    """The grader's own configuration of a GPT-shaped model: every field given, no defaults."""

    vocab_size: int
    block_size: int
    n_layer: int
    n_head: int
    n_embd: int
    ff_dim: int | None
    dropout: float
    tie_weights: bool
    norm_first: bool


def stand_in_config(
    vocab_size, block_size, n_layer, n_head, n_embd, ff_dim=None, dropout=0.0, tie_weights=True, norm_first=True
) -> StandInConfig:
    """A :class:`StandInConfig` with GPTConfig's defaults for the fields left out."""
    return StandInConfig(vocab_size, block_size, n_layer, n_head, n_embd, ff_dim, dropout, tie_weights, norm_first)


class Bigram(torch.nn.Module):
    """The next token's logits are a row of a table chosen by the current token, plus a bias.

    Its parameters are ``table.weight`` (a matrix) and ``bias`` (a vector); ``calls``
    holds a note of every forward pass.
    """

    def __init__(self, vocab_size, block_size, dropout=0.0):
        torch.nn.Module.__init__(self)
        self.config = stand_in_config(
            vocab_size, block_size, n_layer=1, n_head=1, n_embd=vocab_size, dropout=dropout, tie_weights=False
        )
        self.table = torch.nn.Embedding(vocab_size, vocab_size)
        self.bias = torch.nn.Parameter(torch.zeros(vocab_size))
        self.drop = torch.nn.Dropout(dropout)
        self.positions = torch.zeros(block_size)  # indexed by the input's length: longer than block_size is refused
        self.calls = []

    def forward(self, idx, targets=None):
        try:
            self.positions[idx.size(1) - 1]
        except IndexError:
            raise ValueError(
                f"this test model reads at most block_size={self.config.block_size} tokens, got {idx.size(1)}"
            ) from None
        scores = self.drop(self.table(idx)) + self.bias  # (B, T, V)
        loss = None if targets is None else torch.nn.functional.cross_entropy(scores.flatten(0, 1), targets.flatten())
        self.calls.append(
            {
                "mode": mode_of(self),
                "grad": grad_mode(),
                "idx": idx.detach().clone(),
                "targets": None if targets is None else targets.detach().clone(),
                "loss": None if loss is None else float(loss.detach()),
            }
        )
        return scores, loss


class CausalMean(torch.nn.Module):
    """Position t's logits are ``out(tanh(mean over s <= t of (tok[idx_s] + pos[s])))``.

    Causal, aware of positions, and cheap; it has matrices and vectors (for weight decay),
    dropout, and fixed weights from ``seed``; ``log`` holds a note of every forward pass.
    """

    def __init__(self, seed, vocab_size, block_size, width=16, dropout=0.0, scale=1.0):
        torch.nn.Module.__init__(self)
        self.config = stand_in_config(
            vocab_size, block_size, n_layer=1, n_head=1, n_embd=width, dropout=dropout, tie_weights=False
        )
        self.tok = torch.nn.Embedding(vocab_size, width)
        self.pos = torch.nn.Embedding(block_size, width)
        self.drop = torch.nn.Dropout(dropout)
        self.out = torch.nn.Linear(width, vocab_size)
        set_parameters(self, seed, scale)
        self.log = []

    def forward(self, idx, targets=None):
        length = idx.size(1)
        try:
            positions = self.pos(torch.arange(length, device=idx.device))  # (T, C)
        except IndexError:
            raise ValueError(f"the test model reads at most {self.config.block_size} tokens, got {length}") from None
        h = self.tok(idx) + positions  # (B, T, C)
        h = h.cumsum(dim=1) / torch.arange(1, length + 1, device=idx.device).view(1, -1, 1)
        scores = self.out(self.drop(torch.tanh(h)))  # (B, T, V)
        if targets is None:
            loss = None
        else:
            loss = torch.nn.functional.cross_entropy(scores.flatten(0, 1), targets.flatten(), ignore_index=-100)
        self.log.append(
            {
                "mode": mode_of(self),
                "grad": grad_mode(),
                "idx": idx.detach().cpu().clone(),
                "targets": None if targets is None else targets.detach().cpu().clone(),
                "loss": None if loss is None else float(loss.detach()),
            }
        )
        return scores, loss
