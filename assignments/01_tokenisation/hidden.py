"""Hidden tests of stage 01_tokenisation (run only when grading; never shipped to students).

Expected values marked REFERENCE are the reference solution's outputs on the same
probe, saved at build time; the others are literals or properties that the contract
states. Every question's clauses and the tests that cover them are listed in
``clauses.md`` beside this file.

Tolerances, chosen per test:

- exact for integer ids, strings, tensors of ids and exceptions;
- 1e-5 relative for probabilities and perplexities (Python floats): the notebook does not
  ask for double precision, and a correct model that counts and divides in float32
  tensors is off by about 1e-7 relative (float32 rounding, summed over at most 120
  positions), so 1e-5 leaves a margin of a hundred and still fails every catalogued
  mistake (the smallest error among them is above 1e-2 relative);
- 1e-5 relative plus 1e-7 absolute for float32 Kneser-Ney tables (float32 rounding of
  probabilities is about 6e-8 relative; a float64 computation rounded once to float32
  differs from the reference by at most one unit in the last place);
- window starts: 4000 windows over 4 valid starts, about 1000 each; the test accepts
  any count from 850 to 1150, more than 5 standard deviations (sd = 27) either side,
  and the probe's generator is seeded, so the counts are the same on every run.

Values are compared whatever their dtype; each dtype the notebook states (the parts of
``train_val_split`` keep the data's, ``get_batch`` gives long ids, the Kneser-Ney table is
float32) has a test of its own (``dtypes()``), so that a dtype slip costs that test alone.

Messages name the property that failed, never an expected value.
"""

import torch

from autograder.kit import REFERENCE, Hint, Suite, Verdict, catch, close, close_number, dtypes, generator, satisfies

from public import _fitted, _same_object

suite = Suite(public=False)

SONNET = (
    "Shall I compare thee to a summer's day?\n"
    "Thou art more lovely and more temperate:\n"
    "Rough winds do shake the darling buds of May,\n"
    "And summer's lease hath all too short a date; -- 18!"
)


_SONNET_STOI = {c: i for i, c in enumerate(sorted(set(SONNET)))}


def _errors(what):
    """A check that every ``(label, raised)`` pair of the output raised ValueError."""

    def problem(got):
        wrong = [f"{label}: {raised or 'nothing was raised'}" for label, raised in got if raised != "ValueError"]
        return None if not wrong else f"{what} must raise ValueError; " + "; ".join(wrong)

    return satisfies(problem)


def _judged(problem, hints=()):
    """A check from ``problem(got, expected)``, which returns None when the output is right,
    else what is wrong in words (never an expected value)."""

    def check(got, expected, reveal=False):
        message = problem(got, expected)
        if message is None:
            return Verdict(True)
        for hint in hints:
            if hint.when(got, expected):
                return Verdict(False, f"{message}\nHint: {hint.text}", hint.mistake)
        return Verdict(False, message)

    return check


def _floats(rtol, hints=()):
    """Nested lists of Python floats compared element by element with the expected ones."""
    inner = close(rtol=rtol, atol=0.0, dtype=torch.float64, hints=list(hints))

    def shape_problem(got, expected):
        if isinstance(expected, list):
            if not isinstance(got, (list, tuple)) or len(got) != len(expected):
                return "the test could not read the values it asked for"
            return next((p for p in (shape_problem(g, e) for g, e in zip(got, expected)) if p), None)
        if type(got) is not float:
            return f"probabilities and perplexities must be Python floats, got {type(got).__name__}"
        return None

    def check(got, expected, reveal=False):
        problem = shape_problem(got, expected)
        if problem:
            return Verdict(False, problem)
        return inner(torch.tensor(got, dtype=torch.float64), torch.tensor(expected, dtype=torch.float64), reveal)

    return check


# ---------------------------------------------------------------- build_vocab


def _vocab_problem(got, expected):
    for (stoi, itos), (right_stoi, right_itos) in zip(got, expected):
        if not isinstance(stoi, dict) or not isinstance(itos, dict):
            return "build_vocab must return two dicts, (stoi, itos)"
        if set(stoi) != set(right_stoi):
            return "stoi must have exactly one key for each distinct character of the text"
        wrong = next((c for c in right_stoi if stoi[c] != right_stoi[c]), None)
        if wrong is not None:
            return f"stoi gives some characters the wrong id (one of them gets {stoi[wrong]!r}): ids number the distinct characters in sorted order, from 0"
        if itos != right_itos:
            return "itos must map each id back to its character (the inverse of stoi)"
    return None


def _one_based(got, expected):
    return isinstance(got[0][0], dict) and min(got[0][0].values(), default=0) == 1


def _first_seen(got, expected):
    return got[0][0] == {c: i for i, c in enumerate(dict.fromkeys(SONNET))}


@suite.case(
    "build_vocab",
    "a passage with capitals, punctuation and newlines",
    points=2,
    check=_judged(
        _vocab_problem,
        [
            Hint(_one_based, "ids start at 0 in this course", mistake="ids start at 1"),
            Hint(
                _first_seen,
                "ids follow sorted order, not the order in which characters first appear",
                mistake="ids in order of first appearance",
            ),
        ],
    ),
    expected=REFERENCE,
    builds_on=("hello: sorted characters get ids 0..V-1",),
)
def _(ns):
    stoi, itos = ns.build_vocab(SONNET)
    return [(dict(stoi), dict(itos))]


@suite.case(
    "build_vocab",
    "non-ASCII characters and a single-character text",
    points=1,
    check=_judged(_vocab_problem),
    expected=REFERENCE,
    builds_on=("hello: sorted characters get ids 0..V-1",),
)
def _(ns):
    out = []
    for text in ("naïve café — ünïcode", "aaaa"):
        stoi, itos = ns.build_vocab(text)
        out.append((dict(stoi), dict(itos)))
    return out


# ---------------------------------------------------------------- encode_decode


def _ids_problem(got, expected):
    if not isinstance(got, list) or not all(type(i) is int for i in got):
        return f"encode must return a list of Python ints, got {type(got).__name__}"
    if len(got) != len(expected):
        return "encode must return one id per character of the text"
    wrong = next((i for i, (g, e) in enumerate(zip(got, expected)) if g != e), None)
    return None if wrong is None else f"the id at position {wrong} is {got[wrong]}, not the id stoi gives its character"


@suite.case(
    "encode_decode",
    "encode gives the ids of stoi, as a list",
    points=1,
    check=_judged(_ids_problem),
    expected=REFERENCE,
)
def _(ns):
    return ns.encode("thee summer's day", _SONNET_STOI)


def _round_trips(got):
    for text, back in zip((SONNET, ""), got):
        if not isinstance(back, str):
            return f"decode must return a str, got {type(back).__name__}"
        if back != text:
            where = next((i for i, (a, b) in enumerate(zip(back, text)) if a != b), min(len(back), len(text)))
            return f"decode(encode(text)) is not the text: they differ from character {where} on"
    return None


@suite.case(
    "encode_decode",
    "decode(encode(s)) == s for the passage and for the empty string",
    points=1,
    check=satisfies(_round_trips),
    guard=True,  # a no-op returning its input passes a round trip: it counts only with a value test passing
)
def _(ns):
    itos = {i: c for c, i in _SONNET_STOI.items()}
    return [ns.decode(ns.encode(text, _SONNET_STOI), itos) for text in (SONNET, "")]


def _decoded(got):
    if not isinstance(got, str):
        return f"decode must return a str, got {type(got).__name__}"
    if got != "more lovely":
        return "decode must join the characters of the ids, in order, with nothing between them"
    return None


@suite.case(
    "encode_decode",
    "decode of a 1-D LongTensor of the passage's ids",
    points=1,
    check=satisfies(_decoded),
    builds_on=("decode accepts a 1-D LongTensor",),
)
def _(ns):
    itos = {i: c for c, i in _SONNET_STOI.items()}
    return ns.decode(torch.tensor([_SONNET_STOI[c] for c in "more lovely"], dtype=torch.long), itos)


@suite.case(
    "encode_decode",
    "the ValueError names the unknown character",
    points=1,
    check=satisfies(
        lambda got: (
            None
            if got["raised"] == "ValueError" and "Z" in got["message"]
            else f"expected a ValueError whose message names the unknown character 'Z', got {got['raised'] or 'no exception'}: {got['message']!r}"
        )
    ),
)
def _(ns):
    return catch(ns.encode, "abZc", {"a": 0, "b": 1, "c": 2})


# ---------------------------------------------------------------- train_val_split


def _split_lengths(got):
    for (train, val), (n, frac) in zip(got, ((15, 0.1), (7, 0.0))):
        if len(train) + len(val) != n or train + val != list(range(n)):
            return f"with {n} items and val_fraction={frac}: the two parts must be the data in order, split once"
        if len(train) != int(n * (1 - frac)):
            return (
                f"with {n} items and val_fraction={frac} your training part has {len(train)} items; "
                "it must hold the first int(len(data) * (1 - val_fraction)) items"
            )
    return None


@suite.case(
    "train_val_split",
    "lengths where rounding matters (15 items, 10%) and val_fraction=0",
    points=2,
    check=satisfies(
        _split_lengths,
        [
            Hint(
                lambda got, exp: len(got[0][0]) == 14,
                "count the training items with int(len(data) * (1 - val_fraction)), which rounds down",
                mistake="training length not int(len * (1 - val_fraction))",
            )
        ],
    ),
    builds_on=("ten items, val_fraction=0.2",),
)
def _(ns):
    out = []
    for n, frac in ((15, 0.1), (7, 0.0)):
        train, val = ns.train_val_split(torch.arange(n), val_fraction=frac)
        out.append([train.tolist(), val.tolist()])
    return out


def _parts_problem(got, expected):
    for part, right, name in zip(got, expected, ("training", "validation")):
        if type(part) is not torch.Tensor:
            return f"the {name} part must be a tensor, got {type(part).__name__}"
        if part.shape != right.shape or not torch.equal(part.long(), right.long()):
            return f"the {name} part is not the right slice of the data: the first int(len(data) * (1 - val_fraction)) items, in order, are the training part"
    return None


@suite.case(
    "train_val_split",
    "23 random ids, val_fraction=0.25: both parts in order",
    points=1,
    check=_judged(_parts_problem),
    expected=REFERENCE,
    builds_on=("ten items, val_fraction=0.2",),
)
def _(ns):
    data = torch.randint(0, 50, (23,), generator=generator(3))
    train, val = ns.train_val_split(data, val_fraction=0.25)
    return train, val


@suite.case(
    "train_val_split",
    "both parts keep the dtype of the data (int64 and int32)",
    points=1,
    check=dtypes(),
    expected=REFERENCE,
)
def _(ns):
    return [ns.train_val_split(torch.arange(12, dtype=dtype), val_fraction=0.25) for dtype in (torch.long, torch.int32)]


def _default_split(got):
    train, val = got
    if train + val != list(range(25)):
        return "the two parts must be the data in order, split once"
    if len(train) != 22:
        return (
            f"with 25 items and no val_fraction given you returned {len(train)} training items: the default "
            "val_fraction is 0.1, and the first int(len(data) * (1 - val_fraction)) items are the training part"
        )
    return None


@suite.case("train_val_split", "the default val_fraction is 0.1 (25 items)", points=1, check=satisfies(_default_split))
def _(ns):
    train, val = ns.train_val_split(torch.arange(25))
    return train.tolist(), val.tolist()


@suite.case(
    "train_val_split",
    "val_fraction outside [0, 1) raises ValueError",
    points=1,
    check=_errors("val_fraction outside [0, 1)"),
)
def _(ns):
    return [(f"val_fraction={f}", catch(ns.train_val_split, torch.arange(12), f)["raised"]) for f in (1.0, 1.5, -0.1)]


# ---------------------------------------------------------------- get_batch


def _shapes(got):
    x, y = got
    if type(x) is not torch.Tensor or type(y) is not torch.Tensor:
        return f"x and y must be tensors, got {type(x).__name__} and {type(y).__name__}"
    if tuple(x.shape) != (3, 5) or tuple(y.shape) != (3, 5):
        return f"with batch_size 3 and block_size 5, x and y must have shape (3, 5) (batch_size, block_size); you returned {tuple(x.shape)} and {tuple(y.shape)}"
    return None


@suite.case(
    "get_batch",
    "shapes (B, T) for B=3, T=5 and int32 data",
    points=1,
    check=satisfies(
        _shapes,
        [
            Hint(
                lambda got, exp: type(got[0]) is torch.Tensor and tuple(got[0].shape) == (5, 3),
                "the shape is (batch_size, block_size)",
                mistake="batch shaped (T, B)",
            )
        ],
    ),
    builds_on=("rows are windows and y is x shifted by one",),
    guard=True,  # zeros of the right shape pass: it counts only with a value test passing
)
def _(ns):
    x, y = ns.get_batch(torch.arange(40, dtype=torch.int32), block_size=5, batch_size=3, generator=generator(1))
    return x, y


@suite.case(
    "get_batch",
    "x and y are long (torch.int64) for int32 and for int64 data",
    points=1,
    check=dtypes(),
    expected=REFERENCE,
)
def _(ns):
    return [
        ns.get_batch(torch.arange(40, dtype=dtype), 5, 3, generator=generator(2)) for dtype in (torch.int32, torch.long)
    ]


def _windows_problem(x, y, offset, length, block):
    """Why rows of ``x``/``y`` are not windows ``data[i:i+T]``/``data[i+1:i+T+1]`` of ``arange(offset, offset+length)``."""
    if type(x) is not torch.Tensor or type(y) is not torch.Tensor or x.shape != y.shape or x.shape[-1:] != (block,):
        return "x and y must be tensors of the same shape (batch_size, block_size)"
    steps = torch.arange(block)
    flat_x, flat_y = x.reshape(-1, block).long(), y.reshape(-1, block).long()
    if not torch.equal(flat_x, flat_x[:, :1] + steps):
        return "a row of x is not a window of consecutive tokens of the data"
    if not torch.equal(flat_y, flat_x + 1):
        return "y must be x shifted by one position: y[b, t] is the token after x[b, t]"
    starts = flat_x[:, 0] - offset
    if bool((starts < 0).any()) or bool((starts > length - block - 1).any()):
        return "some windows start outside the valid starts 0 .. len(data)-block_size-1"
    return None


def _coverage(got):
    x, y = got
    problem = _windows_problem(x, y, 1000, 12, 8)
    if problem:
        return problem
    if x.shape[-2] != 8:
        return (
            f"a call with batch_size=8 returned {x.shape[-2]} rows: draw each row's start independently,"
            " so a batch may hold more rows than there are valid starts"
        )
    counts = torch.bincount(x.reshape(-1, 8)[:, 0].long() - 1000, minlength=4).tolist()
    if counts[-1] == 0:
        return "the last valid start (len(data) - block_size - 1) was never drawn in 4000 windows"
    if min(counts) == 0:
        return "some valid starts were never drawn in 4000 windows"
    if min(counts) < 850 or max(counts) > 1150:
        return f"window starts are not drawn uniformly: over 4000 windows the valid starts came up between {min(counts)} and {max(counts)} times each"
    return None


@suite.case(
    "get_batch",
    "every valid start, and only those, is drawn uniformly",
    points=2,
    check=satisfies(_coverage),
    builds_on=(
        "rows are windows and y is x shifted by one",
        "with 10 tokens and block_size 8, both valid starts 0 and 1 are drawn",
    ),
)
def _(ns):
    data = torch.arange(1000, 1012)
    g = generator(7)
    xs, ys = [], []
    for _ in range(500):
        x, y = ns.get_batch(data, block_size=8, batch_size=8, generator=g)
        xs.append(x)
        ys.append(y)
    return torch.stack(xs), torch.stack(ys)


def _same_batch(got):
    (x1, y1), (x2, y2) = got
    if any(type(t) is not torch.Tensor for t in (x1, y1, x2, y2)):
        return "x and y must be tensors"
    if x1.shape != x2.shape or y1.shape != y2.shape or not torch.equal(x1, x2) or not torch.equal(y1, y2):
        return "two calls with generators seeded alike gave different batches: draw with `generator=generator`"
    return None


@suite.case(
    "get_batch",
    "a generator seeded alike gives the same 4 x 16 batch, whatever the global generator did",
    points=1,
    check=satisfies(_same_batch),
    guard=True,  # zeros are the same batch twice: it counts only with a value test passing
)
def _(ns):
    data = torch.arange(500)
    x1, y1 = ns.get_batch(data, 16, 4, generator=generator(11))
    torch.rand(3)  # disturb the global generator between the calls
    x2, y2 = ns.get_batch(data, 16, 4, generator=generator(11))
    return (x1, y1), (x2, y2)


@suite.case(
    "get_batch",
    "without a generator: windows and shifted targets",
    points=1,
    check=satisfies(lambda got: _windows_problem(got[0], got[1], 0, 30, 6)),
    builds_on=("rows are windows and y is x shifted by one",),
)
def _(ns):
    x, y = ns.get_batch(torch.arange(30), 6, 5)
    return x, y


@suite.case(
    "get_batch",
    "data of block_size tokens or fewer raises ValueError",
    points=1,
    check=_errors("data too short for one window and its target"),
)
def _(ns):
    return [
        (f"{n} tokens, block_size 6", catch(ns.get_batch, torch.arange(n), 6, 2, generator=generator(4))["raised"])
        for n in (6, 3)
    ]


# ---------------------------------------------------------------- ngram

TRAIN_IDS = torch.randint(0, 6, (400,), generator=generator(21)).tolist()
TEST_IDS = torch.randint(0, 6, (120,), generator=generator(22)).tolist()
_WITH_CONTEXT = "bigram with add-one smoothing: (2 + 1) / (2 + 3)"


@suite.case(
    "ngram",
    "trigram probabilities with alpha=0.1; long contexts (a list and a tensor) use their last n-1 ids",
    points=2,
    check=_floats(1e-5),
    expected=REFERENCE,
    builds_on=(_WITH_CONTEXT,),
)
def _(ns):
    lm = _fitted(ns, TRAIN_IDS, 3, vocab_size=6, alpha=0.1)
    rows = []
    for context in ([0, 1], [5, 5], [3, 2, 4, 0, 1], torch.tensor([4, 4, 1, 2])):
        rows.append([lm.prob(context, w) for w in range(6)])
    return rows


@suite.case(
    "ngram",
    "n = 1: prob uses an empty context, whatever context it is given",
    points=1,
    check=_floats(1e-5),
    expected=REFERENCE,
    builds_on=(_WITH_CONTEXT,),
)
def _(ns):
    lm = _fitted(ns, TRAIN_IDS, 1, vocab_size=6, alpha=0.5)
    return [[lm.prob(context, w) for w in range(6)] for context in ([], [3], [1, 2, 5])]


@suite.case(
    "ngram",
    "the default alpha is 1 (add-one)",
    points=1,
    check=_floats(1e-5),
    expected=REFERENCE,
    builds_on=(_WITH_CONTEXT,),
)
def _(ns):
    lm = _fitted(ns, TRAIN_IDS, 2, vocab_size=6)
    return [[lm.prob([a], w) for w in range(6)] for a in (0, 3)]


def _distributions(got):
    for label, probs in got:
        if not all(type(p) is float for p in probs):
            return f"prob must return Python floats ({label})"
        if abs(sum(probs) - 1.0) > 1e-5:
            return f"the probabilities of the next token after {label} sum to {sum(probs):.6f}, not 1"
    return None


@suite.case(
    "ngram",
    "each distribution sums to 1: a seen context, an unseen one, one that ends the data",
    points=1,
    check=satisfies(_distributions),
    builds_on=("each conditional distribution sums to 1, also for a context that ends the data",),
)
def _(ns):
    ids = TRAIN_IDS[:60] + [7, 6]  # ids 6 and 7 occur once, at the end: the context (7, 6) is never followed
    lm = _fitted(ns, ids, 3, vocab_size=8, alpha=0.3)
    return [
        (f"the context {c}", [lm.prob(c, w) for w in range(8)]) for c in ([TRAIN_IDS[0], TRAIN_IDS[1]], [6, 7], [7, 6])
    ]


@suite.case(
    "ngram",
    "held-out perplexity for n = 1, 2, 3, 4 (tensors in)",
    points=2,
    check=_floats(1e-5),
    expected=REFERENCE,
    builds_on=(
        _WITH_CONTEXT,
        "bigram perplexity of [0, 1, 2]: exp of the mean NLL over its 2 positions with a context",
    ),
)
def _(ns):
    out = []
    for n in (1, 2, 3, 4):
        out.append(_fitted(ns, torch.tensor(TRAIN_IDS), n, vocab_size=6, alpha=1.0).perplexity(torch.tensor(TEST_IDS)))
    return out


@suite.case(
    "ngram",
    "perplexity is a Python float close to the reference",
    points=1,
    check=close_number(rtol=1e-5, atol=0.0),
    expected=REFERENCE,
    builds_on=(_WITH_CONTEXT,),
)
def _(ns):
    return _fitted(ns, TRAIN_IDS, 2, vocab_size=6, alpha=0.5).perplexity(TEST_IDS)


@suite.case("ngram", "fit returns the model itself", points=1, check=satisfies(_same_object))
def _(ns):
    lm = ns.NGramLM(2, vocab_size=6)
    return id(lm), id(lm.fit(TRAIN_IDS))


@suite.case(
    "ngram", "n < 1, vocab_size < 1 or alpha <= 0 raise ValueError", points=1, check=_errors("each bad argument")
)
def _(ns):
    calls = {
        "n=0": (0, 5, 1.0),
        "n=-2": (-2, 5, 1.0),
        "vocab_size=0": (2, 0, 1.0),
        "alpha=0": (2, 5, 0.0),
        "alpha=-0.5": (2, 5, -0.5),
    }
    return [(label, catch(ns.NGramLM, *args)["raised"]) for label, args in calls.items()]


@suite.case(
    "ngram",
    "prob with fewer than n-1 context ids, and perplexity of fewer than n ids, raise ValueError",
    points=1,
    check=_errors("too short an input"),
)
def _(ns):
    lm = _fitted(ns, TRAIN_IDS, 4, vocab_size=6)
    return [
        ("4-gram prob([1, 2], 0)", catch(lm.prob, [1, 2], 0)["raised"]),
        ("4-gram prob([], 0)", catch(lm.prob, [], 0)["raised"]),
        ("4-gram perplexity of 3 ids", catch(lm.perplexity, [1, 2, 3])["raised"]),
    ]


# ---------------------------------------------------------------- kneser_ney

KN_IDS = torch.randint(0, 7, (300,), generator=generator(31))
KN_IDS = KN_IDS[KN_IDS != 4]  # token 4 never occurs: its row is an unseen history
_HAND_TABLE = "ids [0, 1, 0, 2, 0, 1], V=4, d=0.5, worked by hand (token 3 never occurs)"


@suite.case(
    "kneser_ney",
    "the table for 300 tokens, V=7, d=0.75 (one history unseen)",
    points=1,
    check=close(
        rtol=1e-5,
        atol=1e-7,
        dtype=None,
        hints=[
            Hint(
                lambda got, exp: (
                    type(got) is torch.Tensor
                    and got.shape == exp.shape
                    and torch.allclose(got.double().T, exp.double(), atol=1e-5)
                ),
                "row a must be P(next | previous a): the table looks transposed",
                mistake="table transposed",
            ),
        ],
    ),
    expected=REFERENCE,
    builds_on=("every row is a distribution", _HAND_TABLE),
)
def _(ns):
    return ns.kneser_ney_bigram(KN_IDS, vocab_size=7, discount=0.75)


@suite.case(
    "kneser_ney",
    "a history never followed by a token (absent, or only the last id) gets the continuation distribution",
    points=1,
    check=close(rtol=1e-5, atol=1e-7, dtype=None),
    expected=REFERENCE,
    builds_on=(_HAND_TABLE,),
)
def _(ns):
    absent = ns.kneser_ney_bigram(KN_IDS.tolist(), vocab_size=7, discount=0.5)[4]
    only_last = ns.kneser_ney_bigram([0, 1, 0, 2], vocab_size=3, discount=0.5)[2]
    return torch.cat([absent, only_last])  # (7 + 3,): the two rows side by side


@suite.case(
    "kneser_ney",
    "discount 0 gives maximum-likelihood rows for seen histories",
    points=1,
    check=close(rtol=1e-5, atol=1e-7, dtype=None),
    expected=REFERENCE,
    builds_on=(_HAND_TABLE,),
)
def _(ns):
    return ns.kneser_ney_bigram(KN_IDS, vocab_size=7, discount=0.0)[:4]


@suite.case(
    "kneser_ney",
    "discount 1 is allowed",
    points=1,
    check=close(rtol=1e-5, atol=1e-7, dtype=None),
    expected=REFERENCE,
    builds_on=(_HAND_TABLE,),
)
def _(ns):
    return ns.kneser_ney_bigram(KN_IDS, vocab_size=7, discount=1.0)


@suite.case(
    "kneser_ney",
    "the default discount is 0.75",
    points=1,
    check=close(rtol=1e-5, atol=1e-7, dtype=None),
    expected=REFERENCE,
    builds_on=(_HAND_TABLE,),
)
def _(ns):
    return ns.kneser_ney_bigram(KN_IDS[:120], vocab_size=7)


@suite.case(
    "kneser_ney",
    "the table is float32, from a list and from a tensor of ids",
    points=1,
    check=dtypes(),
    expected=REFERENCE,
)
def _(ns):
    return [ns.kneser_ney_bigram(ids, vocab_size=7, discount=0.5) for ids in (KN_IDS[:50].tolist(), KN_IDS[:50])]


@suite.case(
    "kneser_ney",
    "a discount below 0 or above 1 raises ValueError",
    points=1,
    check=_errors("a discount outside [0, 1]"),
)
def _(ns):
    return [(f"discount={d}", catch(ns.kneser_ney_bigram, [0, 1, 0], 2, discount=d)["raised"]) for d in (-0.1, 1.01)]


@suite.case("kneser_ney", "fewer than two tokens raise ValueError", points=1, check=_errors("ids holding no bigram"))
def _(ns):
    return [(f"ids={ids}", catch(ns.kneser_ney_bigram, ids, 3)["raised"]) for ids in ([], [2])]
