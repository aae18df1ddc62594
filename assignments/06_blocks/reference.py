"""Reference solutions for stage 06_blocks: LayerNorm, feed-forward, residuals, the block.

A layer normalisation written by hand, the position-wise feed-forward network and the
transformer block that joins them to multi-head attention with residual connections,
in its pre-norm (GPT-2) and post-norm (original transformer) forms. With the same
weights the block computes what ``nn.TransformerEncoderLayer(batch_first=True)`` does.
Every graded name here is self-contained: the build copies its source into the
reference notebook, and its signature and docstring into the student's stub.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from solutions.multihead import MultiHeadAttention


class LayerNorm(nn.Module):
    """Layer normalisation over the last axis.

    ``y = (x - mean) / sqrt(var + eps) * weight + bias``, where the mean and the
    biased variance (divided by ``dim``, not ``dim - 1``) are taken over the last
    axis of each position separately; ``weight`` starts at ones and ``bias`` at zeros.
    Equals ``nn.LayerNorm(dim, eps)``.

    Example:
        >>> ln = LayerNorm(4)
        >>> y = ln(torch.tensor([[1.0, 2.0, 3.0, 4.0]]))
        >>> [round(v, 4) for v in y[0].tolist()]  # mean 0, variance 1 (up to eps)
        [-1.3416, -0.4472, 0.4472, 1.3416]
    """

    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        """Create the parameters ``weight`` (ones) and ``bias`` (zeros), both ``(dim,)``.

        Raises:
            ValueError: if ``dim`` is not positive or ``eps`` is negative.
        """
        super().__init__()
        if dim < 1:
            raise ValueError(f"dim must be positive, got {dim}")
        if eps < 0:
            raise ValueError(f"eps must be non-negative, got {eps}")
        self.dim = dim
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Normalise ``x (..., dim)``; the result has the shape of ``x``.

        Raises:
            ValueError: if the last axis of ``x`` is not ``dim`` long.
        """
        if x.size(-1) != self.dim:
            raise ValueError(f"expected a last axis of size {self.dim}, got shape {tuple(x.shape)}")
        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
        var = x.var(dim=-1, keepdim=True, unbiased=False)  # (..., 1), biased
        x_hat = (x - mean) / torch.sqrt(var + self.eps)
        return x_hat * self.weight + self.bias


class FeedForward(nn.Module):
    """The position-wise feed-forward network ``fc2(activation(fc1(x)))``.

    ``fc1`` is ``nn.Linear(embed_dim, ff_dim)`` and ``fc2`` is
    ``nn.Linear(ff_dim, embed_dim)``; the activation is ``"gelu"`` (the exact form
    ``x * Phi(x)`` with the normal CDF, not the tanh approximation) or ``"relu"``.
    Dropout (training mode only) is applied to the output.

    Example:
        >>> ff = FeedForward(embed_dim=8, ff_dim=32)
        >>> ff(torch.randn(2, 5, 8)).shape
        torch.Size([2, 5, 8])
    """

    def __init__(self, embed_dim: int, ff_dim: int, activation: str = "gelu", dropout: float = 0.0) -> None:
        """Create ``fc1`` and ``fc2``.

        Raises:
            ValueError: if ``activation`` is neither ``"gelu"`` nor ``"relu"``.
        """
        super().__init__()
        if activation not in ("gelu", "relu"):
            raise ValueError(f"activation must be 'gelu' or 'relu', got {activation!r}")
        self.activation = activation
        self.fc1 = nn.Linear(embed_dim, ff_dim)
        self.fc2 = nn.Linear(ff_dim, embed_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply the network to every position of ``x (..., embed_dim)``."""
        h = self.fc1(x)  # (..., ff_dim)
        h = F.gelu(h) if self.activation == "gelu" else F.relu(h)
        return self.dropout(self.fc2(h))  # (..., embed_dim)


class TransformerBlock(nn.Module):
    """A transformer block: self-attention and a feed-forward network, each with a residual.

    Pre-norm (``norm_first=True``, GPT-2 style)::

        x = x + attn(ln1(x), mask)
        x = x + ff(ln2(x))

    Post-norm (``norm_first=False``, the original transformer)::

        x = ln1(x + attn(x, mask))
        x = ln2(x + ff(x))

    ``attn`` is a :class:`MultiHeadAttention`, ``ln1`` and ``ln2`` are
    :class:`LayerNorm` and ``ff`` is a :class:`FeedForward`; masks are as for
    ``MultiHeadAttention`` (boolean, ``True`` = blocked).

    Example:
        >>> block = TransformerBlock(embed_dim=8, num_heads=2, ff_dim=32)
        >>> causal = torch.ones(5, 5, dtype=torch.bool).triu(1)
        >>> block(torch.randn(3, 5, 8), mask=causal).shape
        torch.Size([3, 5, 8])
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        ff_dim: int,
        dropout: float = 0.0,
        activation: str = "gelu",
        norm_first: bool = True,
    ) -> None:
        """Create ``attn``, ``ln1``, ``ln2`` and ``ff``.

        Raises:
            ValueError: if ``num_heads`` does not divide ``embed_dim`` or the
                activation is unknown (raised by the parts).
        """
        super().__init__()
        self.norm_first = norm_first
        self.attn = MultiHeadAttention(embed_dim, num_heads, dropout=dropout)
        self.ln1 = LayerNorm(embed_dim)
        self.ln2 = LayerNorm(embed_dim)
        self.ff = FeedForward(embed_dim, ff_dim, activation=activation, dropout=dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Run the block on ``x (B, T, C)``; the result is ``(B, T, C)``."""
        if self.norm_first:
            x = x + self.attn(self.ln1(x), mask=mask)  # (B, T, C)
            x = x + self.ff(self.ln2(x))
        else:
            x = self.ln1(x + self.attn(x, mask=mask))
            x = self.ln2(x + self.ff(x))
        return x
