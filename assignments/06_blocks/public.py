"""Public tests of stage 06_blocks: students run these in the notebook with check()."""

import contextlib

import torch

from autograder.kit import Hint, Suite, catch, close, equal, raises, randn, satisfies, set_parameters

suite = Suite(public=True)

# Sizes that all differ: B=2, T=3, C=20, H=4 (D=5), ff_dim=36.
PB, PT, PC, PH, PF = 2, 3, 20, 4, 36


def _pair_agrees(what):
    def test(got):
        mine, theirs = got
        verdict = close(rtol=1e-4, atol=1e-5)(mine, theirs, True)
        return None if verdict.passed else f"your result and {what} do not agree: {verdict.message}"

    return test


# ---------------------------------------------------------------- layernorm


@suite.case(
    "layernorm",
    "[1, 2, 3, 4] becomes mean 0, variance 1 (weight ones, bias zeros)",
    points=1,
    check=close(rtol=1e-5, atol=1e-5, hints=[
        Hint(lambda got, exp: torch.allclose(got.double(), exp.double() * (3 / 4) ** 0.5, atol=1e-4),
             "the spread is a little too small: check what your variance divides by"),
    ]),
    expected=torch.tensor([[-1.3416354656219482, -0.4472118318080902, 0.4472118318080902, 1.3416354656219482]]),
)
def _(ns):
    return ns.LayerNorm(4)(torch.tensor([[1.0, 2.0, 3.0, 4.0]]))


@suite.case(
    "layernorm",
    "weight (ones) and bias (zeros) are nn.Parameter of shape (dim,)",
    points=1,
    check=equal(),
    expected=(True, True, torch.ones(PC), torch.zeros(PC)),
)
def _(ns):
    ln = ns.LayerNorm(PC)
    return isinstance(ln.weight, torch.nn.Parameter), isinstance(ln.bias, torch.nn.Parameter), ln.weight.detach().clone(), ln.bias.detach().clone()


@suite.case("layernorm", "equals nn.LayerNorm with the same weight and bias", points=1, check=satisfies(_pair_agrees("nn.LayerNorm's")))
def _(ns):
    mine, theirs = ns.LayerNorm(PC), torch.nn.LayerNorm(PC)
    set_parameters(theirs, 1)
    with torch.no_grad():
        mine.weight.copy_(theirs.weight)
        mine.bias.copy_(theirs.bias)
    x = randn(PB, PT, PC, seed=2) * 2 + 0.5
    return mine(x), theirs(x)


# ---------------------------------------------------------------- feedforward


@suite.case("feedforward", "fc1 is (ff_dim, C), fc2 is (C, ff_dim), output (B, T, C)", points=1, check=equal(), expected=([PF, PC], [PC, PF], [PB, PT, PC]))
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


@suite.case("feedforward", "relu on a small hand-set network (2 -> 3 -> 2)", points=1, check=close(rtol=1e-6, atol=1e-6), expected=torch.tensor([[3.0, 2.25], [0.5, 0.75], [7.5, -4.25]]))
def _(ns):
    ff = _hand_set(ns, 2, 3, "relu", [[1.0, 0.0], [0.0, 1.0], [1.0, -1.0]], [0.0, 0.0, -0.5], [[1.0, 1.0, 1.0], [0.0, 1.0, -1.0]], [0.0, 0.25])
    return ff(torch.tensor([[1.0, 2.0], [-1.0, 0.5], [3.0, -2.0]]))


_GELU_AT = [-3.0, -1.0, -0.5, 0.5, 1.0, 2.0]


def _tanh_form(got, exp):
    x = torch.tensor(_GELU_AT, dtype=torch.float64)
    approx = 0.5 * x * (1 + torch.tanh((2 / torch.pi) ** 0.5 * (x + 0.044715 * x**3)))
    return torch.allclose(got.double().flatten(), approx, atol=2e-6)


def _sigmoid_form(got, exp):
    x = torch.tensor(_GELU_AT, dtype=torch.float64)
    return torch.allclose(got.double().flatten(), x * torch.sigmoid(1.702 * x), atol=2e-6)


@suite.case(
    "feedforward",
    "gelu (the default) is the exact x * Phi(x), through a 1 -> 1 -> 1 network",
    points=1,
    check=close(rtol=1e-5, atol=1e-5, hints=[
        Hint(_tanh_form, "these are the values of the tanh approximation of GELU; the exact form is asked for"),
        Hint(_sigmoid_form, "these are the values of the sigmoid approximation of GELU; the exact form is asked for"),
    ]),
    expected=torch.tensor([[-0.0040496940948903], [-0.15865525393145707], [-0.15426876936299345], [0.34573123063700656], [0.8413447460685429], [1.9544997361036416]]),
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


# ---------------------------------------------------------------- block
# These tests put PyTorch's own LayerNorm and feed-forward layers into your block in
# place of yours, so that they test how the block joins its parts (and not your
# LayerNorm and FeedForward, which have their own tests above). While your block is
# built, the names LayerNorm and FeedForward stand for placeholders, so that the
# block can be tested even before those two classes are written.


@contextlib.contextmanager
def _placeholders(ns):
    names = ns._names
    saved = {key: names[key] for key in ("LayerNorm", "FeedForward") if key in names}
    names["LayerNorm"] = lambda *args, **kwargs: torch.nn.LayerNorm(*args, **kwargs)
    names["FeedForward"] = lambda *args, **kwargs: torch.nn.Identity()
    try:
        yield
    finally:
        for key in ("LayerNorm", "FeedForward"):
            names.pop(key, None)
        names.update(saved)


class _TorchFeedForward(torch.nn.Module):
    """The feed-forward half of an nn.TransformerEncoderLayer, standing in for FeedForward."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer.linear2(self.layer.activation(self.layer.linear1(x)))


def _block_and_torch(ns, norm_first, activation, seed):
    layer = torch.nn.TransformerEncoderLayer(
        PC, PH, dim_feedforward=PF, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first
    )
    set_parameters(layer, seed)
    with _placeholders(ns):
        block = ns.TransformerBlock(PC, PH, PF, activation=activation, norm_first=norm_first)
    block.ln1, block.ln2, block.ff = layer.norm1, layer.norm2, _TorchFeedForward(layer)
    w_q, w_k, w_v = layer.self_attn.in_proj_weight.detach().chunk(3)
    b_q, b_k, b_v = layer.self_attn.in_proj_bias.detach().chunk(3)
    attn = block.attn
    with torch.no_grad():
        for proj, w, b in ((attn.q_proj, w_q, b_q), (attn.k_proj, w_k, b_k), (attn.v_proj, w_v, b_v), (attn.out_proj, layer.self_attn.out_proj.weight, layer.self_attn.out_proj.bias)):
            proj.weight.copy_(w)
            proj.bias.copy_(b)
    return block.eval(), layer.eval()


@suite.case("block", "has attn, ln1, ln2 and ff, and keeps the shape (B, T, C)", points=1, check=equal(), expected=([True, True, True, True], [PB, PT, PC]))
def _(ns):
    with _placeholders(ns):
        block = ns.TransformerBlock(PC, PH, PF)
    parts = [isinstance(getattr(block, name, None), torch.nn.Module) for name in ("attn", "ln1", "ln2", "ff")]
    block, _ = _block_and_torch(ns, True, "gelu", 4)
    return parts, list(block(randn(PB, PT, PC, seed=5)).shape)


@suite.case("block", "pre-norm (norm_first=True) equals nn.TransformerEncoderLayer, causal mask", points=2, check=satisfies(_pair_agrees("nn.TransformerEncoderLayer(norm_first=True)")))
def _(ns):
    block, layer = _block_and_torch(ns, True, "gelu", 6)
    x = randn(PB, PT, PC, seed=7)
    causal = torch.ones(PT, PT, dtype=torch.bool).triu(1)
    return block(x, mask=causal), layer(x, src_mask=causal)


@suite.case("block", "post-norm (norm_first=False) equals nn.TransformerEncoderLayer, causal mask", points=2, check=satisfies(_pair_agrees("nn.TransformerEncoderLayer(norm_first=False)")))
def _(ns):
    block, layer = _block_and_torch(ns, False, "relu", 8)
    x = randn(PB, PT, PC, seed=9)
    causal = torch.ones(PT, PT, dtype=torch.bool).triu(1)
    return block(x, mask=causal), layer(x, src_mask=causal)


def _causal_property(got):
    early, late = got
    if not early <= 1e-6:
        return f"changing the last token changed the outputs at earlier positions (by up to {early:.3g}): is the mask passed on?"
    if not late >= 1e-6:
        return "changing the last token did not change its own output"
    return None


@suite.case("block", "with a causal mask, changing the last token leaves earlier outputs alone", points=1, check=satisfies(_causal_property))
def _(ns):
    block, _ = _block_and_torch(ns, True, "gelu", 10)
    x = randn(PB, PT, PC, seed=11)
    changed = x.clone()
    changed[:, -1] = randn(PB, PC, seed=12)
    causal = torch.ones(PT, PT, dtype=torch.bool).triu(1)
    with torch.no_grad():
        a, b = block(x, mask=causal), block(changed, mask=causal)
    return float((a[:, :-1] - b[:, :-1]).abs().max()), float((a[:, -1] - b[:, -1]).abs().max())
