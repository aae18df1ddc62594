"""Realistic mistakes and correct alternatives for stage 03_attention."""

from autograder.authoring.catalogue import Variant

MISTAKES = [
    # embedding
    Variant(
        "embedding",
        "position table indexed by the token ids",
        {
            "TokenPositionEmbedding": """
        class TokenPositionEmbedding(nn.Module):
            def __init__(self, vocab_size, embed_dim, max_seq_len):
                super().__init__()
                self.max_seq_len = max_seq_len
                self.tok_emb = nn.Embedding(vocab_size, embed_dim)
                self.pos_emb = nn.Embedding(max_seq_len, embed_dim)

            def forward(self, idx):
                if idx.shape[1] > self.max_seq_len:
                    raise ValueError("sequence too long")
                return self.tok_emb(idx) + self.pos_emb(idx)
    """
        },
        hints=("positions taken from the token ids",),
    ),
    Variant(
        "embedding",
        "positions counted from 1",
        {
            "TokenPositionEmbedding": """
        class TokenPositionEmbedding(nn.Module):
            def __init__(self, vocab_size, embed_dim, max_seq_len):
                super().__init__()
                self.max_seq_len = max_seq_len
                self.tok_emb = nn.Embedding(vocab_size, embed_dim)
                self.pos_emb = nn.Embedding(max_seq_len + 1, embed_dim)

            def forward(self, idx):
                T = idx.shape[1]
                if T > self.max_seq_len:
                    raise ValueError("sequence too long")
                return self.tok_emb(idx) + self.pos_emb(torch.arange(1, T + 1, device=idx.device))
    """
        },
        hints=("positions counted from 1",),
    ),
    Variant(
        "embedding",
        "positions 1..T looked up in a table of max_seq_len rows",
        {
            "TokenPositionEmbedding": """
        class TokenPositionEmbedding(nn.Module):
            def __init__(self, vocab_size, embed_dim, max_seq_len):
                super().__init__()
                self.max_seq_len = max_seq_len
                self.tok_emb = nn.Embedding(vocab_size, embed_dim)
                self.pos_emb = nn.Embedding(max_seq_len, embed_dim)

            def forward(self, idx):
                T = idx.shape[1]
                if T > self.max_seq_len:
                    raise ValueError("sequence too long")
                return self.tok_emb(idx) + self.pos_emb(torch.arange(1, T + 1, device=idx.device))
    """
        },
        hints=("positions counted from 1",),
    ),
    Variant(
        "embedding",
        "off-by-one length check rejects exactly max_seq_len",
        {
            "TokenPositionEmbedding": """
        class TokenPositionEmbedding(nn.Module):
            def __init__(self, vocab_size, embed_dim, max_seq_len):
                super().__init__()
                self.max_seq_len = max_seq_len
                self.tok_emb = nn.Embedding(vocab_size, embed_dim)
                self.pos_emb = nn.Embedding(max_seq_len, embed_dim)

            def forward(self, idx):
                T = idx.shape[1]
                if T >= self.max_seq_len:
                    raise ValueError(f"sequence of {T} tokens is too long")
                return self.tok_emb(idx) + self.pos_emb(torch.arange(T, device=idx.device))
    """
        },
    ),
    Variant(
        "embedding",
        "no length check (IndexError from nn.Embedding)",
        {
            "TokenPositionEmbedding": """
        class TokenPositionEmbedding(nn.Module):
            def __init__(self, vocab_size, embed_dim, max_seq_len):
                super().__init__()
                self.tok_emb = nn.Embedding(vocab_size, embed_dim)
                self.pos_emb = nn.Embedding(max_seq_len, embed_dim)

            def forward(self, idx):
                return self.tok_emb(idx) + self.pos_emb(torch.arange(idx.shape[1], device=idx.device))
    """
        },
    ),
    Variant(
        "embedding",
        "token vectors scaled by sqrt(C) as in the original paper",
        {
            "TokenPositionEmbedding": """
        class TokenPositionEmbedding(nn.Module):
            def __init__(self, vocab_size, embed_dim, max_seq_len):
                super().__init__()
                self.max_seq_len = max_seq_len
                self.embed_dim = embed_dim
                self.tok_emb = nn.Embedding(vocab_size, embed_dim)
                self.pos_emb = nn.Embedding(max_seq_len, embed_dim)

            def forward(self, idx):
                T = idx.shape[1]
                if T > self.max_seq_len:
                    raise ValueError("sequence too long")
                return self.tok_emb(idx) * math.sqrt(self.embed_dim) + self.pos_emb(torch.arange(T, device=idx.device))
    """
        },
        hints=("token vectors scaled",),
    ),
    Variant(
        "embedding",
        "positions made on the default device",
        {
            "TokenPositionEmbedding": """
        class TokenPositionEmbedding(nn.Module):
            def __init__(self, vocab_size, embed_dim, max_seq_len):
                super().__init__()
                self.max_seq_len = max_seq_len
                self.tok_emb = nn.Embedding(vocab_size, embed_dim)
                self.pos_emb = nn.Embedding(max_seq_len, embed_dim)

            def forward(self, idx):
                if idx.dim() != 2:
                    raise ValueError("idx must be (B, T)")
                T = idx.shape[1]
                if T > self.max_seq_len:
                    raise ValueError("sequence too long")
                return self.tok_emb(idx) + self.pos_emb(torch.arange(T))
    """
        },
    ),
    # sinusoidal
    Variant(
        "sinusoidal",
        "sin and cos swapped",
        {
            "sinusoidal_positions": """
        def sinusoidal_positions(max_seq_len, embed_dim):
            if embed_dim % 2:
                raise ValueError("embed_dim must be even")
            pos = torch.arange(max_seq_len, dtype=torch.float64)[:, None]
            freq = 10000.0 ** (torch.arange(0, embed_dim, 2, dtype=torch.float64) / embed_dim)
            pe = torch.zeros(max_seq_len, embed_dim, dtype=torch.float64)
            pe[:, 0::2] = torch.cos(pos / freq)
            pe[:, 1::2] = torch.sin(pos / freq)
            return pe.float()
    """
        },
        hints=("sin and cos swapped",),
    ),
    Variant(
        "sinusoidal",
        "all sines first, then all cosines",
        {
            "sinusoidal_positions": """
        def sinusoidal_positions(max_seq_len, embed_dim):
            if embed_dim % 2:
                raise ValueError("embed_dim must be even")
            pos = torch.arange(max_seq_len, dtype=torch.float64)[:, None]
            freq = 10000.0 ** (torch.arange(0, embed_dim, 2, dtype=torch.float64) / embed_dim)
            return torch.cat([torch.sin(pos / freq), torch.cos(pos / freq)], dim=1).float()
    """
        },
        hints=("sines and cosines in blocks",),
    ),
    Variant(
        "sinusoidal",
        "odd columns use their own column number in the exponent",
        {
            "sinusoidal_positions": """
        def sinusoidal_positions(max_seq_len, embed_dim):
            if embed_dim % 2:
                raise ValueError("embed_dim must be even")
            pe = torch.zeros(max_seq_len, embed_dim)
            for p in range(max_seq_len):
                for j in range(embed_dim):
                    angle = p / 10000 ** (j / embed_dim)
                    pe[p, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
            return pe
    """
        },
        hints=("cosine columns with their own exponent",),
    ),
    Variant(
        "sinusoidal",
        "pair index not doubled in the exponent",
        {
            "sinusoidal_positions": """
        def sinusoidal_positions(max_seq_len, embed_dim):
            if embed_dim % 2:
                raise ValueError("embed_dim must be even")
            pos = torch.arange(max_seq_len, dtype=torch.float32)[:, None]
            i = torch.arange(embed_dim // 2, dtype=torch.float32)
            angles = pos / 10000.0 ** (i / embed_dim)
            return torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).reshape(max_seq_len, embed_dim)
    """
        },
        hints=("pair index not doubled",),
    ),
    Variant(
        "sinusoidal",
        "the float64 table returned as it is",
        {
            "sinusoidal_positions": """
        def sinusoidal_positions(max_seq_len, embed_dim):
            if embed_dim % 2:
                raise ValueError("embed_dim must be even")
            pos = torch.arange(max_seq_len, dtype=torch.float64)[:, None]
            freq = 10000.0 ** (torch.arange(0, embed_dim, 2, dtype=torch.float64) / embed_dim)
            pe = torch.zeros(max_seq_len, embed_dim, dtype=torch.float64)
            pe[:, 0::2] = torch.sin(pos / freq)
            pe[:, 1::2] = torch.cos(pos / freq)
            return pe
    """
        },
        hints=("float64 table",),
    ),
    Variant(
        "sinusoidal",
        "odd embed_dim not rejected",
        {
            "sinusoidal_positions": """
        def sinusoidal_positions(max_seq_len, embed_dim):
            pos = torch.arange(max_seq_len, dtype=torch.float64)[:, None]
            freq = 10000.0 ** (torch.arange(0, embed_dim, 2, dtype=torch.float64) / embed_dim)
            pe = torch.zeros(max_seq_len, embed_dim, dtype=torch.float64)
            pe[:, 0::2] = torch.sin(pos / freq)
            pe[:, 1::2] = torch.cos(pos / freq)[:, : embed_dim // 2]
            return pe.float()
    """
        },
    ),
    # rope
    Variant(
        "rope",
        "rotates halves (i, i + D/2) instead of interleaved pairs",
        {
            "apply_rope": """
        def apply_rope(x, base=10000.0):
            T, D = x.shape[-2], x.shape[-1]
            if D % 2:
                raise ValueError("D must be even")
            theta = base ** (-torch.arange(0, D, 2, dtype=torch.float32, device=x.device) / D)
            angles = torch.arange(T, dtype=torch.float32, device=x.device)[:, None] * theta
            cos, sin = angles.cos(), angles.sin()
            a, b = x[..., : D // 2], x[..., D // 2 :]
            return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
    """
        },
        hints=("rotates halves",),
    ),
    Variant(
        "rope",
        "rotation in the opposite direction",
        {
            "apply_rope": """
        def apply_rope(x, base=10000.0):
            T, D = x.shape[-2], x.shape[-1]
            if D % 2:
                raise ValueError("D must be even")
            theta = base ** (-torch.arange(0, D, 2, dtype=torch.float32, device=x.device) / D)
            angles = torch.arange(T, dtype=torch.float32, device=x.device)[:, None] * theta
            cos, sin = angles.cos(), angles.sin()
            a, b = x[..., 0::2], x[..., 1::2]
            return torch.stack([a * cos + b * sin, b * cos - a * sin], dim=-1).flatten(-2)
    """
        },
        hints=("rotation in the opposite direction",),
    ),
    Variant(
        "rope",
        "frequencies base^(-i/D) (pair index not doubled)",
        {
            "apply_rope": """
        def apply_rope(x, base=10000.0):
            T, D = x.shape[-2], x.shape[-1]
            if D % 2:
                raise ValueError("D must be even")
            theta = base ** (-torch.arange(D // 2, dtype=torch.float32, device=x.device) / D)
            angles = torch.arange(T, dtype=torch.float32, device=x.device)[:, None] * theta
            cos, sin = angles.cos(), angles.sin()
            a, b = x[..., 0::2], x[..., 1::2]
            return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)
    """
        },
        hints=("frequencies base^(-i/D)",),
    ),
    Variant(
        "rope",
        "positions taken from the batch axis (hidden when B == T)",
        {
            "apply_rope": """
        def apply_rope(x, base=10000.0):
            T, D = x.shape[0], x.shape[-1]
            if D % 2:
                raise ValueError("D must be even")
            theta = base ** (-torch.arange(0, D, 2, dtype=torch.float32, device=x.device) / D)
            angles = torch.arange(T, dtype=torch.float32, device=x.device)[:, None] * theta
            cos, sin = angles.cos(), angles.sin()
            a, b = x[..., 0::2], x[..., 1::2]
            return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)
    """
        },
    ),
    Variant(
        "rope",
        "only 3-D (B, T, D) inputs",
        {
            "apply_rope": """
        def apply_rope(x, base=10000.0):
            B, T, D = x.shape
            if D % 2:
                raise ValueError("D must be even")
            theta = base ** (-torch.arange(0, D, 2, dtype=torch.float32, device=x.device) / D)
            angles = torch.arange(T, dtype=torch.float32, device=x.device)[:, None] * theta
            out = torch.empty_like(x)
            out[:, :, 0::2] = x[:, :, 0::2] * angles.cos() - x[:, :, 1::2] * angles.sin()
            out[:, :, 1::2] = x[:, :, 0::2] * angles.sin() + x[:, :, 1::2] * angles.cos()
            return out
    """
        },
    ),
    Variant(
        "rope",
        "odd D not rejected",
        {
            "apply_rope": """
        def apply_rope(x, base=10000.0):
            T, D = x.shape[-2], x.shape[-1]
            theta = base ** (-torch.arange(0, D - 1, 2, dtype=torch.float32, device=x.device) / D)
            angles = torch.arange(T, dtype=torch.float32, device=x.device)[:, None] * theta
            out = x.clone()
            a, b = x[..., 0 : D - 1 : 2], x[..., 1::2]
            out[..., 0 : D - 1 : 2] = a * angles.cos() - b * angles.sin()
            out[..., 1::2] = a * angles.sin() + b * angles.cos()
            return out
    """
        },
    ),
    # attention
    Variant(
        "attention",
        "softmax over the queries (wrong axis)",
        {
            "scaled_dot_product_attention": """
        def scaled_dot_product_attention(Q, K, V, mask=None):
            if Q.shape[-1] != K.shape[-1] or K.shape[-2] != V.shape[-2]:
                raise ValueError("shapes do not fit")
            scores = Q @ K.transpose(-2, -1) / math.sqrt(K.shape[-1])
            if mask is not None:
                scores = scores.masked_fill(mask, float("-inf"))
            weights = torch.softmax(scores, dim=-2)
            return weights @ V, weights
    """
        },
        hints=("softmax over the queries",),
    ),
    Variant(
        "attention",
        "scores divided by d_k instead of sqrt(d_k)",
        {
            "scaled_dot_product_attention": """
        def scaled_dot_product_attention(Q, K, V, mask=None):
            if Q.shape[-1] != K.shape[-1] or K.shape[-2] != V.shape[-2]:
                raise ValueError("shapes do not fit")
            scores = Q @ K.transpose(-2, -1) / K.shape[-1]
            if mask is not None:
                scores = scores.masked_fill(mask, float("-inf"))
            weights = torch.softmax(scores, dim=-1)
            return weights @ V, weights
    """
        },
        hints=("scores divided by d_k",),
    ),
    Variant(
        "attention",
        "no scaling at all",
        {
            "scaled_dot_product_attention": """
        def scaled_dot_product_attention(Q, K, V, mask=None):
            if Q.shape[-1] != K.shape[-1] or K.shape[-2] != V.shape[-2]:
                raise ValueError("shapes do not fit")
            scores = Q @ K.transpose(-2, -1)
            if mask is not None:
                scores = scores.masked_fill(mask, float("-inf"))
            weights = torch.softmax(scores, dim=-1)
            return weights @ V, weights
    """
        },
        hints=("scores not scaled",),
    ),
    Variant(
        "attention",
        "blocked scores set to 0 instead of -inf",
        {
            "scaled_dot_product_attention": """
        def scaled_dot_product_attention(Q, K, V, mask=None):
            if Q.shape[-1] != K.shape[-1] or K.shape[-2] != V.shape[-2]:
                raise ValueError("shapes do not fit")
            scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
            if mask is not None:
                scores = scores.masked_fill(mask, 0.0)
            weights = torch.softmax(scores, dim=-1)
            return weights @ V, weights
    """
        },
        hints=("blocked scores not -inf",),
    ),
    Variant(
        "attention",
        "inverted mask (True taken to mean attend)",
        {
            "scaled_dot_product_attention": """
        def scaled_dot_product_attention(Q, K, V, mask=None):
            if Q.shape[-1] != K.shape[-1] or K.shape[-2] != V.shape[-2]:
                raise ValueError("shapes do not fit")
            scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            weights = torch.softmax(scores, dim=-1)
            return weights @ V, weights
    """
        },
        hints=("mask inverted",),
    ),
    Variant(
        "attention",
        "Q^T K instead of Q K^T (shapes agree only when square)",
        {
            "scaled_dot_product_attention": """
        def scaled_dot_product_attention(Q, K, V, mask=None):
            if Q.shape[-1] != K.shape[-1] or K.shape[-2] != V.shape[-2]:
                raise ValueError("shapes do not fit")
            scores = Q.transpose(-2, -1) @ K / math.sqrt(Q.shape[-1])
            if mask is not None:
                scores = scores.masked_fill(mask, float("-inf"))
            weights = torch.softmax(scores, dim=-1)
            return weights @ V, weights
    """
        },
    ),
    Variant(
        "attention",
        "weights transposed before multiplying V (runs only when T_q == T_k)",
        {
            "scaled_dot_product_attention": """
        def scaled_dot_product_attention(Q, K, V, mask=None):
            if Q.shape[-1] != K.shape[-1] or K.shape[-2] != V.shape[-2]:
                raise ValueError("shapes do not fit")
            scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
            if mask is not None:
                scores = scores.masked_fill(mask, float("-inf"))
            weights = torch.softmax(scores, dim=-1)
            return weights.transpose(-2, -1) @ V, weights
    """
        },
    ),
    Variant(
        "attention",
        "hand-written softmax overflows on large scores",
        {
            "scaled_dot_product_attention": """
        def scaled_dot_product_attention(Q, K, V, mask=None):
            if Q.shape[-1] != K.shape[-1] or K.shape[-2] != V.shape[-2]:
                raise ValueError("shapes do not fit")
            scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
            if mask is not None:
                scores = scores.masked_fill(mask, float("-inf"))
            e = torch.exp(scores)
            weights = e / e.sum(dim=-1, keepdim=True)
            return weights @ V, weights
    """
        },
        hints=("softmax overflows",),
    ),
]

ALTERNATIVES = [
    Variant(
        "embedding",
        "functional lookups and a sliced position table",
        {
            "TokenPositionEmbedding": """
        class TokenPositionEmbedding(nn.Module):
            def __init__(self, vocab_size, embed_dim, max_seq_len):
                super().__init__()
                self.tok_emb = nn.Embedding(vocab_size, embed_dim)
                self.pos_emb = nn.Embedding(max_seq_len, embed_dim)

            def forward(self, idx):
                if idx.ndim != 2:
                    raise ValueError("idx must be (B, T)")
                B, T = idx.shape
                if T > self.pos_emb.num_embeddings:
                    raise ValueError(f"T = {T} exceeds max_seq_len = {self.pos_emb.num_embeddings}")
                tokens = F.embedding(idx, self.tok_emb.weight)
                return tokens + self.pos_emb.weight[:T].unsqueeze(0)
    """
        },
    ),
    Variant(
        "sinusoidal",
        "float32 div_term with exp and log, then interleave by reshape",
        {
            "sinusoidal_positions": """
        def sinusoidal_positions(max_seq_len, embed_dim):
            if embed_dim % 2 == 1:
                raise ValueError(f"embed_dim must be even, got {embed_dim}")
            position = torch.arange(max_seq_len).unsqueeze(1).float()
            div_term = torch.exp(torch.arange(0, embed_dim, 2).float() * (-math.log(10000.0) / embed_dim))
            angles = position * div_term
            return torch.stack([angles.sin(), angles.cos()], dim=2).reshape(max_seq_len, embed_dim)
    """
        },
    ),
    Variant(
        "rope",
        "complex multiplication with view_as_complex",
        {
            "apply_rope": """
        def apply_rope(x, base=10000.0):
            *lead, T, D = x.shape
            if D % 2:
                raise ValueError(f"D must be even, got {D}")
            freqs = 1.0 / base ** (torch.arange(0, D, 2, device=x.device).float() / D)
            angles = torch.outer(torch.arange(T, device=x.device).float(), freqs)
            rotor = torch.polar(torch.ones_like(angles), angles)
            z = torch.view_as_complex(x.float().reshape(*lead, T, D // 2, 2).contiguous())
            return torch.view_as_real(z * rotor).reshape(x.shape).to(x.dtype)
    """
        },
    ),
    Variant(
        "attention",
        "einsum with an additive -1e9 mask",
        {
            "scaled_dot_product_attention": """
        def scaled_dot_product_attention(Q, K, V, mask=None):
            if Q.size(-1) != K.size(-1):
                raise ValueError("Q and K need the same d_k")
            if K.size(-2) != V.size(-2):
                raise ValueError("K and V need the same number of keys")
            scores = torch.einsum("...qd,...kd->...qk", Q, K) * Q.size(-1) ** -0.5
            if mask is not None:
                if mask.dtype != torch.bool:
                    raise ValueError("mask must be boolean")
                scores = scores + mask.to(scores.dtype) * -1e9
            weights = F.softmax(scores, dim=-1)
            return torch.einsum("...qk,...kd->...qd", weights, V), weights
    """
        },
    ),
    Variant(
        "attention",
        "F.scaled_dot_product_attention with the inverted mask",
        {
            "scaled_dot_product_attention": """
        def scaled_dot_product_attention(Q, K, V, mask=None):
            if Q.shape[-1] != K.shape[-1] or K.shape[-2] != V.shape[-2]:
                raise ValueError(f"incompatible shapes {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
            scores = (Q @ K.mT) / math.sqrt(Q.shape[-1])
            if mask is not None:
                if mask.dtype is not torch.bool:
                    raise ValueError(f"the mask must be boolean, got {mask.dtype}")
                scores = scores.masked_fill(mask, -math.inf)
            weights = scores.softmax(-1)
            # PyTorch's own kernel for the output: its boolean mask means "may attend"
            out = F.scaled_dot_product_attention(Q, K, V, attn_mask=None if mask is None else ~mask)
            return out, weights
    """
        },
    ),
]
