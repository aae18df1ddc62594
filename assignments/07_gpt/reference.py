"""Reference solutions for stage 07_gpt: the full model and its training.

A GPT (token and position embeddings, a stack of transformer blocks, a final
LayerNorm and a language-model head tied to the token embedding), its parameter
count in closed form, and a training loop that runs unchanged on CUDA or CPU
(sampling and generation are stage 08's).
Every graded name here is self-contained: the build copies its source into the
reference notebook, and its signature and docstring into the student's stub.
"""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

from solutions.blocks import LayerNorm, TransformerBlock


@dataclass
class GPTConfig:
    """The size and options of a :class:`GPT`.

    ``ff_dim=None`` means ``4 * n_embd``. ``tie_weights`` makes the output head
    share its weight matrix with the token embedding; ``norm_first`` picks pre-norm
    (GPT-2) or post-norm blocks.

    Example:
        >>> config = GPTConfig(vocab_size=65, block_size=32, n_layer=2)
        >>> config.n_embd, config.ff_dim is None
        (128, True)
    """

    vocab_size: int
    block_size: int
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    ff_dim: int | None = None
    dropout: float = 0.0
    tie_weights: bool = True
    norm_first: bool = True


class GPT(nn.Module):
    """A decoder-only transformer language model.

    ``logits = head(ln_f(blocks(drop(tok_emb(idx) + pos_emb(positions)))))`` where
    every block is a causal-masked :class:`TransformerBlock`. When
    ``config.tie_weights`` is true, ``head.weight`` is the same Parameter as
    ``tok_emb.weight``. Weights start as nanoGPT starts them: normal with standard
    deviation 0.02, both embedding tables included (the projections into the residual
    stream, ``attn.out_proj`` and ``ff.fc2``, scaled down by ``sqrt(2 * n_layer)``, as
    the GPT-2 paper describes), biases at zero.

    Example:
        >>> model = GPT(GPTConfig(vocab_size=10, block_size=8, n_layer=1, n_embd=16))
        >>> idx = torch.randint(10, (2, 8))
        >>> logits, loss = model(idx, targets=idx)
        >>> logits.shape, loss.shape
        (torch.Size([2, 8, 10]), torch.Size([]))
    """

    def __init__(self, config: GPTConfig) -> None:
        """Build the model described by ``config``.

        Raises:
            ValueError: if a size in ``config`` is not positive, or ``n_head`` does
                not divide ``n_embd``.
        """
        super().__init__()
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            if getattr(config, name) < 1:
                raise ValueError(f"config.{name} must be positive, got {getattr(config, name)}")
        if config.n_embd % config.n_head != 0:
            raise ValueError(f"config.n_embd ({config.n_embd}) must be divisible by config.n_head ({config.n_head})")
        self.config = config
        ff_dim = config.ff_dim if config.ff_dim is not None else 4 * config.n_embd

        self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd)
        self.pos_emb = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(
            [
                TransformerBlock(
                    config.n_embd,
                    config.n_head,
                    ff_dim,
                    dropout=config.dropout,
                    activation="gelu",
                    norm_first=config.norm_first,
                )
                for _ in range(config.n_layer)
            ]
        )
        self.ln_f = LayerNorm(config.n_embd)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        if config.tie_weights:
            self.head.weight = self.tok_emb.weight  # one Parameter, used twice

        self.apply(self._init_weights)
        for block in self.blocks:  # residual projections: smaller, as the GPT-2 paper describes
            nn.init.normal_(block.attn.out_proj.weight, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))
            nn.init.normal_(block.ff.fc2.weight, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module: nn.Module) -> None:
        """GPT-2 initialisation of one submodule (used with ``self.apply``)."""
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(
        self, idx: torch.Tensor, targets: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits for every position of ``idx (B, T)``, and the loss when ``targets`` is given.

        Args:
            idx: token ids ``(B, T)``, ``T <= block_size``.
            targets: optional next-token ids ``(B, T)``; ``-100`` marks an ignored position.

        Returns:
            ``(logits (B, T, V), loss)``; ``loss`` is the mean cross-entropy over the
            positions not ignored, or ``None`` without targets.

        Raises:
            ValueError: if ``idx`` is not 2-D or ``T > block_size``.
        """
        if idx.dim() != 2:
            raise ValueError(f"idx must be (B, T), got shape {tuple(idx.shape)}")
        B, T = idx.shape
        if T > self.config.block_size:
            raise ValueError(f"sequence length {T} exceeds block_size {self.config.block_size}")

        pos = torch.arange(T, device=idx.device)  # (T,)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))  # (B, T, C)
        mask = torch.ones(T, T, dtype=torch.bool, device=idx.device).triu(1)  # (T, T), True = future
        for block in self.blocks:
            x = block(x, mask=mask)  # (B, T, C)
        logits = self.head(self.ln_f(x))  # (B, T, V)

        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T), ignore_index=-100)
        return logits, loss


def num_parameters(config: GPTConfig) -> int:
    """The number of distinct parameters of ``GPT(config)``, in closed form.

    With ``C = n_embd``, ``F = ff_dim`` (``4C`` by default), ``V = vocab_size`` and
    ``L = n_layer``:

    - embeddings: ``V*C`` (tokens) + ``block_size*C`` (positions);
    - each block: ``4*(C*C + C)`` (q, k, v, out projections with biases)
      + ``2*2*C`` (two LayerNorms) + ``C*F + F + F*C + C`` (feed-forward);
    - the final LayerNorm: ``2*C``;
    - the head: ``V*C``, counted only when it is not tied to the token embedding.

    Example:
        >>> num_parameters(GPTConfig(vocab_size=10, block_size=8, n_layer=1, n_head=2, n_embd=4))
        324
    """
    C = config.n_embd
    ff = config.ff_dim if config.ff_dim is not None else 4 * C
    embeddings = config.vocab_size * C + config.block_size * C
    attention = 4 * (C * C + C)
    norms = 2 * (2 * C)
    feed_forward = C * ff + ff + ff * C + C
    per_block = attention + norms + feed_forward
    head = 0 if config.tie_weights else config.vocab_size * C
    return embeddings + config.n_layer * per_block + 2 * C + head


def get_device() -> torch.device:
    """The best available device: ``cuda``, else ``mps`` (Apple GPUs), else ``cpu``.

    Example:
        >>> get_device().type in ("cuda", "mps", "cpu")
        True
    """
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def train_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    x: torch.Tensor,
    y: torch.Tensor,
    grad_clip: float | None = 1.0,
) -> float:
    """One optimisation step on the batch ``(x, y)``; returns the loss as a float.

    Zeroes the gradients, runs the model with targets, back-propagates, clips the
    total gradient norm to ``grad_clip`` (unless it is ``None``) and steps the
    optimiser. The model's train/eval mode is left as the caller set it.

    Raises:
        ValueError: if ``grad_clip`` is given and not positive.

    Example:
        >>> model = GPT(GPTConfig(vocab_size=10, block_size=8, n_layer=1, n_embd=16))
        >>> optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        >>> x = torch.randint(10, (4, 8))
        >>> isinstance(train_step(model, optimizer, x, x), float)
        True
    """
    if grad_clip is not None and grad_clip <= 0:
        raise ValueError(f"grad_clip must be positive or None, got {grad_clip}")
    optimizer.zero_grad(set_to_none=True)
    _, loss = model(x, y)
    loss.backward()
    if grad_clip is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    return loss.item()


def estimate_loss(
    model: nn.Module,
    data: torch.Tensor,
    block_size: int,
    batch_size: int,
    eval_iters: int,
    generator: torch.Generator | None = None,
) -> float:
    """Mean loss of ``model`` over ``eval_iters`` random batches of ``data``.

    Each batch holds ``batch_size`` windows ``data[i:i+block_size]`` with their
    next-token targets, starts drawn uniformly (with ``generator`` when given). Runs
    without gradients in eval mode, on the model's device, and puts the model back
    in the mode it was in.

    Raises:
        ValueError: if ``eval_iters`` or ``batch_size`` is not positive, or ``data``
            is too short for one window and its target.

    Example:
        >>> model = GPT(GPTConfig(vocab_size=10, block_size=8, n_layer=1, n_embd=16))
        >>> loss = estimate_loss(model, torch.randint(10, (100,)), 8, 4, eval_iters=2)
        >>> 1.5 < loss < 3.5        # about ln(10) = 2.30 for a fresh model
        True
    """
    if eval_iters < 1 or batch_size < 1:
        raise ValueError(f"eval_iters and batch_size must be positive, got {eval_iters} and {batch_size}")
    if len(data) <= block_size:
        raise ValueError(f"data of length {len(data)} is too short for block_size {block_size}")
    device = next(model.parameters()).device
    sample_device = generator.device if generator is not None else torch.device("cpu")
    offsets = torch.arange(block_size, device=data.device)  # (T,)
    was_training = model.training
    model.eval()
    try:
        total = 0.0
        with torch.no_grad():
            for _ in range(eval_iters):
                starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator, device=sample_device)
                ix = starts.to(data.device)[:, None] + offsets  # (B, T) indices into data
                x, y = data[ix].to(device), data[ix + 1].to(device)
                _, loss = model(x, y)
                total += loss.item()
    finally:
        model.train(was_training)
    return total / eval_iters


def train(
    model: nn.Module,
    train_data: torch.Tensor,
    val_data: torch.Tensor,
    *,
    steps: int,
    batch_size: int,
    lr: float,
    device: torch.device | str,
    eval_interval: int,
    eval_iters: int,
    warmup: int,
    generator: torch.Generator | None = None,
    grad_clip: float | None = 1.0,
    weight_decay: float = 0.1,
    progress: bool = True,
    keep_best: bool = False,
) -> dict[str, list]:
    """Train ``model`` with AdamW for ``steps`` steps; returns the history.

    - The model moves to ``device``; the data may stay on the CPU (each batch is
      moved), so the same call runs on CUDA or CPU.
    - Batches: ``batch_size`` random windows of ``model.config.block_size`` tokens of
      ``train_data`` with next-token targets, starts drawn with ``generator`` (a CPU
      ``torch.Generator`` makes a run repeatable).
    - AdamW with betas (0.9, 0.95); weight decay on matrices and embeddings (2-D
      parameters) only, not on biases or LayerNorm parameters.
    - Learning rate at step ``s`` (0-based): linear warm-up ``lr * (s+1) / warmup``
      for ``s < warmup``, then cosine decay
      ``lr * 0.5 * (1 + cos(pi * (s - warmup) / max(1, steps - warmup)))`` towards 0.
    - Evaluation (``estimate_loss`` with ``eval_iters`` batches drawn with ``generator``,
      on the train and the validation data) before training, then after every ``eval_interval`` steps
      and after the last step; a tqdm progress bar shows the losses when ``progress``.
    - ``keep_best``: at each evaluation whose validation loss is the lowest so far (the
      first of equal ones), keep a copy of the model's weights; after the last step, put
      the kept weights back into the model, so that it ends as it was at its best
      evaluation. Without ``keep_best`` it ends with the last step's weights.

    Returns:
        A dict with ``step`` (the number of steps done at each evaluation),
        ``train_loss`` and ``val_loss`` (one entry per evaluation), ``lr`` (the
        learning rate of each step); it may hold more keys (the course's version also
        keeps ``batch_loss``, each step's loss, which no test asks for); with ``keep_best``, also ``best_step`` (the steps done at the kept evaluation, an
        int) and ``best_val_loss`` (its validation loss, a float).

    Raises:
        ValueError: if a count is not positive, ``lr`` is not positive, or ``warmup``
            is outside ``[0, steps]``.

    Example:
        >>> data = torch.tensor([0, 1, 2, 3] * 50)
        >>> model = GPT(GPTConfig(vocab_size=4, block_size=8, n_layer=1, n_embd=16))
        >>> history = train(model, data, data, steps=20, batch_size=8, lr=1e-2, device="cpu",
        ...                 eval_interval=10, eval_iters=2, warmup=5, progress=False)
        >>> history["step"], len(history["lr"])
        ([0, 10, 20], 20)
    """
    counts = {"steps": steps, "batch_size": batch_size, "eval_interval": eval_interval, "eval_iters": eval_iters}
    for name, value in counts.items():
        if value < 1:
            raise ValueError(f"{name} must be positive, got {value}")
    if lr <= 0:
        raise ValueError(f"lr must be positive, got {lr}")
    if not 0 <= warmup <= steps:
        raise ValueError(f"warmup must be in [0, steps={steps}], got {warmup}")
    block_size = model.config.block_size
    for name, data in [("train_data", train_data), ("val_data", val_data)]:
        if len(data) <= block_size:
            raise ValueError(f"{name} of length {len(data)} is too short for block_size {block_size}")

    device = torch.device(device)
    model.to(device)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=lr,
        betas=(0.9, 0.95),
    )

    def lr_at(step: int) -> float:
        if step < warmup:
            return lr * (step + 1) / warmup
        progress_ratio = (step - warmup) / max(1, steps - warmup)
        return lr * 0.5 * (1.0 + math.cos(math.pi * progress_ratio))

    sample_device = generator.device if generator is not None else torch.device("cpu")
    offsets = torch.arange(block_size, device=train_data.device)  # (T,)
    history: dict[str, list] = {"step": [], "train_loss": [], "val_loss": [], "lr": [], "batch_loss": []}

    best: dict = {}  # the kept evaluation: its step, validation loss and a copy of the weights

    def evaluate(step: int) -> None:
        history["step"].append(step)
        history["train_loss"].append(estimate_loss(model, train_data, block_size, batch_size, eval_iters, generator))
        history["val_loss"].append(estimate_loss(model, val_data, block_size, batch_size, eval_iters, generator))
        if keep_best and (not best or history["val_loss"][-1] < best["val_loss"]):
            weights = {name: value.detach().clone() for name, value in model.state_dict().items()}  # a copy
            best.update(step=step, val_loss=history["val_loss"][-1], weights=weights)

    model.train()
    evaluate(0)
    bar = tqdm(range(steps), disable=not progress, desc="training")
    for step in bar:
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step)
        history["lr"].append(lr_at(step))

        starts = torch.randint(len(train_data) - block_size, (batch_size,), generator=generator, device=sample_device)
        ix = starts.to(train_data.device)[:, None] + offsets  # (B, T)
        x, y = train_data[ix].to(device), train_data[ix + 1].to(device)
        history["batch_loss"].append(train_step(model, optimizer, x, y, grad_clip))

        done = step + 1
        if done % eval_interval == 0 or done == steps:
            evaluate(done)
            bar.set_postfix(train=f"{history['train_loss'][-1]:.3f}", val=f"{history['val_loss'][-1]:.3f}")
    bar.close()
    if keep_best:
        model.load_state_dict(best["weights"])
        history["best_step"], history["best_val_loss"] = best["step"], best["val_loss"]
    return history
