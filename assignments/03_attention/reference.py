"""Reference solutions for stage 03_attention: embeddings, positions and attention.

Token plus learned position embeddings, the fixed sinusoidal position table, rotary
position embeddings (RoPE) on interleaved pairs, and scaled dot-product attention
with boolean masks in which ``True`` means BLOCKED.

Every graded name here is self-contained: the build copies its source alone into
the reference notebook, so it uses only the imports below.
"""

import math

import torch
from torch import nn


class TokenPositionEmbedding(nn.Module):
    """Token embedding plus learned absolute position embedding.

    ``forward(idx)`` maps ids ``(B, T)`` to ``tok_emb(idx) + pos_emb(0..T-1)`` of
    shape ``(B, T, C)``; the position part is the same for every row of the batch.

    Example:
        >>> emb = TokenPositionEmbedding(vocab_size=10, embed_dim=8, max_seq_len=16)
        >>> emb(torch.zeros(2, 5, dtype=torch.long)).shape
        torch.Size([2, 5, 8])
    """

    def __init__(self, vocab_size: int, embed_dim: int, max_seq_len: int) -> None:
        """Create ``tok_emb`` (``vocab_size x embed_dim``) and ``pos_emb``
        (``max_seq_len x embed_dim``), both ``nn.Embedding``.

        Raises:
            ValueError: if a size is not a positive integer.
        """
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("embed_dim", embed_dim), ("max_seq_len", max_seq_len)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        self.max_seq_len = max_seq_len
        self.tok_emb = nn.Embedding(vocab_size, embed_dim)
        self.pos_emb = nn.Embedding(max_seq_len, embed_dim)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Embed ``idx`` of shape ``(B, T)`` into ``(B, T, C)``.

        Raises:
            ValueError: if ``idx`` is not 2-D or ``T > max_seq_len``.
        """
        if idx.dim() != 2:
            raise ValueError(f"idx must have shape (B, T), got {tuple(idx.shape)}")
        T = idx.shape[1]
        if T > self.max_seq_len:
            raise ValueError(f"sequence length {T} is longer than max_seq_len {self.max_seq_len}")
        positions = torch.arange(T, device=idx.device)
        return self.tok_emb(idx) + self.pos_emb(positions)


def sinusoidal_positions(max_seq_len: int, embed_dim: int) -> torch.Tensor:
    """The fixed sinusoidal position table of "Attention Is All You Need".

    ``PE[p, 2i] = sin(p / 10000^(2i/d))`` and ``PE[p, 2i+1] = cos(p / 10000^(2i/d))``
    with ``d = embed_dim``. Computed in float64, returned in the default dtype.

    Raises:
        ValueError: if ``embed_dim`` is odd or a size is not a positive integer.

    Example:
        >>> pe = sinusoidal_positions(4, 6)
        >>> pe.shape, pe[0].tolist()
        (torch.Size([4, 6]), [0.0, 1.0, 0.0, 1.0, 0.0, 1.0])
    """
    for name, value in (("max_seq_len", max_seq_len), ("embed_dim", embed_dim)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if embed_dim % 2 != 0:
        raise ValueError(f"embed_dim must be even, got {embed_dim}")
    positions = torch.arange(max_seq_len, dtype=torch.float64).unsqueeze(1)  # (T, 1)
    two_i = torch.arange(0, embed_dim, 2, dtype=torch.float64)  # (d/2,)
    angles = positions / torch.pow(10000.0, two_i / embed_dim)  # (T, d/2)
    pe = torch.empty(max_seq_len, embed_dim, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe.to(torch.get_default_dtype())


def apply_rope(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding on interleaved pairs.

    For ``x`` of shape ``(..., T, D)``, the pair ``(x[2i], x[2i+1])`` at position
    ``p`` (``0 .. T-1``) is rotated by the angle ``p * base^(-2i/D)``:
    ``(a, b) -> (a cos - b sin, a sin + b cos)``. Norms are kept, and the dot
    product of a rotated query at ``p`` with a rotated key at ``p'`` depends on
    the positions only through ``p - p'``. Returns a new tensor of ``x``'s shape
    and dtype, made on ``x``'s device, and leaves ``x`` unchanged.

    Raises:
        ValueError: if ``x`` has fewer than 2 dimensions, ``D`` is odd, or
            ``base`` is not positive.

    Example:
        >>> x = torch.tensor([[1.0, 0.0], [1.0, 0.0]])     # T = 2, D = 2
        >>> y = apply_rope(x)                               # position 1 turns by 1 radian
        >>> [[round(v, 4) for v in row] for row in y.tolist()]
        [[1.0, 0.0], [0.5403, 0.8415]]
    """
    if x.dim() < 2:
        raise ValueError(f"x must have shape (..., T, D), got {tuple(x.shape)}")
    T, D = x.shape[-2], x.shape[-1]
    if D % 2 != 0:
        raise ValueError(f"the last dimension D must be even, got {D}")
    if not base > 0:
        raise ValueError(f"base must be positive, got {base}")
    positions = torch.arange(T, dtype=torch.float64, device=x.device).unsqueeze(1)  # (T, 1)
    inv_freq = base ** (-torch.arange(0, D, 2, dtype=torch.float64, device=x.device) / D)  # (D/2,)
    angles = positions * inv_freq  # (T, D/2)
    cos = torch.cos(angles).to(x.dtype)
    sin = torch.sin(angles).to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    rotated = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)  # (..., T, D/2, 2)
    return rotated.flatten(-2)


def scaled_dot_product_attention(
    Q: torch.Tensor,
    K: torch.Tensor,
    V: torch.Tensor,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention with an optional boolean mask.

    ``weights = softmax(Q K^T / sqrt(d_k))`` over the keys, where every score whose
    mask entry is ``True`` (BLOCKED) is set to ``-inf`` before the softmax, and
    ``out = weights @ V``. Leading dimensions (batch, heads, ...) broadcast.
    A query whose keys are all blocked gets a row of NaN.

    Args:
        Q: queries ``(..., T_q, d_k)``.
        K: keys ``(..., T_k, d_k)``.
        V: values ``(..., T_k, d_v)``.
        mask: optional boolean tensor broadcastable to ``(..., T_q, T_k)``;
            ``True`` means the query may not attend to that key.

    Returns:
        ``(out, weights)`` of shapes ``(..., T_q, d_v)`` and ``(..., T_q, T_k)``.

    Raises:
        ValueError: if the shapes do not fit together or ``mask`` is not boolean.

    Example:
        >>> Q = K = V = torch.eye(2).unsqueeze(0)           # (1, 2, 2)
        >>> mask = torch.tensor([[False, True], [False, False]])
        >>> out, w = scaled_dot_product_attention(Q, K, V, mask)
        >>> w[0, 0].tolist()
        [1.0, 0.0]
    """
    if Q.dim() < 2 or K.dim() < 2 or V.dim() < 2:
        raise ValueError("Q, K and V must each have at least 2 dimensions (..., T, d)")
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"Q and K must share d_k, got {Q.shape[-1]} and {K.shape[-1]}")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"K and V must hold the same number of keys, got {K.shape[-2]} and {V.shape[-2]}")
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])  # (..., T_q, T_k)
    if mask is not None:
        if mask.dtype != torch.bool:
            raise ValueError(f"mask must be a boolean tensor (True = blocked), got dtype {mask.dtype}")
        try:
            torch.broadcast_shapes(mask.shape, scores.shape)
        except RuntimeError as err:
            raise ValueError(
                f"mask of shape {tuple(mask.shape)} does not broadcast to the scores' shape {tuple(scores.shape)}"
            ) from err
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights
