"""Hidden tests of stage 06_blocks (run only when grading; never shipped to students).

Expected values marked REFERENCE are the reference solution's outputs on the same
probe, saved at build time. Sizes all differ (B=3, T=5, C=24, H=4, D=6, ff_dim=40).
Modules get their weights from ``set_parameters`` (by parameter name).

The ``block`` tests never depend on the student's ``LayerNorm`` and ``FeedForward``
(questions of their own): while the student's ``TransformerBlock`` is built, the
notebook's names ``LayerNorm`` and ``FeedForward`` stand for ``nn.LayerNorm`` and a
known-good feed-forward network (built with the arguments the student's block passes
them), and are put back afterwards. ``MultiHeadAttention`` is given code in this
notebook.

Tolerances (relative + absolute, per test):
- layernorm: rtol 1e-5, atol 1e-5 on normalised values of order 1 (mean and variance
  computed in any order, torch.var(unbiased=False), var_mean or rsqrt agree to about
  1e-6); gradients rtol 1e-4, atol 1e-5. The mistakes are off by 1e-2 or more (the
  unbiased variance by a factor sqrt(23/24), eps outside the root visibly at eps=0.5).
- feedforward: rtol 1e-5, atol 1e-5 for outputs of order 5, the GELU grid test
  included: float32 rounding of a correct exact GELU reaches 5e-7 on the grid, while
  the tanh approximation is off by up to 5e-4 there (about 1e-4 to 4e-4), twenty
  times the tolerance.
- block against the reference and against nn.TransformerEncoderLayer with copied
  weights: rtol 1e-4, atol 1e-5 (attention with peaked softmaxes inside; PyTorch's
  kernels sum in another order).
- properties (causality, the untouched residual stream): 1e-6 absolute.
"""

import contextlib
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder.kit import REFERENCE, Hint, Suite, catch, close, equal, raises, randn, satisfies, set_parameters

suite = Suite(public=False)

B, T, C, H, FF = 3, 5, 24, 4, 40


def _near(got, alt, atol):
    return isinstance(got, torch.Tensor) and got.shape == alt.shape and torch.allclose(got.double(), alt.double(), atol=atol, rtol=0)


# ---------------------------------------------------------------- layernorm

_XL = randn(B, T, C, seed=71) * 3 + 1


def _normalised(x, eps, unbiased=False, eps_outside=False):
    x = x.double()
    centred = x - x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, unbiased=unbiased)
    return centred / (var.sqrt() + eps) if eps_outside else centred / (var + eps).sqrt()


_UNBIASED_HINT = Hint(lambda got, exp: _near(got, _normalised(_XL, 1e-5, unbiased=True), 1e-4),
                      "your values are a little too small in size: check what your variance divides by")
_EPS_HINT = Hint(lambda got, exp: _near(got, _normalised(_XL, 0.5, eps_outside=True), 1e-4),
                 "check where eps enters the formula")


@suite.case("layernorm", "fixed weight and bias on a 3 x 5 x 24 input with mean 1 and spread 3", points=2,
            check=close(rtol=1e-5, atol=1e-5), expected=REFERENCE)
def _(ns):
    ln = ns.LayerNorm(C)
    set_parameters(ln, 1)
    with torch.no_grad():
        return ln(_XL.clone())


@suite.case("layernorm", "fresh module: every position normalised over its 24 features", points=2,
            check=close(rtol=1e-5, atol=1e-5, hints=[_UNBIASED_HINT]), expected=REFERENCE)
def _(ns):
    with torch.no_grad():
        return ns.LayerNorm(C)(_XL.clone())


@suite.case("layernorm", "eps=0.5 on a fresh module", points=1,
            check=close(rtol=1e-5, atol=1e-5, hints=[_EPS_HINT]), expected=REFERENCE)
def _(ns):
    with torch.no_grad():
        return ns.LayerNorm(C, eps=0.5)(_XL.clone())


@suite.case("layernorm", "2-D (7, 24) and 4-D (2, 3, 5, 24) inputs, last axis only", points=1,
            check=close(rtol=1e-5, atol=1e-5), expected=REFERENCE)
def _(ns):
    ln = ns.LayerNorm(C)
    set_parameters(ln, 2)
    with torch.no_grad():
        flat = ln(randn(7, C, seed=72) * 2)
        deep = ln(randn(2, 3, 5, C, seed=73) + 2)
    return torch.cat([flat.flatten(), deep.flatten()])


@suite.case("layernorm", "parameters named weight and bias, trainable, starting at ones and zeros", points=1,
            check=equal(), expected=(["bias", "weight"], True, True, torch.ones(C), torch.zeros(C)))
def _(ns):
    ln = ns.LayerNorm(C)
    names = sorted(name for name, _ in ln.named_parameters())
    return names, isinstance(ln.weight, nn.Parameter), isinstance(ln.bias, nn.Parameter), ln.weight.detach().clone(), ln.bias.detach().clone()


@suite.case("layernorm", "gradients with respect to the input, weight and bias", points=1,
            check=close(rtol=1e-4, atol=1e-5), expected=REFERENCE)
def _(ns):
    ln = ns.LayerNorm(C)
    set_parameters(ln, 3)
    x = _XL.clone().requires_grad_(True)
    (ln(x) * randn(B, T, C, seed=74)).sum().backward()
    return torch.cat([x.grad.flatten(), ln.weight.grad.flatten(), ln.bias.grad.flatten()])


def _layer_norm_pair(got):
    mine, theirs = got
    verdict = close(rtol=1e-5, atol=1e-5)(mine, theirs, False)
    return None if verdict.passed else f"your LayerNorm and nn.LayerNorm (same parameters) do not agree: {verdict.message}"


@suite.case("layernorm", "agrees with nn.LayerNorm(24, eps=1e-3) given the same weight and bias", points=1,
            check=satisfies(_layer_norm_pair))
def _(ns):
    mine, theirs = ns.LayerNorm(C, eps=1e-3), nn.LayerNorm(C, eps=1e-3)
    set_parameters(theirs, 4)
    with torch.no_grad():
        mine.weight.copy_(theirs.weight)
        mine.bias.copy_(theirs.bias)
        x = randn(B, T, C, seed=75) * 0.1
        return mine(x), theirs(x)


@suite.case("layernorm", "an input whose last axis is not dim long raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.LayerNorm(C), randn(B, T, C + 2, seed=76))


# ---------------------------------------------------------------- feedforward

_XF = randn(B, T, C, seed=81)
_GRID = torch.linspace(-4.0, 4.0, 33)


def _grid_tanh(got, exp):
    x = _GRID.double()
    approx = 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return _near(got.flatten(), approx, 2e-6)


def _grid_sigmoid(got, exp):
    x = _GRID.double()
    return _near(got.flatten(), x * torch.sigmoid(1.702 * x), 2e-6)


def _feedforward(ns, seed, **kwargs):
    ff = ns.FeedForward(C, FF, **kwargs)
    set_parameters(ff, seed, scale=0.3)
    return ff.eval()


@suite.case("feedforward", "fixed weights, gelu, 24 -> 40 -> 24 on a 3 x 5 input", points=2,
            check=close(rtol=1e-5, atol=1e-5), expected=REFERENCE)
def _(ns):
    with torch.no_grad():
        return _feedforward(ns, 1, activation="gelu")(_XF.clone())


@suite.case("feedforward", "fixed weights, relu, 24 -> 40 -> 24 on a 3 x 5 input", points=2,
            check=close(rtol=1e-5, atol=1e-5), expected=REFERENCE)
def _(ns):
    with torch.no_grad():
        return _feedforward(ns, 2, activation="relu")(_XF.clone())


@suite.case("feedforward", "without an activation argument the network uses gelu", points=1,
            check=close(rtol=1e-5, atol=1e-5), expected=REFERENCE)
def _(ns):
    with torch.no_grad():
        return _feedforward(ns, 3)(_XF.clone())


@suite.case("feedforward", "GELU on 33 points from -4 to 4 through a 1 -> 1 -> 1 network", points=2,
            check=close(rtol=1e-5, atol=1e-5, hints=[
                Hint(_grid_tanh, "this is the tanh approximation of GELU; the exact form x * Phi(x) is asked for"),
                Hint(_grid_sigmoid, "this is the sigmoid approximation of GELU; the exact form x * Phi(x) is asked for"),
            ]), expected=REFERENCE)
def _(ns):
    ff = ns.FeedForward(1, 1, activation="gelu")
    with torch.no_grad():
        ff.fc1.weight.fill_(1.0)
        ff.fc1.bias.zero_()
        ff.fc2.weight.fill_(1.0)
        ff.fc2.bias.zero_()
        return ff.eval()(_GRID.view(-1, 1).clone())


@suite.case("feedforward", "2-D (7, 24) and 4-D (2, 3, 5, 24) inputs", points=1,
            check=close(rtol=1e-5, atol=1e-5), expected=REFERENCE)
def _(ns):
    ff = _feedforward(ns, 4, activation="gelu")
    with torch.no_grad():
        return torch.cat([ff(randn(7, C, seed=82)).flatten(), ff(randn(2, 3, 5, C, seed=83)).flatten()])


@suite.case("feedforward", "dropout=0.5 does nothing in eval mode", points=1,
            check=close(rtol=1e-5, atol=1e-5), expected=REFERENCE)
def _(ns):
    with torch.no_grad():
        return _feedforward(ns, 5, activation="relu", dropout=0.5)(_XF.clone())


def _random_in_training(got):
    return None if got > 1e-6 else "with dropout=0.5 in training mode, two calls on the same input gave the same output: dropout is not applied"


@suite.case("feedforward", "dropout=0.5 in training mode makes the output random", points=1,
            check=satisfies(_random_in_training))
def _(ns):
    ff = _feedforward(ns, 6, dropout=0.5).train()
    with torch.no_grad():
        return float((ff(_XF.clone()) - ff(_XF.clone())).abs().max())


@suite.case("feedforward", "activation='tanh' is refused with ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.FeedForward, C, FF, activation="tanh")


# ---------------------------------------------------------------- block


class _KnownFeedForward(nn.Module):
    def __init__(self, embed_dim, ff_dim, activation="gelu", dropout=0.0):
        super().__init__()
        if activation not in ("gelu", "relu"):
            raise ValueError(f"unknown activation {activation!r}")
        self.fc1, self.fc2 = nn.Linear(embed_dim, ff_dim), nn.Linear(ff_dim, embed_dim)
        self.act = nn.GELU() if activation == "gelu" else nn.ReLU()
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.drop(self.fc2(self.act(self.fc1(x))))


@contextlib.contextmanager
def _known_parts(ns):
    """While the student's block is built, LayerNorm and FeedForward are known-good ones."""
    names = ns._names
    saved = {key: names[key] for key in ("LayerNorm", "FeedForward") if key in names}
    names["LayerNorm"], names["FeedForward"] = nn.LayerNorm, _KnownFeedForward
    try:
        yield
    finally:
        for key in ("LayerNorm", "FeedForward"):
            names.pop(key, None)
        names.update(saved)


def _block(ns, seed, **kwargs):
    with _known_parts(ns):
        block = ns.TransformerBlock(C, H, FF, **kwargs)
    set_parameters(block, seed)
    return block.eval()


_XB = randn(B, T, C, seed=91)
_CAUSAL = torch.ones(T, T, dtype=torch.bool).triu(1)
_PAD_MASK = torch.tensor([[0, 0, 0, 0, 0], [0, 0, 0, 1, 1], [0, 0, 0, 0, 1]], dtype=torch.bool)[:, None, :]  # (B, 1, T)
_COMBINED = _CAUSAL[None] | _PAD_MASK  # (B, T, T)


@suite.case("block", "pre-norm, fixed weights, causal (T, T) mask", points=2,
            check=close(rtol=1e-4, atol=1e-5), expected=REFERENCE)
def _(ns):
    with torch.no_grad():
        return _block(ns, 1, norm_first=True)(_XB.clone(), mask=_CAUSAL.clone())


@suite.case("block", "post-norm, fixed weights, per-sequence (B, T, T) mask", points=2,
            check=close(rtol=1e-4, atol=1e-5), expected=REFERENCE)
def _(ns):
    with torch.no_grad():
        return _block(ns, 2, norm_first=False)(_XB.clone(), mask=_COMBINED.clone())


@suite.case("block", "pre-norm with relu and a key-padding (B, 1, T) mask", points=1,
            check=close(rtol=1e-4, atol=1e-5), expected=REFERENCE)
def _(ns):
    with torch.no_grad():
        return _block(ns, 3, norm_first=True, activation="relu")(_XB.clone(), mask=_PAD_MASK.clone())


def _orders_swapped(got, exp):
    return isinstance(got, torch.Tensor) and got.shape == exp.shape and _near(got[0], exp[1], 1e-4) and _near(got[1], exp[0], 1e-4)


@suite.case("block", "both orders on one input without a mask: [norm_first=True, norm_first=False]", points=2,
            check=close(rtol=1e-4, atol=1e-5, hints=[
                Hint(_orders_swapped, "the two orders look exchanged: which one normalises the input of each sublayer?"),
            ]), expected=REFERENCE)
def _(ns):
    with torch.no_grad():
        return torch.stack([_block(ns, 4, norm_first=True)(_XB.clone()), _block(ns, 4, norm_first=False)(_XB.clone())])


@suite.case("block", "the default block (no norm_first argument) is pre-norm", points=1,
            check=close(rtol=1e-4, atol=1e-5), expected=REFERENCE)
def _(ns):
    with torch.no_grad():
        return _block(ns, 5)(_XB.clone(), mask=_CAUSAL.clone())


def _residual_untouched(got):
    x, out = got
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(x.shape):
        return f"expected a tensor of shape {tuple(x.shape)}, got {type(out).__name__} {tuple(getattr(out, 'shape', ()))}"
    moved = (out.double() - x.double()).abs().max().item()
    if not moved <= 1e-6:
        return (f"with both sublayers silenced (attn.out_proj and ff.fc2 all zeros) a pre-norm block adds nothing, "
                f"so it must return x itself, but yours moved it by up to {moved:.3g}: in pre-norm each sublayer's "
                "output is added to the unnormalised x, and nothing else changes x")
    return None


@suite.case("block", "pre-norm with both sublayers silenced returns its input (the residual stream is never normalised)",
            points=1, check=satisfies(_residual_untouched))
def _(ns):
    block = _block(ns, 10, norm_first=True)
    with torch.no_grad():
        for layer in (block.attn.out_proj, block.ff.fc2):
            layer.weight.zero_()
            if layer.bias is not None:
                layer.bias.zero_()
        return _XB.clone(), block(_XB.clone(), mask=_CAUSAL.clone())


@suite.case("block", "dropout=0.3 in eval mode changes nothing", points=1,
            check=close(rtol=1e-4, atol=1e-5), expected=REFERENCE)
def _(ns):
    with torch.no_grad():
        return _block(ns, 6, dropout=0.3, norm_first=False)(_XB.clone(), mask=_CAUSAL.clone())


def _torch_layer(block, norm_first, activation):
    """An nn.TransformerEncoderLayer holding the block's weights."""
    layer = nn.TransformerEncoderLayer(C, H, dim_feedforward=FF, dropout=0.0, activation=activation,
                                       batch_first=True, norm_first=norm_first)
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


def _agrees_with_torch(got):
    mine, theirs = got
    verdict = close(rtol=1e-4, atol=1e-5)(mine, theirs, False)
    return None if verdict.passed else f"your block and nn.TransformerEncoderLayer (same weights) do not agree: {verdict.message}"


@suite.case("block", "agrees with nn.TransformerEncoderLayer(norm_first=True, gelu) under a causal mask", points=2,
            check=satisfies(_agrees_with_torch))
def _(ns):
    block = _block(ns, 7, norm_first=True, activation="gelu")
    layer = _torch_layer(block, True, "gelu")
    with torch.no_grad():
        return block(_XB.clone(), mask=_CAUSAL.clone()), layer(_XB.clone(), src_mask=_CAUSAL.clone())


@suite.case("block", "agrees with nn.TransformerEncoderLayer(norm_first=False, relu) under a causal mask", points=2,
            check=satisfies(_agrees_with_torch))
def _(ns):
    block = _block(ns, 8, norm_first=False, activation="relu")
    layer = _torch_layer(block, False, "relu")
    with torch.no_grad():
        return block(_XB.clone(), mask=_CAUSAL.clone()), layer(_XB.clone(), src_mask=_CAUSAL.clone())


def _future_ignored(got):
    early, late = got
    if not early <= 1e-6:
        return f"changing positions 3 and 4 changed the outputs at positions 0 to 2 (by up to {early:.3g})"
    if not late > 1e-6:
        return "changing positions 3 and 4 did not change their own outputs"
    return None


@suite.case("block", "post-norm with a causal mask: later tokens never change earlier outputs", points=1,
            check=satisfies(_future_ignored))
def _(ns):
    block = _block(ns, 9, norm_first=False)
    changed = _XB.clone()
    changed[:, 3:] = randn(B, T - 3, C, seed=92)
    with torch.no_grad():
        a, b = block(_XB.clone(), mask=_CAUSAL.clone()), block(changed, mask=_CAUSAL.clone())
    return float((a[:, :3] - b[:, :3]).abs().max()), float((a[:, 3:] - b[:, 3:]).abs().max())
