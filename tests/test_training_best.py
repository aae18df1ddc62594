"""gptcourse train keeps the best: on a run whose validation loss turns up, the kept weights,
ckpt.pt, summary.json and the progress lines are those of the lowest exact validation loss;
patience stops such a run; resuming it is exact.

The run: a 2-layer model, 64 wide, float32, on a text whose training split is one passage of
1,000 characters nine times over and whose validation split is another passage: the model
learns the passage by heart. Measured here, the exact validation loss at steps 0, 20, ...,
120: 3.938, 3.058, 3.031, 3.035, 3.062, 3.055, 3.077 (best at step 40) while the training
estimate keeps falling (2.32 at step 40, 1.83 at 120). Every run is seeded, so these numbers
repeat on one machine; the tests assert only their shape (a best before the end, the later
losses above it).
"""

import json

import pytest
import torch

from solutions.data import load_corpus
from training import checkpoint, loop
from training.cli import main
from training.data import prepare
from training.evaluate import full_loss
from training.presets import TINY

OVERFIT = TINY.replace(
    name="overfit",
    n_layer=2,
    n_head=2,
    n_embd=64,
    block_size=16,
    batch_size=16,
    steps=120,
    lr=3e-3,
    min_lr=3e-4,
    warmup=10,
    eval_interval=20,
    eval_iters=4,
    sample_tokens=0,
    autocast=None,
)
CPU = torch.device("cpu")


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    monkeypatch.setenv("GPTCOURSE_THREADS", "1")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def text() -> str:
    docs = load_corpus("default")
    return docs[:1000] * 9 + docs[5000:6000]  # train: one passage nine times; validation: another


@pytest.fixture(scope="module")
def corpus(text):
    return prepare("default", text=text)


@pytest.fixture(scope="module")
def straight(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("straight")
    lines: list[str] = []
    result = loop.run(OVERFIT, corpus, CPU, out, progress=False, log=lines.append)
    return result, out, lines


def _same_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_a_run_whose_validation_loss_turns_up_keeps_its_best_weights(straight, corpus):
    result, out, lines = straight
    h = result.history
    assert result.best_step < result.step == OVERFIT.steps  # the best came before the end
    assert result.best_val == min(h["val_loss"]) == h["val_loss"][h["step"].index(result.best_step)]
    assert result.final_val == h["val_loss"][-1] > result.best_val
    assert h["train_loss"][-1] < h["train_loss"][h["step"].index(result.best_step)]  # training went on improving
    # the returned model is the kept one: its exact validation loss is the best one
    assert full_loss(result.model, corpus.val, OVERFIT.block_size, batch_size=64) == pytest.approx(result.best_val)
    # ckpt.pt: the kept weights as the model, the last step's as the state to resume from
    state = checkpoint.load(out / "ckpt.pt")
    assert state["best_step"] == result.best_step and state["best_val_loss"] == result.best_val
    assert state["step"] == OVERFIT.steps
    assert _same_weights(state["model"], result.model.state_dict())
    assert not _same_weights(state["train_state"]["model"], state["model"])
    model, _ = checkpoint.model_from(state)
    assert _same_weights(model.state_dict(), result.model.state_dict())
    # the progress lines give the best so far and its step
    last = [line for line in lines if line.startswith(f"step {OVERFIT.steps}:")]
    assert last and f"best {result.best_val:.4f} at step {result.best_step}" in last[0]


def test_the_kept_weights_are_those_the_run_had_at_its_best_step(straight, corpus):
    result, _, _ = straight
    until_best = loop.run(OVERFIT, corpus, CPU, None, progress=False, stop_after=result.best_step, log=lambda _: None)
    assert until_best.best_step == result.best_step
    assert _same_weights(until_best.model.state_dict(), result.model.state_dict())


def test_resuming_after_the_best_is_exact(straight, corpus, tmp_path):
    result, _, _ = straight
    stop = result.best_step + 30  # past the best, between two evaluations
    first = loop.run(OVERFIT, corpus, CPU, tmp_path, progress=False, stop_after=stop, log=lambda _: None)
    assert first.step == stop and first.final_val is None and first.best_step == result.best_step
    state = checkpoint.load(tmp_path / "ckpt.pt")
    resumed = loop.run(OVERFIT, corpus, CPU, tmp_path, progress=False, resume=state, log=lambda _: None)
    untimed = lambda h: {k: v for k, v in h.items() if k != "time"}  # noqa: E731 (wall-clock times differ)
    assert untimed(resumed.history) == untimed(result.history)  # batches, rates, evaluations: identical floats
    assert (resumed.best_step, resumed.best_val, resumed.final_val) == (
        result.best_step,
        result.best_val,
        result.final_val,
    )
    assert _same_weights(resumed.model.state_dict(), result.model.state_dict())


def test_patience_stops_a_run_that_no_longer_improves(straight, corpus):
    result, _, _ = straight
    lines: list[str] = []
    patient = loop.run(OVERFIT.replace(patience=2), corpus, CPU, None, progress=False, log=lines.append)
    # it stops at the second evaluation in a row without a new best
    assert patient.stopped_early and patient.step == result.best_step + 2 * OVERFIT.eval_interval
    assert (patient.best_step, patient.best_val) == (result.best_step, result.best_val)
    assert patient.final_val == patient.history["val_loss"][-1] > patient.best_val
    assert any(line.startswith(f"stopped early at step {patient.step}") for line in lines)


def test_cli_reports_the_kept_step_in_summary_and_output(text, tmp_path, capsys):
    corpus_file = tmp_path / "text.txt"
    corpus_file.write_text(text, encoding="utf-8")
    out = tmp_path / "run"
    args = ["train", "--corpus", str(corpus_file), "--preset", "tiny", "--out", str(out), "--quiet"]
    args += ["--steps", "120", "--lr", "3e-3", "--eval-interval", "20", "--patience", "2", "--autocast", "none"]
    args += ["--sample-tokens", "0"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stopped_early"] and summary["best_step"] < summary["steps"] < 120
    assert summary["best_val_loss"] < summary["final_val_loss"]
    assert f"kept the weights of step {summary['best_step']}: validation loss {summary['best_val_loss']:.4f}" in printed
    assert "stops after 2 evaluations without a new best" in printed
    assert (out / "losses.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    state = checkpoint.load(out / "ckpt.pt")
    assert state["best_step"] == summary["best_step"] and state["step"] == summary["steps"]
