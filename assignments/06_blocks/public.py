"""Public tests of stage 06_blocks: students run these in the notebook with check().

Probes return raw outputs (tensors, numbers, type names); every comparison happens in
the checks. Sizes all differ: B=2, T=3, C=20, H=4 (D=5), ff_dim=36.

Tolerances: normalised values and small hand-set networks, rtol 1e-5 and atol 1e-5
(float32 rounding of a correct answer stays below 1e-6; the mistakes these tests catch
are off by 1e-3 or more); comparisons with PyTorch's modules, rtol 1e-4 and atol 1e-5
(attention inside, summed in another order); properties (causality, dropout), 1e-6.
"""

import contextlib

import torch

from autograder.kit import Hint, Suite, catch, close, equal, raises, randn, satisfies, set_parameters

suite = Suite(public=True)

# Sizes that all differ: B=2, T=3, C=20, H=4 (D=5), ff_dim=36.
PB, PT, PC, PH, PF = 2, 3, 20, 4, 36


def _pair_agrees(what):
    def test(got):
        mine, theirs = got[:2]
        verdict = close(dtype=None, rtol=1e-4, atol=1e-5)(mine, theirs, True)
        return None if verdict.passed else f"your result and {what} do not agree: {verdict.message}"

    return test


def _scaled(factor, atol=1e-4):
    """A hint condition: the answer is the expected one multiplied by ``factor``."""

    def when(got, exp):
        return (
            type(got) is torch.Tensor
            and got.shape == exp.shape
            and torch.allclose(got.double(), exp.double() * factor, atol=atol, rtol=0)
        )

    return when


# ---------------------------------------------------------------- layernorm


@suite.case(
    "layernorm",
    "weight (ones) and bias (zeros) are nn.Parameter of shape (dim,)",
    points=1,
    check=equal(dtype=None),
    expected=["Parameter", "Parameter", torch.ones(PC), torch.zeros(PC)],
    structure=True,
)
def _(ns):
    ln = ns.LayerNorm(PC)
    return [type(ln.weight).__name__, type(ln.bias).__name__, ln.weight.detach().clone(), ln.bias.detach().clone()]


_ONE_TO_FOUR = torch.tensor([[1.0, 2.0, 3.0, 4.0]])


@suite.case(
    "layernorm",
    "[1, 2, 3, 4] becomes mean 0, variance 1 (weight ones, bias zeros)",
    points=1,
    check=close(
        dtype=None,
        rtol=1e-5,
        atol=1e-5,
        hints=[
            Hint(
                _scaled((3 / 4) ** 0.5),
                "the spread is a little too small: check what your variance divides by",
                mistake="unbiased variance",
            ),
        ],
    ),
    expected=torch.tensor([[-1.3416354656219482, -0.4472118318080902, 0.4472118318080902, 1.3416354656219482]]),
)
def _(ns):
    return ns.LayerNorm(4)(_ONE_TO_FOUR.clone())


@suite.case(
    "layernorm",
    "eps=1 on [1, 2, 3, 4]: (x - 2.5) / sqrt(1.25 + 1)",
    points=1,
    # sqrt(1.25) + 1 in place of sqrt(1.25 + 1) shrinks every value by the same factor
    check=close(
        dtype=None,
        rtol=1e-5,
        atol=1e-5,
        hints=[
            Hint(
                _scaled(1.5 / (1.25**0.5 + 1)),
                "check where eps enters the formula",
                mistake="eps outside the square root",
            ),
        ],
    ),
    expected=torch.tensor([[-1.0, -1 / 3, 1 / 3, 1.0]]),
    builds_on=("[1, 2, 3, 4] becomes mean 0, variance 1 (weight ones, bias zeros)",),
)
def _(ns):
    return ns.LayerNorm(4, eps=1.0)(_ONE_TO_FOUR.clone())


@suite.case(
    "layernorm",
    "the default eps=1e-5 matters when the spread is tiny: [0, 0.001, 0.002, 0.003]",
    points=1,
    check=close(dtype=None, rtol=1e-5, atol=1e-5),
    # (x - 0.0015) / sqrt(1.25e-6 + 1e-5)
    expected=torch.tensor([[-0.4472135954999579, -0.14907119849998596, 0.14907119849998596, 0.4472135954999579]]),
    builds_on=("[1, 2, 3, 4] becomes mean 0, variance 1 (weight ones, bias zeros)",),
)
def _(ns):
    return ns.LayerNorm(4)(torch.tensor([[0.0, 0.001, 0.002, 0.003]]))


@suite.case(
    "layernorm",
    "equals nn.LayerNorm with the same weight and bias",
    points=1,
    check=satisfies(_pair_agrees("nn.LayerNorm's")),
    builds_on=("[1, 2, 3, 4] becomes mean 0, variance 1 (weight ones, bias zeros)",),
)
def _(ns):
    mine, theirs = ns.LayerNorm(PC), torch.nn.LayerNorm(PC)
    set_parameters(theirs, 1)
    with torch.no_grad():
        mine.weight.copy_(theirs.weight)
        mine.bias.copy_(theirs.bias)
        x = randn(PB, PT, PC, seed=2) * 2 + 0.5
        return mine(x), theirs(x)


@suite.case(
    "layernorm", "LayerNorm(20) on an input with 19 features raises ValueError", points=1, check=raises("ValueError")
)
def _(ns):
    return catch(ns.LayerNorm(PC), randn(PB, PT, PC - 1, seed=3))


@suite.case(
    "layernorm",
    "LayerNorm(0) and a negative eps raise ValueError",
    points=1,
    check=equal(dtype=None),
    expected=["ValueError", "ValueError"],
)
def _(ns):
    return [catch(ns.LayerNorm, 0)["raised"], catch(ns.LayerNorm, PC, eps=-1e-5)["raised"]]


# ---------------------------------------------------------------- feedforward


@suite.case(
    "feedforward",
    "fc1 is (ff_dim, C), fc2 is (C, ff_dim), output (B, T, C)",
    points=1,
    check=equal(dtype=None),
    expected=([PF, PC], [PC, PF], [PB, PT, PC]),
)
def _(ns):
    ff = ns.FeedForward(PC, PF)
    return list(ff.fc1.weight.shape), list(ff.fc2.weight.shape), list(ff(randn(PB, PT, PC, seed=3)).shape)


def _hand_set(ns, embed_dim, ff_dim, activation, w1, b1, w2, b2):
    ff = ns.FeedForward(embed_dim, ff_dim, activation=activation)
    with torch.no_grad():
        ff.fc1.weight.copy_(torch.tensor(w1))
        ff.fc1.bias.copy_(torch.tensor(b1))
        ff.fc2.weight.copy_(torch.tensor(w2))
        ff.fc2.bias.copy_(torch.tensor(b2))
    return ff.eval()


@suite.case(
    "feedforward",
    "relu on a small hand-set network (2 -> 3 -> 2)",
    points=1,
    check=close(dtype=None, rtol=1e-6, atol=1e-6),
    expected=torch.tensor([[3.0, 2.25], [0.5, 0.75], [7.5, -4.25]]),
    builds_on=("fc1 is (ff_dim, C), fc2 is (C, ff_dim), output (B, T, C)",),
)
def _(ns):
    ff = _hand_set(
        ns,
        2,
        3,
        "relu",
        [[1.0, 0.0], [0.0, 1.0], [1.0, -1.0]],
        [0.0, 0.0, -0.5],
        [[1.0, 1.0, 1.0], [0.0, 1.0, -1.0]],
        [0.0, 0.25],
    )
    with torch.no_grad():
        return ff(torch.tensor([[1.0, 2.0], [-1.0, 0.5], [3.0, -2.0]]))


_GELU_AT = [-3.0, -1.0, -0.5, 0.5, 1.0, 2.0]
# the tanh and the sigmoid approximations of GELU at these points, in float64
_GELU_TANH = [
    -0.0036373920817729943,
    -0.1588080093917233,
    -0.15428599017485606,
    0.34571400982514394,
    0.8411919906082768,
    1.954597694087775,
]
_GELU_SIGMOID = [
    -0.01807130970778597,
    -0.1542042340671787,
    -0.1496115633936199,
    0.35038843660638014,
    0.8457957659328212,
    1.9356586231442083,
]


def _values_near(values):
    def when(got, exp):
        return (
            type(got) is torch.Tensor
            and got.numel() == len(values)
            and torch.allclose(got.double().flatten(), torch.tensor(values, dtype=torch.float64), atol=2e-6)
        )

    return when


@suite.case(
    "feedforward",
    "gelu (the default) is the exact x * Phi(x), through a 1 -> 1 -> 1 network",
    points=1,
    check=close(
        dtype=None,
        rtol=1e-5,
        atol=1e-5,
        hints=[
            Hint(
                _values_near(_GELU_TANH),
                "these are the values of the tanh approximation of GELU; the exact form is asked for",
                mistake="tanh approximation of GELU",
            ),
            Hint(
                _values_near(_GELU_SIGMOID),
                "these are the values of the sigmoid approximation of GELU; the exact form is asked for",
                mistake="sigmoid approximation of GELU",
            ),
        ],
    ),
    expected=torch.tensor(
        [
            [-0.0040496940948903],
            [-0.15865525393145707],
            [-0.15426876936299345],
            [0.34573123063700656],
            [0.8413447460685429],
            [1.9544997361036416],
        ]
    ),
    builds_on=("fc1 is (ff_dim, C), fc2 is (C, ff_dim), output (B, T, C)",),
)
def _(ns):
    ff = ns.FeedForward(1, 1)
    with torch.no_grad():
        for layer in (ff.fc1, ff.fc2):
            layer.weight.fill_(1.0)
            layer.bias.fill_(0.0)
        return ff.eval()(torch.tensor(_GELU_AT).view(-1, 1))


@suite.case("feedforward", "an unknown activation name raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.FeedForward, PC, PF, activation="swish")


def _dropout_modes(got):
    evaluated, without, first, second, plain_first, plain_second = got
    verdict = close(dtype=None, rtol=1e-6, atol=1e-6)(evaluated, without, True)
    if not verdict.passed:
        return f"with dropout=0.5 in eval mode the output must equal that of the same weights without dropout: {verdict.message}"
    if type(first) is not torch.Tensor or type(second) is not torch.Tensor or first.shape != second.shape:
        return "in training mode the network must return tensors of the input's shape"
    if float((first - second).abs().max()) <= 1e-6:
        return (
            "with dropout=0.5 in training mode two calls on the same input gave the same output: dropout is not applied"
        )
    verdict = close(dtype=None, rtol=0.0, atol=1e-6)(plain_second, plain_first, True)
    if not verdict.passed:
        return f"without a dropout argument two calls in training mode must agree (the default dropout is 0.0): {verdict.message}"
    return None


@suite.case(
    "feedforward",
    "dropout=0.5 is off in eval mode and on in training mode; the default is no dropout",
    points=1,
    check=satisfies(_dropout_modes),
    builds_on=("fc1 is (ff_dim, C), fc2 is (C, ff_dim), output (B, T, C)",),
)
def _(ns):
    ff, plain = ns.FeedForward(PC, PF, dropout=0.5), ns.FeedForward(PC, PF)
    set_parameters(ff, 4)
    set_parameters(plain, 4)
    x = randn(PB, PT, PC, seed=5)
    with torch.no_grad():
        evaluated, without = ff.eval()(x), plain.eval()(x)
        ff.train()
        plain.train()
        return evaluated, without, ff(x), ff(x), plain(x), plain(x)


# ---------------------------------------------------------------- block
# These tests put PyTorch's own LayerNorm and feed-forward layers into your block in
# place of yours, so that they test how the block joins its parts (and not your
# LayerNorm and FeedForward, which have their own tests above). While your block is
# built, the names LayerNorm and FeedForward stand for placeholders that write down the
# arguments your block gives them, so that the block can be tested even before those
# two classes are written.


def _ff_arguments(embed_dim, ff_dim, activation="gelu", dropout=0.0):
    """The arguments of FeedForward, with their defaults (used to read a call's arguments)."""
    return [embed_dim, ff_dim, activation, dropout]


def _mha_arguments(embed_dim, num_heads, dropout=0.0, bias=True):
    """The arguments of MultiHeadAttention, with their defaults (used to read a call's arguments)."""
    return [embed_dim, num_heads, dropout, bias]


def _ln_arguments(dim, eps=1e-5):
    """The arguments of LayerNorm, with their defaults (a call may name them: LayerNorm(dim=C))."""
    return dim, eps


@contextlib.contextmanager
def _placeholders(ns, activations=None, attention_dropout=None):
    """While the block is built: LayerNorm is nn.LayerNorm, FeedForward a placeholder, and MultiHeadAttention
    the notebook's own, built with the arguments it was given; all three note their arguments (the tests read
    no attribute of stage 05's module that its contract does not name, so a student's own version passes them).

    With ``activations`` (a dict keyed by name), the placeholder refuses any other activation with ValueError,
    as FeedForward does (the hidden tests build PyTorch's layers from the noted arguments). With
    ``attention_dropout``, the attention is built with that dropout instead of the one it was given.
    """
    names = ns._names
    saved = {key: names.get(key) for key in ("LayerNorm", "FeedForward", "MultiHeadAttention")}
    calls = {"LayerNorm": [], "FeedForward": [], "MultiHeadAttention": []}

    def attention(*args, **kwargs):
        embed_dim, num_heads, dropout, bias = _mha_arguments(*args, **kwargs)
        calls["MultiHeadAttention"].append([embed_dim, num_heads, dropout])
        chosen = dropout if attention_dropout is None else attention_dropout
        return saved["MultiHeadAttention"](embed_dim, num_heads, dropout=chosen, bias=bias)

    def layer_norm(*args, **kwargs):
        dim, eps = _ln_arguments(*args, **kwargs)
        calls["LayerNorm"].append([dim])
        return torch.nn.LayerNorm(dim, eps=eps)

    def feed_forward(*args, **kwargs):
        arguments = _ff_arguments(*args, **kwargs)
        if activations is not None and activations.get(arguments[2]) is None:
            raise ValueError(f"unknown activation {arguments[2]!r}")
        calls["FeedForward"].append(arguments)
        return torch.nn.Identity()

    names["LayerNorm"], names["FeedForward"], names["MultiHeadAttention"] = layer_norm, feed_forward, attention
    try:
        yield calls
    finally:
        for key, value in saved.items():
            if value is None:
                names.pop(key, None)
            else:
                names[key] = value


_ACTIVATIONS = {"gelu": torch.nn.GELU, "relu": torch.nn.ReLU}


def _torch_feedforward(layer, activation):
    """The feed-forward half of an nn.TransformerEncoderLayer, as one module."""
    return torch.nn.Sequential(layer.linear1, _ACTIVATIONS[activation](), layer.linear2)


def _block_and_torch(ns, norm_first, activation, seed, default_order=False):
    """The student's block and an nn.TransformerEncoderLayer, with the same weights.

    With ``default_order`` the block is built without a norm_first argument.
    """
    layer = torch.nn.TransformerEncoderLayer(
        PC, PH, dim_feedforward=PF, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first
    )
    set_parameters(layer, seed)
    order = {} if default_order else {"norm_first": norm_first}
    with _placeholders(ns):
        block = ns.TransformerBlock(PC, PH, PF, activation=activation, **order)
    block.ln1, block.ln2, block.ff = layer.norm1, layer.norm2, _torch_feedforward(layer, activation)
    w_q, w_k, w_v = layer.self_attn.in_proj_weight.detach().chunk(3)
    b_q, b_k, b_v = layer.self_attn.in_proj_bias.detach().chunk(3)
    attn = block.attn
    with torch.no_grad():
        for proj, w, b in (
            (attn.q_proj, w_q, b_q),
            (attn.k_proj, w_k, b_k),
            (attn.v_proj, w_v, b_v),
            (attn.out_proj, layer.self_attn.out_proj.weight, layer.self_attn.out_proj.bias),
        ):
            proj.weight.copy_(w)
            proj.bias.copy_(b)
    return block.eval(), layer.eval()


@suite.case(
    "block",
    "has attn, ln1, ln2 and ff, and keeps the shape (B, T, C)",
    points=1,
    check=equal(dtype=None),
    expected=(["MultiHeadAttention", "LayerNorm", "LayerNorm", "Identity"], [PB, PT, PC]),
)
def _(ns):
    with _placeholders(ns):
        block = ns.TransformerBlock(PC, PH, PF)
    parts = [type(getattr(block, name, None)).__name__ for name in ("attn", "ln1", "ln2", "ff")]
    block, _ = _block_and_torch(ns, True, "gelu", 4)
    with torch.no_grad():
        return parts, list(block(randn(PB, PT, PC, seed=5)).shape)


def _parts_problem(asked):
    embed_dim, num_heads, ff_dim, dropout, activation = asked

    def test(got):
        attn, norms, feed_forwards = got
        if attn != [[embed_dim, num_heads, dropout]]:
            return f"attn: one MultiHeadAttention(embed_dim, num_heads, dropout=dropout) = {[embed_dim, num_heads, dropout]} was expected, MultiHeadAttention was called with {attn}"
        if norms != [[embed_dim], [embed_dim]]:
            return f"ln1 and ln2: two LayerNorm(embed_dim) were expected, LayerNorm was called with dims {norms}"
        if feed_forwards != [[embed_dim, ff_dim, activation, dropout]]:
            return f"ff: one FeedForward(embed_dim, ff_dim, activation, dropout) = {[embed_dim, ff_dim, activation, dropout]} was expected, got {feed_forwards}"
        return None

    return test


def _built_parts(ns, *args, **kwargs):
    """Build a block with the placeholders; return what they were given."""
    with _placeholders(ns) as calls:
        ns.TransformerBlock(*args, **kwargs)
    return [calls["MultiHeadAttention"], calls["LayerNorm"], calls["FeedForward"]]


@suite.case(
    "block",
    "passes its arguments to its parts (dropout=0.1, activation='relu')",
    points=1,
    check=satisfies(_parts_problem((PC, PH, PF, 0.1, "relu"))),
    builds_on=("has attn, ln1, ln2 and ff, and keeps the shape (B, T, C)",),
    structure=True,
)
def _(ns):
    return _built_parts(ns, PC, PH, PF, dropout=0.1, activation="relu")


def _stream_normalised(got, exp):
    """A hint condition: with both sublayers silenced the block returned a layer norm of its input
    (``ln1(x)``, ``ln2(x)`` or ``ln2(ln1(x))``), where a pre-norm block returns ``x`` itself."""
    _, _, silenced, norms = got
    return (
        type(silenced) is torch.Tensor
        and silenced.shape == norms.shape[1:]
        and any(torch.allclose(silenced, norm, rtol=1e-4, atol=1e-5) for norm in norms)
    )


@suite.case(
    "block",
    "pre-norm (the default order) equals nn.TransformerEncoderLayer(norm_first=True), causal mask",
    points=2,
    check=satisfies(
        _pair_agrees("nn.TransformerEncoderLayer(norm_first=True)"),
        hints=[
            Hint(
                _stream_normalised,
                "with both sublayers silenced (their output layers all zeros) your block, built without norm_first and so "
                "pre-norm, returned a layer norm of x, not x: in pre-norm the residual stream itself is never normalised, only what each sublayer reads, "
                "and the sublayer's output is added to the unnormalised x",
                mistake="residual stream normalised",
            )
        ],
    ),
    builds_on=("has attn, ln1, ln2 and ff, and keeps the shape (B, T, C)",),
)
def _(ns):
    block, layer = _block_and_torch(ns, True, "gelu", 6, default_order=True)
    silent, twin = _block_and_torch(ns, True, "gelu", 6, default_order=True)
    x = randn(PB, PT, PC, seed=7)
    causal = torch.ones(PT, PT, dtype=torch.bool).triu(1)
    with torch.no_grad():
        for linear in (silent.attn.out_proj, twin.linear2):  # twin.linear2 is the silent block's ff output layer
            linear.weight.zero_()
            linear.bias.zero_()
        norms = torch.stack([twin.norm1(x), twin.norm2(x), twin.norm2(twin.norm1(x))])
        return block(x, mask=causal), layer(x, src_mask=causal), silent(x, mask=causal), norms


@suite.case(
    "block",
    "post-norm (norm_first=False) equals nn.TransformerEncoderLayer, causal mask",
    points=2,
    check=satisfies(_pair_agrees("nn.TransformerEncoderLayer(norm_first=False)")),
    builds_on=("has attn, ln1, ln2 and ff, and keeps the shape (B, T, C)",),
)
def _(ns):
    block, layer = _block_and_torch(ns, False, "relu", 8)
    x = randn(PB, PT, PC, seed=9)
    causal = torch.ones(PT, PT, dtype=torch.bool).triu(1)
    with torch.no_grad():
        return block(x, mask=causal), layer(x, src_mask=causal)


def _causal_property(got):
    before, after = got
    if type(before) is not torch.Tensor or type(after) is not torch.Tensor or before.shape != after.shape:
        return "the block must return a tensor of the input's shape"
    early = float((before[:, :-1] - after[:, :-1]).abs().max())
    late = float((before[:, -1] - after[:, -1]).abs().max())
    if not early <= 1e-6:
        return f"changing the last token changed the outputs at earlier positions (by up to {early:.3g}): is the mask passed on?"
    if not late >= 1e-6:
        return "changing the last token did not change its own output"
    return None


@suite.case(
    "block",
    "with a causal mask, changing the last token leaves earlier outputs alone",
    points=1,
    check=satisfies(_causal_property),
    guard=True,  # a module that does nothing passes it: it counts only when a test of the values passes
)
def _(ns):
    block, _ = _block_and_torch(ns, True, "gelu", 10)
    x = randn(PB, PT, PC, seed=11)
    changed = x.clone()
    changed[:, -1] = randn(PB, PC, seed=12)
    causal = torch.ones(PT, PT, dtype=torch.bool).triu(1)
    with torch.no_grad():
        return block(x, mask=causal), block(changed, mask=causal)


def _steady(got):
    first, second = got
    verdict = close(dtype=None, rtol=0.0, atol=1e-6)(second, first, True)
    if not verdict.passed:
        return (
            "with the dropout of attn and ff set to p=0, your block in training mode still changed its output from call "
            f"to call: the block's dropout belongs to its parts, the block adds none of its own ({verdict.message})"
        )
    return None


@suite.case(
    "block",
    "the block adds no dropout of its own (dropout=0.5, training mode, the parts' dropout set to 0)",
    points=1,
    check=satisfies(_steady),
    guard=True,  # a module that does nothing passes it: it counts only when a test of the values passes
)
def _(ns):
    with _placeholders(ns, attention_dropout=0.0):  # the feed-forward is a placeholder without dropout
        block = ns.TransformerBlock(PC, PH, PF, dropout=0.5, activation="relu", norm_first=False)
    block.train()
    x = randn(PB, PT, PC, seed=14)
    with torch.no_grad():
        return block(x), block(x)
