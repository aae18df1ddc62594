"""Public tests of stage 09_rnn: students run these in the notebook with check().

This file is copied into the student's notebook, so it holds no reference code: the
expected values are literals worked out once, and properties. The tests of one question
never lean on another question's answer: `run_lstm` is tested with a stand-in cell that
adds its input to its state (not an LSTM), `train_tbptt` with a small stand-in model whose
state is a pair of leaky sums, and `generate_rnn` with stand-ins whose logits are read
from a table by the current token. Probes return raw outputs (tensors, numbers, words);
every comparison is made by the check.

Tolerances: the cells' worked examples rtol 1e-5, atol 1e-6 (float32 values of order 1
against literals computed once in float64; the reference is within 1e-7); the float64
cell 1e-5 against the float32 literal; the stand-ins' outputs exactly (sums of small
integers); the language model's logits with fixed weights rtol 1e-4, atol 1e-5
against literals computed once in float64 (printed to 6 decimals), its loss 1e-5
against the cross-entropy of its own logits; losses of train_tbptt 1e-6 relative to the stand-in's own record of them; clipped
gradient norms within 1e-3 relative of the bound (clip_grad_norm_ divides by the norm
plus 1e-6); frequencies of 2000 draws within 0.05 of their probability (more than 4
standard deviations; a temperature applied after the softmax is off by 0.2).
"""

import contextlib
import math

import torch
import torch.nn.functional as F
from torch.optim.optimizer import register_optimizer_step_pre_hook

from autograder.kit import (
    Hint,
    Suite,
    Verdict,
    catch,
    close,
    dtypes,
    equal,
    grad_mode,
    mode_of,
    mode_problem,
    raises,
    satisfies,
    set_parameters,
    with_hint,
)

suite = Suite(public=True)


def _near(got, want, atol=1e-5):
    want = want.detach() if isinstance(want, torch.Tensor) else torch.tensor(want)
    return (
        type(got) is torch.Tensor
        and got.shape == want.shape
        and bool(torch.allclose(got.double(), want.double(), atol=atol, rtol=0))
    )


def _pair_near(got, want, atol=1e-5):
    return (
        isinstance(got, (list, tuple))
        and len(got) == 2
        and _near(got[0], want[0], atol)
        and _near(got[1], want[1], atol)
    )


# ---------------------------------------------------------------- rnn_cell

X = torch.tensor([[1.0, -2.0, 0.5], [0.0, 1.0, -1.0]])  # (B=2, I=3)
H0 = torch.tensor([[0.5, -0.25], [1.0, 0.0]])  # (B=2, H=2)
W_IH = torch.tensor([[0.2, 0.1, -0.3], [-0.4, 0.3, 0.2]])  # (H, I)
W_HH = torch.tensor([[0.6, -0.5], [0.1, 0.8]])  # (H, H), not symmetric
B_IH = torch.tensor([0.1, -0.2])
B_HH = torch.tensor([0.05, 0.3])


def _shape_problem(got):
    if type(got) is not torch.Tensor or list(got.shape) != [4, 3]:
        return f"for B=4, I=5, H=3 the new state is (4, 3), got {list(getattr(got, 'shape', []))}"
    if not float(got.abs().max()) < 1.0:
        return "tanh keeps every value of the new state strictly between -1 and 1"
    if not float(got.min()) < 0.0:
        return "the first rows have negative pre-activations, and tanh keeps their sign: no new value is negative"
    return None


_RNN_SHAPE = "shape (B, H) for B=4, I=5, H=3, values inside (-1, 1) and of both signs"


@suite.case("rnn_cell", _RNN_SHAPE, points=1, check=satisfies(_shape_problem))
def _(ns):
    x = torch.linspace(-0.5, 0.5, 20).view(4, 5)
    return ns.rnn_cell(x, torch.zeros(4, 3), torch.ones(3, 5), torch.eye(3), torch.zeros(3), torch.zeros(3))


@suite.case(
    "rnn_cell",
    "a worked example: B=2, I=3, H=2",
    points=1,
    check=close(
        rtol=1e-5,
        atol=1e-6,
        dtype=None,
        hints=[
            Hint(
                lambda got, exp: _near(got, [[0.6046791, 0.2788848], [0.7595109, 0.5744425]]),
                "the new state squashes with tanh (values in -1..1), not with the sigmoid",
                mistake="sigmoid instead of tanh",
            ),
            Hint(
                lambda got, exp: _near(got, [[0.3583574, -0.8482836], [0.8004990, 0.0]]),
                "both biases, b_ih and b_hh, are added",
                mistake="a bias left out",
            ),
            Hint(
                lambda got, exp: _near(got, [[0.2682712, -0.8482836], [0.8177541, -0.2913126]]),
                "multiply h by W_hh transposed (h @ W_hh.T): row j of W_hh holds the weights into unit j",
                mistake="W_hh not transposed",
            ),
        ],
    ),
    expected=torch.tensor([[0.40113428235054016, -0.7397830486297607], [0.8177540898323059, 0.29131263494491577]]),
    builds_on=(_RNN_SHAPE,),
)
def _(ns):
    return ns.rnn_cell(X.clone(), H0.clone(), W_IH.clone(), W_HH.clone(), B_IH.clone(), B_HH.clone())


# ---------------------------------------------------------------- lstm_cell

_PARAMETERS = "parameters weight_ih (4H, I), weight_hh (4H, H), bias_ih and bias_hh (4H)"


@suite.case(
    "lstm_cell",
    _PARAMETERS,
    points=1,
    check=equal(dtype=None),
    expected={"bias_hh": [8], "bias_ih": [8], "weight_hh": [8, 2], "weight_ih": [8, 3]},
    structure=True,
)
def _(ns):
    cell = ns.LSTMCell(3, 2)
    return {name: list(p.shape) for name, p in sorted(cell.named_parameters())}


def _init_problem(got):
    bound = 1 / math.sqrt(16)
    if not isinstance(got, dict) or not got:
        return "the cell has no parameters"
    for name, values in got.items():
        if type(values) is not torch.Tensor or not values.numel():
            return f"{name} is not a tensor of numbers"
        if not bool(torch.isfinite(values).all()) or not float(values.abs().max()) <= bound * (1 + 1e-6):
            return (
                f"a fresh cell's {name} must lie within +-1/sqrt(hidden_size) = +-{bound:.3g}, as nn.LSTMCell's does; "
                f"its largest value is {float(values.abs().max()):.3g}"
            )
        if not float(values.std()) >= 0.2 * bound:
            return (
                f"a fresh cell's {name} must be drawn uniformly from [-1/sqrt(hidden_size), 1/sqrt(hidden_size)]; "
                "its values hardly vary (all zero, or left uninitialised?)"
            )
    return None


@suite.case(
    "lstm_cell",
    "fresh parameters: uniform within +-1/sqrt(H), as nn.LSTMCell's (H=16)",
    points=1,
    check=satisfies(_init_problem),
    builds_on=(_PARAMETERS,),
    structure=True,
)
def _(ns):
    cell = ns.LSTMCell(6, 16)
    return {name: p.detach().clone() for name, p in cell.named_parameters()}


def _lstm(ns, weight_ih, weight_hh, bias_ih, bias_hh):
    cell = ns.LSTMCell(3, 2)
    with torch.no_grad():
        cell.weight_ih.copy_(weight_ih)
        cell.weight_hh.copy_(weight_hh)
        cell.bias_ih.copy_(bias_ih)
        cell.bias_hh.copy_(bias_hh)
    return cell


def _pair_close(hints, dtype=None, rtol=1e-5, atol=1e-6):
    inner = close(rtol=rtol, atol=atol, dtype=dtype)

    def check(got, expected, reveal=True):
        if not isinstance(got, (list, tuple)) or len(got) != 2:
            return with_hint(Verdict(False, "the cell must return the pair (h, c)"), hints, got, expected)
        for name, g, e in zip(("h", "c"), got, expected):
            verdict = inner(g, e, reveal)
            if not verdict.passed:
                return with_hint(Verdict(False, f"{name}: {verdict.message}"), hints, got, expected)
        return Verdict(True)

    return check


# only the biases are non-zero, so each gate is a known number
@suite.case(
    "rnn_cell",
    "gradients: d(sum of the output) / d(x) and d(b_hh) in the worked example",
    points=0.5,
    check=_pair_close([]),
    expected=(
        torch.tensor(
            [
                [-0.013270154595375061, 0.21972545981407166, -0.1611831933259964],
                [-0.2997991144657135, 0.30766889452934265, 0.08364391326904297],
            ]
        ),
        torch.tensor([1.1703695058822632, 1.3678579330444336]),
    ),
    builds_on=(_RNN_SHAPE,),
)
def _(ns):
    x, b_hh = X.clone().requires_grad_(True), B_HH.clone().requires_grad_(True)
    ns.rnn_cell(x, H0.clone(), W_IH.clone(), W_HH.clone(), B_IH.clone(), b_hh).sum().backward()
    return x.grad, b_hh.grad


GATE_BIAS_IH = torch.tensor([0.5, -0.5, 1.0, 2.0, 0.3, -0.7, -1.0, 1.5])
GATE_BIAS_HH = torch.tensor([0.25, 0.25, 0.0, 0.0, 0.2, 0.2, 0.0, 0.0])
C0 = torch.tensor([[0.4, -0.6]])

_SWAPPED = Hint(
    lambda got, exp: _pair_near(got, (exp[1], exp[0])), "return (h, c) in this order", mistake="(c, h) returned"
)
_GATE_HINTS = [
    Hint(
        lambda got, exp: (
            _pair_near(got, ([[-0.1376392, -0.0496159]], [[-0.2248351, -0.1321831]]))
            or _pair_near(got, ([[0.1733970, 0.1578691]], [[0.7662423, 0.1955495]]))
        ),
        "the four blocks of rows are the gates in PyTorch's order: input, forget, cell (candidate), output",
        mistake="gates in another order",
    ),
    Hint(
        lambda got, exp: _pair_near(got, ([[0.1566478, -0.5307484]], [[0.6661789, -0.7738703]])),
        "add no extra bias to the forget gate: the two bias vectors are all there is",
        mistake="forget bias added",
    ),
    Hint(
        lambda got, exp: _pair_near(got, ([[0.1630548, -0.5974867]], [[0.6062836, -0.7308040]])),
        "the new h is o * tanh(c'), the output gate times the squashed new cell",
        mistake="tanh of the new cell forgotten",
    ),
    _SWAPPED,
]
_STATE_NONE = "state=None starts from zeros"
_GATES = "gates from the biases alone: the order input, forget, cell, output"
_WORKED = "a worked example with every weight in use: B=2, I=3, H=2"


@suite.case(
    "lstm_cell",
    _GATES,
    points=1,
    check=_pair_close(_GATE_HINTS),
    expected=(
        torch.tensor([[0.14563333988189697, -0.5098042488098145]]),
        torch.tensor([[0.6062836050987244, -0.7308040261268616]]),
    ),
    builds_on=(_PARAMETERS,),
)
def _(ns):
    cell = _lstm(ns, torch.zeros(8, 3), torch.zeros(8, 2), GATE_BIAS_IH, GATE_BIAS_HH)
    with torch.no_grad():
        return cell(torch.tensor([[3.0, -1.0, 2.0]]), (torch.tensor([[0.2, 0.9]]), C0.clone()))


def _full_cell(ns):
    return _lstm(
        ns,
        torch.linspace(-1.0, 1.0, 24).view(8, 3),
        torch.linspace(0.8, -0.8, 16).view(8, 2),
        torch.linspace(-0.3, 0.4, 8),
        torch.linspace(0.2, -0.1, 8),
    )


XL = torch.tensor([[1.0, -0.5, 2.0], [-1.5, 0.5, 0.0]])


@suite.case(
    "lstm_cell",
    _WORKED,
    points=1,
    check=_pair_close([_SWAPPED]),
    expected=(
        torch.tensor([[0.29918089509010315, -0.0744231790304184], [0.04909615218639374, -0.061838001012802124]]),
        torch.tensor([[0.356866717338562, -0.08000317215919495], [0.1480071097612381, -0.24185605347156525]]),
    ),
    builds_on=(_PARAMETERS, _GATES),  # a wrong gate order or activation fails here too: start at the gates
)
def _(ns):
    with torch.no_grad():
        return _full_cell(ns)(
            XL.clone(), (torch.tensor([[0.3, -0.2], [0.0, 0.7]]), torch.tensor([[1.0, -0.5], [0.2, 0.0]]))
        )


_ZERO_STATE = (
    torch.tensor([[0.039604127407073975, 0.13390031456947327], [0.03953234478831291, -0.0193629153072834]]),
    torch.tensor([[0.04521210119128227, 0.14416782557964325], [0.09203934669494629, -0.05078016221523285]]),
)


@suite.case(
    "lstm_cell",
    _STATE_NONE,
    points=1,
    check=_pair_close([_SWAPPED]),
    expected=_ZERO_STATE,
    builds_on=(_PARAMETERS, _WORKED),  # the same cell as the worked example, from a zero state
)
def _(ns):
    with torch.no_grad():
        return _full_cell(ns)(XL.clone())


@suite.case(
    "lstm_cell",
    "a float64 cell with state=None: the zero state takes the input's dtype",
    points=1,
    check=_pair_close([_SWAPPED], dtype=torch.float64, rtol=1e-5, atol=1e-6),
    expected=_ZERO_STATE,
    builds_on=(_STATE_NONE,),
)
def _(ns):
    with torch.no_grad():
        return _full_cell(ns).double()(XL.double())


# ---------------------------------------------------------------- lstm_layer


class _AddCell(torch.nn.Module):
    """A stand-in cell (not an LSTM): h' = h + x and c' = c + 1, from zeros when state is None.
    It records the input and the incoming state of every call."""

    def __init__(self, size):
        super().__init__()
        self.size = size
        self.calls = []

    def forward(self, x, state=None):
        if state is None:
            h, c = torch.zeros(x.size(0), self.size), torch.zeros(x.size(0), self.size)
        else:
            h, c = state
        self.calls.append(
            {"x": x.detach().clone(), "state": None if state is None else (h.detach().clone(), c.detach().clone())}
        )
        return h + x, c + 1


SEQ = torch.arange(24, dtype=torch.float32).view(2, 4, 3)  # (B=2, T=4, I=H=3)
_STEPS_OF_C = torch.arange(1.0, 5.0).view(1, 4, 1).expand(2, 4, 3)  # what c holds after each step


def _unrolled(out):
    outputs, (h, c) = out
    return [outputs, h, c]


def _first_is(shape):
    return lambda got, exp: isinstance(got, list) and type(got[0]) is torch.Tensor and list(got[0].shape) == shape


_SUMS = "with an adding cell: outputs (B, T, H) are the running sums, the final state (B, H)"


@suite.case(
    "lstm_layer",
    _SUMS,
    points=1,
    check=equal(
        dtype=None,
        hints=[
            Hint(
                _first_is([4, 2, 3]),
                "stack the step outputs on dim 1: outputs are batch-first, (B, T, H)",
                mistake="outputs stacked time-first",
            ),
            Hint(
                lambda got, exp: _first_is([2, 4, 3])(got, exp) and torch.equal(got[0], SEQ),
                "each step must start from the state the previous step returned",
                mistake="every step from the initial state",
            ),
            Hint(
                lambda got, exp: _first_is([2, 4, 3])(got, exp) and torch.equal(got[0], _STEPS_OF_C),
                "the outputs are the hidden states h of the steps, not the cell states c",
                mistake="outputs are the cell states",
            ),
            Hint(
                lambda got, exp: (
                    isinstance(got, list)
                    and len(got) == 3
                    and type(got[1]) is torch.Tensor
                    and list(got[1].shape) == [1, 2, 3]
                ),
                "return the final state as (B, H) tensors, not nn.LSTM's (1, B, H)",
                mistake="final state (1, B, H)",
            ),
        ],
    ),
    expected=[SEQ.cumsum(dim=1), SEQ.sum(dim=1), torch.full((2, 3), 4.0)],
)
def _(ns):
    return _unrolled(ns.run_lstm(_AddCell(3), SEQ.clone()))


@suite.case(
    "lstm_layer",
    "a given initial state is where the first step starts",
    points=1,
    check=equal(
        dtype=None,
        hints=[
            Hint(
                lambda got, exp: (
                    isinstance(got, list)
                    and len(got) == 3
                    and type(got[2]) is torch.Tensor
                    and torch.equal(got[2], torch.full((2, 3), 4.0))
                ),
                "pass the given state to the first step",
                mistake="given state ignored",
            )
        ],
    ),
    expected=[SEQ.cumsum(dim=1) + 10.0, SEQ.sum(dim=1) + 10.0, torch.full((2, 3), 9.0)],
    builds_on=(_SUMS,),
)
def _(ns):
    return _unrolled(ns.run_lstm(_AddCell(3), SEQ.clone(), (torch.full((2, 3), 10.0), torch.full((2, 3), 5.0))))


def _calls_problem(got):
    calls = got
    if len(calls) != 4:
        return f"for T=4 the cell must be called 4 times, once per step; it was called {len(calls)} times"
    for t, call in enumerate(calls):
        if not torch.equal(call["x"], SEQ[:, t]):
            return f"call {t} must get x[:, {t}], the inputs of step {t} for the whole batch"
        if t == 0 and call["state"] is not None and not all(float(s.abs().max()) == 0.0 for s in call["state"]):
            return "with state=None the first step starts from the cell's zero state"
        want = (SEQ[:, :t].sum(dim=1), torch.full((2, 3), float(t)))
        if t > 0 and (call["state"] is None or not all(torch.equal(a, b) for a, b in zip(call["state"], want))):
            return f"call {t} must get the state (h, c) that call {t - 1} returned"
    return None


@suite.case(
    "lstm_layer",
    "the cell is called once per step with x[:, t] and the state the last call returned",
    points=1,
    check=satisfies(_calls_problem),
)
def _(ns):
    cell = _AddCell(3)
    ns.run_lstm(cell, SEQ.clone())
    return cell.calls


def _gradient_problem(got):
    _, grad = got
    want = torch.tensor([4.0, 3.0, 2.0, 1.0]).view(1, 4, 1).expand(2, 4, 3)
    if type(grad) is not torch.Tensor or tuple(grad.shape) != (2, 4, 3):
        return "no gradient of shape (2, 4, 3) reached x"
    if not torch.equal(grad, want):
        return (
            f"the gradient of the sum of the outputs with respect to x[:, t] should be T - t = 4, 3, 2, 1 (each input counts "
            f"in every later output); got {grad[0, :, 0].tolist()}"
        )
    return None


def _cut_at_every_step(got, exp):
    """The outputs are right, but no gradient reaches the inputs: the state was detached."""
    outputs, grad = got
    return (
        type(outputs) is torch.Tensor
        and outputs.shape == SEQ.shape
        and torch.equal(outputs, SEQ.cumsum(dim=1))
        and type(grad) is torch.Tensor
        and float(grad.abs().max()) == 0.0
    )


@suite.case(
    "lstm_layer",
    "gradients flow back through every step: d(sum of outputs)/dx[:, t] = T - t with the adding cell",
    points=1,
    check=satisfies(
        _gradient_problem,
        hints=[
            Hint(
                _cut_at_every_step,
                "the outputs are right but no gradient reaches the inputs: detach nothing inside run_lstm, so that backpropagation runs through time",
                mistake="state detached at every step",
            ),
        ],
    ),
    builds_on=(_SUMS,),
)
def _(ns):
    x = SEQ.clone().requires_grad_(True)
    outputs, _ = ns.run_lstm(_AddCell(3), x)
    (outputs.sum() + 0.0 * x.sum()).backward()  # the second term: a backward pass even when no gradient reaches x
    return outputs.detach().clone(), x.grad.detach().clone()


# ---------------------------------------------------------------- rnn_lm


def _describe(model, idx):
    lstm, head, emb = getattr(model, "lstm", None), getattr(model, "head", None), getattr(model, "emb", None)
    logits, loss, state = model(idx)
    return {
        "emb": f"{type(emb).__name__} {list(getattr(emb, 'weight', torch.empty(0)).shape)}",
        "lstm": f"{type(lstm).__name__} input_size={getattr(lstm, 'input_size', None)} hidden_size={getattr(lstm, 'hidden_size', None)} batch_first={getattr(lstm, 'batch_first', None)}",
        "head": f"{type(head).__name__} {getattr(head, 'in_features', None)} -> {getattr(head, 'out_features', None)}",
        "logits": list(logits.shape),
        "loss": loss,
        "state": [list(s.shape) for s in state],
    }


_LM_PARTS = "the parts, the logits (B, T, V) and the state ((1, B, H), (1, B, H))"


@suite.case(
    "rnn_lm",
    _LM_PARTS,
    points=1,
    check=equal(
        dtype=None,
        hints=[
            Hint(
                lambda got, exp: isinstance(got, dict) and "batch_first=False" in str(got.get("lstm")),
                "the inputs are (B, T, E): create the LSTM with batch_first=True",
                mistake="LSTM not batch-first",
            )
        ],
    ),
    expected={
        "emb": "Embedding [11, 6]",
        "lstm": "LSTM input_size=6 hidden_size=8 batch_first=True",
        "head": "Linear 8 -> 11",
        "logits": [3, 5, 11],
        "loss": None,
        "state": [[1, 3, 8], [1, 3, 8]],
    },
)
def _(ns):
    torch.manual_seed(0)
    model = ns.RNNLM(11, 6, 8)
    return _describe(model, torch.randint(11, (3, 5)))


# RNNLM(5, 3, 4) with set_parameters(model, 7, scale=0.5), in eval mode: its logits for LM_IDX,
# computed once in float64 (the float32 model is within 1e-6 of them).
LM_IDX = torch.tensor([[1, 4, 0, 2], [3, 3, 1, 0]])
LM_LOGITS = torch.tensor(
    [
        [
            [0.033242, 0.299948, -0.084422, -0.694718, 0.504339],
            [-0.263096, 0.150337, -0.113438, -0.845548, 0.078840],
            [-0.377902, 0.138735, -0.136528, -0.800644, -0.049781],
            [-0.214523, 0.294161, -0.121624, -0.533685, 0.329166],
        ],
        [
            [-0.010756, 0.284870, -0.097904, -0.696288, 0.417517],
            [-0.165051, 0.230725, -0.116316, -0.766399, 0.202734],
            [-0.195751, 0.223490, -0.112620, -0.771580, 0.199041],
            [-0.358190, 0.149485, -0.137383, -0.812957, -0.044926],
        ],
    ]
)


def _probabilities_returned(got, exp):
    """Rows that are log-probabilities (exp sums to 1) or probabilities (sum to 1)."""
    if type(got) is not torch.Tensor or got.shape != exp.shape or not got.is_floating_point():
        return False
    ones = torch.ones(exp.shape[:-1], dtype=torch.float64)
    g = got.detach().double()
    return bool(torch.allclose(g.exp().sum(-1), ones, atol=1e-4) or torch.allclose(g.sum(-1), ones, atol=1e-4))


@suite.case(
    "rnn_lm",
    "logits with fixed weights: RNNLM(5, 3, 4), B=2, T=4",
    points=1,
    check=close(
        rtol=1e-4,
        atol=1e-5,
        dtype=None,
        hints=[
            Hint(
                _probabilities_returned,
                "return the head's outputs as they are: logits, before any softmax (the loss applies its own)",
                mistake="log-probabilities returned",
            )
        ],
    ),
    expected=LM_LOGITS,
    builds_on=(_LM_PARTS,),
)
def _(ns):
    model = ns.RNNLM(5, 3, 4)
    set_parameters(model, 7, scale=0.5)
    model.eval()
    with torch.no_grad():
        return model(LM_IDX.clone())[0]


@suite.case(
    "rnn_lm",
    "num_layers=2 and dropout=0.3 reach the nn.LSTM; the state is (2, B, H) each",
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
                lambda got, exp: isinstance(got, dict) and got.get("num_layers") == 2 and got.get("dropout") == 0.0,
                "pass dropout on to nn.LSTM, which applies it between stacked layers",
                mistake="dropout not passed on",
            ),
        ],
    ),
    expected={"num_layers": 2, "dropout": 0.3, "state": [[2, 3, 8], [2, 3, 8]]},
    builds_on=(_LM_PARTS,),
)
def _(ns):
    torch.manual_seed(0)
    model = ns.RNNLM(11, 6, 8, num_layers=2, dropout=0.3).eval()
    with torch.no_grad():
        _, _, state = model(torch.randint(11, (3, 5)))
    return {
        "num_layers": model.lstm.num_layers,
        "dropout": float(model.lstm.dropout),
        "state": [list(s.shape) for s in state],
    }


def _loss_problem(got):
    loss, logits, targets = got
    if type(loss) is not torch.Tensor or loss.dim() != 0:
        return f"with targets the loss is a 0-d tensor (the mean cross-entropy), got {type(loss).__name__}"
    keep = targets != -100
    want = F.cross_entropy(logits[keep].double(), targets[keep])
    if not abs(float(loss) - float(want)) <= 1e-5 + 1e-5 * abs(float(want)):
        return f"the loss is {float(loss):.6f}, but the mean cross-entropy of your logits over the targets that are not -100 is {float(want):.6f}"
    return None


def _summed(got, exp):
    loss, logits, targets = got
    keep = targets != -100
    return (
        type(loss) is torch.Tensor
        and loss.dim() == 0
        and abs(float(loss) - float(F.cross_entropy(logits[keep].double(), targets[keep], reduction="sum"))) < 1e-3
    )


@suite.case(
    "rnn_lm",
    "the loss is the mean cross-entropy, targets of -100 left out",
    points=1,
    check=satisfies(
        _loss_problem,
        hints=[Hint(_summed, "the loss is the mean over the positions, not their sum", mistake="loss summed")],
    ),
    builds_on=(_LM_PARTS,),
)
def _(ns):
    torch.manual_seed(1)
    model = ns.RNNLM(7, 4, 5)
    idx = torch.tensor([[1, 2, 3, 4, 5, 6], [0, 0, 1, 1, 2, 2]])
    targets = torch.tensor([[2, 3, 4, 5, 6, 0], [-100, 1, 1, 2, -100, 3]])
    logits, loss, _ = model(idx, targets=targets.clone())
    return loss.detach(), logits.detach(), targets


def _carried_problem(got):
    whole, parts = got
    if type(parts) is not torch.Tensor or parts.shape != whole.shape:
        return f"the two calls together should give logits of shape {list(whole.shape)}, got {list(getattr(parts, 'shape', []))}"
    err = float((whole - parts).abs().max())
    if not err <= 1e-5:
        return (
            f"reading 4 tokens, then the last 2 with the state the first call returned, differs from reading all 6 "
            f"at once by up to {err:.3g}: start the LSTM from the state you are given and return the state after the last position"
        )
    return None


@suite.case(
    "rnn_lm",
    "the returned state continues the text: 4 tokens, then 2 more, equal 6 at once",
    points=1,
    check=satisfies(_carried_problem),
    builds_on=(_LM_PARTS,),
    guard=True,  # zeros continue zeros: it counts only with a test of the logits
)
def _(ns):
    torch.manual_seed(2)
    model = ns.RNNLM(9, 5, 7)
    model.eval()
    idx = torch.tensor([[1, 8, 2, 7, 3, 6], [0, 4, 4, 0, 5, 1]])
    with torch.no_grad():
        whole, _, _ = model(idx)
        first, _, state = model(idx[:, :4])
        second, _, _ = model(idx[:, 4:], state)
    return whole, torch.cat([first, second], dim=1)


def _backprop_problem(got):
    for name, grad in zip(("head.bias", "emb.weight"), got):
        if not isinstance(grad, torch.Tensor) or not float(grad.abs().sum()) > 0:
            return f"loss.backward() must reach every parameter: {name} has no gradient (compute the loss from the logits, undetached)"
    return None


@suite.case(
    "rnn_lm",
    "the loss back-propagates to the head and the embedding",
    points=0.5,
    check=satisfies(_backprop_problem),
    builds_on=(_LM_PARTS,),
)
def _(ns):
    torch.manual_seed(3)
    model = ns.RNNLM(9, 5, 7)
    idx = torch.tensor([[1, 8, 2, 7], [0, 4, 4, 0]])
    model(idx, targets=torch.tensor([[8, 2, 7, 3], [4, 4, 0, 5]]))[1].backward()
    return model.head.bias.grad, model.emb.weight.grad


# ---------------------------------------------------------------- tbptt

_STREAMS = "stream_batches(arange(11), 3): three contiguous rows, the tail dropped"


@suite.case(
    "tbptt",
    _STREAMS,
    points=1,
    check=equal(
        dtype=None,
        hints=[
            Hint(
                lambda got, exp: type(got) is torch.Tensor and got.tolist() == [[0, 3, 6], [1, 4, 7], [2, 5, 8]],
                "each row must be one contiguous piece of the data: shape the data as (batch_size, N), not (N, batch_size)",
                mistake="streams made as (N, B)",
            )
        ],
    ),
    expected=torch.tensor([[0, 1, 2], [3, 4, 5], [6, 7, 8]]),
)
def _(ns):
    return ns.stream_batches(torch.arange(11), 3)


@suite.case(
    "tbptt", "stream_batches raises ValueError for fewer tokens than batch_size", points=1, check=raises("ValueError")
)
def _(ns):
    return catch(ns.stream_batches, torch.arange(3), 4)


@suite.case(
    "tbptt",
    "stream_batches(arange(3), 3): as many tokens as streams gives (3, 1)",
    points=0.5,
    check=equal(dtype=None),
    expected=[[0], [1], [2]],
)
def _(ns):
    return ns.stream_batches(torch.arange(3), 3).tolist()


@suite.case(
    "tbptt",
    "stream_batches(arange(10), 2): int64 data gives int64 streams",
    points=0.5,
    check=dtypes(),
    expected=torch.int64,
)
def _(ns):
    return ns.stream_batches(torch.arange(10), 2)


class _Leaky(torch.nn.Module):
    """A stand-in language model (not an LSTM): its state is a pair (h, c) of leaky sums,
    h = a * h + E[token] and c = b * c + 1 after every token (a and b are parameters); the
    logits are ``gain`` times a linear map of h. It records every call: the window, the
    targets, the incoming state (and the graph each part is still attached to) and the loss."""

    def __init__(self, vocab_size, width=4, gain=1.0):
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.table = torch.nn.Embedding(vocab_size, width)
        self.out = torch.nn.Linear(width, vocab_size)
        self.decay = torch.nn.Parameter(torch.tensor(0.5))
        self.keep = torch.nn.Parameter(torch.tensor(0.25))
        self.gain = gain
        with torch.no_grad():
            for p in (self.table.weight, self.out.weight, self.out.bias):
                p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
        self.calls = []

    def forward(self, idx, state=None, targets=None):
        B, T = idx.shape
        h, c = (torch.zeros(1, B, self.table.embedding_dim), torch.zeros(1, B, 1)) if state is None else state
        call = {
            "idx": idx.clone(),
            "targets": None if targets is None else targets.clone(),
            "state": None if state is None else (h.detach().clone(), c.detach().clone()),
            "graph": None
            if state is None
            else [None if s.grad_fn is None else type(s.grad_fn).__name__ for s in (h, c)],
        }
        steps = []
        for t in range(T):
            h = self.decay * h + self.table(idx[:, t]).unsqueeze(0)
            c = self.keep * c + 1.0
            steps.append(h[0])
        logits = self.gain * self.out(torch.stack(steps, dim=1))  # (B, T, V)
        loss = None if targets is None else F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(-1))
        call["loss"] = None if loss is None else float(loss.detach())
        call["state_out"] = (h.detach().clone(), c.detach().clone())
        self.calls.append(call)
        return logits, loss, (h, c)


_FREED_GRAPH = "backward through the graph a second time"


def _windows_problem(got):
    if "raised" in got:
        return f"train_tbptt raised RuntimeError at step {len(got['calls']) - 1}: {got['raised']}"
    calls, seq_len, starts, streams = got["calls"], got["seq_len"], got["starts"], got["streams"]
    if len(calls) != len(starts):
        return (
            f"{len(starts)} steps should run the model {len(starts)} times, once per window; it ran {len(calls)} times"
        )
    for step, (call, p) in enumerate(zip(calls, starts)):
        x, y = streams[:, p : p + seq_len], streams[:, p + 1 : p + seq_len + 1]
        if not torch.equal(call["idx"], x):
            return f"step {step} should train on the window streams[:, {p}:{p + seq_len}] = {x.tolist()}, got {call['idx'].tolist()}"
        if call["targets"] is None or not torch.equal(call["targets"], y):
            return f"step {step}: the targets are the window shifted by one, streams[:, {p + 1}:{p + seq_len + 1}] (pass them to the model)"
    for step, (call, p) in enumerate(zip(calls, starts)):
        if p == 0:
            if call["state"] is not None and max(float(s.abs().max()) for s in call["state"]) > 0:
                return f"step {step} starts again at p = 0 and must start from a fresh zero state (None)"
            continue
        before = calls[step - 1]["state_out"]
        if call["state"] is None or not all(torch.equal(a, b) for a, b in zip(call["state"], before)):
            return f"step {step} must start from the state (h, c) the window before it ended in (the state is carried from window to window)"
        attached = [name for name, graph in zip("hc", call["graph"]) if graph is not None]
        if attached:
            return f"the state handed to the model at step {step} is still attached to the previous window's graph ({' and '.join(attached)}): detach both h and c"
    return None


@suite.case(
    "tbptt",
    "train_tbptt: consecutive windows, the state carried and detached, a restart at p = 0",
    points=1,
    check=satisfies(
        _windows_problem,
        hints=[
            Hint(
                lambda got, exp: _FREED_GRAPH in got.get("raised", ""),
                "the state carried into this window still holds the previous window's graph, which its backward() "
                "has freed: detach h and c between windows (retain_graph=True is not the fix: the graph would then "
                "reach back through the whole text)",
                mistake="state not detached between windows",
            )
        ],
    ),
    builds_on=(_STREAMS,),
)
def _(ns):
    model = _Leaky(42)
    try:
        ns.train_tbptt(model, torch.arange(42), seq_len=4, batch_size=2, steps=7, lr=0.01)
    except RuntimeError as exc:
        if _FREED_GRAPH not in str(exc):
            raise
        return {"calls": model.calls, "raised": str(exc)[:300]}
    # streams are (2, 21): windows start at 0, 4, 8, 12, 16 (its targets end at column 20); at 20 nothing fits
    return {
        "calls": model.calls,
        "seq_len": 4,
        "starts": [0, 4, 8, 12, 16, 0, 4],
        "streams": torch.arange(42).view(2, 21),
    }


@suite.case("tbptt", "train_tbptt raises ValueError for lr=0", points=0.5, check=raises("ValueError"))
def _(ns):
    return catch(ns.train_tbptt, _Leaky(12), torch.arange(24), seq_len=4, batch_size=2, steps=1, lr=0.0)


@suite.case(
    "tbptt",
    "train_tbptt raises ValueError for streams of 4 tokens and seq_len=4 (no room for the targets)",
    points=0.5,
    check=raises("ValueError"),
)
def _(ns):
    return catch(ns.train_tbptt, _Leaky(8), torch.arange(8), seq_len=4, batch_size=2, steps=1, lr=0.01)


def _history_problem(got):
    history, losses = got
    if not isinstance(history, dict) or "step" not in history or "loss" not in history:
        return "train_tbptt must return a dict with 'step' and 'loss'"
    if list(history["step"]) != [0, 1, 2, 3, 4]:
        return (
            f"'step' holds the 0-based index of each update, [0, 1, 2, 3, 4] for steps=5, got {list(history['step'])}"
        )
    if any(type(v) is not float for v in history["loss"]):
        return "each entry of 'loss' is a Python float (loss.item())"
    if len(history["loss"]) != 5 or any(not abs(a - b) <= 1e-6 * (1 + abs(b)) for a, b in zip(history["loss"], losses)):
        return f"'loss' holds each step's batch loss before its update; the model computed {[round(v, 4) for v in losses]}, the history says {history['loss']}"
    return None


@suite.case(
    "tbptt",
    "train_tbptt returns the step indices and each batch loss as a float",
    points=1,
    check=satisfies(_history_problem),
    builds_on=(_STREAMS,),
)
def _(ns):
    model = _Leaky(12)
    history = ns.train_tbptt(model, torch.arange(120) % 12, seq_len=5, batch_size=3, steps=5, lr=0.05)
    return history, [c["loss"] for c in model.calls if c["loss"] is not None]


@contextlib.contextmanager
def _step_norms():
    """Record the total gradient norm at every optimiser step."""
    norms = []

    def hook(optimizer, args, kwargs):
        grads = [p.grad.reshape(-1) for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        norms.append(float(torch.cat(grads).norm()) if grads else 0.0)

    handle = register_optimizer_step_pre_hook(hook)
    try:
        yield norms
    finally:
        handle.remove()


def _stepless(norms):
    """What a run whose optimiser took no step, or found no gradients at any step, did wrong
    (None when some step had gradients to use)."""
    if not norms:
        return "no optimiser step was taken"
    if any(norms):
        return None
    return (
        f"the optimiser found no gradients at any step (their norms were {norms}), so the model learns nothing: "
        "step after the backward pass, and zero the gradients before it, never between the two "
        "(zero the gradients, run the model, back-propagate, clip, step)"
    )


def _clipped_problem(got):
    if problem := _stepless(got):
        return problem
    if not all(abs(norm - 1.0) <= 1e-3 for norm in got):
        return (
            f"the gradients of this model are far larger than 1, and by default (grad_clip=1.0) their total norm must be clipped "
            f"to 1.0 before each step (torch.nn.utils.clip_grad_norm_); the norms at the steps were {[round(n, 3) for n in got]}"
        )
    return None


@suite.case(
    "tbptt",
    "the default grad_clip=1.0 clips the total gradient norm to 1 before each step",
    points=1,
    check=satisfies(_clipped_problem),
    builds_on=(_STREAMS,),
)
def _(ns):
    with _step_norms() as norms:
        ns.train_tbptt(_Leaky(12, gain=20.0), torch.arange(120) % 12, seq_len=5, batch_size=3, steps=3, lr=0.05)
    return norms


def _unclipped_problem(got):
    if problem := _stepless(got):
        return problem
    if not all(norm > 2.0 for norm in got):
        return (
            "with grad_clip=None the gradients must be left as they are (no clipping): this model's total gradient norm "
            f"is far above 1, but the norms at the steps were {[round(n, 3) for n in got]}"
        )
    return None


@suite.case(
    "tbptt",
    "grad_clip=None leaves the large gradients unclipped",
    points=0.5,
    check=satisfies(_unclipped_problem),
    builds_on=(_STREAMS,),
)
def _(ns):
    with _step_norms() as norms:
        ns.train_tbptt(
            _Leaky(12, gain=20.0), torch.arange(120) % 12, seq_len=5, batch_size=3, steps=3, lr=0.05, grad_clip=None
        )
    return norms


class _Moded(_Leaky):
    """``_Leaky`` that also records whether it was in training mode at each call."""

    def __init__(self, vocab_size):
        super().__init__(vocab_size)
        self.modes = []

    def forward(self, idx, state=None, targets=None):
        self.modes.append("train" if self.training else "eval")
        return super().forward(idx, state, targets)


@suite.case(
    "tbptt",
    "a model handed over in eval mode is trained in training mode",
    points=0.5,
    check=equal(dtype=None),
    expected=["train", "train", "train"],
)
def _(ns):
    model = _Moded(12)
    model.eval()
    ns.train_tbptt(model, torch.arange(48) % 12, seq_len=4, batch_size=2, steps=3, lr=0.01)
    return model.modes


def _adam_problem(got):
    if not isinstance(got, float) or not abs(got - 0.1) <= 1e-3:
        return (
            "one step of Adam at lr=0.1 moves each parameter with a gradient by lr (its first step is lr times the sign "
            f"of the gradient); the largest change here was {got!r}: use torch.optim.Adam with the lr given"
        )
    return None


@suite.case(
    "tbptt",
    "one Adam step at lr=0.1 moves the parameters by 0.1",
    points=0.5,
    check=satisfies(_adam_problem),
    builds_on=(_STREAMS,),
)
def _(ns):
    model = _Leaky(12)
    before = [p.detach().clone() for p in model.parameters()]
    ns.train_tbptt(model, torch.arange(48) % 12, seq_len=4, batch_size=2, steps=1, lr=0.1, grad_clip=None)
    return max(float((p.detach() - b).abs().max()) for p, b in zip(model.parameters(), before))


# ---------------------------------------------------------------- sample_rnn (challenge)


class _Successor(torch.nn.Module):
    """A stand-in language model whose most likely next token is always (token + 1) % V.
    Its state counts the tokens read; it records every call (inputs, state, mode, gradients)."""

    def __init__(self, vocab_size, dropout=0.0):
        super().__init__()
        self.table = torch.nn.Embedding(vocab_size, vocab_size)
        self.drop = torch.nn.Dropout(dropout)
        with torch.no_grad():
            self.table.weight.copy_(4.0 * torch.eye(vocab_size).roll(1, dims=1))
        self.calls = []

    def forward(self, idx, state=None, targets=None):
        count = torch.zeros(1, idx.size(0), 1) if state is None else state[0]
        self.calls.append(
            {
                "idx": idx.clone(),
                "state": None if state is None else count.clone(),
                "mode": mode_of(self),
                "grad": grad_mode(),
            }
        )
        count = count + idx.size(1)
        return self.drop(self.table(idx)), None, (count, count.clone())


_GREEDY = "greedy continuation: shape (B, T0 + N), the prompt kept"


@suite.case(
    "sample_rnn",
    _GREEDY,
    points=1,
    check=equal(
        dtype=None,
        hints=[
            Hint(
                lambda got, exp: isinstance(got, list) and len(got) == 2 and len(got[0]) == 5,
                "return the prompt followed by the new tokens",
                mistake="prompt dropped",
            ),
            Hint(
                lambda got, exp: (
                    isinstance(got, list) and len(got) == 2 and len(got[0]) == 7 and got[0][2] == 2 and got[1][2] == 6
                ),
                "choose the first new token from the logits of the prompt's last position, logits[:, -1]",
                mistake="first position's logits",
            ),
        ],
    ),
    expected=[[1, 2, 3, 4, 5, 6, 0], [5, 6, 0, 1, 2, 3, 4]],
)
def _(ns):
    return ns.generate_rnn(_Successor(7), torch.tensor([[1, 2], [5, 6]]), 5, temperature=0).tolist()


@suite.case(
    "sample_rnn",
    "max_new_tokens=0 returns the prompt as it is",
    points=0.5,
    check=equal(dtype=None),
    expected=[[1, 2], [5, 6]],
)
def _(ns):
    return ns.generate_rnn(_Successor(7), torch.tensor([[1, 2], [5, 6]]), 0, temperature=0).tolist()


@suite.case("sample_rnn", "a negative temperature raises ValueError", points=0.5, check=raises("ValueError"))
def _(ns):
    return catch(ns.generate_rnn, _Successor(7), torch.tensor([[1, 2]]), 3, temperature=-1.0)


def _reads_problem(got):
    calls, out = got
    if not calls:
        return "generate_rnn never called the model"
    first = calls[0]
    if first["idx"].tolist() != [[3, 1, 4]] or first["state"] is not None:
        return "the first call reads the whole prompt, from no state (state=None)"
    for k, call in enumerate(calls[1:], start=1):
        if list(call["idx"].shape) != [1, 1]:
            return (
                f"call {k} gave the model {list(call['idx'].shape[1:])[0]} tokens: after the prompt, feed only the newest "
                "token with the carried state (the state already holds everything before it)"
            )
        if call["idx"].item() != out[0][2 + k]:
            return f"call {k} must feed the token that was just chosen"
        if call["state"] is None or call["state"].item() != 2 + k:
            return f"call {k} must pass the state that the previous call returned"
    if len(calls) not in (4, 5):
        return f"4 new tokens need 4 calls of the model (the prompt, then 3 single tokens), it was called {len(calls)} times"
    return None


@suite.case(
    "sample_rnn",
    "the prompt is read once, then one token per call with the carried state",
    points=1,
    check=satisfies(_reads_problem),
    builds_on=(_GREEDY,),
)
def _(ns):
    model = _Successor(9)
    out = ns.generate_rnn(model, torch.tensor([[3, 1, 4]]), 4, temperature=0)
    return model.calls, out.tolist()


@suite.case(
    "sample_rnn",
    "eval mode and no gradients inside, the caller's mode after",
    points=1,
    check=satisfies(lambda got: mode_problem(got, "generate_rnn")),
)
def _(ns):
    runs = []
    for mode in (True, False):  # a caller that left the model in training mode, then one that left it in eval mode
        model = _Successor(7, dropout=0.5)
        model.train(mode)
        before = mode_of(model)
        ns.generate_rnn(model, torch.tensor([[2, 3]]), 3, temperature=0)
        runs.append([before, [[c["mode"], c["grad"]] for c in model.calls], mode_of(model)])
    return runs


class _Row(torch.nn.Module):
    """A stand-in whose logits after any token are the row ROW (a fixed distribution)."""

    ROW = (2.0, 0.0, -1.0)

    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.tensor(1.0))

    def forward(self, idx, state=None, targets=None):
        logits = self.scale * torch.tensor(self.ROW).expand(idx.size(0), idx.size(1), len(self.ROW))
        count = torch.zeros(1, idx.size(0), 1) if state is None else state[0]
        return logits.clone(), None, (count + idx.size(1), count + idx.size(1))


def _tempered_problem(got):
    if type(got) is not torch.Tensor or tuple(got.shape) != (2000, 2):
        return f"for a (2000, 1) prompt and one new token expected a (2000, 2) tensor, got {tuple(getattr(got, 'shape', ()))}"
    freq = torch.bincount(got[:, 1].clamp(0, 2), minlength=3).double() / 2000
    want = torch.softmax(torch.tensor(_Row.ROW, dtype=torch.float64) / 2.0, dim=-1)
    if not float((freq - want).abs().max()) <= 0.05:
        return (
            f"at temperature 2 the three tokens came with frequencies {[round(v, 3) for v in freq.tolist()]} in 2000 draws; "
            f"softmax(logits / temperature) gives {[round(v, 3) for v in want.tolist()]}: divide the logits by the temperature before the softmax"
        )
    return None


@suite.case(
    "sample_rnn",
    "temperature=2 draws from softmax(logits / 2): frequencies of 2000 draws",
    points=1,
    check=satisfies(_tempered_problem),
    builds_on=(_GREEDY,),
)
def _(ns):
    return ns.generate_rnn(
        _Row(), torch.zeros(2000, 1, dtype=torch.long), 1, temperature=2.0, generator=torch.Generator().manual_seed(0)
    )


def _repeatable_problem(got):
    first, second = got
    if type(first) is not torch.Tensor or type(second) is not torch.Tensor or first.shape != second.shape:
        return "expected two (50, 4) tensors"
    if not torch.equal(first, second):
        return (
            "two calls with generators seeded alike (and another global random state between them) gave different tokens: "
            "draw with torch.multinomial(..., generator=generator)"
        )
    return None


@suite.case(
    "sample_rnn",
    "the same seeded generator gives the same draws, whatever the global random state",
    points=1,
    check=satisfies(_repeatable_problem),
    builds_on=(_GREEDY,),
    guard=True,  # a no-op gives the same (nothing) twice: it counts only with a test of the draws
)
def _(ns):
    prompt = torch.zeros(50, 1, dtype=torch.long)
    torch.manual_seed(1)
    first = ns.generate_rnn(_Row(), prompt.clone(), 3, generator=torch.Generator().manual_seed(5))
    torch.manual_seed(2)
    second = ns.generate_rnn(_Row(), prompt.clone(), 3, generator=torch.Generator().manual_seed(5))
    return first, second
