"""Public tests of stage 03_attention: students run these in the notebook with check()."""

import math

import torch

from autograder.kit import Hint, Suite, catch, close, equal, raises, randn, satisfies

suite = Suite(public=True)


# ---------------------------------------------------------------- embedding


@suite.case(
    "embedding",
    "tok_emb and pos_emb are nn.Embedding tables of the right sizes",
    points=1,
    check=equal(),
    expected={"tok_emb": "Embedding", "pos_emb": "Embedding", "parameters": [("pos_emb.weight", [8, 4]), ("tok_emb.weight", [10, 4])]},
)
def _(ns):
    emb = ns.TokenPositionEmbedding(vocab_size=10, embed_dim=4, max_seq_len=8)
    return {
        "tok_emb": type(getattr(emb, "tok_emb", None)).__name__,
        "pos_emb": type(getattr(emb, "pos_emb", None)).__name__,
        "parameters": sorted((name, list(p.shape)) for name, p in emb.named_parameters()),
    }


def _sum_problem(got):
    out, want = got
    if type(out) is not torch.Tensor:
        return f"forward must return a tensor, got {type(out).__name__}"
    if tuple(out.shape) != (2, 3, 4):
        return f"expected shape (2, 3, 4) (B, T, C), got {tuple(out.shape)}"
    err = float((out.detach() - want).abs().max())
    if err > 1e-5:
        return (
            f"the output differs from tok_emb.weight[idx] + pos_emb.weight[:T] by up to {err:.3g}: "
            "each token's row plus the row of its position (0, 1, 2, ...), nothing else"
        )
    return None


@suite.case("embedding", "the output is the token row plus the row of its position", points=1, check=satisfies(_sum_problem))
def _(ns):
    torch.manual_seed(0)
    emb = ns.TokenPositionEmbedding(vocab_size=10, embed_dim=4, max_seq_len=8)
    idx = torch.tensor([[1, 2, 1], [3, 3, 0]])
    out = emb(idx)
    want = emb.tok_emb.weight.detach()[idx] + emb.pos_emb.weight.detach()[:3]
    return out, want


@suite.case("embedding", "a sequence longer than max_seq_len raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    emb = ns.TokenPositionEmbedding(vocab_size=10, embed_dim=4, max_seq_len=8)
    return catch(emb, torch.zeros(1, 9, dtype=torch.long))


# ---------------------------------------------------------------- sinusoidal


def _table(rows, width):
    """PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(...), written out with the math module."""
    out = []
    for p in range(rows):
        row = []
        for col in range(width):
            pair = col // 2
            angle = p / 10000 ** (2 * pair / width)
            row.append(math.sin(angle) if col % 2 == 0 else math.cos(angle))
        out.append(row)
    return torch.tensor(out, dtype=torch.float32)


@suite.case(
    "sinusoidal",
    "the table for max_seq_len=4, embed_dim=6",
    points=1,
    check=close(rtol=1e-5, atol=1e-6, hints=[
        Hint(lambda got, exp: torch.allclose(got[:, 0::2], exp[:, 1::2], atol=1e-4), "sines and cosines look swapped: even columns hold sin, odd columns cos"),
        Hint(lambda got, exp: torch.allclose(got[:, :3], exp[:, 0::2], atol=1e-4), "the sines fill the first half: here sin and cos alternate, column by column"),
    ]),
    expected=_table(4, 6),
)
def _(ns):
    return ns.sinusoidal_positions(4, 6)


@suite.case("sinusoidal", "an odd embed_dim raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.sinusoidal_positions, 10, 5)


# ---------------------------------------------------------------- rope


@suite.case(
    "rope",
    "T=2, D=2: position 0 stays, position 1 turns by 1 radian",
    points=1,
    check=close(rtol=1e-5, atol=1e-6, hints=[
        Hint(lambda got, exp: torch.allclose(got[1], torch.tensor([math.cos(1.0), -math.sin(1.0)]), atol=1e-4), "the rotation goes the wrong way round: (a, b) becomes (a cos - b sin, a sin + b cos)"),
    ]),
    expected=torch.tensor([[1.0, 0.0], [math.cos(1.0), math.sin(1.0)]]),
)
def _(ns):
    return ns.apply_rope(torch.tensor([[1.0, 0.0], [1.0, 0.0]]))


def _rotation_problem(got):
    x, y = got
    if type(y) is not torch.Tensor or y.shape != x.shape:
        return f"expected a tensor of the input's shape {tuple(x.shape)}, got {type(y).__name__} {tuple(getattr(y, 'shape', ()))}"
    if not torch.allclose(y[..., 0, :], x[..., 0, :], atol=1e-6):
        return "position 0 must not move (its angle is 0)"
    pairs_x = x.reshape(*x.shape[:-1], -1, 2).norm(dim=-1)
    pairs_y = y.reshape(*y.shape[:-1], -1, 2).norm(dim=-1)
    if not torch.allclose(pairs_x, pairs_y, atol=1e-5):
        return "a rotation keeps the length of every pair (x[2i], x[2i+1]); yours changes some"
    return None


@suite.case("rope", "keeps the shape, position 0 and the length of every pair", points=1, check=satisfies(_rotation_problem))
def _(ns):
    x = randn(2, 3, 5, 4, seed=1)
    return x, ns.apply_rope(x)


def _relative_problem(scores):
    if type(scores) is not torch.Tensor or tuple(scores.shape) != (6, 6):
        return "could not form the (6, 6) matrix of scores q_p . k_p' from your rotated vectors"
    for offset in range(-5, 6):
        diag = torch.diagonal(scores, offset)
        if float(diag.max() - diag.min()) > 1e-4:
            return f"q_p . k_p' should depend only on p - p', but it varies along the diagonal p' - p = {offset}"
    return None


@suite.case("rope", "a rotated query . key depends only on the offset of the positions", points=1, check=satisfies(_relative_problem))
def _(ns):
    q = randn(8, seed=2).expand(6, 8).clone()  # the same vector at positions 0..5
    k = randn(8, seed=3).expand(6, 8).clone()
    return ns.apply_rope(q) @ ns.apply_rope(k).T


@suite.case("rope", "an odd D raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.apply_rope, torch.ones(4, 5))


# ---------------------------------------------------------------- attention

# One query, two keys, d_k = 4: the scores are 4 and 0, scaled by sqrt(4) they are 2 and 0.
_Q1 = torch.tensor([[[2.0, 0.0, 0.0, 0.0]]])
_K1 = torch.tensor([[[2.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]])
_V1 = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
_W1 = [math.exp(2) / (math.exp(2) + 1), 1 / (math.exp(2) + 1)]

_SCALE_HINTS = [
    Hint(lambda got, exp: abs(float(got.reshape(-1)[0]) - math.exp(1) / (math.exp(1) + 1)) < 1e-3, "you divided the scores by d_k = 4; the scale is sqrt(d_k) = 2"),
    Hint(lambda got, exp: abs(float(got.reshape(-1)[0]) - math.exp(4) / (math.exp(4) + 1)) < 1e-3, "the scores must be divided by sqrt(d_k) before the softmax"),
]


@suite.case(
    "attention",
    "one query, two keys, d_k = 4: the weights are softmax([4, 0] / 2)",
    points=1,
    check=close(rtol=1e-5, atol=1e-6, hints=_SCALE_HINTS),
    expected=torch.tensor([[_W1]]),
)
def _(ns):
    return ns.scaled_dot_product_attention(_Q1, _K1, _V1)[1]


@suite.case(
    "attention",
    "with V = identity the output equals the weights",
    points=1,
    check=close(rtol=1e-5, atol=1e-6, hints=_SCALE_HINTS),
    expected=torch.tensor([[_W1]]),
)
def _(ns):
    return ns.scaled_dot_product_attention(_Q1, _K1, _V1)[0]


def _shape_problem(got):
    out, weights = got
    for what, value, shape in (("out", out, (2, 3, 6)), ("weights", weights, (2, 3, 5))):
        if type(value) is not torch.Tensor:
            return f"{what} must be a tensor, got {type(value).__name__}"
        if tuple(value.shape) != shape:
            return f"with Q (2, 3, 4), K (2, 5, 4) and V (2, 5, 6), {what} should have shape {shape}, got {tuple(value.shape)}"
    sums = weights.detach().sum(dim=-1)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-5):
        return "the weights of each query (over the keys, the last axis) must sum to 1"
    return None


@suite.case(
    "attention",
    "T_q=3, T_k=5, d_v=6: shapes, and each query's weights sum to 1",
    points=1,
    check=satisfies(_shape_problem),
)
def _(ns):
    return ns.scaled_dot_product_attention(randn(2, 3, 4, seed=4), randn(2, 5, 4, seed=5), randn(2, 5, 6, seed=6))


_MASK = torch.tensor([[False, True, True], [False, False, True], [True, False, False]])


def _mask_problem(weights):
    if type(weights) is not torch.Tensor or tuple(weights.shape) != (2, 3, 3):
        return f"expected weights of shape (2, 3, 3), got {type(weights).__name__} {tuple(getattr(weights, 'shape', ()))}"
    blocked = _MASK.expand(2, 3, 3)
    if float(weights[blocked].abs().max()) != 0.0:
        if float(weights[~blocked].abs().min()) == 0.0:
            return "the mask looks inverted: True means BLOCKED in this course (F.scaled_dot_product_attention uses the opposite)"
        return "a blocked key (True in the mask) got some weight: its score must become -inf before the softmax (a score of 0 still gets exp(0))"
    if float(weights[~blocked].min()) <= 0.0:
        return "a key that is not blocked got no weight"
    sums = weights.sum(dim=-1)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-5):
        return "with a mask, each query's weights must still sum to 1 over the keys it may see"
    return None


@suite.case("attention", "blocked keys (True in the mask) get weight exactly 0", points=1, check=satisfies(_mask_problem))
def _(ns):
    x = randn(2, 3, 4, seed=7)
    return ns.scaled_dot_product_attention(x, x, x, mask=_MASK)[1]


@suite.case("attention", "Q and K of different widths raise ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.scaled_dot_product_attention, torch.ones(1, 2, 4), torch.ones(1, 2, 3), torch.ones(1, 2, 3))
