"""Public tests of stage 01_tokenisation: students run these in the notebook with check()."""

import torch

from autograder.kit import Hint, Suite, catch, close_number, equal, raises, satisfies

suite = Suite(public=True)


@suite.case(
    "build_vocab",
    "hello: sorted characters get ids 0..V-1",
    points=1,
    check=equal([Hint(lambda got, exp: isinstance(got, (tuple, list)) and len(got) == 2 and got[0] == {i: c for c, i in exp[0].items()}, "the two maps look swapped: return (stoi, itos)")]),
    expected=({"e": 0, "h": 1, "l": 2, "o": 3}, {0: "e", 1: "h", 2: "l", 3: "o"}),
)
def _(ns):
    return ns.build_vocab("hello")


@suite.case("encode_decode", "encode then decode gives the text back", points=1, check=equal(), expected="to be or not")
def _(ns):
    stoi = {c: i for i, c in enumerate(sorted(set("to be or not")))}
    itos = {i: c for c, i in stoi.items()}
    return ns.decode(ns.encode("to be or not", stoi), itos)


@suite.case("encode_decode", "an unknown character raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.encode, "abz", {"a": 0, "b": 1, "c": 2})


@suite.case("train_val_split", "ten items, val_fraction=0.2", points=1, check=equal(), expected=([0, 1, 2, 3, 4, 5, 6, 7], [8, 9]))
def _(ns):
    train, val = ns.train_val_split(torch.arange(10), val_fraction=0.2)
    return train.tolist(), val.tolist()


def _batch_problem(got):
    x, y, data = got
    if type(x) is not torch.Tensor or type(y) is not torch.Tensor:
        return "x and y must both be tensors"
    if tuple(x.shape) != (4, 8) or tuple(y.shape) != (4, 8):
        return f"expected x and y of shape (4, 8) (batch_size, block_size), got {tuple(x.shape)} and {tuple(y.shape)}"
    if x.dtype != torch.long or y.dtype != torch.long:
        return f"expected dtype torch.int64 (long), got {x.dtype} and {y.dtype}"
    for row_x, row_y in zip(x.tolist(), y.tolist()):
        start = row_x[0] - 100
        if row_x != data[start : start + 8]:
            return f"a row of x is not a window of the data: {row_x}"
        if row_y != data[start + 1 : start + 9]:
            return "y must be x shifted one token to the left (the next token at each position)"
    return None


@suite.case("get_batch", "rows are windows and y is x shifted by one", points=1, check=satisfies(_batch_problem))
def _(ns):
    data = torch.arange(100, 160)
    x, y = ns.get_batch(data, block_size=8, batch_size=4, generator=torch.Generator().manual_seed(0))
    return x, y, data.tolist()


@suite.case(
    "ngram",
    "bigram with add-one smoothing: (2 + 1) / (2 + 3)",
    points=1,
    check=close_number(rtol=0.0, atol=1e-9),
    expected=0.6,
)
def _(ns):
    return ns.NGramLM(2, vocab_size=3, alpha=1.0).fit([0, 1, 0, 1, 2]).prob([0], 1)


def _sums_to_one(got):
    return None if abs(sum(got) - 1.0) < 1e-9 else f"the probabilities of the next token sum to {sum(got):.6f}, not 1"


@suite.case("ngram", "each conditional distribution sums to 1", points=1, check=satisfies(_sums_to_one))
def _(ns):
    lm = ns.NGramLM(3, vocab_size=4, alpha=0.5).fit([0, 1, 2, 3, 0, 1, 2, 2, 1])
    return [lm.prob([0, 1], w) for w in range(4)]


@suite.case(
    "ngram",
    "a uniform unigram model has perplexity V",
    points=1,
    check=close_number(rtol=1e-9, atol=1e-9),
    expected=4.0,
)
def _(ns):
    return ns.NGramLM(1, vocab_size=4, alpha=1.0).fit([0, 1, 2, 3]).perplexity([3, 2, 1, 0, 1])


def _rows_sum_to_one(got):
    if type(got) is not torch.Tensor or tuple(got.shape) != (5, 5):
        return f"expected a (5, 5) tensor, got {type(got).__name__} {tuple(getattr(got, 'shape', ()))}"
    sums = got.double().sum(dim=1)
    worst = float((sums - 1).abs().max())
    return None if worst < 1e-5 else f"every row must sum to 1; the worst row sums to {float(sums[(sums - 1).abs().argmax()]):.6f}"


@suite.case("kneser_ney", "every row is a distribution", points=1, check=satisfies(_rows_sum_to_one))
def _(ns):
    return ns.kneser_ney_bigram([0, 1, 2, 0, 1, 3, 0, 2], vocab_size=5, discount=0.75)


@suite.case("kneser_ney", "a discount outside [0, 1] raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.kneser_ney_bigram, [0, 1, 0], 2, discount=1.5)

