"""Hidden tests of stage 06_blocks (run only when grading; never shipped to students).

Expected values marked REFERENCE are the reference solution's outputs on the same
probe, saved at build time. Sizes all differ (B=3, T=5, C=24, H=4, D=6, ff_dim=40;
check-stage's rule "probe sizes apart" checks every attention the probes run, ``SIZES_APART``).
Modules get their weights from ``set_parameters`` (by parameter name). Probes return
raw outputs (tensors, numbers, strings); every comparison happens in the checks, in
the grading process. The clause table of each question is ``clauses.md`` beside this file.

The ``block`` tests never depend on the student's ``LayerNorm`` and ``FeedForward``
(questions of their own), and this file holds no implementation of either: while the
student's ``TransformerBlock`` is built, the notebook's names ``LayerNorm`` and
``FeedForward`` stand for ``nn.LayerNorm`` and a placeholder that only writes down the
arguments it was given; the block's ``ff`` is then replaced by PyTorch's own layers
(``nn.Linear``, ``nn.GELU`` or ``nn.ReLU``, ``nn.Linear``, ``nn.Dropout``) with the
arguments the block gave, and the names are put back afterwards. ``MultiHeadAttention``
is given code in this notebook.

Tolerances (relative + absolute, per test):
- layernorm: rtol 1e-5, atol 1e-5 on normalised values of order 1 (mean and variance
  computed in any order, torch.var(unbiased=False), var_mean or rsqrt agree to about
  1e-6); gradients rtol 1e-4, atol 1e-5. The mistakes are off by 1e-2 or more (the
  unbiased variance by a factor sqrt(23/24), eps outside the root visibly at eps=0.5,
  another default eps by a factor of about 3 on the input of spread 1e-3).
- feedforward: rtol 1e-5, atol 1e-5 for outputs of order 5, the GELU grid test
  included: float32 rounding of a correct exact GELU reaches 5e-7 on the grid, while
  the tanh approximation is off by up to 5e-4 there (about 1e-4 to 4e-4), twenty
  times the tolerance. Dropout properties: 1e-6 absolute.
- block against the reference and against nn.TransformerEncoderLayer with copied
  weights: rtol 1e-4, atol 1e-5 (attention with peaked softmaxes inside; PyTorch's
  kernels sum in another order).
- properties (causality, the untouched residual stream, dropout): 1e-6 absolute.
"""

import math
from collections import OrderedDict

import torch
import torch.nn as nn

from autograder.kit import REFERENCE, Hint, Suite, catch, close, each_raised, raises, randn, satisfies, set_parameters

from public import _placeholders

suite = Suite(public=False)

B, T, C, H, FF = 3, 5, 24, 4, 40

# check-stage's rule "probe sizes apart": every attention the block probes run keeps B, T, C, H
# and D all different, so that no transpose or bare reshape passes by luck
SIZES_APART = {
    "MultiHeadAttention": lambda module, x, *args, **kwargs: (
        *x.shape,
        module.num_heads,
        x.shape[-1] // module.num_heads,
    ),
}


def _same_shape(got, exp):
    return type(got) is torch.Tensor and type(exp) is torch.Tensor and got.shape == exp.shape


def _tensors_agree(what, rtol, atol):
    def test(got):
        mine, theirs = got
        verdict = close(dtype=None, rtol=rtol, atol=atol)(mine, theirs, False)
        return None if verdict.passed else f"{what}: {verdict.message}"

    return satisfies(test)


# ---------------------------------------------------------------- layernorm

_XL = randn(B, T, C, seed=71) * 3 + 1
_XS = randn(B, T, C, seed=77) * 1e-3  # variance about 1e-6, well below the default eps


def _unbiased(got, exp):
    """Every value shrunk by sqrt(23/24): the variance divided by C - 1 (eps is negligible here)."""
    return _same_shape(got, exp) and torch.allclose(got.double(), exp.double() * math.sqrt(23 / 24), atol=1e-4, rtol=0)


def _eps_outside(got, exp):
    """(x - mean) / (sqrt(var) + eps) with eps=0.5, recovered from the expected values alone.

    With weight ones and bias zeros the expected y = c / sqrt(v + eps) has mean(y^2) =
    v / (v + eps) at each position, which gives v, and from it the other formula.
    """
    if not _same_shape(got, exp):
        return False
    y = exp.double()
    ratio = (y * y).mean(-1, keepdim=True)
    var = 0.5 * ratio / (1 - ratio)
    return torch.allclose(got.double(), y * torch.sqrt(var + 0.5) / (torch.sqrt(var) + 0.5), atol=1e-4, rtol=0)


_UNBIASED_HINT = Hint(
    _unbiased,
    "your values are a little too small in size: check what your variance divides by",
    mistake="unbiased variance",
)
_EPS_HINT = Hint(_eps_outside, "check where eps enters the formula", mistake="eps outside the square root")


def _parameters_problem(got):
    names, kinds, weight, bias = got
    if names != ["bias", "weight"]:
        return f"the module's parameters must be exactly `weight` and `bias` (nn.Parameter), found {names}"
    if kinds != ["Parameter", "Parameter"]:
        return f"weight and bias must be nn.Parameter, so that the optimiser trains them; they are {kinds}"
    for label, value, fill in (("weight", weight, 1.0), ("bias", bias, 0.0)):
        if type(value) is not torch.Tensor or list(value.shape) != [C]:
            return f"{label} must have the shape (dim,) = ({C},), got {list(getattr(value, 'shape', []))}"
        if not bool((value == fill).all()):
            return f"a fresh {label} must start at {'ones' if fill else 'zeros'}"
    return None


@suite.case(
    "layernorm",
    "parameters named weight and bias, trainable, starting at ones and zeros",
    points=1,
    check=satisfies(_parameters_problem),
    structure=True,
)
def _(ns):
    ln = ns.LayerNorm(C)
    names = sorted(name for name, _ in ln.named_parameters())
    return (
        names,
        [type(ln.weight).__name__, type(ln.bias).__name__],
        ln.weight.detach().clone(),
        ln.bias.detach().clone(),
    )


@suite.case(
    "layernorm",
    "fresh module: every position normalised over its 24 features",
    points=2,
    check=close(dtype=None, rtol=1e-5, atol=1e-5, hints=[_UNBIASED_HINT]),
    expected=REFERENCE,
    builds_on=("[1, 2, 3, 4] becomes mean 0, variance 1 (weight ones, bias zeros)",),
)
def _(ns):
    with torch.no_grad():
        return ns.LayerNorm(C)(_XL.clone())


@suite.case(
    "layernorm",
    "eps=0.5 on a fresh module",
    points=1,
    check=close(dtype=None, rtol=1e-5, atol=1e-5, hints=[_EPS_HINT]),
    expected=REFERENCE,
    builds_on=("fresh module: every position normalised over its 24 features",),
)
def _(ns):
    with torch.no_grad():
        return ns.LayerNorm(C, eps=0.5)(_XL.clone())


@suite.case(
    "layernorm",
    "the default eps on an input of spread 1e-3 (variance below eps)",
    points=1,
    check=close(dtype=None, rtol=1e-5, atol=1e-5),
    expected=REFERENCE,
    builds_on=("fresh module: every position normalised over its 24 features",),
)
def _(ns):
    with torch.no_grad():
        return ns.LayerNorm(C)(_XS.clone())


@suite.case(
    "layernorm",
    "fixed weight and bias on a 3 x 5 x 24 input with mean 1 and spread 3",
    points=2,
    check=close(dtype=None, rtol=1e-5, atol=1e-5),
    expected=REFERENCE,
    builds_on=("fresh module: every position normalised over its 24 features",),
)
def _(ns):
    ln = ns.LayerNorm(C)
    set_parameters(ln, 1)
    with torch.no_grad():
        return ln(_XL.clone())


@suite.case(
    "layernorm",
    "2-D (7, 24) and 4-D (2, 3, 5, 24) inputs, last axis only",
    points=1,
    check=close(dtype=None, rtol=1e-5, atol=1e-5),
    expected=REFERENCE,
    builds_on=("fixed weight and bias on a 3 x 5 x 24 input with mean 1 and spread 3",),
)
def _(ns):
    ln = ns.LayerNorm(C)
    set_parameters(ln, 2)
    with torch.no_grad():
        flat = ln(randn(7, C, seed=72) * 2)
        deep = ln(randn(2, 3, 5, C, seed=73) + 2)
    return torch.cat([flat.flatten(), deep.flatten()])


@suite.case(
    "layernorm",
    "gradients with respect to the input, weight and bias",
    points=1,
    check=close(dtype=None, rtol=1e-4, atol=1e-5),
    expected=REFERENCE,
    builds_on=("fixed weight and bias on a 3 x 5 x 24 input with mean 1 and spread 3",),
)
def _(ns):
    ln = ns.LayerNorm(C)
    set_parameters(ln, 3)
    x = _XL.clone().requires_grad_(True)
    (ln(x) * randn(B, T, C, seed=74)).sum().backward()
    pairs = [(x, x.grad), (ln.weight, ln.weight.grad), (ln.bias, ln.bias.grad)]
    return torch.cat(
        [(grad if grad is not None else torch.full_like(value, math.nan)).flatten() for value, grad in pairs]
    )


@suite.case(
    "layernorm",
    "agrees with nn.LayerNorm(24, eps=1e-3) given the same weight and bias",
    points=1,
    check=_tensors_agree("your LayerNorm and nn.LayerNorm (same parameters) do not agree", 1e-5, 1e-5),
    builds_on=("fixed weight and bias on a 3 x 5 x 24 input with mean 1 and spread 3",),
)
def _(ns):
    mine, theirs = ns.LayerNorm(C, eps=1e-3), nn.LayerNorm(C, eps=1e-3)
    set_parameters(theirs, 4)
    with torch.no_grad():
        mine.weight.copy_(theirs.weight)
        mine.bias.copy_(theirs.bias)
        x = randn(B, T, C, seed=75) * 0.1
        return mine(x), theirs(x)


@suite.case(
    "layernorm", "an input whose last axis is not dim long raises ValueError", points=1, check=raises("ValueError")
)
def _(ns):
    return catch(ns.LayerNorm(C), randn(B, T, C + 2, seed=76))


@suite.case(
    "layernorm",
    "dim=-3 and eps=-0.1 are refused with ValueError",
    points=1,
    check=each_raised(["LayerNorm(-3)", "LayerNorm(24, eps=-0.1)"]),
)
def _(ns):
    return [catch(ns.LayerNorm, -3)["raised"], catch(ns.LayerNorm, C, eps=-0.1)["raised"]]


# ---------------------------------------------------------------- feedforward

_XF = randn(B, T, C, seed=81)
_GRID = torch.linspace(-4.0, 4.0, 33)


def _grid_near(approx):
    def when(got, exp):
        return _same_shape(got, exp) and torch.allclose(got.double().flatten(), approx, atol=2e-6, rtol=0)

    return when


_GRID64 = _GRID.double()
_GRID_TANH = 0.5 * _GRID64 * (1 + torch.tanh(math.sqrt(2 / math.pi) * (_GRID64 + 0.044715 * _GRID64**3)))
_GRID_SIGMOID = _GRID64 * torch.sigmoid(1.702 * _GRID64)


def _feedforward(ns, seed, **kwargs):
    ff = ns.FeedForward(C, FF, **kwargs)
    set_parameters(ff, seed, scale=0.3)
    return ff.eval()


def _structure_problem(got):
    want = [["Linear", C, FF, [FF]], ["Linear", FF, C, [C]]]
    for label, part, right in zip(("fc1", "fc2"), got, want):
        if part != right:
            return f"{label} must be nn.Linear with a bias, {right[1]} features in and {right[2]} out; found {part}"
    return None


@suite.case(
    "feedforward",
    "fc1 is nn.Linear(24, 40) and fc2 nn.Linear(40, 24), both with a bias",
    points=1,
    check=satisfies(_structure_problem),
    structure=True,
)
def _(ns):
    ff = ns.FeedForward(C, FF)
    parts = []
    for name in ("fc1", "fc2"):
        layer = getattr(ff, name, None)
        bias = getattr(layer, "bias", None)
        parts.append(
            [
                type(layer).__name__,
                getattr(layer, "in_features", None),
                getattr(layer, "out_features", None),
                list(bias.shape) if bias is not None else None,
            ]
        )
    return parts


@suite.case(
    "feedforward",
    "fixed weights, relu, 24 -> 40 -> 24 on a 3 x 5 input",
    points=2,
    check=close(dtype=None, rtol=1e-5, atol=1e-5),
    expected=REFERENCE,
    builds_on=("relu on a small hand-set network (2 -> 3 -> 2)",),
)
def _(ns):
    with torch.no_grad():
        return _feedforward(ns, 2, activation="relu")(_XF.clone())


@suite.case(
    "feedforward",
    "GELU on 33 points from -4 to 4 through a 1 -> 1 -> 1 network",
    points=2,
    check=close(
        dtype=None,
        rtol=1e-5,
        atol=1e-5,
        hints=[
            Hint(
                _grid_near(_GRID_TANH),
                "this is the tanh approximation of GELU; the exact form x * Phi(x) is asked for",
                mistake="tanh approximation of GELU",
            ),
            Hint(
                _grid_near(_GRID_SIGMOID),
                "this is the sigmoid approximation of GELU; the exact form x * Phi(x) is asked for",
                mistake="sigmoid approximation of GELU",
            ),
        ],
    ),
    expected=REFERENCE,
    builds_on=("gelu (the default) is the exact x * Phi(x), through a 1 -> 1 -> 1 network",),
)
def _(ns):
    ff = ns.FeedForward(1, 1, activation="gelu")
    with torch.no_grad():
        ff.fc1.weight.fill_(1.0)
        ff.fc1.bias.zero_()
        ff.fc2.weight.fill_(1.0)
        ff.fc2.bias.zero_()
        return ff.eval()(_GRID.view(-1, 1).clone())


@suite.case(
    "feedforward",
    "fixed weights, gelu, 24 -> 40 -> 24 on a 3 x 5 input",
    points=2,
    check=close(dtype=None, rtol=1e-5, atol=1e-5),
    expected=REFERENCE,
    builds_on=("gelu (the default) is the exact x * Phi(x), through a 1 -> 1 -> 1 network",),
)
def _(ns):
    with torch.no_grad():
        return _feedforward(ns, 1, activation="gelu")(_XF.clone())


@suite.case(
    "feedforward",
    "without an activation argument the network uses gelu",
    points=1,
    check=close(dtype=None, rtol=1e-5, atol=1e-5),
    expected=REFERENCE,
    builds_on=("fixed weights, gelu, 24 -> 40 -> 24 on a 3 x 5 input",),
)
def _(ns):
    with torch.no_grad():
        return _feedforward(ns, 3)(_XF.clone())


@suite.case(
    "feedforward",
    "2-D (7, 24) and 4-D (2, 3, 5, 24) inputs",
    points=1,
    check=close(dtype=None, rtol=1e-5, atol=1e-5),
    expected=REFERENCE,
    builds_on=("fixed weights, gelu, 24 -> 40 -> 24 on a 3 x 5 input",),
)
def _(ns):
    ff = _feedforward(ns, 4, activation="gelu")
    with torch.no_grad():
        return torch.cat([ff(randn(7, C, seed=82)).flatten(), ff(randn(2, 3, 5, C, seed=83)).flatten()])


def _steady(what):
    """A check on outputs that must all equal the first (within 1e-6)."""

    def test(got):
        first, *others = got
        for other in others:
            verdict = close(dtype=None, rtol=0.0, atol=1e-6)(other, first, False)
            if not verdict.passed:
                return f"{what}: {verdict.message}"
        return None

    return satisfies(test)


def _quiet_dropout(module):
    """Set p=0 on every nn.Dropout inside ``module``."""
    for inner in module.modules():
        if getattr(inner, "p", None) is not None:  # an nn.Dropout
            inner.p = 0.0


@suite.case(
    "feedforward",
    "dropout=0.5 does nothing in eval mode (the output equals the same weights without dropout)",
    points=1,
    check=_steady(
        "with dropout=0.5 in eval mode the output must not change from call to call, and must equal that of the same weights without dropout"
    ),
    guard=True,  # a module that does nothing passes it: it counts only when a test of the values passes
)
def _(ns):
    ff, plain = _feedforward(ns, 5, activation="relu", dropout=0.5), _feedforward(ns, 5, activation="relu")
    with torch.no_grad():
        return [plain(_XF.clone()), ff(_XF.clone()), ff(_XF.clone())]


def _random_in_training(got):
    first, second = got
    if not _same_shape(first, second):
        return "in training mode the network must return tensors of the input's shape"
    if float((first - second).abs().max()) <= 1e-6:
        return "with dropout=0.5 in training mode, two calls on the same input gave the same output: dropout is not applied"
    return None


@suite.case(
    "feedforward",
    "dropout=0.5 in training mode makes the output random",
    points=1,
    check=satisfies(_random_in_training),
)
def _(ns):
    ff = _feedforward(ns, 6, dropout=0.5).train()
    with torch.no_grad():
        return ff(_XF.clone()), ff(_XF.clone())


@suite.case(
    "feedforward",
    "the default dropout is 0: a fresh network in training mode is not random",
    points=1,
    check=_steady(
        "without a dropout argument, two calls in training mode must give the same output (the default dropout is 0.0)"
    ),
    guard=True,  # a module that does nothing passes it: it counts only when a test of the values passes
)
def _(ns):
    ff = _feedforward(ns, 7).train()
    with torch.no_grad():
        return [ff(_XF.clone()), ff(_XF.clone())]


@suite.case("feedforward", "activation='tanh' is refused with ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.FeedForward, C, FF, activation="tanh")


# ---------------------------------------------------------------- block
# public.py's placeholders stand in for LayerNorm and FeedForward while the block is built,
# refusing an activation these tests cannot build PyTorch's layers for.

_ACTIVATIONS = {"gelu": nn.GELU, "relu": nn.ReLU}


def _torch_feedforward(embed_dim, ff_dim, activation, dropout):
    """PyTorch's layers in a row, named as the course's feed-forward network names them."""
    act = _ACTIVATIONS[activation]()
    return nn.Sequential(
        OrderedDict(
            fc1=nn.Linear(embed_dim, ff_dim), act=act, fc2=nn.Linear(ff_dim, embed_dim), drop=nn.Dropout(dropout)
        )
    )


def _block(ns, seed, attention_dropout=None, **kwargs):
    """The student's block with nn.LayerNorm and PyTorch's feed-forward layers (built with the block's arguments;
    the attention with ``attention_dropout`` when it is given)."""
    with _placeholders(ns, _ACTIVATIONS, attention_dropout) as calls:
        block = ns.TransformerBlock(C, H, FF, **kwargs)
    for arguments in calls["FeedForward"][-1:]:
        block.ff = _torch_feedforward(*arguments)
    set_parameters(block, seed)
    return block.eval()


def _built_parts(ns, *args, **kwargs):
    """What a block built with the placeholders gave its parts."""
    with _placeholders(ns, _ACTIVATIONS) as calls:
        block = ns.TransformerBlock(*args, **kwargs)
    return [[type(block.attn).__name__, calls["MultiHeadAttention"]], calls["LayerNorm"], calls["FeedForward"]]


def _parts_problem(dropout, activation):
    def test(got):
        attn, norms, feed_forwards = got
        kind, made = attn
        if kind != "MultiHeadAttention" or len(made) != 1 or made[0][:2] != [C, H]:
            return "attn must be the given MultiHeadAttention(embed_dim, num_heads, ...)"
        if made[0][2] != dropout:
            return f"attn must get the block's dropout ({dropout}), got {made[0][2]}"
        if norms != [[C], [C]]:
            return (
                f"ln1 and ln2 must be two LayerNorm(embed_dim); LayerNorm was called {len(norms)} times, with {norms}"
            )
        if len(feed_forwards) != 1:
            return f"ff must be one FeedForward(embed_dim, ff_dim, activation, dropout); FeedForward was called {len(feed_forwards)} times"
        dim, hidden, act, drop = feed_forwards[0]
        if [dim, hidden] != [C, FF]:
            return f"FeedForward must get embed_dim and ff_dim ({C} and {FF}), got {dim} and {hidden}"
        if act != activation:
            return f"FeedForward must get the block's activation ({activation!r}), got {act!r}"
        if drop != dropout:
            return f"FeedForward must get the block's dropout ({dropout}), got {drop}"
        return None

    return satisfies(test)


@suite.case(
    "block",
    "the parts get the block's arguments: dropout=0.25, activation='relu', post-norm",
    points=1,
    check=_parts_problem(0.25, "relu"),
    structure=True,
)
def _(ns):
    return _built_parts(ns, C, H, FF, dropout=0.25, activation="relu", norm_first=False)


@suite.case(
    "block",
    "with no dropout or activation argument the parts get dropout 0.0 and 'gelu'",
    points=1,
    check=_parts_problem(0.0, "gelu"),
    structure=True,
)
def _(ns):
    return _built_parts(ns, C, H, FF)


@suite.case(
    "block",
    "num_heads=5 (not a divisor of 24) and activation='swish' are refused with ValueError",
    points=1,
    check=each_raised(["TransformerBlock(24, 5, 40)", "TransformerBlock(24, 4, 40, activation='swish')"]),
)
def _(ns):
    with _placeholders(ns, _ACTIVATIONS):
        return [
            catch(ns.TransformerBlock, C, 5, FF)["raised"],
            catch(ns.TransformerBlock, C, H, FF, activation="swish")["raised"],
        ]


_XB = randn(B, T, C, seed=91)
_CAUSAL = torch.ones(T, T, dtype=torch.bool).triu(1)
_PAD_MASK = torch.tensor([[0, 0, 0, 0, 0], [0, 0, 0, 1, 1], [0, 0, 0, 0, 1]], dtype=torch.bool)[:, None, :]  # (B, 1, T)
_COMBINED = _CAUSAL[None] | _PAD_MASK  # (B, T, T)
_PRE = "pre-norm (the default order) equals nn.TransformerEncoderLayer(norm_first=True), causal mask"
_POST = "post-norm (norm_first=False) equals nn.TransformerEncoderLayer, causal mask"


@suite.case(
    "block",
    "pre-norm, fixed weights, causal (T, T) mask",
    points=2,
    check=close(dtype=None, rtol=1e-4, atol=1e-5),
    expected=REFERENCE,
    builds_on=(_PRE,),
)
def _(ns):
    with torch.no_grad():
        return _block(ns, 1, norm_first=True)(_XB.clone(), mask=_CAUSAL.clone())


@suite.case(
    "block",
    "post-norm, fixed weights, per-sequence (B, T, T) mask",
    points=2,
    check=close(dtype=None, rtol=1e-4, atol=1e-5),
    expected=REFERENCE,
    builds_on=(_POST,),
)
def _(ns):
    with torch.no_grad():
        return _block(ns, 2, norm_first=False)(_XB.clone(), mask=_COMBINED.clone())


@suite.case(
    "block",
    "pre-norm with relu and a key-padding (B, 1, T) mask",
    points=1,
    check=close(dtype=None, rtol=1e-4, atol=1e-5),
    expected=REFERENCE,
    builds_on=(_PRE, "the parts get the block's arguments: dropout=0.25, activation='relu', post-norm"),
)
def _(ns):
    with torch.no_grad():
        return _block(ns, 3, norm_first=True, activation="relu")(_XB.clone(), mask=_PAD_MASK.clone())


def _orders_swapped(got, exp):
    return (
        _same_shape(got, exp)
        and torch.allclose(got[0].double(), exp[1].double(), atol=1e-4, rtol=0)
        and torch.allclose(got[1].double(), exp[0].double(), atol=1e-4, rtol=0)
    )


@suite.case(
    "block",
    "both orders on one input without a mask: [norm_first=True, norm_first=False]",
    points=2,
    check=close(
        dtype=None,
        rtol=1e-4,
        atol=1e-5,
        hints=[
            Hint(
                _orders_swapped,
                "the two orders look exchanged: which one normalises the input of each sublayer?",
                mistake="pre-norm and post-norm swapped",
            ),
        ],
    ),
    expected=REFERENCE,
    builds_on=(_PRE, _POST),
)
def _(ns):
    with torch.no_grad():
        return torch.stack([_block(ns, 4, norm_first=True)(_XB.clone()), _block(ns, 4, norm_first=False)(_XB.clone())])


@suite.case(
    "block",
    "the default block (no norm_first argument) is pre-norm",
    points=1,
    check=close(dtype=None, rtol=1e-4, atol=1e-5),
    expected=REFERENCE,
    builds_on=(_PRE,),
)
def _(ns):
    with torch.no_grad():
        return _block(ns, 5)(_XB.clone(), mask=_CAUSAL.clone())


def _residual_untouched(got):
    x, out = got
    if not _same_shape(out, x):
        return (
            f"expected a tensor of shape {tuple(x.shape)}, got {type(out).__name__} {tuple(getattr(out, 'shape', ()))}"
        )
    moved = (out.double() - x.double()).abs().max().item()
    if not moved <= 1e-6:
        return (
            f"with both sublayers silenced (attn.out_proj and ff.fc2 all zeros) a pre-norm block adds nothing, "
            f"so it must return x itself, but yours moved it by up to {moved:.3g}: in pre-norm each sublayer's "
            "output is added to the unnormalised x, and nothing else changes x"
        )
    return None


@suite.case(
    "block",
    "pre-norm with both sublayers silenced returns its input (the residual stream is never normalised)",
    points=1,
    check=satisfies(_residual_untouched),
    guard=True,  # a module that does nothing passes it: it counts only when a test of the values passes
)
def _(ns):
    block = _block(ns, 10, norm_first=True)
    with torch.no_grad():
        for layer in (block.attn.out_proj, block.ff.fc2):
            layer.weight.zero_()
            if layer.bias is not None:
                layer.bias.zero_()
        return _XB.clone(), block(_XB.clone(), mask=_CAUSAL.clone())


@suite.case(
    "block",
    "dropout=0.3 in eval mode changes nothing (the same output as with every dropout at 0)",
    points=1,
    check=_steady(
        "with dropout=0.3 in eval mode the block's output must not change from call to call, "
        "and must equal its output with every nn.Dropout set to p=0"
    ),
    guard=True,  # a module that does nothing passes it: it counts only when a test of the values passes
)
def _(ns):
    block = _block(ns, 6, dropout=0.3, norm_first=False)
    with torch.no_grad():
        first, second = block(_XB.clone(), mask=_CAUSAL.clone()), block(_XB.clone(), mask=_CAUSAL.clone())
        _quiet_dropout(block)
        return [block(_XB.clone(), mask=_CAUSAL.clone()), first, second]


@suite.case(
    "block",
    "the block adds no dropout of its own (training mode, the parts' dropout set to 0)",
    points=1,
    check=_steady(
        "with the dropout of attn and ff set to p=0, your block in training mode still changed its output "
        "from call to call: the block's dropout belongs to its parts, the block adds none of its own"
    ),
    guard=True,  # a module that does nothing passes it: it counts only when a test of the values passes
)
def _(ns):
    block = _block(ns, 11, attention_dropout=0.0, dropout=0.5)
    _quiet_dropout(block.ff)
    block.train()
    with torch.no_grad():
        return [block(_XB.clone(), mask=_CAUSAL.clone()), block(_XB.clone(), mask=_CAUSAL.clone())]


def _torch_layer(block, norm_first, activation):
    """An nn.TransformerEncoderLayer holding the block's weights."""
    layer = nn.TransformerEncoderLayer(
        C, H, dim_feedforward=FF, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first
    )
    a = block.attn
    state = {
        "self_attn.in_proj_weight": torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight]),
        "self_attn.in_proj_bias": torch.cat([a.q_proj.bias, a.k_proj.bias, a.v_proj.bias]),
        "self_attn.out_proj.weight": a.out_proj.weight,
        "self_attn.out_proj.bias": a.out_proj.bias,
        "linear1.weight": block.ff.fc1.weight,
        "linear1.bias": block.ff.fc1.bias,
        "linear2.weight": block.ff.fc2.weight,
        "linear2.bias": block.ff.fc2.bias,
        "norm1.weight": block.ln1.weight,
        "norm1.bias": block.ln1.bias,
        "norm2.weight": block.ln2.weight,
        "norm2.bias": block.ln2.bias,
    }
    layer.load_state_dict({key: value.detach().clone() for key, value in state.items()})
    return layer.eval()


_AGREES = "your block and nn.TransformerEncoderLayer (same weights) do not agree"


@suite.case(
    "block",
    "agrees with nn.TransformerEncoderLayer(norm_first=True, gelu) under a causal mask",
    points=2,
    check=_tensors_agree(_AGREES, 1e-4, 1e-5),
    builds_on=(_PRE,),
)
def _(ns):
    block = _block(ns, 7, norm_first=True, activation="gelu")
    layer = _torch_layer(block, True, "gelu")
    with torch.no_grad():
        return block(_XB.clone(), mask=_CAUSAL.clone()), layer(_XB.clone(), src_mask=_CAUSAL.clone())


@suite.case(
    "block",
    "agrees with nn.TransformerEncoderLayer(norm_first=False, relu) under a causal mask",
    points=2,
    check=_tensors_agree(_AGREES, 1e-4, 1e-5),
    builds_on=(_POST,),
)
def _(ns):
    block = _block(ns, 8, norm_first=False, activation="relu")
    layer = _torch_layer(block, False, "relu")
    with torch.no_grad():
        return block(_XB.clone(), mask=_CAUSAL.clone()), layer(_XB.clone(), src_mask=_CAUSAL.clone())


def _future_ignored(got):
    before, after = got
    if not _same_shape(before, after):
        return "the block must return a tensor of the input's shape"
    early = float((before[:, :3] - after[:, :3]).abs().max())
    late = float((before[:, 3:] - after[:, 3:]).abs().max())
    if not early <= 1e-6:
        return f"changing positions 3 and 4 changed the outputs at positions 0 to 2 (by up to {early:.3g})"
    if not late > 1e-6:
        return "changing positions 3 and 4 did not change their own outputs"
    return None


@suite.case(
    "block",
    "post-norm with a causal mask: later tokens never change earlier outputs",
    points=1,
    check=satisfies(_future_ignored),
    guard=True,  # a module that does nothing passes it: it counts only when a test of the values passes
)
def _(ns):
    block = _block(ns, 9, norm_first=False)
    changed = _XB.clone()
    changed[:, 3:] = randn(B, T - 3, C, seed=92)
    with torch.no_grad():
        return block(_XB.clone(), mask=_CAUSAL.clone()), block(changed, mask=_CAUSAL.clone())
