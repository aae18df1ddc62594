"""Public tests of stage 04_masking: students run these in the notebook with check().

Expected values are literals (masks written as rows of 0s and 1s) and properties.
Tolerances: masks, shifted ids and padded batches are compared exactly; lm_loss with
rtol 1e-5, atol 1e-6 (a float32 cross-entropy of a few numbers against a float64 literal).
Masks are compared with their dtype (a mask is boolean: a float mask of 0s and -infs is
another thing, not a dtype slip); ids and losses by their values whatever the dtype
(``dtype=None``): each dtype the notebook states has a test of its own (``dtypes()``), so
that one slip costs that test alone. A test that a function doing nothing could pass (the
caller's tensor left unchanged, T=1 and the empty mask) is a guard: it counts only when a
test of the question's values passes.
"""

import math

import torch

from autograder.kit import Hint, Placement, Suite, Verdict, catch, close, dtypes, equal, raises, unplaced

suite = Suite(public=True)


def _grid(rows):
    """A boolean matrix written as rows of 0s and 1s: "011 001 000"."""
    return torch.tensor([[ch == "1" for ch in row] for row in rows.split()])


# A question is tested on its own: while combined_mask and pad_and_shift run, the other
# functions of the stage answer from the tables below (the calls these tests' inputs lead
# to, with their answers written out); any other call goes to your own function. The
# tables hold causal_mask and padding_mask for the ids of the tests (padding_mask refusing
# the ids that are not 2-D, as it must), and shift_right for each sequence alone and for
# the whole batch padded with pad_id or with ignore_index. So a mistake in causal_mask,
# padding_mask or shift_right costs points only once, on its own question.
_CAUSAL = {3: _grid("011 001 000"), 5: _grid("01111 00111 00011 00001 00000")}
_PADDING = {
    (((5, 6, 0),), 0): _grid("001")[None],
    (((4, 5, 6, 7, 8), (4, 5, 1, 1, 1)), 1): torch.stack([_grid("00000"), _grid("00111")]),
}
_NOT_2D = {((3,), (5, 6, 0), 0): "ids must have shape (B, T)"}  # (shape, ids, pad_id) padding_mask refuses
_SHIFTED = {
    (((5, 6, 7),), 1): [[1, 5, 6]],
    (((8,),), 1): [[1]],
    (((4, 5),), 2): [[2, 4]],
    (((6, 7, 8),), 2): [[2, 6, 7]],
    (((5, 6, 7), (8, 0, 0)), 1): [[1, 5, 6], [1, 8, 0]],
    (((5, 6, 7), (8, -100, -100)), 1): [[1, 5, 6], [1, 8, -100]],
    (((4, 5, 0), (6, 7, 8)), 2): [[2, 4, 5], [2, 6, 7]],
    (((4, 5, -1), (6, 7, 8)), 2): [[2, 4, 5], [2, 6, 7]],
}


def _rows(t):
    """The rows of a (B, T) tensor as a key of the tables (None for any other input: no table answers it)."""
    try:
        return tuple(tuple(int(v) for v in row) for row in t.tolist())
    except TypeError:  # not 2-D: a row is a number, or an item a list
        return None


def _flat(t):
    """A tensor of any shape as (shape, values), for a key of _NOT_2D (empty for anything else)."""
    try:
        return tuple(t.shape), tuple(int(v) for v in t.flatten().tolist())
    except (AttributeError, TypeError, ValueError):
        return (), ()


def _answering(ns):
    """Table-backed causal_mask, padding_mask and shift_right, falling back on the notebook's own."""
    own = dict(ns._names)

    def causal_mask(T, device=None):
        found = _CAUSAL.get(T)
        if found is None:
            return own["causal_mask"](T, device)
        return found.clone() if device is None else found.clone().to(device)

    def padding_mask(ids, pad_id):
        refused = _NOT_2D.get((*_flat(ids), pad_id))
        if refused is not None:
            raise ValueError(refused)
        found = _PADDING.get((_rows(ids), pad_id))
        return own["padding_mask"](ids, pad_id) if found is None else found.clone().to(ids.device)

    def shift_right(tokens, start_id):
        found = _SHIFTED.get((_rows(tokens), start_id))
        return (
            own["shift_right"](tokens, start_id)
            if found is None
            else torch.tensor(found, dtype=tokens.dtype, device=tokens.device)
        )

    return {"causal_mask": causal_mask, "padding_mask": padding_mask, "shift_right": shift_right}


def _on_its_own(ns, name, *args, **kwargs):
    """Call the notebook's ``name`` while the stage's other functions answer from the tables."""
    func = getattr(ns, name)
    names = ns._names
    helpers = _answering(ns)
    helpers.pop(name, None)  # the function under test is the notebook's own
    saved = {key: names.get(key) for key in helpers}
    names.update(helpers)
    try:
        return func(*args, **kwargs)
    finally:
        for key, value in saved.items():
            if value is None:
                names.pop(key, None)
            else:
                names[key] = value


def _tensor_like(got, exp):
    return type(got) is torch.Tensor and got.shape == exp.shape


def _dtype_hint():
    return Hint(
        lambda got, exp: type(got) is torch.Tensor and got.dtype != torch.bool,
        "a mask is a boolean tensor (True = blocked), not numbers to add or multiply",
        mistake="mask not boolean",
    )


# ---------------------------------------------------------------- causal_mask

_CAUSAL_4 = _grid("0111 0011 0001 0000")


@suite.case(
    "causal_mask",
    "T=4: True strictly above the diagonal",
    points=1,
    check=equal(
        [
            _dtype_hint(),
            Hint(
                lambda got, exp: _tensor_like(got, exp) and bool(torch.equal(got, ~exp)),
                "the mask is inverted: True must mark the BLOCKED keys (the future), not the ones a query may see",
                mistake="mask inverted",
            ),
            Hint(
                lambda got, exp: (
                    _tensor_like(got, exp) and bool(torch.equal(got, exp | torch.eye(4, dtype=torch.bool)))
                ),
                "the diagonal is blocked: every position must be allowed to attend to itself",
                mistake="diagonal blocked",
            ),
            Hint(
                lambda got, exp: _tensor_like(got, exp) and bool(got[1:, 0].all()),
                "the past is blocked and the future open: True must mark the keys AFTER the query (j > i)",
                mistake="past blocked instead of the future",
            ),
        ]
    ),
    expected=_CAUSAL_4,
)
def _(ns):
    return ns.causal_mask(4)


@suite.case(
    "causal_mask", "T=1 gives [[False]]", points=1, check=equal([_dtype_hint()]), expected=_grid("0"), guard=True
)
def _(ns):
    return ns.causal_mask(1)


@suite.case(
    "causal_mask",
    "T=0 gives a (0, 0) boolean mask",
    points=1,
    check=equal([_dtype_hint()]),
    expected=torch.zeros(0, 0, dtype=torch.bool),
    guard=True,
)
def _(ns):
    return ns.causal_mask(0)


@suite.case("causal_mask", "T=-1 raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.causal_mask, -1)


def _placed_mask(got, expected, reveal):
    """The mask is right, and made on the device passed (or moved there)."""
    calls, mask = got
    verdict = equal()(mask, _grid("011 001 000"), reveal)
    if not verdict.passed:
        return Verdict(False, f"the mask is not right yet: {verdict.message}")
    made = unplaced(calls)
    if made:
        return Verdict(
            False,
            f"causal_mask(3, device='cpu') makes its tensor with torch.{made}(...) without passing the device on\nHint: create the mask on `device` (device=device), or move it there",
            "device ignored",
        )
    return Verdict(True)


@suite.case(
    "causal_mask",
    "the device argument reaches the tensor it makes",
    points=1,
    check=_placed_mask,
    builds_on=("T=4: True strictly above the diagonal",),
)
def _(ns):
    with Placement() as spy:
        mask = ns.causal_mask(3, device="cpu")
    return [list(call) for call in spy.calls], mask


# ---------------------------------------------------------------- padding_mask

_SHAPE_HINTS = [
    Hint(
        lambda got, exp: type(got) is torch.Tensor and tuple(got.shape) == (exp.shape[0], exp.shape[2], 1),
        "your mask has shape (B, T, 1), which blocks queries; padding must block keys, the last axis",
        mistake="padding mask (B, T, 1)",
    ),
    Hint(
        lambda got, exp: type(got) is torch.Tensor and tuple(got.shape) == (exp.shape[0], exp.shape[2]),
        "keep a middle axis of size 1, (B, 1, T), so the mask broadcasts over the queries",
        mistake="padding mask (B, T)",
    ),
    Hint(
        lambda got, exp: type(got) is torch.Tensor and tuple(got.shape) == (exp.shape[0], 1, 1, exp.shape[2]),
        "the mask is (B, 1, T); adding an axis for heads is a later stage's job",
        mistake="padding mask with a head axis",
    ),
]


@suite.case(
    "padding_mask",
    "ids [[5, 6, 0], [7, 0, 0]] with pad_id=0",
    points=1,
    check=equal(
        [
            *_SHAPE_HINTS,
            Hint(
                lambda got, exp: _tensor_like(got, exp) and bool(torch.equal(got, ~exp)),
                "True must mark the padding (blocked), not the real tokens",
                mistake="mask inverted",
            ),
        ]
    ),
    expected=torch.stack([_grid("001"), _grid("011")]),
)
def _(ns):
    return ns.padding_mask(torch.tensor([[5, 6, 0], [7, 0, 0]]), pad_id=0)


@suite.case(
    "padding_mask",
    "pad_id=9: token 0 is an ordinary token",
    points=1,
    check=equal(
        [
            *_SHAPE_HINTS,
            Hint(
                lambda got, exp: (
                    _tensor_like(got, exp)
                    and bool(torch.equal(got[:, 0], torch.tensor([[0, 4, 2, 9], [3, 0, 9, 9]]) == 0))
                ),
                "use the pad_id argument, not a fixed id",
                mistake="pad id fixed",
            ),
        ]
    ),
    expected=torch.stack([_grid("0001"), _grid("0011")]),
)
def _(ns):
    return ns.padding_mask(torch.tensor([[0, 4, 2, 9], [3, 0, 9, 9]]), pad_id=9)


@suite.case("padding_mask", "1-D ids raise ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.padding_mask, torch.tensor([5, 6, 0]), 0)


# ---------------------------------------------------------------- combined_mask

_COMBINED_HINTS = [
    Hint(
        lambda got, exp: _tensor_like(got, exp) and bool(torch.equal(got, ~exp)),
        "the mask is inverted: True means BLOCKED",
        mistake="mask inverted",
    ),
    Hint(
        lambda got, exp: _tensor_like(got, exp) and bool(got[1, 4].all()),
        "your padding blocks whole rows (queries); it must block columns (keys)",
        mistake="padding on the query side",
    ),
    Hint(
        lambda got, exp: _tensor_like(got, exp) and not bool(got[0].any()),
        "a key must be blocked when it is in the future OR is padding",
        mistake="AND instead of OR",
    ),
    Hint(
        lambda got, exp: _tensor_like(got, exp) and bool(torch.equal(got, exp | torch.eye(5, dtype=torch.bool))),
        "the diagonal is blocked: a real token may attend to itself",
        mistake="diagonal blocked",
    ),
]


@suite.case(
    "combined_mask",
    "ids [[5, 6, 0]] with pad_id=0",
    points=1,
    check=equal(),
    expected=_grid("011 001 001")[None],
)
def _(ns):
    return _on_its_own(ns, "combined_mask", torch.tensor([[5, 6, 0]]), 0)


@suite.case(
    "combined_mask",
    "a batch of 2 with different amounts of padding (pad_id=1)",
    points=1,
    check=equal(_COMBINED_HINTS),
    expected=torch.stack([_grid("01111 00111 00011 00001 00000"), _grid("01111 00111 00111 00111 00111")]),
)
def _(ns):
    return _on_its_own(ns, "combined_mask", torch.tensor([[4, 5, 6, 7, 8], [4, 5, 1, 1, 1]]), pad_id=1)


@suite.case("combined_mask", "1-D ids raise ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(_on_its_own, ns, "combined_mask", torch.tensor([5, 6, 0]), 0)


# ---------------------------------------------------------------- shift


def _shift_hints(tokens):
    """Known mistakes of shift_right, recognised from its output for the input ``tokens``."""

    def like(got):
        return type(got) is torch.Tensor and got.shape == tokens.shape

    return [
        Hint(
            lambda got, exp: type(got) is torch.Tensor and tuple(got.shape) == (tokens.shape[0], tokens.shape[1] + 1),
            "the output keeps the shape (B, T): the last token drops off",
            mistake="shift keeps every token",
        ),
        Hint(
            lambda got, exp: like(got) and bool(torch.equal(got[:, 1:], tokens[:, 1:])),
            "the first token is lost and the last kept: it is the last token of each row that drops off",
            mistake="first token dropped",
        ),
        Hint(
            lambda got, exp: like(got) and bool(torch.equal(got[:, :-1], tokens[:, 1:])),
            "that is a shift to the left (the targets' direction); the inputs move one step to the right",
            mistake="shift to the left",
        ),
    ]


_FIVE_SIX_SEVEN = torch.tensor([[5, 6, 7]])
_BATCH = torch.tensor([[3, 4, 5, 6], [7, 8, 9, 10]])


@suite.case(
    "shift",
    "[[5, 6, 7]] with start_id=1 gives [[1, 5, 6]]",
    points=1,
    check=equal(_shift_hints(_FIVE_SIX_SEVEN), dtype=None),
    expected=torch.tensor([[1, 5, 6]]),
)
def _(ns):
    return ns.shift_right(_FIVE_SIX_SEVEN.clone(), start_id=1)


@suite.case(
    "shift",
    "a batch of 2: the input is left unchanged",
    points=1,
    check=equal(
        [
            Hint(
                lambda got, exp: type(got[1]) is torch.Tensor and not bool(torch.equal(got[1], exp[1])),
                "shift_right changed the tensor it was given: build a new tensor instead of writing into the input",
                mistake="writes into the input",
            )
        ],
        dtype=None,
    ),
    expected=(torch.tensor([[0, 3, 4, 5], [0, 7, 8, 9]]), _BATCH.clone()),
)
def _(ns):
    tokens = _BATCH.clone()
    out = ns.shift_right(tokens, 0)
    return out, tokens


def _placed_shift(got, expected, reveal):
    """The shifted ids are right, and the start column is made on the tokens' device."""
    calls, out = got
    verdict = equal(dtype=None)(out, torch.tensor([[1, 5, 6]]), reveal)
    if not verdict.passed:
        return Verdict(False, f"the result is not right yet: {verdict.message}")
    made = unplaced(calls)
    if made:
        return Verdict(
            False,
            f"shift_right makes a tensor with torch.{made}(...) without a device\nHint: make the start column on tokens.device (tokens.new_full, or device=tokens.device)",
            "start column off the tokens' device",
        )
    return Verdict(True)


@suite.case(
    "shift",
    "the start column is made on the device of tokens",
    points=1,
    check=_placed_shift,
    builds_on=("[[5, 6, 7]] with start_id=1 gives [[1, 5, 6]]",),
)
def _(ns):
    tokens = _FIVE_SIX_SEVEN.clone()
    with Placement() as spy:
        out = ns.shift_right(tokens, 1)
    return [list(call) for call in spy.calls], out


@suite.case(
    "shift",
    "the result keeps the dtype of tokens",
    points=1,
    check=dtypes(
        [
            Hint(
                lambda got, exp: (
                    isinstance(got, (list, tuple))
                    and any(type(g) is torch.Tensor and g.dtype != e for g, e in zip(got, exp))
                ),
                "token ids keep their dtype: make the start column with the dtype of the tokens (tokens.new_full)",
                mistake="shift changes the dtype",
            )
        ]
    ),
    expected=[torch.int64, torch.int32],
)
def _(ns):
    return [ns.shift_right(_FIVE_SIX_SEVEN.clone(), 1), ns.shift_right(_FIVE_SIX_SEVEN.to(torch.int32), 1)]


@suite.case("shift", "1-D tokens raise ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.shift_right, torch.tensor([5, 6, 7]), 1)


# ---------------------------------------------------------------- pad_and_shift


def _pair_like(got, exp):
    return isinstance(got, (tuple, list)) and len(got) == 2 and all(_tensor_like(g, e) for g, e in zip(got, exp))


@suite.case(
    "pad_and_shift",
    "[[5, 6, 7], [8]] with start_id=1, pad_id=0",
    points=1,
    check=equal(
        [
            Hint(
                lambda got, exp: _pair_like(got, exp) and int(got[1][1, 1]) == 0,
                "targets are padded with ignore_index, so that the loss skips them",
                mistake="targets padded with pad_id",
            ),
            Hint(
                lambda got, exp: _pair_like(got, exp) and got[0].tolist() == [[1, 5, 6], [1, 8, 0]],
                "shift each sequence before padding it: the inputs hold pad_id exactly where the targets are ignored",
                mistake="padded before shifting",
            ),
            Hint(
                lambda got, exp: _pair_like(got, exp) and got[0].tolist() == [[1, 5, 6], [0, 0, 1]],
                "pad at the end of each sequence (right padding), not at the start",
                mistake="padding on the left",
            ),
            Hint(
                lambda got, exp: _pair_like(got, exp) and got[0].tolist() == [[5, 6, 7], [8, 0, 0]],
                "the inputs are the sequences shifted right, with start_id in front",
                mistake="inputs not shifted",
            ),
        ],
        dtype=None,
    ),
    expected=(torch.tensor([[1, 5, 6], [1, 0, 0]]), torch.tensor([[5, 6, 7], [8, -100, -100]])),
)
def _(ns):
    return _on_its_own(ns, "pad_and_shift", [[5, 6, 7], [8]], start_id=1, pad_id=0)


@suite.case(
    "pad_and_shift",
    "ignore_index=-1 is used for the padding of the targets",
    points=1,
    check=equal(
        [
            Hint(
                lambda got, exp: _pair_like(got, exp) and int(got[1][0, 2]) == -100,
                "use the ignore_index you were given",
                mistake="ignore_index argument ignored",
            )
        ],
        dtype=None,
    ),
    expected=(torch.tensor([[2, 4, 0], [2, 6, 7]]), torch.tensor([[4, 5, -1], [6, 7, 8]])),
)
def _(ns):
    return _on_its_own(ns, "pad_and_shift", [[4, 5], [6, 7, 8]], start_id=2, pad_id=0, ignore_index=-1)


@suite.case(
    "pad_and_shift",
    "inputs and targets are torch.long",
    points=1,
    check=dtypes(
        [
            Hint(
                lambda got, exp: (
                    isinstance(got, (tuple, list))
                    and any(type(g) is torch.Tensor and g.dtype != torch.long for g in got)
                ),
                "both tensors hold token ids: torch.long",
                mistake="batch not torch.long",
            )
        ]
    ),
    expected=(torch.long, torch.long),
)
def _(ns):
    return _on_its_own(ns, "pad_and_shift", [[5, 6, 7], [8]], start_id=1, pad_id=0)


@suite.case("pad_and_shift", "no sequences at all raise ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(_on_its_own, ns, "pad_and_shift", [], 1, 0)


# ---------------------------------------------------------------- lm_loss


def _loss(got):
    return float(got) if type(got) is torch.Tensor and got.numel() == 1 else math.nan


_NOT_A_TENSOR = Hint(
    lambda got, exp: isinstance(got, float),
    "return the loss as a tensor (no .item()), so that it can be back-propagated",
    mistake="loss returned as a float",
)


@suite.case(
    "lm_loss",
    "uniform logits over V=4 give log 4",
    points=1,
    check=close(rtol=1e-5, atol=1e-6, dtype=None, hints=[_NOT_A_TENSOR]),
    expected=torch.tensor(math.log(4.0)),
)
def _(ns):
    return ns.lm_loss(torch.zeros(1, 2, 4), torch.tensor([[3, -100]]))


@suite.case(
    "lm_loss",
    "an ignored position does not count, however wrong its logits",
    points=1,
    check=close(
        rtol=1e-5,
        atol=1e-6,
        dtype=None,
        hints=[
            _NOT_A_TENSOR,
            Hint(
                lambda got, exp: abs(_loss(got) - float(exp) * 2 / 3) < 1e-4,
                "you divide by all 3 positions; the mean is over the positions that are not ignored",
                mistake="mean over every position",
            ),
            Hint(
                lambda got, exp: abs(_loss(got) - float(exp) * 2) < 1e-4,
                "that is the sum; the loss is a mean",
                mistake="sum instead of mean",
            ),
        ],
    ),
    expected=torch.tensor((math.log(2.0) + math.log(4.0 / 3.0)) / 2),
)
def _(ns):
    # position 0: uniform over 2, target 0 -> log 2; position 1: ignored (it would cost about 20);
    # position 2: logits [log 3, 0], target 0 -> log(4/3)
    logits = torch.tensor([[[0.0, 0.0], [10.0, -10.0], [math.log(3.0), 0.0]]])
    return ns.lm_loss(logits, torch.tensor([[0, -100, 0]]))


@suite.case(
    "lm_loss",
    "ignore_index=1 skips the targets equal to 1",
    points=1,
    check=close(
        rtol=1e-5,
        atol=1e-6,
        dtype=None,
        hints=[
            _NOT_A_TENSOR,
            Hint(
                lambda got, exp: abs(_loss(got) - (math.log(2.0) + 20.0) / 2) < 1e-3,
                "the loss counts the position whose target is ignore_index: pass ignore_index on to the cross-entropy",
                mistake="ignore_index not passed on",
            ),
        ],
    ),
    expected=torch.tensor(math.log(2.0)),
)
def _(ns):
    # position 0: uniform over 2, target 0 -> log 2; position 1: target 1 is ignored here (it would cost 20)
    logits = torch.tensor([[[0.0, 0.0], [10.0, -10.0]]])
    return ns.lm_loss(logits, torch.tensor([[0, 1]]), ignore_index=1)


@suite.case(
    "lm_loss",
    "the gradient of uniform logits over V=4",
    points=1,
    check=close(rtol=1e-5, atol=1e-6, dtype=None),
    expected=torch.tensor([[[0.25, 0.25, 0.25, -0.75], [0.0, 0.0, 0.0, 0.0]]]),
)
def _(ns):
    # the gradient of the mean cross-entropy is softmax - one-hot at the one scored position, 0 at the ignored one
    logits = torch.zeros(1, 2, 4, requires_grad=True)
    ns.lm_loss(logits, torch.tensor([[3, -100]])).backward()
    return logits.grad


@suite.case("lm_loss", "targets (3, 2) for logits (2, 3, 5) raise ValueError", points=1, check=raises("ValueError"))
def _(ns):
    # as many targets as positions (6), but not shaped like them: a check of the shapes must refuse it
    return catch(ns.lm_loss, torch.zeros(2, 3, 5), torch.zeros(3, 2, dtype=torch.long))
