"""Public tests of stage 03_attention: students run these in the notebook with check().

Expected values are literals or properties (nothing here computes an answer). The
embedding's weights are set to literal tables, so the expected sum is a literal too.

Tolerances: rtol 1e-5, atol 1e-6 throughout (float32 sums, sines and softmaxes of a
few numbers agree with the float64 literals to about 1e-7); properties of rotations
(kept lengths, offsets) allow 1e-5 absolute, 1e-4 for scores of size about 10.

Values are compared whatever their dtype (``dtype=None``): each dtype the notebook
states (the sinusoidal table in float32, RoPE keeping its input's dtype) has a test of
its own (``dtypes()``), so that one slip costs that test alone. Tests that a function
doing nothing could pass (nothing raised, lengths of pairs kept) are guards: they count
once a test of the values passes.
"""

import math

import torch

from autograder.kit import (
    Hint,
    Placement,
    Suite,
    Verdict,
    catch,
    close,
    dtypes,
    equal,
    near,
    raises,
    randn,
    satisfies,
    tensor_problem,
    unplaced,
)

suite = Suite(public=True)


# ---------------------------------------------------------------- embedding


_TABLES = "tok_emb and pos_emb are nn.Embedding tables of the right sizes"


@suite.case(
    "embedding",
    _TABLES,
    points=1,
    check=equal(),
    expected={
        "tok_emb": "Embedding",
        "pos_emb": "Embedding",
        "parameters": [("pos_emb.weight", [8, 4]), ("tok_emb.weight", [10, 4])],
    },
    structure=True,
)
def _(ns):
    emb = ns.TokenPositionEmbedding(vocab_size=10, embed_dim=4, max_seq_len=8)
    return {
        "tok_emb": type(getattr(emb, "tok_emb", None)).__name__,
        "pos_emb": type(getattr(emb, "pos_emb", None)).__name__,
        "parameters": sorted((name, list(p.shape)) for name, p in emb.named_parameters()),
    }


# Fixed tables for the sum test: token t's row is (2t, 2t + 1), position p's row is
# (0.1, 0.01) * (p + 1), so every token row and every position row can be told apart.
_TOK = torch.tensor([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]])
_POS = torch.tensor([[0.1, 0.01], [0.2, 0.02], [0.3, 0.03], [0.4, 0.04], [0.5, 0.05]])
_IDS = torch.tensor([[1, 2, 1], [3, 3, 0]])
_SUM = torch.tensor([[[2.1, 3.01], [4.2, 5.02], [2.3, 3.03]], [[6.1, 7.01], [6.2, 7.02], [0.3, 1.03]]])


def _shifted_by(got, exp, step):
    return type(got) is torch.Tensor and got.shape == exp.shape and near(got - exp, step.expand_as(exp), atol=1e-4)


_SUM_HINTS = [
    Hint(
        lambda got, exp: _shifted_by(got, exp, _POS[1] - _POS[0]),
        "every token got the row of the position after its own: positions count from 0",
        mistake="positions counted from 1",
    ),
    Hint(
        lambda got, exp: _shifted_by(got, exp, _POS[_IDS] - _POS[:3]),
        "the position rows are picked by the token ids; pick them by the positions 0, 1, ..., T-1",
        mistake="positions taken from the token ids",
    ),
    Hint(
        lambda got, exp: _shifted_by(got, exp, (math.sqrt(2) - 1) * _TOK[_IDS]),
        "the token rows are scaled: the output is the plain sum of the two rows",
        mistake="token vectors scaled",
    ),
]


@suite.case(
    "embedding",
    "the output is the token row plus the row of its position",
    points=1,
    check=close(rtol=1e-5, atol=1e-6, dtype=None, hints=_SUM_HINTS),
    expected=_SUM,
    builds_on=(_TABLES,),
)
def _(ns):
    emb = ns.TokenPositionEmbedding(vocab_size=4, embed_dim=2, max_seq_len=5)
    with torch.no_grad():
        emb.tok_emb.weight.copy_(_TOK)
        emb.pos_emb.weight.copy_(_POS)
        return emb(_IDS)


@suite.case(
    "embedding", "exactly max_seq_len tokens are accepted", points=1, check=equal(), expected=[2, 8, 4], guard=True
)
def _(ns):
    emb = ns.TokenPositionEmbedding(vocab_size=10, embed_dim=4, max_seq_len=8)
    return list(emb(torch.zeros(2, 8, dtype=torch.long)).shape)


def _placed_and_right(got, expected, reveal):
    """The output is right, and forward made its tensors on idx's device (or moved them there)."""
    calls, out = got
    verdict = close(rtol=1e-5, atol=1e-6, dtype=None)(out, _SUM, reveal)
    if not verdict.passed:
        return Verdict(False, f"the output is not right yet: {verdict.message}")
    made = unplaced(calls)
    if made:
        return Verdict(
            False,
            f"forward makes a tensor with torch.{made}(...) without a device: make the positions on idx.device (device=idx.device)",
        )
    return Verdict(True)


@suite.case(
    "embedding",
    "forward makes its positions on idx.device",
    points=1,
    check=_placed_and_right,
    builds_on=("the output is the token row plus the row of its position",),
)
def _(ns):
    emb = ns.TokenPositionEmbedding(vocab_size=4, embed_dim=2, max_seq_len=5)
    with torch.no_grad():
        emb.tok_emb.weight.copy_(_TOK)
        emb.pos_emb.weight.copy_(_POS)
        with Placement() as spy:
            out = emb(_IDS)
    return [list(call) for call in spy.calls], out


@suite.case("embedding", "a sequence longer than max_seq_len raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    emb = ns.TokenPositionEmbedding(vocab_size=10, embed_dim=4, max_seq_len=8)
    return catch(emb, torch.zeros(1, 9, dtype=torch.long))


@suite.case("embedding", "1-D ids raise ValueError", points=1, check=raises("ValueError"))
def _(ns):
    emb = ns.TokenPositionEmbedding(vocab_size=10, embed_dim=4, max_seq_len=8)
    return catch(emb, torch.zeros(6, dtype=torch.long))


@suite.case("embedding", "vocab_size = 0 raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.TokenPositionEmbedding, 0, 4, 8)


# ---------------------------------------------------------------- sinusoidal

# The table for max_seq_len=4, embed_dim=6, written out: PE[p, 2i] = sin(p / 10000^(2i/6)),
# PE[p, 2i+1] = cos(p / 10000^(2i/6)).
_PE_4_6 = torch.tensor(
    [
        [0.00000000, 1.00000000, 0.00000000, 1.00000000, 0.00000000, 1.00000000],
        [0.84147096, 0.54030228, 0.04639922, 0.99892300, 0.00215443, 0.99999768],
        [0.90929741, -0.41614684, 0.09269850, 0.99569422, 0.00430886, 0.99999070],
        [0.14112000, -0.98999250, 0.13879810, 0.99032068, 0.00646326, 0.99997914],
    ]
)


def _table_like(got, exp):
    return type(got) is torch.Tensor and got.shape == exp.shape


def _near(a, b, atol=1e-4):
    return torch.allclose(a.double(), b.double(), atol=atol)


_SIN_HINTS = [
    Hint(
        lambda got, exp: _table_like(got, exp) and _near(got[:, 0::2], exp[:, 1::2]),
        "sines and cosines look swapped: even columns hold sin, odd columns cos",
        mistake="sin and cos swapped",
    ),
    Hint(
        lambda got, exp: _table_like(got, exp) and _near(got[:, : exp.shape[1] // 2], exp[:, 0::2]),
        "the sines fill the first half: here sin and cos alternate, column by column",
        mistake="sines and cosines in blocks",
    ),
    Hint(
        lambda got, exp: (
            _table_like(got, exp) and _near(got[:, 0::2], exp[:, 0::2]) and _near(got[0, 1::2], exp[0, 1::2])
        ),
        "the sine columns are right but the cosine columns are not: a cosine column uses the angle of the sine column before it",
        mistake="cosine columns with their own exponent",
    ),
    Hint(
        lambda got, exp: _table_like(got, exp) and _near(got[:, 0::4], exp[:, 0::2][:, : (exp.shape[1] + 2) // 4]),
        "the frequencies fall off too slowly: the exponent of 10000 is 2i/d, with i the number of the pair",
        mistake="pair index not doubled",
    ),
]


@suite.case(
    "sinusoidal",
    "the table for max_seq_len=4, embed_dim=6",
    points=1,
    check=close(rtol=1e-5, atol=1e-6, dtype=None, hints=_SIN_HINTS),
    expected=_PE_4_6,
)
def _(ns):
    return ns.sinusoidal_positions(4, 6)


@suite.case(
    "sinusoidal",
    "the table is in the default dtype, float32",
    points=1,
    check=dtypes(),
    expected=torch.float32,
)
def _(ns):
    return ns.sinusoidal_positions(4, 6)


# Rows 3707 and 3927 of the 4096 x 8 table, in float64: pair i turns by p / 10000^(2i/8) radians.
# Angles computed in float32 (by pow, or by exp and log) are off by 1.2e-5 to 1.8e-5 in these rows;
# float64 angles, by the float32 rounding of the table only (below 6e-8).
_LONG_ROWS = [3707, 3927]
_LONG = torch.tensor(
    [
        [
            -0.07924805100797497,
            0.9968549274650937,
            -0.007933040384746994,
            0.9999685329400391,
            -0.5884268704461875,
            0.8085504425432626,
            -0.5357598117150862,
            -0.8443704306470089,
        ],
        [
            0.009182883695236245,
            0.9999578364346368,
            -0.000918301146770069,
            -0.9999995783614131,
            0.9999999957836139,
            -9.183012745858185e-05,
            -0.7071132745273263,
            -0.70710028778614,
        ],
    ],
    dtype=torch.float64,
)


def _long_rows_close(got, expected, reveal):
    """Rows 3707 and 3927 of a 4096 x 8 table within float32 rounding of the float64 values."""
    problem = tensor_problem(got, shape=(4096, 8), reveal=reveal)
    if problem:
        return Verdict(False, problem)
    return close(rtol=0.0, atol=1e-6, dtype=None)(got[_LONG_ROWS], expected, reveal)


@suite.case(
    "sinusoidal",
    "rows 3707 and 3927 of a 4096 x 8 table, to float32 rounding (angles in float64)",
    points=1,
    check=_long_rows_close,
    expected=_LONG,
    builds_on=("the table for max_seq_len=4, embed_dim=6",),
)
def _(ns):
    return ns.sinusoidal_positions(4096, 8)


@suite.case("sinusoidal", "an odd embed_dim raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.sinusoidal_positions, 10, 5)


@suite.case("sinusoidal", "max_seq_len = 0 raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.sinusoidal_positions, 0, 4)


# ---------------------------------------------------------------- rope


def _rotation_problem(got):
    x, y, after = got
    if not near(after, x, atol=0):
        return "apply_rope changed its input x: return a new tensor and leave x as it was"
    if type(y) is not torch.Tensor or y.shape != x.shape:
        return f"expected a tensor of the input's shape {tuple(x.shape)}, got {type(y).__name__} {tuple(getattr(y, 'shape', ()))}"
    if not near(y[..., 0, :], x[..., 0, :], atol=1e-6):
        return "position 0 must not move (its angle is 0)"
    pairs_x = x.double().reshape(*x.shape[:-1], -1, 2).norm(dim=-1)
    pairs_y = y.double().reshape(*y.shape[:-1], -1, 2).norm(dim=-1)
    if not near(pairs_y, pairs_x, atol=1e-5):
        return "a rotation keeps the length of every pair (x[2i], x[2i+1]); yours changes some"
    return None


@suite.case(
    "rope",
    "keeps the shape, position 0 and the length of every pair, and leaves x unchanged",
    points=1,
    check=satisfies(_rotation_problem),
    guard=True,
)
def _(ns):
    x = randn(2, 3, 5, 4, seed=1)
    before = x.clone()
    y = ns.apply_rope(x)
    return before, y, x  # x as it was, the output, and x after the call


@suite.case(
    "rope",
    "T=2, D=2: position 0 stays, position 1 turns by 1 radian",
    points=1,
    check=close(
        rtol=1e-5,
        atol=1e-6,
        dtype=None,
        hints=[
            Hint(
                lambda got, exp: _table_like(got, exp) and _near(got[1], torch.tensor([math.cos(1.0), -math.sin(1.0)])),
                "the rotation goes the wrong way round: (a, b) becomes (a cos - b sin, a sin + b cos)",
                mistake="rotation in the opposite direction",
            ),
        ],
    ),
    expected=torch.tensor([[1.0, 0.0], [math.cos(1.0), math.sin(1.0)]]),
)
def _(ns):
    return ns.apply_rope(torch.tensor([[1.0, 0.0], [1.0, 0.0]]))


# T=3, D=4, every pair (1, 0): pair 0 turns by p radians, pair 1 by p * 10000^(-2/4) = p / 100.
_TWO_PAIRS = torch.tensor(
    [
        [1.0, 0.0, 1.0, 0.0],
        [math.cos(1.0), math.sin(1.0), math.cos(0.01), math.sin(0.01)],
        [math.cos(2.0), math.sin(2.0), math.cos(0.02), math.sin(0.02)],
    ]
)


@suite.case(
    "rope",
    "T=3, D=4: the second pair turns 100 times more slowly than the first",
    points=1,
    check=close(
        rtol=1e-5,
        atol=1e-6,
        dtype=None,
        hints=[
            Hint(
                lambda got, exp: (
                    _table_like(got, exp)
                    and _near(got[:, :2], exp[:, :2])
                    and _near(got[1, 2:], torch.tensor([math.cos(0.1), math.sin(0.1)]))
                ),
                "the second pair turns by p * base^(-1/D): the exponent is -2i/D, with i the number of the pair",
                mistake="frequencies base^(-i/D)",
            ),
            Hint(
                lambda got, exp: _table_like(got, exp) and _near(got[:, 0], exp[:, 0] - exp[:, 1]),
                "the pairs are (x[2i], x[2i+1]), side by side, not (x[i], x[i + D/2])",
                mistake="rotates halves",
            ),
        ],
    ),
    expected=_TWO_PAIRS,
    builds_on=("T=2, D=2: position 0 stays, position 1 turns by 1 radian",),
)
def _(ns):
    return ns.apply_rope(torch.tensor([[1.0, 0.0, 1.0, 0.0]] * 3))


@suite.case(
    "rope",
    "T=2, D=4, base=100: the second pair turns by 0.1 radian per position",
    points=1,
    check=close(rtol=1e-5, atol=1e-6, dtype=None),
    expected=torch.tensor([[1.0, 0.0, 1.0, 0.0], [math.cos(1.0), math.sin(1.0), math.cos(0.1), math.sin(0.1)]]),
    builds_on=("T=2, D=2: position 0 stays, position 1 turns by 1 radian",),
)
def _(ns):
    return ns.apply_rope(torch.tensor([[1.0, 0.0, 1.0, 0.0]] * 2), base=100.0)


def _relative_problem(got):
    rq, rk = got
    if any(type(t) is not torch.Tensor or tuple(t.shape) != (6, 8) for t in (rq, rk)):
        return "apply_rope of a (6, 8) input should return a (6, 8) tensor"
    scores = rq.double() @ rk.double().T  # scores[p, p'] = q at position p . k at position p'
    for offset in range(-5, 6):
        diag = torch.diagonal(scores, offset)
        if float(diag.max() - diag.min()) > 1e-4:
            return f"q_p . k_p' should depend only on p - p', but it varies along the diagonal p' - p = {offset}"
    return None


@suite.case(
    "rope",
    "a rotated query . key depends only on the offset of the positions",
    points=1,
    check=satisfies(_relative_problem),
    builds_on=("keeps the shape, position 0 and the length of every pair, and leaves x unchanged",),
    guard=True,
)
def _(ns):
    q = randn(8, seed=2).expand(6, 8).clone()  # the same vector at positions 0..5
    k = randn(8, seed=3).expand(6, 8).clone()
    return ns.apply_rope(q), ns.apply_rope(k)


@suite.case("rope", "an odd D raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.apply_rope, torch.ones(4, 5))


@suite.case("rope", "a 1-D input raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.apply_rope, torch.ones(4))


@suite.case("rope", "base = 0 raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.apply_rope, torch.ones(3, 4), base=0.0)


@suite.case(
    "rope",
    "a float32 input gives a float32 output, a float64 input a float64 one",
    points=1,
    check=dtypes(),
    expected=(torch.float32, torch.float64),
)
def _(ns):
    x = randn(3, 4, seed=8)
    return ns.apply_rope(x), ns.apply_rope(x.double())


# ---------------------------------------------------------------- attention


def _shapes(out_shape, weights_shape, inputs):
    """The property: ``(out, weights)`` of these shapes, each query's weights summing to 1."""

    def problem(got):
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            return "scaled_dot_product_attention must return the pair (out, weights)"
        out, weights = got
        for what, value, shape in (("out", out, out_shape), ("weights", weights, weights_shape)):
            if type(value) is not torch.Tensor:
                return f"{what} must be a tensor, got {type(value).__name__}"
            if tuple(value.shape) != shape:
                return f"with {inputs}, {what} should have shape {shape}, got {tuple(value.shape)}"
        sums = weights.detach().double().sum(dim=-1)
        if not near(sums, torch.ones_like(sums), atol=1e-5):
            return "the weights of each query (over the keys, the last axis) must sum to 1"
        return None

    return problem


_SHAPES = "T_q=3, T_k=5, d_v=6: shapes, and each query's weights sum to 1"


@suite.case(
    "attention",
    _SHAPES,
    points=1,
    check=satisfies(_shapes((2, 3, 6), (2, 3, 5), "Q (2, 3, 4), K (2, 5, 4) and V (2, 5, 6)")),
)
def _(ns):
    return ns.scaled_dot_product_attention(randn(2, 3, 4, seed=4), randn(2, 5, 4, seed=5), randn(2, 5, 6, seed=6))


@suite.case(
    "attention",
    "4-D inputs, leading dims (2, 2): shapes, and each query's weights sum to 1",
    points=1,
    check=satisfies(_shapes((2, 2, 3, 6), (2, 2, 3, 5), "Q (2, 2, 3, 4), K (2, 2, 5, 4) and V (2, 2, 5, 6)")),
    builds_on=(_SHAPES,),
)
def _(ns):
    return ns.scaled_dot_product_attention(
        randn(2, 2, 3, 4, seed=14), randn(2, 2, 5, 4, seed=15), randn(2, 2, 5, 6, seed=16)
    )


@suite.case(
    "attention",
    "keys and values without the queries' batch axis broadcast: shapes",
    points=1,
    check=satisfies(_shapes((2, 3, 6), (2, 3, 5), "Q (2, 3, 4), K (5, 4) and V (5, 6)")),
    builds_on=(_SHAPES,),
)
def _(ns):
    return ns.scaled_dot_product_attention(randn(2, 3, 4, seed=17), randn(5, 4, seed=18), randn(5, 6, seed=19))


# One query, two keys, d_k = 4: the scores are 4 and 0, scaled by sqrt(4) they are 2 and 0.
_Q1 = torch.tensor([[[2.0, 0.0, 0.0, 0.0]]])
_K1 = torch.tensor([[[2.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]])
_V1 = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
_W1 = [math.exp(2) / (math.exp(2) + 1), 1 / (math.exp(2) + 1)]
_WEIGHTS = "one query, two keys, d_k = 4: the weights are softmax([4, 0] / 2)"


def _first_weight(got):
    return float(got.reshape(-1)[0]) if type(got) is torch.Tensor and got.numel() else math.nan


_SCALE_HINTS = [
    Hint(
        lambda got, exp: abs(_first_weight(got) - math.exp(1) / (math.exp(1) + 1)) < 1e-3,
        "you divided the scores by d_k = 4; the scale is sqrt(d_k) = 2",
        mistake="scores divided by d_k",
    ),
    Hint(
        lambda got, exp: abs(_first_weight(got) - math.exp(4) / (math.exp(4) + 1)) < 1e-3,
        "the scores must be divided by sqrt(d_k) before the softmax",
        mistake="scores not scaled",
    ),
]


@suite.case(
    "attention",
    _WEIGHTS,
    points=1,
    check=close(rtol=1e-5, atol=1e-6, dtype=None, hints=_SCALE_HINTS),
    expected=torch.tensor([[_W1]]),
    builds_on=(_SHAPES,),
)
def _(ns):
    return ns.scaled_dot_product_attention(_Q1, _K1, _V1)[1]


@suite.case(
    "attention",
    "with V = identity the output equals the weights",
    points=1,
    check=close(rtol=1e-5, atol=1e-6, dtype=None, hints=_SCALE_HINTS),
    expected=torch.tensor([[_W1]]),
    builds_on=(_WEIGHTS,),
)
def _(ns):
    return ns.scaled_dot_product_attention(_Q1, _K1, _V1)[0]


_MASK = torch.tensor([[False, True, True], [False, False, True], [True, False, False]])


def _masked(blocked):
    """The property: weights of shape (2, 3, 3), exactly 0 where ``blocked`` (expanded to it) is True."""
    blocked = blocked.expand(2, 3, 3)

    def problem(weights):
        if type(weights) is not torch.Tensor or tuple(weights.shape) != (2, 3, 3):
            return f"expected weights of shape (2, 3, 3), got {type(weights).__name__} {tuple(getattr(weights, 'shape', ()))}"
        weights = weights.detach().double()
        if float(weights[blocked].abs().max()) != 0.0:
            if float(weights[~blocked].abs().min()) == 0.0:
                return "the mask looks inverted: True means BLOCKED in this course (F.scaled_dot_product_attention uses the opposite)"
            return "a blocked key (True in the mask) got some weight: its score must become -inf before the softmax (a score of 0 still gets exp(0))"
        if float(weights[~blocked].min()) <= 0.0:
            return "a key that is not blocked got no weight"
        sums = weights.sum(dim=-1)
        if not near(sums, torch.ones_like(sums), atol=1e-5):
            return "with a mask, each query's weights must still sum to 1 over the keys it may see"
        return None

    return problem


@suite.case(
    "attention",
    "blocked keys (True in the mask) get weight exactly 0",
    points=1,
    check=satisfies(_masked(_MASK)),
    builds_on=(_SHAPES,),
)
def _(ns):
    x = randn(2, 3, 4, seed=7)
    return ns.scaled_dot_product_attention(x, x, x, mask=_MASK)[1]


# A key-padding mask of shape (B, 1, T_k): sequence 0 hides its key 2, sequence 1 its keys 1 and 2.
_PADDING = torch.tensor([[[False, False, True]], [[False, True, True]]])


@suite.case(
    "attention",
    "a key-padding mask of shape (2, 1, 3) blocks its keys for every query",
    points=1,
    check=satisfies(_masked(_PADDING)),
    builds_on=(_SHAPES,),
)
def _(ns):
    x = randn(2, 3, 4, seed=9)
    return ns.scaled_dot_product_attention(x, x, x, mask=_PADDING)[1]


@suite.case(
    "attention",
    "scores in the thousands still give finite weights",
    points=1,
    check=close(
        rtol=1e-5,
        atol=1e-6,
        dtype=None,
        hints=[
            Hint(
                lambda got, exp: type(got) is torch.Tensor and bool(torch.isnan(got).any()),
                "NaN weights: exp of a large score overflows float32; a stable softmax (torch.softmax) subtracts each row's maximum first",
                mistake="softmax overflows",
            ),
        ],
    ),
    expected=torch.tensor([[[1.0, 0.0]]]),
    builds_on=(_SHAPES,),
)
def _(ns):
    # scores 10000 / sqrt(2) and 9900 / sqrt(2): the second weight is exp(-70.7), about 2e-31
    q = torch.tensor([[[100.0, 0.0]]])
    k = torch.tensor([[[100.0, 0.0], [99.0, 0.0]]])
    return ns.scaled_dot_product_attention(q, k, torch.eye(2)[None])[1]


@suite.case(
    "attention",
    "Q and K of different widths raise ValueError",
    points=1,
    check=raises("ValueError"),
    builds_on=(_SHAPES,),
)
def _(ns):
    return catch(ns.scaled_dot_product_attention, torch.ones(1, 2, 4), torch.ones(1, 2, 3), torch.ones(1, 2, 3))


@suite.case(
    "attention",
    "K with 3 keys and V with 4 raise ValueError",
    points=1,
    check=raises("ValueError"),
    builds_on=(_SHAPES,),
)
def _(ns):
    return catch(ns.scaled_dot_product_attention, torch.ones(1, 2, 4), torch.ones(1, 3, 4), torch.ones(1, 4, 4))


@suite.case("attention", "a float mask raises ValueError", points=1, check=raises("ValueError"), builds_on=(_SHAPES,))
def _(ns):
    return catch(
        ns.scaled_dot_product_attention,
        torch.ones(1, 2, 4),
        torch.ones(1, 3, 4),
        torch.ones(1, 3, 4),
        torch.zeros(2, 3),
    )
