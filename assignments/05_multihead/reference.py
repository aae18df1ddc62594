"""Reference solutions for stage 05_multihead: multi-head attention.

Splitting the embedding into heads and merging it back, and a multi-head self-attention
module whose scaled dot-product attention runs on every head at once. With the same
weights it computes what ``nn.MultiheadAttention(batch_first=True)`` computes.
Every graded name here is self-contained: the build copies its source into the
reference notebook, and its signature and docstring into the student's stub.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Split the last axis of ``x`` into ``num_heads`` heads and move the head axis forward.

    Head ``h`` gets the features ``h*D .. (h+1)*D - 1`` of every position, where
    ``D = C // num_heads``.

    Args:
        x: a tensor ``(B, T, C)``.
        num_heads: H, which must divide C.

    Returns:
        A tensor ``(B, H, T, D)``.

    Raises:
        ValueError: if ``x`` is not 3-D, or ``num_heads`` is not a positive divisor of C.

    Example:
        >>> x = torch.arange(12.0).view(1, 2, 6)    # B=1, T=2, C=6
        >>> heads = split_heads(x, 3)
        >>> heads.shape
        torch.Size([1, 3, 2, 2])
        >>> heads[0, 1].tolist()                    # head 1: features 2 and 3
        [[2.0, 3.0], [8.0, 9.0]]
    """
    if x.dim() != 3:
        raise ValueError(f"split_heads expects a tensor (B, T, C), got shape {tuple(x.shape)}")
    B, T, C = x.shape
    if num_heads < 1 or C % num_heads != 0:
        raise ValueError(f"num_heads must be a positive divisor of C={C}, got {num_heads}")
    return x.reshape(B, T, num_heads, C // num_heads).transpose(1, 2)  # (B, H, T, D)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """Undo :func:`split_heads`: put the heads side by side again.

    Args:
        x: a tensor ``(B, H, T, D)``.

    Returns:
        A tensor ``(B, T, H*D)`` whose features ``h*D .. (h+1)*D - 1`` come from head ``h``.

    Raises:
        ValueError: if ``x`` is not 4-D.

    Example:
        >>> x = torch.randn(2, 5, 6)
        >>> torch.equal(merge_heads(split_heads(x, 3)), x)
        True
    """
    if x.dim() != 4:
        raise ValueError(f"merge_heads expects a tensor (B, H, T, D), got shape {tuple(x.shape)}")
    B, H, T, D = x.shape
    return x.transpose(1, 2).reshape(B, T, H * D)  # (B, T, C)


class MultiHeadAttention(nn.Module):
    """Multi-head self-attention.

    The input is projected to queries, keys and values (``q_proj``, ``k_proj``,
    ``v_proj``, each ``nn.Linear(C, C)``), split into H heads of size ``D = C // H``;
    every head runs scaled dot-product attention
    ``softmax(Q K^T / sqrt(D)) V`` with blocked scores set to ``-inf`` before the
    softmax; the heads are merged and projected by ``out_proj``.

    Masks are boolean and ``True`` means BLOCKED (the query may not attend to that
    key), as for ``nn.MultiheadAttention``'s boolean ``attn_mask``. A mask may be
    ``(T, T)`` (one for the whole batch, e.g. a causal mask), ``(B, T, T)`` (one per
    sequence, as ``combined_mask`` makes) or ``(B, 1, T)`` (blocked keys per sequence,
    as ``padding_mask`` makes); the head axis is added here so that every head uses
    the same mask. A query row whose keys are all blocked gives NaN, as in
    ``nn.MultiheadAttention`` (``F.scaled_dot_product_attention`` gives zeros there).

    Dropout (probability ``dropout``, active in training mode only) is applied to the
    attention weights and to the output of ``out_proj``. The weights returned with
    ``return_weights=True`` are the softmax probabilities before dropout.

    Example:
        >>> mha = MultiHeadAttention(embed_dim=8, num_heads=2)
        >>> x = torch.randn(3, 5, 8)
        >>> causal = torch.ones(5, 5, dtype=torch.bool).triu(1)
        >>> out, weights = mha(x, mask=causal, return_weights=True)
        >>> out.shape, weights.shape
        (torch.Size([3, 5, 8]), torch.Size([3, 2, 5, 5]))
        >>> weights[0, 0, 0, 1].item()              # position 0 cannot see position 1
        0.0
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True) -> None:
        """Create the four projections.

        Raises:
            ValueError: if ``num_heads`` is not positive or does not divide ``embed_dim``.
        """
        super().__init__()
        if num_heads < 1:
            raise ValueError(f"num_heads must be positive, got {num_heads}")
        if embed_dim % num_heads != 0:
            raise ValueError(f"embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)

    def attention(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Scaled dot-product attention on every head at once.

        Args:
            q, k, v: tensors ``(B, H, T, D)``.
            mask: boolean, ``True`` = blocked, broadcastable to ``(B, H, T, T)``.

        Returns:
            ``(out (B, H, T, D), weights (B, H, T, T))``, weights before dropout.
        """
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, T, T)
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        weights = F.softmax(scores, dim=-1)  # each row sums to 1
        out = self.attn_dropout(weights) @ v  # (B, H, T, D)
        return out, weights

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, return_weights: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Self-attention over ``x (B, T, C)``.

        Returns:
            ``out (B, T, C)``, or ``(out, weights (B, H, T, T))`` when ``return_weights``.

        Raises:
            ValueError: if ``x`` is not ``(B, T, embed_dim)``, or ``mask`` is not a
                boolean tensor with 2, 3 or 4 dimensions.
        """
        if x.dim() != 3 or x.size(-1) != self.embed_dim:
            raise ValueError(f"expected x of shape (B, T, {self.embed_dim}), got {tuple(x.shape)}")
        if mask is not None:
            if mask.dtype != torch.bool:
                raise ValueError(f"mask must be a boolean tensor (True = blocked), got dtype {mask.dtype}")
            if mask.dim() == 3:  # (B, T, T) or (B, 1, T): add the head axis
                mask = mask.unsqueeze(1)  # (B, 1, T, T) or (B, 1, 1, T)
            elif mask.dim() not in (2, 4):
                raise ValueError(f"mask must be (T, T), (B, T, T) or (B, 1, T), got shape {tuple(mask.shape)}")

        q = split_heads(self.q_proj(x), self.num_heads)  # (B, H, T, D)
        k = split_heads(self.k_proj(x), self.num_heads)  # (B, H, T, D)
        v = split_heads(self.v_proj(x), self.num_heads)  # (B, H, T, D)
        out, weights = self.attention(q, k, v, mask)  # (B, H, T, D), (B, H, T, T)
        out = self.resid_dropout(self.out_proj(merge_heads(out)))  # (B, T, C)
        if return_weights:
            return out, weights
        return out
