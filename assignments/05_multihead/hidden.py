"""Hidden tests of stage 05_multihead (run only when grading; never shipped to students).

Expected values marked REFERENCE are the reference solution's outputs on the same
probe, saved at build time. Inputs make every size differ (B=3, T=5, C=24, H=4, D=6;
also H=2, D=12; H=6, D=4; H=12, D=2), so a transpose or a bare reshape cannot pass by
luck (tests/test_stages_05_06.py checks this for every call the probes make).
Modules get their weights from ``set_parameters`` (by parameter name, whatever the
order in which the student created them).

The ``mha`` tests never depend on the student's ``split_heads`` and ``merge_heads``
(question ``heads``): while they run, the notebook's two functions are replaced by
known-good ones (and put back afterwards). A class that splits and merges heads
inline is graded on its own code, as it should be.

Tolerances (relative + absolute, per test):
- heads: exact (rtol 0, atol 0). Splitting and merging only move numbers.
- mha outputs and weights against the reference: rtol 1e-4, atol 1e-5. With these
  weights the scores have a spread of about 6, so the softmax is peaked and amplifies
  float32 rounding; einsum, a fused qkv product or F.scaled_dot_product_attention
  differ from the reference by a few 1e-7 relative. Every mistake in the catalogue
  is off by 1e-2 or more.
- mha against nn.MultiheadAttention with copied weights: rtol 1e-4, atol 1e-5 (the
  same reasoning; PyTorch's kernel orders its sums differently again).
- properties (causality, dropout off in eval mode): 1e-6 absolute.
"""

import contextlib
import math

import torch
import torch.nn as nn

from autograder.kit import REFERENCE, Hint, Suite, catch, close, equal, randn, satisfies, set_parameters

suite = Suite(public=False)

B, T, C, H = 3, 5, 24, 4
D = C // H


def _is(got, expected):
    return isinstance(got, torch.Tensor) and got.shape == expected.shape and torch.equal(got, expected)


# ---------------------------------------------------------------- heads

_X = randn(B, T, C, seed=51)
_Y = randn(B, H, T, D, seed=52)

_SPLIT_HINTS = [
    Hint(lambda got, exp: _is(got, _X.reshape(B, H, T, D)),
         "your heads mix positions: regrouping (B, T, C) straight into (B, H, T, D) keeps the numbers in memory order, "
         "so a head's row holds pieces of several positions. Split the feature axis first, then move the head axis."),
    Hint(lambda got, exp: _is(got, _X.reshape(B, T, D, H).permute(0, 3, 1, 2)),
         "head h should get one block of D neighbouring features (h*D to h*D + D - 1), not every H-th feature"),
    Hint(lambda got, exp: isinstance(got, torch.Tensor) and tuple(got.shape) == (B, T, H, D),
         "the head axis has to come before the time axis: (B, H, T, D)"),
]


@suite.case("heads", "split_heads on a 3 x 5 x 24 input with 4 heads, every value checked", points=2,
            check=equal(_SPLIT_HINTS), expected=REFERENCE)
def _(ns):
    return ns.split_heads(_X.clone(), H)


@suite.case("heads", "split_heads with 6 heads of width 4 and with 12 heads of width 2", points=1,
            check=equal(), expected=REFERENCE)
def _(ns):
    return ns.split_heads(_X.clone(), 6), ns.split_heads(_X.clone(), 12)


_MERGE_HINTS = [
    Hint(lambda got, exp: _is(got, _Y.reshape(B, T, C)),
         "the head axis has to move back next to the features before the last two axes are joined; "
         "joining straight from (B, H, T, D) mixes positions"),
    Hint(lambda got, exp: _is(got, _Y.permute(0, 2, 3, 1).reshape(B, T, C)),
         "the features of head h belong side by side in one block (h*D to h*D + D - 1), not interleaved with the other heads"),
]


@suite.case("heads", "merge_heads of a 3 x 4 x 5 x 6 tensor, every value checked", points=2,
            check=equal(_MERGE_HINTS), expected=REFERENCE)
def _(ns):
    return ns.merge_heads(_Y.clone())


@suite.case("heads", "merge_heads accepts a tensor that is not contiguous in memory", points=1,
            check=equal(), expected=REFERENCE)
def _(ns):
    strided = randn(B, H, T, 2 * D, seed=53)[..., ::2]  # (B, H, T, D), every other number of a larger tensor
    return ns.merge_heads(strided)


@suite.case("heads", "round trips on other sizes: (2, 7, 30) with 5 heads, and (3, 6, 2, 7)", points=1,
            check=equal(), expected=REFERENCE)
def _(ns):
    a = randn(2, 7, 30, seed=54)
    y = randn(3, 6, 2, 7, seed=55)
    return ns.merge_heads(ns.split_heads(a, 5)), ns.split_heads(ns.merge_heads(y), 6)


def _all_value_errors(got):
    labels = ["split_heads(x, 5) with C=24", "split_heads(x, 0)", "split_heads of a 2-D tensor", "merge_heads of a 3-D tensor"]
    for label, outcome in zip(labels, got):
        if outcome["raised"] != "ValueError":
            what = "nothing was raised" if outcome["raised"] is None else f"got {outcome['raised']}"
            return f"{label} should raise ValueError; {what}"
    return None


@suite.case("heads", "bad head counts and wrong ranks raise ValueError", points=1, check=satisfies(_all_value_errors))
def _(ns):
    return [
        catch(ns.split_heads, _X.clone(), 5),
        catch(ns.split_heads, _X.clone(), 0),
        catch(ns.split_heads, _X[0].clone(), 4),
        catch(ns.merge_heads, _X.clone()),
    ]


# ---------------------------------------------------------------- mha


def _known_split(x, num_heads):
    if x.dim() != 3:
        raise ValueError(f"split_heads expects (B, T, C), got {tuple(x.shape)}")
    if num_heads < 1 or x.shape[-1] % num_heads:
        raise ValueError(f"{num_heads} heads do not divide C={x.shape[-1]}")
    n, t, c = x.shape
    return x.view(n, t, num_heads, c // num_heads).permute(0, 2, 1, 3)


def _known_merge(x):
    if x.dim() != 4:
        raise ValueError(f"merge_heads expects (B, H, T, D), got {tuple(x.shape)}")
    n, h, t, d = x.shape
    return x.permute(0, 2, 1, 3).contiguous().view(n, t, h * d)


@contextlib.contextmanager
def _known_heads(ns):
    """Run with the notebook's split_heads and merge_heads replaced by known-good ones."""
    names = ns._names  # the notebook's globals, where the student's class looks them up
    saved = {key: names[key] for key in ("split_heads", "merge_heads") if key in names}
    names["split_heads"], names["merge_heads"] = _known_split, _known_merge
    try:
        yield
    finally:
        for key in ("split_heads", "merge_heads"):
            names.pop(key, None)
        names.update(saved)


def _module(ns, seed, heads=H, **kwargs):
    module = ns.MultiHeadAttention(C, heads, **kwargs)
    set_parameters(module, seed)
    return module.eval()


_XM = randn(B, T, C, seed=61)
_CAUSAL = torch.ones(T, T, dtype=torch.bool).triu(1)
_PADDED = torch.tensor([[0, 0, 0, 0, 0], [0, 0, 0, 1, 1], [0, 0, 0, 0, 1]], dtype=torch.bool)  # (B, T) keys
_PAD_MASK = _PADDED[:, None, :]  # (B, 1, T)
_COMBINED = _CAUSAL[None] | _PAD_MASK  # (B, T, T)


def _centred_logs(w):
    logs = w.double().clamp_min(1e-300).log()
    return logs - logs.mean(-1, keepdim=True)


def _rescaled_scores(got, exp):
    """The weights are softmax(k * the right scores) for one factor k != 1."""
    if not isinstance(got, torch.Tensor) or got.shape != exp.shape:
        return False
    g, e = _centred_logs(got), _centred_logs(exp)
    k = float((g * e).sum() / (e * e).sum())
    return abs(k - 1) > 0.05 and float((g - k * e).norm() / (k * e).norm()) < 1e-3


def _rows_not_normalised_per_head(got, exp):
    if not isinstance(got, torch.Tensor) or got.shape != exp.shape:
        return False
    return float((got.double().sum(-1) - 1).abs().max()) > 1e-4


def _mask_inverted(got, exp):
    if not isinstance(got, torch.Tensor) or got.shape != exp.shape:
        return False
    open_expected = exp > 0
    blocked_got = (got == 0) | torch.isnan(got)
    return bool((blocked_got == open_expected).float().mean() > 0.9)


_WEIGHT_HINTS = [
    Hint(lambda got, exp: isinstance(got, torch.Tensor) and tuple(got.shape) == (B, T, T),
         "return the weights of every head separately, (B, H, T, T), not their average"),
    Hint(_rows_not_normalised_per_head,
         "for each head and each query, the weights over the keys should sum to 1: "
         "the softmax must not run across heads"),
    Hint(_rescaled_scores,
         "the pattern is right but uniformly too sharp or too flat: check the number the scores are divided by "
         "(the width of the vectors whose dot product makes a score)"),
    Hint(_mask_inverted, "the mask looks inverted: in this course True means blocked (the query may not look at that key)"),
]


@suite.case("mha", "several heads: out (3, 5, 24), weights (3, 4, 5, 5), a plain tensor without return_weights", points=1,
            check=equal(), expected=([B, T, C], [B, H, T, T], True))
def _(ns):
    with _known_heads(ns):
        module = _module(ns, 1)
        out, weights = module(_XM.clone(), return_weights=True)
        plain = module(_XM.clone())
    return list(out.shape), list(weights.shape), type(plain) is torch.Tensor


@suite.case("mha", "fixed weights, 4 heads of width 6, no mask: output", points=2,
            check=close(rtol=1e-4, atol=1e-5), expected=REFERENCE)
def _(ns):
    with _known_heads(ns), torch.no_grad():
        return _module(ns, 2)(_XM.clone())


@suite.case("mha", "fixed weights, 4 heads of width 6, no mask: per-head attention weights", points=2,
            check=close(rtol=1e-4, atol=1e-5, hints=_WEIGHT_HINTS), expected=REFERENCE)
def _(ns):
    with _known_heads(ns), torch.no_grad():
        return _module(ns, 2)(_XM.clone(), return_weights=True)[1]


@suite.case("mha", "fixed weights with a causal (T, T) mask: output", points=2,
            check=close(rtol=1e-4, atol=1e-5), expected=REFERENCE)
def _(ns):
    with _known_heads(ns), torch.no_grad():
        return _module(ns, 3)(_XM.clone(), mask=_CAUSAL.clone())


@suite.case("mha", "fixed weights with a causal (T, T) mask: per-head attention weights", points=1,
            check=close(rtol=1e-4, atol=1e-5, hints=_WEIGHT_HINTS), expected=REFERENCE)
def _(ns):
    with _known_heads(ns), torch.no_grad():
        return _module(ns, 3)(_XM.clone(), mask=_CAUSAL.clone(), return_weights=True)[1]


@suite.case("mha", "a per-sequence (B, T, T) mask of causal and padding keys", points=2,
            check=close(rtol=1e-4, atol=1e-5), expected=REFERENCE)
def _(ns):
    with _known_heads(ns), torch.no_grad():
        return _module(ns, 4)(_XM.clone(), mask=_COMBINED.clone())


@suite.case("mha", "a key-padding (B, 1, T) mask, with the weights", points=2,
            check=close(rtol=1e-4, atol=1e-5), expected=REFERENCE)
def _(ns):
    with _known_heads(ns), torch.no_grad():
        out, weights = _module(ns, 5)(_XM.clone(), mask=_PAD_MASK.clone(), return_weights=True)
    return torch.cat([out.flatten(), weights.flatten()])


@suite.case("mha", "2 heads of width 12 and 6 heads of width 4 on the same input", points=1,
            check=close(rtol=1e-4, atol=1e-5), expected=REFERENCE)
def _(ns):
    with _known_heads(ns), torch.no_grad():
        return torch.stack([_module(ns, 6, heads=2)(_XM.clone()), _module(ns, 6, heads=6)(_XM.clone(), mask=_CAUSAL.clone())])


def _torch_twin(module, heads):
    """nn.MultiheadAttention holding the student's four projections."""
    twin = nn.MultiheadAttention(C, heads, batch_first=True)
    state = {
        "in_proj_weight": torch.cat([module.q_proj.weight, module.k_proj.weight, module.v_proj.weight]).detach(),
        "in_proj_bias": torch.cat([module.q_proj.bias, module.k_proj.bias, module.v_proj.bias]).detach(),
        "out_proj.weight": module.out_proj.weight.detach(),
        "out_proj.bias": module.out_proj.bias.detach(),
    }
    twin.load_state_dict(state)
    return twin.eval()


def _agrees_with_torch(got):
    pairs = [("output", got[0], got[1])]
    if len(got) == 4:
        pairs.append(("attention weights", got[2], got[3]))
    for label, mine, theirs in pairs:
        verdict = close(rtol=1e-4, atol=1e-5)(mine, theirs, False)
        if not verdict.passed:
            return f"your {label} and nn.MultiheadAttention's (same weights) do not agree: {verdict.message}"
    return None


@suite.case("mha", "agrees with nn.MultiheadAttention (copied weights, batch_first), no mask", points=2,
            check=satisfies(_agrees_with_torch))
def _(ns):
    with _known_heads(ns), torch.no_grad():
        module = _module(ns, 7)
        twin = _torch_twin(module, H)
        return module(_XM.clone()), twin(_XM, _XM, _XM, need_weights=False)[0]


@suite.case("mha", "agrees with nn.MultiheadAttention under a causal attn_mask, weights per head included", points=2,
            check=satisfies(_agrees_with_torch))
def _(ns):
    with _known_heads(ns), torch.no_grad():
        module = _module(ns, 8)
        twin = _torch_twin(module, H)
        out, weights = module(_XM.clone(), mask=_CAUSAL.clone(), return_weights=True)
        their_out, their_weights = twin(_XM, _XM, _XM, attn_mask=_CAUSAL, need_weights=True, average_attn_weights=False)
    return out, their_out, weights, their_weights


@suite.case("mha", "agrees with nn.MultiheadAttention given the (B, T, T) mask as (B*H, T, T)", points=1,
            check=satisfies(_agrees_with_torch))
def _(ns):
    with _known_heads(ns), torch.no_grad():
        module = _module(ns, 9)
        twin = _torch_twin(module, H)
        return module(_XM.clone(), mask=_COMBINED.clone()), twin(_XM, _XM, _XM, attn_mask=_COMBINED.repeat_interleave(H, 0))[0]


def _future_ignored(got):
    early, late = got
    if not early <= 1e-6:
        return f"changing positions 3 and 4 changed the outputs at positions 0 to 2 (by up to {early:.3g})"
    if not late > 1e-6:
        return "changing positions 3 and 4 did not change their own outputs"
    return None


@suite.case("mha", "causal mask with 4 heads: later tokens never change earlier outputs", points=1,
            check=satisfies(_future_ignored))
def _(ns):
    with _known_heads(ns), torch.no_grad():
        module = _module(ns, 10)
        changed = _XM.clone()
        changed[:, 3:] = randn(B, T - 3, C, seed=62)
        a, b = module(_XM.clone(), mask=_CAUSAL.clone()), module(changed, mask=_CAUSAL.clone())
    return float((a[:, :3] - b[:, :3]).abs().max()), float((a[:, 3:] - b[:, 3:]).abs().max())


@suite.case("mha", "bias=False: the four projections have no bias", points=1,
            check=equal(), expected=[True, True, True, True])
def _(ns):
    module = ns.MultiHeadAttention(C, H, bias=False)
    return [getattr(module, name).bias is None for name in ("q_proj", "k_proj", "v_proj", "out_proj")]


@suite.case("mha", "bias=False with fixed weights and a causal mask", points=1,
            check=close(rtol=1e-4, atol=1e-5), expected=REFERENCE)
def _(ns):
    with _known_heads(ns), torch.no_grad():
        return _module(ns, 11, bias=False)(_XM.clone(), mask=_CAUSAL.clone())


@suite.case("mha", "dropout=0.5 does nothing in eval mode", points=1,
            check=close(rtol=1e-4, atol=1e-5), expected=REFERENCE)
def _(ns):
    with _known_heads(ns), torch.no_grad():
        return _module(ns, 12, dropout=0.5)(_XM.clone(), mask=_CAUSAL.clone())


def _random_in_training(got):
    if not got > 1e-6:
        return "with dropout=0.5 in training mode, two calls on the same input gave the same output: dropout is not applied"
    return None


@suite.case("mha", "dropout=0.5 in training mode makes the output random", points=1,
            check=satisfies(_random_in_training))
def _(ns):
    with _known_heads(ns), torch.no_grad():
        module = _module(ns, 13, dropout=0.5).train()
        return float((module(_XM.clone()) - module(_XM.clone())).abs().max())


def _value_errors(got):
    labels = ["MultiHeadAttention(24, 5)", "a float mask"]
    for label, outcome in zip(labels, got):
        if outcome["raised"] != "ValueError":
            what = "nothing was raised" if outcome["raised"] is None else f"got {outcome['raised']}"
            return f"{label} should raise ValueError; {what}"
    return None


@suite.case("mha", "ValueError for 24 features in 5 heads and for a float mask", points=1, check=satisfies(_value_errors))
def _(ns):
    with _known_heads(ns), torch.no_grad():
        first = catch(ns.MultiHeadAttention, C, 5)
        module = _module(ns, 14)
        second = catch(module, _XM.clone(), mask=_CAUSAL.float())
    return [first, second]
