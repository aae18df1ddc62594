"""Tests of the reference solutions of stage 04_masking."""

import pytest
import torch
import torch.nn.functional as F

from solutions.masking import causal_mask, combined_mask, lm_loss, pad_and_shift, padding_mask, shift_right

PAD = 0
IDS = torch.tensor(
    [
        [5, 6, 7, 8, 9],
        [5, 6, 7, PAD, PAD],
        [5, PAD, PAD, PAD, PAD],
    ]
)  # B = 3, T = 5


def test_causal_mask_values():
    mask = causal_mask(4)
    assert mask.shape == (4, 4) and mask.dtype == torch.bool
    expected = torch.tensor(
        [
            [False, True, True, True],
            [False, False, True, True],
            [False, False, False, True],
            [False, False, False, False],
        ]
    )
    assert torch.equal(mask, expected)
    for T in (1, 7):
        i, j = torch.meshgrid(torch.arange(T), torch.arange(T), indexing="ij")
        assert torch.equal(causal_mask(T), j > i)
    assert causal_mask(3, device="cpu").device.type == "cpu"
    assert causal_mask(0).shape == (0, 0)
    with pytest.raises(ValueError, match="T"):
        causal_mask(-1)


def test_padding_mask_values():
    mask = padding_mask(IDS, PAD)
    assert mask.shape == (3, 1, 5) and mask.dtype == torch.bool
    assert torch.equal(mask[:, 0], IDS == PAD)
    assert not padding_mask(IDS, pad_id=99).any()
    with pytest.raises(ValueError, match="shape"):
        padding_mask(IDS[0], PAD)


def test_combined_mask_is_causal_or_padding():
    mask = combined_mask(IDS, PAD)
    assert mask.shape == (3, 5, 5) and mask.dtype == torch.bool
    causal = torch.ones(5, 5, dtype=torch.bool).triu(1)
    for b in range(3):
        for q in range(5):
            for k in range(5):
                assert mask[b, q, k].item() == (bool(causal[q, k]) or IDS[b, k].item() == PAD)
    # every query still sees key 0 (no padding at the start), so no row is fully blocked
    assert not mask.all(dim=-1).any()


def test_shift_right():
    tokens = torch.tensor([[5, 6, 7, 8], [9, 10, 11, 12]])
    shifted = shift_right(tokens, start_id=1)
    assert shifted.dtype == tokens.dtype
    assert shifted.tolist() == [[1, 5, 6, 7], [1, 9, 10, 11]]
    assert shift_right(tokens[:, :1], start_id=3).tolist() == [[3], [3]]
    with pytest.raises(ValueError, match="shape"):
        shift_right(tokens[0], start_id=1)


def test_pad_and_shift_example():
    inputs, targets = pad_and_shift([[5, 6, 7], [8], [9, 10]], start_id=1, pad_id=0)
    assert inputs.dtype == torch.long and targets.dtype == torch.long
    assert inputs.tolist() == [[1, 5, 6], [1, 0, 0], [1, 9, 0]]
    assert targets.tolist() == [[5, 6, 7], [8, -100, -100], [9, 10, -100]]
    inputs, targets = pad_and_shift([[4, 4]], start_id=2, pad_id=3, ignore_index=-1)
    assert inputs.tolist() == [[2, 4]] and targets.tolist() == [[4, 4]]
    inputs, targets = pad_and_shift([[4], []], start_id=2, pad_id=3, ignore_index=-1)
    assert inputs.tolist() == [[2], [3]] and targets.tolist() == [[4], [-1]]
    with pytest.raises(ValueError, match="sequence"):
        pad_and_shift([], start_id=1, pad_id=0)


def test_pad_and_shift_agrees_with_shift_right():
    seqs = [[5, 6, 7, 8], [9, 10, 11, 12]]
    inputs, targets = pad_and_shift(seqs, start_id=1, pad_id=0)
    assert torch.equal(inputs, shift_right(torch.tensor(seqs), start_id=1))
    assert torch.equal(targets, torch.tensor(seqs))


@pytest.mark.parametrize("ignore_index", [-100, 0])
def test_lm_loss_equals_cross_entropy(ignore_index):
    g = torch.Generator().manual_seed(0)
    B, T, V = 3, 5, 11
    logits = torch.randn(B, T, V, generator=g)
    targets = torch.randint(1, V, (B, T), generator=g)
    targets[1, 3:] = ignore_index
    targets[2, 1:] = ignore_index
    loss = lm_loss(logits, targets, ignore_index=ignore_index)
    assert loss.dim() == 0
    expected = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), ignore_index=ignore_index)
    torch.testing.assert_close(loss, expected, rtol=1e-6, atol=1e-6)
    keep = targets != ignore_index
    by_hand = -torch.log_softmax(logits, dim=-1)[keep, targets[keep]].mean()
    torch.testing.assert_close(loss, by_hand, rtol=1e-5, atol=1e-6)


def test_lm_loss_with_pad_and_shift_targets_and_gradients():
    _, targets = pad_and_shift([[3, 4, 5], [6]], start_id=1, pad_id=0)
    logits = torch.zeros(2, 3, 8, requires_grad=True)
    loss = lm_loss(logits, targets)
    torch.testing.assert_close(loss, torch.log(torch.tensor(8.0)), rtol=1e-6, atol=1e-6)
    loss.backward()
    assert torch.all(logits.grad[1, 1:] == 0)  # ignored positions get no gradient
    with pytest.raises(ValueError, match="shape|targets"):
        lm_loss(torch.zeros(2, 3, 8), torch.zeros(2, 4, dtype=torch.long))
