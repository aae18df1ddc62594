"""Hidden tests of stage 03_attention (run only when grading; never shipped to students).

Expected values marked REFERENCE are the reference solution's outputs on the same
probe, saved at build time. Inputs are chosen so that no two sizes coincide (batch,
heads, query length, key length, d_k, d_v, vocabulary, width all differ), which
exposes transposes that a square shape would hide. Modules get their weights from
``set_parameters`` (by parameter name), never from the student's initialisation.
Every clause of each question's contract and the tests that cover it are listed in
``clauses.md`` beside this file.

Nothing here computes a reference answer: probes return the student's raw outputs
(tensors, shapes, the exception raised, the torch calls made); checks and hints compare
them with the fixtures and with the probe's own inputs, which the parent rebuilds from
their seeds. A hint recognises a known mistake from a relation between the output, the
expected value and the input (the RoPE hints compare complex pairs: a rotation the
wrong way round gives ``got * expected = x^2``), never by recomputing the function.

Tolerances (relative + absolute, per test):
- embedding: rtol 1e-5, atol 1e-6 (a sum of two float32 table rows; any correct
  order of operations gives the same bits or nearly).
- sinusoidal: rtol 1e-5, atol 1e-5 for a 50 x 12 table; rtol 1e-4, atol 1e-4 for
  512 x 32 (the formula at length); atol 1e-6 for 4096 x 16, where angles computed in
  float64 (as stated) are off by the float32 rounding of the table alone (below 6e-8)
  and angles computed in float32 by 1e-5 or more; atol 1e-7 for the 1 x 2 table [[0, 1]].
- rope: rtol 1e-5, atol 2e-5 (angles in float32 or float64, real or complex
  arithmetic all agree to a few 1e-7 at these lengths), also for a float64 input,
  where an answer computed in float32 and returned as float64 is correct too.

Values are compared whatever their dtype (``close(..., dtype=None)``): each dtype the
notebook states (the sinusoidal table in float32, RoPE keeping its input's dtype) has a
test of its own (``dtypes()``), so that one slip costs that test alone; the dtype clauses
are the rows of ``clauses.md`` whose ids start with ``dtype``.
- attention: weights rtol 1e-5, atol 1e-6; outputs rtol 1e-5, atol 1e-5 (fused
  kernels such as F.scaled_dot_product_attention sum in another order: about 3e-7);
  rtol 1e-4, atol 1e-5 for the near one-hot weights of scores of size about 100.
What attention does on a query whose keys are all blocked is not tested: every mask
here leaves at least one key visible to every query.
"""

import math

import torch

from autograder.kit import (
    REFERENCE,
    Hint,
    Placement,
    Suite,
    Verdict,
    catch,
    close,
    dtypes,
    generator,
    raises,
    randn,
    satisfies,
    set_parameters,
    unplaced,
)
from autograder.kit.placement import FACTORIES

from public import _table_like

suite = Suite(public=False)


def _near(a, b, atol=1e-4):
    return a.shape == b.shape and torch.allclose(a.double(), b.double(), atol=atol)


# ---------------------------------------------------------------- embedding

_IDX = torch.randint(0, 11, (3, 5), generator=generator(31))
_TABLES = "tok_emb (11 x 6) and pos_emb (8 x 6) are nn.Embedding tables"


def _fresh_embedding(ns, seed):
    module = ns.TokenPositionEmbedding(11, 6, 8)
    set_parameters(module, seed)
    return module


def _tables_problem(got):
    for name, rows, size in (("tok_emb", "vocab_size", [11, 6]), ("pos_emb", "max_seq_len", [8, 6])):
        if got[name] != "Embedding":
            return f"{name} must be an nn.Embedding, got {got[name]}"
        if got[f"{name} size"] != size:
            return f"{name} must hold {rows} rows of embed_dim numbers; yours has shape {tuple(got[f'{name} size'])}"
    return None


@suite.case("embedding", _TABLES, points=1, check=satisfies(_tables_problem), structure=True)
def _(ns):
    module = ns.TokenPositionEmbedding(11, 6, 8)
    found = {}
    for name in ("tok_emb", "pos_emb"):
        table = getattr(module, name, None)
        found[name] = type(table).__name__
        found[f"{name} size"] = list(getattr(getattr(table, "weight", None), "shape", []))
    return found


@suite.case(
    "embedding",
    "fixed weights, B=3, T=5, vocabulary 11, C=6, max_seq_len=8",
    points=2,
    check=close(rtol=1e-5, atol=1e-6, dtype=None),
    expected=REFERENCE,
    builds_on=(_TABLES,),
)
def _(ns):
    with torch.no_grad():
        return _fresh_embedding(ns, 1)(_IDX)


def _minus_token_rows(check):
    """A check of ``output - token rows``, the two raw outputs of the probe, subtracted here."""

    def judged(got, expected, reveal):
        if not (
            isinstance(got, (tuple, list))
            and len(got) == 2
            and all(type(t) is torch.Tensor for t in got)
            and got[0].shape == got[1].shape
        ):
            return check(got, expected[0] - expected[1], reveal)
        return check(got[0] - got[1], expected[0] - expected[1], reveal)

    return judged


@suite.case(
    "embedding",
    "the part added to each token is its position's row, counted from 0",
    points=1,
    check=_minus_token_rows(
        close(
            atol=1e-6,
            rtol=1e-5,
            dtype=None,
            hints=[
                Hint(
                    lambda got, exp: _table_like(got, exp) and _near(got[:, :-1], exp[:, 1:], 1e-5),
                    "the positions look counted from 1: the first token has position 0",
                    mistake="positions counted from 1",
                ),
                Hint(
                    lambda got, exp: (
                        _table_like(got, exp)
                        and _near(got[0, 0], got[0, 1], 1e-5)
                        and _near(got[0, 2], got[0, 5], 1e-5)
                    ),
                    "the part added to a token repeats wherever the token repeats: pick the position rows by position (0, 1, ..., T-1), not by token id",
                    mistake="positions taken from the token ids",
                ),
                Hint(
                    lambda got, exp: (
                        _table_like(got, exp)
                        and _near((got - exp)[0, 0], (got - exp)[0, 1], 1e-5)
                        and _near((got - exp)[0, 2], (got - exp)[0, 5], 1e-5)
                    ),
                    "besides tok_emb(idx) and the position row, your output holds a part that depends on the token: do not scale the token vectors",
                    mistake="token vectors scaled",
                ),
            ],
        )
    ),
    expected=REFERENCE,
    builds_on=(_TABLES,),
)
def _(ns):
    with torch.no_grad():
        module = _fresh_embedding(ns, 2)
        idx = torch.tensor([[4, 4, 7, 0, 2, 7], [1, 5, 3, 3, 5, 6]])
        return module(idx), module.tok_emb.weight[idx]


@suite.case(
    "embedding",
    "a sequence of exactly max_seq_len tokens is accepted",
    points=1,
    check=close(rtol=1e-5, atol=1e-6, dtype=None),
    expected=REFERENCE,
    builds_on=(_TABLES,),
)
def _(ns):
    with torch.no_grad():
        return _fresh_embedding(ns, 3)(torch.arange(16).remainder(11).reshape(2, 8))


@suite.case("embedding", "max_seq_len + 1 tokens raise ValueError", points=1, check=raises("ValueError"))
def _(ns):
    module = ns.TokenPositionEmbedding(11, 6, 8)
    return catch(module, torch.zeros(3, 9, dtype=torch.long))


@suite.case("embedding", "ids that are not (B, T) raise ValueError", points=1, check=raises("ValueError"))
def _(ns):
    module = ns.TokenPositionEmbedding(11, 6, 8)
    return catch(module, torch.zeros(5, dtype=torch.long))


@suite.case("embedding", "max_seq_len = 0 raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.TokenPositionEmbedding, 11, 6, 0)


def _placement_problem(calls):
    made = unplaced(calls)
    if made:
        return (
            f"forward makes a tensor with torch.{made} on the default device: on a GPU it would not meet idx there; "
            "make it on idx.device (device=idx.device)"
        )
    return None


def _placed_and_right(placement_problem, rtol, atol):
    """A check of ``(calls, output)``: the output is right (within ``rtol``, ``atol``), and then the noted
    torch calls made their tensors on the input's device (``placement_problem``: why not, or None)."""

    def check(got, expected, reveal):
        verdict = close(rtol=rtol, atol=atol, dtype=None)(got[1], expected[1], reveal)
        if not verdict.passed:
            return Verdict(False, f"the output is not right yet: {verdict.message}")
        problem = placement_problem(got[0])
        return Verdict(problem is None, problem or "")

    return check


@suite.case(
    "embedding",
    "the positions are made on the device of idx",
    points=1,
    check=_placed_and_right(_placement_problem, rtol=1e-5, atol=1e-6),
    expected=REFERENCE,
    builds_on=("fixed weights, B=3, T=5, vocabulary 11, C=6, max_seq_len=8",),
)
def _(ns):
    # Grading runs on the CPU only: the test watches the torch calls forward makes and
    # checks that a tensor it creates is given a device (or moved to one).
    module = _fresh_embedding(ns, 4)
    with Placement() as spy, torch.no_grad():
        out = module(_IDX)
    return [list(call) for call in spy.calls], out


# ---------------------------------------------------------------- sinusoidal


def _table_hints():
    """Known mistakes, told apart by how the table relates to the expected one."""
    return [
        Hint(
            lambda got, exp: _table_like(got, exp) and _near(got[:, 0::2], exp[:, 1::2]),
            "the even and odd columns look exchanged: compare the formula for PE[p, 2i] and PE[p, 2i+1]",
            mistake="sin and cos swapped",
        ),
        Hint(
            lambda got, exp: _table_like(got, exp) and _near(got[:, : exp.shape[1] // 2], exp[:, 0::2]),
            "the columns are in blocks; in this course the two functions alternate column by column",
            mistake="sines and cosines in blocks",
        ),
        Hint(
            lambda got, exp: (
                _table_like(got, exp) and _near(got[:, 0::2], exp[:, 0::2]) and _near(got[0, 1::2], exp[0, 1::2])
            ),
            "the sine columns are right but the cosine columns are not: a sine column and the column after it share one frequency",
            mistake="cosine columns with their own exponent",
        ),
        # with the pair index not doubled, the sine of pair 2k turns like the expected sine of pair k
        Hint(
            lambda got, exp: _table_like(got, exp) and _near(got[:, 0::4], exp[:, 0::2][:, : (exp.shape[1] + 2) // 4]),
            "the frequencies fall off too slowly: check the exponent of 10000",
            mistake="pair index not doubled",
        ),
    ]


_TABLE = "the 50 x 12 table"


@suite.case(
    "sinusoidal",
    _TABLE,
    points=2,
    check=close(rtol=1e-5, atol=1e-5, dtype=None, hints=_table_hints()),
    expected=REFERENCE,
)
def _(ns):
    return ns.sinusoidal_positions(50, 12)


@suite.case(
    "sinusoidal",
    "a long 512 x 32 table, within float32 rounding",
    points=1,
    check=close(rtol=1e-4, atol=1e-4, dtype=None, hints=_table_hints()),
    expected=REFERENCE,
    builds_on=(_TABLE,),
)
def _(ns):
    return ns.sinusoidal_positions(512, 32)


@suite.case(
    "sinusoidal",
    "embed_dim = 2 with a single position",
    points=1,
    check=close(rtol=0.0, atol=1e-7, dtype=None),
    expected=REFERENCE,
)
def _(ns):
    return ns.sinusoidal_positions(1, 2)


@suite.case(
    "sinusoidal",
    "a 4096 x 16 table, to float32 rounding (angles in float64)",
    points=1,
    check=close(rtol=0.0, atol=1e-6, dtype=None),
    expected=REFERENCE,
    builds_on=(_TABLE,),
)
def _(ns):
    return ns.sinusoidal_positions(4096, 16)


@suite.case("sinusoidal", "the table is in the default dtype (float32)", points=1, check=dtypes(), expected=REFERENCE)
def _(ns):
    return ns.sinusoidal_positions(7, 10)


@suite.case("sinusoidal", "embed_dim = 13 raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.sinusoidal_positions, 8, 13)


@suite.case("sinusoidal", "embed_dim = 0 raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.sinusoidal_positions, 8, 0)


# ---------------------------------------------------------------- rope


def _pairs(t):
    """The interleaved pairs (t[2i], t[2i+1]) as complex numbers, in float64."""
    t = t.double()
    return torch.complex(t[..., 0::2], t[..., 1::2])


def _halves_norms(t):
    half = t.shape[-1] // 2
    t = t.double()
    return t[..., :half] ** 2 + t[..., half:] ** 2


def _rope_hints(x):
    """Hints for a probe whose input is ``x`` (rebuilt here from its seed)."""

    def rotation(got):
        return torch.allclose(_pairs(got).abs(), _pairs(x).abs(), atol=1e-4)

    def halves(got, exp):
        return _table_like(got, exp) and _near(_halves_norms(got), _halves_norms(x)) and not rotation(got)

    def backwards(got, exp):  # x turned by -angle times x turned by +angle is x^2
        return _table_like(got, exp) and torch.allclose(_pairs(got) * _pairs(exp), _pairs(x) ** 2, atol=1e-4)

    def angles(got, exp):  # pair i turned as the expected pair i/2 (an exponent of -i/D)
        if not _table_like(got, exp):
            return False
        turned, expected = _pairs(got) / _pairs(x), _pairs(exp) / _pairs(x)
        if turned.shape[-1] < 3:  # with two pairs, pair 0 (which every base turns alike) is all it compares
            return False
        half = (turned.shape[-1] + 1) // 2
        return torch.allclose(turned[..., 0::2], expected[..., :half], atol=1e-3)

    return [
        Hint(
            halves,
            "you rotate the pair (x[i], x[i + D/2]); this course rotates interleaved pairs (x[2i], x[2i+1])",
            mistake="rotates halves",
        ),
        Hint(
            backwards,
            "the rotation goes the wrong way round: check the signs of the sine terms",
            mistake="rotation in the opposite direction",
        ),
        Hint(
            angles,
            "pair i turns as pair i/2 should: check the exponent of each pair's angle p * base^(-2i/D)",
            mistake="frequencies base^(-i/D)",
        ),
    ]


_X4 = randn(3, 4, 7, 10, seed=41)
_X3 = randn(2, 40, 6, seed=42)
_X2 = randn(9, 4, seed=43)
_LEADING = "leading dims (3, 4), T=7, D=10"


@suite.case(
    "rope",
    _LEADING,
    points=2,
    check=close(rtol=1e-5, atol=2e-5, dtype=None, hints=_rope_hints(_X4)),
    expected=REFERENCE,
)
def _(ns):
    return ns.apply_rope(_X4.clone())


@suite.case(
    "rope",
    "3-D input, T=40, D=6 and base=100",
    points=1,
    check=close(rtol=1e-5, atol=2e-5, dtype=None, hints=_rope_hints(_X3)),
    expected=REFERENCE,
)
def _(ns):
    return ns.apply_rope(_X3.clone(), base=100.0)


@suite.case(
    "rope",
    "2-D input (T, D) = (9, 4)",
    points=1,
    check=close(rtol=1e-5, atol=2e-5, dtype=None, hints=_rope_hints(_X2)),
    expected=REFERENCE,
)
def _(ns):
    return ns.apply_rope(_X2.clone())


@suite.case(
    "rope",
    "a float64 input, (2, 5, 8)",
    points=1,
    check=close(rtol=1e-5, atol=2e-5, dtype=None),
    expected=REFERENCE,
    builds_on=(_LEADING,),
)
def _(ns):
    return ns.apply_rope(randn(2, 5, 8, seed=45).double())


@suite.case(
    "rope", "the output keeps the input's dtype (float32, float64)", points=1, check=dtypes(), expected=REFERENCE
)
def _(ns):
    x = randn(2, 5, 8, seed=46)
    return ns.apply_rope(x), ns.apply_rope(x.double())


@suite.case(
    "rope",
    "returns a new tensor and leaves x unchanged",
    points=1,
    check=close(rtol=0, atol=0, dtype=None),
    expected=REFERENCE,
    guard=True,
)
def _(ns):
    x = randn(2, 6, 8, seed=49)
    catch(ns.apply_rope, x)  # what it returns or raises is graded elsewhere
    return x  # the input itself, after the call


class _Moves(Placement):
    """Placement that also notes, for each torch call, its name, the types of its arguments
    after the first and the names of its keywords: the check tells a move to a device
    (``.to(x.device)``, ``.to(x)``, ``.type_as(x)``, ``.cuda()``) from a cast (``.to(x.dtype)``)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.given.append([getattr(func, "__name__", ""), [type(a).__name__ for a in args[1:]], sorted(kwargs or {})])
        return Placement.__torch_function__(self, func, types, args, kwargs)

    def __init__(self):
        Placement.__init__(self)
        self.given = []


def _rope_placement_problem(given):
    """The first factory made with no device when no later call moves a tensor to a device."""
    moved = False
    unplaced_factory = None
    for name, arg_types, keywords in given:
        if name == "cuda" or (
            name in ("to", "type_as") and ("device" in keywords or {"device", "str", "Tensor"} & set(arg_types))
        ):
            moved = True
        elif name in FACTORIES and not {"Tensor", "Parameter"} & set(arg_types) and "device" not in keywords:
            unplaced_factory = unplaced_factory or name
    if unplaced_factory and not moved:
        return (
            f"apply_rope makes a tensor with torch.{unplaced_factory} on the default device: on a GPU it would "
            "not meet x there; make it on x.device (device=x.device)"
        )
    return None


@suite.case(
    "rope",
    "the angles are made on the device of x",
    points=1,
    check=_placed_and_right(_rope_placement_problem, rtol=1e-5, atol=2e-5),
    expected=REFERENCE,
    builds_on=(_LEADING,),
)
def _(ns):
    # Grading runs on the CPU only: the test watches the torch calls apply_rope makes and
    # checks that a tensor it creates is given a device (or moved to one; a cast to a dtype is no move).
    x = randn(2, 5, 8, seed=50)
    with _Moves() as spy:
        out = ns.apply_rope(x)
    return spy.given, out


@suite.case("rope", "D = 7 raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.apply_rope, randn(2, 3, 7, seed=44))


@suite.case("rope", "x of shape (6,) raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.apply_rope, randn(6, seed=47))


@suite.case("rope", "base = -1 raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.apply_rope, randn(2, 3, 4, seed=48), base=-1.0)


# ---------------------------------------------------------------- attention

# leading dims (3, 4); T_q = 5, T_k = 7, d_k = 6, d_v = 9
_Q = randn(3, 4, 5, 6, seed=51)
_K = randn(3, 4, 7, 6, seed=52)
_V = randn(3, 4, 7, 9, seed=53)
_M = torch.rand(5, 7, generator=generator(54)) < 0.4
_M[:, 0] = False  # every query keeps key 0: no row is fully blocked
_PAD = torch.zeros(3, 1, 1, 7, dtype=torch.bool)
_PAD[0, ..., 5:] = True
_PAD[2, ..., 3:] = True


def _rescored(exp, power):
    """softmax(power * log(expected)): the weights scores scaled differently would give."""
    return torch.softmax(torch.log(exp.double()) * power, dim=-1)


def _rows_sum_to_one(got):
    """Each query's weights (the rows without NaN) sum to 1 over the keys."""
    rows = got.double()
    finite = torch.isfinite(rows).all(-1)
    return bool(finite.any()) and torch.allclose(rows[finite].sum(-1), torch.ones(1, dtype=torch.float64), atol=1e-4)


def _blocked_weighted(got, exp):
    """Some blocked key (weight 0 in the expected weights) got weight, each query's weights summing to 1."""
    return _table_like(got, exp) and _rows_sum_to_one(got) and bool((got[exp == 0] > 0).any())


def _leaks(got, exp):
    """Blocked keys got weight and no key got none: the mask blocked nothing (a score of 0 is no block)."""
    return _blocked_weighted(got, exp) and bool((got[exp > 0] > 0).all())


def _inverted(got, exp):
    """Exactly the keys the mask leaves open got no weight (rows blocked entirely come out NaN)."""
    if not _blocked_weighted(got, exp):
        return False
    rows = torch.isfinite(got.double()).all(-1)
    return bool(((got[rows] == 0) == (exp[rows] > 0)).all())


_WEIGHT_HINTS = [
    Hint(
        lambda got, exp: (
            _table_like(got, exp)
            and torch.allclose(got.double().sum(-2), torch.ones(1, dtype=torch.float64), atol=1e-4)
        ),
        "your weights sum to 1 over the queries; each query's weights must sum to 1 over the keys",
        mistake="softmax over the queries",
    ),
    Hint(_inverted, "the mask looks inverted: in this course True means the key is BLOCKED", mistake="mask inverted"),
    Hint(
        _leaks,
        "blocked keys still get weight: their scores must become -inf before the softmax",
        mistake="blocked scores not -inf",
    ),
    Hint(
        lambda got, exp: _table_like(got, exp) and _near(got, _rescored(exp, 1 / math.sqrt(6))),
        "the weights are too flat: the scale is sqrt(d_k), not d_k",
        mistake="scores divided by d_k",
    ),
    Hint(
        lambda got, exp: _table_like(got, exp) and _near(got, _rescored(exp, math.sqrt(6))),
        "the weights are too peaked: the scores must be scaled before the softmax",
        mistake="scores not scaled",
    ),
]
_SHAPES = "T_q=3, T_k=5, d_v=6: shapes, and each query's weights sum to 1"  # the public test of shapes
_PLAIN = "weights without a mask, 3-D inputs T_q=4, T_k=6, d_k=3"
_MASKED = "weights: leading dims (3, 4), T_q=5, T_k=7, d_k=6, d_v=9, a (5, 7) mask"


@suite.case(
    "attention",
    _PLAIN,
    points=1,
    check=close(rtol=1e-5, atol=1e-6, dtype=None, hints=_WEIGHT_HINTS[:1]),
    expected=REFERENCE,
    builds_on=(_SHAPES,),
)
def _(ns):
    return ns.scaled_dot_product_attention(randn(2, 4, 3, seed=55), randn(2, 6, 3, seed=56), randn(2, 6, 5, seed=57))[1]


@suite.case(
    "attention",
    _MASKED,
    points=2,
    check=close(rtol=1e-5, atol=1e-6, dtype=None, hints=_WEIGHT_HINTS),
    expected=REFERENCE,
    builds_on=(_PLAIN,),
)
def _(ns):
    return ns.scaled_dot_product_attention(_Q, _K, _V, mask=_M)[1]


@suite.case(
    "attention",
    "output: leading dims (3, 4), T_q=5, T_k=7, d_k=6, d_v=9, a (5, 7) mask",
    points=2,
    check=close(rtol=1e-5, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=(_MASKED,),
)
def _(ns):
    return ns.scaled_dot_product_attention(_Q, _K, _V, mask=_M)[0]


@suite.case(
    "attention",
    "output with a key-padding mask of shape (3, 1, 1, 7)",
    points=1,
    check=close(rtol=1e-5, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=(_MASKED,),
)
def _(ns):
    return ns.scaled_dot_product_attention(_Q, _K, _V, mask=_PAD)[0]


@suite.case(
    "attention",
    "a per-batch mask of shape (3, 4, 5, 7)",
    points=1,
    check=close(rtol=1e-5, atol=1e-6, dtype=None, hints=_WEIGHT_HINTS[1:]),
    expected=REFERENCE,
    builds_on=(_MASKED,),
)
def _(ns):
    mask = torch.rand(3, 4, 5, 7, generator=generator(58)) < 0.5
    mask[..., 2] = False
    return ns.scaled_dot_product_attention(_Q, _K, _V, mask=mask)[1]


@suite.case(
    "attention",
    "keys and values with leading dims (4,) broadcast against queries with (3, 4)",
    points=1,
    check=close(rtol=1e-5, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=(_PLAIN,),
)
def _(ns):
    return ns.scaled_dot_product_attention(_Q, _K[0], _V[0])[0]


@suite.case(
    "attention",
    "huge scores (about 100) still give finite weights",
    points=1,
    check=close(
        rtol=1e-4,
        atol=1e-5,
        dtype=None,
        hints=[
            Hint(
                lambda got, exp: type(got) is torch.Tensor and bool(torch.isnan(got).any()),
                "NaN weights: exp of a large score overflows float32; a stable softmax subtracts each row's maximum first",
                mistake="softmax overflows",
            ),
        ],
    ),
    expected=REFERENCE,
    builds_on=(_PLAIN,),
)
def _(ns):
    return ns.scaled_dot_product_attention(
        randn(2, 3, 16, seed=59) * 10, randn(2, 8, 16, seed=60) * 10, randn(2, 8, 4, seed=61)
    )[1]


@suite.case(
    "attention",
    "Q and K with different d_k raise ValueError",
    points=1,
    check=raises("ValueError"),
    builds_on=(_PLAIN,),
)
def _(ns):
    return catch(
        ns.scaled_dot_product_attention, randn(2, 3, 4, seed=65), randn(2, 5, 6, seed=66), randn(2, 5, 4, seed=67)
    )


@suite.case(
    "attention",
    "K and V with different numbers of keys raise ValueError",
    points=1,
    check=raises("ValueError"),
    builds_on=(_PLAIN,),
)
def _(ns):
    return catch(
        ns.scaled_dot_product_attention, randn(2, 3, 4, seed=62), randn(2, 5, 4, seed=63), randn(2, 6, 4, seed=64)
    )


@suite.case(
    "attention",
    "a mask that is not boolean raises ValueError",
    points=1,
    check=raises("ValueError"),
    builds_on=(_MASKED,),
)
def _(ns):
    return catch(ns.scaled_dot_product_attention, _Q, _K, _V, mask=_M.float())
