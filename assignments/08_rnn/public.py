"""Public tests of stage 08_rnn: students run these in the notebook with check().

This file is copied into the student's notebook, so it holds no reference code: the
expected values are literals worked out once, and the tests of one question never lean
on another question's answer. `run_lstm` is tested with a stand-in cell that simply
adds its input to its state (not an LSTM), `train_tbptt` with a small stand-in model
whose state is a leaky sum of embeddings and a counter of the tokens it has read, and
`generate_rnn` with a stand-in whose most likely next token is always the current one
plus one.
"""

import torch
import torch.nn.functional as F

from autograder.kit import Hint, Suite, Verdict, catch, close, equal, raises, satisfies, with_hint

suite = Suite(public=True)


def _near(got, want, atol=1e-5):
    want = torch.tensor(want)
    return type(got) is torch.Tensor and got.shape == want.shape and bool(torch.allclose(got.double(), want.double(), atol=atol, rtol=0))


def _pair_near(got, want, atol=1e-5):
    return isinstance(got, (list, tuple)) and len(got) == 2 and _near(got[0], want[0], atol) and _near(got[1], want[1], atol)


# ---------------------------------------------------------------- rnn_cell

X = torch.tensor([[1.0, -2.0, 0.5], [0.0, 1.0, -1.0]])  # (B=2, I=3)
H0 = torch.tensor([[0.5, -0.25], [1.0, 0.0]])  # (B=2, H=2)
W_IH = torch.tensor([[0.2, 0.1, -0.3], [-0.4, 0.3, 0.2]])  # (H, I)
W_HH = torch.tensor([[0.6, -0.5], [0.1, 0.8]])  # (H, H), not symmetric
B_IH = torch.tensor([0.1, -0.2])
B_HH = torch.tensor([0.05, 0.3])


@suite.case(
    "rnn_cell",
    "a worked example: B=2, I=3, H=2",
    points=1,
    check=close(rtol=1e-5, atol=1e-6, hints=[
        Hint(lambda got, exp: _near(got, [[0.6046791, 0.2788848], [0.7595109, 0.5744425]]), "the new state squashes with tanh (values in -1..1), not with the sigmoid"),
        Hint(lambda got, exp: _near(got, [[0.3583574, -0.8482836], [0.8004990, 0.0]]), "both biases, b_ih and b_hh, are added"),
        Hint(lambda got, exp: _near(got, [[0.2682712, -0.8482836], [0.8177541, -0.2913126]]), "multiply h by W_hh transposed (h @ W_hh.T): row j of W_hh holds the weights into unit j"),
    ]),
    expected=torch.tensor([[0.40113428235054016, -0.7397830486297607], [0.8177540898323059, 0.29131263494491577]]),
)
def _(ns):
    return ns.rnn_cell(X.clone(), H0.clone(), W_IH.clone(), W_HH.clone(), B_IH.clone(), B_HH.clone())


def _shape_problem(got):
    if type(got) is not torch.Tensor or list(got.shape) != [4, 3]:
        return f"for B=4, I=5, H=3 the new state is (4, 3), got {list(getattr(got, 'shape', []))}"
    if float(got.abs().max()) >= 1.0:
        return "tanh keeps every value of the new state strictly between -1 and 1"
    if float(got.min()) >= 0.0:
        return "the first rows have negative pre-activations, and tanh keeps their sign: no new value is negative"
    return None


@suite.case("rnn_cell", "shape (B, H) for B=4, I=5, H=3, values inside (-1, 1) and of both signs", points=1, check=satisfies(_shape_problem))
def _(ns):
    x = torch.linspace(-0.5, 0.5, 20).view(4, 5)
    return ns.rnn_cell(x, torch.zeros(4, 3), torch.ones(3, 5), torch.eye(3), torch.zeros(3), torch.zeros(3))


# ---------------------------------------------------------------- lstm_cell


@suite.case(
    "lstm_cell",
    "parameters weight_ih (4H, I), weight_hh (4H, H), bias_ih and bias_hh (4H)",
    points=1,
    check=equal(),
    expected={"bias_hh": [8], "bias_ih": [8], "weight_hh": [8, 2], "weight_ih": [8, 3]},
)
def _(ns):
    cell = ns.LSTMCell(3, 2)
    return {name: list(p.shape) for name, p in sorted(cell.named_parameters())}


def _lstm(ns, weight_ih, weight_hh, bias_ih, bias_hh):
    cell = ns.LSTMCell(3, 2)
    with torch.no_grad():
        cell.weight_ih.copy_(weight_ih)
        cell.weight_hh.copy_(weight_hh)
        cell.bias_ih.copy_(bias_ih)
        cell.bias_hh.copy_(bias_hh)
    return cell


def _pair(got):
    return [t.detach() if isinstance(t, torch.Tensor) else t for t in got] if isinstance(got, (list, tuple)) else got


def _pair_close(hints):
    inner = close(rtol=1e-5, atol=1e-6)

    def check(got, expected, reveal=True):
        if not isinstance(got, (list, tuple)) or len(got) != 2:
            return with_hint(Verdict(False, "the cell must return the pair (h, c)"), hints, got, expected)
        for name, g, e in zip(("h", "c"), got, expected):
            verdict = inner(g, e, reveal)
            if not verdict.passed:
                return with_hint(Verdict(False, f"{name}: {verdict.message}"), hints, got, expected)
        return Verdict(True)

    return check


# only the biases are non-zero, so each gate is a known number: i, f, g, o = 0.75, 0.25, ... per unit
GATE_BIAS_IH = torch.tensor([0.5, -0.5, 1.0, 2.0, 0.3, -0.7, -1.0, 1.5])
GATE_BIAS_HH = torch.tensor([0.25, 0.25, 0.0, 0.0, 0.2, 0.2, 0.0, 0.0])
C0 = torch.tensor([[0.4, -0.6]])

_GATE_HINTS = [
    Hint(lambda got, exp: _pair_near(got, ([[-0.1376392, -0.0496159]], [[-0.2248351, -0.1321831]])) or _pair_near(got, ([[0.1733970, 0.1578691]], [[0.7662423, 0.1955495]])),
         "the four blocks of rows are the gates in PyTorch's order: input, forget, cell (candidate), output"),
    Hint(lambda got, exp: _pair_near(got, ([[0.1566478, -0.5307484]], [[0.6661789, -0.7738703]])), "add no extra bias to the forget gate: the two bias vectors are all there is"),
    Hint(lambda got, exp: _pair_near(got, ([[0.1630548, -0.5974867]], [[0.6062836, -0.7308040]])), "the new h is o * tanh(c'), the output gate times the squashed new cell"),
    Hint(lambda got, exp: _pair_near(got, ([[0.6062836, -0.7308040]], [[0.1456333, -0.5098042]])), "return (h, c) in this order"),
]


@suite.case(
    "lstm_cell",
    "gates from the biases alone: the order input, forget, cell, output",
    points=1,
    check=_pair_close(_GATE_HINTS),
    expected=(torch.tensor([[0.14563333988189697, -0.5098042488098145]]), torch.tensor([[0.6062836050987244, -0.7308040261268616]])),
)
def _(ns):
    cell = _lstm(ns, torch.zeros(8, 3), torch.zeros(8, 2), GATE_BIAS_IH, GATE_BIAS_HH)
    with torch.no_grad():
        return _pair(cell(torch.tensor([[3.0, -1.0, 2.0]]), (torch.tensor([[0.2, 0.9]]), C0.clone())))


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
    "a worked example with every weight in use: B=2, I=3, H=2",
    points=1,
    check=_pair_close(_GATE_HINTS[-1:]),
    expected=(
        torch.tensor([[0.29918089509010315, -0.0744231790304184], [0.04909615218639374, -0.061838001012802124]]),
        torch.tensor([[0.356866717338562, -0.08000317215919495], [0.1480071097612381, -0.24185605347156525]]),
    ),
)
def _(ns):
    with torch.no_grad():
        return _pair(_full_cell(ns)(XL.clone(), (torch.tensor([[0.3, -0.2], [0.0, 0.7]]), torch.tensor([[1.0, -0.5], [0.2, 0.0]]))))


@suite.case(
    "lstm_cell",
    "state=None starts from zeros",
    points=1,
    check=_pair_close([]),
    expected=(
        torch.tensor([[0.039604127407073975, 0.13390031456947327], [0.03953234478831291, -0.0193629153072834]]),
        torch.tensor([[0.04521210119128227, 0.14416782557964325], [0.09203934669494629, -0.05078016221523285]]),
    ),
)
def _(ns):
    with torch.no_grad():
        return _pair(_full_cell(ns)(XL.clone()))


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
        self.calls.append({"x": x.clone(), "state": None if state is None else (h.clone(), c.clone())})
        return h + x, c + 1


SEQ = torch.arange(24, dtype=torch.float32).view(2, 4, 3)  # (B=2, T=4, I=H=3)


def _unrolled(out):
    outputs, (h, c) = out
    return [outputs, h, c]


@suite.case(
    "lstm_layer",
    "with an adding cell: outputs (B, T, H) are the running sums, the final state (B, H)",
    points=1,
    check=equal([
        Hint(lambda got, exp: isinstance(got, list) and isinstance(got[0], torch.Tensor) and list(got[0].shape) == [4, 2, 3], "stack the step outputs on dim 1: outputs are batch-first, (B, T, H)"),
        Hint(lambda got, exp: isinstance(got, list) and isinstance(got[0], torch.Tensor) and torch.equal(got[0], SEQ), "each step must start from the state the previous step returned"),
    ]),
    expected=[SEQ.cumsum(dim=1), SEQ.sum(dim=1), torch.full((2, 3), 4.0)],
)
def _(ns):
    return _unrolled(ns.run_lstm(_AddCell(3), SEQ.clone()))


@suite.case(
    "lstm_layer",
    "a given initial state is where the first step starts",
    points=1,
    check=equal([Hint(lambda got, exp: isinstance(got, list) and isinstance(got[2], torch.Tensor) and torch.equal(got[2], torch.full((2, 3), 4.0)), "pass the given state to the first step")]),
    expected=[SEQ.cumsum(dim=1) + 10.0, SEQ.sum(dim=1) + 10.0, torch.full((2, 3), 9.0)],
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
        want = None if t == 0 else (SEQ[:, :t].sum(dim=1), torch.full((2, 3), float(t)))
        if t == 0 and call["state"] is not None and not all(float(s.abs().max()) == 0.0 for s in call["state"]):
            return "with state=None the first step starts from the cell's zero state"
        if t > 0 and (call["state"] is None or not all(torch.equal(a, b) for a, b in zip(call["state"], want))):
            return f"call {t} must get the state (h, c) that call {t - 1} returned"
    return None


@suite.case("lstm_layer", "the cell is called once per step with x[:, t] and the state the last call returned", points=1, check=satisfies(_calls_problem))
def _(ns):
    cell = _AddCell(3)
    ns.run_lstm(cell, SEQ.clone())
    return cell.calls


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


@suite.case(
    "rnn_lm",
    "the parts, the logits (B, T, V) and the state ((1, B, H), (1, B, H))",
    points=1,
    check=equal([Hint(lambda got, exp: isinstance(got, dict) and "batch_first=False" in str(got.get("lstm")), "the inputs are (B, T, E): create the LSTM with batch_first=True")]),
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


def _loss_problem(got):
    loss, logits, targets = got
    if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
        return f"with targets the loss is a 0-d tensor (the mean cross-entropy), got {type(loss).__name__}"
    keep = targets != -100
    want = F.cross_entropy(logits[keep], targets[keep])
    if abs(float(loss) - float(want)) > 1e-5 + 1e-5 * abs(float(want)):
        return f"the loss is {float(loss):.6f}, but the mean cross-entropy of your logits over the targets that are not -100 is {float(want):.6f}"
    return None


@suite.case("rnn_lm", "the loss is the mean cross-entropy, targets of -100 left out", points=1, check=satisfies(_loss_problem))
def _(ns):
    torch.manual_seed(1)
    model = ns.RNNLM(7, 4, 5)
    idx = torch.tensor([[1, 2, 3, 4, 5, 6], [0, 0, 1, 1, 2, 2]])
    targets = torch.tensor([[2, 3, 4, 5, 6, 0], [-100, 1, 1, 2, -100, 3]])
    logits, loss, _ = model(idx, targets=targets)
    return loss.detach(), logits.detach(), targets


def _carried_problem(got):
    whole, parts = got
    if type(parts) is not torch.Tensor or parts.shape != whole.shape:
        return f"the two calls together should give logits of shape {list(whole.shape)}, got {list(getattr(parts, 'shape', []))}"
    err = float((whole - parts).abs().max())
    if err > 1e-5:
        return (f"reading 4 tokens, then the last 2 with the state the first call returned, differs from reading all 6 "
                f"at once by up to {err:.3g}: start the LSTM from the state you are given and return the state after the last position")
    return None


@suite.case("rnn_lm", "the returned state continues the text: 4 tokens, then 2 more, equal 6 at once", points=1, check=satisfies(_carried_problem))
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


# ---------------------------------------------------------------- tbptt


@suite.case(
    "tbptt",
    "stream_batches(arange(11), 3): three contiguous rows, the tail dropped",
    points=1,
    check=equal([Hint(lambda got, exp: isinstance(got, torch.Tensor) and got.tolist() == [[0, 3, 6], [1, 4, 7], [2, 5, 8]], "each row must be one contiguous piece of the data: shape the data as (batch_size, N), not (N, batch_size)")]),
    expected=torch.tensor([[0, 1, 2], [3, 4, 5], [6, 7, 8]]),
)
def _(ns):
    return ns.stream_batches(torch.arange(11), 3)


@suite.case("tbptt", "stream_batches raises ValueError for fewer tokens than batch_size", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.stream_batches, torch.arange(3), 4)


class _Leaky(torch.nn.Module):
    """A stand-in language model (not an LSTM): its state is (h, n) with h = decay * h + E[token]
    after every token and n the number of tokens read since the state was zero; the logits are
    a linear map of h. It records every call: the window, the targets, the incoming state (and
    whether it is still attached to an earlier graph) and the loss."""

    def __init__(self, vocab_size, width=4):
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.table = torch.nn.Embedding(vocab_size, width)
        self.out = torch.nn.Linear(width, vocab_size)
        self.decay = torch.nn.Parameter(torch.tensor(0.5))
        with torch.no_grad():
            for p in (self.table.weight, self.out.weight, self.out.bias):
                p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
        self.calls = []

    def forward(self, idx, state=None, targets=None):
        B, T = idx.shape
        h, n = (torch.zeros(1, B, self.table.embedding_dim), torch.zeros(1, B, 1)) if state is None else state
        call = {"idx": idx.clone(), "targets": None if targets is None else targets.clone(),
                "state": None if state is None else (h.detach().clone(), n.detach().clone()),
                "graph": None if h.grad_fn is None else type(h.grad_fn).__name__}
        steps = []
        for t in range(T):
            h = self.decay * h + self.table(idx[:, t]).unsqueeze(0)
            steps.append(h[0])
        logits = self.out(torch.stack(steps, dim=1))  # (B, T, V)
        loss = None if targets is None else F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(-1))
        call["loss"] = None if loss is None else float(loss.detach())
        call["state_out"] = (h.detach().clone(), (n + T).detach().clone())
        self.calls.append(call)
        return logits, loss, (h, n + T)


def _windows_problem(got):
    calls, seq_len, starts, streams = got["calls"], got["seq_len"], got["starts"], got["streams"]
    if len(calls) != len(starts):
        return f"{len(starts)} steps should run the model {len(starts)} times, once per window; it ran {len(calls)} times"
    for step, (call, p) in enumerate(zip(calls, starts)):
        x, y = streams[:, p : p + seq_len], streams[:, p + 1 : p + seq_len + 1]
        if not torch.equal(call["idx"], x):
            return f"step {step} should train on the window streams[:, {p}:{p + seq_len}] = {x.tolist()}, got {call['idx'].tolist()}"
        if call["targets"] is None or not torch.equal(call["targets"], y):
            return f"step {step}: the targets are the window shifted by one, streams[:, {p + 1}:{p + seq_len + 1}] (pass them to the model)"
    for step, (call, p) in enumerate(zip(calls, starts)):
        if p == 0:
            if call["state"] is not None and float(call["state"][0].abs().max()) > 0:
                return f"step {step} starts again at p = 0 and must start from a fresh zero state (None)"
            continue
        before = calls[step - 1]["state_out"]
        if call["state"] is None or not all(torch.equal(a, b) for a, b in zip(call["state"], before)):
            return f"step {step} must start from the state the window before it ended in (the state is carried from window to window)"
        if call["graph"] is not None:
            return f"the state handed to the model at step {step} is still attached to the previous window's graph: detach it"
    return None


@suite.case("tbptt", "train_tbptt: consecutive windows, the state carried and detached, a restart at p = 0", points=1, check=satisfies(_windows_problem))
def _(ns):
    model = _Leaky(42)
    ns.train_tbptt(model, torch.arange(42), seq_len=4, batch_size=2, steps=7, lr=0.01)
    # streams are (2, 21): windows start at 0, 4, 8, 12, 16 (its targets end at column 20); at 20 nothing fits
    return {"calls": model.calls, "seq_len": 4, "starts": [0, 4, 8, 12, 16, 0, 4], "streams": torch.arange(42).view(2, 21)}


def _history_problem(got):
    history, losses = got
    if not isinstance(history, dict) or "step" not in history or "loss" not in history:
        return "train_tbptt must return a dict with 'step' and 'loss'"
    if list(history["step"]) != [0, 1, 2, 3, 4]:
        return f"'step' holds the 0-based index of each update, [0, 1, 2, 3, 4] for steps=5, got {list(history['step'])}"
    if any(type(v) is not float for v in history["loss"]):
        return "each entry of 'loss' is a Python float (loss.item())"
    if len(history["loss"]) != 5 or any(abs(a - b) > 1e-6 * (1 + abs(b)) for a, b in zip(history["loss"], losses)):
        return f"'loss' holds each step's batch loss before its update; the model computed {[round(v, 4) for v in losses]}, the history says {history['loss']}"
    return None


@suite.case("tbptt", "train_tbptt returns the step indices and each batch loss as a float", points=1, check=satisfies(_history_problem))
def _(ns):
    model = _Leaky(12)
    history = ns.train_tbptt(model, torch.arange(120) % 12, seq_len=5, batch_size=3, steps=5, lr=0.05)
    return history, [c["loss"] for c in model.calls if c["loss"] is not None]


# ---------------------------------------------------------------- sample_rnn (challenge)


class _Successor(torch.nn.Module):
    """A stand-in language model whose most likely next token is always (token + 1) % V.
    Its state counts the tokens read; it records every call."""

    def __init__(self, vocab_size, dropout=0.0):
        super().__init__()
        self.table = torch.nn.Embedding(vocab_size, vocab_size)
        self.drop = torch.nn.Dropout(dropout)
        with torch.no_grad():
            self.table.weight.copy_(4.0 * torch.eye(vocab_size).roll(1, dims=1))
        self.calls = []

    def forward(self, idx, state=None, targets=None):
        count = torch.zeros(1, idx.size(0), 1) if state is None else state[0]
        self.calls.append({"idx": idx.clone(), "state": None if state is None else count.clone(),
                           "training": self.training, "grad": torch.is_grad_enabled()})
        count = count + idx.size(1)
        return self.drop(self.table(idx)), None, (count, count.clone())


@suite.case(
    "sample_rnn",
    "greedy continuation: shape (B, T0 + N), the prompt kept",
    points=1,
    check=equal([
        Hint(lambda got, exp: isinstance(got, list) and len(got) == 2 and len(got[0]) == 5, "return the prompt followed by the new tokens"),
        Hint(lambda got, exp: isinstance(got, list) and len(got) == 2 and len(got[0]) == 7 and got[0][2] == 2 and got[1][2] == 6,
             "choose the first new token from the logits of the prompt's last position, logits[:, -1]"),
    ]),
    expected=[[1, 2, 3, 4, 5, 6, 0], [5, 6, 0, 1, 2, 3, 4]],
)
def _(ns):
    return ns.generate_rnn(_Successor(7), torch.tensor([[1, 2], [5, 6]]), 5, temperature=0).tolist()


def _reads_problem(got):
    calls, out = got
    if not calls:
        return "generate_rnn never called the model"
    first = calls[0]
    if first["idx"].tolist() != [[3, 1, 4]] or first["state"] is not None:
        return "the first call reads the whole prompt, from no state (state=None)"
    for k, call in enumerate(calls[1:], start=1):
        if list(call["idx"].shape) != [1, 1]:
            return (f"call {k} gave the model {list(call['idx'].shape[1:])[0]} tokens: after the prompt, feed only the newest "
                    "token with the carried state (the state already holds everything before it)")
        if call["idx"].item() != out[0][2 + k]:
            return f"call {k} must feed the token that was just chosen"
        if call["state"] is None or call["state"].item() != 2 + k:
            return f"call {k} must pass the state that the previous call returned"
    if len(calls) not in (4, 5):
        return f"4 new tokens need 4 calls of the model (the prompt, then 3 single tokens), it was called {len(calls)} times"
    return None


@suite.case("sample_rnn", "the prompt is read once, then one token per call with the carried state", points=1, check=satisfies(_reads_problem))
def _(ns):
    model = _Successor(9)
    out = ns.generate_rnn(model, torch.tensor([[3, 1, 4]]), 4, temperature=0)
    return model.calls, out.tolist()


def _mode_problem(got):
    calls, training_after = got
    if not calls:
        return "generate_rnn never called the model"
    if any(call["training"] for call in calls):
        return "generate_rnn must run the model in eval mode (model.eval())"
    if any(call["grad"] for call in calls):
        return "generate_rnn must run without gradients (torch.no_grad())"
    if not training_after:
        return "the model was in training mode before the call and must be put back in it afterwards"
    return None


@suite.case("sample_rnn", "eval mode and no gradients inside, the caller's mode after", points=1, check=satisfies(_mode_problem))
def _(ns):
    model = _Successor(7, dropout=0.5)
    model.train()
    ns.generate_rnn(model, torch.tensor([[2, 3]]), 3, temperature=0)
    return model.calls, model.training
