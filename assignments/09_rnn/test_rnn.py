"""Tests of the reference solutions of stage 09_rnn.

The cells and the layer are checked against PyTorch's own modules with copied weights
(gradients included), the language model's loss and state against their definitions,
the training loop with a recording model, and generation by its properties. The last
part checks the stage's test suites themselves: the reference passes every public
test, every hidden test (the nn-twin checks included) on the reference's own outputs,
and the fixtures that should equal an nn module do.
"""

import doctest
import math
import os
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import solutions.rnn
from autograder.authoring.catalogue import catalogue
from autograder.authoring.catalogue import reference as reference_source
from autograder.build.fixtures import stage_tests
from autograder.course import get_stage, questions
from autograder.engine.suites import exec_suite
from autograder.kit.cases import REFERENCE, Namespace
from autograder.kit.check_cell import run_public
from solutions.rnn import RNNLM, LSTMCell, generate_rnn, rnn_cell, run_lstm, stream_batches, train_tbptt


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models run fastest on one thread, and far faster on a busy machine."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def test_docstring_examples():
    failures, tried = doctest.testmod(solutions.rnn, verbose=False)
    assert tried >= 7 and failures == 0


def _copy_lstm_weights(cell: LSTMCell, lstm: nn.LSTM) -> None:
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(cell, name).copy_(getattr(lstm, name + "_l0"))


# ---------------------------------------------------------------- rnn_cell


@pytest.mark.parametrize("B,I,H", [(1, 1, 1), (4, 5, 3), (3, 2, 7)])
def test_rnn_cell_equals_nn_rnncell_with_gradients(B, I, H):
    torch.manual_seed(B * 100 + I * 10 + H)
    twin = nn.RNNCell(I, H)
    x, h = torch.randn(B, I, requires_grad=True), torch.randn(B, H, requires_grad=True)
    weights = [
        p.detach().clone().requires_grad_(True) for p in (twin.weight_ih, twin.weight_hh, twin.bias_ih, twin.bias_hh)
    ]
    ours = rnn_cell(x, h, *weights)
    theirs = twin(x, h)
    torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=1e-6)
    upstream = torch.randn(B, H)
    ours_grads = torch.autograd.grad((ours * upstream).sum(), [x, h, *weights])
    theirs_grads = torch.autograd.grad(
        (theirs * upstream).sum(), [x, h, twin.weight_ih, twin.weight_hh, twin.bias_ih, twin.bias_hh]
    )
    for a, b in zip(ours_grads, theirs_grads):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- lstm_cell


def test_lstm_cell_parameters_match_nn_lstmcell():
    cell, twin = LSTMCell(5, 3), nn.LSTMCell(5, 3)
    assert {n: p.shape for n, p in cell.named_parameters()} == {n: p.shape for n, p in twin.named_parameters()}
    bound = 1 / math.sqrt(3)
    assert all(float(p.detach().abs().max()) <= bound for p in cell.parameters())
    cell.load_state_dict(twin.state_dict())  # the same names: weights copy as they are


@pytest.mark.parametrize("with_state", [True, False])
def test_lstm_cell_equals_nn_lstmcell_with_gradients(with_state):
    torch.manual_seed(1)
    twin, cell = nn.LSTMCell(4, 6), LSTMCell(4, 6)
    cell.load_state_dict(twin.state_dict())
    x = torch.randn(3, 4, requires_grad=True)
    state = (torch.randn(3, 6, requires_grad=True), torch.randn(3, 6, requires_grad=True)) if with_state else None
    ours, theirs = cell(x, state), twin(x, state)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)
    up_h, up_c = torch.randn(3, 6), torch.randn(3, 6)
    inputs = [x, *(state or [])]
    g_ours = torch.autograd.grad((ours[0] * up_h).sum() + (ours[1] * up_c).sum(), inputs + list(cell.parameters()))
    g_theirs = torch.autograd.grad(
        (theirs[0] * up_h).sum() + (theirs[1] * up_c).sum(), inputs + list(twin.parameters())
    )
    for a, b in zip(g_ours, g_theirs):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_lstm_cell_zero_state_follows_the_input():
    cell = LSTMCell(3, 4).double()
    h, c = cell(torch.randn(2, 3, dtype=torch.float64))
    assert h.dtype == c.dtype == torch.float64 and h.shape == (2, 4)


# ---------------------------------------------------------------- lstm_layer


@pytest.mark.parametrize("with_state", [True, False])
def test_run_lstm_equals_nn_lstm_with_gradients(with_state):
    torch.manual_seed(2)
    lstm, cell = nn.LSTM(3, 5, batch_first=True), LSTMCell(3, 5)
    _copy_lstm_weights(cell, lstm)
    x = torch.randn(2, 7, 3, requires_grad=True)
    h0, c0 = torch.randn(2, 5, requires_grad=True), torch.randn(2, 5, requires_grad=True)
    out, (h, c) = run_lstm(cell, x, (h0, c0) if with_state else None)
    out_t, (h_t, c_t) = lstm(x, (h0[None], c0[None]) if with_state else None)
    torch.testing.assert_close(out, out_t, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(h, h_t[0], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(c, c_t[0], rtol=1e-5, atol=1e-6)
    assert h.shape == (2, 5) and torch.equal(out[:, -1], h)
    ups = torch.randn(2, 7, 5), torch.randn(2, 5), torch.randn(2, 5)
    inputs = [x, h0, c0] if with_state else [x]
    g_ours = torch.autograd.grad(
        (out * ups[0]).sum() + (h * ups[1]).sum() + (c * ups[2]).sum(), inputs + list(cell.parameters())
    )
    g_theirs = torch.autograd.grad(
        (out_t * ups[0]).sum() + (h_t[0] * ups[1]).sum() + (c_t[0] * ups[2]).sum(), inputs + list(lstm.parameters())
    )
    for a, b in zip(g_ours, g_theirs):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------- rnn_lm


def test_rnnlm_shapes_loss_and_parameter_count():
    torch.manual_seed(3)
    V, E, H = 11, 6, 8
    model = RNNLM(V, E, H)
    idx, targets = torch.randint(V, (3, 5)), torch.randint(V, (3, 5))
    logits, loss, (h, c) = model(idx)
    assert logits.shape == (3, 5, V) and loss is None and h.shape == c.shape == (1, 3, H)
    logits, loss, _ = model(idx, targets=targets)
    torch.testing.assert_close(loss, F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1)))
    assert abs(loss.item() - math.log(V)) < 0.5
    targets[:, :2] = -100
    _, ignored, _ = model(idx, targets=targets)
    torch.testing.assert_close(ignored, F.cross_entropy(logits[:, 2:].reshape(-1, V), targets[:, 2:].reshape(-1)))
    assert sum(p.numel() for p in model.parameters()) == V * E + 4 * H * (E + H) + 8 * H + H * V + V


def test_rnnlm_state_continues_the_text_and_is_causal():
    torch.manual_seed(4)
    model = RNNLM(9, 5, 7, num_layers=2, dropout=0.3).eval()
    assert model.lstm.num_layers == 2 and model.lstm.dropout == 0.3 and model.lstm.batch_first
    idx = torch.randint(9, (2, 8))
    with torch.no_grad():
        whole, _, state = model(idx)
        first, _, mid = model(idx[:, :5])
        second, _, end = model(idx[:, 5:], mid)
        changed = idx.clone()
        changed[:, 4:] = (changed[:, 4:] + 1) % 9
        other = model(changed)[0]
    torch.testing.assert_close(torch.cat([first, second], dim=1), whole, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(end[0], state[0], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(other[:, :4], whole[:, :4], rtol=0, atol=0)
    assert RNNLM(9, 5, 7, dropout=0.3).lstm.dropout == 0.0  # one layer: nothing to drop between


# ---------------------------------------------------------------- tbptt


def test_stream_batches():
    assert stream_batches(torch.arange(11), 3).tolist() == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert stream_batches(torch.arange(12), 4).tolist() == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]
    assert stream_batches(torch.arange(5), 5).shape == (5, 1)
    assert stream_batches(torch.arange(7), 1).tolist() == [list(range(7))]
    for data, batch_size in [(torch.arange(3), 4), (torch.arange(0), 1), (torch.arange(5), 0)]:
        with pytest.raises(ValueError):
            stream_batches(data, batch_size)


class Recording(RNNLM):
    """The reference model, recording what train_tbptt hands it."""

    def __init__(self, vocab_size):
        super().__init__(vocab_size, 4, 6)
        self.seen = []

    def forward(self, idx, state=None, targets=None):
        record = {
            "idx": idx.clone(),
            "targets": targets.clone(),
            "state": None if state is None else [s.clone() for s in state],
            "attached": None if state is None else [s.requires_grad for s in state],
        }
        logits, loss, new_state = super().forward(idx, state, targets)
        record["out"] = [s.detach().clone() for s in new_state]
        record["loss"] = loss.item()
        self.seen.append(record)
        return logits, loss, new_state


def test_train_tbptt_windows_state_and_restart():
    torch.manual_seed(5)
    model = Recording(63)
    history = train_tbptt(model, torch.arange(63), seq_len=4, batch_size=3, steps=8, lr=0.01)
    streams = torch.arange(63).view(3, 21)
    starts = [0, 4, 8, 12, 16, 0, 4, 8]  # 16 + 4 + 1 = 21 fits; 20 does not
    assert history["step"] == list(range(8))
    assert history["loss"] == [r["loss"] for r in model.seen]
    for step, (record, p) in enumerate(zip(model.seen, starts)):
        assert torch.equal(record["idx"], streams[:, p : p + 4])
        assert torch.equal(record["targets"], streams[:, p + 1 : p + 5])
        if p == 0:
            assert record["state"] is None
        else:
            assert record["attached"] == [False, False]  # detached
            for a, b in zip(record["state"], model.seen[step - 1]["out"]):
                assert torch.equal(a, b)  # carried


def test_train_tbptt_clips_and_rejects_short_streams():
    torch.manual_seed(6)
    norms = []
    model = RNNLM(5, 4, 6)
    with pytest.MonkeyPatch.context() as patch:
        original = torch.optim.Adam.step

        def step(self, *args, **kwargs):
            norms.append(float(torch.cat([p.grad.flatten() for p in model.parameters()]).norm()))
            return original(self, *args, **kwargs)

        patch.setattr(torch.optim.Adam, "step", step)
        train_tbptt(model, torch.randint(5, (100,)), seq_len=5, batch_size=2, steps=3, lr=0.01, grad_clip=1e-3)
    assert norms == pytest.approx([1e-3] * 3, rel=1e-3)
    bad = [dict(seq_len=5), dict(seq_len=0), dict(batch_size=20), dict(steps=0), dict(lr=0.0), dict(grad_clip=0.0)]
    for kwargs in bad:
        with pytest.raises(ValueError):
            train_tbptt(model, torch.arange(10) % 5, **{**dict(seq_len=2, batch_size=2, steps=1, lr=0.01), **kwargs})


def test_train_tbptt_lowers_the_loss():
    """A random pattern of 6 tokens, repeated: the model learns it almost perfectly."""
    torch.manual_seed(7)
    pattern = torch.randint(4, (6,))
    data = pattern.repeat(200)
    model = RNNLM(4, 8, 32)
    history = train_tbptt(model, data, seq_len=3, batch_size=4, steps=300, lr=1e-2)
    assert history["loss"][-1] < 0.1 < history["loss"][0]


# ---------------------------------------------------------------- generate_rnn


class Counting(RNNLM):
    def __init__(self):
        super().__init__(7, 4, 8)
        self.calls = []

    def forward(self, idx, state=None, targets=None):
        self.calls.append((idx.shape[1], state is None, self.training, torch.is_grad_enabled()))
        return super().forward(idx, state, targets)


def test_generate_rnn_reads_the_prompt_once_and_restores_the_mode():
    torch.manual_seed(8)
    model = Counting().train()
    prompt = torch.randint(7, (2, 5))
    out = generate_rnn(model, prompt, 6, temperature=0)
    assert out.shape == (2, 11) and torch.equal(out[:, :5], prompt)
    assert model.calls[0] == (5, True, False, False)
    assert model.calls[1:] == [(1, False, False, False)] * 5
    assert model.training
    # greedy: each new token is the argmax after reading everything before it
    with torch.no_grad():
        model.eval()
        for t in range(5, 11):
            assert torch.equal(out[:, t], model(out[:, :t])[0][:, -1].argmax(-1))
    assert torch.equal(generate_rnn(model, prompt, 0), prompt)
    for args, kwargs in [
        ((prompt, 3), dict(temperature=-0.5)),
        ((prompt, -1), {}),
        ((prompt[0], 3), {}),
        ((prompt[:, :0], 3), {}),
    ]:
        with pytest.raises(ValueError):
            generate_rnn(model, *args, **kwargs)


def test_generate_rnn_samples_from_the_tempered_distribution():
    torch.manual_seed(9)
    model = RNNLM(5, 4, 8).eval()
    prompt = torch.full((4000, 1), 3)
    with torch.no_grad():
        probs = torch.softmax(model(prompt[:1])[0][0, -1] / 0.7, dim=-1)
    out = generate_rnn(model, prompt, 1, temperature=0.7, generator=torch.Generator().manual_seed(0))
    freq = torch.bincount(out[:, 1], minlength=5).double() / 4000
    assert float((freq - probs.double()).abs().max()) < 0.035
    again = generate_rnn(model, prompt[:8], 10, generator=torch.Generator().manual_seed(1))
    assert torch.equal(again, generate_rnn(model, prompt[:8], 10, generator=torch.Generator().manual_seed(1)))


# ---------------------------------------------------------------- the stage's tests


def _suite_module(kind: str):
    path = getattr(get_stage("09_rnn"), kind)
    name = f"test_solutions_rnn_{kind}_suite"
    exec_suite(path.read_text(encoding="utf-8"), str(path), name)
    return sys.modules[name]


def _names() -> dict:
    return {k: v for k, v in vars(solutions.rnn).items() if not k.startswith("_")}


def test_reference_passes_every_public_test():
    suite = _suite_module("public").suite
    for qid, _ in questions("09_rnn"):
        passed, report, _ = run_public(suite.cases, qid, _names())
        assert passed, report


@pytest.mark.parametrize("order", ["step before the backward pass", "gradients zeroed between backward and step"])
def test_a_step_that_found_no_gradients_is_named_by_the_public_checks(order):
    """An optimiser step taken before the backward pass (catalogued), or gradients zeroed between
    the backward pass and the step, leaves the step nothing to use: the public clipping checks,
    which watch the gradients at each step, say so instead of asking for clipping."""
    mistakes, _ = catalogue(get_stage("09_rnn"))
    source = next(v for v in mistakes if v.name == "the optimiser steps before the backward pass").cells["train_tbptt"]
    if order != "step before the backward pass":
        source = reference_source("rnn", "train_tbptt").replace(
            "        optimizer.step()\n", "        optimizer.zero_grad()\n        optimizer.step()\n"
        )
    names = _names()
    exec(source, names)
    passed, report, _ = run_public(_suite_module("public").suite.cases, "tbptt", names)
    assert not passed
    assert report.count("the optimiser found no gradients at any step") == 2, report
    assert "clipped to 1.0 before each step" not in report, report


def test_reference_passes_every_hidden_check_on_its_own_outputs():
    """Every hidden check accepts the reference: the nn-twin checks compare it with nn.RNNCell,
    nn.LSTMCell and nn.LSTM here, and a fixture case is judged against the probe's own output."""
    for case in _suite_module("hidden").suite.cases:
        torch.manual_seed(1234)
        got = case.probe(Namespace(_names()))
        verdict = case.check(got, got if case.expected is REFERENCE else case.expected, False)
        assert verdict.passed, f"{case.key}: {verdict.message}"


def test_fixtures_that_should_equal_nn_modules_do():
    """The fixture cases named after fixed weights equal the nn modules with those weights."""
    hidden = _suite_module("hidden")
    fixtures = stage_tests(get_stage("09_rnn")).fixtures
    pairs = {
        "rnn_cell: fixed weights (B=4, I=5, H=3)": hidden._rnn_twin(10, 4, 5, 3),
        "lstm_cell: fixed weights and a given state (B=4, I=5, H=3)": hidden._lstm_twin(100, 4, 5, 3),
        "lstm_layer: T = 1: one step of the cell": hidden._layer_twin(230, 3, 1, 2, 3, True),
    }
    for key, twin in pairs.items():
        for name, value in twin.items():
            torch.testing.assert_close(fixtures[key][name], value, rtol=1e-5, atol=1e-6)
    # the RNNLM fixtures: nn.LSTM inside, so the same model built here gives them
    model = RNNLM(hidden.V, hidden.E, hidden.HID)
    hidden.set_parameters(model, 310, scale=0.5)
    with torch.no_grad():
        torch.testing.assert_close(
            fixtures["rnn_lm: logits with fixed weights: one layer (B=3, T=7, V=13)"], model.eval()(hidden.LM_IDX)[0]
        )


def test_greedy_fixture_has_clear_margins():
    """The hidden greedy test's model leads its second-best logit by at least 0.1 at every step."""
    hidden = _suite_module("hidden")
    model = hidden._Recorder(12, 525, width=8, scale=1.5).eval()
    out = generate_rnn(model, hidden.PROMPT.clone(), 8, temperature=0)
    with torch.no_grad():
        for t in range(3, 11):
            top = model(out[:, :t])[0][:, -1].topk(2, dim=-1).values
            assert float((top[:, 0] - top[:, 1]).min()) > 0.1


@pytest.mark.slow
def test_reference_notebook_runs_top_to_bottom_in_quick_mode(tmp_path):
    """Every cell of the reference notebook, demonstrations and the training run included,
    runs without an error in a real kernel with GPTCOURSE_QUICK=1 and no network."""
    import nbformat
    from nbclient import NotebookClient

    from autograder.build.notebooks import make_notebook

    notebook = nbformat.from_dict(make_notebook(get_stage("09_rnn"), "reference"))
    offline = "import socket\ndef _no_network(*args, **kwargs):\n    raise OSError('no network in this test')\nsocket.socket = _no_network\nsocket.create_connection = _no_network\n"
    notebook.cells.insert(0, nbformat.v4.new_code_cell(offline, id="offline"))
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    previous = os.environ.get("GPTCOURSE_QUICK")
    os.environ["GPTCOURSE_QUICK"] = "1"
    try:
        NotebookClient(
            notebook,
            timeout=300,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": str(tmp_path)}},
        ).execute()
    finally:
        if previous is None:
            os.environ.pop("GPTCOURSE_QUICK")
        else:
            os.environ["GPTCOURSE_QUICK"] = previous
    errors = [
        (i, o["ename"], o["evalue"])
        for i, cell in enumerate(notebook.cells)
        if cell.cell_type == "code"
        for o in cell.outputs
        if o.get("output_type") == "error"
    ]
    assert not errors
    reports = [cell for cell in notebook.cells if cell.cell_type == "code" and cell.source.startswith("check(")]
    assert reports and all("public tests passed" in "".join(o.get("text", "") for o in c.outputs) for c in reports)
