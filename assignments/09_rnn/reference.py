"""Reference solutions for stage 09_rnn: the recurrent baseline.

The language model that transformers replaced, built from its equations: a plain
(Elman) RNN cell, an LSTM cell with PyTorch's gate order and parameter shapes, the
cell unrolled over a sequence, a character-level LSTM language model, truncated
backpropagation through time over contiguous streams, and generation that carries
the recurrent state instead of re-reading a window. With copied weights each piece
equals its ``nn`` twin (``nn.RNNCell``, ``nn.LSTMCell``, a one-layer
``nn.LSTM(batch_first=True)``). Every graded name here is self-contained: the build
copies its source into the reference notebook, and its signature and docstring into
the student's stub.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def rnn_cell(
    x: torch.Tensor,
    h: torch.Tensor,
    W_ih: torch.Tensor,
    W_hh: torch.Tensor,
    b_ih: torch.Tensor,
    b_hh: torch.Tensor,
) -> torch.Tensor:
    """One step of a plain (Elman) RNN: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)``.

    Args:
        x: the inputs of this step, ``(B, I)``.
        h: the previous hidden state, ``(B, H)``.
        W_ih: input-to-hidden weights ``(H, I)``; W_hh: hidden-to-hidden weights ``(H, H)``.
        b_ih, b_hh: the two biases, ``(H,)`` each (as in ``nn.RNNCell``).

    Returns:
        The new hidden state ``(B, H)``.

    Example:
        >>> x, h = torch.tensor([[1.0, 2.0]]), torch.tensor([[0.5]])
        >>> W_ih, W_hh = torch.tensor([[0.1, -0.2]]), torch.tensor([[2.0]])
        >>> rnn_cell(x, h, W_ih, W_hh, torch.zeros(1), torch.zeros(1))   # tanh(-0.3 + 1.0)
        tensor([[0.6044]])
    """
    return torch.tanh(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh)  # (B, H)


class LSTMCell(nn.Module):
    """One step of a long short-term memory (LSTM) cell, with PyTorch's parameters.

    With ``x (B, I)`` and the state ``(h, c)``, each ``(B, H)``, the four gates come
    from one affine map, in the order input, forget, cell (candidate), output::

        [i, f, g, o] = x W_ih^T + b_ih + h W_hh^T + b_hh      (B, 4H), split in four
        i, f, o = sigmoid(i), sigmoid(f), sigmoid(o);  g = tanh(g)
        c' = f * c + i * g
        h' = o * tanh(c')

    Parameters: ``weight_ih (4H, I)``, ``weight_hh (4H, H)``, ``bias_ih (4H,)``,
    ``bias_hh (4H,)``, drawn uniformly from ``[-1/sqrt(H), 1/sqrt(H)]`` as in
    ``nn.LSTMCell``, whose weights can be copied in as they are.

    Example:
        >>> cell = LSTMCell(input_size=3, hidden_size=2)
        >>> cell.weight_ih.shape, cell.weight_hh.shape, cell.bias_ih.shape
        (torch.Size([8, 3]), torch.Size([8, 2]), torch.Size([8]))
        >>> h, c = cell(torch.randn(5, 3))          # a zero state when none is given
        >>> h.shape, c.shape
        (torch.Size([5, 2]), torch.Size([5, 2]))
    """

    def __init__(self, input_size: int, hidden_size: int) -> None:
        """Create the four parameters for inputs of ``input_size`` and ``hidden_size`` units."""
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.weight_ih = nn.Parameter(torch.empty(4 * hidden_size, input_size))
        self.weight_hh = nn.Parameter(torch.empty(4 * hidden_size, hidden_size))
        self.bias_ih = nn.Parameter(torch.empty(4 * hidden_size))
        self.bias_hh = nn.Parameter(torch.empty(4 * hidden_size))
        bound = 1.0 / math.sqrt(hidden_size)
        for param in self.parameters():
            nn.init.uniform_(param, -bound, bound)

    def forward(
        self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One step on ``x (B, I)`` from ``state = (h, c)`` (zeros when ``None``); returns ``(h', c')``."""
        if state is None:
            zeros = x.new_zeros(x.size(0), self.hidden_size)  # (B, H), x's device and dtype
            state = (zeros, zeros)
        h, c = state
        gates = x @ self.weight_ih.T + self.bias_ih + h @ self.weight_hh.T + self.bias_hh  # (B, 4H)
        i, f, g, o = gates.chunk(4, dim=1)  # (B, H) each, in PyTorch's order
        i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
        c = f * c + i * g  # keep part of the old memory, write part of the candidate
        h = o * torch.tanh(c)  # show part of the memory
        return h, c


def run_lstm(
    cell: nn.Module, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None = None
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """Unroll ``cell`` over the time axis of ``x (B, T, I)``.

    Step ``t`` calls ``cell(x[:, t], state)`` and the state it returns is the state of
    step ``t + 1``; the first step gets ``state`` (``None``: the cell's zero state).
    With an :class:`LSTMCell` whose weights are those of a one-layer
    ``nn.LSTM(batch_first=True)``, this computes what that module computes, and
    gradients flow back through every step.

    Returns:
        ``(outputs, (h_T, c_T))``: the hidden state after every step, ``(B, T, H)``,
        and the final state, ``(B, H)`` each (not ``nn.LSTM``'s ``(1, B, H)``).

    Example:
        >>> cell = LSTMCell(3, 4)
        >>> outputs, (h, c) = run_lstm(cell, torch.randn(2, 5, 3))
        >>> outputs.shape, h.shape, torch.equal(outputs[:, -1], h)
        (torch.Size([2, 5, 4]), torch.Size([2, 4]), True)
    """
    outputs = []
    for t in range(x.size(1)):
        state = cell(x[:, t], state)  # (h, c), (B, H) each
        outputs.append(state[0])
    return torch.stack(outputs, dim=1), state  # (B, T, H)


class RNNLM(nn.Module):
    """A character-level LSTM language model: embedding, ``nn.LSTM``, linear head.

    ``logits = head(drop(lstm(emb(idx), state)))``. ``lstm`` is
    ``nn.LSTM(embed_dim, hidden_size, num_layers, batch_first=True)`` with ``dropout``
    between its layers (given only when there are at least two). Applying the same
    ``dropout`` to the LSTM's outputs before the head, as here, is optional: dropout
    is active in training mode only, and the tests run the model in eval mode.
    Unlike a GPT the model has no window: the state after the last position
    summarises everything read so far, and passing it back in continues the text.

    Example:
        >>> model = RNNLM(vocab_size=10, embed_dim=8, hidden_size=16)
        >>> idx = torch.randint(10, (2, 7))
        >>> logits, loss, (h, c) = model(idx, targets=idx)
        >>> logits.shape, loss.shape, h.shape
        (torch.Size([2, 7, 10]), torch.Size([]), torch.Size([1, 2, 16]))
    """

    def __init__(
        self, vocab_size: int, embed_dim: int, hidden_size: int, num_layers: int = 1, dropout: float = 0.0
    ) -> None:
        """Create ``emb``, ``lstm`` and ``head`` (and the dropout ``drop``)."""
        super().__init__()
        self.emb = nn.Embedding(vocab_size, embed_dim)
        between = dropout if num_layers > 1 else 0.0  # nn.LSTM drops only between layers
        self.lstm = nn.LSTM(embed_dim, hidden_size, num_layers=num_layers, dropout=between, batch_first=True)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(hidden_size, vocab_size)

    def forward(
        self,
        idx: torch.Tensor,
        state: tuple[torch.Tensor, torch.Tensor] | None = None,
        targets: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None, tuple[torch.Tensor, torch.Tensor]]:
        """Logits for every position of ``idx (B, T)``, the loss, and the state after the last position.

        Args:
            idx: token ids ``(B, T)``.
            state: ``(h, c)`` from an earlier call, ``(num_layers, B, H)`` each, or
                ``None`` for a zero state.
            targets: optional next-token ids ``(B, T)``; ``-100`` marks an ignored position.

        Returns:
            ``(logits (B, T, V), loss, (h, c))``; ``loss`` is the mean cross-entropy
            over the positions not ignored, or ``None`` without targets.
        """
        x = self.emb(idx)  # (B, T, E)
        out, state = self.lstm(x, state)  # (B, T, H); (h, c) each (num_layers, B, H)
        logits = self.head(self.drop(out))  # (B, T, V)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-100)
        return logits, loss, state


def stream_batches(data: torch.Tensor, batch_size: int) -> torch.Tensor:
    """Cut ``data`` into ``batch_size`` contiguous streams, one per row: ``(batch_size, N)``.

    ``N = len(data) // batch_size``; row ``r`` is ``data[r*N : (r+1)*N]``, and the last
    ``len(data) - batch_size * N`` tokens (the tail that does not fit) are dropped.
    Reading the rows column by column walks through ``batch_size`` far-apart places
    of the text at once, each in order.

    Raises:
        ValueError: if ``batch_size`` is not positive or ``data`` holds fewer than
            ``batch_size`` tokens.

    Example:
        >>> stream_batches(torch.arange(11), 3)
        tensor([[0, 1, 2],
                [3, 4, 5],
                [6, 7, 8]])
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    if len(data) < batch_size:
        raise ValueError(f"data holds {len(data)} tokens, fewer than batch_size={batch_size}")
    n = len(data) // batch_size
    return data[: batch_size * n].view(batch_size, n)  # (B, N)


def train_tbptt(
    model: nn.Module,
    data: torch.Tensor,
    *,
    seq_len: int,
    batch_size: int,
    steps: int,
    lr: float,
    generator: torch.Generator | None = None,
    grad_clip: float | None = 1.0,
) -> dict[str, list]:
    """Train a recurrent language model with truncated backpropagation through time.

    The data is cut into ``batch_size`` streams (:func:`stream_batches`, ``(B, N)``).
    Step ``s`` trains on the window ``x = streams[:, p:p+seq_len]`` with targets
    ``y = streams[:, p+1:p+seq_len+1]``, starting from the state the previous window
    ended in, **detached**, so that gradients flow back through at most ``seq_len``
    steps; then ``p`` advances by ``seq_len``. Only full windows are used: when the
    next one does not fit (``p + seq_len + 1 > N``) training restarts at ``p = 0``
    with a fresh zero state (``None``).

    Each step: zero the gradients, ``logits, loss, state = model(x, state, y)``,
    backward, clip the total gradient norm to ``grad_clip`` (unless ``None``), and
    step ``torch.optim.Adam(model.parameters(), lr=lr)``. The model is in training
    mode throughout and on its own device (each window is moved there).
    ``generator`` is accepted for the course's common signature; the windows are
    fixed, so nothing here draws from it.

    Returns:
        ``{"step": [0, 1, ...], "loss": [...]}``: each update's 0-based index and the
        batch loss (a float) computed before that update.

    Raises:
        ValueError: if ``seq_len``, ``steps`` or ``lr`` is not positive, ``grad_clip``
            is given and not positive, or the streams are too short for one window.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> model = RNNLM(vocab_size=4, embed_dim=8, hidden_size=16)
        >>> data = torch.tensor([0, 1, 2, 3] * 100)
        >>> history = train_tbptt(model, data, seq_len=8, batch_size=4, steps=60, lr=1e-2)
        >>> history["step"][:3], history["loss"][0] > 1.0, history["loss"][-1] < 0.1
        ([0, 1, 2], True, True)
    """
    if seq_len < 1 or steps < 1:
        raise ValueError(f"seq_len and steps must be positive, got {seq_len} and {steps}")
    if lr <= 0:
        raise ValueError(f"lr must be positive, got {lr}")
    if grad_clip is not None and grad_clip <= 0:
        raise ValueError(f"grad_clip must be positive or None, got {grad_clip}")
    streams = stream_batches(data, batch_size)  # (B, N)
    n = streams.size(1)
    if n < seq_len + 1:
        raise ValueError(f"streams of {n} tokens are too short for a window of {seq_len} and its targets")
    device = next(model.parameters()).device
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    history: dict[str, list] = {"step": [], "loss": []}
    model.train()
    p, state = 0, None
    for step in range(steps):
        if p + seq_len + 1 > n:  # the next window does not fit: start again from the top
            p, state = 0, None
        x = streams[:, p : p + seq_len].to(device)  # (B, T)
        y = streams[:, p + 1 : p + seq_len + 1].to(device)  # (B, T), the next tokens
        if state is not None:
            state = tuple(s.detach() for s in state)  # keep the values, cut the graph
        optimizer.zero_grad(set_to_none=True)
        _, loss, state = model(x, state, y)
        loss.backward()
        if grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        optimizer.step()
        history["step"].append(step)
        history["loss"].append(loss.item())
        p += seq_len
    return history


def generate_rnn(
    model: nn.Module,
    idx: torch.Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Extend ``idx (B, T0)`` by ``max_new_tokens`` tokens; returns ``(B, T0 + max_new_tokens)``.

    The prompt is read once, ``logits, _, state = model(idx)``; after that each new
    token alone is fed back with the carried state, ``model(next_id, state)``, so a
    token costs one step of the recurrence however long the text is (no window, no
    recomputation). The next token is drawn from ``softmax(logits[:, -1] / temperature)``
    with ``generator``; ``temperature == 0`` is greedy (the most likely token). Runs
    in eval mode without gradients, on the model's device, and puts the model back
    in the mode it was in.

    Raises:
        ValueError: if ``idx`` is not a non-empty ``(B, T0)`` tensor, or
            ``max_new_tokens`` or ``temperature`` is negative.

    Example:
        >>> model = RNNLM(vocab_size=10, embed_dim=8, hidden_size=16)
        >>> out = generate_rnn(model, torch.zeros(2, 3, dtype=torch.long), 12, temperature=0)
        >>> out.shape, model.training
        (torch.Size([2, 15]), True)
    """
    if idx.dim() != 2 or idx.size(1) == 0:
        raise ValueError(f"idx must be a non-empty (B, T0) tensor, got shape {tuple(idx.shape)}")
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be non-negative, got {max_new_tokens}")
    if temperature < 0:
        raise ValueError(f"temperature must be non-negative, got {temperature}")
    idx = idx.to(next(model.parameters()).device)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            logits, _, state = model(idx)  # the prompt, once
            for i in range(max_new_tokens):
                last = logits[:, -1, :]  # (B, V)
                if temperature == 0:
                    next_id = last.argmax(dim=-1, keepdim=True)  # (B, 1)
                else:
                    probs = F.softmax(last.float() / temperature, dim=-1)
                    if generator is not None and generator.device != probs.device:
                        next_id = torch.multinomial(probs.cpu(), 1, generator=generator).to(probs.device)
                    else:
                        next_id = torch.multinomial(probs, 1, generator=generator)  # (B, 1)
                idx = torch.cat([idx, next_id], dim=1)
                if i < max_new_tokens - 1:
                    logits, _, state = model(next_id, state)  # one step, the state carried
    finally:
        model.train(was_training)
    return idx
