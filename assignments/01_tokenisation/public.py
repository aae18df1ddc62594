"""Public tests of stage 01_tokenisation: students run these in the notebook with check().

Small inputs whose answers can be worked out by hand, each aimed at one rule of the
contract. Tolerances: probabilities and perplexities are Python floats compared within 1e-5
relative, so that a model computed in float32 tensors (about 1e-7 off) passes, since the
notebook does not ask for double precision; the Kneser-Ney table is compared
within 1e-5 relative plus 1e-7 absolute (float32 rounding of values near 1 is about 6e-8).
Values are compared whatever their dtype; each dtype the notebook states (the parts of
``train_val_split`` keep the data's, ``get_batch`` gives long ids, the Kneser-Ney table is
float32) has a test of its own (``dtypes()``), so that one slip costs that test alone.
"""

import torch

from autograder.kit import Hint, Suite, catch, close, close_number, dtypes, equal, raises, satisfies

suite = Suite(public=True)


# ---------------------------------------------------------------- build_vocab

HELLO = ({"e": 0, "h": 1, "l": 2, "o": 3}, {0: "e", 1: "h", 2: "l", 3: "o"})


def _stoi(got):
    """The first map of a returned pair, or None when the result is not a pair of dicts."""
    ok = isinstance(got, (tuple, list)) and len(got) == 2 and isinstance(got[0], dict)
    return got[0] if ok else None


@suite.case(
    "build_vocab",
    "hello: sorted characters get ids 0..V-1",
    points=1,
    check=equal(
        [
            Hint(
                lambda got, exp: _stoi(got) == exp[1],
                "the two maps look swapped: return (stoi, itos)",
                mistake="maps swapped",
            ),
            Hint(
                lambda got, exp: bool(_stoi(got)) and min(_stoi(got).values()) == 1,
                "ids start at 0 in this course",
                mistake="ids start at 1",
            ),
            Hint(
                lambda got, exp: _stoi(got) == {"h": 0, "e": 1, "l": 2, "o": 3},
                "ids follow sorted order, not the order in which characters first appear",
                mistake="ids in order of first appearance",
            ),
            Hint(
                lambda got, exp: (
                    bool(_stoi(got)) and min(_stoi(got).values()) == 0 and max(_stoi(got).values()) >= len(_stoi(got))
                ),
                "some ids are skipped: each distinct character gets one id, so remove repeated characters before numbering",
                mistake="repeated characters numbered",
            ),
        ]
    ),
    expected=HELLO,
)
def _(ns):
    return ns.build_vocab("hello")


@suite.case(
    "build_vocab",
    "naïve: a character outside ASCII gets its id too",
    points=1,
    check=equal(),
    expected=({"a": 0, "e": 1, "n": 2, "v": 3, "ï": 4}, {0: "a", 1: "e", 2: "n", 3: "v", 4: "ï"}),
    builds_on=("hello: sorted characters get ids 0..V-1",),
)
def _(ns):
    return ns.build_vocab("naïve")


# ---------------------------------------------------------------- encode_decode


@suite.case("encode_decode", "encode gives a list of ids", points=1, check=equal(), expected=[1, 3, 2, 0])
def _(ns):
    return ns.encode("hole", {"e": 0, "h": 1, "l": 2, "o": 3})


@suite.case(
    "encode_decode",
    "encode then decode gives the text back",
    points=1,
    check=equal(),
    expected="to be or not",
    builds_on=("encode gives a list of ids",),
    guard=True,  # a no-op returning its input passes a round trip: it counts only with a value test passing
)
def _(ns):
    stoi = {c: i for i, c in enumerate(sorted(set("to be or not")))}
    itos = {i: c for c, i in stoi.items()}
    return ns.decode(ns.encode("to be or not", stoi), itos)


def _names_hash(got):
    if got["raised"] != "ValueError":
        return f"expected a ValueError, got {got['raised'] or 'no exception'}: {got['message']!r}"
    if "#" not in got["message"]:
        return f"the ValueError must name the unknown character '#'; its message is {got['message']!r}"
    return None


@suite.case(
    "encode_decode", "an unknown character raises a ValueError that names it", points=1, check=satisfies(_names_hash)
)
def _(ns):
    return catch(ns.encode, "ab#", {"a": 0, "b": 1, "c": 2})


@suite.case("encode_decode", "decode accepts a 1-D LongTensor", points=1, check=equal(), expected="cab")
def _(ns):
    return ns.decode(torch.tensor([2, 0, 1]), {0: "a", 1: "b", 2: "c"})


# ---------------------------------------------------------------- train_val_split


def _split(ns, n, **kwargs):
    train, val = ns.train_val_split(torch.arange(n), **kwargs)
    return train.tolist(), val.tolist()


@suite.case(
    "train_val_split",
    "ten items, val_fraction=0.2",
    points=1,
    check=equal(),
    expected=([0, 1, 2, 3, 4, 5, 6, 7], [8, 9]),
)
def _(ns):
    return _split(ns, 10, val_fraction=0.2)


@suite.case(
    "train_val_split",
    "15 items, val_fraction=0.1: int(13.5) = 13 training items",
    points=1,
    check=equal(
        [
            Hint(
                lambda got, exp: isinstance(got, tuple) and len(got[0]) == 14,
                "count the training items with int(len(data) * (1 - val_fraction)), which rounds down",
                mistake="training length not int(len * (1 - val_fraction))",
            )
        ]
    ),
    expected=(list(range(13)), [13, 14]),
    builds_on=("ten items, val_fraction=0.2",),
)
def _(ns):
    return _split(ns, 15, val_fraction=0.1)


@suite.case(
    "train_val_split",
    "the default val_fraction is 0.1",
    points=1,
    check=equal(),
    expected=(list(range(18)), [18, 19]),
    builds_on=("ten items, val_fraction=0.2",),
)
def _(ns):
    return _split(ns, 20)


@suite.case(
    "train_val_split",
    "val_fraction=0 leaves the validation part empty",
    points=1,
    check=equal(),
    expected=([0, 1, 2, 3, 4], []),
    builds_on=("ten items, val_fraction=0.2",),
)
def _(ns):
    return _split(ns, 5, val_fraction=0.0)


@suite.case(
    "train_val_split",
    "the parts keep the dtype of the data (int32 here)",
    points=1,
    check=dtypes(),
    expected=(torch.int32, torch.int32),
)
def _(ns):
    return ns.train_val_split(torch.arange(10, dtype=torch.int32), val_fraction=0.2)


def _all_value_errors(got):
    wrong = [f"val_fraction={f}: {r or 'nothing raised'}" for f, r in got if r != "ValueError"]
    return None if not wrong else "expected ValueError for a val_fraction outside [0, 1); got " + ", ".join(wrong)


@suite.case(
    "train_val_split", "val_fraction=1.0 or -0.1 raises ValueError", points=1, check=satisfies(_all_value_errors)
)
def _(ns):
    return [(f, catch(ns.train_val_split, torch.arange(10), f)["raised"]) for f in (1.0, -0.1)]


# ---------------------------------------------------------------- get_batch


def _batch_problem(got):
    x, y, data = got
    if type(x) is not torch.Tensor or type(y) is not torch.Tensor:
        return "x and y must both be tensors"
    if tuple(x.shape) != (4, 8) or tuple(y.shape) != (4, 8):
        return f"expected x and y of shape (4, 8) (batch_size, block_size), got {tuple(x.shape)} and {tuple(y.shape)}"
    for row_x, row_y in zip(x.tolist(), y.tolist()):
        start = row_x[0] - 100
        if row_x != data[start : start + 8]:
            return f"a row of x is not a window of the data: {row_x}"
        if row_y != data[start + 1 : start + 9]:
            return "y must be x shifted one token to the left (the next token at each position)"
    return None


@suite.case(
    "get_batch",
    "rows are windows and y is x shifted by one",
    points=1,
    check=satisfies(
        _batch_problem,
        [
            Hint(
                lambda got, exp: isinstance(got[0], torch.Tensor) and tuple(got[0].shape) == (8, 4),
                "the shape is (batch_size, block_size): stack the windows as rows",
                mistake="batch shaped (T, B)",
            )
        ],
    ),
)
def _(ns):
    data = torch.arange(100, 160, dtype=torch.int32)
    x, y = ns.get_batch(data, block_size=8, batch_size=4, generator=torch.Generator().manual_seed(0))
    return x, y, data.tolist()


@suite.case(
    "get_batch",
    "x and y are torch.long, also for int32 data",
    points=1,
    check=dtypes(),
    expected=(torch.long, torch.long),
)
def _(ns):
    return ns.get_batch(torch.arange(30, dtype=torch.int32), 4, 2, generator=torch.Generator().manual_seed(2))


def _both_starts(got):
    x, y = got
    if type(x) is not torch.Tensor or type(y) is not torch.Tensor or x.shape != (64, 8) or y.shape != (64, 8):
        return "expected two (64, 8) tensors"
    starts = set(x[:, 0].tolist())
    if not starts <= {0, 1}:
        return f"with 10 tokens and block_size 8 the only valid starts are 0 and 1, but rows start at {sorted(starts)}"
    if starts != {0, 1}:
        return f"64 windows all started at {starts.pop()}: every valid start 0 .. len(data)-block_size-1 must be possible, the last one too"
    return None


@suite.case(
    "get_batch",
    "with 10 tokens and block_size 8, both valid starts 0 and 1 are drawn",
    points=1,
    check=satisfies(_both_starts),
    builds_on=("rows are windows and y is x shifted by one",),
)
def _(ns):
    x, y = ns.get_batch(torch.arange(10), block_size=8, batch_size=64, generator=torch.Generator().manual_seed(1))
    return x, y


def _same_batches(got):
    (x1, y1), (x2, y2) = got
    if any(type(t) is not torch.Tensor for t in (x1, y1, x2, y2)):
        return "x and y must be tensors"
    if x1.shape != x2.shape or not torch.equal(x1, x2) or not torch.equal(y1, y2):
        return "two calls with generators seeded alike gave different batches: draw the starts with generator=generator"
    return None


@suite.case(
    "get_batch",
    "the same generator seed gives the same batch",
    points=1,
    check=satisfies(_same_batches),
    guard=True,  # zeros are the same batch twice: it counts only with a value test passing
)
def _(ns):
    x1, y1 = ns.get_batch(torch.arange(500), 16, 4, generator=torch.Generator().manual_seed(5))
    torch.rand(3)  # moves the global generator between the calls
    x2, y2 = ns.get_batch(torch.arange(500), 16, 4, generator=torch.Generator().manual_seed(5))
    return (x1, y1), (x2, y2)


def _windows_without_generator(got):
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return f"get_batch must return a pair (x, y), got {type(got).__name__}"
    x, y = got
    if type(x) is not torch.Tensor or type(y) is not torch.Tensor or x.shape != (3, 4) or y.shape != (3, 4):
        return "expected two (3, 4) tensors"
    for row_x, row_y in zip(x.tolist(), y.tolist()):
        if row_x != list(range(row_x[0], row_x[0] + 4)) or not 0 <= row_x[0] <= 45:
            return f"a row of x is not a window of the data: {row_x}"
        if row_y != [i + 1 for i in row_x]:
            return "y must be x shifted one token to the left (the next token at each position)"
    return None


@suite.case(
    "get_batch",
    "without a generator: rows are windows of the data",
    points=1,
    check=satisfies(_windows_without_generator),
    builds_on=("rows are windows and y is x shifted by one",),
)
def _(ns):
    return ns.get_batch(torch.arange(50), 4, 3)


@suite.case("get_batch", "data no longer than block_size raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.get_batch, torch.arange(8), 8, 2, generator=torch.Generator().manual_seed(0))


# ---------------------------------------------------------------- ngram


_ADD_ONE = "bigram with add-one smoothing: (2 + 1) / (2 + 3)"


def _fitted(ns, ids, *args, **kwargs):
    """A model made with ``args`` and fitted to ``ids``, whatever ``fit`` returns (its own test checks that)."""
    lm = ns.NGramLM(*args, **kwargs)
    lm.fit(ids)
    return lm


@suite.case("ngram", _ADD_ONE, points=1, check=close_number(rtol=1e-5, atol=0.0), expected=0.6)
def _(ns):
    return _fitted(ns, [0, 1, 0, 1, 2], 2, vocab_size=3, alpha=1.0).prob([0], 1)


@suite.case(
    "ngram",
    "alpha=0.5: (2 + 0.5) / (2 + 0.5 * 3)",
    points=1,
    check=close_number(rtol=1e-5, atol=0.0),
    expected=2.5 / 3.5,
    builds_on=(_ADD_ONE,),
)
def _(ns):
    return _fitted(ns, [0, 1, 0, 1, 2], 2, vocab_size=3, alpha=0.5).prob([0], 1)


@suite.case(
    "ngram",
    "a bigram uses only the last id of a longer context",
    points=1,
    check=close_number(rtol=1e-5, atol=0.0),
    expected=0.6,
    builds_on=(_ADD_ONE,),
)
def _(ns):
    return _fitted(ns, [0, 1, 0, 1, 2], 2, vocab_size=3).prob([1, 0], 1)


@suite.case(
    "ngram",
    "a unigram model (n = 1) ignores the context it is given: (2 + 1) / (5 + 3)",
    points=1,
    check=close_number(rtol=1e-5, atol=0.0),
    expected=0.375,
    builds_on=(_ADD_ONE,),
)
def _(ns):
    return _fitted(ns, [0, 1, 0, 1, 2], 1, vocab_size=3, alpha=1.0).prob([2, 2], 0)


def _sums_to_one(got):
    if not all(type(p) is float for p in got):
        return f"prob must return a Python float, got {', '.join(sorted({type(p).__name__ for p in got}))}"
    return None if abs(sum(got) - 1.0) < 1e-5 else f"the probabilities of the next token sum to {sum(got):.6f}, not 1"


@suite.case(
    "ngram",
    "each conditional distribution sums to 1, also for a context that ends the data",
    points=1,
    check=satisfies(_sums_to_one),
    builds_on=(_ADD_ONE,),
)
def _(ns):
    lm = _fitted(ns, [0, 1, 2, 3, 0, 1, 2, 2, 0, 1], 3, vocab_size=4, alpha=0.5)
    return [lm.prob([0, 1], w) for w in range(4)]


@suite.case(
    "ngram",
    "a uniform unigram model has perplexity V",
    points=1,
    check=close_number(rtol=1e-5, atol=0.0),
    expected=4.0,
    builds_on=(_ADD_ONE,),
)
def _(ns):
    return _fitted(ns, [0, 1, 2, 3], 1, vocab_size=4, alpha=1.0).perplexity([3, 2, 1, 0, 1])


@suite.case(
    "ngram",
    "bigram perplexity of [0, 1, 2]: exp of the mean NLL over its 2 positions with a context",
    points=1,
    check=close_number(rtol=1e-5, atol=0.0),
    expected=0.24**-0.5,
    builds_on=(_ADD_ONE,),
)
def _(ns):
    return _fitted(ns, [0, 1, 0, 1, 2], 2, vocab_size=3, alpha=1.0).perplexity([0, 1, 2])


def _same_object(got):
    model, returned = got
    return None if model == returned else "fit must return the model itself (return self), so that calls can be chained"


@suite.case("ngram", "fit returns self", points=1, check=satisfies(_same_object))
def _(ns):
    lm = ns.NGramLM(2, vocab_size=3)
    return id(lm), id(lm.fit([0, 1, 0, 1, 2]))


def _tensors_in(got):
    for what, value, right in zip(("prob(tensor([0]), 1)", "perplexity(tensor([0, 1, 2]))"), got, (0.6, 0.24**-0.5)):
        if type(value) is not float:
            return f"{what} must return a Python float, got {type(value).__name__}"
        if abs(value - right) > 1e-5 * right:
            return f"{what} of a bigram fitted to a tensor is {value:.6g}: tensors must count as the lists of their ids"
    return None


@suite.case(
    "ngram",
    "tensors in: fit, prob's context and perplexity take 1-D tensors",
    points=1,
    check=satisfies(_tensors_in),
    builds_on=(_ADD_ONE, "bigram perplexity of [0, 1, 2]: exp of the mean NLL over its 2 positions with a context"),
)
def _(ns):
    lm = _fitted(ns, torch.tensor([0, 1, 0, 1, 2]), 2, vocab_size=3, alpha=1.0)
    return [lm.prob(torch.tensor([0]), 1), lm.perplexity(torch.tensor([0, 1, 2]))]


def _ngram_errors(got):
    wrong = [f"{what}: {raised or 'nothing raised'}" for what, raised in got if raised != "ValueError"]
    return None if not wrong else "expected ValueError for each of these; got " + "; ".join(wrong)


@suite.case(
    "ngram",
    "n = 0, alpha = 0, a too-short context and too few ids raise ValueError",
    points=1,
    check=satisfies(_ngram_errors),
)
def _(ns):
    lm = _fitted(ns, [0, 1, 2, 3, 0, 1], 3, vocab_size=4)
    return [
        ("NGramLM(0, 4)", catch(ns.NGramLM, 0, 4)["raised"]),
        ("NGramLM(2, 4, alpha=0)", catch(ns.NGramLM, 2, 4, alpha=0.0)["raised"]),
        ("trigram prob([1], 2)", catch(lm.prob, [1], 2)["raised"]),
        ("trigram perplexity([0, 1])", catch(lm.perplexity, [0, 1])["raised"]),
    ]


# ---------------------------------------------------------------- kneser_ney


def _rows_sum_to_one(got):
    if type(got) is not torch.Tensor or tuple(got.shape) != (5, 5):
        return f"expected a (5, 5) tensor, got {type(got).__name__} {tuple(getattr(got, 'shape', ()))}"
    sums = got.double().sum(dim=1)
    worst = float((sums - 1).abs().max())
    return (
        None
        if worst < 1e-5
        else f"every row must sum to 1; the worst row sums to {float(sums[(sums - 1).abs().argmax()]):.6f}"
    )


@suite.case("kneser_ney", "every row is a distribution", points=1, check=satisfies(_rows_sum_to_one))
def _(ns):
    return ns.kneser_ney_bigram([0, 1, 2, 0, 1, 3, 0, 2], vocab_size=5, discount=0.75)


_HAND = "ids [0, 1, 0, 2, 0, 1], V=4, d=0.5, worked by hand (token 3 never occurs)"
_HAND_TABLE = torch.tensor(
    [
        [1 / 6, 7 / 12, 1 / 4, 0.0],
        [3 / 4, 1 / 8, 1 / 8, 0.0],
        [3 / 4, 1 / 8, 1 / 8, 0.0],
        [1 / 2, 1 / 4, 1 / 4, 0.0],
    ]
)


@suite.case(
    "kneser_ney",
    _HAND,
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
    expected=_HAND_TABLE,
    builds_on=("every row is a distribution",),
)
def _(ns):
    return ns.kneser_ney_bigram([0, 1, 0, 2, 0, 1], vocab_size=4, discount=0.5)


@suite.case(
    "kneser_ney",
    "without a discount given, 0.75 is used: the same ids, V=4",
    points=1,
    check=close(rtol=1e-5, atol=1e-7, dtype=None),
    # c(a, w) and N1+ as above; with d = 3/4, row 0 is [d/3, (2-d)/3 + d/6, (1-d)/3 + d/6, 0]
    expected=torch.tensor(
        [
            [1 / 4, 13 / 24, 5 / 24, 0.0],
            [5 / 8, 3 / 16, 3 / 16, 0.0],
            [5 / 8, 3 / 16, 3 / 16, 0.0],
            [1 / 2, 1 / 4, 1 / 4, 0.0],
        ]
    ),
    builds_on=(_HAND,),
)
def _(ns):
    return ns.kneser_ney_bigram([0, 1, 0, 2, 0, 1], vocab_size=4)


@suite.case(
    "kneser_ney",
    "a 1-D tensor of ids gives the table of the same ids in a list",
    points=1,
    check=close(rtol=1e-5, atol=1e-7, dtype=None),
    expected=_HAND_TABLE,
    builds_on=(_HAND,),
)
def _(ns):
    return ns.kneser_ney_bigram(torch.tensor([0, 1, 0, 2, 0, 1]), vocab_size=4, discount=0.5)


@suite.case("kneser_ney", "the table is float32", points=1, check=dtypes(), expected=torch.float32)
def _(ns):
    return ns.kneser_ney_bigram([0, 1, 0, 2, 0, 1], vocab_size=4, discount=0.5)


@suite.case("kneser_ney", "a discount outside [0, 1] raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.kneser_ney_bigram, [0, 1, 0], 2, discount=1.5)


def _both_distributions(got):
    for d, table in zip((0.0, 1.0), got):
        if isinstance(table, str):
            return f"discount={d} raised {table}, but the discounts 0 and 1 are allowed"
        if type(table) is not torch.Tensor or tuple(table.shape) != (3, 3):
            return f"discount={d}: expected a (3, 3) tensor, got {type(table).__name__}"
        if float((table.double().sum(dim=1) - 1).abs().max()) > 1e-5:
            return f"discount={d}: every row must sum to 1"
    return None


@suite.case("kneser_ney", "the discounts 0 and 1 are allowed", points=1, check=satisfies(_both_distributions))
def _(ns):
    out = []
    for d in (0.0, 1.0):
        result = catch(ns.kneser_ney_bigram, [0, 1, 0, 2], 3, discount=d)
        out.append(result["raised"] or ns.kneser_ney_bigram([0, 1, 0, 2], 3, discount=d))
    return out


@suite.case("kneser_ney", "a single token (no bigram) raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.kneser_ney_bigram, [2], 4)
