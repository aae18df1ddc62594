"""Hidden tests of stage 10_encoders (run only when grading; never shipped to students).

Expected values marked REFERENCE are the reference solution's outputs on the same probe,
saved at build time. Sizes all differ: B=3, T=6 (T_q=5 against S=T_k=7), C=24, H=4
(D=6), ff_dim=40. Modules get their weights from ``set_parameters`` (by parameter name,
whatever the order in which the student created them).

Keeping the questions apart
    encoder and mlm_mask call only Encoder and mlm_mask_tokens (the blocks and masks they
    use are given code). classifier runs the student's SequenceClassifier on stand-in
    encoders (``_TorchEncoder`` of the public tests: embeddings, PyTorch's nn.TransformerEncoderLayer and
    nn.LayerNorm, or a plain table). decoder_block builds the student's DecoderBlock while
    the notebook's name ``CrossAttention`` stands for ``_TorchCrossAttention`` (PyTorch's
    nn.MultiheadAttention). seq2seq builds the student's Seq2Seq while ``Encoder`` and
    ``DecoderBlock`` stand for ``_TorchEncoder`` and ``_TorchDecoderBlock`` (PyTorch's
    nn.TransformerDecoderLayer; put back afterwards), and runs greedy_decode on scripted
    stand-in models. The stand-ins are PyTorch's computations, with parameter names of
    their own: nothing the child can reach implements a graded class (autograder/authoring/refscan.py).
    seq2seq_works runs train_seq2seq on a recording stand-in model, and trains the
    student's Seq2Seq (with the stand-in encoder and decoder blocks, every layer
    re-initialised as PyTorch does by default) with the student's train_seq2seq: that one
    dependency is by design (Seq2Seq's wiring and the loop must
    work together). Comparisons with nn.MultiheadAttention and nn.TransformerDecoderLayer
    are computed in the check, in the grading parent, from the weights the probe reports.

Probes return raw outputs (tensors, numbers, modes and gradient state as words); every
comparison is made by the check. Every clause of each question's contract and the tests
that cover it are listed in ``clauses.md`` beside this file.

Values are compared whatever their dtype (``dtype=None``): the one dtype the notebook
states (mlm_mask's inputs and labels typed like ``ids``) has a test of its own, so that
one slip costs that test alone. Tests that a function doing nothing could pass (padding
or later tokens changing nothing, the mode restored, the same seed giving the same
rows) are guards: they count once a test of the values passes.

Tolerances (relative + absolute, per test)
    Margins below were measured with benchmarks/tolerance_margins.py (the reference's own
    outputs recomputed in float64 against the float32 fixtures) and by comparing the
    reference and the catalogue's alternatives with PyTorch's modules.
    - encoder / classifier / seq2seq outputs against the reference: rtol 1e-4, atol 1e-4
      (whole models in float32, values of order 1-10); the reference in float64 stays
      within 1/140 of the tolerance;
    - cross_attention and decoder_block against the reference and against PyTorch's
      modules: rtol 1e-4, atol 1e-5, as in stages 05 and 06. Their weights come with
      set_parameters(scale=0.2), so the scores spread by about 2 and the softmaxes are not
      so peaked that float32 rounding shows: the reference in float64 stays within 1/18 of
      the tolerance, the reference, the einsum/scaled_dot_product_attention alternative
      and the loop-over-sublayers alternative within 1/25 of it against PyTorch's modules;
    - properties (causality, padding invariance, queries apart): 1e-5 absolute for whole
      models, 1e-6 for one module; "changes" need more than 1e-4 (the reference changes
      by 1e-1 or more);
    - mlm_mask proportions, over 25,000 to 60,000 positions: each margin is at least 4.5
      standard deviations of the proportion (a correct answer fails with a probability
      below 1e-5 per test) and at most half the smallest deviation that a catalogued
      mistake causes (the random-replacement margins: 0.008, 0.0035 and 0.007 against
      deviations of 0.0167);
    - train_seq2seq: losses rtol 1e-5, atol 1e-6 (float32 against float64 of the same
      logits); gradients rtol 1e-4, atol 1e-7; a clipped norm within 1e-3 relative (what
      clip_grad_norm_'s 1e-6 guard leaves); from zero weights Adam's first step moves a
      weight with a gradient by lr * g / (|g| + eps), so between 0.9 and 1.02 lr whatever
      the weight decay;
    - time limits: the seq2seq_works unit tests allow 30 s, not the default 10 (the first
      optimiser a process makes imports torch._dynamo, which took 7 s at a load of 12 on
      this 2-core machine; the tests themselves take milliseconds); the training tests 60 s
      (3 to 8 s measured, 11 to 17 s at a load of 10);
    - seq2seq_works: at least 80% of 200 unseen strings exactly right after 200 steps,
      every layer re-initialised as PyTorch does by default (the reference reaches 97.5-99.5%
      on every seed tried, with the public or the hidden parts; nothing learned gives 0%).
"""

import contextlib
import functools

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.optimizer import register_optimizer_step_pre_hook

from autograder.kit import (
    REFERENCE,
    Hint,
    Suite,
    catch,
    close,
    dtypes,
    equal,
    generator,
    grad_mode,
    mode_of,
    mode_problem,
    raises,
    randn,
    satisfies,
    set_parameters,
)

from public import (
    THRESHOLD,
    _default_init,
    _largest_change,
    _mha_state,
    _mlm_pair_problem,
    _random_from_the_rest,
    _reversal_pairs,
    _stand_ins,
    _TorchCrossAttention,
    _TorchDecoderBlock,
    _TorchEncoder,
)

suite = Suite(public=False)

# check-stage's rule "an empty answer costs only its own question": seq2seq_works trains and
# decodes with the student's seq2seq model, by design
QUESTIONS_USE = {"seq2seq_works": ("seq2seq",)}

B, T, C, H, FF = 3, 6, 24, 4, 40
TQ, TK = 5, 7


def _torch_parts(log=None):
    """The stand-ins for the notebook's Encoder, CrossAttention and DecoderBlock, every computation
    PyTorch's own (nn.TransformerEncoderLayer, nn.MultiheadAttention, nn.TransformerDecoderLayer):
    nothing here implements a graded class. ``log`` (a list) receives the arguments each Encoder
    and DecoderBlock was built with."""
    return {
        "Encoder": functools.partial(_TorchEncoder, log=log),
        "CrossAttention": _TorchCrossAttention,
        "DecoderBlock": functools.partial(_TorchDecoderBlock, log=log),
    }


# ======================================================================== encoder

_IDS = torch.randint(1, 15, (B, T), generator=generator(100))
_PADDED = _IDS.clone()
_PADDED[1, 4:] = 0  # padding at the end
_PADDED[2, 2] = 0  # and in the middle
_REAL = _PADDED != 0  # the real positions, whose outputs are compared
_SHORT = torch.tensor([[3, 4, 5], [6, 7, 0]])
_SHORT_REAL = _SHORT != 0
_PAD5 = _IDS.clone()  # pad_id=5: tokens 5 at the end of row 1 and in row 2; token 0 in row 0 is ordinary
_PAD5[_PAD5 == 5] = 6
_PAD5[0, 0], _PAD5[1, 3:], _PAD5[2, 1] = 0, 5, 5
_PAD5_REAL = _PAD5 != 5
_PAD4 = _IDS.clone()  # pad_id=4 for the classifier: tokens 4 in rows 0 and 1, token 0 in row 2 is ordinary
_PAD4[_PAD4 == 4] = 3
_PAD4[0, 5], _PAD4[1, 2:], _PAD4[2, 0] = 4, 4, 0


def _encoder(ns, seed, **kwargs):
    settings = dict(n_layer=2, n_head=H, n_embd=C, ff_dim=FF)
    settings.update(kwargs)
    encoder = ns.Encoder(15, 8, **settings)
    set_parameters(encoder, seed)
    return encoder.eval()


@suite.case(
    "encoder",
    "defaults: 2 blocks, n_embd 64, ff_dim 4*64, pad_id 0, no dropout, max_len rows of positions",
    points=1,
    check=equal(),
    expected={
        "blocks": 2,
        "kind": "TransformerBlock",
        "tok_emb": [15, 64],
        "pos_emb": [9, 64],
        "ff_dim": 256,
        "heads": 4,
        "ln_f": "LayerNorm",
        "pad_id": 0,
        "out": [2, 3, 64],
        "training_repeat": 0.0,
    },
)
def _(ns):
    encoder = ns.Encoder(15, 9).train()
    with torch.no_grad():
        repeat = _largest_change(encoder(_SHORT.clone())[_SHORT_REAL], encoder(_SHORT.clone())[_SHORT_REAL])
    return {
        "training_repeat": repeat,
        "blocks": len(encoder.blocks),
        "kind": type(encoder.blocks[0]).__name__,
        "tok_emb": list(encoder.tok_emb.weight.shape),
        "pos_emb": list(encoder.pos_emb.weight.shape),
        "ff_dim": encoder.blocks[0].ff.fc1.out_features,
        "heads": encoder.blocks[0].attn.num_heads,
        "ln_f": type(encoder.ln_f).__name__,
        "pad_id": encoder.pad_id,
        "out": list(encoder(torch.tensor([[3, 4, 5], [6, 7, 0]])).shape),
    }


@suite.case(
    "encoder",
    "ff_dim=None means 4 * n_embd, and a given ff_dim is used",
    points=1,
    check=equal(),
    expected=[96, 40, 40],
    structure=True,
)
def _(ns):
    plain = ns.Encoder(15, 8, n_layer=1, n_head=H, n_embd=C)
    given = ns.Encoder(15, 8, n_layer=2, n_head=H, n_embd=C, ff_dim=FF)
    return [
        plain.blocks[0].ff.fc1.out_features,
        given.blocks[0].ff.fc1.out_features,
        given.blocks[1].ff.fc1.out_features,
    ]


@suite.case(
    "encoder",
    "fixed weights, no padding: outputs",
    points=2,
    check=close(rtol=1e-4, atol=1e-4, dtype=None),
    expected=REFERENCE,
    builds_on=("defaults: 2 blocks, n_embd 64, ff_dim 4*64, pad_id 0, no dropout, max_len rows of positions",),
)
def _(ns):
    with torch.no_grad():
        return _encoder(ns, 1)(_IDS.clone())


@suite.case(
    "encoder",
    "fixed weights, padding at the end and in the middle: outputs at the real positions",
    points=2,
    check=close(rtol=1e-4, atol=1e-4, dtype=None),
    expected=REFERENCE,
    builds_on=("defaults: 2 blocks, n_embd 64, ff_dim 4*64, pad_id 0, no dropout, max_len rows of positions",),
)
def _(ns):
    with torch.no_grad():
        out = _encoder(ns, 2)(_PADDED.clone())
    return out[_REAL]


@suite.case(
    "encoder",
    "fixed weights, 3 blocks of 2 heads, ff_dim 40: outputs",
    points=1,
    check=close(rtol=1e-4, atol=1e-4, dtype=None),
    expected=REFERENCE,
    builds_on=("defaults: 2 blocks, n_embd 64, ff_dim 4*64, pad_id 0, no dropout, max_len rows of positions",),
)
def _(ns):
    with torch.no_grad():
        return _encoder(ns, 3, n_layer=3, n_head=2)(_IDS.clone())


def _future_seen(got):
    if not got > 1e-4:
        return (
            "changing the token at position 4 left the outputs at positions 0 to 3 unchanged: an encoder "
            "has no causal mask, every position sees the whole sequence"
        )
    return None


@suite.case(
    "encoder", "a later token changes the outputs at every earlier position", points=1, check=satisfies(_future_seen)
)
def _(ns):
    encoder = _encoder(ns, 4)
    changed = _IDS.clone()
    changed[:, 4] = torch.tensor([14, 13, 12])
    with torch.no_grad():
        a, b = encoder(_IDS.clone()), encoder(changed)
    return min(float((a[:, t] - b[:, t]).abs().max()) for t in range(4))


def _padding_never_matters(got):
    if not got <= 1e-5:
        return (
            f"the outputs at the real positions changed by up to {got:.3g} when padding was added or moved: "
            "keys equal to pad_id must be blocked for every query"
        )
    return None


@suite.case(
    "encoder",
    "padding (1 or 3 tokens at the end) never changes the outputs at the real positions",
    points=2,
    check=satisfies(_padding_never_matters),
    guard=True,
)
def _(ns):
    encoder = _encoder(ns, 5)
    sentence = torch.tensor([[4, 9, 2, 11]])
    with torch.no_grad():
        alone = encoder(sentence)
        one = encoder(torch.tensor([[4, 9, 2, 11, 0]]))[:, :4]
        three = encoder(torch.tensor([[4, 9, 2, 11, 0, 0, 0]]))[:, :4]
    return max(_largest_change(alone, one), _largest_change(alone, three))


@suite.case(
    "encoder",
    "pad_id=5: tokens 5 are blocked wherever they stand, token 0 is ordinary",
    points=2,
    check=close(rtol=1e-4, atol=1e-4, dtype=None),
    expected=REFERENCE,
    builds_on=(
        "defaults: 2 blocks, n_embd 64, ff_dim 4*64, pad_id 0, no dropout, max_len rows of positions",
        "fixed weights, padding at the end and in the middle: outputs at the real positions",  # the same, with pad_id 0
    ),
)
def _(ns):
    with torch.no_grad():
        out = _encoder(ns, 6, pad_id=5)(_PAD5.clone())
    return out[_PAD5_REAL]


def _max_len_problem(got):
    too_long, exact = got
    if too_long["raised"] != "ValueError":
        return f"8 tokens for max_len=7 should raise ValueError; {'nothing was raised' if too_long['raised'] is None else 'got ' + too_long['raised']}"
    if exact != [2, 7, C]:
        return f"7 tokens for max_len=7 must be read, giving (2, 7, {C}); got {exact}"
    return None


@suite.case(
    "encoder", "max_len tokens are read; one more raises ValueError", points=1, check=satisfies(_max_len_problem)
)
def _(ns):
    encoder = ns.Encoder(15, 7, n_layer=1, n_head=H, n_embd=C)
    return catch(encoder, torch.ones(2, 8, dtype=torch.long)), list(encoder(torch.ones(2, 7, dtype=torch.long)).shape)


@suite.case(
    "encoder",
    "dropout=0.3 changes nothing in eval mode",
    points=1,
    check=close(rtol=1e-4, atol=1e-4, dtype=None),
    expected=REFERENCE,
    builds_on=(
        "defaults: 2 blocks, n_embd 64, ff_dim 4*64, pad_id 0, no dropout, max_len rows of positions",
        "fixed weights, padding at the end and in the middle: outputs at the real positions",  # the same, no dropout
    ),
)
def _(ns):
    with torch.no_grad():
        return _encoder(ns, 7, dropout=0.3)(_PADDED.clone())[_REAL]


def _random_in_training(got):
    if not got > 1e-6:
        return "with dropout=0.3 in training mode, two calls on the same input gave the same output: dropout is not applied"
    return None


@suite.case(
    "encoder", "dropout=0.3 makes the output random in training mode", points=1, check=satisfies(_random_in_training)
)
def _(ns):
    encoder = _encoder(ns, 8, dropout=0.3).train()
    with torch.no_grad():
        return _largest_change(encoder(_IDS.clone()), encoder(_IDS.clone()))


# ======================================================================== classifier


def _torch_encoder(ns, seed, pad_id=0):
    encoder = _TorchEncoder(15, 8, n_layer=1, n_head=H, n_embd=C, pad_id=pad_id)
    set_parameters(encoder, seed)
    return encoder.eval()


def _classifier(ns, encoder, seed, **kwargs):
    clf = ns.SequenceClassifier(encoder, 5, **kwargs)
    set_parameters(clf.head, seed)
    return clf.eval()


@suite.case(
    "classifier",
    "mean pooling over the real positions, padding at the end and in the middle",
    points=2,
    check=close(rtol=1e-4, atol=1e-4, dtype=None),
    expected=REFERENCE,
)
def _(ns):
    with torch.no_grad():
        return _classifier(ns, _torch_encoder(ns, 10), 11, pooling="mean")(_PADDED.clone())


@suite.case(
    "classifier",
    "first pooling takes position 0",
    points=2,
    check=close(rtol=1e-4, atol=1e-4, dtype=None),
    expected=REFERENCE,
)
def _(ns):
    with torch.no_grad():
        return _classifier(ns, _torch_encoder(ns, 12), 13, pooling="first")(_PADDED.clone())


@suite.case(
    "classifier",
    "default pooling (no pooling argument) is the mean",
    points=1,
    check=close(rtol=1e-4, atol=1e-4, dtype=None),
    expected=REFERENCE,
)
def _(ns):
    with torch.no_grad():
        return _classifier(ns, _torch_encoder(ns, 14), 15)(_PADDED.clone())


@suite.case(
    "classifier",
    "mean pooling with an encoder whose pad_id is 4",
    points=1,
    check=close(rtol=1e-4, atol=1e-4, dtype=None),
    expected=REFERENCE,
)
def _(ns):
    with torch.no_grad():
        return _classifier(ns, _torch_encoder(ns, 16, pad_id=4), 17)(_PAD4.clone())


class _Table(nn.Module):
    """An encoder without attention whose output at a position is its token's row (C = 3).

    It has every attribute the notebook promises of the grader's encoders, ``ln_f`` a real
    ``nn.LayerNorm(C)``, left out of ``forward`` so that the outputs are the rows as written.
    """

    def __init__(self, pad_id):
        super().__init__()
        self.pad_id = pad_id
        self.tok_emb = nn.Embedding(6, 3)
        with torch.no_grad():
            self.tok_emb.weight.copy_(
                torch.tensor(
                    [
                        [1.0, 0.0, 2.0],
                        [0.0, 3.0, -1.0],
                        [2.0, 2.0, 2.0],
                        [-4.0, 1.0, 0.5],
                        [50.0, 50.0, -50.0],
                        [1.5, -0.5, 0.0],
                    ]
                )
            )
        self.pos_emb = nn.Embedding(8, 3)
        self.blocks = nn.ModuleList()
        self.ln_f = nn.LayerNorm(3)

    def forward(self, idx):
        return self.tok_emb(idx)


_TABLE_IDS = torch.tensor([[1, 2, 4, 4], [3, 5, 0, 1], [2, 4, 4, 4]])  # 4 is the padding


def _table_alternatives():
    rows = _Table(4).tok_emb.weight.detach().double()
    h = rows[_TABLE_IDS]
    real = (_TABLE_IDS != 4).double().unsqueeze(-1)
    return {"all positions": h.mean(1), "sum": (h * real).sum(1), "over T": (h * real).sum(1) / _TABLE_IDS.size(1)}


def _pooled_hint(kind, text, mistake):
    def when(got, exp):
        if not isinstance(got, dict) or not isinstance(got.get("mean"), torch.Tensor):
            return False
        alt = _table_alternatives()[kind]
        return got["mean"].shape == alt.shape and torch.allclose(got["mean"].double(), alt, atol=1e-4)

    return Hint(when, text, mistake=mistake)


@suite.case(
    "classifier",
    "pooled vectors by hand (an identity head on a table encoder whose pad_id is 4)",
    points=2,
    check=equal(
        [
            _pooled_hint(
                "all positions",
                "the padding positions were averaged in: average over the real positions only",
                "padding averaged in",
            ),
            _pooled_hint(
                "over T",
                "the sum over the real positions was divided by T: divide by the number of real positions",
                "divided by T",
            ),
            _pooled_hint("sum", "the outputs were summed, not averaged", "summed, not averaged"),
        ],
        dtype=None,
    ),
    expected={
        "mean": torch.tensor([[1.0, 2.5, 0.5], [-0.375, 0.875, 0.375], [2.0, 2.0, 2.0]]),
        "first": torch.tensor([[0.0, 3.0, -1.0], [-4.0, 1.0, 0.5], [2.0, 2.0, 2.0]]),
    },
)
def _(ns):
    out = {}
    for pooling in ("mean", "first"):
        clf = ns.SequenceClassifier(_Table(4), 3, pooling=pooling)
        with torch.no_grad():
            clf.head.weight.copy_(torch.eye(3))
            clf.head.bias.zero_()
            out[pooling] = clf(_TABLE_IDS.clone())
    return out


def _same_logits(got):
    if not got <= 1e-5:
        return f"adding padding to the end changed the mean-pooled logits by up to {got:.3g}: leave the padding out of the mean"
    return None


@suite.case(
    "classifier", "more padding at the end never changes mean-pooled logits", points=1, check=satisfies(_same_logits)
)
def _(ns):
    clf = _classifier(ns, _torch_encoder(ns, 18), 19)
    with torch.no_grad():
        a = clf(torch.tensor([[3, 7, 9, 0], [5, 6, 0, 0]]))
        b = clf(torch.tensor([[3, 7, 9, 0, 0, 0, 0], [5, 6, 0, 0, 0, 0, 0]]))
    return _largest_change(a, b)


@suite.case(
    "classifier",
    "head is nn.Linear(C, num_classes) with C the encoder's width",
    points=1,
    check=equal(),
    expected=[["Linear", [5, 24], [5]], ["Linear", [2, 3], [2]]],
    structure=True,
)
def _(ns):
    wide = ns.SequenceClassifier(_torch_encoder(ns, 20), 5).head
    narrow = ns.SequenceClassifier(_Table(4), 2, pooling="first").head
    return [[type(h).__name__, list(h.weight.shape), list(h.bias.shape)] for h in (wide, narrow)]


def _pooling_errors(got):
    for name, outcome in zip(["'max'", "'cls'", "'Mean'"], got):
        if outcome["raised"] != "ValueError":
            return f"pooling={name} should raise ValueError when the classifier is created; {'nothing was raised' if outcome['raised'] is None else 'got ' + outcome['raised']}"
    return None


@suite.case("classifier", "unknown pooling values raise ValueError", points=1, check=satisfies(_pooling_errors))
def _(ns):
    return [catch(ns.SequenceClassifier, _Table(4), 3, pooling=p) for p in ("max", "cls", "Mean")]


# ======================================================================== mlm_mask

_BIG = torch.randint(10, 5000, (128, 200), generator=generator(200))
_SPECIALS = (1, 2)
_WITH_SPECIALS = _BIG.clone()
_WITH_SPECIALS[:, 0], _WITH_SPECIALS[:, -1], _WITH_SPECIALS[::2, 100:] = 1, 2, 2  # [CLS], [SEP], and trailing [SEP]s


def _fraction_problem(target, margin):
    def test(got):
        ids, inputs, labels = got
        special = (ids == 1) | (ids == 2)
        chosen = labels != -100
        if bool((chosen & special).any()):
            return "a special token was chosen"
        fraction = float(chosen[~special].float().mean())
        if not abs(fraction - target) <= margin:
            return f"{fraction:.4f} of the non-special positions were chosen, expected {target} (prob)"
        if not torch.equal(labels[chosen], ids[chosen]):
            return "at a chosen position the label must be the original token"
        if not torch.equal(inputs[~chosen], ids[~chosen]):
            return "a position that was not chosen was changed in inputs"
        return None

    return test


@suite.case(
    "mlm_mask",
    "default prob: 15% of the non-special positions chosen (within 0.012)",
    points=2,
    check=satisfies(_fraction_problem(0.15, 0.012)),
)
def _(ns):
    inputs, labels = ns.mlm_mask_tokens(
        _WITH_SPECIALS.clone(), 3, 5000, special_ids=_SPECIALS, generator=generator(201)
    )
    return _WITH_SPECIALS.clone(), inputs, labels


@suite.case(
    "mlm_mask",
    "prob=0.4: 40% chosen (within 0.015), labels and untouched positions right",
    points=1,
    check=satisfies(_fraction_problem(0.4, 0.015)),
)
def _(ns):
    inputs, labels = ns.mlm_mask_tokens(
        _WITH_SPECIALS.clone(), 3, 5000, special_ids=_SPECIALS, prob=0.4, generator=generator(202)
    )
    return _WITH_SPECIALS.clone(), inputs, labels


def _eighty_ten_ten(got):
    ids, inputs, labels = got
    chosen = labels != -100
    if not bool(chosen.all()):
        return "with prob=1.0 and no special ids every position must be chosen"
    masked = float((inputs == 3).float().mean())
    kept = float((inputs == ids).float().mean())
    other = 1.0 - masked - kept
    if not (abs(masked - 0.8) <= 0.02 and abs(other - 0.1) <= 0.012 and abs(kept - 0.1) <= 0.012):
        return (
            f"of the chosen positions {masked:.3f} became mask_id, {other:.3f} a random token and {kept:.3f} kept "
            "their token; expected 0.8, 0.1 and 0.1"
        )
    return None


@suite.case(
    "mlm_mask",
    "80/10/10: mask_id, a random token, unchanged, over 25,600 chosen positions",
    points=2,
    check=satisfies(_eighty_ten_ten, hints=[_random_from_the_rest(3)]),
)
def _(ns):
    inputs, labels = ns.mlm_mask_tokens(_BIG.clone(), 3, 5000, prob=1.0, generator=generator(203))
    return _BIG.clone(), inputs, labels


# every id is 5, mask_id is 0, special_ids (1,) never occurs: inputs should be
# 0 with 0.8 + 0.1/6, 5 with 0.1 + 0.1/6, and each of 1..4 with 0.1/6
_UNIFORM_EXPECTED = [0.8 + 0.1 / 6, 0.1 / 6, 0.1 / 6, 0.1 / 6, 0.1 / 6, 0.1 + 0.1 / 6]
_UNIFORM_MARGINS = [0.008, 0.0035, 0.0035, 0.0035, 0.0035, 0.007]


def _uniform_problem(got):
    counts = got.double() / got.sum()
    for token, (freq, want, margin) in enumerate(zip(counts.tolist(), _UNIFORM_EXPECTED, _UNIFORM_MARGINS)):
        if not abs(freq - want) <= margin:
            return (
                f"token {token} makes {freq:.4f} of the inputs, expected {want:.4f}: the random replacement is drawn "
                "uniformly from the whole vocabulary 0 .. vocab_size-1 (mask_id, special ids and the original included)"
            )
    return None


@suite.case(
    "mlm_mask",
    "random replacements are uniform over the whole vocabulary, mask and special ids included",
    points=2,
    check=satisfies(_uniform_problem),
    # the expected frequencies assume the 80/10/10 split: a wrong split fails here too, from that root
    builds_on=("80/10/10: mask_id, a random token, unchanged, over 25,600 chosen positions",),
)
def _(ns):
    ids = torch.full((200, 300), 5)
    inputs, _ = ns.mlm_mask_tokens(ids, 0, 6, special_ids=(1,), prob=1.0, generator=generator(204))
    return torch.bincount(inputs.flatten(), minlength=6)[:6]


def _labels_problem(got):
    ids_before, ids_after, inputs, labels = got
    if not torch.equal(ids_before, ids_after):
        return "ids was modified: work on a copy"
    chosen = labels != -100
    if not torch.equal(labels[chosen], ids_before[chosen]):
        return "at a chosen position the label must be the original token"
    if not torch.equal(inputs[~chosen], ids_before[~chosen]):
        return "a position with label -100 (not chosen) was changed: only the chosen positions may change"
    if bool((labels[~chosen] != -100).any()):
        return "labels must be -100 at every position that was not chosen"
    return None


@suite.case(
    "mlm_mask",
    "labels: the original id where chosen, -100 elsewhere; nothing else changes; ids kept",
    points=2,
    check=satisfies(_labels_problem),
)
def _(ns):
    ids = _BIG[:32].clone()
    inputs, labels = ns.mlm_mask_tokens(ids, 3, 5000, prob=0.3, generator=generator(205))
    return _BIG[:32].clone(), ids, inputs, labels


def _specials_problem(got):
    with_specials, without = got
    ids, inputs, labels = with_specials
    special = (ids == 0) | (ids == 7)
    if bool((labels[special] != -100).any()) or not torch.equal(inputs[special], ids[special]):
        return "a position holding one of special_ids was chosen or changed"
    if not bool((labels[~special] != -100).all()):
        return "with prob=1 every position that is not special must be chosen"
    if not bool((without != -100).all()):
        return "with the default special_ids=() every position (token 0 included) may be chosen"
    return None


@suite.case(
    "mlm_mask",
    "special ids (0 and 7 here) are never chosen; by default no id is special",
    points=1,
    check=satisfies(_specials_problem),
)
def _(ns):
    ids = torch.randint(0, 12, (40, 50), generator=generator(206))
    before = ids.clone()
    inputs, labels = ns.mlm_mask_tokens(ids, 3, 12, special_ids=(0, 7), prob=1.0, generator=generator(207))
    _, plain = ns.mlm_mask_tokens(torch.zeros(4, 5, dtype=torch.long), 3, 12, prob=1.0, generator=generator(208))
    return (before, inputs, labels), plain


def _generator_problem(got):
    same_a, same_b, other = got
    problem = next(filter(None, (_mlm_pair_problem(out, _BIG[:16]) for out in got)), None)
    if problem:
        return problem
    if not (torch.equal(same_a[0], same_b[0]) and torch.equal(same_a[1], same_b[1])):
        return "generators with the same seed gave different results (after different global seeds): draw everything with the generator"
    if torch.equal(same_a[1], other[1]):
        return "generators with different seeds gave the same labels: is the generator used?"
    return None


@suite.case(
    "mlm_mask",
    "every draw uses the generator: same seed, same result; another seed, another result",
    points=1,
    check=satisfies(_generator_problem),
)
def _(ns):
    ids = _BIG[:16].clone()
    torch.manual_seed(3)
    a = ns.mlm_mask_tokens(ids.clone(), 3, 5000, prob=0.5, generator=generator(209))
    torch.manual_seed(4)
    b = ns.mlm_mask_tokens(ids.clone(), 3, 5000, prob=0.5, generator=generator(209))
    c = ns.mlm_mask_tokens(ids.clone(), 3, 5000, prob=0.5, generator=generator(210))
    return a, b, c


def _edges_problem(got):
    ids, none, every = got
    problem = _mlm_pair_problem(none, ids) or _mlm_pair_problem(every, ids)
    if problem:
        return problem
    (none_in, none_lab), all_lab = none, every[1]
    if not torch.equal(none_in, ids) or bool((none_lab != -100).any()):
        return "with prob=0 nothing is chosen: inputs equal ids and every label is -100"
    if not torch.equal(all_lab, ids):
        return "with prob=1 every position is chosen: every label is the original id"
    return None


@suite.case("mlm_mask", "prob=0 and prob=1 edge cases", points=1, check=satisfies(_edges_problem))
def _(ns):
    ids = _BIG[:8, :50].clone()
    return (
        ids.clone(),
        ns.mlm_mask_tokens(ids.clone(), 3, 5000, prob=0.0, generator=generator(211)),
        ns.mlm_mask_tokens(ids.clone(), 3, 5000, prob=1.0, generator=generator(212)),
    )


def _prob_errors(got):
    for label, outcome in zip(["prob=-0.1", "prob=1.5"], got):
        if outcome["raised"] != "ValueError":
            return f"{label} should raise ValueError; {'nothing was raised' if outcome['raised'] is None else 'got ' + outcome['raised']}"
    return None


@suite.case("mlm_mask", "prob outside [0, 1] raises ValueError", points=1, check=satisfies(_prob_errors))
def _(ns):
    ids = _BIG[:2].clone()
    return [catch(ns.mlm_mask_tokens, ids, 3, 5000, prob=p, generator=generator(213)) for p in (-0.1, 1.5)]


@suite.case(
    "mlm_mask",
    "dtypes: inputs and labels typed like the long ids, also for one row",
    points=1,
    check=dtypes(),
    expected=[(torch.int64, torch.int64), (torch.int64, torch.int64)],
)
def _(ns):
    out = []
    for ids in (
        torch.randint(4, 50, (4, 9), generator=generator(214)),
        torch.randint(4, 50, (1, 30), generator=generator(215)),
    ):
        out.append(ns.mlm_mask_tokens(ids, 3, 50, generator=generator(216)))
    return out


# ======================================================================== cross_attention

_XQ = randn(B, TQ, C, seed=300)
_MEM = randn(B, TK, C, seed=301) * 2 + 0.5
_KEY_PAD = torch.tensor([[0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1, 1], [0, 0, 0, 1, 1, 1, 1]], dtype=torch.bool)[
    :, None, :
]
_PER_QUERY = _KEY_PAD.expand(B, TQ, TK).clone()
_PER_QUERY[0, 1, 2:] = True
_PER_QUERY[2, 4, 0] = True


def _cross(ns, seed, heads=H, **kwargs):
    module = ns.CrossAttention(C, heads, **kwargs)
    set_parameters(
        module, seed, scale=0.2
    )  # scores of spread about 2: softmaxes not so peaked that float32 rounding shows
    return module.eval()


@suite.case(
    "cross_attention",
    "projections: nn.Linear(24, 24) with bias, output (B, T_q, C), no dropout by default",
    points=1,
    check=equal(),
    expected=[["Linear", [24, 24], [24]]] * 4 + [[B, TQ, C], 0.0],
)
def _(ns):
    module = ns.CrossAttention(C, H).train()
    parts = [
        [type(p).__name__, list(p.weight.shape), list(p.bias.shape)]
        for p in (module.q_proj, module.k_proj, module.v_proj, module.out_proj)
    ]
    with torch.no_grad():
        out = module(_XQ.clone(), _MEM.clone())
        return parts + [list(out.shape), _largest_change(out, module(_XQ.clone(), _MEM.clone()))]


@suite.case(
    "cross_attention",
    "fixed weights, 5 queries, 7 memory positions, no mask",
    points=2,
    check=close(rtol=1e-4, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=("projections: nn.Linear(24, 24) with bias, output (B, T_q, C), no dropout by default",),
)
def _(ns):
    with torch.no_grad():
        return _cross(ns, 1)(_XQ.clone(), _MEM.clone())


@suite.case(
    "cross_attention",
    "fixed weights with a (B, 1, T_k) padding mask",
    points=2,
    check=close(rtol=1e-4, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=("projections: nn.Linear(24, 24) with bias, output (B, T_q, C), no dropout by default",),
)
def _(ns):
    with torch.no_grad():
        return _cross(ns, 2)(_XQ.clone(), _MEM.clone(), memory_mask=_KEY_PAD.clone())


@suite.case(
    "cross_attention",
    "fixed weights with a per-query (B, T_q, T_k) mask",
    points=1,
    check=close(rtol=1e-4, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=("projections: nn.Linear(24, 24) with bias, output (B, T_q, C), no dropout by default",),
)
def _(ns):
    with torch.no_grad():
        return _cross(ns, 3)(_XQ.clone(), _MEM.clone(), memory_mask=_PER_QUERY.clone())


@suite.case(
    "cross_attention",
    "2 and 6 heads on the same input",
    points=1,
    check=close(rtol=1e-4, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=("projections: nn.Linear(24, 24) with bias, output (B, T_q, C), no dropout by default",),
)
def _(ns):
    with torch.no_grad():
        return torch.stack(
            [
                _cross(ns, 4, heads=2)(_XQ.clone(), _MEM.clone(), memory_mask=_KEY_PAD.clone()),
                _cross(ns, 4, heads=6)(_XQ.clone(), _MEM.clone()),
            ]
        )


def _against_mha(got):
    out, state, x, memory, mask = got
    twin = nn.MultiheadAttention(C, H, batch_first=True)
    twin.load_state_dict(state)
    blocked = None if mask is None else mask.expand(x.size(0), x.size(1), memory.size(1)).repeat_interleave(H, dim=0)
    with torch.no_grad():
        theirs = twin.eval()(x, memory, memory, attn_mask=blocked, need_weights=False)[0]
    verdict = close(rtol=1e-4, atol=1e-5, dtype=None)(out, theirs, False)
    if verdict.passed:
        return None
    return f"your output and nn.MultiheadAttention(x, memory, memory)'s (same weights) do not agree: {verdict.message}"


def _mha_probe(ns, seed, mask):
    module = _cross(ns, seed)
    with torch.no_grad():
        out = module(_XQ.clone(), _MEM.clone(), memory_mask=None if mask is None else mask.clone())
    return out, _mha_state(module), _XQ.clone(), _MEM.clone(), mask


@suite.case(
    "cross_attention",
    "agrees with nn.MultiheadAttention(x, memory, memory), no mask",
    points=1,
    check=satisfies(_against_mha),
    builds_on=("projections: nn.Linear(24, 24) with bias, output (B, T_q, C), no dropout by default",),
)
def _(ns):
    return _mha_probe(ns, 5, None)


@suite.case(
    "cross_attention",
    "agrees with nn.MultiheadAttention(x, memory, memory), padding mask",
    points=1,
    check=satisfies(_against_mha),
)
def _(ns):
    return _mha_probe(ns, 6, _KEY_PAD)


@suite.case(
    "cross_attention",
    "agrees with nn.MultiheadAttention(x, memory, memory), per-query mask",
    points=1,
    check=satisfies(_against_mha),
)
def _(ns):
    return _mha_probe(ns, 7, _PER_QUERY)


def _memory_matters(got):
    memory_change, x_change = got
    if not memory_change > 1e-4:
        return "changing the memory did not change the output: keys and values come from memory"
    if not x_change > 1e-4:
        return "changing x did not change the output: queries come from x"
    return None


@suite.case(
    "cross_attention",
    "memory matters: new memory values change the output, and so do new queries",
    points=1,
    check=satisfies(_memory_matters),
)
def _(ns):
    module = _cross(ns, 8)
    with torch.no_grad():
        base = module(_XQ.clone(), _MEM.clone())
        other_memory = module(_XQ.clone(), randn(B, TK, C, seed=302))
        other_x = module(randn(B, TQ, C, seed=303), _MEM.clone())
    return _largest_change(base, other_memory), _largest_change(base, other_x)


def _queries_apart(got):
    others, blocked = got
    if not others <= 1e-6:
        return f"changing queries 1 to 4 changed the output of query 0 (by up to {others:.3g}): a query's output may depend only on its own query and the memory"
    if not blocked <= 1e-6:
        return f"changing blocked memory positions changed the output (by up to {blocked:.3g}): apply memory_mask"
    return None


@suite.case(
    "cross_attention",
    "queries apart: other queries and blocked memory positions never matter",
    points=1,
    check=satisfies(_queries_apart),
    guard=True,
)
def _(ns):
    module = _cross(ns, 9)
    other_x = _XQ.clone()
    other_x[:, 1:] = randn(B, TQ - 1, C, seed=304)
    other_memory = _MEM.clone()
    other_memory[_KEY_PAD[:, 0]] = 7.0
    with torch.no_grad():
        a = module(_XQ.clone(), _MEM.clone(), memory_mask=_KEY_PAD.clone())
        b = module(other_x, _MEM.clone(), memory_mask=_KEY_PAD.clone())
        c = module(_XQ.clone(), other_memory, memory_mask=_KEY_PAD.clone())
    return _largest_change(a[:, 0], b[:, 0]), _largest_change(a, c)


@suite.case(
    "cross_attention",
    "dropout=0.5 does nothing in eval mode",
    points=1,
    check=close(rtol=1e-4, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=("fixed weights with a (B, 1, T_k) padding mask",),  # the same call, without dropout
)
def _(ns):
    with torch.no_grad():
        return _cross(ns, 10, dropout=0.5)(_XQ.clone(), _MEM.clone(), memory_mask=_KEY_PAD.clone())


@suite.case(
    "cross_attention",
    "dropout=0.5 makes the output random in training mode",
    points=1,
    check=satisfies(_random_in_training),
)
def _(ns):
    module = _cross(ns, 11, dropout=0.5).train()
    with torch.no_grad():
        return _largest_change(module(_XQ.clone(), _MEM.clone()), module(_XQ.clone(), _MEM.clone()))


@suite.case(
    "cross_attention",
    "ValueError when num_heads does not divide embed_dim (24 and 5)",
    points=1,
    check=raises("ValueError"),
)
def _(ns):
    return catch(ns.CrossAttention, C, 5)


# ======================================================================== decoder_block

_XD = randn(B, TQ, C, seed=400)
_MEMD = randn(B, TK, C, seed=401) * 3 + 1  # far from normalised, so normalising it shows
_CAUSAL = torch.ones(TQ, TQ, dtype=torch.bool).triu(1)


def _block(ns, seed, **kwargs):
    with _stand_ins(ns, CrossAttention=_TorchCrossAttention):
        block = ns.DecoderBlock(C, H, FF, **kwargs)
    set_parameters(block, seed, scale=0.2)  # as for the cross-attention: moderate scores
    return block.eval()


@suite.case(
    "decoder_block",
    "parts: self_attn, cross_attn, ff, ln1, ln2, ln3 of the given classes; no dropout by default",
    points=1,
    check=equal(),
    expected={
        "self_attn": "MultiHeadAttention",
        "cross_attn": "_TorchCrossAttention",
        "ff": "FeedForward",
        "ln1": "LayerNorm",
        "ln2": "LayerNorm",
        "ln3": "LayerNorm",
        "ff_dim": FF,
        "training_repeat": 0.0,
    },
)
def _(ns):
    block = _block(ns, 1).train()
    parts = {
        name: type(getattr(block, name, None)).__name__
        for name in ("self_attn", "cross_attn", "ff", "ln1", "ln2", "ln3")
    }
    parts["ff_dim"] = block.ff.fc1.out_features
    with torch.no_grad():
        parts["training_repeat"] = _largest_change(block(_XD.clone(), _MEMD.clone()), block(_XD.clone(), _MEMD.clone()))
    return parts


@suite.case(
    "decoder_block",
    "pre-norm, fixed weights, causal self-mask and a padded memory",
    points=2,
    check=close(rtol=1e-4, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=("parts: self_attn, cross_attn, ff, ln1, ln2, ln3 of the given classes; no dropout by default",),
)
def _(ns):
    with torch.no_grad():
        return _block(ns, 2, norm_first=True)(
            _XD.clone(), _MEMD.clone(), self_mask=_CAUSAL.clone(), memory_mask=_KEY_PAD.clone()
        )


@suite.case(
    "decoder_block",
    "post-norm with relu, fixed weights, causal self-mask and a per-query memory mask",
    points=2,
    check=close(rtol=1e-4, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=("parts: self_attn, cross_attn, ff, ln1, ln2, ln3 of the given classes; no dropout by default",),
)
def _(ns):
    with torch.no_grad():
        return _block(ns, 3, norm_first=False, activation="relu")(
            _XD.clone(), _MEMD.clone(), self_mask=_CAUSAL.clone(), memory_mask=_PER_QUERY.clone()
        )


@suite.case(
    "decoder_block",
    "the default block (no norm_first, no masks) is pre-norm with gelu",
    points=1,
    check=close(rtol=1e-4, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=("parts: self_attn, cross_attn, ff, ln1, ln2, ln3 of the given classes; no dropout by default",),
)
def _(ns):
    with torch.no_grad():
        return _block(ns, 4)(_XD.clone(), _MEMD.clone())


def _layer_state(block):
    a, x = block.self_attn, block.cross_attn
    state = {
        "self_attn.in_proj_weight": torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight]),
        "self_attn.in_proj_bias": torch.cat([a.q_proj.bias, a.k_proj.bias, a.v_proj.bias]),
        "self_attn.out_proj.weight": a.out_proj.weight,
        "self_attn.out_proj.bias": a.out_proj.bias,
        "multihead_attn.in_proj_weight": x.mha.in_proj_weight,  # the stand-in: PyTorch's own nn.MultiheadAttention
        "multihead_attn.in_proj_bias": x.mha.in_proj_bias,
        "multihead_attn.out_proj.weight": x.mha.out_proj.weight,
        "multihead_attn.out_proj.bias": x.mha.out_proj.bias,
        "linear1.weight": block.ff.fc1.weight,
        "linear1.bias": block.ff.fc1.bias,
        "linear2.weight": block.ff.fc2.weight,
        "linear2.bias": block.ff.fc2.bias,
    }
    for i in (1, 2, 3):
        state[f"norm{i}.weight"] = getattr(block, f"ln{i}").weight
        state[f"norm{i}.bias"] = getattr(block, f"ln{i}").bias
    return {key: value.detach().clone() for key, value in state.items()}


def _against_decoder_layer(got):
    twin = nn.TransformerDecoderLayer(
        C, H, FF, dropout=0.0, activation=got["activation"], batch_first=True, norm_first=got["norm"] == "pre"
    )
    twin.load_state_dict(got["state"])
    x, memory = got["x"], got["memory"]
    pad = got["pad"].expand(x.size(0), x.size(1), memory.size(1)).repeat_interleave(H, dim=0)
    with torch.no_grad():
        theirs = twin.eval()(x, memory, tgt_mask=got["causal"], memory_mask=pad)
    verdict = close(rtol=1e-4, atol=1e-5, dtype=None)(got["out"], theirs, False)
    if verdict.passed:
        return None
    return f"your block and nn.TransformerDecoderLayer(norm_first={got['norm'] == 'pre'}) (same weights) do not agree: {verdict.message}"


def _layer_probe(ns, seed, norm_first, activation):
    block = _block(ns, seed, norm_first=norm_first, activation=activation)
    with torch.no_grad():
        out = block(_XD.clone(), _MEMD.clone(), self_mask=_CAUSAL.clone(), memory_mask=_KEY_PAD.clone())
    return {
        "out": out,
        "state": _layer_state(block),
        "x": _XD.clone(),
        "memory": _MEMD.clone(),
        "causal": _CAUSAL.clone(),
        "pad": _KEY_PAD.clone(),
        "norm": "pre" if norm_first else "post",
        "activation": activation,
    }


@suite.case(
    "decoder_block",
    "agrees with nn.TransformerDecoderLayer(norm_first=True, gelu), weights copied",
    points=2,
    check=satisfies(_against_decoder_layer),
)
def _(ns):
    return _layer_probe(ns, 5, True, "gelu")


@suite.case(
    "decoder_block",
    "agrees with nn.TransformerDecoderLayer(norm_first=False, relu), weights copied",
    points=2,
    check=satisfies(_against_decoder_layer),
)
def _(ns):
    return _layer_probe(ns, 6, False, "relu")


def _causal_problem(got):
    early, late = got
    if not early <= 1e-6:
        return f"changing target positions 3 and 4 changed the outputs at positions 0 to 2 (by up to {early:.3g}): pass self_mask to the self-attention"
    if not late > 1e-6:
        return "changing target positions 3 and 4 did not change their own outputs"
    return None


@suite.case(
    "decoder_block",
    "causal self-mask: later target positions never change earlier outputs (both orders)",
    points=1,
    check=satisfies(_causal_problem),
    guard=True,
)
def _(ns):
    changed = _XD.clone()
    changed[:, 3:] = randn(B, TQ - 3, C, seed=402)
    early, late = 0.0, float("inf")
    for norm_first in (True, False):
        block = _block(ns, 7, norm_first=norm_first)
        with torch.no_grad():
            a = block(_XD.clone(), _MEMD.clone(), self_mask=_CAUSAL.clone(), memory_mask=_KEY_PAD.clone())
            b = block(changed, _MEMD.clone(), self_mask=_CAUSAL.clone(), memory_mask=_KEY_PAD.clone())
        early, late = max(early, _largest_change(a[:, :3], b[:, :3])), min(late, _largest_change(a[:, 3:], b[:, 3:]))
    return early, late


def _memory_padding_problem(got):
    if not got <= 1e-6:
        return f"changing blocked memory positions changed the output (by up to {got:.3g}): pass memory_mask to the cross-attention"
    return None


@suite.case(
    "decoder_block",
    "memory padding: blocked memory positions never change the output (both orders)",
    points=1,
    check=satisfies(_memory_padding_problem),
    guard=True,
)
def _(ns):
    other = _MEMD.clone()
    other[_KEY_PAD[:, 0]] = -5.0
    worst = 0.0
    for norm_first in (True, False):
        block = _block(ns, 8, norm_first=norm_first)
        with torch.no_grad():
            a = block(_XD.clone(), _MEMD.clone(), self_mask=_CAUSAL.clone(), memory_mask=_KEY_PAD.clone())
            b = block(_XD.clone(), other, self_mask=_CAUSAL.clone(), memory_mask=_KEY_PAD.clone())
        worst = max(worst, _largest_change(a, b))
    return worst


def _silenced_problem(got):
    x, out = got
    moved = _largest_change(x, out)
    if not moved <= 1e-6:
        return (
            f"with all three sublayers silenced (their output projections zero) a pre-norm block must return x itself, "
            f"but yours moved it by up to {moved:.3g}: each sublayer's output is added to the unnormalised x"
        )
    return None


@suite.case(
    "decoder_block",
    "pre-norm with its three sublayers silenced returns its input (a residual around each)",
    points=1,
    check=satisfies(_silenced_problem),
)
def _(ns):
    block = _block(ns, 9, norm_first=True)
    with torch.no_grad():
        for layer in (block.self_attn.out_proj, block.cross_attn.mha.out_proj, block.ff.fc2):
            layer.weight.zero_()
            layer.bias.zero_()
        return _XD.clone(), block(_XD.clone(), _MEMD.clone(), self_mask=_CAUSAL.clone(), memory_mask=_KEY_PAD.clone())


@suite.case(
    "decoder_block",
    "dropout=0.3 changes nothing in eval mode",
    points=1,
    check=close(rtol=1e-4, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=(  # the same block without dropout: its parts, its defaults, its causal self-mask
        "parts: self_attn, cross_attn, ff, ln1, ln2, ln3 of the given classes; no dropout by default",
        "the default block (no norm_first, no masks) is pre-norm with gelu",
        "pre-norm, fixed weights, causal self-mask and a padded memory",
    ),
)
def _(ns):
    with torch.no_grad():
        return _block(ns, 10, dropout=0.3)(_XD.clone(), _MEMD.clone(), self_mask=_CAUSAL.clone())


@suite.case(
    "decoder_block",
    "dropout=0.3 makes the output random in training mode",
    points=1,
    check=satisfies(_random_in_training),
)
def _(ns):
    block = _block(ns, 11, dropout=0.3).train()
    with torch.no_grad():
        return _largest_change(block(_XD.clone(), _MEMD.clone()), block(_XD.clone(), _MEMD.clone()))


# ======================================================================== seq2seq


def _seq2seq(ns, seed, log=None, **kwargs):
    settings = dict(n_layer=2, n_head=H, n_embd=C)
    settings.update(kwargs)
    known = _torch_parts(log)
    with _stand_ins(ns, Encoder=known["Encoder"], DecoderBlock=known["DecoderBlock"]):
        model = ns.Seq2Seq(15, 11, 8, **settings)
    set_parameters(model, seed)
    return model.eval()


_SRC = torch.tensor([[4, 5, 6, 7, 8, 9, 10], [11, 12, 13, 0, 0, 0, 0], [3, 0, 14, 2, 1, 0, 0]])
_TGT_IN = torch.tensor([[1, 3, 4, 5, 6], [1, 7, 8, 2, 0], [1, 9, 10, 9, 8]])
_SRC_PAD2 = _SRC.clone()  # pad_id=2 at the end of rows 1 and 2; token 0 is ordinary
_SRC_PAD2[_SRC_PAD2 == 2] = 5
_SRC_PAD2[1, 3:], _SRC_PAD2[2, 5:] = 2, 2


@suite.case(
    "seq2seq",
    "built with Encoder(src_vocab, max_len, n_layer, n_head, n_embd, pad_id) and n_layer pre-norm GELU DecoderBlock(C, H, 4C)",
    points=2,
    check=equal(),
    expected={
        "parts": [
            {"part": "Encoder", "vocab_size": 15, "max_len": 8, "n_layer": 3, "n_head": 2, "n_embd": 12, "pad_id": 6}
        ]
        + [
            {
                "part": "DecoderBlock",
                "embed_dim": 12,
                "num_heads": 2,
                "ff_dim": 48,
                "dropout": 0.0,
                "activation": "gelu",
                "norm": "pre",
            }
        ]
        * 3,
        "decoder_blocks": "ModuleList of 3",
        "tgt_emb": [11, 12],
        "tgt_pos_emb": [8, 12],
        "ln_f": "LayerNorm",
        "head": ["Linear", [11, 12], [11]],
        "pad_id": 6,
    },
    structure=True,
)
def _(ns):
    log = []
    model = _seq2seq(ns, 1, log, n_layer=3, n_head=2, n_embd=12, pad_id=6)
    order = {"Encoder": 0, "DecoderBlock": 1}
    return {
        "parts": sorted(log, key=lambda entry: order[entry["part"]]),
        "decoder_blocks": f"{type(model.decoder_blocks).__name__} of {len(model.decoder_blocks)}",
        "tgt_emb": list(model.tgt_emb.weight.shape),
        "tgt_pos_emb": list(model.tgt_pos_emb.weight.shape),
        "ln_f": type(model.ln_f).__name__,
        "head": [
            type(model.head).__name__,
            list(model.head.weight.shape),
            list(model.head.bias.shape) if model.head.bias is not None else None,
        ],
        "pad_id": model.pad_id,
    }


@suite.case(
    "seq2seq",
    "defaults: 2 layers, 4 heads, width 64, pad_id 0",
    points=1,
    check=equal(),
    expected={"encoder": {"n_layer": 2, "n_head": 4, "n_embd": 64, "pad_id": 0}, "blocks": 2, "width": 64, "pad_id": 0},
    structure=True,
)
def _(ns):
    log = []
    known = _torch_parts(log)
    with _stand_ins(ns, Encoder=known["Encoder"], DecoderBlock=known["DecoderBlock"]):
        model = ns.Seq2Seq(15, 11, 8)
    encoder = next(entry for entry in log if entry["part"] == "Encoder")
    return {
        "encoder": {key: encoder[key] for key in ("n_layer", "n_head", "n_embd", "pad_id")},
        "blocks": sum(entry["part"] == "DecoderBlock" for entry in log),
        "width": model.tgt_emb.weight.shape[1],
        "pad_id": model.pad_id,
    }


@suite.case(
    "seq2seq",
    "fixed weights: logits for a padded source",
    points=3,
    check=close(rtol=1e-4, atol=1e-4, dtype=None),
    expected=REFERENCE,
    builds_on=(
        "built with Encoder(src_vocab, max_len, n_layer, n_head, n_embd, pad_id) and n_layer pre-norm GELU DecoderBlock(C, H, 4C)",
    ),
)
def _(ns):
    with torch.no_grad():
        return _seq2seq(ns, 2)(_SRC.clone(), _TGT_IN.clone())


@suite.case(
    "seq2seq",
    "fixed weights, pad_id=2 (token 0 ordinary): logits",
    points=2,
    check=close(rtol=1e-4, atol=1e-4, dtype=None),
    expected=REFERENCE,
    builds_on=(
        "built with Encoder(src_vocab, max_len, n_layer, n_head, n_embd, pad_id) and n_layer pre-norm GELU DecoderBlock(C, H, 4C)",
    ),
)
def _(ns):
    with torch.no_grad():
        return _seq2seq(ns, 3, n_layer=1, pad_id=2)(_SRC_PAD2.clone(), _TGT_IN.clone())


@suite.case(
    "seq2seq", "causal: later decoder inputs never change earlier logits", points=1, check=satisfies(_causal_problem)
)
def _(ns):
    model = _seq2seq(ns, 4)
    changed = _TGT_IN.clone()
    changed[:, 3:] = torch.tensor([[7, 8], [9, 10], [2, 3]])
    with torch.no_grad():
        a, b = model(_SRC.clone(), _TGT_IN.clone()), model(_SRC.clone(), changed)
    return _largest_change(a[:, :3], b[:, :3]), _largest_change(a[:, 3:], b[:, 3:])


def _source_padding_problem(got):
    if not got <= 1e-5:
        return (
            f"padding added to the source changed the logits by up to {got:.3g}: block the source's padding "
            "(tokens equal to pad_id) in cross-attention"
        )
    return None


@suite.case(
    "seq2seq",
    "source padding (pad_id=9) never changes the logits",
    points=2,
    check=satisfies(_source_padding_problem),
    guard=True,
)
def _(ns):
    model = _seq2seq(ns, 5, pad_id=9)
    tgt_in = torch.tensor([[1, 3, 4], [1, 5, 6]])
    with torch.no_grad():
        short = model(torch.tensor([[4, 5, 0], [7, 0, 8]]), tgt_in)
        longer = model(torch.tensor([[4, 5, 0, 9, 9, 9], [7, 0, 8, 9, 9, 9]]), tgt_in)
    return _largest_change(short, longer)


class _Scripted(nn.Module):
    """Greedy decoding's stand-in model: row b's best token at decoder position t is script[b][t].

    It records the mode, the gradient state and the inputs of each call.
    """

    def __init__(self, script, vocab_size=12, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.script = torch.tensor(script)
        self.vocab_size = vocab_size
        self.scale = nn.Parameter(torch.tensor(3.0))
        self.calls = []

    def forward(self, src, tgt_in):
        self.calls.append(
            {"mode": mode_of(self), "grad": grad_mode(), "src": src.detach().clone(), "tgt_in": tgt_in.detach().clone()}
        )
        n, t = tgt_in.shape
        scores = torch.full((n, t, self.vocab_size), -1.0)
        scores.scatter_(2, self.script[:, :t, None], 2.0)
        return scores * self.scale


_START_INCLUDED = Hint(
    lambda got, exp: (
        isinstance(got, list)
        and len(got) == len(exp)
        and all(isinstance(r, list) and len(r) == len(e) + 1 and r[1:] == e for r, e in zip(got, exp))
    ),
    "the start token is not part of the result: return only the generated tokens",
    mistake="start token returned",
)
_END_DROPPED = Hint(
    lambda got, exp: (
        isinstance(got, list)
        and len(got) == len(exp)
        and any(isinstance(r, list) and 2 in e and 2 not in r for r, e in zip(got, exp))
    ),
    "keep each row's end token in its output",
    mistake="end token dropped",
)

_SCRIPT = [[5, 6, 2, 7, 8, 9, 10, 11], [4, 2, 9, 9, 9, 9, 9, 9], [8, 8, 8, 2, 3, 3, 3, 3]]


@suite.case(
    "seq2seq",
    "greedy: rows end at different steps, end token kept, then model.pad_id (here 7)",
    points=2,
    check=equal([_START_INCLUDED, _END_DROPPED]),
    expected=[[5, 6, 2, 7], [4, 2, 7, 7], [8, 8, 8, 2]],
)
def _(ns):
    model = _Scripted(_SCRIPT, pad_id=7)
    return ns.greedy_decode(model, torch.tensor([[3, 4], [5, 6], [7, 8]]), start_id=1, end_id=2, max_len=8).tolist()


@suite.case(
    "seq2seq",
    "greedy: no row ends, so max_len=5 tokens come back",
    points=1,
    check=equal([_START_INCLUDED]),
    expected=[[5, 6, 3, 7, 8], [4, 4, 9, 9, 9]],
)
def _(ns):
    model = _Scripted([[5, 6, 3, 7, 8, 9, 10, 11], [4, 4, 9, 9, 9, 9, 9, 9]])
    return ns.greedy_decode(model, torch.tensor([[3, 4], [5, 6]]), start_id=1, end_id=2, max_len=5).tolist()


@suite.case("seq2seq", "greedy: max_len=0 returns (B, 0)", points=1, check=equal(), expected=[2, 0], guard=True)
def _(ns):
    model = _Scripted([[5, 6], [4, 4]])
    return list(ns.greedy_decode(model, torch.tensor([[3, 4], [5, 6]]), start_id=1, end_id=2, max_len=0).shape)


def _inputs_problem(got):
    out, calls = got
    if out != [[5, 6, 2, 0], [4, 2, 0, 0], [8, 8, 8, 2]]:
        return (
            f"with start_id=10 and end_id=2 the tokens are not those of greedy decoding (each row's best tokens "
            f"up to its end token, then padding); got {out}"
        )
    if len(calls) != 4:
        return (
            f"the model was called {len(calls)} times; every row has ended after 4 tokens, so decoding stops there "
            "(one call per generated token)"
        )
    for step, call in enumerate(calls):
        tgt_in = call["tgt_in"]
        if tuple(tgt_in.shape) != (3, step + 1) or not bool((tgt_in[:, 0] == 10).all()):
            return (
                f"call {step + 1} should get a decoder input of shape (3, {step + 1}) starting with the start token 10"
            )
        for row, ended in enumerate([2, 1, 3]):  # the step at which each row produced its end token
            width = min(step, ended + 1)
            if tgt_in[row, 1 : 1 + width].tolist() != out[row][:width]:
                return (
                    f"call {step + 1} should feed back the tokens chosen so far; row {row} got {tgt_in[row].tolist()}"
                )
        if not torch.equal(call["src"], torch.tensor([[3, 4], [5, 6], [7, 8]])):
            return "the source must be passed to the model unchanged at every step"
    return None


@suite.case(
    "seq2seq",
    "greedy: inputs start with start_id and feed back the chosen tokens; stops when all rows have ended",
    points=2,
    check=satisfies(_inputs_problem),
)
def _(ns):
    model = _Scripted(_SCRIPT)
    out = ns.greedy_decode(model, torch.tensor([[3, 4], [5, 6], [7, 8]]), start_id=10, end_id=2, max_len=8)
    return out.tolist(), list(model.calls)


class _Copier(nn.Module):
    """A stand-in whose best token at decoder position t is src[b, t], and end_id past the source's end."""

    def __init__(self, end_id, pad_id=0, vocab_size=12):
        super().__init__()
        self.end_id, self.pad_id, self.vocab_size = end_id, pad_id, vocab_size
        self.remap = torch.arange(vocab_size).index_fill_(0, torch.tensor([pad_id]), end_id)  # padding read as the end
        self.scale = nn.Parameter(torch.tensor(5.0))

    def forward(self, src, tgt_in):
        n, t = tgt_in.shape
        wanted = torch.full((n, t), self.end_id)
        width = min(t, src.size(1))
        wanted[:, :width] = src[:, :width]
        wanted = self.remap[wanted]
        return F.one_hot(wanted, self.vocab_size).float() * self.scale


@suite.case(
    "seq2seq",
    "greedy: copies the source with a model that reads it (each row its own source)",
    points=1,
    check=equal(),
    expected=[[5, 6, 7, 3], [8, 3, 0, 0], [9, 10, 11, 3]],
)
def _(ns):
    model = _Copier(end_id=3)
    return ns.greedy_decode(
        model, torch.tensor([[5, 6, 7], [8, 0, 0], [9, 10, 11]]), start_id=1, end_id=3, max_len=6
    ).tolist()


@suite.case(
    "seq2seq",
    "greedy: eval mode and no gradients inside; the caller's mode (train or eval) restored",
    points=1,
    check=satisfies(lambda got: mode_problem(got, "greedy_decode")),
    guard=True,
)
def _(ns):
    runs = []
    for mode in (True, False):
        model = _Scripted(_SCRIPT).train(mode)
        before = mode_of(model)
        ns.greedy_decode(model, torch.tensor([[3, 4], [5, 6], [7, 8]]), start_id=1, end_id=2, max_len=3)
        runs.append([before, [[c["mode"], c["grad"]] for c in model.calls], mode_of(model)])
    return runs


@suite.case("seq2seq", "greedy: a negative max_len raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.greedy_decode, _Scripted(_SCRIPT), torch.tensor([[3, 4], [5, 6], [7, 8]]), 1, 2, -1)


# ======================================================================== seq2seq_works


class _Recorder(nn.Module):
    """train_seq2seq's stand-in model: logits are a row of a table chosen by the decoder input."""

    def __init__(self, pad_id=0, vocab_size=10, seed=0, scale=1.0):
        super().__init__()
        self.pad_id, self.scale = pad_id, scale
        self.table = nn.Embedding(vocab_size, vocab_size)
        with torch.no_grad():
            self.table.weight.copy_(torch.randn(vocab_size, vocab_size, generator=generator(500 + seed)))
        self.calls = []

    def forward(self, src, tgt_in):
        logits = self.scale * self.table(tgt_in)
        self.calls.append(
            {
                "mode": mode_of(self),
                "grad": grad_mode(),
                "src": src.detach().cpu().clone(),
                "tgt_in": tgt_in.detach().cpu().clone(),
                "logits": logits.detach().cpu().clone(),
            }
        )
        return logits


# pad_id 9 (so that a hard-coded 0 shows), start token 8; every source row distinct
_W_SRC = torch.tensor(
    [[3, 4, 5, 9], [6, 7, 9, 9], [0, 3, 4, 6], [5, 5, 7, 9], [4, 0, 9, 9], [7, 6, 5, 4], [1, 1, 1, 9], [2, 3, 9, 9]]
)
_W_TGT = torch.tensor(
    [
        [5, 4, 3, 2, 9],
        [7, 6, 2, 9, 9],
        [6, 4, 3, 0, 2],
        [7, 5, 5, 2, 9],
        [0, 4, 2, 9, 9],
        [4, 5, 6, 7, 2],
        [1, 1, 1, 2, 9],
        [3, 2, 2, 9, 9],
    ]
)
_W_IN = torch.cat([torch.full((8, 1), 8), _W_TGT[:, :-1]], dim=1)


def _matched_rows(call):
    """For each row of a recorded call, the dataset row it is (by its source), or None."""
    rows = []
    for s in call["src"]:
        found = [i for i in range(len(_W_SRC)) if torch.equal(_W_SRC[i], s)]
        rows.append(found[0] if found else None)
    return rows


def _training_calls(calls):
    return [c for c in calls if c["grad"] == "grad"]


def _pairs_problem(got):
    losses, calls, batch = got
    if not isinstance(losses, list) or len(losses) != 6 or not all(type(v) is float for v in losses):
        return "train_seq2seq must return a list with one Python float per step (6 here)"
    trained = _training_calls(calls)
    if len(trained) != 6:
        return f"the model should run once per step with gradients; it did {len(trained)} times for 6 steps"
    for call in trained:
        if tuple(call["src"].shape) != (batch, 4) or tuple(call["tgt_in"].shape) != (batch, 5):
            return f"each step should feed batch_size={batch} rows, got src {tuple(call['src'].shape)} and tgt_in {tuple(call['tgt_in'].shape)}"
        for row, t in zip(_matched_rows(call), call["tgt_in"]):
            if row is None:
                return "a source row fed to the model is not one of src's rows"
            if not torch.equal(_W_IN[row], t):
                if torch.equal(_W_TGT[row], t):
                    return "the decoder was fed the targets themselves: feed them shifted right behind start_id"
                return f"the decoder input {t.tolist()} is not its source's target shifted right behind start_id"
    return None


def _record(ns, steps=6, batch=4, seed=0, **kwargs):
    model = _Recorder(pad_id=9, seed=seed)
    settings = dict(steps=steps, batch_size=batch, lr=0.01, start_id=8, generator=generator(510 + seed))
    settings.update(kwargs)
    losses = ns.train_seq2seq(model, _W_SRC.clone(), _W_TGT.clone(), **settings)
    return losses, model


@suite.case(
    "seq2seq_works",
    "train_seq2seq: pairs kept together, decoder input shifted right behind start_id, one float per step",
    points=2,
    check=satisfies(_pairs_problem),
    timeout=30,
)
def _(ns):
    losses, model = _record(ns)
    return losses, model.calls, 4


def _expected_loss(call):
    rows = _matched_rows(call)
    if None in rows:
        return None
    labels = _W_TGT[rows].masked_fill(_W_TGT[rows] == 9, -100)
    return float(
        F.cross_entropy(
            call["logits"].reshape(-1, call["logits"].size(-1)).double(), labels.reshape(-1), ignore_index=-100
        )
    )


def _losses_problem(got):
    losses, calls = got
    trained = _training_calls(calls)
    if not isinstance(losses, list) or len(losses) != len(trained):
        return "expected one loss per step, and one model call with gradients per step"
    for step, (loss, call) in enumerate(zip(losses, trained)):
        want = _expected_loss(call)
        if want is None:
            return "a source row fed to the model is not one of src's rows"
        if not isinstance(loss, float) or not abs(loss - want) <= 1e-6 + 1e-5 * abs(want):
            return (
                f"the loss of step {step} is {loss!r}, which is not the mean cross-entropy of that batch over the "
                "positions that are not padding (model.pad_id, here 9)"
            )
    return None


@suite.case(
    "seq2seq_works",
    "losses: mean cross-entropy over the non-padding positions (model.pad_id = 9)",
    points=2,
    check=satisfies(_losses_problem),
    timeout=30,
)
def _(ns):
    losses, model = _record(ns, seed=1)
    return losses, model.calls


@contextlib.contextmanager
def _watching_steps():
    """Record, at every optimiser step, the optimiser's class, learning rates and gradients."""
    seen = []

    def hook(optimizer, args, kwargs):
        grads = [
            p.grad.detach().clone() if p.grad is not None else None
            for group in optimizer.param_groups
            for p in group["params"]
        ]
        seen.append(
            {"class": type(optimizer).__name__, "lr": [float(g["lr"]) for g in optimizer.param_groups], "grads": grads}
        )

    handle = register_optimizer_step_pre_hook(hook)
    try:
        yield seen
    finally:
        handle.remove()


def _expected_grad(call):
    """The gradient of one batch's loss with respect to the recorder's table."""
    rows = _matched_rows(call)
    logits = call["logits"].double().requires_grad_(True)
    labels = _W_TGT[rows].masked_fill(_W_TGT[rows] == 9, -100)
    F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=-100).backward()
    table = torch.zeros(logits.size(-1), logits.size(-1), dtype=torch.float64)
    table.index_add_(0, call["tgt_in"].reshape(-1), logits.grad.reshape(-1, logits.size(-1)))
    return table


def _gradients_problem(got):
    steps, calls = got
    trained = _training_calls(calls)
    if len(steps) != len(trained) or not steps:
        return f"expected one optimiser step per model call: {len(steps)} steps for {len(trained)} calls"
    for number, (step, call) in enumerate(zip(steps, trained)):
        if None in _matched_rows(call):
            return "a source row fed to the model is not one of src's rows"
        grads = [g for g in step["grads"] if g is not None]
        if len(grads) != 1:
            return "at each optimiser step the model's one parameter should have a gradient"
        verdict = close(rtol=1e-4, atol=1e-7, dtype=None)(grads[0], _expected_grad(call), False)
        if not verdict.passed:
            return (
                f"at step {number} the gradients are not those of that step's batch loss (zero them at every step, "
                f"before the backward pass, and leave padding out of the loss): {verdict.message}"
            )
    return None


@suite.case(
    "seq2seq_works",
    "gradients: each step's are those of its own batch (zeroed first), grad_clip=None",
    points=2,
    check=satisfies(_gradients_problem),
    timeout=30,
)
def _(ns):
    with _watching_steps() as seen:
        _, model = _record(ns, steps=4, seed=2, grad_clip=None)
    return seen, model.calls


def _clipping_problem(got):
    norms = got
    if not norms:
        return "no optimiser step was taken"
    for norm in norms:
        if not abs(norm - 1e-3) <= 1e-3 * 1e-3:
            return f"with grad_clip=1e-3 the total gradient norm at the step should be 1e-3 (clipped), got {norm:.4g}"
    return None


def _step_norms(seen):
    return [float(torch.sqrt(sum((g.double() ** 2).sum() for g in step["grads"] if g is not None))) for step in seen]


@suite.case(
    "seq2seq_works",
    "grad_clip=1e-3 clips the total gradient norm before each step",
    points=1,
    check=satisfies(_clipping_problem),
    timeout=30,
    guard=True,
)
def _(ns):
    with _watching_steps() as seen:
        _record(ns, steps=3, seed=3, grad_clip=1e-3)
    return _step_norms(seen)


def _default_clip_problem(got):
    if not got:
        return "no optimiser step was taken"
    if not all(abs(norm - 1.0) <= 1e-3 for norm in got):
        return f"by default (grad_clip=1.0) the total gradient norm at each step should be clipped to 1.0; got {[round(n, 4) for n in got]}"
    return None


@suite.case(
    "seq2seq_works",
    "by default the total gradient norm is clipped to 1.0",
    points=1,
    check=satisfies(_default_clip_problem),
    timeout=30,
    guard=True,
)
def _(ns):
    model = _Recorder(pad_id=9, seed=8, scale=50.0)  # large logits: gradient norms far above 1
    with _watching_steps() as seen:
        ns.train_seq2seq(
            model, _W_SRC.clone(), _W_TGT.clone(), steps=3, batch_size=4, lr=0.01, start_id=8, generator=generator(516)
        )
    return _step_norms(seen)


def _adamw_problem(got):
    kind, lrs, moved = got
    if kind != "AdamW":
        return f"the optimiser should be torch.optim.AdamW, got {kind}"
    if any(abs(v - 0.05) > 1e-12 for v in lrs):
        return f"the optimiser's learning rate should be lr=0.05, got {lrs}"
    if not 0.9 * 0.05 <= moved <= 1.02 * 0.05:
        return f"after one AdamW step with lr=0.05 from zero weights, the weights with a gradient should move by about 0.05; they moved by up to {moved:.4g}"
    return None


@suite.case(
    "seq2seq_works",
    "AdamW with learning rate lr: one step moves each weight by about lr",
    points=1,
    check=satisfies(_adamw_problem),
    timeout=30,
)
def _(ns):
    model = _Recorder(pad_id=9, seed=4)
    with torch.no_grad():
        model.table.weight.zero_()  # so that weight decay, whatever its setting, moves nothing
    before = model.table.weight.detach().clone()
    with _watching_steps() as seen:
        ns.train_seq2seq(
            model, _W_SRC.clone(), _W_TGT.clone(), steps=1, batch_size=8, lr=0.05, start_id=8, generator=generator(514)
        )
    moved = float((model.table.weight.detach() - before).abs().max())
    return (seen[0]["class"] if seen else "no optimiser step"), (seen[0]["lr"] if seen else []), moved


def _mode_problem(got):
    modes = [c["mode"] for c in _training_calls(got)]
    if not modes or any(mode != "train" for mode in modes):
        return "train_seq2seq must put the model in training mode (model.train()) before it runs it"
    return None


@suite.case(
    "seq2seq_works",
    "training mode: a model handed over in eval mode is trained in training mode",
    points=1,
    check=satisfies(_mode_problem),
    timeout=30,
)
def _(ns):
    model = _Recorder(pad_id=9, seed=5).eval()
    ns.train_seq2seq(
        model, _W_SRC.clone(), _W_TGT.clone(), steps=2, batch_size=3, lr=0.01, start_id=8, generator=generator(515)
    )
    return model.calls


def _rows_drawn(calls):
    """The dataset rows (by their sources) fed to the model in its training calls, in order."""
    return [row for call in _training_calls(calls) for row in _matched_rows(call)]


def _generator_rows_problem(got):
    same_a, same_b, other = (_rows_drawn(calls) for calls in got)
    if same_a != same_b:
        return "generators with the same seed drew different rows (after different global seeds): draw the rows with the generator"
    if same_a == other:
        return "generators with different seeds drew the same rows: is the generator used?"
    return None


@suite.case(
    "seq2seq_works",
    "rows drawn with the generator: same seed, same rows; another seed, other rows",
    points=1,
    check=satisfies(_generator_rows_problem),
    timeout=30,
)
def _(ns):
    drawn = []
    for global_seed, seed in ((5, 520), (6, 520), (5, 521)):
        torch.manual_seed(global_seed)
        model = _Recorder(pad_id=9, seed=6)
        ns.train_seq2seq(
            model, _W_SRC.clone(), _W_TGT.clone(), steps=5, batch_size=4, lr=0.01, start_id=8, generator=generator(seed)
        )
        drawn.append(model.calls)
    return drawn


def _coverage_problem(got):
    rows = _rows_drawn(got)
    if None in rows:
        return "a source row fed to the model is not one of src's rows"
    counts = [rows.count(i) for i in range(len(_W_SRC))]
    if min(counts) == 0:
        return f"over 60 steps of 4 rows, some of the 8 rows were never drawn (counts {counts}): draw uniformly from all N rows"
    if max(counts) > 60:
        return f"over 60 steps of 4 rows one row was drawn {max(counts)} times out of 240: draw the rows uniformly"
    return None


@suite.case(
    "seq2seq_works",
    "every row of the data is drawn (uniformly, over 60 steps)",
    points=1,
    check=satisfies(_coverage_problem),
    timeout=30,
)
def _(ns):
    _, model = _record(ns, steps=60, seed=7)
    return model.calls


def _argument_errors(got):
    labels = ["steps=0", "batch_size=0", "lr=0", "src and tgt with 8 and 7 rows"]
    for label, outcome in zip(labels, got):
        if outcome["raised"] != "ValueError":
            return f"{label} should raise ValueError; {'nothing was raised' if outcome['raised'] is None else 'got ' + outcome['raised']}"
    return None


@suite.case("seq2seq_works", "bad arguments raise ValueError", points=1, check=satisfies(_argument_errors), timeout=30)
def _(ns):
    def call(**changes):
        settings = dict(steps=2, batch_size=2, lr=0.01, start_id=8, generator=generator(530))
        settings.update(changes)
        tgt = settings.pop("tgt", _W_TGT.clone())
        return catch(ns.train_seq2seq, _Recorder(pad_id=9), _W_SRC.clone(), tgt, **settings)

    return [call(steps=0), call(batch_size=0), call(lr=0.0), call(tgt=_W_TGT[:7].clone())]


def _reversed_enough(got):
    predictions, train_seed, test_seed = got
    _, _, seen = _reversal_pairs(2000, train_seed)
    _, targets, _ = _reversal_pairs(200, test_seed, seen)
    if not isinstance(predictions, torch.Tensor) or tuple(predictions.shape) != tuple(targets.shape):
        return f"expected predictions of shape {tuple(targets.shape)}"
    right = float(((predictions == targets) | (targets == 0)).all(dim=1).float().mean())
    if not right >= THRESHOLD:
        return (
            f"after training, {right:.1%} of the unseen strings come out exactly reversed, fewer than {THRESHOLD:.0%}: "
            "look for a decoder input that is not the shifted target, labels shifted too, gradients zeroed between "
            "backward and step, the same rows at every step, or sources and targets drawn with different rows"
        )
    return None


# How each kind of layer is put back to PyTorch's default initialisation, by its exact type


@suite.case(
    "seq2seq_works",
    f"200 steps on other digit strings: at least {THRESHOLD:.0%} of unseen strings exactly reversed",
    points=3,
    check=satisfies(_reversed_enough),
    timeout=60,
)
def _(ns):
    src, tgt, seen = _reversal_pairs(2000, 2)
    test_src, test_tgt, _ = _reversal_pairs(200, 3, seen)
    known = _torch_parts()
    with _stand_ins(ns, Encoder=known["Encoder"], DecoderBlock=known["DecoderBlock"]):
        model = ns.Seq2Seq(13, 13, 8, n_layer=1, n_head=2, n_embd=32)
    _default_init(ns, model, 2)
    ns.train_seq2seq(model, src, tgt, steps=200, batch_size=32, lr=3e-3, start_id=1, generator=generator(2))
    tgt_in = torch.cat([torch.ones(len(test_tgt), 1, dtype=torch.long), test_tgt[:, :-1]], dim=1)
    model.cpu().eval()
    with torch.no_grad():
        return model(test_src, tgt_in).argmax(dim=-1), 2, 3
