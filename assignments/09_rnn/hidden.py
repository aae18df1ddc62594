"""Hidden tests of stage 09_rnn (run only when grading; never shipped to students).

Expected values marked REFERENCE are the reference solution's outputs on the same
probe, saved at build time. Checks marked "twin" compute the expected value in the
grading parent, at check time, from the ``nn`` module the contract names
(``nn.RNNCell``, ``nn.LSTMCell``, ``nn.LSTM(batch_first=True)``) with the same seeded
weights and inputs as the probe. Probes return raw outputs (tensors, numbers, modes and
devices as words); every comparison is made by the check. Every clause of each
question's contract and the tests that cover it are listed in ``clauses.md`` beside
this file.

Keeping the questions apart
    lstm_layer calls the student's run_lstm on `_TorchCell`, PyTorch's own nn.LSTMCell
    with a record of its calls, never on the student's LSTMCell. tbptt and sample_rnn run
    on `_Recorder`, a recording language model made of PyTorch's nn.Embedding, nn.LSTM
    and nn.Linear (with RNNLM's interface but a fixed embedding width, so it is no RNNLM),
    and on table models, never on the student's RNNLM. No function of this file computes
    an answer of the stage: the hints recognise catalogued mistakes by literal outputs
    (``_GATE_MISTAKES``, checked against the catalogue by test_rnn.py). train_tbptt calls
    the student's stream_batches: the two are one question.

Devices: grading has no second device, so the device tests run on PyTorch's meta device
(tensors without values): a cell, a training loop or a generation that leaves a tensor
on the CPU fails there, and the probe returns the devices and shapes it saw as words.

Tolerances (relative + absolute, per test; margins measured with the reference against
the fixtures and twins, as computed when grading, with several threads, and with every
operation in float64, as benchmarks/tolerance_margins.py does)
    - rnn_cell and lstm_cell outputs (values of order 1, float32): rtol 1e-5, atol 1e-6.
      The reference against nn.RNNCell / nn.LSTMCell differs by at most 1.2e-7 (a
      margin of 47x); float64 arithmetic moves the outputs by at most 1.6e-7 (17x).
      Gradients: rtol 1e-4, atol 1e-6 (smallest margin 29x). The catalogued mistakes
      are off by 1e-3 or more.
    - the float64 cell: rtol 1e-6, atol 1e-8 with dtype float64 (the test is about the
      zero state's dtype; a wrong dtype fails whatever the values).
    - run_lstm against nn.LSTM over 5-6 steps: outputs and states rtol 1e-5, atol 1e-6
      (measured differences up to 1.2e-7: 21x); gradients rtol 1e-4, atol 1e-6.
    - RNNLM logits (order 1-5, 7 steps, one or two layers): rtol 1e-4, atol 1e-5
      (smallest margin 146x, float64); losses rtol 1e-5, atol 1e-5 (274x); the
      state-carry and causality properties 1e-5 absolute.
    - train_tbptt losses over 12 Adam steps: rtol 1e-4, atol 1e-5 (944x); unclipped
      gradient norms rtol 1e-4, atol 1e-6 (675x); clipped norms within 1e-3 relative of
      the bound (clip_grad_norm_ divides by the norm plus 1e-6).
    - windows, stream rows, step indices and greedy tokens: exact. The greedy fixture's
      model leads its second-best logit by at least 0.1 at every step (checked in
      test_rnn.py).
    - sampling frequencies: 4000 draws, each within 0.035 of its probability (about 4.4
      standard deviations at worst), never exact draws.
    - the hints' literal mistake outputs: within 1e-5 (they are printed to 6 decimals).
"""

import contextlib
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.optimizer import register_optimizer_step_pre_hook

from autograder.kit import (
    REFERENCE,
    Hint,
    Suite,
    Verdict,
    catch,
    close,
    dtypes,
    equal,
    generator,
    grad_mode,
    mode_of,
    mode_problem,
    randn,
    satisfies,
    set_parameters,
    with_hint,
)

suite = Suite(public=False)


# ======================================================================== helpers


def _near(got, want, atol):
    want = want if isinstance(want, torch.Tensor) else torch.tensor(want)
    return (
        type(got) is torch.Tensor
        and got.shape == want.shape
        and bool(torch.allclose(got.double(), want.double(), rtol=0, atol=atol))
    )


class _Named:
    """Compare a dict of named tensors with the expected one (a fixture, or a twin made
    here in the parent), part by part; the message names the first part that differs."""

    def __init__(self, rtol, atol, twin=None, what="", hints=None, dtype=None):
        self.inner = close(rtol=rtol, atol=atol, dtype=dtype)
        self.twin = twin
        self.what = what
        self.hints = list(hints or [])
        self.cached = None

    def __call__(self, got, expected, reveal=True):
        if self.twin is not None:
            if self.cached is None:
                self.cached = self.twin()
            expected = self.cached
        if not isinstance(got, dict) or set(got) != set(expected):
            return with_hint(
                Verdict(False, "the test could not read your result (did the call return what the contract says?)"),
                self.hints,
                got,
                expected,
            )
        for name, want in expected.items():
            verdict = self.inner(got[name], want, reveal)
            if not verdict.passed:
                return with_hint(Verdict(False, f"{self.what}{name}: {verdict.message}"), self.hints, got, expected)
        return Verdict(True)


def _errors_problem(labels):
    """A check on a list of ``catch`` outcomes: each must be a ValueError (``labels`` say which call)."""

    def problem(got):
        for label, outcome in zip(labels, got):
            if outcome["raised"] != "ValueError":
                what = "nothing was raised" if outcome["raised"] is None else f"got {outcome['raised']}"
                return f"{label} should raise ValueError; {what}"
        return None

    return problem


def _rnn_arrays(seed, B, I, H, scale=0.5):
    """Seeded inputs and weights of one RNN step (the probe and the twin make the same ones)."""
    return {
        "x": randn(B, I, seed=seed),
        "h": randn(B, H, seed=seed + 1),
        "W_ih": randn(H, I, seed=seed + 2) * scale,
        "W_hh": randn(H, H, seed=seed + 3) * scale,
        "b_ih": randn(H, seed=seed + 4) * scale,
        "b_hh": randn(H, seed=seed + 5) * scale,
    }


def _lstm_weights(seed, I, H, scale=0.4):
    """Seeded LSTM parameters with PyTorch's names and shapes."""
    return {
        "weight_ih": randn(4 * H, I, seed=seed) * scale,
        "weight_hh": randn(4 * H, H, seed=seed + 1) * scale,
        "bias_ih": randn(4 * H, seed=seed + 2) * scale,
        "bias_hh": randn(4 * H, seed=seed + 3) * scale,
    }


def _load(module, weights, suffix=""):
    with torch.no_grad():
        for name, value in weights.items():
            getattr(module, name + suffix).copy_(value)
    return module


def _grads(named):
    return {
        name: (t.grad.detach().clone() if t.grad is not None else torch.zeros_like(t.detach()))
        for name, t in named.items()
    }


# ======================================================================== rnn_cell


def _rnn_probe(ns, seed, B, I, H):
    a = _rnn_arrays(seed, B, I, H)
    with torch.no_grad():
        return {"h": ns.rnn_cell(a["x"], a["h"], a["W_ih"], a["W_hh"], a["b_ih"], a["b_hh"])}


def _rnn_twin(seed, B, I, H):
    a = _rnn_arrays(seed, B, I, H)
    cell = nn.RNNCell(I, H)
    _load(cell, {"weight_ih": a["W_ih"], "weight_hh": a["W_hh"], "bias_ih": a["b_ih"], "bias_hh": a["b_hh"]})
    with torch.no_grad():
        return {"h": cell(a["x"], a["h"])}


_RNN_FIXED = "fixed weights (B=4, I=5, H=3)"


@suite.case("rnn_cell", _RNN_FIXED, points=2, check=_Named(1e-5, 1e-6), expected=REFERENCE)
def _(ns):
    return _rnn_probe(ns, 10, 4, 5, 3)


@suite.case(
    "rnn_cell",
    "a batch of one, one unit; and seven inputs into two units",
    points=1,
    check=_Named(1e-5, 1e-6),
    expected=REFERENCE,
)
def _(ns):
    return {"one": _rnn_probe(ns, 50, 1, 1, 1)["h"], "wide": _rnn_probe(ns, 60, 2, 7, 2)["h"]}


@suite.case(
    "rnn_cell",
    "equals nn.RNNCell with the same weights (B=3, I=6, H=4)",
    points=2,
    check=_Named(1e-5, 1e-6, twin=lambda: _rnn_twin(20, 3, 6, 4), what="against nn.RNNCell, "),
    builds_on=(_RNN_FIXED,),
)
def _(ns):
    return _rnn_probe(ns, 20, 3, 6, 4)


def _rnn_grad_twin():
    a = {k: v.clone().requires_grad_(True) for k, v in _rnn_arrays(30, 3, 4, 5).items()}
    cell = nn.RNNCell(4, 5)
    with torch.no_grad():
        cell.weight_ih.copy_(a["W_ih"])
        cell.weight_hh.copy_(a["W_hh"])
        cell.bias_ih.copy_(a["b_ih"])
        cell.bias_hh.copy_(a["b_hh"])
    (cell(a["x"], a["h"]) * randn(3, 5, seed=31)).sum().backward()
    names = {
        "x": a["x"],
        "h": a["h"],
        "W_ih": cell.weight_ih,
        "W_hh": cell.weight_hh,
        "b_ih": cell.bias_ih,
        "b_hh": cell.bias_hh,
    }
    return _grads(names)


@suite.case(
    "rnn_cell",
    "gradients with respect to the inputs, the state and every weight equal nn.RNNCell's",
    points=1,
    check=_Named(1e-4, 1e-6, twin=_rnn_grad_twin, what="gradient of "),
    builds_on=(_RNN_FIXED,),
)
def _(ns):
    a = {k: v.clone().requires_grad_(True) for k, v in _rnn_arrays(30, 3, 4, 5).items()}
    (ns.rnn_cell(a["x"], a["h"], a["W_ih"], a["W_hh"], a["b_ih"], a["b_hh"]) * randn(3, 5, seed=31)).sum().backward()
    return _grads(a)


_ONE_BIAS = [
    torch.tanh(b).expand(2, 4) for b in (_rnn_arrays(40, 2, 3, 4)["b_ih"], _rnn_arrays(40, 2, 3, 4)["b_hh"])
]  # one bias left out
_BIAS_HINTS = [
    Hint(
        lambda got, exp: isinstance(got, dict) and any(_near(got.get("h"), wrong, 1e-5) for wrong in _ONE_BIAS),
        "both biases, b_ih and b_hh, are added inside the tanh",
        mistake="a bias left out",
    )
]


@suite.case(
    "rnn_cell",
    "zero input and zero state: tanh(b_ih + b_hh) in every row",
    points=1,
    check=_Named(1e-5, 1e-6, hints=_BIAS_HINTS),
    expected=REFERENCE,
    builds_on=(_RNN_FIXED,),
)
def _(ns):
    a = _rnn_arrays(40, 2, 3, 4)
    with torch.no_grad():
        return {"h": ns.rnn_cell(torch.zeros(2, 3), torch.zeros(2, 4), a["W_ih"], a["W_hh"], a["b_ih"], a["b_hh"])}


# ======================================================================== lstm_cell


def _parameters_problem(got):
    want = {"weight_ih": [12, 5], "weight_hh": [12, 3], "bias_ih": [12], "bias_hh": [12]}
    names = sorted(got)
    if names != sorted(want):
        return f"the cell's parameters must be exactly weight_ih, weight_hh, bias_ih and bias_hh; yours are {', '.join(names) or 'none'}"
    for name, (shape, kind) in got.items():
        if kind != "Parameter":
            return f"{name} must be an nn.Parameter (so that it trains and copies with the weights), yours is a {kind}"
        if shape != want[name]:
            return f"{name} has shape {tuple(shape)}, which is not ({'4H, I' if name == 'weight_ih' else '4H, H' if name == 'weight_hh' else '4H,'}) for input_size=5, hidden_size=3"
    return None


_CELL_PARAMETERS = "parameters: names, shapes, nn.Parameter (input_size=5, hidden_size=3)"


@suite.case("lstm_cell", _CELL_PARAMETERS, points=1, check=satisfies(_parameters_problem), structure=True)
def _(ns):
    cell = ns.LSTMCell(5, 3)
    return {name: [list(p.shape), type(p).__name__] for name, p in cell.named_parameters()}


def _init_problem(got):
    bound = 1 / math.sqrt(16)
    missing = [n for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh") if n not in got]
    if missing:
        return f"a fresh cell has no parameter {missing[0]}: the four parameters are registered as nn.Parameter"
    for name, values in got.items():
        if type(values) is not torch.Tensor or not values.numel():
            return f"{name} is not a tensor of numbers"
        if not bool(torch.isfinite(values).all()) or not float(values.abs().max()) <= bound * (1 + 1e-6):
            return f"a fresh cell's {name} must lie within +-1/sqrt(hidden_size), as nn.LSTMCell's does; its largest value is {float(values.abs().max()):.3g}"
        if not float(values.std()) >= 0.2 * bound:
            return f"a fresh cell's {name} must be drawn uniformly from [-1/sqrt(hidden_size), 1/sqrt(hidden_size)]; its values hardly vary (all zero, or left uninitialised?)"
    return None


@suite.case(
    "lstm_cell",
    "fresh parameters: uniform within 1/sqrt(H), as nn.LSTMCell's (H=16)",
    points=1,
    check=satisfies(_init_problem),
    builds_on=(_CELL_PARAMETERS,),
    structure=True,
)
def _(ns):
    cell = ns.LSTMCell(6, 16)
    return {name: p.detach().clone() for name, p in cell.named_parameters()}


def _lstm_arrays(seed, B, I, H):
    return {"x": randn(B, I, seed=seed + 10), "h": randn(B, H, seed=seed + 11), "c": randn(B, H, seed=seed + 12)}


def _lstm_probe(ns, seed, B, I, H, with_state=True):
    a = _lstm_arrays(seed, B, I, H)
    cell = _load(ns.LSTMCell(I, H), _lstm_weights(seed, I, H))
    with torch.no_grad():
        h, c = cell(a["x"], (a["h"], a["c"])) if with_state else cell(a["x"])
    return {"h": h, "c": c}


def _lstm_twin(seed, B, I, H, with_state=True):
    a = _lstm_arrays(seed, B, I, H)
    cell = _load(nn.LSTMCell(I, H), _lstm_weights(seed, I, H))
    with torch.no_grad():
        h, c = cell(a["x"], (a["h"], a["c"])) if with_state else cell(a["x"])
    return {"h": h, "c": c}


_SWAPPED = Hint(
    lambda got, exp: (
        isinstance(got, dict) and _near(got.get("h"), exp["c"], 1e-5) and _near(got.get("c"), exp["h"], 1e-5)
    ),
    "return the pair in the order (h, c)",
    mistake="(c, h) returned",
)


def _swap_aware(check):
    """A check on the pair (h, c) that also recognises it returned the other way round."""
    check.hints.append(_SWAPPED)
    return check


_CELL_FIXED = "fixed weights and a given state (B=4, I=5, H=3)"


# What a cell with zero weights, bias_ih = GATE_BIAS and bias_hh = 0.1 returns on the probe's
# state when it makes one of the catalogued mistakes: (h, c), printed once from the catalogue
# (test_rnn.py checks them against it). Each gate is then a known number.
GATE_BIAS = randn(4 * 3, seed=140) * 1.5
_GATE_STATE = (randn(2, 3, seed=141), randn(2, 3, seed=142))
_GATE_MISTAKES = {
    "gates in another order": [
        (
            [[-0.015545, 0.355522, -0.335209], [0.032867, -0.615766, 0.640515]],
            [[-0.248665, 0.414357, -0.510018], [0.569785, -0.827691, 1.461772]],
        ),
        (
            [[0.026319, 0.231614, -0.7108], [0.088766, -0.291558, 0.734347]],
            [[0.038855, 0.530351, -1.077043], [0.131734, -0.711061, 1.15177]],
        ),
    ],
    "forget bias added": [
        (
            [[-0.533836, 0.241214, -0.723077], [0.044891, -0.306458, 0.804944]],
            [[-1.065321, 0.557041, -1.114879], [0.066335, -0.762563, 1.45671]],
        )
    ],
    "sigmoid for the candidate": [
        (
            [[-0.296065, 0.228811, -0.55572], [0.228038, -0.294024, 0.760701]],
            [[-0.468336, 0.522688, -0.72384], [0.350114, -0.71936, 1.24795]],
        )
    ],
    "tanh of the new cell forgotten": [
        (
            [[-0.594121, 0.253024, -0.643297], [-0.03944, -0.339327, 1.126112]],
            [[-0.876645, 0.530544, -0.716876], [-0.058194, -0.711505, 1.254914]],
        )
    ],
    "a bias left out of the gates": [
        (
            [[-0.203094, 0.151941, -0.407587], [0.179477, -0.208802, 0.283517]],
            [[-0.408104, 0.297936, -1.036208], [0.356214, -0.420953, 0.604233]],
        )
    ],
}


def _made(mistake):
    return lambda got, exp: (
        isinstance(got, dict)
        and any(_near(got.get("h"), h, 1e-5) and _near(got.get("c"), c, 1e-5) for h, c in _GATE_MISTAKES[mistake])
    )


_GATE_HINTS = [
    Hint(
        _made("gates in another order"),
        "read the four blocks of rows as the gates in PyTorch's order: input, forget, cell (candidate), output",
        mistake="gates in another order",
    ),
    Hint(
        _made("forget bias added"),
        "add no extra bias to the forget gate: bias_ih and bias_hh are all there is",
        mistake="forget bias added",
    ),
    Hint(
        _made("sigmoid for the candidate"),
        "the candidate g uses tanh (it may be negative); the three gates use the sigmoid",
        mistake="sigmoid for the candidate",
    ),
    Hint(
        _made("tanh of the new cell forgotten"),
        "the new h is o * tanh(c'), not o * c'",
        mistake="tanh of the new cell forgotten",
    ),
    Hint(
        _made("a bias left out of the gates"),
        "both biases, bias_ih and bias_hh, are added to the gates",
        mistake="a bias left out of the gates",
    ),
]


_CELL_GATES = "gates from the biases alone (zero weights): order, activations, the new c and h"


@suite.case(
    "lstm_cell",
    _CELL_GATES,
    points=1,
    check=_swap_aware(_Named(1e-5, 1e-6, hints=_GATE_HINTS)),
    expected=REFERENCE,
    builds_on=(_CELL_PARAMETERS,),
)
def _(ns):
    cell = ns.LSTMCell(4, 3)
    with torch.no_grad():
        cell.weight_ih.zero_()
        cell.weight_hh.zero_()
        cell.bias_ih.copy_(GATE_BIAS)
        cell.bias_hh.fill_(0.1)
        h, c = cell(randn(2, 4, seed=143), (_GATE_STATE[0].clone(), _GATE_STATE[1].clone()))
    return {"h": h, "c": c}


@suite.case(
    "lstm_cell",
    _CELL_FIXED,
    points=2,
    check=_swap_aware(_Named(1e-5, 1e-6)),
    expected=REFERENCE,
    builds_on=(_CELL_PARAMETERS, _CELL_GATES),  # the gates' order and activations come first
)
def _(ns):
    return _lstm_probe(ns, 100, 4, 5, 3)


@suite.case(
    "lstm_cell",
    "equals nn.LSTMCell with a given state (B=3, I=4, H=6)",
    points=2,
    check=_swap_aware(_Named(1e-5, 1e-6, twin=lambda: _lstm_twin(110, 3, 4, 6), what="against nn.LSTMCell, ")),
    builds_on=(_CELL_FIXED,),
)
def _(ns):
    return _lstm_probe(ns, 110, 3, 4, 6)


_CELL_ZERO = "state=None equals nn.LSTMCell's zero state (B=2, I=3, H=5)"


@suite.case(
    "lstm_cell",
    _CELL_ZERO,
    points=1,
    check=_swap_aware(
        _Named(
            1e-5,
            1e-6,
            twin=lambda: _lstm_twin(120, 2, 3, 5, with_state=False),
            what="against nn.LSTMCell without a state, ",
        )
    ),
    builds_on=(_CELL_FIXED,),
)
def _(ns):
    return _lstm_probe(ns, 120, 2, 3, 5, with_state=False)


def _lstm_cell_grads(cell, seed=130, B=3, I=4, H=5):
    a = {k: v.clone().requires_grad_(True) for k, v in _lstm_arrays(seed, B, I, H).items()}
    h, c = cell(a["x"], (a["h"], a["c"]))
    ((h * randn(B, H, seed=seed + 20)).sum() + (c * randn(B, H, seed=seed + 21)).sum()).backward()
    return _grads({**a, **{name: getattr(cell, name) for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}})


@suite.case(
    "lstm_cell",
    "gradients with respect to x, h, c and the four parameters equal nn.LSTMCell's",
    points=2,
    check=_Named(
        1e-4,
        1e-6,
        twin=lambda: _lstm_cell_grads(_load(nn.LSTMCell(4, 5), _lstm_weights(130, 4, 5))),
        what="gradient of ",
    ),
    builds_on=(_CELL_FIXED,),
)
def _(ns):
    return _lstm_cell_grads(_load(ns.LSTMCell(4, 5), _lstm_weights(130, 4, 5)))


@suite.case(
    "lstm_cell",
    "a float64 cell and input with state=None: the zero state follows the input's dtype",
    points=1,
    check=_Named(1e-6, 1e-8, dtype=torch.float64),
    expected=REFERENCE,
    builds_on=(_CELL_ZERO,),
)
def _(ns):
    cell = _load(ns.LSTMCell(3, 4), _lstm_weights(150, 3, 4)).double()
    with torch.no_grad():
        h, c = cell(randn(2, 3, seed=151).double())
    return {"h": h, "c": c}


def _meta_problem(got):
    if got != [["meta", [2, 4]], ["meta", [2, 4]]]:
        return (
            "with the cell and the input on another device (here PyTorch's meta device) and state=None, the call failed or "
            "its (h, c) were not (B, H) tensors on that device: make the zero state on the input's device (x.new_zeros(...))"
        )
    return None


@suite.case(
    "lstm_cell",
    "a cell and an input on another device with state=None: the zero state is made on the input's device",
    points=1,
    check=satisfies(_meta_problem),
    builds_on=(_CELL_ZERO,),
)
def _(ns):
    cell = ns.LSTMCell(3, 4).to("meta")
    with torch.no_grad():
        h, c = cell(torch.empty(2, 3, device="meta"))
    return [[str(t.device), list(t.shape)] for t in (h, c)]


# ======================================================================== lstm_layer


class _TorchCell(nn.Module):
    """PyTorch's nn.LSTMCell with the given weights, recording the input and the incoming
    state of every call (the cell run_lstm is tested with)."""

    def __init__(self, weights):
        super().__init__()
        hidden, inputs = weights["weight_hh"].size(1), weights["weight_ih"].size(1)
        self.cell = _load(nn.LSTMCell(inputs, hidden), weights)
        self.calls = []

    def forward(self, x, state=None):
        self.calls.append(
            {"x": x.detach().clone(), "state": None if state is None else [s.detach().clone() for s in state]}
        )
        return self.cell(x, state)


def _layer_arrays(seed, B, T, I, H):
    return {
        "x": randn(B, T, I, seed=seed + 10),
        "h0": randn(B, H, seed=seed + 11) * 0.5,
        "c0": randn(B, H, seed=seed + 12),
    }


def _layer_probe(ns, seed, B, T, I, H, with_state):
    a = _layer_arrays(seed, B, T, I, H)
    cell = _TorchCell(_lstm_weights(seed, I, H))
    with torch.no_grad():
        outputs, (h, c) = ns.run_lstm(cell, a["x"], (a["h0"], a["c0"]) if with_state else None)
    return {"outputs": outputs, "h": h, "c": c}


def _layer_twin(seed, B, T, I, H, with_state):
    a = _layer_arrays(seed, B, T, I, H)
    lstm = _load(nn.LSTM(I, H, batch_first=True), _lstm_weights(seed, I, H), suffix="_l0")
    with torch.no_grad():
        outputs, (h, c) = lstm(a["x"], (a["h0"][None], a["c0"][None]) if with_state else None)
    return {"outputs": outputs, "h": h[0], "c": c[0]}


def _shapes_problem(got):
    want = {"outputs": "(B, T, H) = (2, 3, 5)", "h": "(B, H) = (2, 5)", "c": "(B, H) = (2, 5)"}
    sizes = {"outputs": [2, 3, 5], "h": [2, 5], "c": [2, 5]}
    for name, shape in got.items():
        if shape != sizes[name]:
            extra = " (not nn.LSTM's (1, B, H): run_lstm runs one cell)" if name != "outputs" else ""
            return f"{'the outputs' if name == 'outputs' else 'the final ' + name} should have shape {want[name]}{extra}; yours has {tuple(shape)}"
    return None


_LAYER_SHAPES = "shapes: outputs (B, T, H), h_T and c_T (B, H) each (B=2, T=3, I=4, H=5)"


@suite.case(
    "lstm_layer",
    _LAYER_SHAPES,
    points=1,
    check=satisfies(
        _shapes_problem,
        hints=[
            Hint(
                lambda got, exp: isinstance(got, dict) and got.get("h") == [1, 2, 5],
                "run_lstm returns the final state as (B, H) tensors, not nn.LSTM's (1, B, H)",
                mistake="final state (1, B, H)",
            ),
            Hint(
                lambda got, exp: isinstance(got, dict) and got.get("outputs") == [3, 2, 5],
                "stack the step outputs on dim 1: outputs are batch-first, (B, T, H)",
                mistake="outputs stacked time-first",
            ),
        ],
    ),
    guard=True,  # zeros of the right shapes pass: it counts only with a test of the values
)
def _(ns):
    return {k: list(v.shape) for k, v in _layer_probe(ns, 240, 2, 3, 4, 5, False).items()}


def _layer_calls_problem(got):
    calls, x, h0, c0 = got["calls"], got["x"], got["h0"], got["c0"]
    T = x.size(1)
    if len(calls) != T:
        return f"for T={T} the cell must be called {T} times, once per step; it was called {len(calls)} times"
    for t, call in enumerate(calls):
        if not torch.equal(call["x"], x[:, t]):
            return f"call {t} must get x[:, {t}], the inputs of step {t} for the whole batch"
    if calls[0]["state"] is None or not (
        torch.equal(calls[0]["state"][0], h0) and torch.equal(calls[0]["state"][1], c0)
    ):
        return "the first call must get the state given to run_lstm"
    outputs = got["outputs"]
    for t in range(1, T):
        if calls[t]["state"] is None or not torch.equal(calls[t]["state"][0], outputs[:, t - 1]):
            return f"call {t} must get the state that call {t - 1} returned"
    return None


@suite.case(
    "lstm_layer",
    "the grader's cell is called once per step with x[:, t], starting from the given state",
    points=1,
    check=satisfies(_layer_calls_problem),
    builds_on=(_LAYER_SHAPES,),
)
def _(ns):
    a = _layer_arrays(250, 2, 4, 3, 3)
    cell = _TorchCell(_lstm_weights(250, 3, 3))
    with torch.no_grad():
        outputs, _ = ns.run_lstm(cell, a["x"], (a["h0"], a["c0"]))
    return {"calls": cell.calls, "x": a["x"], "h0": a["h0"], "c0": a["c0"], "outputs": outputs}


def _none_first_problem(got):
    if not got:
        return "run_lstm never called the cell"
    if got[0] is not None and max(float(s.abs().max()) for s in got[0]) > 0:
        return "with state=None the first call must get None (or a zero state), so that the cell starts from zeros"
    return None


@suite.case(
    "lstm_layer",
    "state=None: the first step gets None (the cell's zero state)",
    points=1,
    check=satisfies(_none_first_problem),
    builds_on=(_LAYER_SHAPES,),
)
def _(ns):
    a = _layer_arrays(255, 2, 3, 3, 4)
    cell = _TorchCell(_lstm_weights(255, 3, 4))
    with torch.no_grad():
        ns.run_lstm(cell, a["x"])
    return [call["state"] for call in cell.calls]


_FROM_ZERO = "equals nn.LSTM(batch_first=True) from a zero state (B=3, T=6, I=4, H=5)"


@suite.case(
    "lstm_layer",
    _FROM_ZERO,
    points=2,
    check=_Named(1e-5, 1e-6, twin=lambda: _layer_twin(200, 3, 6, 4, 5, False), what="against a one-layer nn.LSTM, "),
    builds_on=(_LAYER_SHAPES,),
)
def _(ns):
    return _layer_probe(ns, 200, 3, 6, 4, 5, False)


@suite.case(
    "lstm_layer",
    "equals nn.LSTM(batch_first=True) from a given state (B=2, T=5, I=3, H=4)",
    points=2,
    check=_Named(
        1e-5, 1e-6, twin=lambda: _layer_twin(210, 2, 5, 3, 4, True), what="against a one-layer nn.LSTM given (h0, c0), "
    ),
    builds_on=(_FROM_ZERO,),
)
def _(ns):
    return _layer_probe(ns, 210, 2, 5, 3, 4, True)


@suite.case(
    "lstm_layer",
    "T = 1: one step of the cell",
    points=1,
    check=_Named(1e-5, 1e-6),
    expected=REFERENCE,
    builds_on=(_LAYER_SHAPES,),
)
def _(ns):
    return _layer_probe(ns, 230, 3, 1, 2, 3, True)


def _layer_grads(module, run, seed=220, B=2, T=5, I=3, H=4, suffix=""):
    a = {k: v.clone().requires_grad_(True) for k, v in _layer_arrays(seed, B, T, I, H).items()}
    outputs, h, c = run(a)
    loss = (
        (outputs * randn(B, T, H, seed=seed + 20)).sum()
        + (h * randn(B, H, seed=seed + 21)).sum()
        + (c * randn(B, H, seed=seed + 22)).sum()
    )
    (loss + 0.0 * a["x"].sum()).backward()  # the second term: a backward pass even when no gradient reaches the inputs
    params = {name: getattr(module, name + suffix) for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
    return _grads({**a, **params})


def _layer_grad_twin():
    lstm = _load(nn.LSTM(3, 4, batch_first=True), _lstm_weights(220, 3, 4), suffix="_l0")

    def run(a):
        outputs, (h, c) = lstm(a["x"], (a["h0"][None], a["c0"][None]))
        return outputs, h[0], c[0]

    return _layer_grads(lstm, run, suffix="_l0")


def _only_last_step(got, exp):
    """Only the last step's input gets a gradient: the state was cut at every step."""
    return (
        isinstance(got, dict)
        and type(got.get("x")) is torch.Tensor
        and got["x"].dim() == 3
        and float(got["x"][:, :-1].abs().max()) < 1e-3 * float(exp["x"].abs().max())
    )


@suite.case(
    "lstm_layer",
    "gradients with respect to x, h0, c0 and the weights equal nn.LSTM's",
    points=2,
    check=_Named(
        1e-4,
        1e-6,
        twin=_layer_grad_twin,
        what="gradient of ",
        hints=[
            Hint(
                _only_last_step,
                "a step's gradient never reaches the steps before it: detach nothing inside run_lstm, so that backpropagation runs through time",
                mistake="state detached at every step",
            )
        ],
    ),
    builds_on=(_FROM_ZERO,),
)
def _(ns):
    cell = _TorchCell(_lstm_weights(220, 3, 4))

    def run(a):
        outputs, (h, c) = ns.run_lstm(cell, a["x"], (a["h0"], a["c0"]))
        return outputs, h, c

    return _layer_grads(cell.cell, run)


# ======================================================================== rnn_lm

V, E, HID = 13, 6, 8
LM_IDX = torch.randint(V, (3, 7), generator=generator(300))
LM_TARGETS = torch.randint(V, (3, 7), generator=generator(301))
LM_SOME = LM_TARGETS.clone()  # some targets ignored
LM_SOME[0, :4] = -100
LM_SOME[2, 6] = -100
LM_CHANGED = LM_IDX.clone()  # the tokens from position 3 on changed
LM_CHANGED[:, 3:] = (LM_CHANGED[:, 3:] + 4) % V


def _lm(ns, seed, **kwargs):
    model = ns.RNNLM(V, E, HID, **kwargs)
    set_parameters(model, seed, scale=0.5)
    return model.eval()


_LM_PARTS = "the parts: emb, a batch-first nn.LSTM of one layer without dropout, head = nn.Linear(H, V) with a bias"


@suite.case(
    "rnn_lm",
    _LM_PARTS,
    points=1,
    check=equal(
        dtype=None,
        hints=[
            Hint(
                lambda got, exp: isinstance(got, dict) and got.get("batch_first") == "False",
                "the LSTM reads (B, T, E) inputs: create it with batch_first=True",
                mistake="LSTM not batch-first",
            )
        ],
    ),
    expected={
        "emb": ["Embedding", 13, 6],
        "lstm": ["LSTM", 6, 8, 1, 0.0],
        "batch_first": "True",
        "head": ["Linear", 8, 13, [13]],
    },
    structure=True,
)
def _(ns):
    model = ns.RNNLM(V, E, HID)
    emb, lstm, head = model.emb, model.lstm, model.head
    return {
        "emb": [type(emb).__name__, emb.num_embeddings, emb.embedding_dim],
        "lstm": [type(lstm).__name__, lstm.input_size, lstm.hidden_size, lstm.num_layers, float(lstm.dropout)],
        "batch_first": str(lstm.batch_first),
        "head": [
            type(head).__name__,
            head.in_features,
            head.out_features,
            None if head.bias is None else list(head.bias.shape),
        ],
    }


@suite.case(
    "rnn_lm",
    "num_layers=3 and dropout=0.25 are passed to the nn.LSTM; its state is (3, B, H) each",
    points=1,
    check=equal(
        dtype=None,
        hints=[
            Hint(
                lambda got, exp: isinstance(got, dict) and got.get("num_layers") == 1,
                "pass num_layers on to nn.LSTM",
                mistake="num_layers not passed on",
            ),
            Hint(
                lambda got, exp: isinstance(got, dict) and got.get("num_layers") == 3 and got.get("dropout") == 0.0,
                "pass dropout on to nn.LSTM, which applies it between stacked layers",
                mistake="dropout not passed on",
            ),
        ],
    ),
    expected={"num_layers": 3, "dropout": 0.25, "state": [[3, 3, 8], [3, 3, 8]]},
    builds_on=(_LM_PARTS,),
)
def _(ns):
    model = ns.RNNLM(V, E, HID, num_layers=3, dropout=0.25).eval()
    with torch.no_grad():
        _, _, state = model(LM_IDX.clone())
    return {
        "num_layers": model.lstm.num_layers,
        "dropout": float(model.lstm.dropout),
        "state": [list(s.shape) for s in state],
    }


_LM_LOGITS = "logits with fixed weights: one layer (B=3, T=7, V=13)"


@suite.case(
    "rnn_lm",
    _LM_LOGITS,
    points=2,
    check=close(rtol=1e-4, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=(_LM_PARTS,),
)
def _(ns):
    with torch.no_grad():
        return _lm(ns, 310)(LM_IDX.clone())[0]


@suite.case(
    "rnn_lm",
    "logits with fixed weights: two layers with dropout 0.3, in eval mode",
    points=2,
    check=close(rtol=1e-4, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=(_LM_LOGITS,),
)
def _(ns):
    with torch.no_grad():
        return _lm(ns, 320, num_layers=2, dropout=0.3)(LM_IDX.clone())[0]


@suite.case(
    "rnn_lm",
    "losses with targets: all kept, and some -100",
    points=1,
    check=close(rtol=1e-5, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=(_LM_LOGITS,),
)
def _(ns):
    model = _lm(ns, 330)
    with torch.no_grad():
        return torch.tensor(
            [float(model(LM_IDX.clone(), targets=t.clone())[1]) for t in (LM_TARGETS, LM_SOME)], dtype=torch.float64
        )


def _no_loss_problem(got):
    if got != "None":
        return f"without targets the loss must be None; yours is a {got}"
    return None


@suite.case(
    "rnn_lm",
    "without targets the loss is None",
    points=1,
    check=satisfies(_no_loss_problem),
    builds_on=(_LM_PARTS,),
    guard=True,  # a no-op returns None too: it counts only with a test of the logits
)
def _(ns):
    with torch.no_grad():
        loss = _lm(ns, 340)(LM_IDX.clone())[1]
    return "None" if loss is None else type(loss).__name__


@suite.case(
    "rnn_lm",
    "the loss back-propagates: gradients of head.bias and the embedding",
    points=1,
    check=_Named(1e-4, 1e-6),
    expected=REFERENCE,
    builds_on=(_LM_LOGITS,),
)
def _(ns):
    model = _lm(ns, 350)
    model(LM_IDX.clone(), targets=LM_TARGETS.clone())[1].backward()
    return {"head.bias": model.head.bias.grad.clone(), "emb.weight": model.emb.weight.grad.clone()}


@suite.case(
    "rnn_lm",
    "the final state (h, c) of a two-layer model",
    points=1,
    check=_Named(1e-4, 1e-5),
    expected=REFERENCE,
    builds_on=(_LM_LOGITS,),
)
def _(ns):
    with torch.no_grad():
        h, c = _lm(ns, 360, num_layers=2)(LM_IDX.clone())[2]
    return {"h": h, "c": c}


@suite.case(
    "rnn_lm",
    "a given initial state (h, c) is where the LSTM starts",
    points=1,
    check=close(rtol=1e-4, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=(_LM_LOGITS,),
)
def _(ns):
    state = (randn(1, 3, HID, seed=371), randn(1, 3, HID, seed=372))
    with torch.no_grad():
        return _lm(ns, 370)(LM_IDX.clone(), state)[0]


def _continues_problem(got):
    whole, parts = got
    if type(parts) is not torch.Tensor or type(whole) is not torch.Tensor or parts.shape != whole.shape:
        return "the two calls together should give logits of the shape that one call on all 7 tokens gives"
    err = float((whole - parts).abs().max())
    if not err <= 1e-5:
        return (
            f"reading 5 tokens, then the last 2 with the returned state, differs from reading all 7 at once by up to {err:.3g}: "
            "start the LSTM from the state you are given, and return the state after the last position"
        )
    return None


@suite.case(
    "rnn_lm",
    "the state continues the text: 5 tokens, then 2 more, equal 7 at once (two layers)",
    points=1,
    check=satisfies(_continues_problem),
    builds_on=(_LM_LOGITS,),
    guard=True,  # zeros continue zeros: it counts only with a test of the logits
)
def _(ns):
    model = _lm(ns, 380, num_layers=2)
    with torch.no_grad():
        whole = model(LM_IDX.clone())[0]
        first, _, state = model(LM_IDX[:, :5].clone())
        second = model(LM_IDX[:, 5:].clone(), state)[0]
    return whole, torch.cat([first, second], dim=1)


def _causal_problem(got):
    a, b = got
    if not all(isinstance(t, torch.Tensor) and t.dim() == 3 for t in got) or a.shape != b.shape:
        return (
            "the model must return logits (B, T, V) first: here two calls on (B, T) ids did not give two such tensors"
        )
    err = float((a[:, :3] - b[:, :3]).abs().max())
    if not err <= 1e-5:
        return f"changing the tokens from position 3 on changed the logits of positions 0-2 by up to {err:.3g}: position t may only depend on tokens up to t"
    if not float((a[:, 3:] - b[:, 3:]).abs().max()) > 0.0:
        return "changing the tokens from position 3 on left their own logits unchanged: each position's logits must depend on its token"
    return None


@suite.case(
    "rnn_lm",
    "later tokens leave earlier logits unchanged",
    points=1,
    check=satisfies(_causal_problem),
    builds_on=(_LM_LOGITS,),
)
def _(ns):
    model = _lm(ns, 390)
    with torch.no_grad():
        return model(LM_IDX.clone())[0], model(LM_CHANGED.clone())[0]


# ======================================================================== tbptt

_STREAM_ROWS = "stream_batches: 23 tokens in 4 streams of 5, the last 3 dropped"


@suite.case(
    "tbptt",
    _STREAM_ROWS,
    points=1,
    check=equal(
        dtype=None,
        hints=[
            Hint(
                lambda got, exp: type(got) is torch.Tensor and got.shape == (4, 5) and got[0, 1].item() == 4,
                "each row is one contiguous piece of the data: shape it (batch_size, N), not (N, batch_size)",
                mistake="streams made as (N, B)",
            )
        ],
    ),
    expected=torch.arange(20).view(4, 5),
)
def _(ns):
    return ns.stream_batches(torch.arange(23), 4)


@suite.case(
    "tbptt",
    "stream_batches: divisible lengths and one stream",
    points=1,
    check=equal(dtype=None),
    expected=[torch.arange(12).view(3, 4), torch.arange(7).view(1, 7)],
    builds_on=(_STREAM_ROWS,),
)
def _(ns):
    return [ns.stream_batches(torch.arange(12), 3), ns.stream_batches(torch.arange(7), 1)]


def _one_column_problem(got):
    if not isinstance(got, torch.Tensor) or list(got.shape) != [5, 1]:
        shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
        return f"5 tokens in 5 streams make a (5, 1) tensor, one token per stream; yours is {shape}"
    if got.reshape(-1).tolist() != list(range(5)):
        return "5 tokens in 5 streams: stream i holds token i alone"
    return None


@suite.case(
    "tbptt",
    "stream_batches: as many tokens as streams gives (B, 1)",
    points=1,
    check=satisfies(_one_column_problem),
    builds_on=(_STREAM_ROWS,),
)
def _(ns):
    return ns.stream_batches(torch.arange(5), 5)


@suite.case(
    "tbptt",
    "stream_batches: fewer tokens than streams, no tokens, or batch_size=0 raise ValueError",
    points=1,
    check=satisfies(_errors_problem(["4 tokens in 5 streams", "no tokens in 2 streams", "batch_size=0"])),
)
def _(ns):
    return [
        catch(ns.stream_batches, torch.arange(4), 5),
        catch(ns.stream_batches, torch.arange(0), 2),
        catch(ns.stream_batches, torch.arange(5), 0),
    ]


@suite.case(
    "tbptt",
    "stream_batches: random ids keep their values",
    points=1,
    check=equal(dtype=None),
    expected=REFERENCE,
    builds_on=(_STREAM_ROWS,),
)
def _(ns):
    return ns.stream_batches(torch.randint(50, (50,), generator=generator(400)), 6)


@suite.case(
    "tbptt", "stream_batches: the streams keep the data's dtype (int64)", points=1, check=dtypes(), expected=REFERENCE
)
def _(ns):
    return ns.stream_batches(torch.randint(50, (50,), generator=generator(401)), 6)


class _Recorder(nn.Module):
    """A recording language model with RNNLM's interface, made of PyTorch's nn.Embedding
    (width 4), nn.LSTM and nn.Linear with fixed weights. Every call is recorded: mode,
    gradient mode, inputs, targets, the incoming state (and the graph it is still attached
    to), the state it returns and the loss."""

    def __init__(self, vocab_size, seed, width=5, scale=0.5):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, 4)
        self.lstm = nn.LSTM(4, width, batch_first=True)
        self.head = nn.Linear(width, vocab_size)
        set_parameters(self, seed, scale=scale)
        self.log = []

    def forward(self, idx, state=None, targets=None):
        entry = {
            "mode": mode_of(self),
            "grad": grad_mode(),
            "idx": idx.detach().clone(),
            "targets": None if targets is None else targets.detach().clone(),
            "state": None if state is None else [s.detach().clone() for s in state],
            "attached": None
            if state is None
            else [None if s.grad_fn is None else type(s.grad_fn).__name__ for s in state],
        }
        out, new_state = self.lstm(self.emb(idx), state)
        logits = self.head(out)
        loss = None if targets is None else F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
        entry["state_out"] = [s.detach().clone() for s in new_state]
        entry["loss"] = None if loss is None else float(loss.detach())
        self.log.append(entry)
        return logits, loss, new_state


def _weights(model):
    """A copy of every parameter of ``model``, flattened into one tensor."""
    return torch.cat([p.detach().reshape(-1).clone() for p in model.parameters()])


def _trained(got):
    """What is wrong when the model handed over was not the one trained (its weights did not move)."""
    if torch.equal(got["before"], got["after"]):
        return "the model's weights did not change: train the model handed over, with an optimiser of its parameters"
    return None


@contextlib.contextmanager
def _optimizer_watch():
    """Record, at every optimiser step, its class, learning rates and the total gradient norm."""
    steps = []

    def hook(optimizer, args, kwargs):
        grads = [p.grad.reshape(-1) for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
        steps.append(
            {
                "kind": type(optimizer).__name__,
                "lr": [float(g["lr"]) for g in optimizer.param_groups],
                "norm": float(torch.cat(grads).norm()) if grads else 0.0,
            }
        )

    handle = register_optimizer_step_pre_hook(hook)
    try:
        yield steps
    finally:
        handle.remove()


WINDOW_DATA = torch.arange(63)  # 3 streams of 21: windows at 0, 4, 8, 12, 16 (targets up to 20), then again
WINDOW_STARTS = [0, 4, 8, 12, 16, 0, 4, 8]


def _window_run(ns):
    model = _Recorder(63, 410)
    ns.train_tbptt(model, WINDOW_DATA.clone(), seq_len=4, batch_size=3, steps=8, lr=0.01)
    return model.log


def _windows_problem(got):
    streams = WINDOW_DATA.view(3, 21)
    if len(got) != len(WINDOW_STARTS):
        return f"8 steps should run the model 8 times, once per window; it ran {len(got)} times"
    for step, (entry, p) in enumerate(zip(got, WINDOW_STARTS)):
        if not torch.equal(entry["idx"], streams[:, p : p + 4]):
            return (
                f"step {step}: the window is not the expected columns of the streams (windows of seq_len consecutive "
                "columns, p advancing by seq_len, and a restart at 0 only when the next full window and its targets do not fit)"
            )
        if entry["targets"] is None or not torch.equal(entry["targets"], streams[:, p + 1 : p + 5]):
            return f"step {step}: the targets must be the window shifted by one column, passed to the model"
    return None


_WINDOWS = "windows: consecutive, full, targets shifted, restarting at 0 (streams of 21, seq_len 4)"


@suite.case("tbptt", _WINDOWS, points=2, check=satisfies(_windows_problem), builds_on=(_STREAM_ROWS,))
def _(ns):
    return _window_run(ns)


def _state_problem(got):
    if len(got) != len(WINDOW_STARTS):
        return f"8 steps should run the model 8 times, once per window; it ran {len(got)} times"
    for step, entry in enumerate(got):
        if WINDOW_STARTS[step] == 0:
            if entry["state"] is not None and max(float(s.abs().max()) for s in entry["state"]) > 0:
                return f"step {step} starts again at p = 0 and must start from a fresh zero state (None)"
            continue
        before = got[step - 1]["state_out"]
        if (
            entry["state"] is None
            or len(entry["state"]) != 2
            or not all(torch.equal(a, b) for a, b in zip(entry["state"], before))
        ):
            return f"step {step} must start from the state (h, c) that the previous window ended in"
        if any(a is not None for a in entry["attached"]):
            return f"at step {step} the state is still attached to the previous window's graph: detach h and c between windows"
    return None


@suite.case(
    "tbptt",
    "the state: carried from window to window, detached, fresh at each restart",
    points=2,
    check=satisfies(_state_problem),
    builds_on=(_WINDOWS,),
)
def _(ns):
    return _window_run(ns)


def _one_window_problem(got):
    if len(got) != 3:
        return f"3 steps should run the model 3 times, it ran {len(got)} times"
    for step, entry in enumerate(got):
        if not torch.equal(entry["idx"], torch.arange(12).view(2, 6)[:, :5]):
            return "with streams of exactly seq_len + 1 tokens every step trains on the one window there is, from p = 0"
        if entry["state"] is not None and max(float(s.abs().max()) for s in entry["state"]) > 0:
            return f"step {step} restarts at p = 0 and must start from a fresh zero state"
    return None


@suite.case(
    "tbptt",
    "streams of exactly one window: every step restarts at 0 from a zero state",
    points=1,
    check=satisfies(_one_window_problem),
    builds_on=(_WINDOWS,),
)
def _(ns):
    model = _Recorder(12, 420)
    ns.train_tbptt(model, torch.arange(12), seq_len=5, batch_size=2, steps=3, lr=0.01)
    return model.log


@suite.case(
    "tbptt",
    "streams too short for one window raise ValueError",
    points=1,
    check=satisfies(_errors_problem(["streams of 5 tokens for seq_len=5 (a window needs 6 with its targets)"])),
)
def _(ns):
    return [catch(ns.train_tbptt, _Recorder(12, 430), torch.arange(10), seq_len=5, batch_size=2, steps=3, lr=0.01)]


@suite.case(
    "tbptt",
    "seq_len=0, steps=0, lr=0 and grad_clip=0 raise ValueError",
    points=1,
    check=satisfies(_errors_problem(["seq_len=0", "steps=0", "lr=0", "grad_clip=0"])),
)
def _(ns):
    good = dict(seq_len=2, batch_size=2, steps=2, lr=0.01)
    bad = [dict(seq_len=0), dict(steps=0), dict(lr=0.0), dict(grad_clip=0.0)]
    return [catch(ns.train_tbptt, _Recorder(12, 435), torch.arange(12), **{**good, **kwargs}) for kwargs in bad]


LOSS_DATA = torch.randint(11, (60,), generator=generator(440))


def _history_problem(got):
    history, logged = got
    if not isinstance(history, dict) or "step" not in history or "loss" not in history:
        return "train_tbptt must return a dict with 'step' and 'loss'"
    if list(history["step"]) != list(range(9)):
        return f"'step' holds the 0-based index of each update (0, 1, 2, ... for steps=9); got {list(history['step'])}"
    if any(type(v) is not float for v in history["loss"]):
        return "each entry of 'loss' is a Python float (loss.item())"
    if len(history["loss"]) != 9 or any(not abs(a - b) <= 1e-6 * (1 + abs(b)) for a, b in zip(history["loss"], logged)):
        return "'loss' must hold each step's batch loss, as the model computed it before the update"
    return None


@suite.case(
    "tbptt",
    "history: step indices and the batch losses before each update",
    points=1,
    check=satisfies(_history_problem),
    builds_on=(_WINDOWS,),
)
def _(ns):
    model = _Recorder(11, 450)
    history = ns.train_tbptt(model, LOSS_DATA.clone(), seq_len=4, batch_size=2, steps=9, lr=0.02)
    return history, [e["loss"] for e in model.log if e["loss"] is not None]


def _training_mode_problem(got):
    if not got:
        return "train_tbptt never called the model"
    if any(mode != "train" for mode in got):
        return "the model must be in training mode while it trains (model.train()), even when it arrives in eval mode"
    return None


@suite.case(
    "tbptt",
    "a model handed over in eval mode trains in training mode",
    points=1,
    check=satisfies(_training_mode_problem),
    builds_on=(_WINDOWS,),
)
def _(ns):
    model = _Recorder(11, 455).eval()
    ns.train_tbptt(model, LOSS_DATA.clone(), seq_len=4, batch_size=2, steps=3, lr=0.02)
    return [e["mode"] for e in model.log]


@suite.case(
    "tbptt",
    "the losses of 12 steps of training from fixed weights",
    points=2,
    check=close(rtol=1e-4, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=(_WINDOWS,),
)
def _(ns):
    model = _Recorder(11, 460)
    history = ns.train_tbptt(model, LOSS_DATA.clone(), seq_len=5, batch_size=2, steps=12, lr=0.02)
    return torch.tensor([float(v) for v in history["loss"]], dtype=torch.float64)


def _adam_problem(got):
    problem = _trained(got)
    if problem:
        return problem
    got = got["steps"]
    if len(got) != 6:
        return f"6 steps need 6 optimiser steps, the optimiser stepped {len(got)} times"
    for step in got:
        if step["kind"] != "Adam":
            return f"the notebook asks for torch.optim.Adam, the optimiser is {step['kind']}"
        if any(abs(lr - 0.003) > 1e-12 for lr in step["lr"]):
            return f"lr=0.003 was asked for, the optimiser used {step['lr']}"
    return None


@suite.case(
    "tbptt", "one Adam step per step with the lr given", points=1, check=satisfies(_adam_problem), builds_on=(_WINDOWS,)
)
def _(ns):
    model = _Recorder(11, 470)
    before = _weights(model)
    with _optimizer_watch() as seen:
        ns.train_tbptt(model, LOSS_DATA.clone(), seq_len=4, batch_size=3, steps=6, lr=0.003)
    return {"steps": seen, "before": before, "after": _weights(model)}


def _clip_problem(bound):
    def test(got):
        problem = _trained(got)
        if problem:
            return problem
        got = got["steps"]
        if not got:
            return "no optimiser step was seen"
        norms = [s["norm"] for s in got]
        if max(norms) > bound * (1 + 1e-3):
            return f"with grad_clip={bound} the total gradient norm at a step was {max(norms):.4g}: clip it (clip_grad_norm_) after backward, before the step"
        if max(norms) < bound * (1 - 1e-3):
            return f"with grad_clip={bound} the gradients of these windows are larger than {bound} and should be scaled to exactly {bound}; the largest norm seen was {max(norms):.4g}"
        return None

    return test


@suite.case(
    "tbptt",
    "grad_clip=0.05 scales the total gradient norm to 0.05",
    points=1,
    check=satisfies(_clip_problem(0.05)),
    builds_on=(_WINDOWS,),
)
def _(ns):
    model = _Recorder(11, 480, scale=1.5)
    before = _weights(model)
    with _optimizer_watch() as seen:
        ns.train_tbptt(model, LOSS_DATA.clone(), seq_len=5, batch_size=2, steps=4, lr=0.01, grad_clip=0.05)
    return {"steps": seen, "before": before, "after": _weights(model)}


@suite.case(
    "tbptt",
    "the default grad_clip=1.0 clips large gradients to norm 1",
    points=1,
    check=satisfies(_clip_problem(1.0)),
    builds_on=(_WINDOWS,),
)
def _(ns):
    model = _Recorder(11, 480, scale=1.5)
    before = _weights(model)
    with _optimizer_watch() as seen:
        ns.train_tbptt(model, LOSS_DATA.clone(), seq_len=5, batch_size=2, steps=4, lr=0.01)
    return {"steps": seen, "before": before, "after": _weights(model)}


@suite.case(
    "tbptt",
    "grad_clip=None leaves the gradients as they are (each step's own, zeroed before)",
    points=1,
    check=close(rtol=1e-4, atol=1e-6, dtype=None),
    expected=REFERENCE,
    builds_on=(_WINDOWS,),
)
def _(ns):
    model = _Recorder(11, 480, scale=1.5)
    with _optimizer_watch() as seen:
        ns.train_tbptt(model, LOSS_DATA.clone(), seq_len=5, batch_size=2, steps=4, lr=0.01, grad_clip=None)
    return torch.tensor([s["norm"] for s in seen], dtype=torch.float64)


class _Elsewhere(nn.Module):
    """A model whose first parameter is on PyTorch's meta device (so that is the model's
    device): it records the device of every window and target it is given; its loss and
    state come from a CPU parameter, whatever the window holds."""

    def __init__(self):
        super().__init__()
        self.anchor = nn.Parameter(torch.empty(1, device="meta"))
        self.weight = nn.Parameter(torch.ones(3))
        self.seen = []

    def forward(self, idx, state=None, targets=None):
        self.seen.append([str(idx.device), None if targets is None else str(targets.device)])
        loss = (self.weight**2).sum()
        return None, loss, (self.weight * 1.0, self.weight * 2.0)


def _device_problem(got):
    if not got:
        return "train_tbptt never called the model"
    if any(devices != ["meta", "meta"] for devices in got):
        return (
            "the windows or their targets did not arrive on the model's device (a model on another device, here PyTorch's "
            "meta device): move each window and its targets there, to next(model.parameters()).device"
        )
    return None


@suite.case(
    "tbptt",
    "each window and its targets are moved to the model's device",
    points=1,
    check=satisfies(_device_problem),
    builds_on=(_WINDOWS,),
)
def _(ns):
    model = _Elsewhere()
    ns.train_tbptt(model, torch.arange(40), seq_len=4, batch_size=2, steps=3, lr=0.01, generator=generator(490))
    return model.seen


# ======================================================================== sample_rnn

PROMPT = torch.randint(12, (2, 3), generator=generator(500))


def _sample(ns, model, prompt, new, **kwargs):
    return ns.generate_rnn(model, prompt.clone(), new, **kwargs)


_GREEDY = "greedy tokens of a model with fixed weights"


@suite.case(
    "sample_rnn",
    _GREEDY,
    points=1,
    check=equal(
        dtype=None,
        hints=[
            Hint(
                lambda got, exp: type(got) is torch.Tensor and got.dim() == 2 and got.size(1) < exp.size(1),
                "return the prompt followed by the new tokens",
                mistake="prompt dropped",
            )
        ],
    ),
    expected=REFERENCE,
)
def _(ns):
    return _sample(ns, _Recorder(12, 525, width=8, scale=1.5), PROMPT, 8, temperature=0)


def _reads_problem(got):
    log, out = got
    if not log:
        return "generate_rnn never called the model"
    if not torch.equal(log[0]["idx"], PROMPT) or log[0]["state"] is not None:
        return "the first call reads the whole prompt, from no state (state=None)"
    if len(log) not in (6, 7):
        return f"6 new tokens need 6 calls of the model (the prompt once, then 5 single tokens); it was called {len(log)} times"
    for k, entry in enumerate(log[1:6], start=1):
        if list(entry["idx"].shape) != [2, 1]:
            return (
                f"call {k} gave the model {entry['idx'].size(1)} tokens per row: after the prompt, feed only the newest "
                "token with the carried state"
            )
        if not torch.equal(entry["idx"], out[:, 2 + k : 3 + k]):
            return f"call {k} must feed the token just chosen"
        if entry["state"] is None or not all(
            torch.equal(a, b) for a, b in zip(entry["state"], log[k - 1]["state_out"])
        ):
            return f"call {k} must pass the state (h, c) that the previous call returned"
    return None


@suite.case(
    "sample_rnn",
    "the prompt once, then one token per call with the carried state",
    points=1,
    check=satisfies(_reads_problem),
    builds_on=(_GREEDY,),
)
def _(ns):
    model = _Recorder(12, 520, width=8)
    out = _sample(ns, model, PROMPT, 6, generator=generator(521))
    return model.log, out


@suite.case(
    "sample_rnn",
    "eval mode and no gradients inside; the caller's mode (train or eval) after",
    points=1,
    check=satisfies(lambda got: mode_problem(got, "generate_rnn")),
)
def _(ns):
    out = []
    for mode in (True, False):
        model = _Recorder(12, 530)
        model.train(mode)
        before = mode_of(model)
        _sample(ns, model, PROMPT, 3, temperature=0)
        out.append([before, [[e["mode"], e["grad"]] for e in model.log], mode_of(model)])
    return out


TABLE = torch.tensor(
    [[0.0, 1.0, -1.0, 2.0, 0.5, -0.5], [1.5, 0.0, 0.0, -1.0, 0.5, 1.0], [2.0, 0.3, 1.2, -0.8, 0.0, 0.9]] * 2
)


class _Table(nn.Module):
    """Logits read from TABLE by the current token; the state counts the tokens read."""

    def __init__(self):
        super().__init__()
        self.table = nn.Embedding.from_pretrained(TABLE.clone(), freeze=False)

    def forward(self, idx, state=None, targets=None):
        count = torch.zeros(1, idx.size(0), 1) if state is None else state[0]
        return self.table(idx), None, (count + idx.size(1), count + idx.size(1))


def _frequencies_problem(got):
    for temperature, out in got:
        if type(out) is not torch.Tensor or list(out.shape) != [4000, 2]:
            return f"for a (4000, 1) prompt and one new token expected a (4000, 2) tensor, got {list(getattr(out, 'shape', []))}"
        freq = torch.bincount(out[:, 1].clamp(0, 5), minlength=6).double() / 4000
        want = torch.softmax(TABLE[2].double() / temperature, dim=-1)
        err = (freq - want).abs()
        if float(err.max()) > 0.035:
            k = int(err.argmax())
            return (
                f"at temperature {temperature} token {k} came with frequency {float(freq[k]):.3f} in 4000 draws, "
                "which is not the probability softmax(logits / temperature) gives it"
            )
    return None


@suite.case(
    "sample_rnn",
    "frequencies follow softmax(logits / temperature): default 1.0, and 0.5",
    points=1,
    check=satisfies(_frequencies_problem),
    builds_on=(_GREEDY,),
)
def _(ns):
    prompt = torch.full((4000, 1), 2)
    return [
        (1.0, _sample(ns, _Table(), prompt, 1, generator=generator(540))),
        (0.5, _sample(ns, _Table(), prompt, 1, temperature=0.5, generator=generator(541))),
    ]


def _same_problem(got):
    a, b = got
    if type(a) is not torch.Tensor or list(a.shape) != [2, 10]:
        return f"for a (2, 3) prompt and 7 new tokens expected a (2, 10) tensor, got {list(getattr(a, 'shape', []))}"
    if not torch.equal(a[:, :3], PROMPT):
        return "the output starts with the prompt"
    if int(a.min()) < 0 or int(a.max()) >= 12:
        return "every new id must be a token of the vocabulary"
    if type(b) is not torch.Tensor or not torch.equal(a, b):
        return "two calls with generators seeded alike gave different tokens: draw with torch.multinomial(..., generator=generator)"
    return None


@suite.case(
    "sample_rnn",
    "the same seeded generator gives the same draws",
    points=0.5,
    check=satisfies(_same_problem),
    builds_on=(_GREEDY,),
)
def _(ns):
    model = _Recorder(12, 550)
    a = _sample(ns, model, PROMPT, 7, generator=generator(551))
    torch.rand(5)
    b = _sample(ns, model, PROMPT, 7, generator=generator(551))
    return a, b


def _no_new_problem(got):
    if got != PROMPT.tolist():
        return "with max_new_tokens=0 generate_rnn must return the prompt as it is"
    return None


@suite.case(
    "sample_rnn",
    "max_new_tokens=0 returns the prompt",
    points=0.25,
    check=satisfies(_no_new_problem),
    builds_on=(_GREEDY,),
)
def _(ns):
    return _sample(ns, _Recorder(12, 560), PROMPT, 0, temperature=0).tolist()


@suite.case(
    "sample_rnn",
    "bad arguments raise ValueError: a negative temperature or max_new_tokens, a 1-D or empty prompt",
    points=0.25,
    check=satisfies(_errors_problem(["temperature=-1", "max_new_tokens=-1", "a 1-D prompt", "a prompt of no tokens"])),
)
def _(ns):
    model = _Recorder(12, 560)
    bad = [
        ((PROMPT.clone(), 3), dict(temperature=-1.0)),
        ((PROMPT.clone(), -1), {}),
        ((PROMPT[0].clone(), 3), {}),
        ((PROMPT[:, :0].clone(), 3), {}),
    ]
    return [catch(ns.generate_rnn, model, *args, **kwargs) for args, kwargs in bad]


class _Far(nn.Module):
    """A model on PyTorch's meta device: logits from an embedding table; it records the
    device of every input it is given."""

    def __init__(self):
        super().__init__()
        self.table = nn.Embedding(6, 6, device="meta")
        self.seen = []

    def forward(self, idx, state=None, targets=None):
        self.seen.append(str(idx.device))
        count = torch.zeros(1, idx.size(0), 1, device="meta") if state is None else state[0]
        return self.table(idx), None, (count + idx.size(1), count + idx.size(1))


def _far_problem(got):
    seen, out = got
    if not seen or any(device != "meta" for device in seen) or out != ["meta", [2, 5]]:
        return (
            "with a model on another device (here PyTorch's meta device) the prompt and every new token must be fed to the "
            "model on its device (move the prompt to next(model.parameters()).device), and the result stays there"
        )
    return None


@suite.case(
    "sample_rnn",
    "the prompt is moved to the model's device (greedy, a model on another device)",
    points=0.5,
    check=satisfies(_far_problem),
    builds_on=(_GREEDY,),
)
def _(ns):
    model = _Far()
    out = ns.generate_rnn(model, torch.tensor([[1, 2, 3], [4, 5, 0]]), 2, temperature=0)
    return model.seen, [str(out.device), list(out.shape)]
