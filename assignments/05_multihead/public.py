"""Public tests of stage 05_multihead: students run these in the notebook with check().

Expected values are literals and properties, or what PyTorch's own nn.MultiheadAttention
computes with the same weights (in the check, from the weights the test gave the module).
Tolerances: heads are compared exactly (splitting and merging only move numbers); the
module against nn.MultiheadAttention with rtol 1e-4, atol 1e-5 (another order of summation
in float32, softmax of scores of size about 5); causality 1e-6 absolute. Values are
compared whatever their dtype (``dtype=None``): the notebook states no dtype here. A test
that a module doing nothing could pass (round trips, shapes, causality, no bias) is a
guard: it counts only when a test of the question's values passes.
"""

import contextlib

import torch

from autograder.kit import (
    Hint,
    Suite,
    Verdict,
    catch,
    close,
    equal,
    near,
    raises,
    randn,
    satisfies,
    set_parameters,
    with_hint,
)

suite = Suite(public=True)

# Sizes that all differ (B=2, T=3, C=20, H=4, D=5), so that a swapped axis shows up.
PB, PT, PC, PH = 2, 3, 20, 4
PD = PC // PH


def _where_from(value, t_len, c_len):
    """For an arange input of shape (B, T, C): the (b, t, c) a value came from."""
    v = int(value)
    return v // (t_len * c_len), (v // c_len) % t_len, v % c_len


def _split_layout(got):
    problem = None if type(got) is torch.Tensor else f"expected a torch.Tensor, got {type(got).__name__}"
    if problem is None and tuple(got.shape) != (PB, PH, PT, PD):
        problem = f"expected shape (B, H, T, D) = {(PB, PH, PT, PD)}, got {tuple(got.shape)}"
    if problem:
        return problem
    for b in range(PB):
        for h in range(PH):
            for t in range(PT):
                for d in range(PD):
                    src = _where_from(got[b, h, t, d], PT, PC)
                    if src != (b, t, h * PD + d):
                        return (
                            f"heads[{b}, {h}, {t}, {d}] should be feature {h * PD + d} of x[{b}, {t}] "
                            f"(head {h} holds features {h * PD}..{h * PD + PD - 1} of every position), "
                            f"but it is feature {src[2]} of x[{src[0]}, {src[1]}]"
                        )
    return None


@suite.case(
    "heads",
    "split_heads: (2, 3, 20) with 4 heads gives (2, 4, 3, 5), head h holds features h*5 .. h*5+4",
    points=1,
    check=satisfies(_split_layout),
)
def _(ns):
    x = torch.arange(PB * PT * PC, dtype=torch.float32).view(PB, PT, PC)
    return ns.split_heads(x, PH)


def _merge_layout(got):
    problem = None if type(got) is torch.Tensor else f"expected a torch.Tensor, got {type(got).__name__}"
    if problem is None and tuple(got.shape) != (PB, PT, PC):
        problem = f"expected shape (B, T, H*D) = {(PB, PT, PC)}, got {tuple(got.shape)}"
    if problem:
        return problem
    for b in range(PB):
        for t in range(PT):
            for c in range(PC):
                # the input was arange over (B, H, T, D): value = ((b*H + h)*T + t)*D + d
                v = int(got[b, t, c])
                src = (v // (PH * PT * PD), (v // (PT * PD)) % PH, (v // PD) % PT, v % PD)
                if src != (b, c // PD, t, c % PD):
                    return (
                        f"merged[{b}, {t}, {c}] should be y[{b}, {c // PD}, {t}, {c % PD}] "
                        f"(head {c // PD} at position {t}), but it is y[{src[0]}, {src[1]}, {src[2]}, {src[3]}]"
                    )
    return None


@suite.case(
    "heads",
    "merge_heads: (2, 4, 3, 5) gives (2, 3, 20) with the heads side by side",
    points=1,
    check=satisfies(_merge_layout),
)
def _(ns):
    y = torch.arange(PB * PH * PT * PD, dtype=torch.float32).view(PB, PH, PT, PD)
    return ns.merge_heads(y)


_SPLIT = "split_heads: (2, 3, 20) with 4 heads gives (2, 4, 3, 5), head h holds features h*5 .. h*5+4"
_MERGE = "merge_heads: (2, 4, 3, 5) gives (2, 3, 20) with the heads side by side"


@suite.case(
    "heads",
    "merge_heads(split_heads(x)) gives x back",
    points=1,
    check=close(rtol=0.0, atol=0.0, dtype=None),
    expected=randn(PB, PT, PC, seed=5),
    builds_on=(_SPLIT, _MERGE),
    guard=True,
)
def _(ns):
    return ns.merge_heads(ns.split_heads(randn(PB, PT, PC, seed=5), PH))


@suite.case(
    "heads", "split_heads raises ValueError when the heads do not divide C", points=1, check=raises("ValueError")
)
def _(ns):
    return catch(ns.split_heads, randn(PB, PT, PC, seed=6), 3)


@suite.case("heads", "merge_heads of a 3-D tensor raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.merge_heads, randn(PB, PT, PC, seed=6))


# While the tests of MultiHeadAttention run, split_heads and merge_heads answer from the
# table below, for the shapes these tests use (any other call goes to your own functions):
# so a mistake in split_heads or merge_heads costs points only on "heads", and a class that
# splits and merges inline is tested on its own code. Each entry lists, for a (B, T, C)
# input and a number of heads, where in the flattened input each row of D numbers of the
# (B, H, T, D) result starts.
_HEAD_ROWS = {
    ((2, 3, 20), 1): (0, 20, 40, 60, 80, 100),
    ((1, 3, 20), 1): (0, 20, 40),
    ((1, 3, 8), 2): (0, 8, 16, 4, 12, 20),
}


def _order(shape, heads):
    starts = _HEAD_ROWS.get((tuple(shape), heads))
    if starts is None:
        return None
    return (torch.tensor(starts)[:, None] + torch.arange(shape[-1] // heads)).reshape(-1)


# The (B, H, T, D) input of merge_heads for each entry of _HEAD_ROWS, with that entry's key.
_MERGED = {(shape[0], heads, shape[1], shape[2] // heads): (shape, heads) for shape, heads in _HEAD_ROWS}


@contextlib.contextmanager
def _tabled_heads(ns):
    """Run with split_heads and merge_heads answering from _HEAD_ROWS."""
    names = ns._names
    own = {key: names.get(key) for key in ("split_heads", "merge_heads")}

    def split_heads(x, num_heads):
        order = _order(x.shape, num_heads)  # None unless x is (B, T, C) with a shape of the table
        if order is None:
            return own["split_heads"](x, num_heads)
        n, t, c = x.shape
        return x.reshape(-1)[order.to(x.device)].view(n, num_heads, t, c // num_heads)

    def merge_heads(x):
        key = _MERGED.get(tuple(x.shape))  # None unless x is (B, H, T, D) with a shape of the table
        order = None if key is None else _order(*key)
        if order is None:
            return own["merge_heads"](x)
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


_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "out_proj")
_STRUCTURE = "four nn.Linear(C, C) projections q_proj, k_proj, v_proj, out_proj"


@suite.case("mha", _STRUCTURE, points=1, check=equal(), expected=[("Linear", [20, 20], [20])] * 4, structure=True)
def _(ns):
    module = ns.MultiHeadAttention(PC, PH)
    found = []
    for name in _PROJECTIONS:
        layer = getattr(module, name)
        found.append((type(layer).__name__, list(layer.weight.shape), list(layer.bias.shape)))
    return found


@suite.case("mha", "embed_dim that num_heads does not divide raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.MultiHeadAttention, PC, 3)


def _no_bias(got):
    with_bias = [name for name, bias in zip(_PROJECTIONS, got) if bias != "NoneType"]
    return f"with bias=False, {with_bias[0]} still has a bias: pass bias=bias to every nn.Linear" if with_bias else None


@suite.case("mha", "bias=False: no projection has a bias", points=1, check=satisfies(_no_bias), guard=True)
def _(ns):
    module = ns.MultiHeadAttention(PC, PH, bias=False)
    return [type(getattr(getattr(module, name, None), "bias", None)).__name__ for name in _PROJECTIONS]


def _same_in_both_modes(got):
    train, plain = got
    for value in (train, plain):
        if type(value) is not torch.Tensor or tuple(value.shape) != (PB, PT, PC):
            return f"forward should return a tensor of shape {(PB, PT, PC)} in both modes"
    if not float((train - plain).abs().max()) <= 1e-6:
        return "without a dropout argument, training mode changed the output: the default dropout is 0"
    return None


@suite.case(
    "mha",
    "the default dropout is 0: training mode gives the output of eval mode",
    points=1,
    check=satisfies(_same_in_both_modes),
    guard=True,
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        module = _module(ns, 1)
        plain = module(randn(PB, PT, PC, seed=7))
        return module.train()(randn(PB, PT, PC, seed=7)), plain


@suite.case("mha", "a float mask raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        module = _module(ns, 1)
        return catch(module, randn(PB, PT, PC, seed=7), mask=torch.ones(PT, PT).triu(1))


def _module(ns, seed, heads=1, C=PC, **kwargs):
    module = ns.MultiHeadAttention(C, heads, **kwargs)
    set_parameters(module, seed)
    return module.eval()


def _shapes_problem(got):
    out, weights, plain = got
    for label, value, shape in (
        ("the output", out, (PB, PT, PC)),
        ("the weights", weights, (PB, 1, PT, PT)),
        ("the output without return_weights", plain, (PB, PT, PC)),
    ):
        if type(value) is not torch.Tensor:
            return f"{label} must be a tensor, got {type(value).__name__}"
        if tuple(value.shape) != shape:
            return f"{label} should have shape {shape}, got {tuple(value.shape)}"
    return None


_SHAPES = "one head: output (B, T, C) and weights (B, 1, T, T)"


@suite.case("mha", _SHAPES, points=1, check=satisfies(_shapes_problem), builds_on=(_STRUCTURE,), guard=True)
def _(ns):
    x = randn(PB, PT, PC, seed=7)
    with _tabled_heads(ns), torch.no_grad():
        module = _module(ns, 1)
        output, per_head = module(x, return_weights=True)
        return output, per_head, module(x)


def _twin(seed, C, heads):
    """nn.MultiheadAttention holding the values set_parameters(module, seed) gives a module's four projections."""
    linear = torch.nn.ModuleDict({name: torch.nn.Linear(C, C) for name in _PROJECTIONS})
    set_parameters(linear, seed)
    twin = torch.nn.MultiheadAttention(C, heads, batch_first=True)
    with torch.no_grad():
        twin.in_proj_weight.copy_(torch.cat([linear[name].weight for name in _PROJECTIONS[:3]]))
        twin.in_proj_bias.copy_(torch.cat([linear[name].bias for name in _PROJECTIONS[:3]]))
        twin.out_proj.weight.copy_(linear["out_proj"].weight)
        twin.out_proj.bias.copy_(linear["out_proj"].bias)
    return twin.eval()


def _as_torch_computes(seed, heads, x, hints=(), **kwargs):
    """A check: ``(out, weights)`` equal nn.MultiheadAttention's with the weights of ``seed``."""
    compare = close(rtol=1e-4, atol=1e-5, dtype=None, hints=list(hints))

    def check(got, expected, reveal):
        with torch.no_grad():
            their_out, their_weights = _twin(seed, x.shape[-1], heads)(
                x, x, x, need_weights=True, average_attn_weights=False, **kwargs
            )
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            return Verdict(False, "forward(x, return_weights=True) must return the pair (out, weights)")
        for label, mine, theirs in (("output", got[0], their_out), ("attention weights", got[1], their_weights)):
            verdict = compare(mine, theirs, reveal)
            if not verdict.passed:
                return Verdict(
                    False,
                    f"your {label} and nn.MultiheadAttention's (same weights) do not agree: {verdict.message}",
                    verdict.hint,
                )
        return verdict

    return check


def _across_heads(got, exp):
    return (
        type(got) is torch.Tensor
        and got.shape == exp.shape
        and torch.allclose(got.double().sum(dim=(1, -1)), torch.ones(1, dtype=torch.float64), atol=1e-4)
    )


def _rescaled(got, exp):
    """The weights are softmax(k * the right scores) for one factor k != 1."""
    if type(got) is not torch.Tensor or got.shape != exp.shape:
        return False
    g, e = got.double().clamp_min(1e-300).log(), exp.double().clamp_min(1e-300).log()
    g, e = g - g.mean(-1, keepdim=True), e - e.mean(-1, keepdim=True)
    k = float((g * e).sum() / (e * e).sum())
    return abs(k - 1) > 0.05 and float((g - k * e).norm() / (k * e).norm()) < 1e-3


_X2 = randn(1, 3, 8, seed=11)


@suite.case(
    "mha",
    "two heads of width 4: output and per-head weights equal nn.MultiheadAttention's with the same weights",
    points=2,
    check=_as_torch_computes(
        21,
        2,
        _X2,
        hints=[
            Hint(
                _across_heads,
                "for each head and each query, the weights over the keys should sum to 1: the softmax must not run across heads",
                mistake="one softmax across all heads",
            ),
            Hint(
                _rescaled,
                "the pattern is right but uniformly too sharp or too flat: divide the scores by sqrt(D), the width of one head",
                mistake="scores scaled by the wrong width",
            ),
        ],
    ),
    builds_on=(_SHAPES,),
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        return _module(ns, 21, heads=2, C=8)(_X2.clone(), return_weights=True)


_CAUSAL = torch.ones(PT, PT, dtype=torch.bool).triu(1)
_X1 = randn(PB, PT, PC, seed=8)
_CAUSAL_TEST = "one head with a causal mask equals nn.MultiheadAttention with the same weights"


@suite.case("mha", _CAUSAL_TEST, points=2, check=_as_torch_computes(2, 1, _X1, attn_mask=_CAUSAL), builds_on=(_SHAPES,))
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        return _module(ns, 2)(_X1.clone(), mask=_CAUSAL.clone(), return_weights=True)


_KEYS = torch.tensor([[False, False, False], [False, False, True]])  # sequence 1 ends with padding


_PER_SEQUENCE = _CAUSAL | _KEYS[:, None, :]
_PADDING = _KEYS[:, None, :]
_NO_HEAD_AXIS = "3-D mask without its head axis at position 1"


def _masked_run(ns, seed, mask):
    """A probe: one head under the 3-D ``mask``, as ``(out, weights)``. When the batch raises a
    RuntimeError and each sequence run alone with its own mask (B = 1) does not: what the
    batch raised, and the pair of each run alone (a mask whose batch axis broadcasts against
    the head axis raises only with B > 1)."""
    with _tabled_heads(ns), torch.no_grad():
        module = _module(ns, seed)
        try:
            return module(_X1.clone(), mask=mask.clone(), return_weights=True)
        except RuntimeError as exc:
            try:
                alone = [
                    module(_X1[b : b + 1].clone(), mask=mask[b : b + 1].clone(), return_weights=True) for b in range(PB)
                ]
            except RuntimeError:
                raise exc from None  # fails as any error does, where the batch raised it
            return {"raised": type(exc).__name__, "message": str(exc)[:300], "alone": alone}


def _masked_as_torch_computes(seed, mask):
    """``_as_torch_computes`` for one head under the 3-D ``mask``, and a failure with a hint when
    the batch raised (``_masked_run``) where each sequence alone agrees with nn.MultiheadAttention."""

    def right_alone(got, exp):
        alone = got.get("alone") if isinstance(got, dict) else None
        if not isinstance(alone, (list, tuple)) or len(alone) != PB:
            return False
        for b, pair in enumerate(alone):
            with torch.no_grad():
                theirs = _twin(seed, PC, 1)(
                    *[_X1[b : b + 1]] * 3,
                    attn_mask=mask[b].expand(PT, PT)[None],
                    need_weights=True,
                    average_attn_weights=False,
                )
            if not isinstance(pair, (tuple, list)) or len(pair) != 2 or not all(map(near, pair, theirs)):
                return False
        return True

    hint = Hint(
        right_alone,
        "one sequence at a time (B = 1) your module agrees with nn.MultiheadAttention, but a batch raises: "
        "broadcasting lines a 3-D mask up with the (B, H, T, T) scores from the last axis, so its batch axis "
        "meets the head axis. A (B, T, T) or (B, 1, T) mask needs a head axis at position 1: (B, 1, T, T) or "
        "(B, 1, 1, T)",
        mistake=_NO_HEAD_AXIS,
    )
    torch_check = _as_torch_computes(seed, 1, _X1, attn_mask=mask.expand(PB, PT, PT))

    def check(got, expected, reveal):
        if isinstance(got, dict):
            return with_hint(Verdict(False, f"raised {got.get('raised')}: {got.get('message')}"), [hint], got, expected)
        return torch_check(got, expected, reveal)

    check.hints = [hint]
    return check


@suite.case(
    "mha",
    "one head with a per-sequence (B, T, T) mask equals nn.MultiheadAttention",
    points=1,
    check=_masked_as_torch_computes(3, _PER_SEQUENCE),
    builds_on=(_CAUSAL_TEST,),
)
def _(ns):
    return _masked_run(ns, 3, _PER_SEQUENCE)


@suite.case(
    "mha",
    "one head with a padding (B, 1, T) mask equals nn.MultiheadAttention",
    points=1,
    check=_masked_as_torch_computes(4, _PADDING),
    builds_on=(_CAUSAL_TEST,),
)
def _(ns):
    return _masked_run(ns, 4, _PADDING)


def _causal_property(got):
    if (
        not isinstance(got, (tuple, list))
        or len(got) != 2
        or any(type(t) is not torch.Tensor or tuple(t.shape) != (PB, PT, PC) for t in got)
    ):
        return f"forward should return a tensor of shape {(PB, PT, PC)} for each input"
    a, b = got
    early, late = float((a[:, :-1] - b[:, :-1]).abs().max()), float((a[:, -1] - b[:, -1]).abs().max())
    if not early <= 1e-6:
        return f"changing the last token changed the outputs at earlier positions (by up to {early:.3g}): the mask is not applied as intended"
    if not late >= 1e-6:
        return "changing the last token did not change its own output"
    return None


@suite.case(
    "mha",
    "one head with a causal mask: changing the last token leaves earlier outputs alone",
    points=1,
    check=satisfies(_causal_property),
    builds_on=(_SHAPES,),
    guard=True,
)
def _(ns):
    x = randn(PB, PT, PC, seed=9)
    changed = x.clone()
    changed[:, -1] = randn(PB, PC, seed=10)
    with _tabled_heads(ns), torch.no_grad():
        module = _module(ns, 3)
        return module(x, mask=_CAUSAL.clone()), module(changed, mask=_CAUSAL.clone())


@suite.case(
    "mha",
    "dropout=0.5 changes nothing in eval mode (one head)",
    points=1,
    check=_as_torch_computes(5, 1, _X1, attn_mask=_CAUSAL),
    builds_on=(_CAUSAL_TEST,),
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        module = _module(ns, 5, dropout=0.5)
        module(_X1.clone(), mask=_CAUSAL.clone())  # a first call, so that dropout would have had its chance
        return module(_X1.clone(), mask=_CAUSAL.clone(), return_weights=True)


def _only_output_dropped(out, plain):
    """The training output is the eval output with numbers dropped and the rest doubled (p = 0.5)."""
    kept = out != 0
    return (
        out.shape == plain.shape
        and bool(kept.any())
        and torch.allclose(out[kept].double(), 2 * plain[kept].double(), rtol=1e-4, atol=1e-5)
    )


def _train_mode_problem(got):
    out, weights, plain = got
    for label, value, shape in (
        ("the output", out, (PB, PT, PC)),
        ("the weights", weights, (PB, 1, PT, PT)),
        ("the eval output", plain, (PB, PT, PC)),
    ):
        if type(value) is not torch.Tensor or tuple(value.shape) != shape:
            return f"{label} should be a tensor of shape {shape}"
    sums = weights.double().sum(-1)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-5):
        return "in training mode the weights you return do not sum to 1 over the keys"
    zeros = float((out == 0).double().mean())
    if not 0.3 <= zeros <= 0.7:
        return f"with dropout=0.5 in training mode, {zeros:.0%} of the output numbers are 0, not about half"
    if _only_output_dropped(out, plain):
        return "in training mode the output is the eval output with some numbers dropped and the rest doubled: the attention weights were not dropped"
    return None


def _train_pair(got):
    return isinstance(got, (tuple, list)) and len(got) == 3 and all(type(t) is torch.Tensor for t in got)


def _over_heads(got, exp):
    """The weights sum to 1 over the head axis rather than over the keys."""
    if not _train_pair(got) or got[1].dim() != 4:
        return False
    over_heads, over_keys = got[1].double().sum(1), got[1].double().sum(-1)
    return torch.allclose(over_heads, torch.ones_like(over_heads)) and not torch.allclose(
        over_keys, torch.ones_like(over_keys)
    )


@suite.case(
    "mha",
    "dropout=0.5 in training mode: on the weights and after out_proj; the weights returned are those before dropout",
    points=1,
    check=satisfies(
        _train_mode_problem,
        hints=[
            Hint(
                _over_heads,
                "the weights of each query must sum to 1 over the keys: the softmax runs over the last axis "
                "(dim=-1), not over the heads",
                mistake="softmax over the head axis",
            ),
            Hint(
                lambda got, exp: (
                    _train_pair(got)
                    and bool((got[1] == 0).any())
                    and bool((got[1].double().sum(-1) - 1).abs().max() > 1e-5)
                ),
                "some weights you return are 0 and the rows no longer sum to 1: return_weights gives the softmax "
                "probabilities before dropout",
                mistake="weights returned after dropout",
            ),
            Hint(
                lambda got, exp: _train_pair(got) and float((got[0] == 0).double().mean()) < 0.3,
                "dropout applies to the attention weights and to the output of out_proj",
                mistake="no dropout after out_proj",
            ),
            Hint(
                lambda got, exp: _train_pair(got) and _only_output_dropped(got[0], got[2]),
                "dropout applies to the attention weights after the softmax as well as to the output of out_proj",
                mistake="no dropout on the attention weights",
            ),
        ],
    ),
    builds_on=(_SHAPES,),
)
def _(ns):
    with _tabled_heads(ns), torch.no_grad():
        module = _module(ns, 6, dropout=0.5)
        plain = module(_X1.clone())
        dropped, per_head = module.train()(_X1.clone(), return_weights=True)
        return dropped, per_head, plain
