"""Tests of the reference solutions of stage 03_attention."""

import math

import pytest
import torch
import torch.nn.functional as F

from solutions.attention import (
    TokenPositionEmbedding,
    apply_rope,
    scaled_dot_product_attention,
    sinusoidal_positions,
)

LEAD = (3, 4)  # leading dims, e.g. batch and heads
T_Q, T_K, D_K, D_V = 5, 6, 7, 9  # all different, so a swapped axis shows up


def make_qkv(generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    Q = torch.randn(*LEAD, T_Q, D_K, generator=generator)
    K = torch.randn(*LEAD, T_K, D_K, generator=generator)
    V = torch.randn(*LEAD, T_K, D_V, generator=generator)
    return Q, K, V


def random_mask(shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
    """A random boolean mask (True = blocked) in which every query keeps key 0."""
    mask = torch.rand(*shape, generator=generator) < 0.5
    mask[..., 0] = False
    return mask


# --- scaled dot-product attention -------------------------------------------------


def test_attention_without_mask_equals_torch():
    g = torch.Generator().manual_seed(0)
    Q, K, V = make_qkv(g)
    out, weights = scaled_dot_product_attention(Q, K, V)
    assert out.shape == (*LEAD, T_Q, D_V)
    assert weights.shape == (*LEAD, T_Q, T_K)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(Q, K, V), rtol=1e-5, atol=1e-6)
    expected_weights = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(D_K), dim=-1)
    torch.testing.assert_close(weights, expected_weights, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(weights.sum(-1), torch.ones(*LEAD, T_Q), rtol=0, atol=1e-6)


@pytest.mark.parametrize("mask_shape", [(T_Q, T_K), (LEAD[0], 1, T_Q, T_K), (*LEAD, T_Q, T_K), (LEAD[0], 1, 1, T_K)])
def test_attention_with_mask_equals_torch(mask_shape):
    g = torch.Generator().manual_seed(1)
    Q, K, V = make_qkv(g)
    mask = random_mask(mask_shape, g)
    out, weights = scaled_dot_product_attention(Q, K, V, mask)
    # torch's boolean attn_mask means the opposite: True = may attend
    expected = F.scaled_dot_product_attention(Q, K, V, attn_mask=~mask)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-6)
    full_mask = mask.expand(*LEAD, T_Q, T_K)
    assert torch.all(weights[full_mask] == 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(*LEAD, T_Q), rtol=0, atol=1e-6)
    torch.testing.assert_close(out, weights @ V, rtol=1e-6, atol=1e-6)


def test_attention_with_a_causal_mask_equals_torch_is_causal():
    g = torch.Generator().manual_seed(2)
    Q = torch.randn(*LEAD, T_K, D_K, generator=g)
    _, K, V = make_qkv(g)
    causal = torch.ones(T_K, T_K, dtype=torch.bool).triu(1)
    out, _ = scaled_dot_product_attention(Q, K, V, causal)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(Q, K, V, is_causal=True), rtol=1e-5, atol=1e-6)


def test_attention_gradients_flow():
    g = torch.Generator().manual_seed(3)
    Q, K, V = (t.requires_grad_() for t in make_qkv(g))
    out, _ = scaled_dot_product_attention(Q, K, V, random_mask((T_Q, T_K), g))
    out.sum().backward()
    assert all(t.grad is not None and torch.isfinite(t.grad).all() for t in (Q, K, V))


def test_attention_rejects_bad_arguments():
    g = torch.Generator().manual_seed(4)
    Q, K, V = make_qkv(g)
    with pytest.raises(ValueError, match="d_k"):
        scaled_dot_product_attention(Q, K[..., :-1], V)
    with pytest.raises(ValueError, match="keys"):
        scaled_dot_product_attention(Q, K, V[..., :-1, :])
    with pytest.raises(ValueError, match="boolean"):
        scaled_dot_product_attention(Q, K, V, torch.zeros(T_Q, T_K))
    with pytest.raises(ValueError, match="broadcast"):
        scaled_dot_product_attention(Q, K, V, torch.zeros(T_K, T_Q, dtype=torch.bool))


def test_scaling_by_sqrt_dk_keeps_the_softmax_from_saturating():
    """The notebook's claim: unscaled weights turn one-hot as d_k grows; scaled ones do not."""
    g = torch.Generator().manual_seed(6)
    peaks = {}
    for d_k in (4, 64, 1024):
        Q = torch.randn(500, 1, d_k, generator=g)
        K = torch.randn(500, 12, d_k, generator=g)
        _, scaled = scaled_dot_product_attention(Q, K, K)
        unscaled = torch.softmax(Q @ K.transpose(-2, -1), dim=-1)
        peaks[d_k] = (scaled.max(-1).values.mean().item(), unscaled.max(-1).values.mean().item())
    assert peaks[1024][1] > 0.9  # unscaled: almost all weight on one key of twelve
    assert peaks[4][1] < 0.6
    assert all(0.2 < scaled < 0.35 for scaled, _ in peaks.values())  # scaled: the same at every width


# --- embeddings -----------------------------------------------------------------


def test_token_position_embedding():
    torch.manual_seed(0)
    emb = TokenPositionEmbedding(vocab_size=11, embed_dim=8, max_seq_len=6)
    assert isinstance(emb.tok_emb, torch.nn.Embedding) and isinstance(emb.pos_emb, torch.nn.Embedding)
    assert emb.tok_emb.weight.shape == (11, 8) and emb.pos_emb.weight.shape == (6, 8)
    idx = torch.randint(0, 11, (3, 5))
    out = emb(idx)
    assert out.shape == (3, 5, 8)
    torch.testing.assert_close(out, emb.tok_emb.weight[idx] + emb.pos_emb.weight[:5], rtol=0, atol=0)
    assert emb(torch.zeros(2, 6, dtype=torch.long)).shape == (2, 6, 8)
    with pytest.raises(ValueError, match="max_seq_len"):
        emb(torch.zeros(2, 7, dtype=torch.long))
    with pytest.raises(ValueError, match="embed_dim"):
        TokenPositionEmbedding(11, 0, 6)


def test_sinusoidal_positions_formula():
    T, d = 13, 10
    pe = sinusoidal_positions(T, d)
    assert pe.shape == (T, d) and pe.dtype == torch.float32
    expected = torch.empty(T, d, dtype=torch.float64)
    for p in range(T):
        for i in range(d // 2):
            angle = p / 10000 ** (2 * i / d)
            expected[p, 2 * i] = math.sin(angle)
            expected[p, 2 * i + 1] = math.cos(angle)
    torch.testing.assert_close(pe, expected.float(), rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="even"):
        sinusoidal_positions(T, 7)


# --- rotary positions -------------------------------------------------------------


def test_rope_interleaved_pairs_and_angles():
    D, T = 6, 4
    x = torch.zeros(T, D)
    x[:, 2] = 1.0  # pair i = 1 only, as (1, 0)
    y = apply_rope(x)
    angle = torch.arange(T, dtype=torch.float64) * 10000.0 ** (-2 * 1 / D)
    expected = torch.zeros(T, D, dtype=torch.float64)
    expected[:, 2] = torch.cos(angle)
    expected[:, 3] = torch.sin(angle)
    torch.testing.assert_close(y, expected.float(), rtol=0, atol=1e-6)
    torch.testing.assert_close(apply_rope(x, base=100.0)[0], x[0], rtol=0, atol=0)  # position 0 is unchanged


def test_rope_keeps_shapes_and_norms():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(*LEAD, 9, 8, generator=g)
    y = apply_rope(x)
    assert y.shape == x.shape and y.dtype == x.dtype
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1), rtol=1e-5, atol=1e-5)
    pair_norms = lambda t: t.reshape(*t.shape[:-1], -1, 2).norm(dim=-1)  # noqa: E731
    torch.testing.assert_close(pair_norms(y), pair_norms(x), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="even"):
        apply_rope(torch.randn(2, 5, 7))


def test_rope_dot_products_depend_only_on_relative_position():
    g = torch.Generator().manual_seed(6)
    T, D = 12, 8
    q, k = torch.randn(D, generator=g, dtype=torch.float64), torch.randn(D, generator=g, dtype=torch.float64)
    rq = apply_rope(q.expand(T, D).clone())  # q placed at every position
    rk = apply_rope(k.expand(T, D).clone())
    scores = rq @ rk.T  # scores[p, p'] = <R_p q, R_p' k>
    for offset in range(-(T - 1), T):
        diagonal = torch.diagonal(scores, offset=offset)
        torch.testing.assert_close(diagonal, diagonal[:1].expand_as(diagonal), rtol=1e-9, atol=1e-9)
    assert not torch.allclose(torch.diagonal(scores, 1)[0], torch.diagonal(scores, 2)[0])
