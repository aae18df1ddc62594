"""The numbers 03's notebook states, each with the measurement that makes it true
(``autograder.authoring.claims``; measured by ``test_claims.py``): the attention-weights
demonstration of section 4 (deterministic: no random draw), the slowest pair's period, and
the reference run that the rubric of the written question ``scaling`` reports (section 4's
saturation table, seeded as its cell is, on one thread: well under a second of CPU)."""

import functools
import math

import torch
import torch.nn.functional as F

from autograder.authoring.claims import Claim, rounded
from solutions.attention import scaled_dot_product_attention, sinusoidal_positions


@functools.cache
def _demo() -> dict[str, float]:
    """The demonstration's weights, as the notebook's cell makes them."""
    words = "the cat sat on the mat and the dog sat on the cat".split()
    types = sorted(set(words))
    ids = torch.tensor([types.index(w) for w in words])
    n = len(words)
    x = torch.cat([3.0 * F.one_hot(ids, num_classes=16).float(), 1.5 * sinusoidal_positions(n, 16)], dim=-1)
    _, w = scaled_dot_product_attention(x, x, x)
    same = ids[:, None] == ids[None, :]
    itself = torch.eye(n, dtype=torch.bool)
    distance = (torch.arange(n)[:, None] - torch.arange(n)[None, :]).abs()
    other = ~same
    rest = torch.where(other, w, 0.0).sum(-1)
    return {
        "self_is_largest": float((w.argmax(-1) == torch.arange(n)).all()),
        "self_min": w[itself].min().item(),
        "self_max": w[itself].max().item(),
        "copies": w[same & ~itself].mean().item(),
        "next": w[other & (distance == 1)].mean().item(),
        "further": w[other & (distance > 1)].mean().item(),
        "rest_min": 100 * rest.min().item(),
        "rest_max": 100 * rest.max().item(),
    }


def _measure(key: str):
    return lambda: _demo()[key]


WIDTHS = (4, 64, 512)  # the table's d_k


@functools.cache
def _saturation() -> dict[str, list[float]]:
    """Section 4's saturation table, as its cell makes it: per width, the spread of the raw
    scores (``"std"``), the mean largest weight and the mean gradient norm reaching the scores,
    unscaled and scaled by 1/sqrt(d_k)."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    table = {key: [] for key in ("std", "weight", "weight_scaled", "gradient", "gradient_scaled")}
    for d_k in WIDTHS:
        q, k = torch.randn(2000, 1, d_k), torch.randn(2000, 12, d_k)
        raw = (q @ k.transpose(-2, -1)).squeeze(1)  # 2000 queries, 12 keys each
        table["std"].append(raw.std().item())
        for suffix, s in (("", raw), ("_scaled", raw / math.sqrt(d_k))):
            s = s.clone().requires_grad_(True)
            w = torch.softmax(s, dim=-1)
            (w * torch.randn_like(w)).sum().backward()  # the cell's loss that depends on the weights
            table["weight" + suffix].append(w.max(dim=-1).values.mean().item())
            table["gradient" + suffix].append(s.grad.norm(dim=-1).mean().item())
    return table


def _at(key: str, d_k: int):
    return lambda: _saturation()[key][WIDTHS.index(d_k)]


def _over_widths(key: str, reduce):
    return lambda: reduce(_saturation()[key])


STD = "the standard deviation of the raw scores is 2.0, 8.0 and 22.8"
WEIGHT = "the largest weight goes 0.47, 0.85, 0.95 unscaled against about 0.28 to 0.29 scaled"
GRADIENT = "the gradient size 0.29, 0.14, 0.056 unscaled against about 0.30 to 0.31 scaled"


CLAIMS = [
    Claim("Every word puts its largest weight on itself", _measure("self_is_largest"), low=1, high=1),
    Claim("on itself (0.31 to 0.46)", _measure("self_min"), low=0.305, high=0.315),
    Claim("on itself (0.31 to 0.46)", _measure("self_max"), low=0.455, high=0.465),
    Claim("(0.13 on average)", _measure("copies"), low=0.125, high=0.135),
    Claim("gets 0.066 on average", _measure("next"), low=0.0655, high=0.0665),
    Claim("the 0.034 of a different word further away", _measure("further"), low=0.0335, high=0.0345),
    Claim("take 27 % to 56 % of each row", _measure("rest_min"), low=26.5, high=27.5),
    Claim("take 27 % to 56 % of each row", _measure("rest_max"), low=55.5, high=56.5),
    Claim("$2\\pi \\cdot 5623$ for the `d = 32`", lambda: 10000 ** (30 / 32), low=5622.5, high=5623.5),
    Claim("(2, 8, 22.6: the table's spread)", lambda: math.sqrt(512), low=22.55, high=22.65),  # sqrt(d_k)
    # the rubric of `scaling`: the saturation table
    *(rounded(STD, value, 1, _at("std", d_k)) for d_k, value in zip(WIDTHS, (2.0, 8.0, 22.8))),
    *(rounded(WEIGHT, value, 2, _at("weight", d_k)) for d_k, value in zip(WIDTHS, (0.47, 0.85, 0.95))),
    *(
        rounded(GRADIENT, value, d, _at("gradient", d_k))
        for d_k, value, d in zip(WIDTHS, (0.29, 0.14, 0.056), (2, 2, 3))
    ),
    # "about 0.28 to 0.29" (and 0.30 to 0.31) over the three widths: held to rounding, the
    # least and the largest of the three (0.278 to 0.291; 0.303 to 0.309) round to the ends
    rounded(WEIGHT, 0.28, 2, _over_widths("weight_scaled", min)),
    rounded(WEIGHT, 0.29, 2, _over_widths("weight_scaled", max)),
    rounded(GRADIENT, 0.30, 2, _over_widths("gradient_scaled", min)),
    rounded(GRADIENT, 0.31, 2, _over_widths("gradient_scaled", max)),
]
