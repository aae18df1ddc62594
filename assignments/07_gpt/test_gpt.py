"""Tests of the reference solutions of stage 07_gpt."""

import importlib.util
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder.build.fixtures import stage_tests
from autograder.build.notebooks import make_notebook
from autograder.course import get_stage
from autograder.engine.submission import code_cells
from autograder.kit.cases import REFERENCE, Namespace
from autograder.kit.runtime import judge_output, run_probe
from solutions.gpt import (
    GPT,
    GPTConfig,
    estimate_loss,
    get_device,
    num_parameters,
    train,
    train_step,
)


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


def unique_parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


# ---------------------------------------------------------------- model and params


@pytest.mark.parametrize(
    "config",
    [
        tiny(),
        tiny(tie_weights=False),
        tiny(ff_dim=24, n_layer=3),
        tiny(norm_first=False, tie_weights=False, n_head=4),
        GPTConfig(vocab_size=65, block_size=32),
    ],
)
def test_num_parameters_matches_model(config):
    model = GPT(config)
    assert num_parameters(config) == unique_parameter_count(model)


def test_weight_tying():
    tied, untied = GPT(tiny()), GPT(tiny(tie_weights=False))
    assert tied.head.weight is tied.tok_emb.weight
    assert untied.head.weight is not untied.tok_emb.weight
    assert num_parameters(tiny(tie_weights=False)) - num_parameters(tiny()) == 11 * 16
    assert tied.head.bias is None


def test_model_parts():
    model = GPT(tiny())
    assert isinstance(model.blocks, nn.ModuleList) and len(model.blocks) == 2
    assert model.config == tiny()
    assert model.blocks[0].ff.fc1.out_features == 4 * 16
    assert GPT(tiny(ff_dim=24)).blocks[0].ff.fc1.out_features == 24


def test_forward_shapes_and_loss():
    torch.manual_seed(0)
    model = GPT(tiny())
    idx = torch.randint(11, (3, 7))
    targets = torch.randint(11, (3, 7))
    logits, loss = model(idx)
    assert logits.shape == (3, 7, 11) and loss is None
    logits, loss = model(idx, targets)
    torch.testing.assert_close(loss, F.cross_entropy(logits.reshape(-1, 11), targets.reshape(-1)))
    assert abs(loss.item() - math.log(11)) < 0.3  # small init: close to uniform
    targets[:, :3] = -100
    _, loss_ignored = model(idx, targets)
    torch.testing.assert_close(loss_ignored, F.cross_entropy(logits[:, 3:].reshape(-1, 11), targets[:, 3:].reshape(-1)))


def test_forward_rejects_long_sequences():
    model = GPT(tiny())
    model(torch.zeros(1, 12, dtype=torch.long))
    with pytest.raises(ValueError, match="block_size"):
        model(torch.zeros(1, 13, dtype=torch.long))


def test_model_is_causal():
    torch.manual_seed(1)
    model = GPT(tiny(norm_first=False)).eval()
    idx = torch.randint(11, (2, 10))
    changed = idx.clone()
    changed[:, 6:] = (changed[:, 6:] + 1) % 11
    with torch.no_grad():
        a, _ = model(idx)
        b, _ = model(changed)
    torch.testing.assert_close(a[:, :6], b[:, :6], rtol=0, atol=0)


def test_bad_config_raises():
    with pytest.raises(ValueError):
        GPT(tiny(n_embd=15, n_head=2))
    with pytest.raises(ValueError):
        GPT(tiny(block_size=0))


# ---------------------------------------------------------------- training

TEXT = "the cat sat on the mat. " * 60
CHARS = sorted(set(TEXT))
DATA = torch.tensor([CHARS.index(c) for c in TEXT], dtype=torch.long)


def test_train_step_updates_and_clips():
    torch.manual_seed(2)
    model = GPT(tiny(vocab_size=len(CHARS)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    x, y = DATA[:48].view(4, 12), DATA[1:49].view(4, 12)
    loss = train_step(model, optimizer, x, y, grad_clip=1e-3)
    assert isinstance(loss, float)
    total = torch.sqrt(sum(p.grad.pow(2).sum() for p in model.parameters() if p.grad is not None))
    assert total.item() == pytest.approx(1e-3, rel=1e-3)
    before = [p.detach().clone() for p in model.parameters()]
    train_step(model, torch.optim.SGD(model.parameters(), lr=0.1), x, y, grad_clip=None)
    assert any(not torch.equal(a, p) for a, p in zip(before, model.parameters()))


def test_estimate_loss_restores_mode():
    model = GPT(tiny(vocab_size=len(CHARS), dropout=0.1))
    for mode in (True, False):
        model.train(mode)
        loss = estimate_loss(model, DATA, 12, 4, eval_iters=3, generator=torch.Generator().manual_seed(0))
        assert isinstance(loss, float) and model.training is mode
    again = estimate_loss(model, DATA, 12, 4, eval_iters=3, generator=torch.Generator().manual_seed(0))
    assert again == pytest.approx(loss, rel=1e-6)  # eval mode: no dropout, same batches


def test_train_decreases_loss_and_schedules_lr():
    torch.manual_seed(3)
    model = GPT(GPTConfig(vocab_size=len(CHARS), block_size=16, n_layer=2, n_head=2, n_embd=32))
    n = int(len(DATA) * 0.9)
    history = train(
        model,
        DATA[:n],
        DATA[n:],
        steps=60,
        batch_size=16,
        lr=1e-2,
        device="cpu",
        eval_interval=20,
        eval_iters=4,
        warmup=10,
        generator=torch.Generator().manual_seed(0),
        progress=False,
    )
    assert history["step"] == [0, 20, 40, 60]
    assert len(history["train_loss"]) == len(history["val_loss"]) == 4
    assert history["val_loss"][-1] < 0.5 * history["val_loss"][0]
    assert history["val_loss"][-1] < 0.6  # ln(11 characters) is 2.4; about 0.2 is reached
    lrs = history["lr"]
    assert len(lrs) == 60
    assert lrs[:10] == pytest.approx([1e-2 * (s + 1) / 10 for s in range(10)])
    assert max(lrs) == pytest.approx(1e-2)
    assert all(a >= b for a, b in zip(lrs[10:], lrs[11:]))  # cosine: non-increasing
    assert 0 < lrs[-1] < 1e-3


def test_train_rejects_bad_arguments():
    model = GPT(tiny(vocab_size=len(CHARS)))
    common = dict(batch_size=2, lr=1e-3, device="cpu", eval_interval=1, eval_iters=1, progress=False)
    with pytest.raises(ValueError):
        train(model, DATA, DATA, steps=5, warmup=6, **common)
    with pytest.raises(ValueError):
        train(model, DATA, DATA, steps=0, warmup=0, **common)


# ---------------------------------------------------------------- devices and progress


@pytest.mark.parametrize(
    "cuda, mps, expected", [(True, True, "cuda"), (True, False, "cuda"), (False, True, "mps"), (False, False, "cpu")]
)
def test_get_device_prefers_cuda_then_mps_then_cpu(monkeypatch, cuda, mps, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    assert get_device() == torch.device(expected)


@pytest.mark.parametrize("progress", [True, False])
def test_train_shows_a_progress_bar_only_when_asked(capsys, progress):
    model = GPT(tiny(vocab_size=len(CHARS)))
    train(
        model,
        DATA,
        DATA,
        steps=4,
        batch_size=2,
        lr=1e-3,
        device="cpu",
        eval_interval=2,
        eval_iters=1,
        warmup=1,
        generator=torch.Generator().manual_seed(0),
        progress=progress,
    )
    shown = capsys.readouterr().err
    if progress:
        assert "4/4" in shown and "val=" in shown
    else:
        assert shown == ""


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_the_same_calls_run_on_cuda():
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


def _catalogue_module():
    spec = importlib.util.spec_from_file_location("gpt_catalogue", get_stage("07_gpt").mistakes)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _names_with(cells, replaced: dict[str, str]) -> dict:
    """A fresh namespace of the reference notebook's cells, then the ``replaced`` cells' sources."""
    names = {}
    for cell in cells:
        exec(compile(cell.source, f"<cell {cell.index}>", "exec"), names)
    for stub, source in replaced.items():
        exec(compile(source, f"<{stub}>", "exec"), names)
    return names


def test_coupled_train_mistakes_lose_points_on_train():
    """The train() mistakes that also stop the model from learning (mistakes.COUPLED) lose
    points on train itself, not only on training_works, and a public test of train catches
    each; nothing else is touched.

    Each is run in this process on the reference notebook's names with its train cell,
    through every test but training_works (which, by design, trains with the student's train).
    """
    stage = get_stage("07_gpt")
    tests = stage_tests(stage)
    catalogue_module = _catalogue_module()
    cells = code_cells(make_notebook(stage, "reference"))
    assert len(catalogue_module.COUPLED) >= 5
    for variant in catalogue_module.COUPLED:
        names = _names_with(cells, variant.cells)  # fresh: the tests replace names in it while they run
        failed, failed_public = set(), set()
        for case in tests.cases:
            if case.qid == "training_works":
                continue
            got, error, _ = run_probe(case, Namespace(names))
            expected = tests.fixtures[case.key] if case.expected is REFERENCE else case.expected
            if error is not None or not judge_output(case, got, expected).passed:
                failed.add(case.qid)
                if case.public:
                    failed_public.add(case.qid)
        assert failed == {"train"}, (variant.name, failed)
        assert failed_public == {"train"}, (variant.name, "no public test of train catches it")


ORDER = "zero_grad -> forward -> backward -> clip -> step"


@pytest.mark.parametrize(
    "mistake, says",
    [
        ("gradients zeroed between the backward pass and the step", ["between the backward pass and the step", ORDER]),
        ("gradients zeroed after the step instead of before", ["zeroed after the step", ORDER]),
        ("no backward pass", ["call loss.backward()"]),
    ],
)
def test_public_train_step_tests_say_where_the_gradients_went(mistake, says):
    """A train_step that leaves no gradients fails both public tests of train_step, and each
    message tells the student which of three mistakes it is: it never ran the backward pass,
    or it zeroed the gradients between the backward pass and the step (mistakes.COUPLED: the
    model learns nothing), or after the step (mistakes.MISTAKES)."""
    stage = get_stage("07_gpt")
    tests = stage_tests(stage)
    catalogue_module = _catalogue_module()
    variants = {v.name: v.cells for v in catalogue_module.MISTAKES + catalogue_module.COUPLED}
    variants["no backward pass"] = {"train_step": catalogue_module._train_step(backward_and_clip="pass")}
    names = _names_with(code_cells(make_notebook(stage, "reference")), variants[mistake])
    step_tests = [c for c in tests.cases if c.public and c.qid == "train" and c.name.startswith("train_step ")]
    assert len(step_tests) == 2
    for case in step_tests:
        got, error, _ = run_probe(case, Namespace(names))
        assert error is None, (case.name, error)
        verdict = judge_output(case, got, case.expected)
        assert not verdict.passed, case.name
        for words in says:
            assert words in verdict.message, (case.name, verdict.message)
        others = {"call loss.backward()", "between the backward pass and the step", "zeroed after the step"}
        for words in others - set(says):
            assert words not in verdict.message, (case.name, verdict.message)


@pytest.mark.parametrize(
    "mistake, says",
    [
        ("the optimiser steps before the backward pass", "stepped before loss.backward() had computed the gradients"),
        ("train_step never steps the optimiser", "never stepped the optimiser"),
    ],
)
def test_a_step_that_had_no_gradients_to_use_is_named_by_the_public_check(mistake, says):
    """A train_step whose optimiser step came before the backward pass, or never came, leaves
    gradients behind as a right one does, yet the model learns nothing (mistakes.COUPLED). The
    first public test of train_step sees it (its optimiser-step hooks) and says which it was;
    the right train_step, and one that steps with a closure computing the gradients, pass it."""
    stage = get_stage("07_gpt")
    tests = stage_tests(stage)
    catalogue_module = _catalogue_module()
    variants = {v.name: v.cells for v in catalogue_module.COUPLED}
    variants["a step with a closure"] = {"train_step": CLOSURE_STEP}
    (case,) = [
        c for c in tests.cases if c.public and c.name == "train_step returns a float and starts from zeroed gradients"
    ]
    cells = code_cells(make_notebook(stage, "reference"))
    for name, wanted in ((mistake, says), ("a step with a closure", None)):
        got, error, _ = run_probe(case, Namespace(_names_with(cells, variants[name])))
        assert error is None, (name, error)
        verdict = judge_output(case, got, case.expected)
        assert verdict.passed == (wanted is None), (name, verdict.message)
        assert wanted is None or (wanted in verdict.message and ORDER in verdict.message), verdict.message


CLOSURE_STEP = """
def train_step(model, optimizer, x, y, grad_clip=1.0):
    if grad_clip is not None and grad_clip <= 0:
        raise ValueError("grad_clip must be positive")

    def closure():
        optimizer.zero_grad()
        _, loss = model(x, y)
        loss.backward()
        if grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        return loss

    return optimizer.step(closure).item()
"""


@pytest.mark.parametrize(
    "entry, public, hidden",
    [("done", "[0, 4, 8]", "[0, 5, 10]"), ("float(done)", "[0.0, 4.0, 8.0]", "[0.0, 5.0, 10.0]")],
)
def test_train_feedback_shows_the_steps_as_stored(entry, public, hidden):
    """A history without the last evaluation is quoted with the steps as the student stored
    them: whole numbers stay whole (the public test, 10 steps, eval_interval 4; the hidden
    one, 13 steps, eval_interval 5, ends at step 10 too)."""
    stage = get_stage("07_gpt")
    tests = stage_tests(stage)
    catalogue_module = _catalogue_module()
    train_source = catalogue_module._train(evaluate_when="(s + 1) % eval_interval == 0", step_entry=entry)
    names = _names_with(code_cells(make_notebook(stage, "reference")), {"train": train_source})
    evaluations = [c for c in tests.cases if c.qid == "train" and "evaluations at steps" in c.name]
    assert {c.public for c in evaluations} == {True, False}
    for case in evaluations:
        got, error, _ = run_probe(case, Namespace(names))
        assert error is None, (case.name, error)
        expected = tests.fixtures[case.key] if case.expected is REFERENCE else case.expected
        verdict = judge_output(case, got, expected)
        assert f"got {public if case.public else hidden}" in verdict.message, (case.name, verdict.message)
