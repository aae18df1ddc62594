"""Hidden tests of stage 05_multihead (run only when grading; never shipped to students).

Expected values marked REFERENCE are the reference solution's outputs on the same
probe, saved at build time. Inputs make every size differ (heads: B=4, T=7, C=30, H=5,
D=6, also H=6 and H=10; mha: B=3, T=5, C=24, H=4, D=6, also H=2 and H=6), so a transpose
or a bare reshape cannot pass by luck (check-stage's rule "probe sizes apart" checks this for
every call the probes make, ``SIZES_APART``). Modules get their weights from ``set_parameters`` (by parameter
name, whatever the order in which the student created them). Every clause of each
question and the tests that cover it are listed in ``clauses.md`` beside this file.

The ``mha`` tests never depend on the student's ``split_heads`` and ``merge_heads``
(question ``heads``): while they run, those two answer from a table (for each shape the
mha probes use, where each head's rows start in the flattened input), and any other call
goes to the student's own function. No heads probe uses those shapes, so the table
answers none of them. A class that splits and merges heads inline is graded on its own
code, as it should be. The comparisons with nn.MultiheadAttention build PyTorch's module
in the check (in the grading process), from the weights ``set_parameters`` gives.

Tolerances (relative + absolute, per test):
- heads: exact (rtol 0, atol 0). Splitting and merging only move numbers.
- values whatever their dtype (``dtype=None``): the notebook states no dtype here, so an
  output in float64 loses nothing. Tests that a module doing nothing could pass (round
  trips, shapes, causality, no bias, dropout's properties) are guards (``guard=True``):
  they count only when a test of the question's values passes.
- mha outputs and weights against the reference: rtol 1e-4, atol 1e-5. With these
  weights the scores have a spread of about 6, so the softmax is peaked and amplifies
  float32 rounding; einsum, a fused qkv product or F.scaled_dot_product_attention
  differ from the reference by a few 1e-7 relative. Every mistake in the catalogue
  is off by 1e-2 or more.
- mha against nn.MultiheadAttention with copied weights: rtol 1e-4, atol 1e-5 (the
  same reasoning; PyTorch's kernel orders its sums differently again).
- properties (causality, dropout off in eval mode): 1e-6 absolute; dropout after
  out_proj: between 30 % and 70 % of 360 outputs exactly 0 at p = 0.5 (mean 50 %,
  standard deviation 2.6 %); dropout of the weights: the kept outputs are not twice the
  eval output (rtol 1e-4, atol 1e-5; with the weights dropped they differ by about 1).
"""

import contextlib

import torch
import torch.nn as nn

from autograder.kit import REFERENCE, Hint, Suite, Verdict, catch, close, equal, randn, satisfies, set_parameters

from public import _across_heads

suite = Suite(public=False)

# sizes of the heads probes: none of them is a shape the mha probes use
B, T, C, H = 4, 7, 30, 5
D = C // H


def _heads_apart(x, heads):
    """B, T, C and H of a (B, T, C) input cut into ``heads`` heads, and D = C / H when H > 1."""
    b, t, c = x.shape
    return (b, t, c, heads) + ((c // heads,) if heads > 1 else ())


# check-stage's rule "probe sizes apart": every call the probes make to these keeps its sizes
# all different, so that no transpose or bare reshape passes by luck
SIZES_APART = {
    "split_heads": lambda x, num_heads: _heads_apart(x, num_heads),
    "merge_heads": lambda x: tuple(x.shape),  # B, H, T, D
    "MultiHeadAttention": lambda module, x, *args, **kwargs: _heads_apart(x, module.num_heads),
}


def _is(got, expected):
    return type(got) is torch.Tensor and got.shape == expected.shape and torch.equal(got, expected)


# ---------------------------------------------------------------- heads

_X = randn(B, T, C, seed=51)
_Y = randn(B, H, T, D, seed=52)

_SPLIT_HINTS = [
    Hint(
        lambda got, exp: _is(got, _X.reshape(B, H, T, D)),
        "your heads mix positions: regrouping (B, T, C) straight into (B, H, T, D) keeps the numbers in memory order, "
        "so a head's row holds pieces of several positions. Split the feature axis first, then move the head axis.",
        mistake="split with a bare reshape",
    ),
    Hint(
        lambda got, exp: _is(got, _X.reshape(B, T, D, H).permute(0, 3, 1, 2)),
        "head h should get one block of D neighbouring features (h*D to h*D + D - 1), not every H-th feature",
        mistake="interleaved split",
    ),
    Hint(
        lambda got, exp: type(got) is torch.Tensor and tuple(got.shape) == (B, T, H, D),
        "the head axis has to come before the time axis: (B, H, T, D)",
        mistake="head axis after the time axis",
    ),
]
_SPLIT = "split_heads on a 4 x 7 x 30 input with 5 heads, every value checked"
_MERGE = "merge_heads of a 4 x 5 x 7 x 6 tensor, every value checked"


@suite.case("heads", _SPLIT, points=2, check=equal(_SPLIT_HINTS, dtype=None), expected=REFERENCE)
def _(ns):
    return ns.split_heads(_X.clone(), H)


@suite.case(
    "heads",
    "split_heads with 6 heads of width 5 and with 10 heads of width 3",
    points=1,
    check=equal(dtype=None),
    expected=REFERENCE,
    builds_on=(_SPLIT,),
)
def _(ns):
    return ns.split_heads(_X.clone(), 6), ns.split_heads(_X.clone(), 10)


_MERGE_HINTS = [
    Hint(
        lambda got, exp: _is(got, _Y.reshape(B, T, C)),
        "the head axis has to move back next to the features before the last two axes are joined; "
        "joining straight from (B, H, T, D) mixes positions",
        mistake="merge without moving the head axis",
    ),
    Hint(
        lambda got, exp: _is(got, _Y.permute(0, 2, 3, 1).reshape(B, T, C)),
        "the features of head h belong side by side in one block (h*D to h*D + D - 1), not interleaved with the other heads",
        mistake="interleaved merge",
    ),
]


@suite.case("heads", _MERGE, points=2, check=equal(_MERGE_HINTS, dtype=None), expected=REFERENCE)
def _(ns):
    return ns.merge_heads(_Y.clone())


@suite.case(
    "heads",
    "merge_heads accepts a tensor that is not contiguous in memory",
    points=1,
    check=equal(dtype=None),
    expected=REFERENCE,
    builds_on=(_MERGE,),
)
def _(ns):
    strided = randn(B, H, T, 2 * D, seed=53)[..., ::2]  # (B, H, T, D), every other number of a larger tensor
    return ns.merge_heads(strided)


@suite.case(
    "heads",
    "round trips on other sizes: (2, 7, 30) with 5 heads, and (3, 6, 2, 7)",
    points=1,
    check=equal(dtype=None),
    expected=REFERENCE,
    builds_on=(_SPLIT, _MERGE),
    guard=True,
)
def _(ns):
    a = randn(2, 7, 30, seed=54)
    y = randn(3, 6, 2, 7, seed=55)
    return ns.merge_heads(ns.split_heads(a, 5)), ns.split_heads(ns.merge_heads(y), 6)


def _value_errors(labels):
    def problem(got):
        for label, outcome in zip(labels, got):
            if outcome["raised"] != "ValueError":
                what = "nothing was raised" if outcome["raised"] is None else f"got {outcome['raised']}"
                return f"{label} should raise ValueError; {what}"
        return None

    return problem


@suite.case(
    "heads",
    "bad head counts and wrong ranks raise ValueError",
    points=1,
    check=satisfies(
        _value_errors(
            [
                "split_heads(x, 7) with C=30",
                "split_heads(x, 0)",
                "split_heads of a 2-D tensor",
                "merge_heads of a 3-D tensor",
            ]
        )
    ),
)
def _(ns):
    return [
        catch(ns.split_heads, _X.clone(), 7),
        catch(ns.split_heads, _X.clone(), 0),
        catch(ns.split_heads, _X[0].clone(), 5),
        catch(ns.merge_heads, _X.clone()),
    ]


# ---------------------------------------------------------------- mha

MB, MT, MC, MH = 3, 5, 24, 4  # every module here: B=3, T=5, C=24, 4 heads of width 6 (also 2 and 6 heads)

# For each (B, T, C) input and number of heads the mha probes use: where in the flattened
# input each row of D numbers of split_heads' (B, H, T, D) result starts.
_HEAD_ROWS = {
    (
        (3, 5, 24),
        4,
    ): "0 24 48 72 96 6 30 54 78 102 12 36 60 84 108 18 42 66 90 114 120 144 168 192 216 126 150 174 198 222 "
    "132 156 180 204 228 138 162 186 210 234 240 264 288 312 336 246 270 294 318 342 252 276 300 324 348 "
    "258 282 306 330 354",
    (
        (3, 5, 24),
        2,
    ): "0 24 48 72 96 12 36 60 84 108 120 144 168 192 216 132 156 180 204 228 240 264 288 312 336 252 276 300 324 348",
    (
        (3, 5, 24),
        6,
    ): "0 24 48 72 96 4 28 52 76 100 8 32 56 80 104 12 36 60 84 108 16 40 64 88 112 20 44 68 92 116 120 144 168 "
    "192 216 124 148 172 196 220 128 152 176 200 224 132 156 180 204 228 136 160 184 208 232 140 164 188 212 "
    "236 240 264 288 312 336 244 268 292 316 340 248 272 296 320 344 252 276 300 324 348 256 280 304 328 352 "
    "260 284 308 332 356",
}


def _order(shape, heads):
    starts = _HEAD_ROWS.get((tuple(shape), heads))
    if starts is None:
        return None
    rows = torch.tensor([int(s) for s in starts.split()])
    return (rows[:, None] + torch.arange(shape[-1] // heads)).reshape(-1)


# The (B, H, T, D) input of merge_heads for each entry of _HEAD_ROWS, with that entry's key.
_MERGED = {(shape[0], heads, shape[1], shape[2] // heads): (shape, heads) for shape, heads in _HEAD_ROWS}


@contextlib.contextmanager
def _tabled_heads(ns):
    """Run with the notebook's split_heads and merge_heads answering from _HEAD_ROWS."""
    names = ns._names  # the notebook's globals, where the student's class looks them up
    own = {key: names.get(key) for key in ("split_heads", "merge_heads")}

    def split_heads(x, num_heads):
        order = _order(x.shape, num_heads)  # None unless x is (B, T, C) with a shape of the table
        if order is None:
            return own["split_heads"](x, num_heads=num_heads)
        n, t, c = x.shape
        return x.reshape(-1)[order.to(x.device)].view(n, num_heads, t, c // num_heads)

    def merge_heads(x):
        key = _MERGED.get(tuple(x.shape))  # None unless x is (B, H, T, D) with a shape of the table
        order = None if key is None else _order(*key)
        if order is None:
            return own["merge_heads"](x=x)
        n, h, t, d = x.shape
        return x.reshape(-1)[torch.argsort(order).to(x.device)].view(n, t, h * d)

    names["split_heads"], names["merge_heads"] = split_heads, merge_heads
    try:
        yield
    finally:
        for key, value in own.items():
            if value is None:
                names.pop(key, None)
            else:
                names[key] = value


def _module(ns, seed, heads=MH, **kwargs):
    module = ns.MultiHeadAttention(MC, heads, **kwargs)
    set_parameters(module, seed)
    return module.eval()


_XM = randn(MB, MT, MC, seed=61)
_CAUSAL = torch.ones(MT, MT, dtype=torch.bool).triu(1)
_PADDED = torch.tensor([[0, 0, 0, 0, 0], [0, 0, 0, 1, 1], [0, 0, 0, 0, 1]], dtype=torch.bool)  # (B, T) keys
_PAD_MASK = _PADDED[:, None, :]  # (B, 1, T)
_COMBINED = _CAUSAL[None] | _PAD_MASK  # (B, T, T)
_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "out_proj")


def _linears_problem(got):
    for name, (kind, weight, bias) in zip(_PROJECTIONS, got):
        if kind != "Linear":
            return f"{name} must be an nn.Linear, got {kind}"
        if weight != [MC, MC] or bias != [MC]:
            return f"{name} must be nn.Linear(embed_dim, embed_dim) with a bias (bias=True is the default); yours has weight {tuple(weight)} and bias {bias}"
    return None


_LINEARS = "four nn.Linear(24, 24) projections, with a bias by default"


@suite.case("mha", _LINEARS, points=1, check=satisfies(_linears_problem), structure=True)
def _(ns):
    module = ns.MultiHeadAttention(MC, MH)
    found = []
    for name in _PROJECTIONS:
        layer = getattr(module, name, None)
        bias = getattr(layer, "bias", None)
        found.append(
            [
                type(layer).__name__,
                list(getattr(getattr(layer, "weight", None), "shape", [])),
                None if bias is None else list(bias.shape),
            ]
        )
    return found


def _shapes_problem(got):
    out, weights, plain = got
    for label, value, shape in (
        ("the output", out, (MB, MT, MC)),
        ("the weights", weights, (MB, MH, MT, MT)),
        ("forward(x) without return_weights", plain, (MB, MT, MC)),
    ):
        if type(value) is not torch.Tensor:
            return f"{label} must be a tensor, got {type(value).__name__}"
        if tuple(value.shape) != shape:
            return f"{label} should have shape {shape}, got {tuple(value.shape)}"
    return None


_SHAPES = "several heads: out (3, 5, 24), weights (3, 4, 5, 5), a plain tensor without return_weights"


@suite.case("mha", _SHAPES, points=1, check=satisfies(_shapes_problem), builds_on=(_LINEARS,), guard=True)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        module = _module(ns, 1)
        out, weights = module(_XM.clone(), return_weights=True)
        return out, weights, module(_XM.clone())


def _centred_logs(w):
    logs = w.double().clamp_min(1e-300).log()
    return logs - logs.mean(-1, keepdim=True)


def _rescaled_scores(got, exp):
    """The weights are softmax(k * the right scores) for one factor k != 1."""
    if type(got) is not torch.Tensor or got.shape != exp.shape:
        return False
    g, e = _centred_logs(got), _centred_logs(exp)
    k = float((g * e).sum() / (e * e).sum())
    return abs(k - 1) > 0.05 and float((g - k * e).norm() / (k * e).norm()) < 1e-3


def _zeroed_after_softmax(got, exp):
    """Blocked keys have weight 0 but the rows no longer sum to 1: the mask zeroed the weights after the softmax."""
    if type(got) is not torch.Tensor or got.shape != exp.shape:
        return False
    blocked = exp == 0
    return (
        bool(blocked.any()) and bool((got[blocked] == 0).all()) and float((got.double().sum(-1) - 1).abs().max()) > 1e-4
    )


def _mask_inverted(got, exp):
    if type(got) is not torch.Tensor or got.shape != exp.shape:
        return False
    open_expected = exp > 0
    blocked_got = (got == 0) | torch.isnan(got)
    return bool((blocked_got == open_expected).float().mean() > 0.9)


_WEIGHT_HINTS = [
    Hint(
        lambda got, exp: type(got) is torch.Tensor and tuple(got.shape) == (MB, MT, MT),
        "return the weights of every head separately, (B, H, T, T), not their average",
        mistake="weights averaged over heads",
    ),
    Hint(
        _across_heads,
        "for each head and each query, the weights over the keys should sum to 1: the softmax must not run across heads",
        mistake="one softmax across all heads",
    ),
    Hint(
        _zeroed_after_softmax,
        "blocked keys get weight 0 but the rows no longer sum to 1: set the blocked scores to -inf before the softmax, "
        "rather than zeroing weights after it",
        mistake="mask applied after the softmax",
    ),
    Hint(
        _rescaled_scores,
        "the pattern is right but uniformly too sharp or too flat: check the number the scores are divided by "
        "(the width of the vectors whose dot product makes a score)",
        mistake="scores scaled by the wrong width",
    ),
    Hint(
        _mask_inverted,
        "the mask looks inverted: in this course True means blocked (the query may not look at that key)",
        mistake="mask inverted",
    ),
]
_PLAIN_WEIGHTS = "fixed weights, 4 heads of width 6, no mask: per-head attention weights"
_PLAIN_OUT = "fixed weights, 4 heads of width 6, no mask: output"
_CAUSAL_WEIGHTS = "fixed weights with a causal (T, T) mask: per-head attention weights"
_CAUSAL_OUT = "fixed weights with a causal (T, T) mask: output"


_UNMASKED_HINTS = [h for h in _WEIGHT_HINTS if h.mistake not in ("mask applied after the softmax", "mask inverted")]
_MASKED_HINTS = [h for h in _WEIGHT_HINTS if h.mistake != "scores scaled by the wrong width"]


@suite.case(
    "mha",
    _PLAIN_WEIGHTS,
    points=2,
    check=close(rtol=1e-4, atol=1e-5, dtype=None, hints=_UNMASKED_HINTS),
    expected=REFERENCE,
    builds_on=(_SHAPES,),
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        return _module(ns, 2)(_XM.clone(), return_weights=True)[1]


@suite.case(
    "mha",
    _PLAIN_OUT,
    points=2,
    check=close(rtol=1e-4, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=(_PLAIN_WEIGHTS,),
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        return _module(ns, 2)(_XM.clone())


@suite.case(
    "mha",
    _CAUSAL_WEIGHTS,
    points=1,
    check=close(rtol=1e-4, atol=1e-5, dtype=None, hints=_MASKED_HINTS),
    expected=REFERENCE,
    builds_on=(_PLAIN_WEIGHTS,),
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        return _module(ns, 3)(_XM.clone(), mask=_CAUSAL.clone(), return_weights=True)[1]


@suite.case(
    "mha",
    _CAUSAL_OUT,
    points=2,
    check=close(rtol=1e-4, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=(_CAUSAL_WEIGHTS, _PLAIN_OUT),
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        return _module(ns, 3)(_XM.clone(), mask=_CAUSAL.clone())


@suite.case(
    "mha",
    "a per-sequence (B, T, T) mask of causal and padding keys",
    points=2,
    check=close(rtol=1e-4, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=(_CAUSAL_OUT,),
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        return _module(ns, 4)(_XM.clone(), mask=_COMBINED.clone())


@suite.case(
    "mha",
    "a key-padding (B, 1, T) mask, with the weights",
    points=2,
    check=close(rtol=1e-4, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=(_CAUSAL_OUT,),
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        out, weights = _module(ns, 5)(_XM.clone(), mask=_PAD_MASK.clone(), return_weights=True)
    return torch.cat([out.flatten(), weights.flatten()])


@suite.case(
    "mha",
    "2 heads of width 12 and 6 heads of width 4 on the same input",
    points=1,
    check=close(rtol=1e-4, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=(_CAUSAL_OUT,),
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        return torch.stack(
            [_module(ns, 6, heads=2)(_XM.clone()), _module(ns, 6, heads=6)(_XM.clone(), mask=_CAUSAL.clone())]
        )


def _twin(seed, heads):
    """nn.MultiheadAttention holding the values set_parameters(module, seed) gives a module's four projections."""
    linear = nn.ModuleDict({name: nn.Linear(MC, MC) for name in _PROJECTIONS})
    set_parameters(linear, seed)
    twin = nn.MultiheadAttention(MC, heads, batch_first=True)
    with torch.no_grad():
        twin.in_proj_weight.copy_(torch.cat([linear[name].weight for name in _PROJECTIONS[:3]]))
        twin.in_proj_bias.copy_(torch.cat([linear[name].bias for name in _PROJECTIONS[:3]]))
        twin.out_proj.weight.copy_(linear["out_proj"].weight)
        twin.out_proj.bias.copy_(linear["out_proj"].bias)
    return twin.eval()


def _as_torch_computes(seed, weights, **kwargs):
    """A check: the output (and the weights) equal nn.MultiheadAttention's with the weights of ``seed``."""
    compare = close(rtol=1e-4, atol=1e-5, dtype=None)

    def check(got, expected, reveal):
        with torch.no_grad():
            their_out, their_weights = _twin(seed, MH)(
                _XM, _XM, _XM, need_weights=True, average_attn_weights=False, **kwargs
            )
        if weights and not (isinstance(got, (tuple, list)) and len(got) == 2):
            return Verdict(False, "forward(x, return_weights=True) must return the pair (out, weights)")
        pairs = [("output", got[0] if weights else got, their_out)]
        if weights:
            pairs.append(("attention weights", got[1], their_weights))
        for label, mine, theirs in pairs:
            verdict = compare(mine, theirs, reveal)
            if not verdict.passed:
                return Verdict(
                    False, f"your {label} and nn.MultiheadAttention's (same weights) do not agree: {verdict.message}"
                )
        return Verdict(True)

    return check


@suite.case(
    "mha",
    "agrees with nn.MultiheadAttention (copied weights, batch_first), no mask",
    points=2,
    check=_as_torch_computes(7, weights=False),
    builds_on=(_PLAIN_OUT,),
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        return _module(ns, 7)(_XM.clone())


@suite.case(
    "mha",
    "agrees with nn.MultiheadAttention under a causal attn_mask, weights per head included",
    points=2,
    check=_as_torch_computes(8, weights=True, attn_mask=_CAUSAL),
    builds_on=(_CAUSAL_OUT,),
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        out, weights = _module(ns, 8)(_XM.clone(), mask=_CAUSAL.clone(), return_weights=True)
    return [out, weights]


@suite.case(
    "mha",
    "agrees with nn.MultiheadAttention given the (B, T, T) mask as (B*H, T, T)",
    points=1,
    check=_as_torch_computes(9, weights=False, attn_mask=_COMBINED.repeat_interleave(MH, 0)),
    builds_on=(_CAUSAL_OUT,),
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        return _module(ns, 9)(_XM.clone(), mask=_COMBINED.clone())


def _same_shapes(got, shape):
    return (
        isinstance(got, (tuple, list))
        and len(got) == 2
        and all(type(t) is torch.Tensor and tuple(t.shape) == shape for t in got)
    )


def _future_ignored(got):
    if not _same_shapes(got, (MB, MT, MC)):
        return f"forward should return a tensor of shape {(MB, MT, MC)} for each input"
    a, b = got
    early, late = float((a[:, :3] - b[:, :3]).abs().max()), float((a[:, 3:] - b[:, 3:]).abs().max())
    if not early <= 1e-6:
        return f"changing positions 3 and 4 changed the outputs at positions 0 to 2 (by up to {early:.3g})"
    if not late > 1e-6:
        return "changing positions 3 and 4 did not change their own outputs"
    return None


@suite.case(
    "mha",
    "causal mask with 4 heads: later tokens never change earlier outputs",
    points=1,
    check=satisfies(_future_ignored),
    builds_on=(_SHAPES,),
    guard=True,
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        module = _module(ns, 10)
        changed = _XM.clone()
        changed[:, 3:] = randn(MB, MT - 3, MC, seed=62)
        return module(_XM.clone(), mask=_CAUSAL.clone()), module(changed, mask=_CAUSAL.clone())


def _no_bias_problem(got):
    with_bias = [name for name, bias in zip(_PROJECTIONS, got) if bias != "NoneType"]
    if with_bias:
        return f"with bias=False, {with_bias[0]} still has a bias: pass bias=bias to every nn.Linear"
    return None


@suite.case(
    "mha", "bias=False: the four projections have no bias", points=1, check=satisfies(_no_bias_problem), guard=True
)
def _(ns):
    module = ns.MultiHeadAttention(MC, MH, bias=False)
    return [type(getattr(getattr(module, name, None), "bias", None)).__name__ for name in _PROJECTIONS]


@suite.case(
    "mha",
    "bias=False with fixed weights and a causal mask",
    points=1,
    check=close(rtol=1e-4, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=(_CAUSAL_OUT,),
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        return _module(ns, 11, bias=False)(_XM.clone(), mask=_CAUSAL.clone())


@suite.case(
    "mha",
    "dropout=0.5 does nothing in eval mode",
    points=1,
    check=close(rtol=1e-4, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=(_CAUSAL_OUT,),
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        return _module(ns, 12, dropout=0.5)(_XM.clone(), mask=_CAUSAL.clone())


@suite.case(
    "mha",
    "the default dropout is 0: training mode gives the eval output",
    points=1,
    check=close(rtol=1e-4, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=(_PLAIN_OUT,),
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        return _module(ns, 15).train()(_XM.clone())


def _random_in_training(got):
    if not _same_shapes(got, (MB, MT, MC)):
        return f"forward should return a tensor of shape {(MB, MT, MC)} for each call"
    if not float((got[0] - got[1]).abs().max()) > 1e-6:
        return "with dropout=0.5 in training mode, two calls on the same input gave the same output: dropout is not applied"
    return None


_RANDOM = "dropout=0.5 in training mode makes the output random"


@suite.case("mha", _RANDOM, points=1, check=satisfies(_random_in_training), builds_on=(_SHAPES,))
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        module = _module(ns, 13, dropout=0.5).train()
        return module(_XM.clone()), module(_XM.clone())


@suite.case(
    "mha",
    "in training mode the weights returned are those before dropout",
    points=1,
    check=close(
        rtol=1e-4,
        atol=1e-5,
        dtype=None,
        hints=[
            Hint(
                lambda got, exp: (
                    type(got) is torch.Tensor
                    and got.shape == exp.shape
                    and bool(((got == 0) & (exp > 0)).any())
                    and float((got.double().sum(-1) - 1).abs().max()) > 1e-4
                ),
                "some weights you return are 0 where the softmax is not: return_weights gives the probabilities before dropout",
                mistake="weights returned after dropout",
            ),
        ],
    ),
    expected=REFERENCE,
    builds_on=(_PLAIN_WEIGHTS,),
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        return _module(ns, 16, dropout=0.5).train()(_XM.clone(), return_weights=True)[1]


def _output_dropped(got):
    zeros = float((got == 0).double().mean()) if type(got) is torch.Tensor and got.numel() else 0.0
    if not 0.3 <= zeros <= 0.7:
        return f"with dropout=0.5 in training mode, {zeros:.0%} of the output numbers are 0: dropout applies to the output of out_proj as well"
    return None


@suite.case(
    "mha",
    "dropout=0.5 in training mode also drops outputs of out_proj",
    points=1,
    check=satisfies(
        _output_dropped,
        hints=[
            Hint(
                lambda got, exp: type(got) is torch.Tensor and not bool((got == 0).any()),
                "no output number was dropped: apply dropout after out_proj too",
                mistake="no dropout after out_proj",
            ),
        ],
    ),
    builds_on=(_RANDOM,),
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        return _module(ns, 17, dropout=0.5).train()(_XM.clone())


def _only_output_dropped(got):
    """The training output is the eval output with numbers dropped and the rest doubled (p = 0.5)."""
    train, plain = got
    kept = train != 0
    return bool(kept.any()) and torch.allclose(train[kept].double(), 2 * plain[kept].double(), rtol=1e-4, atol=1e-5)


def _weights_dropped(got):
    if not _same_shapes(got, (MB, MT, MC)):
        return f"forward should return a tensor of shape {(MB, MT, MC)} in training and in eval mode"
    if _only_output_dropped(got):
        return "in training mode your output is the eval output with some numbers dropped and the rest doubled: the attention weights are not dropped"
    return None


@suite.case(
    "mha",
    "dropout=0.5 in training mode also drops attention weights",
    points=1,
    check=satisfies(
        _weights_dropped,
        hints=[
            Hint(
                lambda got, exp: _same_shapes(got, (MB, MT, MC)) and _only_output_dropped(got),
                "dropout applies to the attention weights after the softmax as well as to the output of out_proj",
                mistake="no dropout on the attention weights",
            ),
        ],
    ),
    builds_on=(_RANDOM,),
    guard=True,
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        module = _module(ns, 18, dropout=0.5)
        plain = module.eval()(_XM.clone())
        return module.train()(_XM.clone()), plain


@suite.case(
    "mha",
    "ValueError for 24 features in 5 heads and for a float mask",
    points=1,
    check=satisfies(_value_errors(["MultiHeadAttention(24, 5)", "a float mask"])),
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        first = catch(ns.MultiHeadAttention, MC, 5)
        module = _module(ns, 14)
        second = catch(module, _XM.clone(), mask=_CAUSAL.float())
    return [first, second]


@suite.case(
    "mha",
    "ValueError for num_heads=0, for an x of width 22 and for a 1-D mask",
    points=1,
    check=satisfies(
        _value_errors(["MultiHeadAttention(24, 0)", "x (3, 5, 22) for embed_dim=24", "a mask of shape (5,)"])
    ),
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        first = catch(ns.MultiHeadAttention, MC, 0)
        module = _module(ns, 14)
        second = catch(module, randn(MB, MT, 22, seed=62))
        third = catch(module, _XM.clone(), mask=_PADDED[1].clone())  # (T,): a row of padding_mask without its axes
    return [first, second, third]
