"""Tests of the reference solutions of stage 10_encoders, and of the stage's stand-ins."""

import random
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder.authoring.catalogue import catalogue
from autograder.build.notebooks import make_notebook
from autograder.course import get_stage
from autograder.engine.submission import code_cells
from autograder.engine.suites import exec_suite
from autograder.kit.check_cell import run_public
from solutions.encoders import (
    CrossAttention,
    DecoderBlock,
    Encoder,
    Seq2Seq,
    SequenceClassifier,
    greedy_decode,
    mlm_mask_tokens,
    train_seq2seq,
)
from solutions.masking import causal_mask, padding_mask, shift_right

B, S, T, C, H, FF = 3, 7, 5, 24, 4, 40  # all different (D = 6), so a swapped axis shows up


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models run fastest on one thread, and far faster on a busy machine."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def randomise(module: nn.Module, seed: int) -> nn.Module:
    """Every parameter away from its initial value (LayerNorms included), so a swap shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=g))
    return module.eval()


def mha_state(module: nn.Module) -> dict:
    """The q, k, v and out projections of a module as nn.MultiheadAttention's state dict."""
    return {
        "in_proj_weight": torch.cat([module.q_proj.weight, module.k_proj.weight, module.v_proj.weight]),
        "in_proj_bias": torch.cat([module.q_proj.bias, module.k_proj.bias, module.v_proj.bias]),
        "out_proj.weight": module.out_proj.weight,
        "out_proj.bias": module.out_proj.bias,
    }


def encoder_layer_twin(block: nn.Module, ff_dim: int) -> nn.TransformerEncoderLayer:
    twin = nn.TransformerEncoderLayer(
        C, block.attn.num_heads, ff_dim, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
    )
    state = {f"self_attn.{k}": v for k, v in mha_state(block.attn).items()}
    state.update(
        {
            "linear1.weight": block.ff.fc1.weight,
            "linear1.bias": block.ff.fc1.bias,
            "linear2.weight": block.ff.fc2.weight,
            "linear2.bias": block.ff.fc2.bias,
            "norm1.weight": block.ln1.weight,
            "norm1.bias": block.ln1.bias,
            "norm2.weight": block.ln2.weight,
            "norm2.bias": block.ln2.bias,
        }
    )
    twin.load_state_dict({k: v.detach().clone() for k, v in state.items()})
    return twin.eval()


def decoder_layer_twin(block: DecoderBlock, norm_first: bool, activation: str) -> nn.TransformerDecoderLayer:
    twin = nn.TransformerDecoderLayer(
        C, H, block.ff.fc1.out_features, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first
    )
    state = {f"self_attn.{k}": v for k, v in mha_state(block.self_attn).items()}
    state.update({f"multihead_attn.{k}": v for k, v in mha_state(block.cross_attn).items()})
    state.update(
        {
            "linear1.weight": block.ff.fc1.weight,
            "linear1.bias": block.ff.fc1.bias,
            "linear2.weight": block.ff.fc2.weight,
            "linear2.bias": block.ff.fc2.bias,
        }
    )
    for i in (1, 2, 3):
        state[f"norm{i}.weight"] = getattr(block, f"ln{i}").weight
        state[f"norm{i}.bias"] = getattr(block, f"ln{i}").bias
    twin.load_state_dict({k: v.detach().clone() for k, v in state.items()})
    return twin.eval()


def heads_mask(mask: torch.Tensor, queries: int, heads: int = H) -> torch.Tensor:
    """A (B, 1, S) or (B, T, S) course mask as PyTorch's (B*H, T, S) attn_mask."""
    return mask.expand(mask.size(0), queries, mask.size(-1)).repeat_interleave(heads, dim=0)


# ---------------------------------------------------------------- encoder


def ids_with_padding(pad_id: int = 0) -> torch.Tensor:
    idx = torch.randint(1, 15, (B, T), generator=torch.Generator().manual_seed(5))
    idx[idx == pad_id] = pad_id + 1
    idx[1, 3:] = pad_id  # at the end
    idx[2, 1] = pad_id  # in the middle
    return idx


@pytest.mark.parametrize("pad_id", [0, 4])
def test_encoder_equals_a_stack_of_torch_encoder_layers_with_key_padding(pad_id):
    torch.manual_seed(0)
    encoder = randomise(Encoder(15, 8, n_layer=2, n_head=H, n_embd=C, ff_dim=FF, pad_id=pad_id), 1)
    idx = ids_with_padding(pad_id)
    twins = [encoder_layer_twin(block, FF) for block in encoder.blocks]
    final = nn.LayerNorm(C)
    final.load_state_dict({"weight": encoder.ln_f.weight.detach(), "bias": encoder.ln_f.bias.detach()})
    with torch.no_grad():
        h = encoder.tok_emb(idx) + encoder.pos_emb(torch.arange(T))
        blocked = heads_mask(padding_mask(idx, pad_id), T)
        for twin in twins:
            h = twin(h, src_mask=blocked)
        expected = final(h)
        out = encoder(idx)
    real = idx != pad_id
    torch.testing.assert_close(out[real], expected[real], rtol=1e-4, atol=1e-5)


def test_encoder_sees_both_ways_and_ignores_padding():
    torch.manual_seed(1)
    encoder = Encoder(15, 9, n_layer=2, n_head=H, n_embd=C).eval()
    idx = torch.tensor([[3, 4, 5, 6, 7]])
    changed = idx.clone()
    changed[0, -1] = 9
    padded = torch.tensor([[3, 4, 5, 6, 7, 0, 0, 0]])
    with torch.no_grad():
        a, b, c = encoder(idx), encoder(changed), encoder(padded)
    assert (a[0, 0] - b[0, 0]).abs().max() > 1e-3  # a later token changes the first output
    torch.testing.assert_close(c[:, :5], a, rtol=0, atol=1e-5)  # padding never changes the real positions


def test_encoder_parts_defaults_and_errors():
    encoder = Encoder(15, 9)
    assert encoder.pad_id == 0 and len(encoder.blocks) == 2 and isinstance(encoder.blocks, nn.ModuleList)
    assert encoder.tok_emb.weight.shape == (15, 64) and encoder.pos_emb.weight.shape == (9, 64)
    assert encoder.blocks[0].ff.fc1.out_features == 256 and encoder.blocks[0].norm_first
    assert Encoder(15, 9, n_embd=C, ff_dim=FF).blocks[1].ff.fc1.out_features == FF
    assert encoder(torch.ones(2, 9, dtype=torch.long)).shape == (2, 9, 64)
    with pytest.raises(ValueError, match="max_len"):
        encoder(torch.ones(2, 10, dtype=torch.long))
    with pytest.raises(ValueError):
        Encoder(15, 9, n_head=5)


# ---------------------------------------------------------------- classifier


def test_classifier_pools_real_positions_or_the_first():
    torch.manual_seed(2)
    encoder = randomise(Encoder(15, 8, n_layer=1, n_head=H, n_embd=C), 3)
    idx = ids_with_padding()
    with torch.no_grad():
        h = encoder(idx)
        for pooling in ("mean", "first"):
            clf = SequenceClassifier(encoder, 5, pooling=pooling).eval()
            assert clf.head.weight.shape == (5, C)
            if pooling == "mean":
                pooled = torch.stack([h[b][idx[b] != 0].mean(0) for b in range(B)])
            else:
                pooled = h[:, 0]
            torch.testing.assert_close(clf(idx), clf.head(pooled), rtol=1e-5, atol=1e-6)
    assert SequenceClassifier(encoder, 2).pooling == "mean"
    with pytest.raises(ValueError, match="pooling"):
        SequenceClassifier(encoder, 2, pooling="max")


def test_mean_pooling_ignores_extra_padding():
    torch.manual_seed(3)
    clf = SequenceClassifier(Encoder(15, 10, n_layer=1, n_head=H, n_embd=C), 3).eval()
    with torch.no_grad():
        a = clf(torch.tensor([[4, 5, 6, 0]]))
        b = clf(torch.tensor([[4, 5, 6, 0, 0, 0, 0, 0]]))
    torch.testing.assert_close(a, b, rtol=0, atol=1e-5)


# ---------------------------------------------------------------- mlm_mask

BIG = torch.randint(10, 5000, (128, 200), generator=torch.Generator().manual_seed(6))


@pytest.mark.parametrize("prob", [0.15, 0.4])
def test_mlm_chooses_prob_of_the_positions_and_splits_80_10_10(prob):
    ids = BIG.clone()
    ids[:, 0], ids[:, -1] = 1, 2
    inputs, labels = mlm_mask_tokens(
        ids, 3, 5000, special_ids=(1, 2), prob=prob, generator=torch.Generator().manual_seed(7)
    )
    assert torch.equal(ids[:, 1:-1], BIG[:, 1:-1])  # ids untouched
    chosen = labels != -100
    assert not chosen[:, [0, -1]].any()
    assert abs(chosen.float().mean().item() / (198 / 200) - prob) < 0.012
    assert torch.equal(labels[chosen], ids[chosen]) and torch.equal(inputs[~chosen], ids[~chosen])
    masked = (inputs[chosen] == 3).float().mean().item()
    kept = (inputs[chosen] == ids[chosen]).float().mean().item()
    assert abs(masked - 0.8) < 0.03 and abs(kept - 0.1) < 0.02 and abs(1 - masked - kept - 0.1) < 0.02


def test_mlm_random_replacements_are_uniform_over_the_whole_vocabulary():
    inputs, _ = mlm_mask_tokens(
        torch.full((200, 300), 5), 0, 6, special_ids=(1,), prob=1.0, generator=torch.Generator().manual_seed(8)
    )
    freq = torch.bincount(inputs.flatten(), minlength=6).double() / inputs.numel()
    expected = torch.tensor([0.8 + 0.1 / 6] + [0.1 / 6] * 4 + [0.1 + 0.1 / 6], dtype=torch.float64)
    margins = torch.tensor([0.008] + [0.0035] * 4 + [0.007], dtype=torch.float64)  # 5 standard deviations or more
    assert ((freq - expected).abs() < margins).all()


def test_mlm_generator_edges_and_errors():
    ids = BIG[:4].clone()
    torch.manual_seed(0)
    a = mlm_mask_tokens(ids, 3, 5000, generator=torch.Generator().manual_seed(9))
    torch.manual_seed(1)
    b = mlm_mask_tokens(ids, 3, 5000, generator=torch.Generator().manual_seed(9))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    none_in, none_labels = mlm_mask_tokens(ids, 3, 5000, prob=0.0)
    assert torch.equal(none_in, ids) and (none_labels == -100).all()
    assert torch.equal(mlm_mask_tokens(ids, 3, 5000, prob=1.0)[1], ids)
    assert (
        mlm_mask_tokens(torch.zeros(2, 3, dtype=torch.long), 3, 10, prob=1.0)[1] == 0
    ).all()  # no special by default
    for prob in (-0.1, 1.5):
        with pytest.raises(ValueError, match="prob"):
            mlm_mask_tokens(ids, 3, 5000, prob=prob)


# ---------------------------------------------------------------- cross_attention


@pytest.mark.parametrize("mask_kind", ["none", "padding", "per_query"])
@pytest.mark.parametrize("heads", [2, 4, 6])
def test_cross_attention_equals_torch_multihead_attention(mask_kind, heads):
    torch.manual_seed(4)
    cross = randomise(CrossAttention(C, heads), 10 + heads)
    twin = nn.MultiheadAttention(C, heads, batch_first=True)
    twin.load_state_dict({k: v.detach().clone() for k, v in mha_state(cross).items()})
    x, memory = torch.randn(B, T, C), torch.randn(B, S, C) * 2
    mask = None
    if mask_kind != "none":
        mask = torch.zeros(B, 1, S, dtype=torch.bool)
        mask[1, 0, 5:], mask[2, 0, 2:] = True, True
        if mask_kind == "per_query":
            mask = mask.expand(B, T, S).clone()
            mask[0, 1, 3:] = True
    with torch.no_grad():
        out = cross(x, memory, memory_mask=mask)
        expected = twin.eval()(
            x, memory, memory, attn_mask=None if mask is None else heads_mask(mask, T, heads), need_weights=False
        )[0]
    assert out.shape == (B, T, C)
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)


def test_cross_attention_refuses_heads_that_do_not_divide_the_width():
    with pytest.raises(ValueError):
        CrossAttention(C, 5)


# ---------------------------------------------------------------- decoder_block


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_decoder_block_equals_torch_decoder_layer(norm_first, activation):
    torch.manual_seed(5)
    block = randomise(DecoderBlock(C, H, FF, activation=activation, norm_first=norm_first), 20)
    twin = decoder_layer_twin(block, norm_first, activation)
    x, memory = torch.randn(B, T, C), torch.randn(B, S, C) * 3 + 1
    pad = torch.zeros(B, 1, S, dtype=torch.bool)
    pad[1, 0, 4:] = True
    with torch.no_grad():
        out = block(x, memory, self_mask=causal_mask(T), memory_mask=pad)
        expected = twin(x, memory, tgt_mask=causal_mask(T), memory_mask=heads_mask(pad, T))
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- seq2seq


def test_seq2seq_equals_its_parts_composed_by_hand():
    torch.manual_seed(6)
    model = randomise(Seq2Seq(15, 11, 8, n_layer=2, n_head=H, n_embd=C, pad_id=0), 30)
    src = ids_with_padding()[:, : S - 2]
    tgt_in = torch.tensor([[1, 3, 4, 5], [1, 6, 7, 2], [1, 9, 10, 9]])
    with torch.no_grad():
        memory = model.encoder(src)
        h = model.tgt_emb(tgt_in) + model.tgt_pos_emb(torch.arange(4))
        for block in model.decoder_blocks:
            twin = decoder_layer_twin(block, True, "gelu")
            h = twin(h, memory, tgt_mask=causal_mask(4), memory_mask=heads_mask(padding_mask(src, 0), 4))
        expected = model.head(model.ln_f(h))
        logits = model(src, tgt_in)
    assert logits.shape == (3, 4, 11) and model.head.bias is not None
    assert model.decoder_blocks[0].ff.fc1.out_features == 4 * C
    torch.testing.assert_close(logits, expected, rtol=1e-4, atol=1e-4)


def test_seq2seq_is_causal_and_ignores_source_padding():
    torch.manual_seed(7)
    model = Seq2Seq(15, 11, 9, n_layer=2, n_head=H, n_embd=C, pad_id=3).eval()
    src, tgt_in = torch.tensor([[4, 0, 6]]), torch.tensor([[1, 5, 6, 7]])
    changed = tgt_in.clone()
    changed[0, 3] = 2
    with torch.no_grad():
        a, b = model(src, tgt_in), model(src, changed)
        padded = model(torch.tensor([[4, 0, 6, 3, 3, 3]]), tgt_in)
    torch.testing.assert_close(a[:, :3], b[:, :3], rtol=0, atol=0)
    torch.testing.assert_close(padded, a, rtol=0, atol=1e-5)


class Scripted(nn.Module):
    """Row b's best token at decoder position t is script[b][t]."""

    def __init__(self, script, pad_id=0):
        super().__init__()
        self.pad_id, self.script = pad_id, torch.tensor(script)
        self.weight = nn.Parameter(torch.ones(()))
        self.calls = 0

    def forward(self, src, tgt_in):
        self.calls += 1
        n, t = tgt_in.shape
        return F.one_hot(self.script[:, :t], 12).float() * self.weight


def test_greedy_decode_stops_pads_and_restores_the_mode():
    model = Scripted([[5, 6, 2, 7, 8], [4, 2, 9, 9, 9]], pad_id=7).train()
    out = greedy_decode(model, torch.zeros(2, 3, dtype=torch.long), start_id=1, end_id=2, max_len=5)
    assert out.tolist() == [[5, 6, 2], [4, 2, 7]] and model.calls == 3 and model.training
    never = Scripted([[5, 6, 3, 7, 8], [4, 4, 9, 9, 9]]).eval()
    assert greedy_decode(never, torch.zeros(2, 3, dtype=torch.long), 1, 2, max_len=4).tolist() == [
        [5, 6, 3, 7],
        [4, 4, 9, 9],
    ]
    assert not never.training
    assert greedy_decode(never, torch.zeros(2, 3, dtype=torch.long), 1, 2, max_len=0).shape == (2, 0)
    with pytest.raises(ValueError):
        greedy_decode(never, torch.zeros(2, 3, dtype=torch.long), 1, 2, max_len=-1)


# ---------------------------------------------------------------- seq2seq_works


def reversal_pairs(n, seed, exclude=frozenset()):
    rng = random.Random(seed)
    seen, sources, targets = set(), [], []
    while len(sources) < n:
        digits = tuple(rng.randrange(10) for _ in range(rng.randint(3, 6)))
        if digits in seen or digits in exclude:
            continue
        seen.add(digits)
        ids = [d + 3 for d in digits]
        sources.append(ids + [0] * (6 - len(ids)))
        targets.append(ids[::-1] + [2] + [0] * (6 - len(ids)))
    return torch.tensor(sources), torch.tensor(targets), frozenset(seen)


def test_train_seq2seq_validates_its_arguments():
    model = Seq2Seq(6, 6, 4, n_layer=1, n_head=2, n_embd=8)
    src, tgt = torch.tensor([[3, 4, 5]]), torch.tensor([[5, 4, 3, 2]])
    for bad in (dict(steps=0), dict(batch_size=0), dict(lr=0.0)):
        settings = dict(steps=1, batch_size=1, lr=0.01, start_id=1)
        settings.update(bad)
        with pytest.raises(ValueError):
            train_seq2seq(model, src, tgt, **settings)
    with pytest.raises(ValueError):
        train_seq2seq(model, src, torch.cat([tgt, tgt]), steps=1, batch_size=1, lr=0.01, start_id=1)


@pytest.mark.parametrize("seeds", [(0, 1), (2, 3)])
def test_reference_learns_reversal_and_greedy_equals_teacher_forced_exact_match(seeds):
    """The seq2seq_works task at the tests' budget: the reference clears the 80% threshold by
    a wide margin, and for its causal decoder the one-pass teacher-forced exact match the
    tests measure is exactly greedy decoding's."""
    train_seed, test_seed = seeds
    src, tgt, seen = reversal_pairs(2000, train_seed)
    test_src, test_tgt, _ = reversal_pairs(200, test_seed, seen)
    torch.manual_seed(train_seed)
    model = Seq2Seq(13, 13, 8, n_layer=1, n_head=2, n_embd=32)
    losses = train_seq2seq(
        model,
        src,
        tgt,
        steps=200,
        batch_size=32,
        lr=3e-3,
        start_id=1,
        generator=torch.Generator().manual_seed(train_seed),
    )
    assert len(losses) == 200 and losses[-1] < 0.2 * losses[0]
    greedy = greedy_decode(model, test_src, 1, 2, max_len=7)
    greedy = F.pad(greedy, (0, 7 - greedy.size(1)), value=0)
    greedy_right = (greedy == test_tgt).all(dim=1)
    model.eval()
    with torch.no_grad():
        forced = model(test_src, shift_right(test_tgt, 1)).argmax(-1)
    forced_right = ((forced == test_tgt) | (test_tgt == 0)).all(dim=1)
    assert torch.equal(greedy_right, forced_right)
    assert greedy_right.float().mean() >= 0.95


# ---------------------------------------------------------------- the stage's tests and stand-ins


def _suite_module(kind: str):
    """The stage's public or hidden test file, run as a module (for its stand-ins)."""
    path = getattr(get_stage("10_encoders"), kind)
    name = f"test_solutions_encoders_{kind}_suite"
    # the hidden suite imports its public one: handed over here, not found on sys.path (where pytest
    # puts every stage's folder, so a plain `import public` finds whichever stage's comes first)
    public = _suite_module("public") if kind == "hidden" else None
    exec_suite(path.read_text(encoding="utf-8"), str(path), name, public)
    return sys.modules[name]


def _reference_names() -> dict:
    """The names the reference notebook defines, made by running its graded cells (as grading
    does): the tests swap names such as Encoder there, which a module's globals would ignore."""
    names: dict = {"__name__": "__main__"}
    for cell in code_cells(make_notebook(get_stage("10_encoders"), "reference")):
        exec(compile(cell.source, f"<cell {cell.index}>", "exec"), names)
    return names


@pytest.mark.parametrize(
    "qid", ["encoder", "classifier", "mlm_mask", "cross_attention", "decoder_block", "seq2seq", "seq2seq_works"]
)
def test_reference_passes_every_public_test(qid):
    passed, report, _ = run_public(_suite_module("public").suite.cases, qid, _reference_names())
    assert passed, report


def test_public_stand_ins_compute_what_the_reference_parts_compute():
    """The public suite's PyTorch stand-ins (Encoder, CrossAttention, DecoderBlock) are
    correct versions of the parts they replace: with the same weights they agree."""
    public = _suite_module("public")
    torch.manual_seed(8)
    encoder = randomise(Encoder(15, 8, n_layer=2, n_head=H, n_embd=C, pad_id=0), 40)
    stand_in = public._TorchEncoder(15, 8, n_layer=2, n_head=H, n_embd=C, pad_id=0)
    state = {
        "tok_emb.weight": encoder.tok_emb.weight,
        "pos_emb.weight": encoder.pos_emb.weight,
        "ln_f.weight": encoder.ln_f.weight,
        "ln_f.bias": encoder.ln_f.bias,
    }
    for i, block in enumerate(encoder.blocks):
        state.update({f"blocks.{i}.{k}": v for k, v in encoder_layer_twin(block, 4 * C).state_dict().items()})
    stand_in.load_state_dict({k: v.detach().clone() for k, v in state.items()})
    idx = ids_with_padding()
    with torch.no_grad():
        torch.testing.assert_close(stand_in.eval()(idx)[idx != 0], encoder(idx)[idx != 0], rtol=1e-4, atol=1e-5)

    block = randomise(DecoderBlock(C, H, FF), 41)
    twin_block = public._TorchDecoderBlock(C, H, FF)
    twin_block.layer.load_state_dict(decoder_layer_twin(block, True, "gelu").state_dict())
    cross = public._TorchCrossAttention(C, H)
    cross.mha.load_state_dict({k: v.detach().clone() for k, v in mha_state(block.cross_attn).items()})
    x, memory = torch.randn(B, T, C), torch.randn(B, S, C)
    pad = torch.zeros(B, 1, S, dtype=torch.bool)
    pad[0, 0, 3:] = True
    with torch.no_grad():
        expected = block(x, memory, self_mask=causal_mask(T), memory_mask=pad)
        torch.testing.assert_close(
            twin_block.eval()(x, memory, self_mask=causal_mask(T), memory_mask=pad), expected, rtol=1e-4, atol=1e-5
        )
        torch.testing.assert_close(
            cross.eval()(x, memory, memory_mask=pad), block.cross_attn(x, memory, memory_mask=pad), rtol=1e-4, atol=1e-5
        )


def test_hidden_stand_ins_compute_what_the_reference_parts_compute():
    """The hidden suite's PyTorch stand-ins (Encoder, CrossAttention, DecoderBlock) are correct
    versions of the parts they replace: with the same weights they agree (pad_id 3, post-norm relu)."""
    hidden = _suite_module("hidden")
    torch.manual_seed(9)
    encoder = randomise(Encoder(15, 8, n_layer=2, n_head=H, n_embd=C, pad_id=3), 50)
    stand_in = hidden._TorchEncoder(15, 8, n_layer=2, n_head=H, n_embd=C, pad_id=3)
    state = {
        "tok_emb.weight": encoder.tok_emb.weight,
        "pos_emb.weight": encoder.pos_emb.weight,
        "ln_f.weight": encoder.ln_f.weight,
        "ln_f.bias": encoder.ln_f.bias,
    }
    for i, block in enumerate(encoder.blocks):
        state.update({f"blocks.{i}.{k}": v for k, v in encoder_layer_twin(block, 4 * C).state_dict().items()})
    stand_in.load_state_dict({k: v.detach().clone() for k, v in state.items()})
    idx = ids_with_padding(3)
    x, memory = torch.randn(B, T, C), torch.randn(B, S, C)
    pad = torch.zeros(B, 1, S, dtype=torch.bool)
    pad[2, 0, 1:] = True
    block = randomise(DecoderBlock(C, H, FF, norm_first=False, activation="relu"), 51)
    twin_block = hidden._TorchDecoderBlock(C, H, FF, norm_first=False, activation="relu")
    twin_block.layer.load_state_dict(decoder_layer_twin(block, False, "relu").state_dict())
    cross = hidden._TorchCrossAttention(C, H)
    cross.mha.load_state_dict({k: v.detach().clone() for k, v in mha_state(block.cross_attn).items()})
    with torch.no_grad():
        torch.testing.assert_close(stand_in.eval()(idx)[idx != 3], encoder(idx)[idx != 3], rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(
            twin_block.eval()(x, memory, causal_mask(T), pad),
            block(x, memory, causal_mask(T), pad),
            rtol=1e-4,
            atol=1e-5,
        )
        torch.testing.assert_close(cross.eval()(x, memory, pad), block.cross_attn(x, memory, pad), rtol=1e-4, atol=1e-5)


def _encoder_stand_ins():
    """Every encoder the suites hand to a student's SequenceClassifier or Seq2Seq, by name."""
    public, hidden = _suite_module("public"), _suite_module("hidden")
    return {
        "public._TorchEncoder": public._TorchEncoder(15, 8, n_layer=1, n_head=H, n_embd=C, pad_id=3),
        "public._TableEncoder": public._TableEncoder(public._ROWS, pad_id=3),
        "hidden._TorchEncoder": hidden._TorchEncoder(15, 8, n_layer=1, n_head=H, n_embd=C, pad_id=3),
        "hidden._Table": hidden._Table(4),
    }


@pytest.mark.parametrize(
    "name", ["public._TorchEncoder", "public._TableEncoder", "hidden._TorchEncoder", "hidden._Table"]
)
def test_encoder_stand_ins_have_what_the_notebook_promises(name):
    """The notebook (section 3) promises that the grader's encoders have the attributes
    ``tok_emb``, ``pos_emb``, ``blocks``, ``ln_f`` and ``pad_id`` of section 2: embeddings,
    a ModuleList, a LayerNorm of the encoder's width and an int; each stand-in has them all,
    so a classifier may read any of them (``ln_f.normalized_shape`` included)."""
    encoder = _encoder_stand_ins()[name]
    width = encoder.tok_emb.embedding_dim
    assert isinstance(encoder.tok_emb, nn.Embedding) and isinstance(encoder.pos_emb, nn.Embedding)
    assert encoder.pos_emb.embedding_dim == width
    assert isinstance(encoder.blocks, nn.ModuleList)
    assert isinstance(encoder.ln_f, nn.LayerNorm) and encoder.ln_f.normalized_shape == (width,)
    assert isinstance(encoder.pad_id, int)
    notebook = get_stage("10").source.read_text(encoding="utf-8")
    assert "the attributes `tok_emb`, `pos_emb`, `blocks`, `ln_f`\nand `pad_id` of section 2" in notebook


def test_hidden_stand_ins_log_how_they_were_built():
    log = []
    parts = _suite_module("hidden")._torch_parts(log)
    parts["Encoder"](15, 8, n_layer=1, n_head=2, n_embd=12, pad_id=6)
    parts["DecoderBlock"](12, 2, 48, activation="relu", norm_first=False)
    assert log == [
        {"part": "Encoder", "vocab_size": 15, "max_len": 8, "n_layer": 1, "n_head": 2, "n_embd": 12, "pad_id": 6},
        {
            "part": "DecoderBlock",
            "embed_dim": 12,
            "num_heads": 2,
            "ff_dim": 48,
            "dropout": 0.0,
            "activation": "relu",
            "norm": "post",
        },
    ]


@pytest.mark.slow
def test_reference_notebook_runs_top_to_bottom_quickly_in_a_kernel(tmp_path, monkeypatch):
    """With GPTCOURSE_QUICK=1 every demonstration and training cell runs on tiny sizes, so the
    whole reference notebook (check cells included) runs in a real kernel, offline, without
    importing anything of this project, and no cell raises."""
    import json

    import nbformat
    from nbclient import NotebookClient

    isolate = (
        "import socket, sys\n"
        "for _name in ('autograder', 'solutions', 'otter', 'nbgrader', 'gptcourse'):\n"
        "    sys.modules[_name] = None\n"
        "def _no_network(*args, **kwargs):\n"
        "    raise OSError('no network in this test')\n"
        "socket.socket = _no_network\n"
        "socket.create_connection = _no_network\n"
    )
    monkeypatch.setenv("GPTCOURSE_QUICK", "1")
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    notebook = make_notebook(get_stage("10_encoders"), "reference")
    notebook["cells"].insert(0, nbformat.v4.new_code_cell(isolate, id="isolate"))
    path = tmp_path / "10 reference.ipynb"
    path.write_text(json.dumps(notebook))
    executed = nbformat.read(path, as_version=4)
    NotebookClient(
        executed, timeout=300, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    errors = [
        (i, o["ename"], o["evalue"][:200])
        for i, cell in enumerate(executed.cells)
        if cell.cell_type == "code"
        for o in cell.outputs
        if o.get("output_type") == "error"
    ]
    assert errors == []
    checks = [
        "".join(o.get("text", "") for o in cell.outputs)
        for cell in executed.cells
        if "gptcourse:check" in cell.metadata.get("tags", [])
    ]
    assert len(checks) == 7 and all("public tests passed" in text for text in checks)


def test_check_leads_a_mean_over_the_padding_with_its_hint():
    """A mean over every position, padding included, fails the default-pooling test (whose hint
    names the mistake) and the pad_id test; check("classifier") shows the hint first and the
    pad_id failure as following from it."""
    mistakes, _ = catalogue(get_stage("10_encoders"))
    mistake = next(v for v in mistakes if v.name == "mean over every position, padding included")
    names = _reference_names()
    exec(mistake.cells["SequenceClassifier"], names)
    passed, report, _ = run_public(_suite_module("public").suite.cases, "classifier", names)
    failed = [i for i, line in enumerate(report.splitlines()) if line.startswith("  [FAIL]")]
    lines = report.splitlines()
    assert not passed and len(failed) == 2, report
    first, second = lines[failed[0] : failed[1]], lines[failed[1] :]
    assert first[0] == "  [FAIL] mean pooling (the default) averages the real positions only: logits by hand", report
    assert any("Hint: the padding positions were averaged in" in line for line in first), report
    assert second[0].startswith("  [FAIL] mean pooling with an encoder whose pad_id is 3"), report
    assert second[1] == (
        '         follows from the failure of "mean pooling (the default) averages the real positions only: logits by hand"'
    ), report
