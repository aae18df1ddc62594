"""The numbers 06's notebook states, each with the measurement that makes it true
(``autograder.authoring.claims``; measured by ``test_claims.py``): the reference run that the
rubric of the written question ``prenorm`` reports, section 6's two experiments at the sizes
the notebook names (32 blocks; 8-block stacks trained for 100 steps). Both are seeded and run
on one thread, in about 10 s of CPU together.
"""

import functools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder.authoring.claims import Claim, rounded
from solutions.blocks import TransformerBlock
from solutions.masking import causal_mask

DEPTHS = (2, 4, 8, 16, 32)  # the stacks of the right-hand plot


@functools.cache
def _gradients() -> dict[bool, dict[str, list[float]]]:
    """Per order (``norm_first``): each block's gradient norm in the 32-block stack
    (``"profile"``) and the top block's for each of ``DEPTHS`` (``"top"``), as section 6's
    first cell measures them."""
    torch.set_num_threads(1)
    C, H, T, B, V = 64, 4, 32, 8, 65
    torch.manual_seed(0)
    embed, head = nn.Embedding(V, C), nn.Linear(C, V)
    idx, targets = torch.randint(0, V, (B, T)), torch.randint(0, V, (B, T))

    def norms(depth: int, norm_first: bool) -> list[float]:
        torch.manual_seed(0)  # the same weights for both orders
        stack = nn.ModuleList(TransformerBlock(C, H, 4 * C, norm_first=norm_first) for _ in range(depth))
        x = embed(idx)
        for block in stack:
            x = block(x, mask=causal_mask(T))
        if norm_first:
            x = F.layer_norm(x, (C,))
        F.cross_entropy(head(x).view(-1, V), targets.view(-1)).backward()
        return [torch.cat([p.grad.flatten() for p in block.parameters()]).norm().item() for block in stack]

    return {nf: {"profile": norms(32, nf), "top": [norms(d, nf)[-1] for d in DEPTHS]} for nf in (True, False)}


@functools.cache
def _late_loss(norm_first: bool, lr: float = 1e-2, warmup: int = 0) -> float:
    """The mean training loss of the last 10 of 100 steps of section 6's toy task (8 blocks of
    width 32, Adam at ``lr``), with a linear warm-up over ``warmup`` steps when it is not 0."""
    torch.set_num_threads(1)
    vocab, width, T = 16, 32, 16
    torch.manual_seed(0)
    emb = nn.Embedding(vocab, width)
    pos = nn.Parameter(0.1 * torch.randn(T, width))
    stack = nn.ModuleList(TransformerBlock(width, 4, 4 * width, norm_first=norm_first) for _ in range(8))
    final = nn.LayerNorm(width) if norm_first else nn.Identity()
    out = nn.Linear(width, vocab)
    opt = torch.optim.Adam([*emb.parameters(), pos, *stack.parameters(), *final.parameters(), *out.parameters()], lr=lr)
    data = torch.Generator().manual_seed(1)
    losses = []
    for step in range(100):
        if warmup:
            for group in opt.param_groups:
                group["lr"] = lr * min(1.0, (step + 1) / warmup)
        idx = torch.randint(0, vocab, (16, T), generator=data)
        target = torch.roll(idx, 3, dims=1)
        target[:, :3] = -100
        x = emb(idx) + pos
        for block in stack:
            x = block(x, mask=causal_mask(T))
        loss = F.cross_entropy(out(final(x)).view(-1, vocab), target.view(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return sum(losses[-10:]) / 10


def _profile(norm_first: bool, at):
    return lambda: at(_gradients()[norm_first]["profile"])


def _top(norm_first: bool, depth: int):
    return lambda: _gradients()[norm_first]["top"][DEPTHS.index(depth)]


PRE_FALL = "pre-norm block gradients fall from 0.28 (block 1) to 0.17 (block 32)"
POST_RISE = "post-norm ones rise from 0.28 to about 0.38 (near block 23) and end at 0.34 (block 32)"
PRE_TOP = "is 0.25, 0.24, 0.23, 0.21, 0.17 (pre-norm)"
POST_TOP = "against 0.26, 0.26, 0.28, 0.33, 0.34 (post-norm)"

CLAIMS = [
    rounded(PRE_FALL, 0.28, 2, _profile(True, lambda norms: norms[0])),
    rounded(PRE_FALL, 0.17, 2, _profile(True, lambda norms: norms[-1])),
    rounded(POST_RISE, 0.28, 2, _profile(False, lambda norms: norms[0])),
    Claim(POST_RISE, _profile(False, max), low=0.37, high=0.39),
    Claim(POST_RISE, _profile(False, lambda norms: norms.index(max(norms)) + 1), low=21, high=25),
    rounded(POST_RISE, 0.34, 2, _profile(False, lambda norms: norms[-1])),
    *(rounded(PRE_TOP, value, 2, _top(True, depth)) for depth, value in zip(DEPTHS, (0.25, 0.24, 0.23, 0.21, 0.17))),
    *(rounded(POST_TOP, value, 2, _top(False, depth)) for depth, value in zip(DEPTHS, (0.26, 0.26, 0.28, 0.33, 0.34))),
    Claim("after 100 steps the pre-norm stack's loss is about 2.0", lambda: _late_loss(True), low=1.9, high=2.1),
    Claim(
        "the post-norm one's stays at chance, $\\ln 16 \\approx 2.77$",
        lambda: _late_loss(False) - math.log(16),
        low=-0.05,
        high=0.05,
    ),
    Claim("reaches about 2.3 with a 50-step linear warm-up", lambda: _late_loss(False, warmup=50), low=2.2, high=2.4),
    Claim("or a learning rate of 1e-3 (mean of the last 10 of 100 steps)", lambda: _late_loss(False, 1e-3), 2.2, 2.4),
]
