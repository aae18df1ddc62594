"""Public tests of stage 04_masking: students run these in the notebook with check()."""

import math

import torch

from autograder.kit import Hint, Suite, catch, close, equal, raises, satisfies

suite = Suite(public=True)

F_, T_ = False, True


def _bool(rows):
    return torch.tensor(rows, dtype=torch.bool)


# A question is tested on its own: while combined_mask and pad_and_shift run, correct
# versions of causal_mask, padding_mask and shift_right stand in for the student's, so
# a mistake in one of those costs points only once, on its own question.


def _ok_causal(T, device=None):
    pos = torch.arange(T, device=device)
    return pos.unsqueeze(0) > pos.unsqueeze(1)


def _ok_padding(ids, pad_id):
    return ids.eq(pad_id).unsqueeze(1)


def _ok_shift(tokens, start_id):
    return torch.cat((torch.full_like(tokens[:, :1], start_id), tokens[:, :-1]), dim=1)


def _on_its_own(ns, name, *args, **kwargs):
    """Call the student's ``name`` with correct versions of the stage's other functions in place."""
    func = getattr(ns, name)
    names = ns._names
    helpers = {"causal_mask": _ok_causal, "padding_mask": _ok_padding, "shift_right": _ok_shift}
    helpers.pop(name, None)
    saved = {key: names[key] for key in helpers if key in names}
    names.update(helpers)
    try:
        return func(*args, **kwargs)
    finally:
        for key in helpers:
            if key in saved:
                names[key] = saved[key]
            else:
                names.pop(key, None)


def _dtype_hint():
    return Hint(lambda got, exp: isinstance(got, torch.Tensor) and got.dtype != torch.bool, "a mask is a boolean tensor (True = blocked), not numbers to add or multiply")


# ---------------------------------------------------------------- causal_mask

_CAUSAL_4 = _bool([[F_, T_, T_, T_], [F_, F_, T_, T_], [F_, F_, F_, T_], [F_, F_, F_, F_]])


@suite.case(
    "causal_mask",
    "T=4: True strictly above the diagonal",
    points=1,
    check=equal([
        _dtype_hint(),
        Hint(lambda got, exp: bool(torch.equal(got, ~exp)), "the mask is inverted: True must mark the BLOCKED keys (the future), not the ones a query may see"),
        Hint(lambda got, exp: bool(torch.equal(got, exp | torch.eye(4, dtype=torch.bool))), "the diagonal is blocked: every position must be allowed to attend to itself"),
        Hint(lambda got, exp: bool(got[1:, 0].all()), "the past is blocked and the future open: True must mark the keys AFTER the query (j > i)"),
    ]),
    expected=_CAUSAL_4,
)
def _(ns):
    return ns.causal_mask(4)


@suite.case("causal_mask", "T=1 with device='cpu' gives [[False]]", points=1, check=equal([_dtype_hint()]), expected=_bool([[F_]]))
def _(ns):
    return ns.causal_mask(1, device="cpu")


# ---------------------------------------------------------------- padding_mask

_SHAPE_HINTS = [
    Hint(lambda got, exp: tuple(got.shape) == (exp.shape[0], exp.shape[2], 1), "your mask has shape (B, T, 1), which blocks queries; padding must block keys, the last axis"),
    Hint(lambda got, exp: tuple(got.shape) == (exp.shape[0], exp.shape[2]), "keep a middle axis of size 1, (B, 1, T), so the mask broadcasts over the queries"),
]


@suite.case(
    "padding_mask",
    "ids [[5, 6, 0], [7, 0, 0]] with pad_id=0",
    points=1,
    check=equal([*_SHAPE_HINTS, _dtype_hint()]),
    expected=_bool([[[F_, F_, T_]], [[F_, T_, T_]]]),
)
def _(ns):
    return ns.padding_mask(torch.tensor([[5, 6, 0], [7, 0, 0]]), pad_id=0)


@suite.case(
    "padding_mask",
    "pad_id=9: token 0 is an ordinary token",
    points=1,
    check=equal([
        *_SHAPE_HINTS,
        Hint(lambda got, exp: isinstance(got, torch.Tensor) and got.shape == exp.shape and bool(got[0, 0, 0]), "use the pad_id argument, not a fixed id"),
    ]),
    expected=_bool([[[F_, F_, F_, T_]], [[F_, F_, T_, T_]]]),
)
def _(ns):
    return ns.padding_mask(torch.tensor([[0, 4, 2, 9], [3, 0, 9, 9]]), pad_id=9)


# ---------------------------------------------------------------- combined_mask


@suite.case(
    "combined_mask",
    "ids [[5, 6, 0]] with pad_id=0",
    points=1,
    check=equal([_dtype_hint()]),
    expected=_bool([[[F_, T_, T_], [F_, F_, T_], [F_, F_, T_]]]),
)
def _(ns):
    return _on_its_own(ns, "combined_mask", torch.tensor([[5, 6, 0]]), 0)


@suite.case(
    "combined_mask",
    "a batch of 2 with different amounts of padding (pad_id=1)",
    points=1,
    check=equal([
        _dtype_hint(),
        Hint(lambda got, exp: bool(torch.equal(got, ~exp)), "the mask is inverted: True means BLOCKED"),
        Hint(lambda got, exp: tuple(got.shape) == tuple(exp.shape) and bool(got[1, 3].all()), "your padding blocks whole rows (queries); it must block columns (keys)"),
        Hint(lambda got, exp: tuple(got.shape) == tuple(exp.shape) and not bool(got[0].any()), "a key must be blocked when it is in the future OR is padding"),
    ]),
    expected=_bool([
        [[F_, T_, T_, T_], [F_, F_, T_, T_], [F_, F_, F_, T_], [F_, F_, F_, F_]],
        [[F_, T_, T_, T_], [F_, F_, T_, T_], [F_, F_, T_, T_], [F_, F_, T_, T_]],
    ]),
)
def _(ns):
    return _on_its_own(ns, "combined_mask", torch.tensor([[4, 5, 6, 7], [4, 5, 1, 1]]), pad_id=1)


# ---------------------------------------------------------------- shift

_SHIFT_HINTS = [
    Hint(lambda got, exp: isinstance(got, torch.Tensor) and tuple(got.shape) != tuple(exp.shape), "the output keeps the shape (B, T): the last token drops off"),
]


@suite.case("shift", "[[5, 6, 7]] with start_id=1 gives [[1, 5, 6]]", points=1, check=equal(_SHIFT_HINTS), expected=torch.tensor([[1, 5, 6]]))
def _(ns):
    return ns.shift_right(torch.tensor([[5, 6, 7]]), start_id=1)


@suite.case(
    "shift",
    "a batch of 2: long dtype kept and the input left unchanged",
    points=1,
    check=equal(_SHIFT_HINTS),
    expected=(torch.tensor([[0, 3, 4, 5], [0, 7, 8, 9]]), torch.tensor([[3, 4, 5, 6], [7, 8, 9, 10]])),
)
def _(ns):
    tokens = torch.tensor([[3, 4, 5, 6], [7, 8, 9, 10]])
    out = ns.shift_right(tokens, 0)
    return out, tokens


# ---------------------------------------------------------------- pad_and_shift


@suite.case(
    "pad_and_shift",
    "[[5, 6, 7], [8]] with start_id=1, pad_id=0",
    points=1,
    check=equal([
        Hint(lambda got, exp: isinstance(got[1], torch.Tensor) and got[1].shape == exp[1].shape and int(got[1][1, 1]) == 0, "targets are padded with ignore_index, so that the loss skips them"),
    ]),
    expected=(torch.tensor([[1, 5, 6], [1, 0, 0]]), torch.tensor([[5, 6, 7], [8, -100, -100]])),
)
def _(ns):
    return _on_its_own(ns, "pad_and_shift", [[5, 6, 7], [8]], start_id=1, pad_id=0)


@suite.case(
    "pad_and_shift",
    "ignore_index=-1 is used for the padding of the targets",
    points=1,
    check=equal(),
    expected=(torch.tensor([[2, 4, 0], [2, 6, 7]]), torch.tensor([[4, 5, -1], [6, 7, 8]])),
)
def _(ns):
    return _on_its_own(ns, "pad_and_shift", [[4, 5], [6, 7, 8]], start_id=2, pad_id=0, ignore_index=-1)


# ---------------------------------------------------------------- lm_loss

_NOT_A_TENSOR = Hint(lambda got, exp: not isinstance(got, torch.Tensor), "return the loss as a tensor (no .item()), so that it can be back-propagated")


@suite.case(
    "lm_loss",
    "uniform logits over V=4 give log 4",
    points=1,
    check=close(rtol=1e-5, atol=1e-6, hints=[_NOT_A_TENSOR]),
    expected=torch.tensor(math.log(4.0)),
)
def _(ns):
    return ns.lm_loss(torch.zeros(1, 2, 4), torch.tensor([[3, -100]]))


@suite.case(
    "lm_loss",
    "an ignored position does not count, however wrong its logits",
    points=1,
    check=close(rtol=1e-5, atol=1e-6, hints=[
        _NOT_A_TENSOR,
        Hint(lambda got, exp: abs(float(got) - float(exp) * 2 / 3) < 1e-4, "you divide by all 3 positions; the mean is over the positions that are not ignored"),
        Hint(lambda got, exp: abs(float(got) - float(exp) * 2) < 1e-4, "that is the sum; the loss is a mean"),
    ]),
    expected=torch.tensor((math.log(2.0) + math.log(4.0 / 3.0)) / 2),
)
def _(ns):
    # position 0: uniform over 2, target 0 -> log 2; position 1: ignored (it would cost about 20);
    # position 2: logits [log 3, 0], target 0 -> log(4/3)
    logits = torch.tensor([[[0.0, 0.0], [10.0, -10.0], [math.log(3.0), 0.0]]])
    return ns.lm_loss(logits, torch.tensor([[0, -100, 0]]))


@suite.case("lm_loss", "logits and targets of different lengths raise ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.lm_loss, torch.zeros(2, 3, 5), torch.zeros(2, 4, dtype=torch.long))
