"""The numbers 01's notebook states, each with the measurement that makes it true
(``autograder.authoring.claims``; measured by ``test_claims.py``): the corpora's sizes, and the
reference figures that the rubric of the written question ``context`` reports, from section 6's
n-gram demonstration at its full size (200,000 training and 20,000 validation characters of Tiny
Shakespeare; deterministic: counting, no random draw), in about 1 s of CPU.
"""

import functools

import torch

from autograder.authoring.claims import Claim, rounded
from solutions.data import load_corpus
from solutions.tokenisation import NGramLM, build_vocab, encode, train_val_split

ORDERS = (1, 2, 3, 4, 5)  # the n of section 6's plot


def _shakespeare() -> str:
    return load_corpus("shakespeare", offline_ok=False)


@functools.cache
def _ids() -> tuple[int, list[int], list[int]]:
    """The vocabulary's size and the training and validation ids, as section 6's cell makes them."""
    text = _shakespeare()
    stoi, _ = build_vocab(text)
    train_data, val_data = train_val_split(torch.tensor(encode(text, stoi), dtype=torch.long))
    return len(stoi), train_data[:200_000].tolist(), val_data[:20_000].tolist()


@functools.cache
def _model(n: int, alpha: float) -> NGramLM:
    vocab, train_ids, _ = _ids()
    return NGramLM(n, vocab, alpha).fit(train_ids)


@functools.cache
def _perplexities(alpha: float) -> tuple[float, ...]:
    """The validation perplexity for each of ``ORDERS``: one curve of the plot."""
    return tuple(_model(n, alpha).perplexity(_ids()[2]) for n in ORDERS)


def _perplexity(alpha: float, n: int):
    return lambda: _perplexities(alpha)[ORDERS.index(n)]


def _best_order(alpha: float):
    return lambda: ORDERS[min(range(len(ORDERS)), key=_perplexities(alpha).__getitem__)]


@functools.cache
def _five_gram_contexts() -> dict[str, float]:
    """The 4-character contexts of the 5-gram model: how many occur in training, and the share of
    validation positions whose context was seen never (``c(h) = 0``) or fewer than V times."""
    vocab, _, val_ids = _ids()
    seen = _model(5, 0.01).context_counts
    counts = [seen.get(tuple(val_ids[t - 4 : t]), 0) for t in range(4, len(val_ids))]
    return {
        "occur": len(seen),
        "unseen": 100 * sum(c == 0 for c in counts) / len(counts),
        "rare": sum(c < vocab for c in counts) / len(counts),  # the never seen included, as the text says
    }


ALPHA_1 = "`alpha = 1` gives 28.8, 13.4, 10.6, 12.0, 18.3 for n = 1..5"
ALPHA_001 = "`alpha = 0.01` gives 28.8, 15.0, 12.0, 9.75, 11.6"
MINIMA = "a minimum (around n = 3 for `alpha = 1`, n = 4 for `alpha = 0.01`)"

CLAIMS = [
    Claim("*Tiny Shakespeare*, about a million characters", lambda: len(_shakespeare()), low=0.9e6, high=1.2e6),
    Claim("about 65 symbols for Shakespeare", lambda: len(set(_shakespeare())), low=60, high=70),
    # measured: 424,665 characters on Python 3.11.7, 436,200 on 3.12.1, 452,166 on 3.13.0 (100, 100, 101 symbols)
    Claim("(425,000 to 452,000 characters", lambda: len(load_corpus("default")), low=420_000, high=455_000),
    Claim("about 100 distinct symbols)", lambda: len(set(load_corpus("default"))), low=95, high=105),
    # the rubric of the written question context: section 6's plot
    *(rounded(ALPHA_1, v, 1, _perplexity(1.0, n)) for n, v in zip(ORDERS, (28.8, 13.4, 10.6, 12.0, 18.3))),
    *(rounded(ALPHA_001, v, 1, _perplexity(0.01, n)) for n, v in zip(ORDERS, (28.8, 15.0, 12.0))),
    rounded(ALPHA_001, 9.75, 2, _perplexity(0.01, 4)),
    rounded(ALPHA_001, 11.6, 1, _perplexity(0.01, 5)),
    Claim(MINIMA, _best_order(1.0), low=3, high=3),  # "around": the lowest point of the curve is exactly there
    Claim(MINIMA, _best_order(0.01), low=4, high=4),
    Claim("with V = 65 there are", lambda: _ids()[0], low=65, high=65),
    # "about": 1 % either side of 25,500, 1 point either side of 17 %, 70 % to 80 % for three quarters
    Claim("only about 25,500 of them occur", lambda: _five_gram_contexts()["occur"], low=25_250, high=25_750),
    Claim("At n = 5 about 17 % of validation", lambda: _five_gram_contexts()["unseen"], low=16, high=18),
    Claim(
        "about three quarters (those included) one seen fewer than 65 times",
        lambda: _five_gram_contexts()["rare"],
        low=0.70,
        high=0.80,
    ),
]
