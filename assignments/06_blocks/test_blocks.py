"""Tests of the reference solutions of stage 06_blocks."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from solutions.blocks import FeedForward, LayerNorm, TransformerBlock

B, T, C, H, FF = 3, 5, 24, 4, 40  # all different (and D = 6), so a swapped axis shows up


def causal(t: int) -> torch.Tensor:
    return torch.ones(t, t, dtype=torch.bool).triu(1)


def test_layernorm_starts_as_identity_affine():
    ln = LayerNorm(C)
    assert torch.equal(ln.weight.data, torch.ones(C)) and torch.equal(ln.bias.data, torch.zeros(C))
    assert isinstance(ln.weight, nn.Parameter) and isinstance(ln.bias, nn.Parameter)


@pytest.mark.parametrize("eps", [1e-5, 1e-2])
def test_layernorm_equals_torch(eps):
    torch.manual_seed(0)
    ln, ref = LayerNorm(C, eps=eps), nn.LayerNorm(C, eps=eps)
    with torch.no_grad():
        ln.weight.copy_(torch.randn(C))
        ln.bias.copy_(torch.randn(C))
        ref.weight.copy_(ln.weight)
        ref.bias.copy_(ln.bias)
    x = torch.randn(B, T, C) * 3 + 1
    torch.testing.assert_close(ln(x), ref(x), rtol=1e-5, atol=1e-5)


def test_layernorm_rejects_wrong_width():
    with pytest.raises(ValueError):
        LayerNorm(C)(torch.randn(B, T, C + 1))


@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_feedforward(activation):
    torch.manual_seed(1)
    ff = FeedForward(C, FF, activation=activation)
    assert ff.fc1.weight.shape == (FF, C) and ff.fc2.weight.shape == (C, FF)
    x = torch.randn(B, T, C)
    act = {"gelu": F.gelu, "relu": F.relu}[activation]
    expected = ff.fc2(act(ff.fc1(x)))
    torch.testing.assert_close(ff(x), expected, rtol=0, atol=0)


def test_feedforward_gelu_is_exact_not_tanh():
    ff = FeedForward(1, 1)
    with torch.no_grad():
        ff.fc1.weight.fill_(1.0)
        ff.fc1.bias.zero_()
        ff.fc2.weight.fill_(1.0)
        ff.fc2.bias.zero_()
    x = torch.tensor([[1.5]])
    exact = 1.5 * 0.5 * (1 + torch.erf(torch.tensor(1.5) / 2**0.5))
    torch.testing.assert_close(ff(x)[0, 0], exact, rtol=1e-6, atol=1e-7)


def test_feedforward_rejects_unknown_activation():
    with pytest.raises(ValueError, match="activation"):
        FeedForward(C, FF, activation="swish")


def copy_into_torch(block: TransformerBlock, norm_first: bool, activation: str) -> nn.TransformerEncoderLayer:
    ref = nn.TransformerEncoderLayer(
        C, H, dim_feedforward=FF, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first
    )
    a = block.attn
    with torch.no_grad():
        ref.self_attn.in_proj_weight.copy_(torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight]))
        ref.self_attn.in_proj_bias.copy_(torch.cat([a.q_proj.bias, a.k_proj.bias, a.v_proj.bias]))
        ref.self_attn.out_proj.weight.copy_(a.out_proj.weight)
        ref.self_attn.out_proj.bias.copy_(a.out_proj.bias)
        ref.linear1.weight.copy_(block.ff.fc1.weight)
        ref.linear1.bias.copy_(block.ff.fc1.bias)
        ref.linear2.weight.copy_(block.ff.fc2.weight)
        ref.linear2.bias.copy_(block.ff.fc2.bias)
        for mine, theirs in [(block.ln1, ref.norm1), (block.ln2, ref.norm2)]:
            theirs.weight.copy_(mine.weight)
            theirs.bias.copy_(mine.bias)
    return ref.eval()


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("activation", ["gelu", "relu"])
@pytest.mark.parametrize("masked", [True, False])
def test_block_equals_torch_encoder_layer(norm_first, activation, masked):
    torch.manual_seed(2)
    block = TransformerBlock(C, H, FF, dropout=0.0, activation=activation, norm_first=norm_first).eval()
    with torch.no_grad():  # LayerNorm parameters away from their start, so a swap shows
        for ln in (block.ln1, block.ln2):
            ln.weight.copy_(1 + 0.3 * torch.randn(C))
            ln.bias.copy_(0.3 * torch.randn(C))
    ref = copy_into_torch(block, norm_first, activation)
    x = torch.randn(B, T, C)
    mask = causal(T) if masked else None
    with torch.no_grad():
        out = block(x, mask=mask)
        expected = ref(x, src_mask=mask)
    assert out.shape == (B, T, C)
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)


def test_block_has_named_parts_and_is_causal():
    torch.manual_seed(3)
    block = TransformerBlock(C, H, FF).eval()
    assert isinstance(block.ln1, LayerNorm) and isinstance(block.ln2, LayerNorm)
    assert isinstance(block.ff, FeedForward)
    x = torch.randn(B, T, C)
    changed = x.clone()
    changed[:, -1] += 1.0
    with torch.no_grad():
        a, b = block(x, mask=causal(T)), block(changed, mask=causal(T))
    torch.testing.assert_close(a[:, :-1], b[:, :-1], rtol=0, atol=0)


def test_layernorm_refuses_bad_arguments():
    for bad in ({"dim": 0}, {"dim": -3}, {"dim": C, "eps": -1e-5}):
        with pytest.raises(ValueError):
            LayerNorm(**bad)


def test_public_literals_are_what_pytorch_computes():
    """The expected values and hint values written as literals in public.py."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("public_06", Path(__file__).with_name("public.py"))
    public = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(public)
    expected = {c.name: c.expected for c in public.suite.cases}
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0]], dtype=torch.float64)
    torch.testing.assert_close(
        expected["eps=1 on [1, 2, 3, 4]: (x - 2.5) / sqrt(1.25 + 1)"].double(),
        F.layer_norm(x, (4,), eps=1.0),
        rtol=1e-7,
        atol=1e-7,
    )
    tiny = torch.tensor([[0.0, 0.001, 0.002, 0.003]], dtype=torch.float64)
    name = "the default eps=1e-5 matters when the spread is tiny: [0, 0.001, 0.002, 0.003]"
    torch.testing.assert_close(expected[name].double(), F.layer_norm(tiny, (4,), eps=1e-5), rtol=1e-7, atol=1e-7)
    at = torch.tensor(public._GELU_AT, dtype=torch.float64)
    torch.testing.assert_close(
        torch.tensor(public._GELU_TANH, dtype=torch.float64), F.gelu(at, approximate="tanh"), rtol=1e-12, atol=1e-12
    )
    torch.testing.assert_close(
        torch.tensor(public._GELU_SIGMOID, dtype=torch.float64), at * torch.sigmoid(1.702 * at), rtol=1e-12, atol=1e-12
    )
