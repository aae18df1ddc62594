"""Tests of the reference solutions of stage 04_masking."""

import random

import pytest
import torch
import torch.nn.functional as F

from solutions.attention import TokenPositionEmbedding, scaled_dot_product_attention
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


# --- the masks at work: causality, and the model that cheats without them -----------


class TinyLM(torch.nn.Module):
    """One attention layer between an embedding and a head, as in the notebook's demonstration."""

    def __init__(self, vocab_size: int, width: int, block_size: int) -> None:
        super().__init__()
        self.embed = TokenPositionEmbedding(vocab_size, width, block_size)
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.ff = torch.nn.Sequential(
            torch.nn.LayerNorm(width),
            torch.nn.Linear(width, 4 * width),
            torch.nn.GELU(),
            torch.nn.Linear(4 * width, width),
        )
        self.head = torch.nn.Sequential(torch.nn.LayerNorm(width), torch.nn.Linear(width, vocab_size))

    def forward(self, idx: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        h = self.embed(idx)  # (B, T, C)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        h = h + scaled_dot_product_attention(q, k, v, mask)[0]
        return self.head(h + self.ff(h))  # (B, T, V)


def test_black_box_causality_of_a_model_under_the_causal_mask():
    torch.manual_seed(0)
    T, V = 9, 13
    model = TinyLM(V, 16, T).eval()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, V, (4, T), generator=g)
    with torch.no_grad():
        base = model(ids, causal_mask(T))
        unmasked = model(ids)
        for t in range(T):
            changed = ids.clone()
            changed[:, t:] = (ids[:, t:] + 1 + torch.randint(0, V - 1, (4, T - t), generator=g)) % V
            out = model(changed, causal_mask(T))
            torch.testing.assert_close(out[:, :t], base[:, :t], rtol=0, atol=1e-6)
            assert (out[:, t] - base[:, t]).abs().max() > 1e-3  # a position sees its own token
            if t:
                assert (model(changed)[:, :t] - unmasked[:, :t]).abs().max() > 1e-3  # without the mask the future leaks


def test_black_box_combined_mask_ignores_the_future_and_the_padding():
    g = torch.Generator().manual_seed(2)
    ids = torch.tensor([[4, 5, 6, 7, PAD, PAD], [8, 9, PAD, PAD, PAD, PAD], [1, 2, 3, 4, 5, 6]])
    x = torch.randn(3, 6, 8, generator=g)
    mask = combined_mask(ids, PAD)
    base, _ = scaled_dot_product_attention(x, x, x, mask)
    real = ids != PAD
    for t in range(6):
        y = x.clone()
        y[:, t:] = torch.randn(3, 6 - t, 8, generator=g)  # the future
        y[~real] = torch.randn(int((~real).sum()), 8, generator=g)  # and every padded position
        out, _ = scaled_dot_product_attention(y, y, y, mask)
        keep = real.clone()
        keep[:, t:] = False
        torch.testing.assert_close(out[keep], base[keep], rtol=0, atol=1e-6)


def _markov_text(length: int, vocab_size: int, seed: int) -> torch.Tensor:
    """Ids from a fixed random Markov chain: something to learn, and a next token to copy."""
    rng = random.Random(seed)
    table = [[rng.random() ** 3 for _ in range(vocab_size)] for _ in range(vocab_size)]
    ids = [0]
    for _ in range(length - 1):
        ids.append(rng.choices(range(vocab_size), weights=table[ids[-1]])[0])
    return torch.tensor(ids)


@pytest.fixture
def one_thread():
    """Matrices this small train several times faster on one thread than on two."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_an_unmasked_model_cheats_in_training_and_fails_honestly(one_thread):
    V, T, START = 12, 12, 12
    data = _markov_text(5_000, V, seed=3)

    def batch(n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        starts = torch.randint(0, len(data) - T, (n,), generator=generator)
        targets = torch.stack([data[s : s + T] for s in starts])
        return shift_right(targets, START), targets

    def trained(masked: bool) -> tuple[TinyLM, float]:
        torch.manual_seed(0)
        model, gen = TinyLM(V + 1, 24, T), torch.Generator().manual_seed(4)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        losses = []
        for _ in range(80):
            inputs, targets = batch(16, gen)
            loss = lm_loss(model(inputs, causal_mask(T) if masked else None), targets)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return model.eval(), sum(losses[-20:]) / 20

    @torch.no_grad()
    def honest(model: TinyLM, masked: bool) -> float:
        """The loss when position n sees inputs up to n only, as when generating."""
        inputs, targets = batch(64, torch.Generator().manual_seed(5))
        losses = [
            lm_loss(model(inputs[:, :n], causal_mask(n) if masked else None)[:, -1:], targets[:, n - 1 : n])
            for n in range(1, T + 1)
        ]
        return float(torch.stack(losses).mean())

    masked_model, masked_train = trained(True)
    cheat_model, cheat_train = trained(False)
    masked_honest, cheat_honest = honest(masked_model, True), honest(cheat_model, False)
    assert abs(masked_honest - masked_train) < 0.15  # what it trains on is what it gets
    assert cheat_train < 0.5 * masked_train  # the unmasked model reads the answer ...
    assert cheat_honest > masked_honest + 0.3  # ... and cannot do without it
