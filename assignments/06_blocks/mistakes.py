"""Realistic mistakes and correct alternatives for stage 06_blocks.

The ``block`` tests build the student's block with ``nn.LayerNorm`` and PyTorch's own
feed-forward layers standing in for the notebook's ``LayerNorm`` and ``FeedForward``,
so a ``layernorm`` or ``feedforward`` mistake costs points on its own question only.
The ``block`` mistakes are all in how the block builds and joins its parts, each the
reference with one slip (``slip(reference("blocks", "TransformerBlock"), (old, new))``);
the ``layernorm`` and ``feedforward`` ones change a slot of a template. Each
mistake names the hints (``Hint.mistake``) its failures must carry, and no others.
"""

from autograder.authoring.catalogue import Variant, reference, slip

_LAYERNORM = """
class LayerNorm(nn.Module):
    def __init__(self, dim, eps={default_eps}):
        super().__init__()
        {arguments}
        self.dim, self.eps = dim, eps
        {params}

    def forward(self, x):
        {shape_check}
        {stats}
        return {normalise} {affine}
"""

_LN_RIGHT = {
    "default_eps": "1e-5",
    "arguments": (
        "if dim < 1 or eps < 0:\n"
        '            raise ValueError(f"dim must be positive and eps non-negative, got {dim} and {eps}")'
    ),
    "params": "self.weight = nn.Parameter(torch.ones(dim))\n        self.bias = nn.Parameter(torch.zeros(dim))",
    "shape_check": (
        'if x.shape[-1] != self.dim:\n            raise ValueError(f"expected {self.dim} features, got {x.shape[-1]}")'
    ),
    "stats": "mean = x.mean(-1, keepdim=True)\n        var = ((x - mean) ** 2).mean(-1, keepdim=True)",
    "normalise": "(x - mean) / torch.sqrt(var + self.eps)",
    "affine": "* self.weight + self.bias",
}


def _layernorm(**changes: str) -> str:
    return _LAYERNORM.format(**{**_LN_RIGHT, **changes})


_FEEDFORWARD = """
class FeedForward(nn.Module):
    def __init__(self, embed_dim, ff_dim, activation={default_act}, dropout={default_dropout}):
        super().__init__()
        {check}
        self.activation = activation
        self.fc1 = nn.Linear(embed_dim, ff_dim{bias})
        self.fc2 = nn.Linear(ff_dim, embed_dim{bias})
        self.p = dropout

    def forward(self, x):
        {unpack}
        h = self.fc1(x)
        {act}
        return {out}
"""

_FF_RIGHT = {
    "default_dropout": "0.0",
    "default_act": '"gelu"',
    "unpack": "",
    "check": (
        'if activation not in ("gelu", "relu"):\n            raise ValueError(f"unknown activation {activation!r}")'
    ),
    "bias": "",
    "act": 'h = F.gelu(h) if self.activation == "gelu" else F.relu(h)',
    "out": "F.dropout(self.fc2(h), self.p, self.training)",
}


def _feedforward(**changes: str) -> str:
    return _FEEDFORWARD.format(**{**_FF_RIGHT, **changes})


def _block(*changes: tuple[str, str]) -> str:
    """The reference ``TransformerBlock`` with each ``(old, new)`` of ``changes`` made."""
    return slip(reference("blocks", "TransformerBlock"), *changes)


_NO_PUBLIC = "no public test {}"

MISTAKES = [
    # layernorm
    Variant(
        "layernorm",
        "unbiased variance (divides by C - 1)",
        {"LayerNorm": _layernorm(stats="mean = x.mean(-1, keepdim=True)\n        var = x.var(-1, keepdim=True)")},
        hints=("unbiased variance",),
        clauses=("biased-var",),
    ),
    Variant(
        "layernorm",
        "eps added outside the square root",
        {"LayerNorm": _layernorm(normalise="(x - mean) / (torch.sqrt(var) + self.eps)")},
        hints=("eps outside the square root",),
        clauses=("eps-inside",),
    ),
    Variant(
        "layernorm",
        "statistics over the time axis instead of the features",
        {
            "LayerNorm": _layernorm(
                stats="mean = x.mean(1, keepdim=True)\n        var = x.var(1, keepdim=True, unbiased=False)"
            )
        },
        clauses=("last-axis",),
    ),
    Variant(
        "layernorm",
        "weight and bias are plain tensors, not parameters",
        {"LayerNorm": _layernorm(params="self.weight = torch.ones(dim)\n        self.bias = torch.zeros(dim)")},
        clauses=("params",),
    ),
    Variant(
        "layernorm",
        "weight starts at zeros and bias at ones",
        {
            "LayerNorm": _layernorm(
                params="self.weight = nn.Parameter(torch.zeros(dim))\n        self.bias = nn.Parameter(torch.ones(dim))"
            )
        },
        clauses=("init",),
    ),
    Variant(
        "layernorm",
        "the default eps is BERT's 1e-12",
        {"LayerNorm": _layernorm(default_eps="1e-12")},
        clauses=("eps-default",),
    ),
    Variant(
        "layernorm",
        "no check that the last axis is dim long",
        {"LayerNorm": _layernorm(shape_check="pass")},
        clauses=("shape-error",),
    ),
    Variant(
        "layernorm", "no check of dim and eps", {"LayerNorm": _layernorm(arguments="pass")}, clauses=("arg-errors",)
    ),
    Variant(
        "layernorm",
        "the bias never added",
        {"LayerNorm": _layernorm(affine="* self.weight")},
        clauses=("formula",),
    ),
    Variant(
        "layernorm",
        "forward unpacks x as (B, T, C)",
        {"LayerNorm": _layernorm(shape_check="B, T, C = x.shape\n        " + _LN_RIGHT["shape_check"])},
        clauses=("any-axes",),
    ),
    Variant(
        "layernorm",
        "the mean and the variance detached from the graph",
        {
            "LayerNorm": _layernorm(
                stats="mean = x.mean(-1, keepdim=True).detach()\n        var = ((x - mean) ** 2).mean(-1, keepdim=True).detach()"
            )
        },
        hidden_only=_NO_PUBLIC.format("takes gradients"),
        clauses=("gradients",),
    ),
    # feedforward
    Variant(
        "feedforward",
        "GELU with the tanh approximation",
        {
            "FeedForward": _feedforward(
                act='h = F.gelu(h, approximate="tanh") if self.activation == "gelu" else F.relu(h)'
            )
        },
        hints=("tanh approximation of GELU",),
        clauses=("gelu",),
    ),
    Variant(
        "feedforward",
        "GELU as x * sigmoid(1.702 x)",
        {
            "FeedForward": _feedforward(
                act='h = h * torch.sigmoid(1.702 * h) if self.activation == "gelu" else F.relu(h)'
            )
        },
        hints=("sigmoid approximation of GELU",),
        clauses=("gelu",),
    ),
    Variant(
        "feedforward",
        "the activation argument is ignored (always GELU)",
        {"FeedForward": _feedforward(act="h = F.gelu(h)")},
        clauses=("relu",),
    ),
    Variant(
        "feedforward",
        "no activation between the two layers",
        {"FeedForward": _feedforward(act="pass")},
        clauses=("formula",),
    ),
    Variant(
        "feedforward",
        "dropout also active in eval mode",
        {"FeedForward": _feedforward(out="F.dropout(self.fc2(h), self.p)")},
        clauses=("dropout-eval",),
    ),
    Variant(
        "feedforward",
        "the default dropout is 0.1",
        {"FeedForward": _feedforward(default_dropout="0.1")},
        clauses=("dropout-default",),
    ),
    Variant(
        "feedforward",
        "the two layers have no bias",
        {"FeedForward": _feedforward(bias=", bias=False")},
        clauses=("layers",),
    ),
    Variant(
        "feedforward",
        "an unknown activation silently means relu",
        {"FeedForward": _feedforward(check="pass")},
        clauses=("unknown-error",),
    ),
    Variant(
        "feedforward",
        "relu by default",
        {"FeedForward": _feedforward(default_act='"relu"')},
        clauses=("gelu-default",),
    ),
    Variant(
        "feedforward",
        "forward unpacks x as (B, T, C)",
        {"FeedForward": _feedforward(unpack="B, T, C = x.shape")},
        clauses=("any-axes",),
    ),
    Variant(
        "feedforward",
        "dropout never applied",
        {"FeedForward": _feedforward(out="self.fc2(h)")},
        clauses=("dropout-train",),
    ),
    # block
    Variant(
        "block",
        "pre-norm and post-norm swapped",
        {"TransformerBlock": _block(("if self.norm_first:", "if not self.norm_first:"))},
        hints=("pre-norm and post-norm swapped", "residual stream normalised"),
        clauses=("order",),
    ),
    Variant(
        "block",
        "pre-norm residual taken after the norm",
        {
            "TransformerBlock": _block(
                (
                    "x = x + self.attn(self.ln1(x), mask=mask)",
                    "x = self.ln1(x)\n            x = x + self.attn(x, mask=mask)",
                ),
                ("x = x + self.ff(self.ln2(x))", "x = self.ln2(x)\n            x = x + self.ff(x)"),
            )
        },
        hints=("residual stream normalised",),
        clauses=("pre-norm",),
    ),
    Variant(
        "block",
        "pre-norm attention residual taken after ln1 (the feed-forward half right)",
        {
            "TransformerBlock": _block(
                (
                    "x = x + self.attn(self.ln1(x), mask=mask)",
                    "x = self.ln1(x)\n            x = x + self.attn(x, mask=mask)",
                ),
            )
        },
        hints=("residual stream normalised",),
        clauses=("pre-norm",),
    ),
    Variant(
        "block",
        "post-norm normalises the sublayer output before adding",
        {
            "TransformerBlock": _block(
                ("x = self.ln1(x + self.attn(x, mask=mask))", "x = x + self.ln1(self.attn(x, mask=mask))"),
                ("x = self.ln2(x + self.ff(x))", "x = x + self.ln2(self.ff(x))"),
            )
        },
        clauses=("post-norm",),
    ),
    Variant(
        "block",
        "the mask is not passed to the attention",
        {
            "TransformerBlock": _block(
                ("self.attn(self.ln1(x), mask=mask)", "self.attn(self.ln1(x))"),
                ("self.ln1(x + self.attn(x, mask=mask))", "self.ln1(x + self.attn(x))"),
            )
        },
        clauses=("causal-mask",),
    ),
    Variant(
        "block",
        "ln1 used for both sublayers",
        {
            "TransformerBlock": _block(
                ("self.ff(self.ln2(x))", "self.ff(self.ln1(x))"),
                ("self.ln2(x + self.ff(x))", "self.ln1(x + self.ff(x))"),
            )
        },
        clauses=("pre-norm", "post-norm"),
    ),
    Variant(
        "block",
        "no residual around the feed-forward network",
        {
            "TransformerBlock": _block(
                ("x = x + self.ff(self.ln2(x))", "x = self.ff(self.ln2(x))"),
                ("self.ln2(x + self.ff(x))", "self.ln2(self.ff(x))"),
            )
        },
        clauses=("pre-norm", "post-norm"),
    ),
    Variant(
        "block",
        "the activation is not passed to FeedForward",
        {"TransformerBlock": _block(("ff_dim, activation=activation, dropout=dropout)", "ff_dim, dropout=dropout)"))},
        clauses=("activation",),
    ),
    Variant(
        "block",
        "the dropout is not passed to the parts",
        {
            "TransformerBlock": _block(
                ("num_heads, dropout=dropout)", "num_heads)"),
                ("activation=activation, dropout=dropout)", "activation=activation)"),
            )
        },
        clauses=("dropout",),
    ),
    Variant(
        "block",
        "ff_dim ignored (always 4 * embed_dim)",
        {"TransformerBlock": _block(("FeedForward(embed_dim, ff_dim,", "FeedForward(embed_dim, 4 * embed_dim,"))},
        clauses=("part-args",),
    ),
    Variant(
        "block",
        "post-norm by default",
        {"TransformerBlock": _block(("norm_first: bool = True", "norm_first: bool = False"))},
        hints=("residual stream normalised",),
        clauses=("order-default",),
    ),
    Variant(
        "block",
        "an extra dropout on each sublayer's output, as nn.TransformerEncoderLayer has",
        {
            "TransformerBlock": _block(
                (
                    "activation=activation, dropout=dropout)",
                    "activation=activation, dropout=dropout)\n        self.drop = nn.Dropout(dropout)",
                ),
                ("x + self.attn(self.ln1(x), mask=mask)", "x + self.drop(self.attn(self.ln1(x), mask=mask))"),
                ("x + self.ff(self.ln2(x))", "x + self.drop(self.ff(self.ln2(x)))"),
                ("x + self.attn(x, mask=mask)", "x + self.drop(self.attn(x, mask=mask))"),
                ("x + self.ff(x)", "x + self.drop(self.ff(x))"),
            )
        },
        clauses=("dropout",),
    ),
    Variant(
        "block",
        "the norms named norm1 and norm2",
        {
            "TransformerBlock": _block(
                ("self.ln1 = ", "self.norm1 = "),
                ("self.ln2 = ", "self.norm2 = "),
                ("self.attn(self.ln1(x)", "self.attn(self.norm1(x)"),
                ("self.ff(self.ln2(x)", "self.ff(self.norm2(x)"),
                ("x = self.ln1(x + ", "x = self.norm1(x + "),
                ("x = self.ln2(x + ", "x = self.norm2(x + "),
            )
        },
        clauses=("parts",),
    ),
    Variant(
        "block",
        "relu by default",
        {"TransformerBlock": _block(('activation: str = "gelu"', 'activation: str = "relu"'))},
        hidden_only=_NO_PUBLIC.format("builds a block without an activation argument"),
        clauses=("defaults",),
    ),
    Variant(
        "block",
        "mask=None means a causal mask",
        {
            "TransformerBlock": _block(
                (
                    "if self.norm_first:",
                    "if mask is None:\n"
                    "            mask = torch.ones(x.size(1), x.size(1), dtype=torch.bool, device=x.device).triu(1)\n"
                    "        if self.norm_first:",
                )
            )
        },
        hidden_only=_NO_PUBLIC.format("runs a block without a mask"),
        clauses=("no-mask",),
    ),
    Variant(
        "block",
        "the first sequence's mask used for every sequence",
        {
            "TransformerBlock": _block(
                (
                    "if self.norm_first:",
                    "mask = mask if mask is None or mask.dim() == 2 else mask[0]\n        if self.norm_first:",
                )
            )
        },
        hidden_only=_NO_PUBLIC.format("gives a block a (B, T, T) or (B, 1, T) mask"),
        clauses=("batched-masks",),
    ),
    Variant(
        "block",
        "any activation but relu means gelu",
        {
            "TransformerBlock": _block(
                (
                    "ff_dim, activation=activation,",
                    'ff_dim, activation="relu" if activation == "relu" else "gelu",',
                )
            )
        },
        hidden_only=_NO_PUBLIC.format("gives a block an unknown activation"),
        clauses=("errors",),
    ),
]


ALTERNATIVES = [
    Variant(
        "layernorm",
        "torch.var(unbiased=False) and rsqrt",
        {
            "LayerNorm": """
        class LayerNorm(nn.Module):
            def __init__(self, dim, eps=1e-5):
                super().__init__()
                if dim <= 0:
                    raise ValueError("dim must be positive")
                if eps < 0:
                    raise ValueError("eps must not be negative")
                self.normalized_dim = dim
                self.eps = eps
                self.bias = nn.Parameter(torch.zeros(dim))
                self.weight = nn.Parameter(torch.ones(dim))

            def forward(self, x):
                if x.size(-1) != self.normalized_dim:
                    raise ValueError(f"last axis has {x.size(-1)} features, expected {self.normalized_dim}")
                var = torch.var(x, dim=-1, keepdim=True, unbiased=False)
                return (x - x.mean(dim=-1, keepdim=True)) * torch.rsqrt(var + self.eps) * self.weight + self.bias
    """
        },
    ),
    Variant(
        "layernorm",
        "var_mean with correction=0",
        {
            "LayerNorm": """
        class LayerNorm(nn.Module):
            def __init__(self, dim, eps=1e-5):
                super().__init__()
                if not (dim > 0 and eps >= 0):
                    raise ValueError(f"need dim > 0 and eps >= 0, got dim={dim}, eps={eps}")
                self.dim, self.eps = dim, eps
                self.weight = nn.Parameter(torch.ones(dim))
                self.bias = nn.Parameter(torch.zeros(dim))

            def forward(self, x):
                if x.shape[-1] != self.dim:
                    raise ValueError("wrong number of features")
                var, mean = torch.var_mean(x, dim=-1, correction=0, keepdim=True)
                return torch.addcmul(self.bias, (x - mean) / (var + self.eps).sqrt(), self.weight)
    """
        },
    ),
    Variant(
        "feedforward",
        "erf formula and clamp, dropout on the hidden layer",
        {
            "FeedForward": """
        class FeedForward(nn.Module):
            def __init__(self, embed_dim, ff_dim, activation="gelu", dropout=0.0):
                super().__init__()
                if activation == "gelu":
                    self.act = lambda h: 0.5 * h * (1.0 + torch.erf(h / math.sqrt(2.0)))
                elif activation == "relu":
                    self.act = lambda h: h.clamp(min=0)
                else:
                    raise ValueError(f"activation must be gelu or relu, not {activation}")
                self.fc1 = nn.Linear(embed_dim, ff_dim)
                self.fc2 = nn.Linear(ff_dim, embed_dim)
                self.drop = nn.Dropout(dropout)

            def forward(self, x):
                return self.fc2(self.drop(self.act(self.fc1(x))))
    """
        },
    ),
    Variant(
        "feedforward",
        "activation modules chosen from a dict",
        {
            "FeedForward": """
        class FeedForward(nn.Module):
            ACTIVATIONS = {"gelu": nn.GELU, "relu": nn.ReLU}

            def __init__(self, embed_dim, ff_dim, activation="gelu", dropout=0.0):
                super().__init__()
                if activation not in self.ACTIVATIONS:
                    raise ValueError(f"unknown activation: {activation}")
                self.fc1 = nn.Linear(embed_dim, ff_dim)
                self.act = self.ACTIVATIONS[activation]()
                self.fc2 = nn.Linear(ff_dim, embed_dim)
                self.dropout = nn.Dropout(p=dropout)

            def forward(self, x):
                return self.dropout(self.fc2(self.act(self.fc1(x))))
    """
        },
    ),
    Variant(
        "feedforward",
        "an nn.Sequential built first, fc1 and fc2 pointing into it",
        {
            "FeedForward": """
        class FeedForward(nn.Module):
            def __init__(self, embed_dim, ff_dim, activation="gelu", dropout=0.0):
                super().__init__()
                if activation not in ("gelu", "relu"):
                    raise ValueError(f"unknown activation: {activation}")
                act = nn.GELU() if activation == "gelu" else nn.ReLU()
                self.net = nn.Sequential(nn.Linear(embed_dim, ff_dim), act, nn.Linear(ff_dim, embed_dim), nn.Dropout(dropout))
                self.fc1, self.fc2 = self.net[0], self.net[2]

            def forward(self, x):
                return self.net(x)
    """
        },
    ),
    Variant(
        "block",
        "a helper per sublayer",
        {
            "TransformerBlock": """
        class TransformerBlock(nn.Module):
            def __init__(self, embed_dim, num_heads, ff_dim, dropout=0.0, activation="gelu", norm_first=True):
                super().__init__()
                self.attn = MultiHeadAttention(embed_dim, num_heads, dropout=dropout)
                self.ff = FeedForward(embed_dim, ff_dim, activation, dropout)
                self.ln1, self.ln2 = LayerNorm(embed_dim), LayerNorm(embed_dim)
                self.norm_first = norm_first

            def _sublayer(self, x, norm, fn):
                if self.norm_first:
                    return x + fn(norm(x))
                return norm(x + fn(x))

            def forward(self, x, mask=None):
                x = self._sublayer(x, self.ln1, lambda h: self.attn(h, mask))
                return self._sublayer(x, self.ln2, self.ff)
    """
        },
    ),
    Variant(
        "block",
        "every part built with keyword arguments, LayerNorm(dim=embed_dim) included",
        {
            "TransformerBlock": """
        class TransformerBlock(nn.Module):
            def __init__(self, embed_dim, num_heads, ff_dim, dropout=0.0, activation="gelu", norm_first=True):
                super().__init__()
                self.norm_first = norm_first
                self.attn = MultiHeadAttention(embed_dim=embed_dim, num_heads=num_heads, dropout=dropout)
                self.ln1 = LayerNorm(dim=embed_dim)
                self.ln2 = LayerNorm(dim=embed_dim, eps=1e-5)
                self.ff = FeedForward(embed_dim=embed_dim, ff_dim=ff_dim, activation=activation, dropout=dropout)

            def forward(self, x, mask=None):
                if self.norm_first:
                    x = x + self.attn(self.ln1(x), mask=mask)
                    return x + self.ff(self.ln2(x))
                x = self.ln1(x + self.attn(x, mask=mask))
                return self.ln2(x + self.ff(x))
    """
        },
    ),
    Variant(
        "block",
        "separate pre-norm and post-norm paths with named steps",
        {
            "TransformerBlock": """
        class TransformerBlock(nn.Module):
            def __init__(self, embed_dim, num_heads, ff_dim, dropout=0.0, activation="gelu", norm_first=True):
                super().__init__()
                self.norm_first = bool(norm_first)
                self.ln1 = LayerNorm(embed_dim)
                self.attn = MultiHeadAttention(embed_dim, num_heads, dropout)
                self.ln2 = LayerNorm(embed_dim)
                self.ff = FeedForward(embed_dim, ff_dim, activation=activation, dropout=dropout)

            def forward(self, x, mask=None):
                return self._pre(x, mask) if self.norm_first else self._post(x, mask)

            def _pre(self, x, mask):
                attended = self.attn(self.ln1(x), mask=mask)
                x = x + attended
                return x + self.ff(self.ln2(x))

            def _post(self, x, mask):
                x = self.ln1(x + self.attn(x, mask=mask))
                return self.ln2(x + self.ff(x))
    """
        },
    ),
]
