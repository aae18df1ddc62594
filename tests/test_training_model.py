"""The training package's model, generation and byte-level BPE against the course's references.

- ``TrainGPT`` (fused attention and LayerNorm) computes the reference GPT's function with the
  reference's parameters; RoPE as stage 03's ``apply_rope``; each position scheme trains.
- ``generate_fast`` with its preallocated KV cache gives the tokens of plain generation
  (and, for learned positions, of stage 08's reference ``generate``), within the block and past it.
- The byte-level BPE learns and applies stage 02's merges exactly.
- On CUDA (marker ``gpu``): the CUDA-graph decoder, the generator contract, compiled training.
"""

import pytest
import torch

from solutions.attention import apply_rope
from solutions.bpe import byte_bpe_encode, train_byte_bpe
from solutions.data import load_corpus
from solutions.generation import generate
from solutions.gpt import GPT, GPTConfig
from training import loop
from training.data import ByteBPE, learn_byte_merges, prepare
from training.generate import generate_fast
from training.model import POSITIONS, TrainConfig, TrainGPT, compile_blocks, rope_tables, rotate
from training.presets import TINY


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _config(**kw) -> TrainConfig:
    return TrainConfig(**{"vocab_size": 30, "block_size": 12, "n_layer": 2, "n_head": 2, "n_embd": 16, **kw})


def _model(seed=0, scale=3.0, **kw) -> TrainGPT:
    """A fresh model whose weights are scaled up, so that its greedy choices are far from ties."""
    torch.manual_seed(seed)
    model = TrainGPT(_config(**kw))
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(scale)
    return model


@pytest.mark.parametrize("norm_first", [True, False])
def test_train_gpt_is_the_reference_gpt_with_fused_kernels(norm_first):
    fast = _model(norm_first=norm_first, scale=1.0)
    reference = GPT(GPTConfig(vocab_size=30, block_size=12, n_layer=2, n_head=2, n_embd=16, norm_first=norm_first))
    reference.load_state_dict(fast.state_dict())  # the same parameter names and shapes
    idx = torch.randint(30, (3, 12))
    # float32 rounding in another order: measured differences about 6e-8
    torch.testing.assert_close(fast(idx)[0], reference(idx)[0], rtol=0, atol=1e-5)


def test_rope_rotates_as_stage_03_apply_rope():
    x = torch.randn(2, 3, 10, 8)
    cos, sin = rope_tables(10, 8)
    torch.testing.assert_close(rotate(x, cos, sin), apply_rope(x), rtol=0, atol=1e-6)


def test_each_position_scheme_has_its_parameters_and_trains():
    corpus = prepare("default", text=load_corpus("default")[:20_000])
    preset = TINY.replace(n_layer=1, n_head=2, n_embd=32, block_size=32, batch_size=16, steps=30, warmup=5)
    preset = preset.replace(eval_interval=30, eval_iters=2, sample_tokens=0, autocast=None)
    for positions in POSITIONS:
        model = TrainGPT(_config(positions=positions))
        assert hasattr(model, "pos_emb") == (positions == "learned")
        assert all(not k.startswith(("pos_table", "rope_")) for k in model.state_dict())  # tables are not saved
        result = loop.run(preset.replace(positions=positions), corpus, torch.device("cpu"), None, progress=False)
        assert result.best_val < result.history["val_loss"][0] - 0.5, (positions, result.history["val_loss"])


def test_an_unknown_scheme_or_an_odd_head_size_is_refused():
    with pytest.raises(ValueError, match="unknown positions"):
        TrainGPT(_config(positions="alibi"))
    with pytest.raises(ValueError, match="even head size"):
        TrainGPT(_config(n_embd=18, n_head=6, positions="rope"))


@pytest.mark.parametrize("positions", POSITIONS)
@pytest.mark.parametrize("norm_first", [True, False])
def test_greedy_tokens_are_the_same_with_and_without_the_cache(positions, norm_first):
    model = _model(positions=positions, norm_first=norm_first)
    for T0 in (1, 5, 15):  # a short prompt, one that fills half the block, one longer than the block
        prompt = torch.randint(30, (3, T0), generator=torch.Generator().manual_seed(T0))
        cached = generate_fast(model, prompt, 25, temperature=0)  # 25 new tokens: past the block of 12
        assert cached.shape == (3, T0 + 25) and torch.equal(cached[:, :T0], prompt)
        assert torch.equal(cached, generate_fast(model, prompt, 25, temperature=0, cache=False)), T0
        if positions == "learned":
            assert torch.equal(cached, generate(model, prompt, 25, temperature=0)), T0  # stage 08's reference


def test_sampling_draws_the_same_tokens_with_and_without_the_cache():
    model = _model()
    prompt = torch.randint(30, (4, 3), generator=torch.Generator().manual_seed(0))
    kwargs = dict(temperature=0.9, top_k=8, top_p=0.95)
    a = generate_fast(model, prompt, 20, generator=torch.Generator().manual_seed(5), **kwargs)
    b = generate_fast(model, prompt, 20, generator=torch.Generator().manual_seed(5), cache=False, **kwargs)
    assert torch.equal(a, b)


def test_generation_refuses_bad_arguments_and_restores_the_mode():
    model = _model().train()
    with pytest.raises(ValueError, match="non-empty"):
        generate_fast(model, torch.zeros(3, dtype=torch.long), 5)
    with pytest.raises(ValueError, match="non-negative"):
        generate_fast(model, torch.zeros(1, 2, dtype=torch.long), -1)
    assert torch.equal(generate_fast(model, torch.ones(1, 2, dtype=torch.long), 0), torch.ones(1, 2, dtype=torch.long))
    assert model.training


def test_compiling_the_blocks_makes_one_graph_for_every_layer_and_keeps_evaluation_uncompiled():
    """With the eager backend (tracing only, no code generated): four layers, forward and backward
    twice, make at most two graphs (measured here: one; torch may first specialise on the first
    layer's parameters, then make one graph with them as inputs), and evaluation adds none."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    model = compile_blocks(_model(n_layer=4, positions="rope", dropout=0.1, scale=1.0), backend="eager")
    x = torch.randint(30, (2, 12))
    for _ in range(2):
        model(x, x)[1].backward()
    graphs = counters["stats"]["unique_graphs"]
    assert 1 <= graphs <= 2
    model.eval()
    with torch.no_grad():
        model(x)
    assert counters["stats"]["unique_graphs"] == graphs  # evaluation ran the uncompiled block
    torch._dynamo.reset()


def test_byte_bpe_learns_and_encodes_as_stage_02_reference():
    text = load_corpus("default")[:4000] + " ééé aaaaaaa bbbb"
    reference = train_byte_bpe(text, 256 + 80)  # pure Python: a second or so on 4,000 characters
    assert learn_byte_merges(text, 256 + 80) == reference
    tok = ByteBPE(reference)
    for sample in (text[100:1500], "aaaaaaa", "naïve café", ""):
        assert tok.encode(sample) == byte_bpe_encode(sample, reference)
        assert tok.decode(tok.encode(sample)) == sample


def test_bits_per_character_are_comparable_across_tokenizers():
    text = load_corpus("default")[:30_000]
    chars, pieces = prepare("default", "char", text=text), prepare("default", "byte-bpe", 100, text=text)
    assert chars.val_chars == pieces.val_chars == len(text) - int(len(text) * 0.9)
    assert len(pieces.val) < len(chars.val)  # merges make fewer, longer tokens
    # the same total cost, in bits, over the same characters: the same bits per character
    nats_per_char = 1.5
    assert chars.bits_per_char(nats_per_char) == pytest.approx(
        pieces.bits_per_char(nats_per_char * len(chars.val) / len(pieces.val))
    )


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("positions", POSITIONS)
def test_cuda_graph_decoding_gives_the_tokens_of_plain_generation(positions):
    model = _model(positions=positions).cuda()
    prompt = torch.randint(30, (3, 4), device="cuda")
    graphed = generate_fast(model, prompt, 25, temperature=0)
    assert torch.equal(graphed, generate_fast(model, prompt, 25, temperature=0, cache=False))
    assert torch.equal(graphed, generate_fast(model, prompt, 25, temperature=0, graphs=False))
    assert torch.equal(graphed.cpu(), generate_fast(model.cpu(), prompt.cpu(), 25, temperature=0))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_sampling_needs_a_generator_on_the_gpu():
    model = _model().cuda()
    prompt = torch.zeros(2, 1, dtype=torch.long, device="cuda")
    with pytest.raises(ValueError, match="make it on cuda"):
        generate_fast(model, prompt, 5, generator=torch.Generator().manual_seed(0))
    a = generate_fast(model, prompt, 20, generator=torch.Generator(device="cuda").manual_seed(0))
    b = generate_fast(model, prompt, 20, generator=torch.Generator(device="cuda").manual_seed(0), cache=False)
    assert torch.equal(a, b)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("compile_mode", ["model", "blocks"])
def test_cuda_compiled_training_with_each_scheme(compile_mode):
    corpus = prepare("default", text=load_corpus("default")[:40_000])
    preset = TINY.replace(n_layer=2, n_head=2, n_embd=64, block_size=64, batch_size=32, steps=60, warmup=10)
    preset = preset.replace(eval_interval=30, eval_iters=2, sample_tokens=0, compile=compile_mode, positions="rope")
    result = loop.run(preset, corpus, torch.device("cuda"), None, progress=False)
    assert result.best_val < result.history["val_loss"][0] - 1.0, result.history["val_loss"]
    assert result.model.compiled_block is None  # the kept model is uncompiled
