"""Hidden tests of stage 01_tokenisation (run only when grading; never shipped to students).

Expected values marked REFERENCE are the reference solution's outputs on the same
probe, saved at build time. Tolerances are set per test: exact for integer and
string results; 1e-9 relative for probabilities computed in double precision by
Python floats; 1e-5 relative plus 1e-7 absolute for float32 tables.
"""

import collections

import torch

from autograder.kit import REFERENCE, Hint, Suite, catch, close, close_number, equal, generator, raises, satisfies

suite = Suite(public=False)

SONNET = (
    "Shall I compare thee to a summer's day?\n"
    "Thou art more lovely and more temperate:\n"
    "Rough winds do shake the darling buds of May,\n"
    "And summer's lease hath all too short a date; -- 18!"
)


_SONNET_STOI = {c: i for i, c in enumerate(sorted(set(SONNET)))}


def _one_based(got, expected):
    return isinstance(got, tuple) and isinstance(got[0], dict) and min(got[0].values(), default=0) == 1


def _first_seen(got, expected):
    return isinstance(got, tuple) and isinstance(got[0], dict) and list(got[0]) == list(dict.fromkeys(SONNET))


@suite.case(
    "build_vocab",
    "a passage with capitals, punctuation and newlines",
    points=2,
    check=equal([
        Hint(_one_based, "ids start at 0 in this course"),
        Hint(_first_seen, "ids follow sorted order, not the order in which characters first appear"),
    ]),
    expected=REFERENCE,
)
def _(ns):
    stoi, itos = ns.build_vocab(SONNET)
    return dict(stoi), dict(itos)


@suite.case("build_vocab", "non-ASCII characters and a single-character text", points=1, check=equal(), expected=REFERENCE)
def _(ns):
    return [tuple(dict(m) for m in ns.build_vocab("naïve café — ünïcode")), tuple(dict(m) for m in ns.build_vocab("aaaa"))]


@suite.case("encode_decode", "encode gives the reference ids", points=1, check=equal(), expected=REFERENCE)
def _(ns):
    return list(ns.encode("thee summer's day", _SONNET_STOI))


@suite.case("encode_decode", "decode accepts a 1-D LongTensor", points=1, check=equal(), expected="more lovely")
def _(ns):
    itos = {i: c for c, i in _SONNET_STOI.items()}
    return ns.decode(torch.tensor([_SONNET_STOI[c] for c in "more lovely"], dtype=torch.long), itos)


@suite.case("encode_decode", "the ValueError names the unknown character", points=1, check=satisfies(
    lambda got: None if got["raised"] == "ValueError" and "Z" in got["message"] else
    f"expected a ValueError whose message names 'Z', got {got['raised']}: {got['message']!r}"))
def _(ns):
    return catch(ns.encode, "abZc", {"a": 0, "b": 1, "c": 2})


@suite.case(
    "train_val_split",
    "lengths where rounding matters (15 items, 10%) and val_fraction=0",
    points=2,
    check=equal([Hint(lambda got, exp: len(got[0][0]) == 14, "count the training items with int(len(data) * (1 - val_fraction)), which rounds down")]),
    expected=([list(range(13)), [13, 14]], [list(range(7)), []]),
)
def _(ns):
    out = []
    for n, frac in ((15, 0.1), (7, 0.0)):
        train, val = ns.train_val_split(torch.arange(n), val_fraction=frac)
        out.append([train.tolist(), val.tolist()])
    return tuple(out)


@suite.case("train_val_split", "keeps order and dtype of a long tensor", points=1, check=equal(), expected=REFERENCE)
def _(ns):
    data = torch.randint(0, 50, (23,), generator=generator(3))
    train, val = ns.train_val_split(data, val_fraction=0.25)
    return train, val


@suite.case(
    "get_batch",
    "shapes and dtype for B=3, T=5",
    points=1,
    check=equal([Hint(lambda got, exp: got[0] == [5, 3], "the shape is (batch_size, block_size)")]),
    expected=([3, 5], [3, 5], "torch.int64", "torch.int64"),
)
def _(ns):
    x, y = ns.get_batch(torch.arange(40), block_size=5, batch_size=3, generator=generator(1))
    return list(x.shape), list(y.shape), str(x.dtype), str(y.dtype)


def _starts(ns, data_len, block, draws):
    data = torch.arange(1000, 1000 + data_len)
    counts = collections.Counter()
    g = generator(7)
    for _ in range(draws):
        x, y = ns.get_batch(data, block_size=block, batch_size=8, generator=g)
        if not torch.equal(y[:, :-1], x[:, 1:]):
            return {"error": "y must be x shifted by one position"}
        counts.update((x[:, 0] - 1000).tolist())
    return {"counts": dict(counts)}


def _coverage(got):
    if "error" in got:
        return got["error"]
    counts = got["counts"]
    valid = set(range(0, 12 - 8))
    if set(counts) - valid:
        return f"window starts outside 0..len(data)-T-1 were drawn: {sorted(set(counts) - valid)}"
    if valid - set(counts):
        return f"some valid starts were never drawn in 4000 windows: {sorted(valid - set(counts))}"
    low, high = min(counts.values()), max(counts.values())
    if low < 850 or high > 1150:
        return f"window starts are not uniform: counts range from {low} to {high} (about 1000 each expected)"
    return None


@suite.case(
    "get_batch",
    "every valid start, and only those, is drawn uniformly",
    points=2,
    check=satisfies(_coverage),
)
def _(ns):
    return _starts(ns, 12, 8, 500)


@suite.case("get_batch", "the same generator seed gives the same batch", points=1, check=satisfies(
    lambda got: None if got else "two calls with generators seeded alike gave different batches: draw with `generator=generator`"))
def _(ns):
    data = torch.arange(500)
    a = ns.get_batch(data, 16, 4, generator=generator(11))
    torch.rand(3)  # disturb the global generator between the calls
    b = ns.get_batch(data, 16, 4, generator=generator(11))
    return bool(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]))


TRAIN_IDS = torch.randint(0, 6, (400,), generator=generator(21)).tolist()
TEST_IDS = torch.randint(0, 6, (120,), generator=generator(22)).tolist()


@suite.case("ngram", "trigram probabilities with alpha=0.1, long contexts use their last n-1 ids", points=2,
            check=equal(), expected=REFERENCE)
def _(ns):
    lm = ns.NGramLM(3, vocab_size=6, alpha=0.1).fit(TRAIN_IDS)
    rows = []
    for context in ([0, 1], [5, 5], [3, 2, 4, 0, 1], [1, 2]):
        rows.append([round(lm.prob(context, w), 12) for w in range(6)])
    return rows


@suite.case("ngram", "held-out perplexity for n = 1, 2, 3, 4", points=2,
            check=equal(), expected=REFERENCE)
def _(ns):
    out = []
    for n in (1, 2, 3, 4):
        value = ns.NGramLM(n, vocab_size=6, alpha=1.0).fit(torch.tensor(TRAIN_IDS)).perplexity(torch.tensor(TEST_IDS))
        out.append(round(float(value), 9))
    return out


@suite.case("ngram", "perplexity is a Python float close to the reference", points=1,
            check=close_number(rtol=1e-9, atol=0.0), expected=REFERENCE)
def _(ns):
    return ns.NGramLM(2, vocab_size=6, alpha=0.5).fit(TRAIN_IDS).perplexity(TEST_IDS)


KN_IDS = torch.randint(0, 7, (300,), generator=generator(31))
KN_IDS = KN_IDS[KN_IDS != 4]  # token 4 never occurs: its row is an unseen history


@suite.case(
    "kneser_ney",
    "the table for 300 tokens, V=7, d=0.75 (one history unseen)",
    points=1,
    check=close(rtol=1e-5, atol=1e-7, dtype=None, hints=[
        Hint(lambda got, exp: torch.allclose(got.double().T, exp.double(), atol=1e-5), "row a must be P(next | previous a): the table looks transposed"),
    ]),
    expected=REFERENCE,
)
def _(ns):
    return ns.kneser_ney_bigram(KN_IDS, vocab_size=7, discount=0.75)


@suite.case(
    "kneser_ney",
    "an unseen history gets the continuation distribution",
    points=1,
    check=close(rtol=1e-5, atol=1e-7, dtype=None),
    expected=REFERENCE,
)
def _(ns):
    return ns.kneser_ney_bigram(KN_IDS.tolist(), vocab_size=7, discount=0.5)[4]


@suite.case("kneser_ney", "discount 0 gives maximum-likelihood rows for seen histories", points=1,
            check=close(rtol=1e-5, atol=1e-7, dtype=None), expected=REFERENCE)
def _(ns):
    return ns.kneser_ney_bigram(KN_IDS, vocab_size=7, discount=0.0)[:4]


@suite.case("kneser_ney", "a negative discount raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.kneser_ney_bigram, [0, 1, 0], 2, discount=-0.1)
