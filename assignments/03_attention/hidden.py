"""Hidden tests of stage 03_attention (run only when grading; never shipped to students).

Expected values marked REFERENCE are the reference solution's outputs on the same
probe, saved at build time. Inputs are chosen so that no two sizes coincide (batch,
heads, query length, key length, d_k, d_v, vocabulary, width all differ), which
exposes transposes that a square shape would hide. Modules get their weights from
``set_parameters`` (by parameter name), never from the student's initialisation.

Tolerances (relative + absolute, per test):
- embedding: rtol 1e-5, atol 1e-6 (a sum of two float32 table rows; any correct
  order of operations gives the same bits or nearly).
- sinusoidal: rtol 1e-5, atol 1e-5 for a 50 x 12 table; rtol 1e-4, atol 1e-4 for
  512 x 32, where computing the angles in float32 (a correct choice) is off by up to
  about 2e-5 from the float64 reference; atol 1e-7 for the 1 x 2 table [[0, 1]].
- rope: rtol 1e-5, atol 2e-5 (angles in float32 or float64, real or complex
  arithmetic all agree to a few 1e-7 at these lengths).
- attention: weights rtol 1e-5, atol 1e-6; outputs rtol 1e-5, atol 1e-5 (fused
  kernels such as F.scaled_dot_product_attention sum in another order: about 3e-7);
  rtol 1e-4, atol 1e-5 for the near one-hot weights of scores of size about 100.
Hints recognise known mistakes from the output alone: the rope hints undo the
reference rotation to recover the probe's input, and the attention hints rescale
log(expected weights), which is what scores scaled by another factor would give.
What attention does on a query whose keys are all blocked is not tested: every mask
here leaves at least one key visible to every query.
"""

import math

import torch

from autograder.kit import REFERENCE, Hint, Suite, catch, close, generator, raises, randn, set_parameters

suite = Suite(public=False)


def _near(a, b, atol=1e-4):
    return isinstance(a, torch.Tensor) and a.shape == b.shape and torch.allclose(a.double(), b.double(), atol=atol)


# ---------------------------------------------------------------- embedding

_IDX = torch.randint(0, 11, (3, 5), generator=generator(31))


def _fresh_embedding(ns, seed):
    module = ns.TokenPositionEmbedding(11, 6, 8)
    set_parameters(module, seed)
    return module


@suite.case(
    "embedding",
    "fixed weights, B=3, T=5, vocabulary 11, C=6, max_seq_len=8",
    points=2,
    check=close(rtol=1e-5, atol=1e-6),
    expected=REFERENCE,
)
def _(ns):
    with torch.no_grad():
        return _fresh_embedding(ns, 1)(_IDX)


@suite.case(
    "embedding",
    "the part added to each token is its position's row, counted from 0",
    points=1,
    check=close(atol=1e-6, rtol=1e-5, hints=[
        Hint(lambda got, exp: _near(got[:, :-1], exp[:, 1:], 1e-5), "the positions look counted from 1: the first token has position 0"),
        Hint(lambda got, exp: not _near(got[0], got[1], 1e-5), "besides tok_emb(idx), your output adds something that differs between rows of the batch; the only other part is the row of each position"),
    ]),
    expected=REFERENCE,
)
def _(ns):
    with torch.no_grad():
        module = _fresh_embedding(ns, 2)
        idx = torch.tensor([[4, 4, 9, 0, 2, 7], [1, 10, 3, 3, 5, 6]])
        return module(idx) - module.tok_emb.weight[idx]


@suite.case(
    "embedding",
    "a sequence of exactly max_seq_len tokens is accepted",
    points=1,
    check=close(rtol=1e-5, atol=1e-6),
    expected=REFERENCE,
)
def _(ns):
    with torch.no_grad():
        return _fresh_embedding(ns, 3)(torch.arange(16).remainder(11).reshape(2, 8))


@suite.case("embedding", "max_seq_len + 1 tokens raise ValueError", points=1, check=raises("ValueError"))
def _(ns):
    module = ns.TokenPositionEmbedding(11, 6, 8)
    return catch(module, torch.zeros(3, 9, dtype=torch.long))


# ---------------------------------------------------------------- sinusoidal


def _angles_with(rows, width, exponent):
    p = torch.arange(rows, dtype=torch.float64)[:, None]
    return p / torch.pow(10000.0, exponent / width)


def _odd_columns_own_exponent(got, exp):
    rows, width = exp.shape
    own = _angles_with(rows, width, torch.arange(1, width, 2, dtype=torch.float64))
    return _near(got[:, 0::2], exp[:, 0::2]) and _near(got[:, 1::2], torch.cos(own))


def _pair_index_not_doubled(got, exp):
    rows, width = exp.shape
    slow = _angles_with(rows, width, torch.arange(0, width // 2, dtype=torch.float64))
    return _near(got[:, 0::2], torch.sin(slow))


_SIN_HINTS = [
    Hint(lambda got, exp: got.dtype == torch.float64, "return the table in the default dtype (float32)"),
    Hint(lambda got, exp: _near(got[:, 0::2], exp[:, 1::2]), "the even and odd columns look exchanged: compare the formula for PE[p, 2i] and PE[p, 2i+1]"),
    Hint(lambda got, exp: _near(got[:, : exp.shape[1] // 2], exp[:, 0::2]), "the columns are in blocks; in this course the two functions alternate column by column"),
    Hint(_odd_columns_own_exponent, "the odd columns use their own column number in the exponent; a sine column and the column after it share one frequency"),
    Hint(_pair_index_not_doubled, "the frequencies fall off too slowly: check the exponent of 10000"),
]


@suite.case(
    "sinusoidal",
    "the 50 x 12 table",
    points=2,
    check=close(rtol=1e-5, atol=1e-5, hints=_SIN_HINTS),
    expected=REFERENCE,
)
def _(ns):
    return ns.sinusoidal_positions(50, 12)


@suite.case(
    "sinusoidal",
    "a long 512 x 32 table, within float32 rounding",
    points=1,
    check=close(rtol=1e-4, atol=1e-4, hints=_SIN_HINTS),
    expected=REFERENCE,
)
def _(ns):
    return ns.sinusoidal_positions(512, 32)


@suite.case("sinusoidal", "embed_dim = 2 with a single position", points=1, check=close(rtol=0.0, atol=1e-7), expected=REFERENCE)
def _(ns):
    return ns.sinusoidal_positions(1, 2)


@suite.case("sinusoidal", "embed_dim = 13 raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.sinusoidal_positions, 8, 13)


# ---------------------------------------------------------------- rope


def _rotate_pairs(x, base, sign):
    """Interleaved-pair rotation by sign * p * base^(-2i/D), in float64."""
    T, D = x.shape[-2], x.shape[-1]
    angle = sign * torch.arange(T, dtype=torch.float64)[:, None] * base ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    a, b = x.double()[..., 0::2], x.double()[..., 1::2]
    return torch.stack((a * angle.cos() - b * angle.sin(), a * angle.sin() + b * angle.cos()), dim=-1).flatten(-2)


def _rotate_halves(x, base):
    T, D = x.shape[-2], x.shape[-1]
    angle = torch.arange(T, dtype=torch.float64)[:, None] * base ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    a, b = x.double()[..., : D // 2], x.double()[..., D // 2 :]
    return torch.cat((a * angle.cos() - b * angle.sin(), a * angle.sin() + b * angle.cos()), dim=-1)


def _rope_hints(base):
    def source(exp):
        return _rotate_pairs(exp, base, -1.0)  # undo the reference rotation: the probe's input

    return [
        Hint(lambda got, exp: _near(got, _rotate_halves(source(exp), base)), "you rotate the pair (x[i], x[i + D/2]); this course rotates interleaved pairs (x[2i], x[2i+1])"),
        Hint(lambda got, exp: _near(got, _rotate_pairs(source(exp), base, -1.0)), "the rotation goes the wrong way round: check the signs of the sine terms"),
        Hint(lambda got, exp: _near(got[..., 0, :], exp[..., 0, :], 1e-5) and not _near(got[..., 1, :], exp[..., 1, :]), "position 0 is right but later ones are not: check the angle p * base^(-2i/D) of each pair"),
    ]


@suite.case(
    "rope",
    "leading dims (3, 4), T=7, D=10",
    points=2,
    check=close(rtol=1e-5, atol=2e-5, hints=_rope_hints(10000.0)),
    expected=REFERENCE,
)
def _(ns):
    return ns.apply_rope(randn(3, 4, 7, 10, seed=41))


@suite.case(
    "rope",
    "3-D input, T=40, D=6 and base=100",
    points=1,
    check=close(rtol=1e-5, atol=2e-5, hints=_rope_hints(100.0)),
    expected=REFERENCE,
)
def _(ns):
    return ns.apply_rope(randn(2, 40, 6, seed=42), base=100.0)


@suite.case(
    "rope",
    "2-D input (T, D) = (9, 4)",
    points=1,
    check=close(rtol=1e-5, atol=2e-5, hints=_rope_hints(10000.0)),
    expected=REFERENCE,
)
def _(ns):
    return ns.apply_rope(randn(9, 4, seed=43))


@suite.case("rope", "D = 7 raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.apply_rope, randn(2, 3, 7, seed=44))


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


def _leaks(got, exp):
    return bool((got[exp == 0] != 0).any())


def _inverted(got, exp):
    return _leaks(got, exp) and bool((got[exp > 0] == 0).any())


_WEIGHT_HINTS = [
    Hint(lambda got, exp: torch.allclose(got.double().sum(-2), torch.ones(1, dtype=torch.float64), atol=1e-4), "your weights sum to 1 over the queries; each query's weights must sum to 1 over the keys"),
    Hint(_inverted, "the mask looks inverted: in this course True means the key is BLOCKED"),
    Hint(_leaks, "blocked keys still get weight: their scores must become -inf before the softmax"),
    Hint(lambda got, exp: _near(got, _rescored(exp, 1 / math.sqrt(6))), "the weights are too flat: the scale is sqrt(d_k), not d_k"),
    Hint(lambda got, exp: _near(got, _rescored(exp, math.sqrt(6))), "the weights are too peaked: the scores must be scaled before the softmax"),
]


@suite.case(
    "attention",
    "weights: leading dims (3, 4), T_q=5, T_k=7, d_k=6, d_v=9, a (5, 7) mask",
    points=2,
    check=close(rtol=1e-5, atol=1e-6, hints=_WEIGHT_HINTS),
    expected=REFERENCE,
)
def _(ns):
    return ns.scaled_dot_product_attention(_Q, _K, _V, mask=_M)[1]


@suite.case(
    "attention",
    "output: leading dims (3, 4), T_q=5, T_k=7, d_k=6, d_v=9, a (5, 7) mask",
    points=2,
    check=close(rtol=1e-5, atol=1e-5),
    expected=REFERENCE,
)
def _(ns):
    return ns.scaled_dot_product_attention(_Q, _K, _V, mask=_M)[0]


@suite.case(
    "attention",
    "weights without a mask, 3-D inputs T_q=4, T_k=6, d_k=3",
    points=1,
    check=close(rtol=1e-5, atol=1e-6, hints=_WEIGHT_HINTS[:1]),
    expected=REFERENCE,
)
def _(ns):
    return ns.scaled_dot_product_attention(randn(2, 4, 3, seed=55), randn(2, 6, 3, seed=56), randn(2, 6, 5, seed=57))[1]


@suite.case(
    "attention",
    "output with a key-padding mask of shape (3, 1, 1, 7)",
    points=1,
    check=close(rtol=1e-5, atol=1e-5),
    expected=REFERENCE,
)
def _(ns):
    return ns.scaled_dot_product_attention(_Q, _K, _V, mask=_PAD)[0]


@suite.case(
    "attention",
    "a per-batch mask of shape (3, 4, 5, 7)",
    points=1,
    check=close(rtol=1e-5, atol=1e-6, hints=_WEIGHT_HINTS[1:3]),
    expected=REFERENCE,
)
def _(ns):
    mask = torch.rand(3, 4, 5, 7, generator=generator(58)) < 0.5
    mask[..., 2] = False
    return ns.scaled_dot_product_attention(_Q, _K, _V, mask=mask)[1]


@suite.case(
    "attention",
    "huge scores (about 100) still give finite weights",
    points=1,
    check=close(rtol=1e-4, atol=1e-5, hints=[
        Hint(lambda got, exp: bool(torch.isnan(got).any()), "NaN weights: exp of a large score overflows float32; a stable softmax subtracts each row's maximum first"),
    ]),
    expected=REFERENCE,
)
def _(ns):
    return ns.scaled_dot_product_attention(randn(2, 3, 16, seed=59) * 10, randn(2, 8, 16, seed=60) * 10, randn(2, 8, 4, seed=61))[1]


@suite.case("attention", "K and V with different numbers of keys raise ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.scaled_dot_product_attention, randn(2, 3, 4, seed=62), randn(2, 5, 4, seed=63), randn(2, 6, 4, seed=64))
