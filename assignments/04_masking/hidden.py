"""Hidden tests of stage 04_masking (run only when grading; never shipped to students).

Expected values marked REFERENCE are the reference solution's outputs on the same
probe, saved at build time. Batch size, length, vocabulary and ids all differ from
each other in every probe, so that a transposed or wrongly broadcast mask cannot pass
by accident; the pad id is never 0 in the hidden probes.

Each question is graded on its own. While the probes of combined_mask and pad_and_shift
run, causal_mask, padding_mask and shift_right answer from tables of literal answers to
the calls those probes lead to (the refusal of the not-2-D ids included; any other call
goes to the student's own function), so a
mistake in one of them costs points on its own question only; no table answers a probe of
those three questions. The black-box causality tests use the test's own attention (stage
03's formula, not this stage's), not the notebook's given code. Probes return raw outputs
(masks, ids, the tokens as the caller holds them after the call, devices as strings);
every clause and its tests are in ``clauses.md`` beside this file.

Tolerances: masks are compared exactly (dtype, shape and every value: a mask is boolean);
shifted ids and padded batches exactly by shape and value, whatever their dtype
(``equal(dtype=None)``), each stated dtype having a test of its own (``dtypes()``), so that
a dtype slip costs that test alone. A test that a function doing nothing could pass (the
caller's tensor left unchanged, the empty mask, a batch without padding) is a guard
(``guard=True``): it counts only when a test of the question's values passes. lm_loss: rtol 1e-5, atol 1e-6 for the loss (float32 cross-entropy
in any order of summation agrees to about 1e-7); rtol 1e-4, atol 1e-7 for its gradient.
Devices: grading has no second device, so the device tests watch the torch calls the
function makes (a TorchFunctionMode) and fail a tensor made without a device that is
never moved to one; the result must be right too. (The meta device would do without
a spy, but its first use imports torch._dynamo, seconds in every grading process.)
Causality (black box): the probes return the student's mask, and the check runs the
test's own attention under it in the grading process: an earlier output may move by at
most 1e-6 when only later inputs change (it should not move at all), and an output must
move by more than 1e-4 when its own input changes.
"""

import math

import torch

from autograder.kit import (
    REFERENCE,
    Hint,
    Placement,
    Suite,
    Verdict,
    catch,
    close,
    dtypes,
    equal,
    generator,
    raises,
    randn,
    satisfies,
    unplaced,
)

from public import _flat, _grid, _loss, _rows, _tensor_like

suite = Suite(public=False)


# ---------------------------------------------------------------- answers for the other functions, and a private attention


# The calls combined_mask and pad_and_shift may make to the stage's other functions while
# their tests run, with the answers written out: causal_mask and padding_mask for the
# tests' ids (padding_mask refusing those that are not 2-D, as it must: _REFUSED, below
# _CIDS), shift_right for each sequence alone and for the whole batch padded with pad_id
# or with ignore_index. No probe of causal_mask, padding_mask or shift_right asks any of
# these questions, so the tables answer none of theirs.
_CAUSAL_6 = _grid("011111 001111 000111 000011 000001 000000")
_CIDS_PADDING = torch.stack([_grid(row) for row in ("000011", "001111", "000000", "000111")])  # (4, 1, 6)
_KNOWN_SHIFTS = {
    ((11, 12, 13, 14, 15),): (2, [[2, 11, 12, 13, 14]]),
    ((21,),): (2, [[2]]),
    ((31, 32, 33),): (2, [[2, 31, 32]]),
    ((41, 42, 43, 44, 45, 46, 47),): (2, [[2, 41, 42, 43, 44, 45, 46]]),
    ((7, 8, 9),): (3, [[3, 7, 8]]),
    ((10, 11, 12),): (3, [[3, 10, 11]]),
    ((7, 8, 9), (10, 11, 12)): (3, [[3, 7, 8], [3, 10, 11]]),
    # the whole batch of _SEQS, padded with pad_id (1) or with ignore_index (-1, -100), then shifted
    ((11, 12, 13, 14, 15, 1, 1), (21, 1, 1, 1, 1, 1, 1), (31, 32, 33, 1, 1, 1, 1), (41, 42, 43, 44, 45, 46, 47)): (
        2,
        [[2, 11, 12, 13, 14, 15, 1], [2, 21, 1, 1, 1, 1, 1], [2, 31, 32, 33, 1, 1, 1], [2, 41, 42, 43, 44, 45, 46]],
    ),
    (
        (11, 12, 13, 14, 15, -1, -1),
        (21, -1, -1, -1, -1, -1, -1),
        (31, 32, 33, -1, -1, -1, -1),
        (41, 42, 43, 44, 45, 46, 47),
    ): (
        2,
        [
            [2, 11, 12, 13, 14, 15, -1],
            [2, 21, -1, -1, -1, -1, -1],
            [2, 31, 32, 33, -1, -1, -1],
            [2, 41, 42, 43, 44, 45, 46],
        ],
    ),
    (
        (11, 12, 13, 14, 15, -100, -100),
        (21, -100, -100, -100, -100, -100, -100),
        (31, 32, 33, -100, -100, -100, -100),
        (41, 42, 43, 44, 45, 46, 47),
    ): (
        2,
        [
            [2, 11, 12, 13, 14, 15, -100],
            [2, 21, -100, -100, -100, -100, -100],
            [2, 31, 32, 33, -100, -100, -100],
            [2, 41, 42, 43, 44, 45, 46],
        ],
    ),
}
# The same answers looked up by what the tests ask: (the rows, start_id) for shift_right,
# T for causal_mask (and, below the test's ids _CIDS, (the rows, pad_id) for padding_mask).
_SHIFTS = {(rows, start): shifted for rows, (start, shifted) in _KNOWN_SHIFTS.items()}
_CAUSALS = {6: _CAUSAL_6, 4: _grid("0111 0011 0001 0000")}  # 4: T read as shape[1] of the 3-D ids (1, 4, 6)


def _answering(own):
    """causal_mask, padding_mask and shift_right answering from the tables, else the notebook's own."""

    def causal_mask(T, device=None):
        found = _CAUSALS.get(T)
        if found is None:
            return own["causal_mask"](T, device=device)
        return found.clone() if device is None else found.clone().to(device)

    def padding_mask(ids, pad_id):
        refused = _REFUSED.get((*_flat(ids), pad_id))
        if refused is not None:  # ids of the tests that are not 2-D: padding_mask refuses them
            raise ValueError(refused)
        found = _PADDINGS.get((_rows(ids), pad_id))
        if found is None:
            return own["padding_mask"](ids, pad_id=pad_id)
        return found.clone().to(ids.device)

    def shift_right(tokens, start_id):
        shifted = _SHIFTS.get((_rows(tokens), start_id))
        if shifted is None:
            return own["shift_right"](tokens, start_id=start_id)
        return torch.tensor(shifted, dtype=tokens.dtype, device=tokens.device)

    return {"causal_mask": causal_mask, "padding_mask": padding_mask, "shift_right": shift_right}


def _isolated(ns, name, *args, **kwargs):
    """The student's ``name`` called while the stage's other graded functions answer from the tables."""
    target = getattr(ns, name)
    scope = ns._names
    swap = _answering(dict(scope))
    swap.pop(name, None)  # the function under test is the student's own
    before = {k: scope.get(k) for k in swap}
    scope.update(swap)
    try:
        return target(*args, **kwargs)
    finally:
        for k, v in before.items():
            if v is None:
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


def _mask_problem(mask, shape):
    """Why ``mask`` cannot be used as a boolean mask of ``shape``, or None."""
    if type(mask) is not torch.Tensor:
        return f"the mask must be a tensor, got {type(mask).__name__}"
    if tuple(mask.shape) != shape:
        return f"the mask should have shape {shape}, got {tuple(mask.shape)}"
    return None


# ---------------------------------------------------------------- causal_mask


def _bool_like(got, exp):
    return _tensor_like(got, exp) and got.dtype == torch.bool


def _diag_blocked(got, exp):
    eye = torch.eye(exp.shape[0], dtype=torch.bool)
    return _tensor_like(got, exp) and bool(torch.equal(got.to(torch.bool), exp | eye))


def _inverted_mask(got, exp):
    return _tensor_like(got, exp) and bool(torch.equal(got.to(torch.bool), ~exp))


def _flipped(got, exp):
    return _tensor_like(got, exp) and bool(got.to(torch.bool)[-1, 0])


_NINE = "T=9 exactly, dtype and values"


@suite.case(
    "causal_mask",
    _NINE,
    points=2,
    check=equal(
        [
            Hint(
                lambda got, exp: type(got) is torch.Tensor and got.dtype != torch.bool,
                "return a boolean mask (True = blocked); turning it into -inf is the attention's job",
                mistake="mask not boolean",
            ),
            Hint(
                _inverted_mask,
                "the mask is inverted: in this course True marks the keys a query may NOT see",
                mistake="mask inverted",
            ),
            Hint(_diag_blocked, "the diagonal is blocked: a position may attend to itself", mistake="diagonal blocked"),
            Hint(
                _flipped,
                "the last query cannot see the first key: the mask blocks the past instead of the future",
                mistake="past blocked instead of the future",
            ),
        ]
    ),
    expected=REFERENCE,
)
def _(ns):
    return ns.causal_mask(9)


@suite.case("causal_mask", "T=0 gives an empty (0, 0) mask", points=1, check=equal(), expected=REFERENCE, guard=True)
def _(ns):
    return ns.causal_mask(0)


def _causal_story(mask):
    """Attention under the student's (7, 7) mask, run here in the grading process: later
    tokens must never move earlier outputs, and each token must move its own output."""
    problem = _mask_problem(mask, (7, 7))
    if problem:
        return problem
    mask, T = mask.to(torch.bool), 7
    x = randn(2, T, 6, seed=71)
    base = _attend(x, mask)
    for t in range(T):
        y = x.clone()
        y[:, t:] = randn(2, T - t, 6, seed=100 + t)
        out = _attend(y, mask)
        leak = float((out[:, :t] - base[:, :t]).abs().max()) if t else 0.0
        move = float((out[:, t] - base[:, t]).abs().max())
        if math.isnan(leak) or math.isnan(move):
            return "an output is NaN: some query has no key left to attend to (a position must at least see itself)"
        if leak > 1e-6:
            return f"changing tokens from position {t} on changed outputs before position {t}: the future leaks through the mask"
        if move <= 1e-4:
            return f"changing token {t} did not change output {t}: a position must see its own token"
    return None


@suite.case(
    "causal_mask",
    "black box: under this mask, changing later tokens never changes earlier outputs",
    points=2,
    check=satisfies(_causal_story),
    builds_on=(_NINE,),
)
def _(ns):
    return ns.causal_mask(7)


def _placed(what, hint, mistake, dtype="expected"):
    """A check: the output equals the fixture (its dtype as ``dtype`` says, see ``equal``), and
    every tensor the call made got a device."""

    def check(got, expected, reveal):
        calls, out = got
        verdict = equal(dtype=dtype)(out, expected[1], reveal)
        if not verdict.passed:
            return Verdict(False, f"the result is not right yet: {verdict.message}")
        made = unplaced(calls)
        if made:
            return Verdict(
                False, f"{what} makes a tensor with torch.{made}(...) on the default device\nHint: {hint}", mistake
            )
        return Verdict(True)

    return check


@suite.case(
    "causal_mask",
    "the mask is made on the device passed as device",
    points=1,
    check=_placed(
        "causal_mask(5, device=...)",
        "pass device=device when you create the tensor (or move it there)",
        "device ignored",
    ),
    expected=REFERENCE,
    builds_on=(_NINE,),
)
def _(ns):
    # Grading has no second device: the test watches the torch calls causal_mask makes
    # and checks that the tensor it creates is given the device (or moved to it).
    with Placement() as spy:
        mask = ns.causal_mask(5, device=torch.device("cpu"))
    return [list(call) for call in spy.calls], mask


def _all_value_errors(labels):
    def problem(got):
        for label, outcome in zip(labels, got):
            if outcome["raised"] != "ValueError":
                what = "nothing was raised" if outcome["raised"] is None else f"got {outcome['raised']}"
                return f"{label} should raise ValueError; {what}"
        return None

    return problem


@suite.case(
    "causal_mask",
    "a T that is not a non-negative integer raises ValueError",
    points=1,
    check=satisfies(_all_value_errors(["causal_mask(-1)", "causal_mask(2.5)"])),
)
def _(ns):
    return [catch(ns.causal_mask, -1), catch(ns.causal_mask, 2.5)]


# ---------------------------------------------------------------- padding_mask

_PAD = 3
_IDS = torch.tensor(
    [
        [5, 0, 8, 2, 6, _PAD, _PAD],
        [1, 4, _PAD, _PAD, _PAD, _PAD, _PAD],
        [7, 0, 0, 2, 1, 5, 4],
    ]
)  # B = 3, T = 7


def _shape_is(*shape):
    return lambda got, exp: type(got) is torch.Tensor and tuple(got.shape) == shape


@suite.case(
    "padding_mask",
    "B=3, T=7, pad_id=3 with tokens 0 in the batch",
    points=2,
    check=equal(
        [
            Hint(
                _shape_is(3, 7, 1),
                "a mask of shape (B, T, 1) blocks queries: padding must block keys",
                mistake="padding mask (B, T, 1)",
            ),
            Hint(
                _shape_is(3, 7),
                "the mask needs its middle axis of size 1, to broadcast over the queries",
                mistake="padding mask (B, T)",
            ),
            Hint(
                _shape_is(3, 1, 1, 7),
                "the mask is (B, 1, T); adding an axis for heads is a later stage's job",
                mistake="padding mask with a head axis",
            ),
            Hint(
                lambda got, exp: _tensor_like(got, exp) and bool(torch.equal(got[:, 0], _IDS == 0)),
                "compare with the pad_id you were given, not with 0",
                mistake="pad id fixed",
            ),
            Hint(
                lambda got, exp: _tensor_like(got, exp) and bool(torch.equal(got, ~exp)),
                "True must mark the padding (blocked), not the real tokens",
                mistake="mask inverted",
            ),
        ]
    ),
    expected=REFERENCE,
)
def _(ns):
    return ns.padding_mask(_IDS, _PAD)


@suite.case(
    "padding_mask", "a batch with no padding blocks nothing", points=1, check=equal(), expected=REFERENCE, guard=True
)
def _(ns):
    return ns.padding_mask(torch.arange(10).reshape(2, 5), pad_id=11)


@suite.case(
    "padding_mask",
    "ids that are not (B, T) raise ValueError",
    points=1,
    check=satisfies(_all_value_errors(["padding_mask of a 1-D tensor", "padding_mask of a 3-D tensor"])),
)
def _(ns):
    return [catch(ns.padding_mask, _IDS[0].clone(), _PAD), catch(ns.padding_mask, _IDS[None].clone(), _PAD)]


# ---------------------------------------------------------------- combined_mask

_CIDS = torch.tensor(
    [
        [9, 4, 5, 6, 2, 2],
        [9, 7, 2, 2, 2, 2],
        [9, 1, 3, 4, 8, 5],
        [9, 8, 0, 2, 2, 2],
    ]
)  # B = 4, T = 6, pad_id = 2
_PADDINGS = {(_rows(_CIDS), 2): _CIDS_PADDING}  # what padding_mask answers while combined_mask's tests run
_REFUSED = {(*_flat(ids), 2): "ids must have shape (B, T)" for ids in (_CIDS[0], _CIDS[None])}  # the not-2-D probes
_COMBINED = "B=4, T=6, pad_id=2"


@suite.case(
    "combined_mask",
    _COMBINED,
    points=2,
    check=equal(
        [
            Hint(
                lambda got, exp: _bool_like(got, exp) and bool(torch.equal(~got, exp)),
                "the mask is inverted: True marks the keys that are BLOCKED",
                mistake="mask inverted",
            ),
            Hint(
                lambda got, exp: _bool_like(got, exp) and bool(torch.equal(got, _CAUSAL_6 | (_CIDS == 2)[:, :, None])),
                "your padding blocks rows (queries); it must block columns (keys)",
                mistake="padding on the query side",
            ),
            Hint(
                lambda got, exp: _bool_like(got, exp) and bool(torch.equal(got, _CAUSAL_6 & _CIDS_PADDING)),
                "a key is blocked if it is in the future OR is padding, not only when both hold",
                mistake="AND instead of OR",
            ),
            Hint(
                lambda got, exp: _bool_like(got, exp) and bool(torch.equal(got, exp | torch.eye(6, dtype=torch.bool))),
                "the diagonal is blocked: a real token may attend to itself",
                mistake="diagonal blocked",
            ),
        ]
    ),
    expected=REFERENCE,
)
def _(ns):
    return _isolated(ns, "combined_mask", _CIDS, 2)


def _padded_story(mask):
    """Attention under the student's (4, 6, 6) mask, run here in the grading process: real
    tokens must ignore later tokens and padded positions."""
    problem = _mask_problem(mask, (4, 6, 6))
    if problem:
        return problem
    mask, real = mask.to(torch.bool), _CIDS != 2
    x = randn(4, 6, 6, seed=72)
    base = _attend(x, mask)
    noise = randn(4, 6, 6, seed=73)
    pad_moved = float((_attend(torch.where(real[..., None], x, noise), mask) - base).abs()[real].max())
    future = []
    for t in range(1, 6):
        y = x.clone()
        y[:, t:] = noise[:, t:]
        future.append(float((_attend(y, mask)[:, :t] - base[:, :t]).abs()[real[:, :t]].max()))
    if any(math.isnan(v) for v in future + [pad_moved]):
        return "an output at a real token is NaN: some real query has no key left to attend to"
    if max(future) > 1e-6:
        return "changing later tokens changed earlier outputs: the mask lets the future leak"
    if pad_moved > 1e-6:
        return (
            "changing the vectors at padded positions changed the outputs of real tokens: padded keys must be blocked"
        )
    return None


@suite.case(
    "combined_mask",
    "black box: real tokens ignore both the future and the padding",
    points=1,
    check=satisfies(_padded_story),
    builds_on=(_COMBINED,),
)
def _(ns):
    return _isolated(ns, "combined_mask", _CIDS, 2)


@suite.case(
    "combined_mask",
    "ids that are not (B, T) raise ValueError",
    points=1,
    check=satisfies(_all_value_errors(["combined_mask of a 1-D tensor", "combined_mask of a 3-D tensor"])),
)
def _(ns):
    return [
        catch(_isolated, ns, "combined_mask", _CIDS[0].clone(), 2),
        catch(_isolated, ns, "combined_mask", _CIDS[None].clone(), 2),
    ]


# ---------------------------------------------------------------- shift

_TOKENS = torch.randint(4, 50, (3, 7), generator=generator(81))
_SHIFT = "B=3, T=7 with start_id=2"


@suite.case(
    "shift",
    _SHIFT,
    points=2,
    check=equal(
        [
            Hint(_shape_is(3, 8), "the output keeps the shape (B, T)", mistake="shift keeps every token"),
            Hint(
                lambda got, exp: _tensor_like(got, exp) and bool(torch.equal(got[:, 1:], _TOKENS[:, 1:])),
                "the first token is lost and the last kept: it is the last token of each row that drops off",
                mistake="first token dropped",
            ),
            Hint(
                lambda got, exp: _tensor_like(got, exp) and bool(torch.equal(got[:, :-1], _TOKENS[:, 1:])),
                "that is a shift to the left (the targets' direction); the inputs move one step to the right",
                mistake="shift to the left",
            ),
        ],
        dtype=None,
    ),
    expected=REFERENCE,
)
def _(ns):
    return ns.shift_right(_TOKENS.clone(), 2)


@suite.case(
    "shift",
    "T=1: a row becomes just the start token",
    points=1,
    check=equal(dtype=None),
    expected=REFERENCE,
    builds_on=(_SHIFT,),
)
def _(ns):
    return ns.shift_right(torch.tensor([[5], [6]]), start_id=30)


@suite.case(
    "shift",
    "the caller's tensor is not modified",
    points=1,
    check=equal(
        [
            Hint(
                lambda got, exp: True,
                "shift_right changed the tensor it was given: build a new tensor instead of writing into the input",
                mistake="writes into the input",
            )
        ]
    ),
    expected=_TOKENS.clone(),
    guard=True,
)
def _(ns):
    tokens = _TOKENS.clone()
    ns.shift_right(tokens, 2)
    return tokens  # as the caller holds it afterwards


@suite.case(
    "shift",
    "the start column is made on the device of the tokens",
    points=1,
    check=_placed(
        "shift_right",
        "make the start column on tokens.device (tokens.new_full, or device=tokens.device)",
        "start column off the tokens' device",
        dtype=None,
    ),
    expected=REFERENCE,
    builds_on=(_SHIFT,),
)
def _(ns):
    tokens = _TOKENS.clone()
    with Placement() as spy:
        out = ns.shift_right(tokens, 2)
    return [list(call) for call in spy.calls], out


@suite.case(
    "shift",
    "the ids keep the dtype of tokens (int64 and int32)",
    points=1,
    check=dtypes(
        [
            Hint(
                lambda got, exp: (
                    isinstance(got, (list, tuple))
                    and any(type(g) is torch.Tensor and g.dtype != e.dtype for g, e in zip(got, exp))
                ),
                "token ids keep the dtype of tokens: make the start column with it (tokens.new_full)",
                mistake="shift changes the dtype",
            )
        ]
    ),
    expected=REFERENCE,
)
def _(ns):
    return [ns.shift_right(_TOKENS.clone(), 2), ns.shift_right(_TOKENS.to(torch.int32), 2)]


@suite.case(
    "shift",
    "tokens that are not (B, T) raise ValueError",
    points=1,
    check=satisfies(_all_value_errors(["shift_right of a 1-D tensor", "shift_right of a 3-D tensor"])),
)
def _(ns):
    return [catch(ns.shift_right, _TOKENS[0].clone(), 2), catch(ns.shift_right, _TOKENS[None].clone(), 2)]


# ---------------------------------------------------------------- pad_and_shift

_SEQS = [[11, 12, 13, 14, 15], [21], [31, 32, 33], [41, 42, 43, 44, 45, 46, 47]]


def _pas_hints(pad_id, ignore):
    lengths = [len(s) for s in _SEQS]

    def pair(got, exp):
        return isinstance(got, (tuple, list)) and len(got) == 2 and all(_tensor_like(g, e) for g, e in zip(got, exp))

    def tail(got, side, value):
        t = got[side]
        return all(bool(t[b, n:].eq(value).all()) for b, n in enumerate(lengths))

    def padded_then_shifted(got, exp):  # the inputs are the padded targets moved one step right
        padded = torch.where(exp[1] == ignore, pad_id, exp[1])
        return bool(torch.equal(got[0][:, 1:], padded[:, :-1])) and not bool(torch.equal(got[0], exp[0]))

    hints = [
        Hint(
            lambda got, exp: pair(got, exp) and tail(got, 1, pad_id),
            "the targets are padded with ignore_index, not pad_id",
            mistake="targets padded with pad_id",
        ),
        Hint(
            lambda got, exp: pair(got, exp) and padded_then_shifted(got, exp),
            "shift each sequence before padding it: the input row holds pad exactly where the target is ignored",
            mistake="padded before shifting",
        ),
        Hint(
            lambda got, exp: pair(got, exp) and int(got[0][1, 0]) == pad_id,
            "pad at the end of each sequence (right padding), not at the start",
            mistake="padding on the left",
        ),
        Hint(
            lambda got, exp: pair(got, exp) and tail(got, 1, -100),
            "use the ignore_index you were given",
            mistake="ignore_index argument ignored",
        ),
        Hint(
            lambda got, exp: (
                pair(got, exp) and bool(torch.equal(got[0], torch.where(exp[1] == ignore, pad_id, exp[1])))
            ),
            "the inputs are the sequences shifted right, with start_id in front",
            mistake="inputs not shifted",
        ),
    ]
    if ignore == -100:  # with the default, ignoring the argument changes nothing
        hints = [h for h in hints if h.mistake != "ignore_index argument ignored"]
    return hints


_PADDED = "four sequences of lengths 5, 1, 3, 7 with start_id=2, pad_id=1, ignore_index=-1"


@suite.case("pad_and_shift", _PADDED, points=2, check=equal(_pas_hints(1, -1), dtype=None), expected=REFERENCE)
def _(ns):
    return _isolated(ns, "pad_and_shift", _SEQS, start_id=2, pad_id=1, ignore_index=-1)


@suite.case(
    "pad_and_shift",
    "the same sequences with the default ignore_index",
    points=1,
    check=equal(_pas_hints(1, -100), dtype=None),
    expected=REFERENCE,
)
def _(ns):
    return _isolated(ns, "pad_and_shift", _SEQS, 2, 1)


@suite.case(
    "pad_and_shift",
    "sequences of equal length need no padding",
    points=1,
    check=equal(dtype=None),
    expected=REFERENCE,
)
def _(ns):
    return _isolated(ns, "pad_and_shift", [[7, 8, 9], [10, 11, 12]], start_id=3, pad_id=4)


@suite.case(
    "pad_and_shift",
    "both tensors are torch.long",
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
    expected=REFERENCE,
)
def _(ns):
    return _isolated(ns, "pad_and_shift", _SEQS, start_id=2, pad_id=1, ignore_index=-1)


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
        Hint(
            lambda got, exp: isinstance(got, float),
            "return a tensor (no .item()): the loss must be back-propagated",
            mistake="loss returned as a float",
        ),
        Hint(
            lambda got, exp: abs(_loss(got) - float(exp) * kept / total) < 1e-4 * abs(float(exp)),
            "your mean counts the ignored positions too; divide by the number of scored positions",
            mistake="mean over every position",
        ),
        Hint(
            lambda got, exp: abs(_loss(got) - float(exp) * kept) < 1e-4 * abs(float(exp)) * kept,
            "that is a sum over the positions; the loss is their mean",
            mistake="sum instead of mean",
        ),
    ]


_LOSS = "B=3, T=5, V=11 with 6 ignored positions"


@suite.case(
    "lm_loss",
    _LOSS,
    points=2,
    check=close(rtol=1e-5, atol=1e-6, dtype=None, hints=_loss_hints(_KEPT, 15)),
    expected=REFERENCE,
)
def _(ns):
    return ns.lm_loss(_LOGITS.clone(), _TARGETS.clone())


@suite.case(
    "lm_loss",
    "a custom ignore_index of 0 skips token 0 instead of -100",
    points=1,
    check=close(rtol=1e-5, atol=1e-6, dtype=None),
    expected=REFERENCE,
    builds_on=(_LOSS,),
)
def _(ns):
    targets = torch.randint(0, 4, (2, 7), generator=generator(93))
    targets[0, 0] = 0
    return ns.lm_loss(randn(2, 7, 4, seed=94), targets, ignore_index=0)


@suite.case(
    "lm_loss",
    "the gradient reaches the logits and is 0 at ignored positions",
    points=1,
    check=close(rtol=1e-4, atol=1e-7, dtype=None),
    expected=REFERENCE,
    builds_on=(_LOSS,),
)
def _(ns):
    logits = _LOGITS.clone().requires_grad_(True)
    ns.lm_loss(logits, _TARGETS.clone()).backward()
    return logits.grad


@suite.case(
    "lm_loss",
    "targets of another shape than logits without V raise ValueError",
    points=1,
    check=satisfies(
        _all_value_errors(["logits (3, 5, 11) with targets (5, 3)", "logits (3, 5, 11) with targets (3, 4)"])
    ),
)
def _(ns):
    # only what the text rules out: targets whose shape is not logits.shape[:-1] (another B or T)
    return [
        catch(ns.lm_loss, _LOGITS.clone(), _TARGETS.T.clone()),
        catch(ns.lm_loss, _LOGITS.clone(), _TARGETS[:, :4].clone()),
    ]
