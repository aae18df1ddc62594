"""The numbers 03's notebook states, each with the measurement that makes it true
(``autograder.authoring.claims``; measured by ``test_claims.py``): the attention-weights
demonstration of section 4 (deterministic: no random draw) and the slowest pair's period."""

import functools

import torch
import torch.nn.functional as F

from autograder.authoring.claims import Claim
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
]
