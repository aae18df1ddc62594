"""Realistic mistakes and correct alternatives for stage 05_multihead.

The ``heads`` mistakes live in ``split_heads`` / ``merge_heads`` only; the ``mha``
tests swap those two functions for known-good ones, so such a mistake costs ``heads``
points and nothing else. The ``mha`` mistakes live inside the class (one of them is
the merge-without-transpose bug written inline in ``forward``, which is the class's
own code and is graded there).
"""

from autograder.authoring.catalogue import Variant, slip

# A correct class written as a template: each mistake below replaces one of its lines
# ({mask}, {scores}, {blocked}, {softmax}, {attend}, {merge}, {out}).
_MHA = """
class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True):
        super().__init__()
        if num_heads < 1:
            raise ValueError("num_heads must be positive")
        if embed_dim % num_heads != 0:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask=None, return_weights=False):
        if x.dim() != 3 or x.shape[-1] != self.embed_dim:
            raise ValueError("x must be (B, T, embed_dim)")
        B, T, C = x.shape
        if mask is not None:
            if mask.dtype != torch.bool:
                raise ValueError("the mask must be boolean")
            if mask.dim() not in (2, 3, 4):
                raise ValueError("the mask must be (T, T), (B, T, T) or (B, 1, T)")
            {mask}
        q = split_heads(self.q_proj(x), self.num_heads)
        k = split_heads(self.k_proj(x), self.num_heads)
        v = split_heads(self.v_proj(x), self.num_heads)
        {scores}
        if mask is not None:
            scores = scores.masked_fill({blocked}, float("-inf"))
        {softmax}
        {attend}
        {merge}
        {out}
        if return_weights:
            return out, weights
        return out
"""

_RIGHT = {
    "mask": "mask = mask.unsqueeze(1) if mask.dim() == 3 else mask",
    "scores": "scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)",
    "blocked": "mask",
    "softmax": "weights = torch.softmax(scores, dim=-1)",
    "attend": "out = self.drop(weights) @ v",
    "merge": "out = merge_heads(out)",
    "out": "out = self.drop(self.out_proj(out))",
}


def _mha(**changes: str) -> str:
    return _MHA.format(**{**_RIGHT, **changes})


def mha(name: str, clauses: tuple[str, ...], changes=(), hints=(), hidden_only=None, **lines: str) -> Variant:
    """A mistake of ``mha``: the template with ``lines`` replaced, then each ``(old, new)`` of ``changes`` made."""
    return Variant(
        "mha",
        name,
        {"MultiHeadAttention": slip(_mha(**lines), *changes)},
        hints=hints,
        clauses=clauses,
        hidden_only=hidden_only,
    )


# Why only a hidden test sees these mistakes: the public tests stop at the two errors the
# notebook asked for first (a head count that does not divide embed_dim, a float mask).
_NO_PUBLIC = "no public test gives num_heads=0, an x of another width or a mask of another rank"


MISTAKES = [
    # heads
    Variant(
        "heads",
        "split with a bare reshape to (B, H, T, D)",
        {
            "split_heads": """
        def split_heads(x, num_heads):
            if x.dim() != 3 or num_heads < 1 or x.shape[-1] % num_heads != 0:
                raise ValueError("num_heads must divide C")
            B, T, C = x.shape
            return x.reshape(B, num_heads, T, C // num_heads)
    """
        },
        hints=("split with a bare reshape",),
        clauses=("split-blocks",),
    ),
    Variant(
        "heads",
        "merge without moving the head axis back",
        {
            "merge_heads": """
        def merge_heads(x):
            if x.dim() != 4:
                raise ValueError("expected (B, H, T, D)")
            B, H, T, D = x.shape
            return x.reshape(B, T, H * D)
    """
        },
        hints=("merge without moving the head axis",),
        clauses=("merge",),
    ),
    Variant(
        "heads",
        "merge with .view straight after the transpose",
        {
            "merge_heads": """
        def merge_heads(x):
            if x.dim() != 4:
                raise ValueError("expected (B, H, T, D)")
            B, H, T, D = x.shape
            return x.transpose(1, 2).view(B, T, H * D)
    """
        },
        clauses=("merge",),
    ),
    Variant(
        "heads",
        "every H-th feature goes to a head (interleaved split)",
        {
            "split_heads": """
        def split_heads(x, num_heads):
            if x.dim() != 3 or num_heads < 1 or x.shape[-1] % num_heads != 0:
                raise ValueError("num_heads must divide C")
            B, T, C = x.shape
            return x.view(B, T, C // num_heads, num_heads).permute(0, 3, 1, 2)
    """
        },
        hints=("interleaved split",),
        clauses=("split-blocks",),
    ),
    Variant(
        "heads",
        "split without moving the head axis: (B, T, H, D)",
        {
            "split_heads": """
        def split_heads(x, num_heads):
            if x.dim() != 3 or num_heads < 1 or x.shape[-1] % num_heads != 0:
                raise ValueError("num_heads must divide C")
            B, T, C = x.shape
            return x.view(B, T, num_heads, C // num_heads)
    """
        },
        hints=("head axis after the time axis",),
        clauses=("split-shape",),
    ),
    Variant(
        "heads",
        "merge that interleaves the heads' features",
        {
            "merge_heads": """
        def merge_heads(x):
            if x.dim() != 4:
                raise ValueError("expected (B, H, T, D)")
            B, H, T, D = x.shape
            return x.permute(0, 2, 3, 1).reshape(B, T, H * D)
    """
        },
        hints=("interleaved merge",),
        clauses=("merge",),
    ),
    Variant(
        "heads",
        "no ValueError for a head count that does not divide C",
        {
            "split_heads": """
        def split_heads(x, num_heads):
            B, T, C = x.shape
            return x.view(B, T, num_heads, C // num_heads).transpose(1, 2)
    """
        },
        clauses=("divisor",),
    ),
    Variant(
        "heads",
        "merge with transpose and flatten, its rank unchecked",
        {
            "merge_heads": """
        def merge_heads(x):
            return x.transpose(1, 2).flatten(2)
    """
        },
        clauses=("ranks",),
    ),
    # mha
    mha(
        "scores divided by sqrt(C) instead of sqrt(D)",
        ("scale",),
        scores="scores = q @ k.transpose(-2, -1) / math.sqrt(self.embed_dim)",
        hints=("scores scaled by the wrong width",),
    ),
    mha(
        "one softmax across all heads",
        ("softmax",),
        softmax="weights = torch.softmax(scores.transpose(1, 2).reshape(B, T, -1), dim=-1)"
        ".view(B, T, self.num_heads, T).transpose(1, 2)",
        hints=("one softmax across all heads",),
    ),
    mha("True in the mask taken to mean may attend", ("mask",), blocked="~mask", hints=("mask inverted",)),
    mha(
        "head axis of a 3-D mask added in front",
        ("mask-3d",),
        mask="mask = mask.unsqueeze(0) if mask.dim() == 3 else mask",
        hints=("3-D mask without its head axis at position 1",),
    ),
    mha(
        "3-D mask used as it is, without a head axis",
        ("mask-3d",),
        mask="pass",
        hints=("3-D mask without its head axis at position 1",),
    ),
    mha(
        "softmax over the head axis",
        ("softmax",),
        softmax="weights = torch.softmax(scores, dim=1)",
        hints=("softmax over the head axis",),
    ),
    mha("out_proj never applied", ("out-proj",), out="out = self.drop(out)"),
    mha("heads merged inline without the transpose", ("out-proj",), merge="out = out.reshape(B, T, C)"),
    mha(
        "mask applied after the softmax (blocked weights zeroed)",
        ("mask",),
        blocked="torch.zeros_like(mask)",
        softmax="weights = torch.softmax(scores, dim=-1)\n        weights = weights if mask is None else weights.masked_fill(mask, 0.0)",
        hints=("mask applied after the softmax",),
    ),
    mha(
        "weights returned after dropout",
        ("weights-before",),
        attend="weights = self.drop(weights)\n        out = weights @ v",
        hints=("weights returned after dropout",),
    ),
    mha(
        "dropout after out_proj only, none on the attention weights",
        ("dropout-weights",),
        attend="out = weights @ v",
        hints=("no dropout on the attention weights",),
    ),
    mha(
        "no dropout after out_proj",
        ("dropout-out",),
        out="out = self.out_proj(out)",
        hints=("no dropout after out_proj",),
    ),
    mha(
        "weights averaged over the heads, as nn.MultiheadAttention does by default",
        ("per-head-weights",),
        merge="out = merge_heads(out)\n        weights = weights.mean(dim=1)",
        hints=("weights averaged over heads",),
    ),
    mha("dropout also active in eval mode", ("dropout-eval",), attend="out = F.dropout(weights, self.drop.p) @ v"),
    mha(
        "the output projection named proj",
        ("linears",),
        changes=[
            (
                "self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)",
                "self.proj = nn.Linear(embed_dim, embed_dim, bias=bias)",
            )
        ],
        out="out = self.drop(self.proj(out))",
    ),
    mha("bias off by default", ("bias-default",), changes=[("bias=True):", "bias=False):")]),
    mha(
        "the bias argument ignored",
        ("bias-false",),
        changes=[
            (
                f"self.{name} = nn.Linear(embed_dim, embed_dim, bias=bias)",
                f"self.{name} = nn.Linear(embed_dim, embed_dim)",
            )
            for name in ("q_proj", "k_proj", "v_proj", "out_proj")
        ],
    ),
    mha(
        "embed_dim not checked against num_heads",
        ("divisible",),
        changes=[
            (
                '        if embed_dim % num_heads != 0:\n            raise ValueError("embed_dim must be divisible by num_heads")\n',
                "",
            )
        ],
    ),
    mha(
        "a float mask not refused",
        ("bool-mask",),
        changes=[
            (
                '            if mask.dtype != torch.bool:\n                raise ValueError("the mask must be boolean")\n',
                "",
            )
        ],
    ),
    mha(
        "the weights returned by default",
        ("plain-default",),
        changes=[("return_weights=False):", "return_weights=True):")],
    ),
    mha("a default dropout of 0.1", ("dropout-default",), changes=[("dropout=0.0,", "dropout=0.1,")]),
    mha(
        "num_heads=0 not refused (embed_dim % 0 fails first)",
        ("heads-positive",),
        changes=[('        if num_heads < 1:\n            raise ValueError("num_heads must be positive")\n', "")],
        hidden_only=_NO_PUBLIC,
    ),
    mha(
        "x of another width not refused (nn.Linear fails first)",
        ("x-shape",),
        changes=[
            (
                '        if x.dim() != 3 or x.shape[-1] != self.embed_dim:\n            raise ValueError("x must be (B, T, embed_dim)")\n',
                "",
            )
        ],
        hidden_only=_NO_PUBLIC,
    ),
    mha(
        "a mask of another rank not refused (a 1-D mask broadcasts)",
        ("mask-rank",),
        changes=[
            (
                "            if mask.dim() not in (2, 3, 4):\n"
                '                raise ValueError("the mask must be (T, T), (B, T, T) or (B, 1, T)")\n',
                "",
            )
        ],
        hidden_only=_NO_PUBLIC,
    ),
    mha(
        "a causal mask applied when none is given",
        ("mask-default",),
        changes=[
            (
                "        if mask is not None:\n            if mask.dtype",
                "        if mask is None:\n            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)\n        if mask is not None:\n            if mask.dtype",
            )
        ],
    ),
]

ALTERNATIVES = [
    Variant(
        "heads",
        "chunk and stack, unbind and cat",
        {
            "split_heads": """
        def split_heads(x, num_heads):
            if x.dim() != 3:
                raise ValueError(f"expected a 3-D tensor, got {x.dim()} dimensions")
            if num_heads <= 0 or x.size(-1) % num_heads:
                raise ValueError(f"{num_heads} heads cannot share {x.size(-1)} features")
            return torch.stack(x.chunk(num_heads, dim=-1), dim=1)
    """,
            "merge_heads": """
        def merge_heads(x):
            if x.dim() != 4:
                raise ValueError(f"expected a 4-D tensor, got {x.dim()} dimensions")
            return torch.cat(x.unbind(dim=1), dim=-1)
    """,
        },
    ),
    Variant(
        "heads",
        "view and permute with contiguous",
        {
            "split_heads": """
        def split_heads(x, num_heads):
            if x.ndim != 3 or not (0 < num_heads <= x.shape[2]) or x.shape[2] % num_heads:
                raise ValueError("bad number of heads")
            b, t, c = x.shape
            return x.view(b, t, num_heads, c // num_heads).permute(0, 2, 1, 3)
    """,
            "merge_heads": """
        def merge_heads(x):
            if x.ndim != 4:
                raise ValueError("merge_heads needs (B, H, T, D)")
            b, h, t, d = x.shape
            return x.permute(0, 2, 1, 3).contiguous().view(b, t, h * d)
    """,
        },
    ),
    Variant(
        "mha",
        "einsum with per-head weight views, no split_heads",
        {
            "MultiHeadAttention": """
        class MultiHeadAttention(nn.Module):
            def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True):
                super().__init__()
                if num_heads <= 0 or embed_dim % num_heads:
                    raise ValueError(f"num_heads={num_heads} must divide embed_dim={embed_dim}")
                self.c, self.h, self.d = embed_dim, num_heads, embed_dim // num_heads
                self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
                self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
                self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
                self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
                self.p = dropout

            def forward(self, x, mask=None, return_weights=False):
                if x.ndim != 3 or x.shape[2] != self.c:
                    raise ValueError(f"x must be (B, T, {self.c}), got {tuple(x.shape)}")
                b, t, c = x.shape
                q = self.q_proj(x).view(b, t, self.h, self.d)
                k = self.k_proj(x).view(b, t, self.h, self.d)
                v = self.v_proj(x).view(b, t, self.h, self.d)
                scores = torch.einsum("bqhd,bkhd->bhqk", q, k) * self.d ** -0.5
                if mask is not None:
                    if not isinstance(mask, torch.Tensor) or mask.dtype is not torch.bool:
                        raise ValueError("mask must be a bool tensor")
                    if not 2 <= mask.dim() <= 4:
                        raise ValueError("mask must have 2, 3 or 4 dimensions")
                    if mask.dim() == 3:
                        mask = mask[:, None]
                    scores = scores.masked_fill(mask, -math.inf)
                attn = scores.softmax(-1)
                dropped = F.dropout(attn, self.p, self.training)
                out = torch.einsum("bhqk,bkhd->bqhd", dropped, v).reshape(b, t, c)
                out = F.dropout(self.out_proj(out), self.p, self.training)
                return (out, attn) if return_weights else out
    """
        },
    ),
    Variant(
        "mha",
        "fused qkv product from the three weights",
        {
            "MultiHeadAttention": """
        class MultiHeadAttention(nn.Module):
            def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True):
                super().__init__()
                if num_heads < 1 or embed_dim % num_heads:
                    raise ValueError("num_heads must be a positive divisor of embed_dim")
                self.num_heads = num_heads
                self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
                self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
                self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
                self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
                self.dropout = nn.Dropout(dropout)

            def forward(self, x, mask=None, return_weights=False):
                if len(x.shape) != 3 or x.shape[-1] != self.q_proj.in_features:
                    raise ValueError("x must be (B, T, embed_dim)")
                weight = torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight])
                bias = None
                if self.q_proj.bias is not None:
                    bias = torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias])
                q, k, v = (split_heads(part, self.num_heads) for part in F.linear(x, weight, bias).chunk(3, dim=-1))
                scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(q.shape[-1])
                if mask is not None:
                    if mask.dtype != torch.bool or mask.dim() not in (2, 3, 4):
                        raise ValueError("boolean masks of 2, 3 or 4 dimensions only")
                    while mask.dim() < 4:
                        mask = mask.unsqueeze(-3)
                    scores = scores.masked_fill(mask, float("-inf"))
                weights = F.softmax(scores, dim=-1)
                out = merge_heads(torch.matmul(self.dropout(weights), v))
                out = self.dropout(self.out_proj(out))
                if return_weights:
                    return out, weights
                return out
    """
        },
    ),
    Variant(
        "mha",
        "F.scaled_dot_product_attention with the mask inverted",
        {
            "MultiHeadAttention": """
        class MultiHeadAttention(nn.Module):
            def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True):
                super().__init__()
                if num_heads <= 0:
                    raise ValueError(f"num_heads must be positive, got {num_heads}")
                if embed_dim % num_heads != 0:
                    raise ValueError(f"{embed_dim} is not divisible by {num_heads}")
                self.num_heads, self.embed_dim = num_heads, embed_dim
                self.dropout = dropout
                self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
                self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
                self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
                self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

            def forward(self, x, mask=None, return_weights=False):
                if x.dim() != 3 or x.size(2) != self.embed_dim:
                    raise ValueError("expected x of shape (B, T, embed_dim)")
                q, k, v = (split_heads(p(x), self.num_heads) for p in (self.q_proj, self.k_proj, self.v_proj))
                allowed = None
                if mask is not None:
                    if mask.dtype != torch.bool:
                        raise ValueError("mask must be boolean, True = blocked")
                    if mask.dim() < 2 or mask.dim() > 4:
                        raise ValueError("mask must be (T, T), (B, T, T) or (B, 1, T)")
                    allowed = ~(mask.unsqueeze(1) if mask.dim() == 3 else mask)
                p = self.dropout if self.training else 0.0
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=p)
                out = F.dropout(self.out_proj(merge_heads(out)), p=p, training=self.training)
                if not return_weights:
                    return out
                scores = q @ k.transpose(-1, -2) / q.size(-1) ** 0.5
                if allowed is not None:
                    scores = scores.masked_fill(~allowed, float("-inf"))
                return out, scores.softmax(dim=-1)
    """
        },
    ),
    Variant(
        "mha",
        "a loop over heads slicing the projections",
        {
            "MultiHeadAttention": """
        class MultiHeadAttention(nn.Module):
            def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True):
                super().__init__()
                if not num_heads > 0 or embed_dim % num_heads:
                    raise ValueError("num_heads must be a positive divisor of embed_dim")
                self.num_heads, self.head_dim = num_heads, embed_dim // num_heads
                for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
                    setattr(self, name, nn.Linear(embed_dim, embed_dim, bias=bias))
                self.attn_drop = nn.Dropout(dropout)
                self.out_drop = nn.Dropout(dropout)

            def forward(self, x, mask=None, return_weights=False):
                if x.dim() != 3 or x.shape[-1] != self.num_heads * self.head_dim:
                    raise ValueError("x must be (B, T, embed_dim)")
                if mask is not None and (mask.dtype != torch.bool or mask.dim() not in (2, 3, 4)):
                    raise ValueError("only boolean masks (T, T), (B, T, T) or (B, 1, T) are accepted")
                if mask is not None and mask.dim() == 4:
                    mask = mask[:, 0]
                q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
                outs, all_weights = [], []
                for h in range(self.num_heads):
                    part = slice(h * self.head_dim, (h + 1) * self.head_dim)
                    s = q[..., part] @ k[..., part].transpose(1, 2) / math.sqrt(self.head_dim)
                    if mask is not None:
                        s = s.masked_fill(mask, float("-inf"))
                    w = torch.softmax(s, dim=-1)
                    all_weights.append(w)
                    outs.append(self.attn_drop(w) @ v[..., part])
                out = self.out_drop(self.out_proj(torch.cat(outs, dim=-1)))
                if return_weights:
                    return out, torch.stack(all_weights, dim=1)
                return out
    """
        },
    ),
]
