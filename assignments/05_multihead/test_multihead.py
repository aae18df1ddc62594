"""Tests of the reference solutions of stage 05_multihead."""

import pytest
import torch
import torch.nn as nn

from solutions.multihead import MultiHeadAttention, merge_heads, split_heads

B, T, C, H = 3, 5, 24, 4  # all different (and D = 6), so a swapped axis shows up


def copy_into_torch(mha: MultiHeadAttention) -> nn.MultiheadAttention:
    """An ``nn.MultiheadAttention`` holding the weights of ``mha``."""
    ref = nn.MultiheadAttention(mha.embed_dim, mha.num_heads, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([mha.q_proj.weight, mha.k_proj.weight, mha.v_proj.weight]))
        ref.in_proj_bias.copy_(torch.cat([mha.q_proj.bias, mha.k_proj.bias, mha.v_proj.bias]))
        ref.out_proj.weight.copy_(mha.out_proj.weight)
        ref.out_proj.bias.copy_(mha.out_proj.bias)
    return ref.eval()


def causal(t: int) -> torch.Tensor:
    return torch.ones(t, t, dtype=torch.bool).triu(1)


def test_split_heads_shape_and_layout():
    x = torch.randn(B, T, C)
    heads = split_heads(x, H)
    assert heads.shape == (B, H, T, C // H)
    d = C // H
    for h in range(H):
        torch.testing.assert_close(heads[:, h], x[:, :, h * d : (h + 1) * d], rtol=0, atol=0)


def test_merge_heads_inverts_split_heads():
    x = torch.randn(B, T, C)
    merged = merge_heads(split_heads(x, H))
    assert merged.shape == (B, T, C)
    assert torch.equal(merged, x)
    y = torch.randn(B, H, T, 7)
    assert torch.equal(split_heads(merge_heads(y), H), y)


@pytest.mark.parametrize("bad", [5, 0, -2])
def test_split_heads_rejects_bad_num_heads(bad):
    with pytest.raises(ValueError):
        split_heads(torch.randn(B, T, C), bad)


def test_mha_rejects_indivisible_embed_dim():
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(10, 4)


@pytest.mark.parametrize("masked", [False, True])
def test_mha_equals_torch_multihead_attention(masked):
    torch.manual_seed(0)
    mha = MultiHeadAttention(C, H).eval()
    ref = copy_into_torch(mha)
    x = torch.randn(B, T, C)
    mask = causal(T) if masked else None
    out, weights = mha(x, mask=mask, return_weights=True)
    with torch.no_grad():
        ref_out, ref_weights = ref(x, x, x, attn_mask=mask, need_weights=True, average_attn_weights=False)
    assert out.shape == (B, T, C) and weights.shape == (B, H, T, T)
    torch.testing.assert_close(out, ref_out, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(weights, ref_weights, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(mha(x, mask=mask), out, rtol=0, atol=0)


def test_mha_without_bias():
    mha = MultiHeadAttention(C, H, bias=False)
    assert all(lin.bias is None for lin in (mha.q_proj, mha.k_proj, mha.v_proj, mha.out_proj))
    assert mha(torch.randn(B, T, C)).shape == (B, T, C)


def test_mha_mask_shapes_agree():
    """A (T,T) mask, the same mask per sequence (B,T,T), and a padding mask (B,1,T)."""
    torch.manual_seed(1)
    mha = MultiHeadAttention(C, H).eval()
    x = torch.randn(B, T, C)
    out_2d = mha(x, mask=causal(T))
    out_3d = mha(x, mask=causal(T).expand(B, T, T))
    torch.testing.assert_close(out_2d, out_3d, rtol=0, atol=0)

    pad = torch.zeros(B, 1, T, dtype=torch.bool)
    pad[0, 0, 3:] = True  # sequence 0: keys 3 and 4 are padding
    _, weights = mha(x, mask=pad, return_weights=True)
    assert torch.all(weights[0, :, :, 3:] == 0)
    assert torch.all(weights[1:] > 0)
    ref = copy_into_torch(mha)
    full = pad.expand(B, T, T).repeat_interleave(H, dim=0)  # nn.MultiheadAttention wants (B*H, T, T)
    with torch.no_grad():
        ref_out, _ = ref(x, x, x, attn_mask=full)
    torch.testing.assert_close(mha(x, mask=pad), ref_out, rtol=1e-5, atol=1e-6)


def test_mha_rejects_float_mask():
    mha = MultiHeadAttention(C, H)
    with pytest.raises(ValueError, match="boolean"):
        mha(torch.randn(B, T, C), mask=causal(T).float())


def test_mha_causal_outputs_ignore_the_future():
    torch.manual_seed(2)
    mha = MultiHeadAttention(C, H).eval()
    x = torch.randn(B, T, C)
    changed = x.clone()
    changed[:, 3:] = torch.randn(B, T - 3, C)
    out, out_changed = mha(x, mask=causal(T)), mha(changed, mask=causal(T))
    torch.testing.assert_close(out[:, :3], out_changed[:, :3], rtol=0, atol=0)
    assert not torch.allclose(out[:, 3:], out_changed[:, 3:])


def test_weights_rows_sum_to_one():
    mha = MultiHeadAttention(C, H)
    _, weights = mha(torch.randn(B, T, C), mask=causal(T), return_weights=True)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, H, T), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("suite", ["public", "hidden"])
def test_the_suites_head_tables_split_as_split_heads_does(suite):
    """The tables the mha tests answer split_heads and merge_heads from (no implementation in
    the suites) hold, for each shape they list, exactly what the reference computes."""
    import sys

    from autograder.course import get_stage
    from autograder.engine.suites import exec_suite

    stage = get_stage("05_multihead")
    public = None
    if suite == "hidden":  # it imports helpers of its public suite: handed over, not found on sys.path
        exec_suite(stage.public.read_text(encoding="utf-8"), str(stage.public), "test_tables_hidden_public")
        public = sys.modules["test_tables_hidden_public"]
    path = getattr(stage, suite)
    exec_suite(path.read_text(encoding="utf-8"), str(path), f"test_tables_{suite}", public)
    module = vars(sys.modules[f"test_tables_{suite}"])
    names = {"split_heads": split_heads, "merge_heads": merge_heads}
    notebook = type("Notebook", (), {"_names": names})()  # what _tabled_heads reads of a Namespace
    assert module["_HEAD_ROWS"]
    for shape, heads in module["_HEAD_ROWS"]:
        x = torch.randn(*shape)
        y = torch.randn(shape[0], heads, shape[1], shape[2] // heads)
        with module["_tabled_heads"](notebook):
            split, merge = names["split_heads"], names["merge_heads"]
            assert split is not split_heads and merge is not merge_heads
            torch.testing.assert_close(split(x, heads), split_heads(x, heads), rtol=0, atol=0)
            torch.testing.assert_close(merge(y), merge_heads(y), rtol=0, atol=0)
        assert names["split_heads"] is split_heads and names["merge_heads"] is merge_heads
