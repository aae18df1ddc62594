"""The numbers 04's notebook states, each with the measurement that makes it true
(``autograder.authoring.claims``; measured by ``test_claims.py``): how many distinct characters
the first 200,000 of each corpus hold, which sets the chance level of section 5's training, and
the reference run that the rubric of the written question ``cheating`` reports: section 5's two
trainings at the full size (200 steps on the first 200,000 characters of Tiny Shakespeare), seeded
as the notebook's cell seeds them and run on one thread, in about 3 s of CPU.

Measured: 96 and 62 distinct characters on Python 3.11.7, 3.12.1 and 3.13.0 (the default corpus is
built from the documentation of the Python that runs it).
"""

import functools
import math
from collections import Counter

import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder.authoring.claims import Claim, rounded
from solutions.attention import TokenPositionEmbedding, scaled_dot_product_attention
from solutions.data import load_corpus
from solutions.masking import causal_mask, lm_loss, shift_right

STRETCH = 200_000  # the characters section 5 trains on


def _distinct(name: str) -> int:
    return len(set(load_corpus(name, offline_ok=False)[:STRETCH]))  # Shakespeare itself, never the fallback


def _uniform() -> float:
    """The loss of a uniform guess over Shakespeare's characters in that stretch, in nats."""
    return math.log(_distinct("shakespeare"))


@functools.cache
def _reference_run() -> dict[bool, dict[str, float]]:
    """Per ``masked``: the mean training loss of the last 50 of 200 steps, the loss on the 64 new
    windows in one pass and prefix by prefix (honest), and the share of the 32-character sample
    taken by its most frequent character, as section 5's cell measures them."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    text = load_corpus("shakespeare", offline_ok=False)[:STRETCH]
    chars = sorted(set(text))
    char_id = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([char_id[c] for c in text])
    V, T, C = len(chars), 32, 48
    START = V

    class TinyLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = TokenPositionEmbedding(V + 1, C, T)
            self.qkv = nn.Linear(C, 3 * C)
            self.ff = nn.Sequential(nn.LayerNorm(C), nn.Linear(C, 4 * C), nn.GELU(), nn.Linear(4 * C, C))
            self.head = nn.Sequential(nn.LayerNorm(C), nn.Linear(C, V))

        def forward(self, inputs, mask=None):
            h = self.embed(inputs)
            q, k, v = self.qkv(h).chunk(3, dim=-1)
            h = h + scaled_dot_product_attention(q, k, v, mask)[0]
            return self.head(h + self.ff(h))

    def windows(n, generator):
        starts = torch.randint(0, len(data) - T, (n,), generator=generator)
        targets = torch.stack([data[s : s + T] for s in starts])
        return shift_right(targets, START), targets

    def train(masked, steps=200):
        torch.manual_seed(0)
        model, g = TinyLM(), torch.Generator().manual_seed(0)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        mask = causal_mask(T) if masked else None
        losses = []
        for _ in range(steps):
            inputs, targets = windows(24, g)
            loss = lm_loss(model(inputs, mask), targets)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return model, losses

    @torch.no_grad()
    def new_window_losses(model, masked):
        inputs, targets = windows(64, torch.Generator().manual_seed(1))
        one_pass = lm_loss(model(inputs, causal_mask(T) if masked else None), targets).item()
        honest = 0.0
        for n in range(1, T + 1):
            logits = model(inputs[:, :n], causal_mask(n) if masked else None)[:, -1]
            honest += F.cross_entropy(logits, targets[:, n - 1]).item()
        return one_pass, honest / T

    @torch.no_grad()
    def sample(model, masked, length=T, seed=2):
        g = torch.Generator().manual_seed(seed)
        inputs = torch.tensor([[START]])
        out = []
        for n in range(1, length + 1):
            logits = model(inputs, causal_mask(n) if masked else None)[0, -1]
            token = torch.multinomial(torch.softmax(logits, -1), 1, generator=g)
            out.append(chars[token.item()])
            inputs = torch.cat([inputs, token[None]], dim=1)
        return "".join(out)

    runs = {masked: train(masked) for masked in (True, False)}  # the cell's order: masked first
    results = {}
    for masked, (model, losses) in runs.items():
        one_pass, honest = new_window_losses(model, masked)
        text = sample(model, masked)
        results[masked] = {
            "training": sum(losses[-50:]) / 50,
            "one_pass": one_pass,
            "honest": honest,
            "repeated": Counter(text).most_common(1)[0][1] / len(text),
        }
    torch.set_num_threads(threads)
    return results


def _run(masked: bool, key: str):
    return lambda: _reference_run()[masked][key]


MASKED = "masked: training 2.40, one pass 2.40, honest 2.40"
UNMASKED = "unmasked: training 0.14, one pass 0.13, honest 5.70"

CLAIMS = [
    Claim("the documentation has about 96 distinct characters in that stretch", lambda: _distinct("default"), 93, 99),
    Claim("Shakespeare 62, so", lambda: _distinct("shakespeare"), low=62, high=62),
    Claim("a uniform guess costs $\\ln 62 \\approx 4.13$ nats", _uniform, low=4.125, high=4.135),
    # the rubric of the written question cheating: section 5's reference run
    rounded(MASKED, 2.40, 2, _run(True, "training")),
    rounded(MASKED, 2.40, 2, _run(True, "one_pass")),
    rounded(MASKED, 2.40, 2, _run(True, "honest")),
    rounded(UNMASKED, 0.14, 2, _run(False, "training")),
    rounded(UNMASKED, 0.13, 2, _run(False, "one_pass")),
    rounded(UNMASKED, 5.70, 2, _run(False, "honest")),
    rounded("(5.70 > 4.13)", 5.70, 2, _run(False, "honest")),
    Claim("(5.70 > 4.13)", _uniform, low=4.125, high=4.135),
    # "repeats one character": that character makes up at least 90 % of the sample (31 of its 32 here)
    Claim("a sample that repeats one character", _run(False, "repeated"), low=0.9, high=1),
]
