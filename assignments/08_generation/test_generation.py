"""Tests of the reference solutions of stage 08_generation."""

import sys

import pytest
import torch
import torch.nn as nn

import solutions.blocks
import solutions.generation
import solutions.gpt
import solutions.multihead
from autograder.authoring.catalogue import catalogue
from autograder.build.fixtures import stage_tests
from autograder.course import get_stage
from autograder.engine.suites import exec_suite
from autograder.kit.cases import REFERENCE, Namespace
from autograder.kit.check_cell import run_public
from solutions.generation import generate, generate_cached, sample_next
from solutions.gpt import GPT, GPTConfig, get_device, train


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models run fastest on one thread, and far faster on a busy machine."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def tiny(**overrides) -> GPTConfig:
    settings = dict(vocab_size=11, block_size=12, n_layer=2, n_head=2, n_embd=16)
    settings.update(overrides)
    return GPTConfig(**settings)


TEXT = "the cat sat on the mat. " * 60
CHARS = sorted(set(TEXT))
DATA = torch.tensor([CHARS.index(c) for c in TEXT], dtype=torch.long)


# ---------------------------------------------------------------- sampling

LOGITS = torch.tensor([[3.0, 0.5, 2.0, -1.0, 1.0, 0.0]])  # sorted: 0, 2, 4, 1, 5, 3


def support(draws: torch.Tensor) -> set[int]:
    return set(draws.flatten().tolist())


def many(logits: torch.Tensor, n: int = 400, **kwargs) -> torch.Tensor:
    return sample_next(logits.expand(n, -1), generator=torch.Generator().manual_seed(0), **kwargs)


def test_sample_next_greedy():
    logits = torch.randn(5, 9)
    out = sample_next(logits, temperature=0)
    assert out.shape == (5, 1) and out.dtype == torch.long
    assert torch.equal(out[:, 0], logits.argmax(-1))
    assert torch.equal(sample_next(logits, temperature=0, top_k=3, top_p=0.5), out)


def test_sample_next_shape_and_full_support():
    out = many(LOGITS)
    assert out.shape == (400, 1)
    assert support(out) == set(range(6))


@pytest.mark.parametrize("k, expected", [(1, {0}), (2, {0, 2}), (3, {0, 2, 4}), (100, set(range(6)))])
def test_sample_next_top_k(k, expected):
    assert support(many(LOGITS, top_k=k)) == expected


def test_sample_next_top_p_keeps_the_crossing_token():
    probs = torch.softmax(LOGITS[0], -1)
    p0, p2 = probs[0].item(), probs[2].item()  # about 0.61 and 0.22
    assert support(many(LOGITS, top_p=p0 / 2)) == {0}  # the most likely token always stays
    assert support(many(LOGITS, top_p=p0 + 0.01)) == {0, 2}  # token 2 crosses p
    assert support(many(LOGITS, top_p=p0 + p2 - 0.01)) == {0, 2}
    assert support(many(LOGITS, top_p=p0 + p2 + 0.01)) == {0, 2, 4}


def test_sample_next_top_k_then_top_p():
    # top_k=2 leaves tokens 0 and 2 with renormalised probabilities 0.73 and 0.27,
    # so top_p=0.7 then keeps token 0 alone; on the full distribution (0.61 first)
    # it would keep two tokens, as it would if top_p were applied first
    assert support(many(LOGITS, top_p=0.7)) == {0, 2}
    assert support(many(LOGITS, top_k=2, top_p=0.7)) == {0}
    assert support(many(LOGITS, top_k=2, top_p=0.75)) == {0, 2}
    assert support(many(LOGITS, top_k=3, top_p=0.72)) == {0, 2}


def test_sample_next_temperature_and_frequencies():
    out = many(LOGITS, n=4000)
    freq = torch.bincount(out.flatten(), minlength=6).float() / 4000
    torch.testing.assert_close(freq, torch.softmax(LOGITS[0], -1), rtol=0, atol=0.03)
    cold = many(LOGITS, n=400, temperature=0.1)
    assert support(cold) == {0}


def test_sample_next_uses_generator():
    a = sample_next(torch.zeros(50, 20), generator=torch.Generator().manual_seed(5))
    b = sample_next(torch.zeros(50, 20), generator=torch.Generator().manual_seed(5))
    assert torch.equal(a, b)


@pytest.mark.parametrize("kwargs", [dict(temperature=-1.0), dict(top_k=0), dict(top_p=0.0), dict(top_p=1.5)])
def test_sample_next_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        sample_next(LOGITS, **kwargs)


# ---------------------------------------------------------------- generation


def test_generate_shape_crop_and_mode():
    torch.manual_seed(4)
    model = GPT(tiny())
    model.train()
    prompt = torch.randint(11, (2, 15))  # longer than block_size: cropped
    out = generate(model, prompt, 20, generator=torch.Generator().manual_seed(0))
    assert out.shape == (2, 35) and torch.equal(out[:, :15], prompt)
    assert model.training
    greedy = generate(model, prompt, 5, temperature=0)
    assert torch.equal(greedy, generate(model, prompt, 5, temperature=0))


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generate_cached_equals_generate_greedy(norm_first, seed):
    torch.manual_seed(seed)
    model = GPT(tiny(norm_first=norm_first, n_layer=3))
    prompt = torch.randint(11, (3, 4))
    within = generate(model, prompt, 8, temperature=0)  # 12 = block_size tokens in all
    assert torch.equal(generate_cached(model, prompt, 8, temperature=0), within)
    beyond = generate(model, prompt, 20, temperature=0)  # falls back past block_size
    assert torch.equal(generate_cached(model, prompt, 20, temperature=0), beyond)


def test_generate_cached_runs_one_position_per_new_token():
    torch.manual_seed(5)
    model = GPT(tiny())
    model.train()
    lengths: list[int] = []
    handle = model.tok_emb.register_forward_hook(lambda module, args, out: lengths.append(args[0].shape[1]))
    try:
        out = generate_cached(model, torch.randint(11, (2, 5)), 7, temperature=0)
    finally:
        handle.remove()
    assert out.shape == (2, 12)
    assert lengths == [5] + [1] * 6  # prefill, then one position per token (none after the last)
    assert model.training


def test_generate_cached_sampling_matches_generate_with_same_generator():
    torch.manual_seed(6)
    model = GPT(tiny())
    prompt = torch.randint(11, (2, 3))
    a = generate(model, prompt, 9, top_k=5, generator=torch.Generator().manual_seed(1))
    b = generate_cached(model, prompt, 9, top_k=5, generator=torch.Generator().manual_seed(1))
    assert torch.equal(a, b)


def test_generate_rejects_bad_arguments():
    model = GPT(tiny())
    for fn in (generate, generate_cached):
        with pytest.raises(ValueError):
            fn(model, torch.zeros(2, 0, dtype=torch.long), 3)
        with pytest.raises(ValueError):
            fn(model, torch.zeros(2, 3, dtype=torch.long), -1)


# ---------------------------------------------------------------- devices


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_generation_runs_on_cuda():
    device = get_device()
    assert device.type == "cuda"
    torch.manual_seed(7)
    model = GPT(GPTConfig(vocab_size=len(CHARS), block_size=16, n_layer=2, n_head=2, n_embd=32))
    n = int(len(DATA) * 0.9)
    history = train(
        model,
        DATA[:n],
        DATA[n:],
        steps=60,
        batch_size=16,
        lr=1e-2,
        device=device,
        eval_interval=30,
        eval_iters=4,
        warmup=10,
        generator=torch.Generator().manual_seed(0),  # batches are drawn on the CPU, where the data is
        progress=False,
        keep_best=True,
    )
    assert next(model.parameters()).device.type == "cuda"
    assert history["best_val_loss"] == min(history["val_loss"]) < 0.5 * history["val_loss"][0]
    prompt = DATA[:4].view(1, 4)  # on the CPU: generation moves it to the model's device
    plain = generate(model, prompt, 12, temperature=0)
    assert plain.device.type == "cuda"
    assert torch.equal(generate_cached(model, prompt, 12, temperature=0), plain)
    on_gpu = torch.Generator(device=device).manual_seed(1)  # tokens are drawn where the logits are
    sampled = generate_cached(model, prompt, 12, top_k=5, generator=on_gpu)
    assert sampled.shape == (1, 16)


# ---------------------------------------------------------------- the stage's expected tokens


def _suite_module(kind: str):
    """The stage's public or hidden test file, run as a module (for its stand-in models)."""
    path = getattr(get_stage("08_generation"), kind)
    name = f"test_solutions_generation_{kind}_suite"
    public = _suite_module("public") if kind == "hidden" else None  # a hidden suite imports its public one
    exec_suite(path.read_text(encoding="utf-8"), str(path), name, public)
    return sys.modules[name]


def _reference_names() -> dict:
    names = {}
    for module in (solutions.multihead, solutions.blocks, solutions.gpt, solutions.generation):
        names.update({k: v for k, v in vars(module).items() if not k.startswith("_")})
    return names


def _plain_greedy(parts: nn.Module, idx: torch.Tensor, new: int, margins: list, steps: list | None = None):
    """Plain greedy generation (no cache) by a reference GPT holding the stand-in's weights;
    notes by how much the best logit leads the second at every step (and, given ``steps``,
    appends every step's last-position logits to it)."""
    model = GPT(parts.config)
    model.load_state_dict(parts.state_dict())
    model.eval()
    with torch.no_grad():
        for _ in range(new):
            logits = model(idx[:, -model.config.block_size :])[0][:, -1]
            if steps is not None:
                steps.append(logits)
            best = logits.topk(2, dim=-1).values
            margins.append(float((best[:, 0] - best[:, 1]).min()))
            idx = torch.cat([idx, logits.argmax(dim=-1, keepdim=True)], dim=1)
    return idx


def test_kv_cache_fixtures_are_the_tokens_of_plain_greedy_generation():
    """The hidden kv_cache token tests expect the reference's cached tokens and its first
    step's logits; those are what plain greedy generation (no cache) by a GPT with the
    stand-in's weights gives, and every step's best logit leads the second by at least 0.1."""
    fixtures = stage_tests(get_stage("08_generation")).fixtures
    names = _reference_names()
    margins: list = []
    steps: list = []
    names["generate_cached"] = lambda model, idx, new, **kwargs: _plain_greedy(model, idx, new, margins, steps)
    token_cases = [
        c
        for c in _suite_module("hidden").suite.cases
        if c.qid == "kv_cache" and c.expected is REFERENCE and "logits" not in c.name
    ]
    assert len(token_cases) == 3
    for case in token_cases:
        steps.clear()
        tokens, first = fixtures[case.key]
        assert torch.equal(case.probe(Namespace(dict(names)))[0], tokens), case.key
        assert torch.allclose(first, steps[0], rtol=1e-5, atol=1e-5), case.key
    assert min(margins) >= 0.1, min(margins)


def test_public_kv_cache_tokens_are_those_of_plain_greedy_generation():
    """The public tests' literal tokens: plain greedy generation by a GPT with the stand-in's weights."""
    public = _suite_module("public")
    names = _reference_names()
    margins: list = []
    names["generate_cached"] = lambda model, idx, new, **kwargs: _plain_greedy(model, idx, new, margins)
    cases = [c for c in public.suite.cases if c.qid == "kv_cache" and "plain generation" in c.name]
    assert len(cases) == 2
    for case in cases:
        assert case.probe(Namespace(dict(names))) == case.expected, case.key
    assert min(margins) >= 0.1, min(margins)


# ---------------------------------------------------------------- what check() says


def _first_failure(report: str) -> list[str]:
    """The lines of the first test a check() report shows failed: its name, then its messages."""
    lines = report.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  [FAIL]"))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("  [")), len(lines))
    return lines[start:end]


def test_check_tells_a_cache_with_wrong_positions_to_look_at_the_decode_step():
    """A cache that embeds each new token at position 0 gets the first new token (from the
    prompt's pass) right and later ones wrong; check("kv_cache") leads with where to look."""
    mistakes, _ = catalogue(get_stage("08_generation"))
    mistake = next(v for v in mistakes if v.name == "wrong positions: each new token at position 0")
    names = _reference_names()
    exec(mistake.cells["generate_cached"], names)
    passed, report, _ = run_public(_suite_module("public").suite.cases, "kv_cache", names)
    first = _first_failure(report)
    assert (
        not passed
        and first[0] == "  [FAIL] within block_size, greedy decoding gives exactly the tokens of plain generation"
    )
    assert any("Hint: the first new token (chosen from the prompt's own pass) is right" in line for line in first), (
        report
    )
    assert "(1 later test(s) fail because of this one: start here)" in first[-1], report


def test_hidden_token_tests_tell_a_cache_with_wrong_positions_to_look_at_the_decode_step():
    """The hidden greedy-token tests give the public suite's decode-step hint to a cache that
    embeds each new token at position 0, and not to unscaled attention, whose prefill is wrong
    though it picks the first new tokens of the pre-norm test right."""
    fixtures = stage_tests(get_stage("08_generation")).fixtures
    hidden = _suite_module("hidden")
    token_cases = [
        c for c in hidden.suite.cases if c.qid == "kv_cache" and c.key in fixtures and "logits" not in c.name
    ]
    assert len(token_cases) == 3 and token_cases[0].name == "greedy tokens within block_size: pre-norm, 3 layers, tied"
    mistakes, _ = catalogue(get_stage("08_generation"))
    outputs = {}
    for name in ("wrong positions: each new token at position 0", "attention scores not divided by sqrt(head size)"):
        names = _reference_names()
        exec(next(v for v in mistakes if v.name == name).cells["generate_cached"], names)
        outputs[name] = [c.probe(Namespace(names)) for c in token_cases]
    for case, got in zip(token_cases, outputs["wrong positions: each new token at position 0"]):
        verdict = case.check(got, fixtures[case.key], False)
        assert not verdict.passed and verdict.hint == "prefill right, decode step wrong", verdict
        assert "Hint: the first new token (chosen from the prompt's own pass) is right" in verdict.message
    pre_norm, got = token_cases[0], outputs["attention scores not divided by sqrt(head size)"][0]
    tokens = fixtures[pre_norm.key][0]
    first_tokens_right = hidden._decode_hint(hidden.KV_PRE_PROMPT.size(1)).when(got[0].tolist(), tokens.tolist())
    verdict = pre_norm.check(got, fixtures[pre_norm.key], False)
    assert first_tokens_right and not verdict.passed and verdict.hint is None, verdict
