"""Realistic mistakes and correct alternatives for stage 03_attention.

Most mistakes are a correct base with one slip (``slip(base, (old, new))``), so that each
breaks exactly the clause (``clauses.md`` id) it declares; a few are written out whole,
as a student would write them. The embedding's base is the reference itself
(``reference("attention", ...)``); SINUSOIDAL, ROPE and ATTENTION are shorter correct
rewrites of theirs (terser arithmetic, shorter messages; ATTENTION without the reference's
rank and mask-shape checks), which their slips are written against.
"""

from autograder.authoring.catalogue import Variant, reference, slip

SINUSOIDAL = """
def sinusoidal_positions(max_seq_len, embed_dim):
    for name, value in (("max_seq_len", max_seq_len), ("embed_dim", embed_dim)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if embed_dim % 2 != 0:
        raise ValueError(f"embed_dim must be even, got {embed_dim}")
    pos = torch.arange(max_seq_len, dtype=torch.float64)[:, None]
    freq = 10000.0 ** (torch.arange(0, embed_dim, 2, dtype=torch.float64) / embed_dim)
    pe = torch.zeros(max_seq_len, embed_dim, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos / freq)
    pe[:, 1::2] = torch.cos(pos / freq)
    return pe.float()
"""

ROPE = """
def apply_rope(x, base=10000.0):
    if x.dim() < 2:
        raise ValueError(f"x must have shape (..., T, D), got {tuple(x.shape)}")
    T, D = x.shape[-2], x.shape[-1]
    if D % 2:
        raise ValueError(f"D must be even, got {D}")
    if not base > 0:
        raise ValueError(f"base must be positive, got {base}")
    theta = base ** (-torch.arange(0, D, 2, dtype=torch.float64, device=x.device) / D)
    angles = torch.arange(T, dtype=torch.float64, device=x.device)[:, None] * theta
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)
"""

ATTENTION = """
def scaled_dot_product_attention(Q, K, V, mask=None):
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError("Q and K must share d_k")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError("K and V must hold the same number of keys")
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    if mask is not None:
        if mask.dtype != torch.bool:
            raise ValueError("mask must be boolean")
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights
"""


def embedding(name, old, new, clauses, more=(), **options):
    """A mistake of ``embedding``: the reference with ``old`` replaced by ``new`` (and the pairs in ``more``)."""
    source = slip(reference("attention", "TokenPositionEmbedding"), (old, new), *more)
    return Variant("embedding", name, {"TokenPositionEmbedding": source}, clauses=clauses, **options)


def sinusoidal(name, old, new, clauses, more=(), **options):
    """A mistake of ``sinusoidal``: its base with ``old`` replaced by ``new`` (and the pairs in ``more``)."""
    source = slip(SINUSOIDAL, (old, new), *more)
    return Variant("sinusoidal", name, {"sinusoidal_positions": source}, clauses=clauses, **options)


def rope(name, old, new, clauses, more=(), **options):
    """A mistake of ``rope``: its base with ``old`` replaced by ``new`` (and the pairs in ``more``)."""
    return Variant("rope", name, {"apply_rope": slip(ROPE, (old, new), *more)}, clauses=clauses, **options)


def attention(name, old, new, clauses, more=(), **options):
    """A mistake of ``attention``: its base with ``old`` replaced by ``new`` (and the pairs in ``more``)."""
    source = slip(ATTENTION, (old, new), *more)
    return Variant("attention", name, {"scaled_dot_product_attention": source}, clauses=clauses, **options)


MISTAKES = [
    # embedding
    embedding(
        "token table named token_emb",
        "self.tok_emb = nn.Embedding(vocab_size, embed_dim)",
        "self.token_emb = nn.Embedding(vocab_size, embed_dim)",
        ("tok-table",),
        more=[("return self.tok_emb(idx)", "return self.token_emb(idx)")],
    ),
    embedding(
        "position table named position_emb",
        "self.pos_emb = nn.Embedding(max_seq_len, embed_dim)",
        "self.position_emb = nn.Embedding(max_seq_len, embed_dim)",
        ("pos-table",),
        more=[("self.pos_emb(positions)", "self.position_emb(positions)")],
    ),
    embedding(
        "token and position vectors concatenated, not added",
        "return self.tok_emb(idx) + self.pos_emb(positions)",
        "return torch.cat([self.tok_emb(idx), self.pos_emb(positions).expand(idx.shape[0], -1, -1)], dim=-1)",
        ("sum",),
    ),
    embedding(
        "position table indexed by the token ids",
        "self.pos_emb(positions)",
        "self.pos_emb(idx)",
        ("positions-from-0",),
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
                if min(vocab_size, embed_dim, max_seq_len) < 1:
                    raise ValueError("sizes must be positive")
                self.max_seq_len = max_seq_len
                self.tok_emb = nn.Embedding(vocab_size, embed_dim)
                self.pos_emb = nn.Embedding(max_seq_len + 1, embed_dim)

            def forward(self, idx):
                if idx.dim() != 2:
                    raise ValueError("idx must be (B, T)")
                T = idx.shape[1]
                if T > self.max_seq_len:
                    raise ValueError("sequence too long")
                return self.tok_emb(idx) + self.pos_emb(torch.arange(1, T + 1, device=idx.device))
    """
        },
        hints=("positions counted from 1",),
        clauses=("positions-from-0", "pos-table"),
    ),
    embedding(
        "positions 1..T looked up in a table of max_seq_len rows",
        "positions = torch.arange(T, device=idx.device)",
        "positions = torch.arange(1, T + 1, device=idx.device)",
        ("positions-from-0", "max-len-accepted"),
        hints=("positions counted from 1",),
    ),
    embedding(
        "token vectors scaled by sqrt(C) as in the original paper",
        "return self.tok_emb(idx) + self.pos_emb(positions)",
        "return self.tok_emb(idx) * math.sqrt(self.tok_emb.embedding_dim) + self.pos_emb(positions)",
        ("plain-sum",),
        hints=("token vectors scaled",),
    ),
    embedding(
        "off-by-one length check rejects exactly max_seq_len",
        "if T > self.max_seq_len:",
        "if T >= self.max_seq_len:",
        ("max-len-accepted",),
    ),
    embedding(
        "no length check (IndexError from nn.Embedding)",
        "if T > self.max_seq_len:",
        "if False:",
        ("too-long",),
    ),
    embedding(
        "ids that are not 2-D not rejected",
        "if idx.dim() != 2:",
        "if idx.dim() > 2:",
        ("not-2d",),
    ),
    embedding(
        "sizes not checked",
        '        for name, value in (("vocab_size", vocab_size), ("embed_dim", embed_dim), ("max_seq_len", max_seq_len)):\n'
        "            if isinstance(value, bool) or not isinstance(value, int) or value < 1:\n"
        '                raise ValueError(f"{name} must be a positive integer, got {value!r}")\n',
        "",
        ("sizes",),
    ),
    embedding(
        "positions made on the default device",
        "positions = torch.arange(T, device=idx.device)",
        "positions = torch.arange(T)",
        ("device",),
    ),
    # sinusoidal
    sinusoidal(
        "the table with a batch axis, (1, max_seq_len, embed_dim)",
        "return pe.float()",
        "return pe.float().unsqueeze(0)",
        ("shape",),
    ),
    sinusoidal(
        "sin and cos swapped",
        "pe[:, 0::2] = torch.sin(pos / freq)\n    pe[:, 1::2] = torch.cos(pos / freq)",
        "pe[:, 0::2] = torch.cos(pos / freq)\n    pe[:, 1::2] = torch.sin(pos / freq)",
        ("sines",),
        hints=("sin and cos swapped",),
    ),
    sinusoidal(
        "all sines first, then all cosines",
        "pe[:, 0::2] = torch.sin(pos / freq)\n    pe[:, 1::2] = torch.cos(pos / freq)",
        "half = embed_dim // 2\n    pe[:, :half] = torch.sin(pos / freq)\n    pe[:, half:] = torch.cos(pos / freq)",
        ("alternate",),
        hints=("sines and cosines in blocks",),
    ),
    Variant(
        "sinusoidal",
        "odd columns use their own column number in the exponent",
        {
            "sinusoidal_positions": """
        def sinusoidal_positions(max_seq_len, embed_dim):
            if max_seq_len < 1 or embed_dim < 1:
                raise ValueError("sizes must be positive")
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
        clauses=("cosines",),
    ),
    sinusoidal(
        "pair index not doubled in the exponent",
        "torch.arange(0, embed_dim, 2, dtype=torch.float64) / embed_dim",
        "torch.arange(embed_dim // 2, dtype=torch.float64) / embed_dim",
        ("sines",),
        hints=("pair index not doubled",),
    ),
    Variant(
        "sinusoidal",
        "angles computed in float32 (exp and log, as in many tutorials)",
        {
            "sinusoidal_positions": """
        def sinusoidal_positions(max_seq_len, embed_dim):
            if max_seq_len < 1 or embed_dim < 1:
                raise ValueError("sizes must be positive")
            if embed_dim % 2 == 1:
                raise ValueError(f"embed_dim must be even, got {embed_dim}")
            position = torch.arange(max_seq_len).unsqueeze(1).float()
            div_term = torch.exp(torch.arange(0, embed_dim, 2).float() * (-math.log(10000.0) / embed_dim))
            angles = position * div_term
            return torch.stack([angles.sin(), angles.cos()], dim=2).reshape(max_seq_len, embed_dim)
    """
        },
        clauses=("float64-angles",),
    ),
    sinusoidal(
        "angles computed in float32 (pow)",
        "pos = torch.arange(max_seq_len, dtype=torch.float64)[:, None]\n"
        "    freq = 10000.0 ** (torch.arange(0, embed_dim, 2, dtype=torch.float64) / embed_dim)",
        "pos = torch.arange(max_seq_len, dtype=torch.float32)[:, None]\n"
        "    freq = 10000.0 ** (torch.arange(0, embed_dim, 2, dtype=torch.float32) / embed_dim)",
        ("float64-angles",),
    ),
    sinusoidal(
        "the float64 table returned as it is",
        "return pe.float()",
        "return pe",
        ("dtype",),
    ),
    sinusoidal(
        "odd embed_dim not rejected",
        '    if embed_dim % 2 != 0:\n        raise ValueError(f"embed_dim must be even, got {embed_dim}")\n',
        "",
        ("odd",),
        more=[("pe[:, 1::2] = torch.cos(pos / freq)", "pe[:, 1::2] = torch.cos(pos / freq)[:, : embed_dim // 2]")],
    ),
    sinusoidal(
        "sizes not checked",
        '    for name, value in (("max_seq_len", max_seq_len), ("embed_dim", embed_dim)):\n'
        "        if isinstance(value, bool) or not isinstance(value, int) or value < 1:\n"
        '            raise ValueError(f"{name} must be a positive integer, got {value!r}")\n',
        "",
        ("sizes",),
    ),
    # rope
    rope(
        "pairs not flattened back, (..., T, D/2, 2)",
        ".flatten(-2)",
        "",
        ("shape",),
    ),
    rope(
        "positions taken from the batch axis (hidden when B == T)",
        "T, D = x.shape[-2], x.shape[-1]",
        "T, D = x.shape[0], x.shape[-1]",
        ("positions",),
    ),
    Variant(
        "rope",
        "leading axes flattened into the positions",
        {
            "apply_rope": """
        def apply_rope(x, base=10000.0):
            if x.dim() < 2:
                raise ValueError("x must be (..., T, D)")
            D = x.shape[-1]
            if D % 2:
                raise ValueError("D must be even")
            if base <= 0:
                raise ValueError("base must be positive")
            flat = x.reshape(-1, D)  # (N, D): every row gets a position of its own
            theta = base ** (-torch.arange(0, D, 2, dtype=torch.float64, device=x.device) / D)
            angles = torch.arange(flat.shape[0], dtype=torch.float64, device=x.device)[:, None] * theta
            cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
            a, b = flat[:, 0::2], flat[:, 1::2]
            return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2).reshape(x.shape)
    """
        },
        clauses=("leading",),
    ),
    rope(
        "a 2-D input refused (a batch axis required)",
        "if x.dim() < 2:",
        "if x.dim() < 3:",
        ("two-d",),
    ),
    Variant(
        "rope",
        "only 3-D (B, T, D) inputs",
        {
            "apply_rope": """
        def apply_rope(x, base=10000.0):
            if x.dim() < 2:
                raise ValueError("x must be (..., T, D)")
            if base <= 0:
                raise ValueError("base must be positive")
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
        clauses=("two-d", "leading"),
    ),
    Variant(
        "rope",
        "rotates halves (i, i + D/2) instead of interleaved pairs",
        {
            "apply_rope": """
        def apply_rope(x, base=10000.0):
            if x.dim() < 2 or base <= 0:
                raise ValueError("x must be (..., T, D) and base positive")
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
        clauses=("interleaved",),
    ),
    rope(
        "rotation in the opposite direction",
        "[a * cos - b * sin, a * sin + b * cos]",
        "[a * cos + b * sin, b * cos - a * sin]",
        ("direction",),
        hints=("rotation in the opposite direction",),
    ),
    rope(
        "frequencies base^(-i/D) (pair index not doubled)",
        "theta = base ** (-torch.arange(0, D, 2, dtype=torch.float64, device=x.device) / D)",
        "theta = base ** (-torch.arange(D // 2, dtype=torch.float64, device=x.device) / D)",
        ("angles",),
        hints=("frequencies base^(-i/D)",),
    ),
    rope(
        "base defaults to 500000 (LLaMA 3's)",
        "def apply_rope(x, base=10000.0):",
        "def apply_rope(x, base=500000.0):",
        ("base-default",),
    ),
    rope(
        "the given base ignored (always 10000)",
        "theta = base ** (",
        "theta = 10000.0 ** (",
        ("base",),
    ),
    rope(
        "angles in float64, never cast back",
        "cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)",
        "cos, sin = angles.cos(), angles.sin()",
        ("dtype",),
    ),
    rope(
        "the sine terms forgotten (x * cos)",
        "[a * cos - b * sin, a * sin + b * cos]",
        "[a * cos, b * cos]",
        ("rotation",),
    ),
    rope(
        "odd D not rejected (the last entry left as it is)",
        'if D % 2:\n        raise ValueError(f"D must be even, got {D}")',
        "n = D - D % 2",
        ("odd",),
        more=[
            (
                "cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)\n"
                "    a, b = x[..., 0::2], x[..., 1::2]\n"
                "    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)",
                "cos, sin = angles.cos().to(x.dtype)[:, : n // 2], angles.sin().to(x.dtype)[:, : n // 2]\n"
                "    a, b = x[..., 0:n:2], x[..., 1:n:2]\n"
                "    out = torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)\n"
                "    return torch.cat([out, x[..., n:]], dim=-1)",
            )
        ],
    ),
    rope(
        "a 1-D input not rejected (IndexError)",
        '    if x.dim() < 2:\n        raise ValueError(f"x must have shape (..., T, D), got {tuple(x.shape)}")\n',
        "",
        ("dims",),
    ),
    rope(
        "base not checked",
        '    if not base > 0:\n        raise ValueError(f"base must be positive, got {base}")\n',
        "",
        ("base-positive",),
    ),
    rope(
        "rotates x in place and returns it",
        "    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)",
        "    x.copy_(torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2))\n    return x",
        ("new-tensor",),
    ),
    rope(
        "angles made on the default device (cast to x's dtype, never moved)",
        "theta = base ** (-torch.arange(0, D, 2, dtype=torch.float64, device=x.device) / D)",
        "theta = base ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)",
        ("device",),
        more=(
            (
                "angles = torch.arange(T, dtype=torch.float64, device=x.device)[:, None] * theta",
                "angles = torch.arange(T, dtype=torch.float64)[:, None] * theta",
            ),
        ),
        hidden_only="the public tests run on the CPU, where every device is the default one",
    ),
    # attention
    attention(
        "returns (weights, out), the wrong order",
        "return weights @ V, weights",
        "return weights, weights @ V",
        ("shapes",),
    ),
    attention(
        "keys transposed with transpose(1, 2): only 3-D inputs work",
        "K.transpose(-2, -1)",
        "K.transpose(1, 2)",
        ("leading",),
    ),
    attention(
        "leading dimensions required to match exactly",
        'if Q.shape[-1] != K.shape[-1]:\n        raise ValueError("Q and K must share d_k")',
        'if Q.shape[-1] != K.shape[-1]:\n        raise ValueError("Q and K must share d_k")\n'
        "    if Q.shape[:-2] != K.shape[:-2]:\n"
        '        raise ValueError("Q and K must have the same leading dimensions")',
        ("broadcast",),
    ),
    attention(
        "softmax over the queries (wrong axis)",
        "weights = torch.softmax(scores, dim=-1)",
        "weights = torch.softmax(scores, dim=-2)",
        ("softmax",),
        hints=("softmax over the queries",),
    ),
    attention(
        "Q^T K instead of Q K^T (shapes agree only when square)",
        "scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])",
        "scores = Q.transpose(-2, -1) @ K / math.sqrt(Q.shape[-1])",
        ("softmax",),
    ),
    attention(
        "scores divided by d_k instead of sqrt(d_k)",
        "/ math.sqrt(Q.shape[-1])",
        "/ Q.shape[-1]",
        ("scale",),
        hints=("scores divided by d_k",),
    ),
    attention(
        "no scaling at all",
        "scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])",
        "scores = Q @ K.transpose(-2, -1)",
        ("scale",),
        hints=("scores not scaled",),
    ),
    attention(
        "weights transposed before multiplying V (runs only when T_q == T_k)",
        "return weights @ V, weights",
        "return weights.transpose(-2, -1) @ V, weights",
        ("out",),
    ),
    attention(
        "no default for mask",
        "def scaled_dot_product_attention(Q, K, V, mask=None):",
        "def scaled_dot_product_attention(Q, K, V, mask):",
        ("mask-default",),
    ),
    attention(
        "blocked scores set to 0 instead of -inf",
        'scores = scores.masked_fill(mask, float("-inf"))',
        "scores = scores.masked_fill(mask, 0.0)",
        ("blocked",),
        hints=("blocked scores not -inf",),
    ),
    attention(
        "inverted mask (True taken to mean attend)",
        'scores = scores.masked_fill(mask, float("-inf"))',
        'scores = scores.masked_fill(~mask, float("-inf"))',
        ("blocked",),
        hints=("mask inverted",),
    ),
    attention(
        "mask taken as (T_q, T_k) whatever its shape",
        'scores = scores.masked_fill(mask, float("-inf"))',
        'scores = scores.masked_fill(mask.reshape(-1, *scores.shape[-2:])[0], float("-inf"))',
        ("mask-broadcast",),
    ),
    attention(
        "hand-written softmax overflows on large scores",
        "weights = torch.softmax(scores, dim=-1)",
        "e = torch.exp(scores)\n    weights = e / e.sum(dim=-1, keepdim=True)",
        ("stable",),
        hints=("softmax overflows",),
    ),
    attention(
        "d_k not checked (matmul's RuntimeError)",
        '    if Q.shape[-1] != K.shape[-1]:\n        raise ValueError("Q and K must share d_k")\n',
        "",
        ("dk-error",),
    ),
    attention(
        "numbers of keys not checked",
        '    if K.shape[-2] != V.shape[-2]:\n        raise ValueError("K and V must hold the same number of keys")\n',
        "",
        ("keys-error",),
    ),
    attention(
        "a mask that is not boolean not rejected",
        '        if mask.dtype != torch.bool:\n            raise ValueError("mask must be boolean")\n',
        "",
        ("mask-error",),
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
                if min(vocab_size, embed_dim, max_seq_len) <= 0:
                    raise ValueError("every size must be a positive integer")
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
        "float64 div_term with exp and log, then interleave by reshape",
        {
            "sinusoidal_positions": """
        def sinusoidal_positions(max_seq_len, embed_dim):
            if max_seq_len <= 0 or embed_dim <= 0:
                raise ValueError("sizes must be positive integers")
            if embed_dim % 2 == 1:
                raise ValueError(f"embed_dim must be even, got {embed_dim}")
            position = torch.arange(max_seq_len, dtype=torch.float64).unsqueeze(1)
            div_term = torch.exp(torch.arange(0, embed_dim, 2, dtype=torch.float64) * (-math.log(10000.0) / embed_dim))
            angles = position * div_term
            table = torch.stack([angles.sin(), angles.cos()], dim=2).reshape(max_seq_len, embed_dim)
            return table.to(torch.get_default_dtype())
    """
        },
    ),
    Variant(
        "rope",
        "complex multiplication with view_as_complex",
        {
            "apply_rope": """
        def apply_rope(x, base=10000.0):
            if x.ndim < 2:
                raise ValueError("x must be at least 2-D")
            if base <= 0:
                raise ValueError("base must be positive")
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
