"""Hidden tests of stage 04_masking (run only when grading; never shipped to students).

Expected values marked REFERENCE are the reference solution's outputs on the same
probe, saved at build time. Batch size, length, vocabulary and ids all differ from
each other in every probe, so that a transposed or wrongly broadcast mask cannot pass
by accident; the pad id is never 0 in the hidden probes.

Each question is graded on its own. The probes of combined_mask and pad_and_shift run
with correct stand-ins for causal_mask, padding_mask and shift_right put in the
submission's namespace for the duration of the call (a student's combined_mask may
call their own causal_mask), and the black-box causality tests use the test's own
attention, not the notebook's given code.

Tolerances: masks, shifted ids and padded batches are compared exactly (dtype, shape
and every value). lm_loss: rtol 1e-5, atol 1e-6 for the loss (float32 cross-entropy
in any order of summation agrees to about 1e-7); rtol 1e-4, atol 1e-7 for its gradient.
causal_mask's device test cannot use a second device (grading runs on CPU): it watches
the torch calls the function makes (a TorchFunctionMode) and checks that the requested
device reaches one of them, as an argument of the factory call or of a later ``.to``.
Causality: an earlier output may move by at most 1e-6 when only later inputs change
(it should not move at all), and an output must move by more than 1e-4 when its own
input changes.
"""

import math

import torch
from torch.overrides import TorchFunctionMode

from autograder.kit import REFERENCE, Hint, Suite, catch, close, equal, generator, raises, randn, satisfies

suite = Suite(public=False)


# ---------------------------------------------------------------- stand-ins and a private attention


def _standin_causal(T, device=None):
    return torch.triu(torch.ones((T, T), dtype=torch.bool, device=device), 1)


def _standin_padding(ids, pad_id):
    return (ids == pad_id)[:, None, :]


def _standin_shift(tokens, start_id):
    out = tokens.new_empty(tokens.shape)
    out[:, 0] = start_id
    out[:, 1:] = tokens[:, :-1]
    return out


_STANDINS = {"causal_mask": _standin_causal, "padding_mask": _standin_padding, "shift_right": _standin_shift}


def _isolated(ns, name, *args, **kwargs):
    """The student's ``name`` called while correct stand-ins replace the other graded functions."""
    target = getattr(ns, name)
    scope = ns._names
    swap = {k: v for k, v in _STANDINS.items() if k != name}
    before = {k: scope.get(k, _STANDINS) for k in swap}
    scope.update(swap)
    try:
        return target(*args, **kwargs)
    finally:
        for k, v in before.items():
            if v is _STANDINS:
                scope.pop(k, None)
            else:
                scope[k] = v


_W = randn(3, 6, 6, seed=70) * 0.6  # query, key and value projections of the private attention


def _attend(x, mask):
    """Single-head attention with the test's own projections; ``mask`` True = blocked."""
    q, k, v = x @ _W[0], x @ _W[1], x @ _W[2]
    scores = (q @ k.transpose(1, 2)) / math.sqrt(x.shape[-1])
    scores = scores.masked_fill(mask, -math.inf)
    return torch.softmax(scores, dim=-1) @ v


def _as_mask(mask):
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"the mask must be a tensor, got {type(mask).__name__}")
    return mask.to(torch.bool)


# ---------------------------------------------------------------- causal_mask


def _diag_blocked(got, exp):
    eye = torch.eye(exp.shape[0], dtype=torch.bool)
    return isinstance(got, torch.Tensor) and got.shape == exp.shape and bool(torch.equal(got.to(torch.bool), exp | eye))


def _inverted_mask(got, exp):
    return isinstance(got, torch.Tensor) and got.shape == exp.shape and bool(torch.equal(got.to(torch.bool), ~exp))


def _flipped(got, exp):
    return isinstance(got, torch.Tensor) and got.shape == exp.shape and bool(got.to(torch.bool)[-1, 0])


@suite.case(
    "causal_mask",
    "T=9 exactly, dtype and values",
    points=2,
    check=equal([
        Hint(lambda got, exp: isinstance(got, torch.Tensor) and got.dtype != torch.bool, "return a boolean mask (True = blocked); turning it into -inf is the attention's job"),
        Hint(_inverted_mask, "the mask is inverted: in this course True marks the keys a query may NOT see"),
        Hint(_diag_blocked, "the diagonal is blocked: a position may attend to itself"),
        Hint(_flipped, "the last query cannot see the first key: the mask blocks the past instead of the future"),
    ]),
    expected=REFERENCE,
)
def _(ns):
    return ns.causal_mask(9)


class _DeviceSpy(TorchFunctionMode):
    """Notes whether any torch call made inside it received ``wanted`` as an argument."""

    def __init__(self, wanted):
        super().__init__()
        self.wanted, self.hit = wanted, False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        for value in (*args, *kwargs.values()):
            if isinstance(value, (torch.device, str)):
                try:
                    self.hit = self.hit or torch.device(value) == self.wanted
                except (RuntimeError, TypeError):
                    pass
        result = func(*args, **kwargs)
        return result


@suite.case(
    "causal_mask",
    "the device argument is passed on to the tensor it makes",
    points=1,
    check=equal([Hint(lambda got, exp: not got["device passed on"], "pass device=device when you create the tensor (or move it there)")]),
    expected={"device passed on": True, "device": "cpu", "dtype": "torch.bool"},
)
def _(ns):
    # Without a second device on the grading machine, the test watches the torch calls
    # causal_mask makes and checks that the requested device reaches one of them.
    wanted = torch.device("cpu")
    with _DeviceSpy(wanted) as spy:
        mask = ns.causal_mask(5, device=wanted)
    return {"device passed on": spy.hit, "device": str(mask.device), "dtype": str(mask.dtype)}


def _causal_story(got):
    leaks, moves = got["leak"], got["move"]
    if any(math.isnan(v) for v in leaks + moves):
        return "an output is NaN: some query has no key left to attend to (a position must at least see itself)"
    bad = [t for t, v in enumerate(leaks) if v > 1e-6]
    if bad:
        return f"changing tokens from position {bad[0]} on changed outputs before position {bad[0]}: the future leaks through the mask"
    blind = [t for t, v in enumerate(moves) if v <= 1e-4]
    if blind:
        return f"changing token {blind[0]} did not change output {blind[0]}: a position must see its own token"
    return None


@suite.case(
    "causal_mask",
    "black box: under this mask, changing later tokens never changes earlier outputs",
    points=2,
    check=satisfies(_causal_story),
)
def _(ns):
    T = 7
    mask = _as_mask(ns.causal_mask(T))
    x = randn(2, T, 6, seed=71)
    base = _attend(x, mask)
    leak, move = [], []
    for t in range(T):
        y = x.clone()
        y[:, t:] = randn(2, T - t, 6, seed=100 + t)
        out = _attend(y, mask)
        leak.append(float((out[:, :t] - base[:, :t]).abs().max()) if t else 0.0)
        move.append(float((out[:, t] - base[:, t]).abs().max()))
    return {"leak": leak, "move": move}


# ---------------------------------------------------------------- padding_mask

_PAD = 3
_IDS = torch.tensor([
    [5, 0, 8, 2, 6, _PAD, _PAD],
    [1, 4, _PAD, _PAD, _PAD, _PAD, _PAD],
    [7, 0, 0, 2, 1, 5, 4],
])  # B = 3, T = 7


@suite.case(
    "padding_mask",
    "B=3, T=7, pad_id=3 with tokens 0 in the batch",
    points=2,
    check=equal([
        Hint(lambda got, exp: tuple(got.shape) == (3, 7, 1), "a mask of shape (B, T, 1) blocks queries: padding must block keys"),
        Hint(lambda got, exp: tuple(got.shape) == (3, 7), "the mask needs its middle axis of size 1, to broadcast over the queries"),
        Hint(lambda got, exp: got.dim() == 4, "the mask is (B, 1, T); adding an axis for heads is a later stage's job"),
        Hint(lambda got, exp: tuple(got.shape) == (3, 1, 7) and bool(torch.equal(got[:, 0], _IDS == 0)), "compare with the pad_id you were given, not with 0"),
        Hint(lambda got, exp: tuple(got.shape) == (3, 1, 7) and bool(torch.equal(got, ~exp)), "True must mark the padding (blocked), not the real tokens"),
    ]),
    expected=REFERENCE,
)
def _(ns):
    return ns.padding_mask(_IDS, _PAD)


@suite.case("padding_mask", "a batch with no padding blocks nothing", points=1, check=equal(), expected=REFERENCE)
def _(ns):
    return ns.padding_mask(torch.arange(10).reshape(2, 5), pad_id=11)


# ---------------------------------------------------------------- combined_mask

_CIDS = torch.tensor([
    [9, 4, 5, 6, 2, 2],
    [9, 7, 2, 2, 2, 2],
    [9, 1, 3, 4, 8, 5],
    [9, 8, 0, 2, 2, 2],
])  # B = 4, T = 6, pad_id = 2


def _query_side(got, exp):
    query_pad = (_CIDS == 2)[:, :, None]
    return bool(torch.equal(got, _standin_causal(6) | query_pad))


@suite.case(
    "combined_mask",
    "B=4, T=6, pad_id=2",
    points=2,
    check=equal([
        Hint(lambda got, exp: got.dtype != torch.bool, "return a boolean mask"),
        Hint(lambda got, exp: bool(torch.equal(~got, exp)), "the mask is inverted: True marks the keys that are BLOCKED"),
        Hint(_query_side, "your padding blocks rows (queries); it must block columns (keys)"),
        Hint(lambda got, exp: bool(torch.equal(got, _standin_causal(6) & (_CIDS == 2)[:, None, :])), "a key is blocked if it is in the future OR is padding, not only when both hold"),
        Hint(lambda got, exp: bool(torch.equal(got & ~torch.eye(6, dtype=torch.bool), exp)), "the diagonal is blocked: a real token may attend to itself"),
    ]),
    expected=REFERENCE,
)
def _(ns):
    return _isolated(ns, "combined_mask", _CIDS, 2)


def _padded_story(got):
    if any(math.isnan(v) for v in got["future"] + got["pad"]):
        return "an output at a real token is NaN: some real query has no key left to attend to"
    if max(got["future"]) > 1e-6:
        return "changing later tokens changed earlier outputs: the mask lets the future leak"
    if max(got["pad"]) > 1e-6:
        return "changing the vectors at padded positions changed the outputs of real tokens: padded keys must be blocked"
    return None


@suite.case(
    "combined_mask",
    "black box: real tokens ignore both the future and the padding",
    points=1,
    check=satisfies(_padded_story),
)
def _(ns):
    mask = _as_mask(_isolated(ns, "combined_mask", _CIDS, 2))
    real = _CIDS != 2
    x = randn(4, 6, 6, seed=72)
    base = _attend(x, mask)
    noise = randn(4, 6, 6, seed=73)
    pad_changed = _attend(torch.where(real[..., None], x, noise), mask)
    future = []
    for t in range(1, 6):
        y = x.clone()
        y[:, t:] = noise[:, t:]
        out = _attend(y, mask)
        earlier = real[:, :t]
        future.append(float((out[:, :t] - base[:, :t]).abs()[earlier].max()))
    return {"future": future, "pad": [float((pad_changed - base).abs()[real].max())]}


# ---------------------------------------------------------------- shift

_TOKENS = torch.randint(4, 50, (3, 7), generator=generator(81))


@suite.case(
    "shift",
    "B=3, T=7 with start_id=2",
    points=2,
    check=equal([
        Hint(lambda got, exp: tuple(got.shape) != (3, 7), "the output keeps the shape (B, T)"),
        Hint(lambda got, exp: bool(torch.equal(got[:, 1:], _TOKENS[:, 1:])), "the first token is lost and the last kept: it is the last token of each row that drops off"),
        Hint(lambda got, exp: bool(torch.equal(got[:, :-1], _TOKENS[:, 1:])), "that is a shift to the left (the targets' direction); the inputs move one step to the right"),
        Hint(lambda got, exp: got.dtype != torch.long, "token ids stay torch.long"),
    ]),
    expected=REFERENCE,
)
def _(ns):
    return ns.shift_right(_TOKENS.clone(), 2)


@suite.case("shift", "T=1: a row becomes just the start token", points=1, check=equal(), expected=torch.tensor([[30], [30]]))
def _(ns):
    return ns.shift_right(torch.tensor([[5], [6]]), start_id=30)


@suite.case(
    "shift",
    "the caller's tensor is not modified",
    points=1,
    check=satisfies(lambda got: None if got else "shift_right changed the tensor it was given: build a new tensor instead of writing into the input"),
)
def _(ns):
    tokens = _TOKENS.clone()
    ns.shift_right(tokens, 2)
    return bool(torch.equal(tokens, _TOKENS))


# ---------------------------------------------------------------- pad_and_shift

_SEQS = [[11, 12, 13, 14, 15], [21], [31, 32, 33], [41, 42, 43, 44, 45, 46, 47]]


def _pas_hints(pad_id, ignore):
    lengths = [len(s) for s in _SEQS]

    def tail(got, side, value):
        t = got[side]
        return all(t[b, n:].eq(value).all() for b, n in enumerate(lengths))

    return [
        Hint(lambda got, exp: got[1].shape == exp[1].shape and tail(got, 1, pad_id) and pad_id != ignore, "the targets are padded with ignore_index, not pad_id"),
        Hint(lambda got, exp: got[0].shape == exp[0].shape and bool(torch.equal(got[0][:, 1:], torch.where(exp[1][:, :-1] == ignore, pad_id, exp[1][:, :-1]))) and not bool(torch.equal(got[0], exp[0])), "shift each sequence before padding it: the input row holds pad exactly where the target is ignored"),
        Hint(lambda got, exp: got[0].shape == exp[0].shape and bool(got[0][1, 0] == pad_id), "pad at the end of each sequence (right padding), not at the start"),
        Hint(lambda got, exp: got[1].shape == exp[1].shape and tail(got, 1, -100) and ignore != -100, "use the ignore_index you were given"),
        Hint(lambda got, exp: got[0].dtype != torch.long or got[1].dtype != torch.long, "both tensors hold token ids: torch.long"),
    ]


@suite.case(
    "pad_and_shift",
    "four sequences of lengths 5, 1, 3, 7 with start_id=2, pad_id=1, ignore_index=-1",
    points=2,
    check=equal(_pas_hints(1, -1)),
    expected=REFERENCE,
)
def _(ns):
    return _isolated(ns, "pad_and_shift", _SEQS, start_id=2, pad_id=1, ignore_index=-1)


@suite.case(
    "pad_and_shift",
    "the same sequences with the default ignore_index",
    points=1,
    check=equal(_pas_hints(1, -100)),
    expected=REFERENCE,
)
def _(ns):
    return _isolated(ns, "pad_and_shift", _SEQS, 2, 1)


@suite.case("pad_and_shift", "sequences of equal length need no padding", points=1, check=equal(), expected=REFERENCE)
def _(ns):
    return _isolated(ns, "pad_and_shift", [[7, 8, 9], [10, 11, 12]], start_id=3, pad_id=4)


@suite.case("pad_and_shift", "an empty list of sequences raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(_isolated, ns, "pad_and_shift", [], 2, 1)


# ---------------------------------------------------------------- lm_loss

_LOGITS = randn(3, 5, 11, seed=91) * 2
_TARGETS = torch.randint(0, 11, (3, 5), generator=generator(92))
_TARGETS[0, 3:] = -100
_TARGETS[1, 1:] = -100  # 6 of 15 positions ignored
_KEPT = 9


def _loss_hints(kept, total):
    return [
        Hint(lambda got, exp: not isinstance(got, torch.Tensor), "return a tensor (no .item()): the loss must be back-propagated"),
        Hint(lambda got, exp: abs(float(got) - float(exp) * kept / total) < 1e-4 * abs(float(exp)), "your mean counts the ignored positions too; divide by the number of scored positions"),
        Hint(lambda got, exp: abs(float(got) - float(exp) * kept) < 1e-4 * abs(float(exp)) * kept, "that is a sum over the positions; the loss is their mean"),
    ]


@suite.case(
    "lm_loss",
    "B=3, T=5, V=11 with 6 ignored positions",
    points=2,
    check=close(rtol=1e-5, atol=1e-6, hints=_loss_hints(_KEPT, 15)),
    expected=REFERENCE,
)
def _(ns):
    return ns.lm_loss(_LOGITS.clone(), _TARGETS.clone())


@suite.case(
    "lm_loss",
    "a custom ignore_index of 0 skips token 0 instead of -100",
    points=1,
    check=close(rtol=1e-5, atol=1e-6),
    expected=REFERENCE,
)
def _(ns):
    targets = torch.randint(0, 4, (2, 7), generator=generator(93))
    targets[0, 0] = 0
    return ns.lm_loss(randn(2, 7, 4, seed=94), targets, ignore_index=0)


@suite.case(
    "lm_loss",
    "the gradient reaches the logits and is 0 at ignored positions",
    points=1,
    check=close(rtol=1e-4, atol=1e-7),
    expected=REFERENCE,
)
def _(ns):
    logits = _LOGITS.clone().requires_grad_(True)
    ns.lm_loss(logits, _TARGETS.clone()).backward()
    return logits.grad
