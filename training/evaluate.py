"""Validation losses: a quick estimate during training and an exact pass at the end.

Both share their windows out over the processes of a distributed run and sum the
losses with ``all_reduce``, so one process and N processes measure the same thing.
"""

from __future__ import annotations

from contextlib import nullcontext

import torch
import torch.nn as nn

from training.ddp import DistInfo, all_sum


def _loss_sum(model: nn.Module, x: torch.Tensor, y: torch.Tensor, autocast) -> torch.Tensor:
    """Summed cross-entropy of the windows ``x`` with targets ``y`` (a 0-d float32 tensor).

    ``model(x, y)`` must return ``(logits, mean loss)``, as the course's GPT and nanoGPT's do.
    """
    with autocast:
        _, loss = model(x, y)
    return loss.float() * y.numel()


@torch.no_grad()
def estimate_loss(
    model: nn.Module,
    data: torch.Tensor,
    block_size: int,
    batch_size: int,
    eval_iters: int,
    seed: int,
    info: DistInfo = DistInfo(),
    autocast=None,
) -> float:
    """Mean loss over ``eval_iters`` batches of ``batch_size`` random windows of ``data``.

    The windows are drawn from a generator seeded with ``seed``, so every call with the
    same seed judges the same windows (a less noisy curve), whatever the process count.
    """
    autocast = autocast or nullcontext()
    device = data.device
    g = torch.Generator().manual_seed(seed)
    starts = torch.randint(len(data) - block_size, (eval_iters * batch_size,), generator=g)
    mine = starts.tensor_split(info.world_size)[info.rank] if info.enabled else starts
    was_training = model.training
    model.eval()
    total = torch.zeros((), device=device)
    offsets = torch.arange(block_size, device=device)
    for chunk in mine.split(batch_size):
        ix = chunk.to(device)[:, None] + offsets  # (b, T)
        total += _loss_sum(model, data[ix], data[ix + 1], autocast)
    model.train(was_training)
    return (all_sum(total, info) / (len(starts) * block_size)).item()


@torch.no_grad()
def full_loss(
    model: nn.Module,
    data: torch.Tensor,
    block_size: int,
    batch_size: int = 64,
    max_tokens: int | None = 2_000_000,
    info: DistInfo = DistInfo(),
    autocast=None,
) -> float:
    """The mean loss over the whole of ``data`` cut into non-overlapping windows.

    Every token (but the very first) is predicted once, from the tokens before it in its
    window; this is the exact quantity that random-window estimates approximate. Only
    the first ``max_tokens`` tokens are judged (``None``: all of them).

    Raises:
        ValueError: if ``data`` is too short for one window and its target.
    """
    if len(data) <= block_size:
        raise ValueError(f"data of length {len(data)} is too short for block_size {block_size}")
    autocast = autocast or nullcontext()
    n = (len(data) - 1) // block_size
    if max_tokens is not None:
        n = max(1, min(n, max_tokens // block_size))
    starts = torch.arange(n) * block_size
    mine = starts.tensor_split(info.world_size)[info.rank] if info.enabled else starts
    was_training = model.training
    model.eval()
    device = data.device
    total = torch.zeros((), device=device)
    offsets = torch.arange(block_size, device=device)
    for chunk in mine.split(batch_size):
        ix = chunk.to(device)[:, None] + offsets
        total += _loss_sum(model, data[ix], data[ix + 1], autocast)
    model.train(was_training)
    return (all_sum(total, info) / (n * block_size)).item()
