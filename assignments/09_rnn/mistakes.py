"""Realistic mistakes and correct alternatives for stage 09_rnn.

A ``rnn_cell`` or ``lstm_layer`` mistake is the reference with one slip
(``slip(reference("rnn", name), (old, new))``); every other cell is written from a template
with the right code in every slot (a rewrite, not the reference's text), and a mistake
changes one slot. The tests keep the questions apart: ``run_lstm`` is tested on the grader's
own LSTM cell, ``train_tbptt`` and ``generate_rnn`` on the grader's own small language
models, so a mistake in ``LSTMCell`` or ``RNNLM`` costs nothing there. ``train_tbptt`` calls
``stream_batches``, which belongs to the same question.
"""

from autograder.authoring.catalogue import Variant, reference, slip

# ---------------------------------------------------------------- rnn_cell


def _rnn(*changes: tuple[str, str]) -> str:
    """The reference ``rnn_cell`` with each ``(old, new)`` of ``changes`` made."""
    return slip(reference("rnn", "rnn_cell"), *changes)


# ---------------------------------------------------------------- lstm_cell

_LSTM = """
class LSTMCell(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        H = hidden_size
        self.hidden_size = H
        self.weight_ih = nn.Parameter(torch.empty(4 * H, input_size))
        self.weight_hh = nn.Parameter(torch.empty(4 * H, H))
        self.bias_ih = nn.Parameter(torch.empty(4 * H))
        self.bias_hh = nn.Parameter(torch.empty(4 * H))
        for p in self.parameters():
            {init}

    def forward(self, x, state=None):
        if state is None:
            {zeros}
            state = (zeros, zeros)
        h, c = state
        gates = x @ self.weight_ih.T + {bias_ih} + h @ self.weight_hh.T + self.bias_hh
        {split}
        i, f, g, o = torch.sigmoid(i), torch.sigmoid(f{forget_shift}), {g_act}(g), torch.sigmoid(o)
        c = {new_c}
        h = {new_h}
        return {result}
"""

_LSTM_RIGHT = {
    "init": "nn.init.uniform_(p, -1 / math.sqrt(H), 1 / math.sqrt(H))",
    "zeros": "zeros = x.new_zeros(x.size(0), self.hidden_size)",
    "bias_ih": "self.bias_ih",
    "split": "i, f, g, o = gates.chunk(4, dim=1)",
    "forget_shift": "",
    "g_act": "torch.tanh",
    "new_c": "f * c + i * g",
    "new_h": "o * torch.tanh(c)",
    "result": "h, c",
}


def _lstm(**changes: str) -> str:
    return _LSTM.format(**{**_LSTM_RIGHT, **changes})


# ---------------------------------------------------------------- lstm_layer


def _layer(*changes: tuple[str, str]) -> str:
    """The reference ``run_lstm`` with each ``(old, new)`` of ``changes`` made."""
    return slip(reference("rnn", "run_lstm"), *changes)


# ---------------------------------------------------------------- rnn_lm

_LM = """
class RNNLM(nn.Module):
    def __init__(self, vocab_size, embed_dim, hidden_size, num_layers=1, dropout=0.0):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, embed_dim)
        self.lstm = nn.LSTM(embed_dim, hidden_size, num_layers={layers}, dropout={dropout}, batch_first={batch_first})
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(hidden_size, vocab_size)

    def forward(self, idx, state=None, targets=None):
        out, new_state = self.lstm(self.emb(idx), {state})
        logits = self.head(self.drop(out))
        loss = None
        if targets is not None:
            loss = {loss}
        return logits, loss, {result}
"""

_LM_RIGHT = {
    "layers": "num_layers",
    "dropout": "dropout if num_layers > 1 else 0.0",
    "batch_first": "True",
    "state": "state",
    "loss": "F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-100)",
    "result": "new_state",
}


def _lm(**changes: str) -> str:
    return _LM.format(**{**_LM_RIGHT, **changes})


# ---------------------------------------------------------------- tbptt

_STREAMS = """
def stream_batches(data, batch_size):
    if {too_few}:
        raise ValueError(f"{{len(data)}} tokens cannot fill {{batch_size}} streams")
    n = len(data) // batch_size
    return {streams}
"""

_STREAMS_RIGHT = {
    "too_few": "batch_size < 1 or len(data) < batch_size",
    "streams": "data[: batch_size * n].view(batch_size, n)",
}


def _streams(**changes: str) -> str:
    return _STREAMS.format(**{**_STREAMS_RIGHT, **changes})


_TBPTT = """
def train_tbptt(model, data, *, seq_len, batch_size, steps, lr, generator=None, grad_clip=1.0):
    if seq_len < 1 or steps < 1 or lr <= 0 or (grad_clip is not None and grad_clip <= 0):
        raise ValueError("seq_len, steps, lr and grad_clip must be positive")
    streams = stream_batches(data, batch_size)
    n = streams.size(1)
    if n < seq_len + 1:
        raise ValueError("the streams are too short for one window and its targets")
    device = next(model.parameters()).device
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    history = {{"step": [], "loss": []}}
    model.train()
    p, state = 0, None
    for step in range(steps):
        if {no_fit}:
            p, state = {restart}
        x = streams[:, p : p + seq_len]{to_device}
        y = streams[:, p + 1 : p + seq_len + 1]{to_device}
        if state is not None:
            state = {carry}
        optimizer.zero_grad()
        _, loss, state = model(x, state, y)
        loss.backward()
        {clip}
        optimizer.step()
        history["step"].append(step)
        history["loss"].append({record})
        p += {advance}
    return history
"""

_TBPTT_RIGHT = {
    "no_fit": "p + seq_len + 1 > n",
    "restart": "0, None",
    "carry": "tuple(s.detach() for s in state)",
    "clip": ("if grad_clip is not None:\n            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)"),
    "record": "loss.item()",
    "advance": "seq_len",
    "to_device": ".to(device)",
}


def _tbptt(**changes: str) -> str:
    return _TBPTT.format(**{**_TBPTT_RIGHT, **changes})


# ---------------------------------------------------------------- sample_rnn

_SAMPLE = """
def generate_rnn(model, idx, max_new_tokens, temperature=1.0, generator=None):
    if temperature < 0 or max_new_tokens < 0 or idx.dim() != 2 or idx.size(1) == 0:
        raise ValueError("temperature and max_new_tokens must be non-negative, idx a non-empty (B, T0) tensor")
    idx = {move}
    was_training = model.training
    model.eval()
    with {grad}:
        logits, _, state = model(idx)
        for _ in range(max_new_tokens):
            last = logits[:, {position}, :]
            if temperature == 0:
                next_id = last.argmax(dim=-1, keepdim=True)
            else:
                {draw}
            idx = torch.cat([idx, next_id], dim=1)
            {feed}
    {restore}
    return {result}
"""

_SAMPLE_RIGHT = {
    "move": "idx.to(next(model.parameters()).device)",
    "grad": "torch.no_grad()",
    "position": "-1",
    "draw": (
        "probs = F.softmax(last / temperature, dim=-1)\n"
        "                next_id = torch.multinomial(probs, 1, generator=generator)"
    ),
    "feed": "logits, _, state = model(next_id, state)",
    "restore": "model.train(was_training)",
    "result": "idx",
}


def _sample(**changes: str) -> str:
    return _SAMPLE.format(**{**_SAMPLE_RIGHT, **changes})


MISTAKES = [
    Variant(
        "rnn_cell",
        "sigmoid instead of tanh",
        {"rnn_cell": _rnn(("torch.tanh(x @", "torch.sigmoid(x @"))},
        hints=("sigmoid instead of tanh",),
        clauses=("formula",),
    ),
    Variant(
        "rnn_cell",
        "ReLU instead of tanh",
        {"rnn_cell": _rnn(("torch.tanh(x @", "torch.relu(x @"))},
        clauses=("formula",),
    ),
    Variant(
        "rnn_cell",
        "the hidden-to-hidden bias left out",
        {"rnn_cell": _rnn(("h @ W_hh.T + b_hh)", "h @ W_hh.T)"))},
        hints=("a bias left out",),
        clauses=("both-biases",),
    ),
    Variant(
        "rnn_cell",
        "h multiplied by W_hh without the transpose",
        {"rnn_cell": _rnn(("h @ W_hh.T + b_hh)", "h @ W_hh + b_hh)"))},
        hints=("W_hh not transposed",),
        clauses=("formula",),
    ),
    Variant(
        "rnn_cell",
        "tanh of each half, added",
        {
            "rnn_cell": _rnn(
                (
                    "torch.tanh(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh)",
                    "torch.tanh(x @ W_ih.T + b_ih) + torch.tanh(h @ W_hh.T + b_hh)",
                )
            )
        },
        clauses=("formula",),
    ),
    Variant(
        "lstm_cell",
        "gates read in the order input, forget, output, cell",
        {"LSTMCell": _lstm(split="i, f, o, g = gates.chunk(4, dim=1)")},
        hints=("gates in another order",),
        clauses=("gates",),
    ),
    Variant(
        "lstm_cell",
        "gates read in TensorFlow's order input, cell, forget, output",
        {"LSTMCell": _lstm(split="i, g, f, o = gates.chunk(4, dim=1)")},
        hints=("gates in another order",),
        clauses=("gates",),
    ),
    Variant(
        "lstm_cell",
        "a forget bias of 1 added in forward",
        {"LSTMCell": _lstm(forget_shift=" + 1.0")},
        hints=("forget bias added",),
        clauses=("gates",),
    ),
    Variant(
        "lstm_cell",
        "sigmoid for the candidate g",
        {"LSTMCell": _lstm(g_act="torch.sigmoid")},
        hints=("sigmoid for the candidate",),
        clauses=("gates",),
    ),
    Variant(
        "lstm_cell",
        "bias_ih left out of the gates",
        {"LSTMCell": _lstm(bias_ih="0")},
        hints=("a bias left out of the gates",),
        clauses=("gates",),
    ),
    Variant(
        "lstm_cell",
        "h = o * c, the tanh of the new cell forgotten",
        {"LSTMCell": _lstm(new_h="o * c")},
        hints=("tanh of the new cell forgotten",),
        clauses=("gates",),
    ),
    Variant(
        "lstm_cell",
        "returns (c, h)",
        {"LSTMCell": _lstm(result="c, h")},
        hints=("(c, h) returned",),
        clauses=("equals-torch",),
    ),
    Variant(
        "lstm_cell",
        "a coupled gate: c = f * c + (1 - f) * g",
        {"LSTMCell": _lstm(new_c="f * c + (1 - f) * g")},
        clauses=("gates",),
    ),
    Variant(
        "lstm_cell",
        "parameters drawn from torch.randn",
        {"LSTMCell": _lstm(init="nn.init.normal_(p)")},
        clauses=("init",),
    ),
    Variant(
        "lstm_cell",
        "the zero state always float32",
        {"LSTMCell": _lstm(zeros="zeros = torch.zeros(x.size(0), self.hidden_size, device=x.device)")},
        clauses=("dtype-zero-state",),
    ),
    Variant(
        "lstm_cell",
        "the zero state made on the default device",
        {"LSTMCell": _lstm(zeros="zeros = torch.zeros(x.size(0), self.hidden_size, dtype=x.dtype)")},
        hidden_only="needs an input on another device than the default one: grading uses PyTorch's meta device, whose first use costs seconds in a notebook",
        clauses=("device-zero-state",),
    ),
    Variant(
        "lstm_layer",
        "outputs stacked time-first",
        {"run_lstm": _layer(("torch.stack(outputs, dim=1)", "torch.stack(outputs, dim=0)"))},
        hints=("outputs stacked time-first",),
        clauses=("returns",),
    ),
    Variant(
        "lstm_layer",
        "every step starts from the initial state",
        {
            "run_lstm": _layer(
                ("state = cell(x[:, t], state)", "step = cell(x[:, t], state)"),
                ("outputs.append(state[0])", "outputs.append(step[0])"),
                ("dim=1), state", "dim=1), step"),
            )
        },
        hints=("every step from the initial state",),
        clauses=("unrolled",),
    ),
    Variant(
        "lstm_layer",
        "the given initial state ignored",
        {"run_lstm": _layer(("state = cell(x[:, t], state)", "state = cell(x[:, t], None if t == 0 else state)"))},
        hints=("given state ignored",),
        clauses=("unrolled",),
    ),
    Variant(
        "lstm_layer",
        "the outputs are the cell states c",
        {"run_lstm": _layer(("outputs.append(state[0])", "outputs.append(state[1])"))},
        hints=("outputs are the cell states",),
        clauses=("equals-torch",),
    ),
    Variant(
        "lstm_layer",
        "the state detached at every step",
        {
            "run_lstm": _layer(
                ("state = cell(x[:, t], state)", "state = tuple(s.detach() for s in cell(x[:, t], state))")
            )
        },
        hints=("state detached at every step",),
        clauses=("gradients",),
    ),
    Variant(
        "lstm_layer",
        "the final state returned as (1, B, H), as nn.LSTM does",
        {"run_lstm": _layer(("dim=1), state", "dim=1), tuple(s.unsqueeze(0) for s in state)"))},
        hints=("final state (1, B, H)",),
        clauses=("state-shape",),
    ),
    Variant(
        "rnn_lm",
        "nn.LSTM without batch_first",
        {"RNNLM": _lm(batch_first="False")},
        hints=("LSTM not batch-first",),
        clauses=("parts",),
    ),
    Variant("rnn_lm", "the given state ignored", {"RNNLM": _lm(state="None")}, clauses=("state-in",)),
    Variant("rnn_lm", "only h returned as the state", {"RNNLM": _lm(result="new_state[0]")}, clauses=("state-out",)),
    Variant(
        "rnn_lm",
        "the targets shifted a second time",
        {"RNNLM": _lm(loss="F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), targets[:, 1:].reshape(-1))")},
        clauses=("loss",),
    ),
    Variant(
        "rnn_lm",
        "the loss summed instead of averaged",
        {
            "RNNLM": _lm(
                loss="F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), reduction='sum')"
            )
        },
        hints=("loss summed",),
        clauses=("loss",),
    ),
    Variant(
        "rnn_lm",
        "num_layers ignored",
        {"RNNLM": _lm(layers="1", dropout="0.0")},
        hints=("num_layers not passed on",),
        clauses=("layers-dropout",),
    ),
    Variant(
        "rnn_lm",
        "dropout never reaches the LSTM",
        {"RNNLM": _lm(dropout="0.0")},
        hints=("dropout not passed on",),
        clauses=("layers-dropout",),
    ),
    Variant(
        "tbptt",
        "streams made with view(N, B) and transposed",
        {"stream_batches": _streams(streams="data[: batch_size * n].view(n, batch_size).t()")},
        hints=("streams made as (N, B)",),
        clauses=("streams",),
    ),
    Variant(
        "tbptt",
        "no ValueError for fewer tokens than streams",
        {"stream_batches": _streams(too_few="batch_size < 1")},
        clauses=("stream-errors",),
    ),
    Variant(
        "tbptt",
        "the state not detached between windows",
        {"train_tbptt": _tbptt(carry="state")},
        hints=("state not detached between windows",),
        # the second window's backward() reaches into the first one's freed graph and raises:
        # every test that trains on more than one window fails
        clauses=("state-carried", "windows", "history", "adam", "train-mode", "clip", "clip-none"),
    ),
    Variant(
        "tbptt",
        "only h detached, c still attached",
        {"train_tbptt": _tbptt(carry="(state[0].detach(), state[1])")},
        clauses=("state-carried", "windows", "history", "adam", "train-mode", "clip", "clip-none"),
    ),
    Variant(
        "tbptt", "the state reset at every window", {"train_tbptt": _tbptt(carry="None")}, clauses=("state-carried",)
    ),
    Variant(
        "tbptt", "windows overlapping: p advances by 1", {"train_tbptt": _tbptt(advance="1")}, clauses=("windows",)
    ),
    Variant(
        "tbptt",
        "p advances by seq_len + 1, skipping a token",
        {"train_tbptt": _tbptt(advance="seq_len + 1")},
        clauses=("windows",),
    ),
    Variant(
        "tbptt",
        "a restart one window too early",
        {"train_tbptt": _tbptt(no_fit="p + seq_len + 1 >= n")},
        clauses=("restart",),
    ),
    Variant(
        "tbptt", "the restart keeps the old state", {"train_tbptt": _tbptt(restart="0, state")}, clauses=("restart",)
    ),
    Variant(
        "tbptt",
        "the running mean of the losses recorded",
        {"train_tbptt": _tbptt(record="(sum(history['loss']) + loss.item()) / (len(history['loss']) + 1)")},
        clauses=("history",),
    ),
    Variant("tbptt", "no gradient clipping", {"train_tbptt": _tbptt(clip="pass")}, clauses=("clip",)),
    Variant(
        "tbptt",
        "the windows left on the CPU",
        {"train_tbptt": _tbptt(to_device="")},
        hidden_only="needs a model on another device than the data: grading uses PyTorch's meta device, whose first use costs seconds in a notebook",
        clauses=("device",),
    ),
    Variant(
        "sample_rnn",
        "the whole text re-read at every step",
        {"generate_rnn": _sample(feed="logits, _, state = model(idx)")},
        clauses=("one-step",),
    ),
    Variant(
        "sample_rnn",
        "the whole text fed again with the carried state",
        {"generate_rnn": _sample(feed="logits, _, state = model(idx, state)")},
        clauses=("one-step",),
    ),
    Variant(
        "sample_rnn", "the model left in eval mode", {"generate_rnn": _sample(restore="pass")}, clauses=("eval-mode",)
    ),
    Variant(
        "sample_rnn",
        "the model put in training mode after, whatever the caller's mode (model.train())",
        {"generate_rnn": _sample(restore="model.train()")},
        clauses=("eval-mode",),
    ),
    Variant(
        "sample_rnn",
        "temperature applied after the softmax",
        {
            "generate_rnn": _sample(
                draw=(
                    "probs = F.softmax(last, dim=-1) / temperature\n"
                    "                next_id = torch.multinomial(probs, 1, generator=generator)"
                )
            )
        },
        clauses=("temperature",),
    ),
    Variant(
        "sample_rnn",
        "the generator not used",
        {
            "generate_rnn": _sample(
                draw=(
                    "probs = F.softmax(last / temperature, dim=-1)\n"
                    "                next_id = torch.multinomial(probs, 1)"
                )
            )
        },
        clauses=("generator",),
    ),
    Variant(
        "sample_rnn", "gradients left on", {"generate_rnn": _sample(grad="torch.enable_grad()")}, clauses=("eval-mode",)
    ),
    Variant(
        "sample_rnn",
        "the first position's logits used",
        {"generate_rnn": _sample(position="0")},
        hints=("first position's logits",),
        clauses=("greedy",),
    ),
    Variant(
        "sample_rnn",
        "only the new tokens returned",
        {"generate_rnn": _sample(result="idx[:, -max_new_tokens:] if max_new_tokens else idx[:, :0]")},
        hints=("prompt dropped",),
        clauses=("shape",),
    ),
    Variant(
        "sample_rnn",
        "the prompt left on its own device",
        {"generate_rnn": _sample(move="idx")},
        hidden_only="needs a model on another device than the prompt: grading uses PyTorch's meta device, whose first use costs seconds in a notebook",
        clauses=("device",),
    ),
    # single-clause slips: one per clause no mistake above breaks alone
    Variant(
        "rnn_cell",
        "a time axis kept: (B, 1, H)",
        {"rnn_cell": _rnn(("h @ W_hh.T + b_hh)", "h @ W_hh.T + b_hh).unsqueeze(1)"))},
        clauses=("shape",),
    ),
    Variant(
        "lstm_cell",
        "bias_hh kept as a plain tensor, not an nn.Parameter",
        {
            "LSTMCell": slip(
                _lstm(),
                (
                    "self.bias_hh = nn.Parameter(torch.empty(4 * H))",
                    "self.bias_hh = nn.init.uniform_(torch.empty(4 * H), -1 / math.sqrt(H), 1 / math.sqrt(H))",
                ),
            )
        },
        clauses=("params",),
    ),
    Variant(
        "lstm_cell",
        "state=None starts from ones",
        {"LSTMCell": _lstm(zeros="zeros = x.new_ones(x.size(0), self.hidden_size)")},
        clauses=("zero-state",),
    ),
    Variant(
        "rnn_lm",
        "num_layers defaults to 2",
        {"RNNLM": slip(_lm(), ("num_layers=1, dropout=0.0", "num_layers=2, dropout=0.0"))},
        clauses=("defaults",),
    ),
    Variant(
        "rnn_lm",
        "a loss of 0 without targets",
        {"RNNLM": slip(_lm(), ("loss = None", "loss = logits.new_zeros(())"))},
        clauses=("loss-none",),
    ),
    Variant(
        "rnn_lm",
        "the state returned in float64 whatever the model's dtype",
        {"RNNLM": _lm(result="tuple(s.double() for s in new_state)")},
        clauses=("dtype-state",),
    ),
    Variant(
        "tbptt",
        "as many tokens as streams refused",
        {"stream_batches": _streams(too_few="batch_size < 1 or len(data) <= batch_size")},
        clauses=("stream-one",),
    ),
    Variant(
        "tbptt",
        "streams too short for a window raise IndexError",
        {
            "train_tbptt": slip(
                _tbptt(), ('raise ValueError("the streams are too short', 'raise IndexError("the streams are too short')
            )
        },
        clauses=("too-short",),
    ),
    Variant(
        "tbptt",
        "lr = 0 accepted",
        {"train_tbptt": slip(_tbptt(), ("lr <= 0", "lr < 0"))},
        clauses=("arg-errors",),
    ),
    Variant(
        "rnn_lm",
        "log-probabilities returned as the logits",
        {
            "RNNLM": slip(
                _lm(), ("logits = self.head(self.drop(out))", "logits = F.log_softmax(self.head(self.drop(out)), -1)")
            )
        },
        hints=("log-probabilities returned",),
        clauses=("logits",),
    ),
    Variant(
        "tbptt",
        "streams made int32 (train_tbptt converts them back)",
        {
            "stream_batches": _streams(streams="data[: batch_size * n].view(batch_size, n).int()"),
            "train_tbptt": slip(
                _tbptt(),
                ("streams = stream_batches(data, batch_size)", "streams = stream_batches(data, batch_size).long()"),
            ),
        },
        clauses=("dtype-streams",),
    ),
    Variant(
        "sample_rnn",
        "max_new_tokens=0 refused",
        {"generate_rnn": slip(_sample(), ("max_new_tokens < 0", "max_new_tokens < 1"))},
        clauses=("zero-new",),
    ),
    Variant(
        "sample_rnn",
        "a negative temperature accepted",
        {"generate_rnn": slip(_sample(), ("temperature < 0 or ", ""))},
        clauses=("arg-errors",),
    ),
    Variant(
        "rnn_cell",
        "the result detached from the graph",
        {"rnn_cell": _rnn(("h @ W_hh.T + b_hh)", "h @ W_hh.T + b_hh).detach()"))},
        clauses=("gradients",),
    ),
    Variant(
        "rnn_lm",
        "the loss computed on detached logits",
        {"RNNLM": _lm(loss="F.cross_entropy(logits.detach().reshape(-1, logits.size(-1)), targets.reshape(-1))")},
        clauses=("backprop",),
    ),
    Variant(
        "tbptt",
        "Adam at a fixed lr of 1e-3",
        {
            "train_tbptt": slip(
                _tbptt(),
                ("torch.optim.Adam(model.parameters(), lr=lr)", "torch.optim.Adam(model.parameters(), lr=1e-3)"),
            )
        },
        clauses=("adam",),
    ),
    Variant(
        "tbptt",
        "the model left in the mode it came in",
        {"train_tbptt": slip(_tbptt(), ("    model.train()\n", ""))},
        clauses=("train-mode",),
    ),
    Variant(
        "tbptt",
        "grad_clip=None clips at 1.0",
        {
            "train_tbptt": _tbptt(
                clip="torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0 if grad_clip is None else grad_clip)"
            )
        },
        clauses=("clip-none",),
    ),
    Variant(
        "tbptt",
        "the optimiser steps before the backward pass",
        {
            "train_tbptt": slip(
                _tbptt(),
                ("        optimizer.step()\n", ""),
                ("        _, loss, state", "        optimizer.step()\n        _, loss, state"),
            )
        },
        clauses=("adam",),
    ),
    Variant(
        "tbptt",
        "the optimiser never steps",
        {"train_tbptt": slip(_tbptt(), ("        optimizer.step()\n", ""))},
        clauses=("adam",),
    ),
]


ALTERNATIVES = [
    Variant(
        "rnn_cell",
        "F.linear for each part",
        {
            "rnn_cell": """
        def rnn_cell(x, h, W_ih, W_hh, b_ih, b_hh):
            return torch.tanh(F.linear(x, W_ih, b_ih) + F.linear(h, W_hh, b_hh))
    """
        },
    ),
    Variant(
        "rnn_cell",
        "one matmul on the concatenation [x, h]",
        {
            "rnn_cell": """
        def rnn_cell(x, h, W_ih, W_hh, b_ih, b_hh):
            W = torch.cat([W_ih, W_hh], dim=1)  # (H, I + H)
            return torch.tanh(torch.cat([x, h], dim=1) @ W.t() + (b_ih + b_hh))
    """
        },
    ),
    Variant(
        "lstm_cell",
        "one matmul on [x, h], gates unbound from a view, zeros made with torch.zeros",
        {
            "LSTMCell": """
        class LSTMCell(nn.Module):
            def __init__(self, input_size, hidden_size):
                super().__init__()
                self.input_size, self.hidden_size = input_size, hidden_size
                k = 1.0 / hidden_size ** 0.5
                self.weight_ih = nn.Parameter(torch.rand(4 * hidden_size, input_size) * 2 * k - k)
                self.weight_hh = nn.Parameter(torch.rand(4 * hidden_size, hidden_size) * 2 * k - k)
                self.bias_ih = nn.Parameter(torch.rand(4 * hidden_size) * 2 * k - k)
                self.bias_hh = nn.Parameter(torch.rand(4 * hidden_size) * 2 * k - k)

            def forward(self, x, state=None):
                B, H = x.shape[0], self.hidden_size
                if state is None:
                    h = torch.zeros(B, H, dtype=x.dtype, device=x.device)
                    c = torch.zeros(B, H, dtype=x.dtype, device=x.device)
                else:
                    h, c = state
                W = torch.cat([self.weight_ih, self.weight_hh], dim=1)
                z = torch.cat([x, h], dim=1) @ W.t() + self.bias_ih + self.bias_hh
                i, f, g, o = z.view(B, 4, H).unbind(1)
                c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                return torch.sigmoid(o) * torch.tanh(c_new), c_new
    """
        },
    ),
    Variant(
        "lstm_cell",
        "explicit slices and F.linear, a reset_parameters method",
        {
            "LSTMCell": """
        class LSTMCell(nn.Module):
            def __init__(self, input_size, hidden_size):
                super().__init__()
                self.hidden_size = hidden_size
                self.weight_ih = nn.Parameter(torch.zeros(4 * hidden_size, input_size))
                self.weight_hh = nn.Parameter(torch.zeros(4 * hidden_size, hidden_size))
                self.bias_ih = nn.Parameter(torch.zeros(4 * hidden_size))
                self.bias_hh = nn.Parameter(torch.zeros(4 * hidden_size))
                self.reset_parameters()

            def reset_parameters(self):
                bound = 1 / math.sqrt(self.hidden_size)
                with torch.no_grad():
                    for _, p in self.named_parameters():
                        p.uniform_(-bound, bound)

            def forward(self, x, state=None):
                H = self.hidden_size
                if state is None:
                    h = c = x.new_zeros((x.shape[0], H))
                else:
                    h, c = state
                z = F.linear(x, self.weight_ih, self.bias_ih) + F.linear(h, self.weight_hh, self.bias_hh)
                input_gate = torch.sigmoid(z[:, 0:H])
                forget_gate = torch.sigmoid(z[:, H:2 * H])
                candidate = torch.tanh(z[:, 2 * H:3 * H])
                output_gate = torch.sigmoid(z[:, 3 * H:4 * H])
                c = forget_gate * c + input_gate * candidate
                h = output_gate * torch.tanh(c)
                return (h, c)
    """
        },
    ),
    Variant(
        "lstm_layer",
        "a loop over x.unbind(1) into a preallocated output",
        {
            "run_lstm": """
        def run_lstm(cell, x, state=None):
            steps = x.unbind(dim=1)
            outputs = None
            for t, x_t in enumerate(steps):
                h, c = cell(x_t, state)
                if outputs is None:
                    outputs = x.new_zeros(x.shape[0], len(steps), h.shape[-1])
                outputs[:, t] = h
                state = (h, c)
            return outputs, (h, c)
    """
        },
    ),
    Variant(
        "rnn_lm",
        "an nn.Sequential-free forward with view and a stored vocabulary size",
        {
            "RNNLM": """
        class RNNLM(nn.Module):
            def __init__(self, vocab_size, embed_dim, hidden_size, num_layers=1, dropout=0.0):
                super().__init__()
                self.vocab_size = vocab_size
                self.emb = nn.Embedding(vocab_size, embed_dim)
                self.lstm = nn.LSTM(input_size=embed_dim, hidden_size=hidden_size, num_layers=num_layers,
                                    batch_first=True, dropout=dropout if num_layers > 1 else 0)
                self.head = nn.Linear(hidden_size, vocab_size)

            def forward(self, idx, state=None, targets=None):
                B, T = idx.shape
                hidden, (h, c) = self.lstm(self.emb(idx), state)
                logits = self.head(hidden)
                if targets is None:
                    return logits, None, (h, c)
                loss = F.cross_entropy(logits.view(B * T, self.vocab_size), targets.view(B * T))
                return logits, loss, (h, c)
    """
        },
    ),
    Variant(
        "tbptt",
        "narrow and reshape, a while loop over windows, detach per tensor",
        {
            "stream_batches": """
            def stream_batches(data, batch_size):
                if batch_size <= 0 or data.shape[0] < batch_size:
                    raise ValueError("need at least batch_size tokens")
                length = data.shape[0] // batch_size
                return data.narrow(0, 0, length * batch_size).reshape(batch_size, length)
        """,
            "train_tbptt": """
            def train_tbptt(model, data, *, seq_len, batch_size, steps, lr, generator=None, grad_clip=1.0):
                for name, value in (("seq_len", seq_len), ("steps", steps), ("lr", lr), ("grad_clip", grad_clip)):
                    if value is not None and value <= 0:
                        raise ValueError(f"{name} must be positive, got {value}")
                streams = stream_batches(data, batch_size)
                if streams.shape[1] <= seq_len:
                    raise ValueError("streams too short for a window")
                device = next(model.parameters()).device
                opt = torch.optim.Adam(model.parameters(), lr=lr)
                model.train()
                losses, start, hidden = [], 0, None
                while len(losses) < steps:
                    if start + seq_len >= streams.shape[1]:
                        start, hidden = 0, None
                    window = streams[:, start:start + seq_len + 1].to(device)
                    if hidden is not None:
                        hidden = (hidden[0].detach(), hidden[1].detach())
                    _, loss, hidden = model(window[:, :-1], state=hidden, targets=window[:, 1:])
                    opt.zero_grad(set_to_none=False)
                    loss.backward()
                    if grad_clip:
                        nn.utils.clip_grad_norm_(model.parameters(), max_norm=grad_clip)
                    opt.step()
                    losses.append(float(loss.detach()))
                    start += seq_len
                return {"step": list(range(len(losses))), "loss": losses}
        """,
        },
    ),
    Variant(
        "sample_rnn",
        "inference_mode, inverse-CDF draws, restored in finally",
        {
            "generate_rnn": """
        def generate_rnn(model, idx, max_new_tokens, temperature=1.0, generator=None):
            if temperature < 0 or max_new_tokens < 0 or len(idx.shape) != 2 or idx.shape[1] < 1:
                raise ValueError("temperature and max_new_tokens must be >= 0, idx a non-empty (B, T0) tensor")
            mode = model.training
            model.train(False)
            idx = idx.to(next(model.parameters()).device)
            tokens = [idx]
            try:
                with torch.inference_mode():
                    logits, _, state = model(idx)
                    for step in range(max_new_tokens):
                        scores = logits[:, -1]
                        if temperature == 0:
                            choice = scores.argmax(-1, keepdim=True)
                        else:
                            cdf = torch.softmax(scores / temperature, dim=-1).cumsum(-1)
                            u = torch.rand(scores.shape[0], 1, generator=generator)
                            choice = torch.searchsorted(cdf, u).clamp(max=scores.shape[-1] - 1)
                        tokens.append(choice)
                        if step + 1 < max_new_tokens:
                            logits, _, state = model(choice, state)
            finally:
                model.train(mode)
            return torch.cat(tokens, dim=1)
    """
        },
    ),
]
