"""nanoGPT's CPU recipe for Tiny Shakespeare, re-implemented as the benchmark's baseline.

The recipe (nanoGPT's README, "I only have a macbook"):
``train.py config/train_shakespeare_char.py --device=cpu --compile=False --eval_iters=20
--log_interval=1 --block_size=64 --batch_size=12 --n_layer=4 --n_head=4 --n_embd=128
--max_iters=2000 --lr_decay_iters=2000 --dropout=0.0``

What that run does, and this file does the same:

- model (nanoGPT's ``model.py``): token + position embeddings, pre-norm blocks with a
  fused ``c_attn`` (q, k, v in one ``Linear``), ``F.scaled_dot_product_attention``
  with ``is_causal=True``, a 4x MLP with exact GELU, ``F.layer_norm``, no biases
  (``bias=False``), the output head tied to the token embedding, GPT-2 initialisation
  (residual projections ``c_proj`` scaled by ``1/sqrt(2 n_layer)``), float32 on CPU;
- data: character ids of Tiny Shakespeare, the first 90 % for training and the last
  10 % for validation; each batch is ``batch_size`` random windows (``torch.randint``
  under ``torch.manual_seed(1337)``), the next batch fetched right after the forward;
- optimiser: AdamW (betas 0.9, 0.99; weight decay 0.1 on 2-D parameters only),
  lr 1e-3 with 100 warm-up iterations then a cosine to 1e-4 at iteration 2000, gradient
  clipping at 1.0; iterations 0 .. 2000 (2001 steps, ``while iter_num <= max_iters``);
- evaluation every 250 iterations (20 batches per split), the checkpoint saved when the
  validation loss improves (``torch.save`` of model, optimiser and arguments), and the
  loss printed every iteration (``log_interval=1``, one ``loss.item()`` per step).

``run(train_ids, val_ids, ...)`` trains and returns the history; the benchmark calls it
with a ``probe`` that judges the model with its own evaluator (its time is excluded from
the clock here, as it is from the preset's).
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Recipe:
    """The CPU recipe's settings (nanoGPT's defaults overridden by its README command)."""

    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    block_size: int = 64
    dropout: float = 0.0
    bias: bool = False
    batch_size: int = 12
    max_iters: int = 2000
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup_iters: int = 100
    lr_decay_iters: int = 2000
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float = 1.0
    eval_interval: int = 250
    eval_iters: int = 20
    log_interval: int = 1
    seed: int = 1337


class LayerNorm(nn.Module):
    """LayerNorm with an optional bias (nanoGPT's)."""

    def __init__(self, dim: int, bias: bool) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, r: Recipe) -> None:
        super().__init__()
        self.c_attn = nn.Linear(r.n_embd, 3 * r.n_embd, bias=r.bias)
        self.c_proj = nn.Linear(r.n_embd, r.n_embd, bias=r.bias)
        self.resid_dropout = nn.Dropout(r.dropout)
        self.n_head, self.dropout = r.n_head, r.dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
        return self.resid_dropout(self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C)))


class MLP(nn.Module):
    def __init__(self, r: Recipe) -> None:
        super().__init__()
        self.c_fc = nn.Linear(r.n_embd, 4 * r.n_embd, bias=r.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * r.n_embd, r.n_embd, bias=r.bias)
        self.dropout = nn.Dropout(r.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, r: Recipe) -> None:
        super().__init__()
        self.ln_1, self.attn = LayerNorm(r.n_embd, r.bias), CausalSelfAttention(r)
        self.ln_2, self.mlp = LayerNorm(r.n_embd, r.bias), MLP(r)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class NanoGPT(nn.Module):
    """nanoGPT's ``GPT``; ``forward(idx, targets)`` returns ``(logits, loss)``."""

    def __init__(self, r: Recipe, vocab_size: int) -> None:
        super().__init__()
        self.block_size = r.block_size
        self.wte = nn.Embedding(vocab_size, r.n_embd)
        self.wpe = nn.Embedding(r.block_size, r.n_embd)
        self.drop = nn.Dropout(r.dropout)
        self.h = nn.ModuleList([Block(r) for _ in range(r.n_layer)])
        self.ln_f = LayerNorm(r.n_embd, r.bias)
        self.lm_head = nn.Linear(r.n_embd, vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * r.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        T = idx.size(1)
        pos = torch.arange(T, dtype=torch.long, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        if targets is None:
            return self.lm_head(x[:, [-1], :]), None
        logits = self.lm_head(x)
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)


def run(
    train_ids: torch.Tensor,
    val_ids: torch.Tensor,
    vocab_size: int,
    recipe: Recipe | None = None,
    probe: Callable[[int, nn.Module], None] | None = None,
    probe_every: int = 0,
    verbose: bool = False,
) -> dict:
    """Train with the recipe; returns ``{"train_seconds", "tokens_per_second", "evals", ...}``.

    ``probe(iter_num, model)`` is called before the step of every iteration that is a
    multiple of ``probe_every`` and after the last one; the time it takes is not
    counted. ``evals`` lists nanoGPT's own ``(iter, train loss, val loss)`` estimates.
    """
    r = recipe or Recipe()
    torch.manual_seed(r.seed)
    train = np.asarray(train_ids, dtype=np.uint16)
    val = np.asarray(val_ids, dtype=np.uint16)
    out_dir = tempfile.mkdtemp(prefix="nanogpt-")

    def get_batch(split: str) -> tuple[torch.Tensor, torch.Tensor]:
        data = train if split == "train" else val
        ix = torch.randint(len(data) - r.block_size, (r.batch_size,))
        x = torch.stack([torch.from_numpy(data[i : i + r.block_size].astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy(data[i + 1 : i + 1 + r.block_size].astype(np.int64)) for i in ix])
        return x, y

    model = NanoGPT(r, vocab_size)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": r.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=r.lr,
        betas=(r.beta1, r.beta2),
    )

    @torch.no_grad()
    def estimate_loss() -> dict[str, float]:
        out = {}
        model.eval()
        for split in ("train", "val"):
            losses = torch.zeros(r.eval_iters)
            for k in range(r.eval_iters):
                _, loss = model(*get_batch(split))
                losses[k] = loss.item()
            out[split] = losses.mean().item()
        model.train()
        return out

    def get_lr(it: int) -> float:
        if it < r.warmup_iters:
            return r.lr * (it + 1) / (r.warmup_iters + 1)
        if it > r.lr_decay_iters:
            return r.min_lr
        ratio = (it - r.warmup_iters) / (r.lr_decay_iters - r.warmup_iters)
        return r.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (r.lr - r.min_lr)

    excluded = 0.0  # seconds spent in the probe

    def call_probe(it: int) -> None:
        nonlocal excluded
        if probe is not None:
            t = time.perf_counter()
            probe(it, model)
            excluded += time.perf_counter() - t

    evals, best_val = [], 1e9
    start = time.perf_counter()
    X, Y = get_batch("train")
    iter_num = 0
    while True:
        if probe_every and iter_num % probe_every == 0:
            call_probe(iter_num)
        lr = get_lr(iter_num)
        for group in optimizer.param_groups:
            group["lr"] = lr
        if iter_num % r.eval_interval == 0:
            losses = estimate_loss()
            evals.append((iter_num, losses["train"], losses["val"]))
            if verbose:
                print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
            if losses["val"] < best_val:
                best_val = losses["val"]
                if iter_num > 0:
                    checkpoint = {
                        "model": model.state_dict(),
                        "optimizer": optimizer.state_dict(),
                        "iter_num": iter_num,
                        "best_val_loss": best_val,
                        "config": vars(r),
                    }
                    torch.save(checkpoint, os.path.join(out_dir, "ckpt.pt"))
        _, loss = model(X, Y)
        X, Y = get_batch("train")
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), r.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if iter_num % r.log_interval == 0:
            lossf = loss.item()
            if verbose and iter_num % 100 == 0:
                print(f"iter {iter_num}: loss {lossf:.4f}")
        iter_num += 1
        if iter_num > r.max_iters:
            break
    if probe_every:
        call_probe(iter_num)
    seconds = time.perf_counter() - start - excluded
    steps = r.max_iters + 1
    return {
        "train_seconds": seconds,
        "steps": steps,
        "tokens_per_second": steps * r.batch_size * r.block_size / seconds,
        "evals": evals,
        "model": model,
    }
