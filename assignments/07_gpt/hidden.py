"""Hidden tests of stage 07_gpt (run only when grading; never shipped to students).

Expected values marked REFERENCE are the reference solution's outputs on the same
probe, saved at build time. Probes return raw outputs (tensors, numbers, strings; a
module's mode as "train"/"eval", the grad state as "grad"/"no_grad"); every comparison
happens in the checks, in the grading process. The clause table of each question is
``clauses.md`` beside this file.

Keeping the questions apart (and no implementation of a graded function in this file)
    model calls only GPTConfig and GPT; params calls num_parameters with a configuration
    of the grader's own (the kit's ``stand_in_config``: a dataclass with every field
    given and no defaults), so a GPTConfig mistake costs model points only. train runs
    on the kit's ``CausalMean``, a stand-in language model that is no transformer (each
    position's logits come from the running mean of the embeddings so far).
    The one dependency left is by design: training_works trains the student's GPT with
    the student's train (and so its train_step and estimate_loss) and measures the
    validation loss itself.

Weights
    public.py's ``_fill`` fills each parameter from its dotted name and a seed (with
    kit.set_parameters), filling a tied head/embedding matrix once under the name
    tok_emb.weight, so neither the order in which modules were created nor the
    model's own initialisation matters.

Tolerances (relative + absolute, per test)
    - logits of a whole model, float32: rtol 1e-4, atol 1e-4 (values of order 1-10;
      a different but equivalent order of operations moves them by about 1e-6);
    - losses: rtol 1e-5, atol 1e-5 (Python floats from float32 tensors);
    - gradients after train_step: rtol 1e-4, atol 1e-6; parameters after one SGD
      step: rtol 1e-4, atol 1e-6; a clipped gradient norm: rtol 1e-3 (what
      clip_grad_norm_ leaves after its 1e-6 guard);
    - parameter counts, evaluation steps, shapes: exact;
    - learning rates: 1e-9 relative where one is compared with another (history
      against what the optimiser used); the schedule's shape is judged by properties
      with margins that admit an off-by-one in the step count;
    - training_works: the validation loss after training below 1.5 nats (the
      reference reaches about 0.3; a model that learns nothing stays near ln V = 3.0,
      one that only learns character frequencies near 2.5).
"""

import contextlib
import io
import math
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder.kit import (
    REFERENCE,
    CausalMean,
    Hint,
    Suite,
    Verdict,
    catch,
    close,
    close_number,
    each_raised,
    generator,
    mode_of,
    mode_problem,
    satisfies,
    stand_in_config,
)

from public import _evaluation_weights, _fill, _optimizer_watch, _plain, _train_and_measure

suite = Suite(public=False)

# check-stage's rule "an empty answer costs only its own question": training_works trains the
# student's GPT with the student's train, by design; every other question runs on stand-ins
QUESTIONS_USE = {"training_works": ("model", "train")}


# ======================================================================== helpers


# ======================================================================== model

TINY = dict(vocab_size=13, block_size=9, n_layer=2, n_head=3, n_embd=12)
_DEFAULTS = {
    "n_layer": 4,
    "n_head": 4,
    "n_embd": 128,
    "ff_dim": 512,
    "dropout": [0.0],
    "norm_first": "True",
    "config_ff_dim": None,
    "given": [13, 9],
}


def _defaults_problem(got):
    for key, value in _DEFAULTS.items():
        if got.get(key) != value:
            return f"built from GPTConfig(vocab_size=13, block_size=9), the model's {key} must be {value!r} (GPTConfig's defaults and the two values given), got {got.get(key)!r}"
    if got["head_weight"] != got["tok_emb_weight"]:
        return "by default (tie_weights=True) head.weight must be the very same Parameter as tok_emb.weight"
    return None


@suite.case(
    "model",
    "GPT(GPTConfig(vocab_size=13, block_size=9)) is built with the stated defaults",
    points=1,
    check=satisfies(_defaults_problem),
    timeout=30,
    structure=True,
)  # a GPTConfig with far larger defaults builds a far larger model
def _(ns):
    config = ns.GPTConfig(vocab_size=13, block_size=9)
    model = ns.GPT(config)
    first = model.blocks[0]
    return {
        "n_layer": len(model.blocks),
        "n_head": first.attn.num_heads,
        "n_embd": model.tok_emb.weight.shape[1],
        "ff_dim": first.ff.fc1.out_features,
        "dropout": sorted({getattr(m, "p", None) for m in model.modules()} - {None}),
        "norm_first": repr(first.norm_first),
        "config_ff_dim": config.ff_dim,
        "given": [model.tok_emb.weight.shape[0], model.pos_emb.weight.shape[0]],
        "head_weight": id(model.head.weight),
        "tok_emb_weight": id(model.tok_emb.weight),
    }


_PARTS_CONFIG = dict(vocab_size=13, block_size=9, n_layer=3, n_head=3, n_embd=12, dropout=0.1, norm_first=False)


def _model_parts_problem(got):
    if got["config"] != [13, 9, 3, 3, 12, None, 0.1, "True", "False"]:
        return "self.config must be the GPTConfig the model was built from (its fields differ)"
    if got["blocks"] != ["ModuleList", 3]:
        return f"blocks must be an nn.ModuleList of n_layer=3 blocks, got a {got['blocks'][0]} of {got['blocks'][1]}"
    for i, block in enumerate(got["block"]):
        kind, heads, hidden, norm_first, drops = block
        if kind != "TransformerBlock":
            return f"blocks[{i}] must be the given TransformerBlock, got {kind}"
        if heads != 3:
            return f"blocks[{i}] must have n_head=3 heads, got {heads}"
        if hidden != 48:
            return f"with ff_dim=None the blocks' feed-forward width must be 4 * n_embd = 48, got {hidden}"
        if norm_first != "False":
            return f"blocks[{i}] must follow config.norm_first (False here), got {norm_first}"
        if drops != [0.1]:
            return f"blocks[{i}] must get config.dropout (0.1) for its dropout, got {drops}"
    if got["ln_f"] != ["LayerNorm", [12]]:
        return f"ln_f must be the given LayerNorm(n_embd), got {got['ln_f']}"
    if got["head"][:3] != ["Linear", 12, 13]:
        return f"head must be nn.Linear(n_embd, vocab_size), got {got['head'][:3]}"
    if got["head"][3] != "NoneType":
        return "the head must have no bias (bias=False)"
    if got["tok_emb"] != [13, 12] or got["pos_emb"] != [9, 12]:
        return f"tok_emb must be (vocab_size, n_embd) and pos_emb (block_size, n_embd), got {got['tok_emb']} and {got['pos_emb']}"
    return None


@suite.case(
    "model",
    "the parts of a 3-layer post-norm model: config kept, blocks built from it, ln_f, head without bias",
    points=1,
    check=satisfies(
        _model_parts_problem,
        [
            Hint(
                lambda got, exp: got["head"][3] != "NoneType",
                "the head is a linear map without bias",
                mistake="head with a bias",
            ),
        ],
    ),
    structure=True,
)
def _(ns):
    config = ns.GPTConfig(**_PARTS_CONFIG)
    model = ns.GPT(config)
    kept = getattr(model, "config", None)
    fields = [
        getattr(kept, name, "missing")
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd", "ff_dim", "dropout")
    ]
    fields += [repr(getattr(kept, "tie_weights", "missing")), repr(getattr(kept, "norm_first", "missing"))]
    blocks = getattr(model, "blocks", [])
    described = []
    for block in blocks:
        attn, ff = getattr(block, "attn", None), getattr(block, "ff", None)
        drops = sorted({getattr(m, "p", None) for m in block.modules()} - {None})
        described.append(
            [
                type(block).__name__,
                getattr(attn, "num_heads", None),
                getattr(getattr(ff, "fc1", None), "out_features", None),
                repr(getattr(block, "norm_first", None)),
                drops,
            ]
        )
    head, ln_f = model.head, getattr(model, "ln_f", None)
    return {
        "config": fields,
        "blocks": [type(blocks).__name__, len(blocks)],
        "block": described,
        "ln_f": [type(ln_f).__name__, list(getattr(getattr(ln_f, "weight", None), "shape", []))],
        "head": [
            type(head).__name__,
            getattr(head, "in_features", None),
            getattr(head, "out_features", None),
            type(getattr(head, "bias", None)).__name__,
        ],
        "tok_emb": list(model.tok_emb.weight.shape),
        "pos_emb": list(model.pos_emb.weight.shape),
    }


def _tying_problem(got):
    (tied_head, tied_emb, tied_listed, tied_named), (untied_head, untied_emb, _, _) = got
    if tied_head != tied_emb:
        return "with tie_weights=True, head.weight must be the very Parameter tok_emb.weight is (one object)"
    if tied_listed != tied_named - 1:
        return "with tie_weights=True the shared matrix must be one Parameter, listed once by model.parameters()"
    if untied_head == untied_emb:
        return "with tie_weights=False the head must have a matrix of its own"
    return None


@suite.case(
    "model",
    "tie_weights=True shares one Parameter, tie_weights=False keeps two",
    points=1,
    check=satisfies(
        _tying_problem,
        [
            Hint(
                lambda got, exp: got[0][0] != got[0][1],
                "tie by assigning the embedding's Parameter to the head (one object), not by copying values",
                mistake="head not tied",
            ),
            Hint(
                lambda got, exp: got[1][0] == got[1][1],
                "with tie_weights=False the head has a matrix of its own",
                mistake="head tied when tie_weights=False",
            ),
        ],
    ),
    structure=True,
)
def _(ns):
    out = []
    for tie in (True, False):
        model = ns.GPT(ns.GPTConfig(**TINY, tie_weights=tie))
        out.append(
            [
                id(model.head.weight),
                id(model.tok_emb.weight),
                len(list(model.parameters())),
                len(list(model.named_parameters(remove_duplicate=False))),
            ]
        )
    return out


def _counts(labels, what, hints=()):
    """A check on parameter counts (one per configuration in ``labels``), in words."""

    def check(got, expected, reveal=True):
        if (
            not isinstance(got, list)
            or len(got) != len(labels)
            or any(isinstance(n, bool) or not isinstance(n, int) for n in got)
        ):
            return Verdict(False, f"expected one whole number per configuration ({len(labels)}), got {got!r}")
        for label, mine, right in zip(labels, got, expected):
            if mine != right:
                verdict = Verdict(
                    False,
                    f"{what} {mine} for the {label} configuration, which is not its number of distinct parameters",
                )
                for hint in hints:
                    if hint.when(got, expected):
                        return Verdict(False, f"{verdict.message}\nHint: {hint.text}", hint.mistake)
                return verdict
        return Verdict(True)

    return check


def _unique_count(model):
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


@suite.case(
    "model",
    "the model's own parameter count for tied, untied and ff_dim configurations",
    points=1,
    check=_counts(["tied", "untied", "ff_dim=20 post-norm"], "your GPT holds"),
    expected=REFERENCE,
    structure=True,
)
def _(ns):
    configs = [TINY, dict(TINY, tie_weights=False), dict(TINY, ff_dim=20, norm_first=False)]
    return [_unique_count(ns.GPT(ns.GPTConfig(**c))) for c in configs]


MODEL_IDX = torch.randint(13, (3, 7), generator=generator(11))


def _tiny(ns, seed):
    """The student's GPT in the TINY configuration, with fixed weights from ``seed``, in eval mode."""
    model = ns.GPT(ns.GPTConfig(**TINY))
    _fill(model, seed)
    return model.eval()


@suite.case(
    "model",
    "logits with fixed weights: pre-norm, tied (B=3, T=7, V=13, C=12)",
    points=2,
    check=close(rtol=1e-4, atol=1e-4, dtype=None),
    expected=REFERENCE,
)
def _(ns):
    model = _tiny(ns, 21)
    with torch.no_grad():
        return model(MODEL_IDX)[0]


@suite.case(
    "model",
    "logits with fixed weights: post-norm, untied, ff_dim=20, dropout=0.2 in eval mode",
    points=2,
    check=close(rtol=1e-4, atol=1e-4, dtype=None),
    expected=REFERENCE,
    builds_on=("the parts of a 3-layer post-norm model: config kept, blocks built from it, ln_f, head without bias",),
)
def _(ns):
    model = ns.GPT(ns.GPTConfig(**dict(TINY, norm_first=False, tie_weights=False, ff_dim=20, dropout=0.2)))
    _fill(model, 22)
    model.eval()
    with torch.no_grad():
        return model(MODEL_IDX)[0]


@suite.case(
    "model",
    "losses with targets: all kept, some -100, all but one -100",
    points=1,
    check=close(rtol=1e-5, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=("logits with fixed weights: pre-norm, tied (B=3, T=7, V=13, C=12)",),
)
def _(ns):
    model = _tiny(ns, 23)
    targets = torch.randint(13, (3, 7), generator=generator(12))
    some = targets.clone()
    some[0, :5] = -100
    some[2, 3] = -100
    one = torch.full_like(targets, -100)
    one[1, 4] = targets[1, 4]
    with torch.no_grad():
        return torch.tensor([float(model(MODEL_IDX, t)[1]) for t in (targets, some, one)], dtype=torch.float64)


@suite.case(
    "model",
    "the loss of idx and targets sliced from one tensor of windows (not contiguous)",
    points=1,
    check=close(rtol=1e-5, atol=1e-5, dtype=None),
    expected=REFERENCE,
    builds_on=("logits with fixed weights: pre-norm, tied (B=3, T=7, V=13, C=12)",),
)
def _(ns):
    model = _tiny(ns, 29)
    rows = torch.randint(13, (4, 9), generator=generator(13))  # four windows of 8 tokens and their next
    with torch.no_grad():
        return model(rows[:, :-1], rows[:, 1:])[1].reshape(1).double()


def _length_problem(got):
    shape, loss, raised = got
    if shape != [2, 9, 13]:
        return f"with T == block_size the logits must be (B, T, V); yours have shape {shape}"
    if loss != "NoneType":
        return f"without targets the loss must be None, got a {loss}"
    if raised != "ValueError":
        return f"T = block_size + 1 must raise ValueError, but {'nothing was raised' if raised is None else raised + ' was raised'}"
    return None


@suite.case(
    "model",
    "T == block_size runs (loss None without targets); T = block_size + 1 raises ValueError",
    points=1,
    check=satisfies(_length_problem),
)
def _(ns):
    model = ns.GPT(ns.GPTConfig(**TINY))
    with torch.no_grad():
        logits, loss = model(torch.zeros(2, 9, dtype=torch.long))
    return [list(logits.shape), type(loss).__name__, catch(model, torch.zeros(1, 10, dtype=torch.long))["raised"]]


def _causal_problem(got):
    before, after = got
    if (
        type(before) is not torch.Tensor
        or type(after) is not torch.Tensor
        or before.dim() != 3
        or before.shape != after.shape
    ):
        return "the model must return logits of shape (B, T, V)"
    moved = float((before[:, :4] - after[:, :4]).abs().max())
    if moved > 1e-5:
        return f"changing the tokens from position 4 on changed the logits of positions 0-3 by up to {moved:.3g}: each position may only see itself and earlier positions"
    return None


@suite.case(
    "model",
    "changing later tokens leaves earlier logits unchanged",
    points=1,
    check=satisfies(_causal_problem),
    guard=True,  # logits of zeros pass it: it counts only when a test of the logits passes
)
def _(ns):
    model = ns.GPT(ns.GPTConfig(**dict(TINY, norm_first=False)))
    _fill(model, 24)
    model.eval()
    changed = MODEL_IDX.clone()
    changed[:, 4:] = (changed[:, 4:] + 5) % 13
    with torch.no_grad():
        return model(MODEL_IDX)[0], model(changed)[0]


def _dropout_problem(got):
    kinds, first, second = got
    if kinds != [0.3]:
        return f"every nn.Dropout of the model must use config.dropout (0.3), found p = {kinds}"
    if type(first) is not torch.Tensor or type(second) is not torch.Tensor or first.shape != second.shape:
        return "the model must return logits of shape (B, T, V)"
    if float((first - second).abs().max()) <= 1e-6:
        return "with config.dropout=0.3 in training mode (the blocks' dropout set to 0) two calls gave the same logits: apply dropout to the sum of the embeddings"
    return None


@suite.case(
    "model",
    "config.dropout: every dropout uses it, and the embeddings' sum is dropped in training mode",
    points=1,
    check=satisfies(_dropout_problem),
)
def _(ns):
    model = ns.GPT(ns.GPTConfig(**dict(TINY, dropout=0.3)))
    _fill(model, 25)
    kinds = sorted({getattr(m, "p", None) for m in model.modules()} - {None})
    for module in model.blocks.modules():
        if getattr(module, "p", None) is not None:  # an nn.Dropout
            module.p = 0.0
    model.train()
    with torch.no_grad():
        return kinds, model(MODEL_IDX)[0], model(MODEL_IDX)[0]


@suite.case(
    "model",
    "n_head=5 for n_embd=12, n_layer=0, vocab_size=0 and a 1-D idx are refused with ValueError",
    points=1,
    check=each_raised(
        [
            "GPT(GPTConfig(..., n_head=5, n_embd=12))",
            "GPT(GPTConfig(..., n_layer=0))",
            "GPT(GPTConfig(vocab_size=0, ...))",
            "model(idx) with a 1-D idx",
        ]
    ),
)
def _(ns):
    # the error may come from GPTConfig itself (a config that validates itself) or from GPT
    raised = [
        catch(lambda: ns.GPT(ns.GPTConfig(**dict(TINY, n_head=5))))["raised"],
        catch(lambda: ns.GPT(ns.GPTConfig(**dict(TINY, n_layer=0))))["raised"],
        catch(lambda: ns.GPT(ns.GPTConfig(**dict(TINY, vocab_size=0))))["raised"],
    ]
    return raised + [catch(ns.GPT(ns.GPTConfig(**TINY)), torch.zeros(5, dtype=torch.long))["raised"]]


# ======================================================================== params

SHAKESPEARE_GPT = dict(vocab_size=65, block_size=256, n_layer=6, n_head=6, n_embd=384)


_EMBEDDING_SIZES = {65 * 384, 50 * 24, 5 * 2, 11 * 10, 7 * 8}


def _twice_hint(got, expected):
    return isinstance(got, list) and any(g - e in _EMBEDDING_SIZES for g, e in zip(got, expected))


_COUNT_HINTS = [
    Hint(_twice_hint, "a tied head shares the embedding's matrix: count it once", mistake="tied matrix counted twice"),
]


@suite.case(
    "params",
    "Shakespeare-sized models, tied (10.8 million)",
    points=1,
    check=_counts(["6-layer, 384-wide", "2-layer, 384-wide"], "num_parameters gives", _COUNT_HINTS),
    expected=REFERENCE,
)
def _(ns):
    return [
        ns.num_parameters(stand_in_config(**SHAKESPEARE_GPT)),
        ns.num_parameters(stand_in_config(**dict(SHAKESPEARE_GPT, n_layer=2, block_size=64))),
    ]


@suite.case(
    "params",
    "untied heads are counted",
    points=1,
    check=_counts(["untied 6-layer, 384-wide", "untied 3-layer, 10-wide"], "num_parameters gives"),
    expected=REFERENCE,
)
def _(ns):
    return [
        ns.num_parameters(stand_in_config(**SHAKESPEARE_GPT, tie_weights=False)),
        ns.num_parameters(
            stand_in_config(vocab_size=11, block_size=5, n_layer=3, n_head=2, n_embd=10, tie_weights=False)
        ),
    ]


@suite.case(
    "params",
    "a given ff_dim replaces 4 * n_embd",
    points=1,
    check=_counts(["ff_dim=100", "ff_dim=24, untied"], "num_parameters gives", _COUNT_HINTS),
    expected=REFERENCE,
)
def _(ns):
    return [
        ns.num_parameters(stand_in_config(vocab_size=50, block_size=32, n_layer=3, n_head=3, n_embd=24, ff_dim=100)),
        ns.num_parameters(
            stand_in_config(vocab_size=50, block_size=32, n_layer=2, n_head=3, n_embd=24, ff_dim=24, tie_weights=False)
        ),
    ]


@suite.case(
    "params",
    "small sizes, post-norm and dropout (which add no parameters)",
    points=1,
    check=_counts(
        ["1-layer, 2-wide", "post-norm with dropout", "block_size=100"], "num_parameters gives", _COUNT_HINTS
    ),
    expected=REFERENCE,
)
def _(ns):
    configs = [
        stand_in_config(vocab_size=5, block_size=3, n_layer=1, n_head=1, n_embd=2),
        stand_in_config(vocab_size=11, block_size=10, n_layer=4, n_head=2, n_embd=10, norm_first=False, dropout=0.3),
        stand_in_config(vocab_size=7, block_size=100, n_layer=2, n_head=4, n_embd=8),
    ]
    return [ns.num_parameters(c) for c in configs]


# ======================================================================== device


@contextlib.contextmanager
def _hardware(cuda, mps):
    kept = (torch.cuda.is_available, torch.backends.mps.is_available)
    torch.cuda.is_available = lambda: cuda
    torch.backends.mps.is_available = lambda: mps
    try:
        yield
    finally:
        torch.cuda.is_available, torch.backends.mps.is_available = kept


def _chosen(ns, cuda, mps):
    with _hardware(cuda, mps):
        picked = ns.get_device()
    return [type(picked).__name__, getattr(picked, "type", str(picked))]


_STRING_HINT = Hint(
    lambda got, exp: isinstance(got, list) and got[0] == "str",
    "return torch.device(...), not a string",
    mistake="a string, not a torch.device",
)
_CALL_HINT = Hint(
    lambda got, exp: isinstance(got, list) and got[1] == "cuda",
    "call the function: torch.cuda.is_available() (without the parentheses it is always true)",
    mistake="is_available not called",
)


def _device_check(situation, want, hints):
    def test(got):
        kind, name = got
        if kind != "device":
            return f"get_device() must return a torch.device, got a {kind}"
        if name != want:
            return f"{situation} get_device() must return torch.device({want!r}), got torch.device({name!r})"
        return None

    return satisfies(test, hints)


@suite.case(
    "device",
    "CUDA and MPS both available: cuda comes first",
    points=1,
    check=_device_check("with CUDA and MPS both available", "cuda", [_STRING_HINT]),
)
def _(ns):
    return _chosen(ns, True, True)


@suite.case(
    "device",
    "only MPS available: mps",
    points=1,
    check=_device_check("with only MPS available", "mps", [_STRING_HINT, _CALL_HINT]),
)
def _(ns):
    return _chosen(ns, False, True)


@suite.case(
    "device",
    "no GPU at all: cpu",
    points=1,
    check=_device_check("with no GPU at all", "cpu", [_STRING_HINT, _CALL_HINT]),
)
def _(ns):
    return _chosen(ns, False, False)


# ======================================================================== train

SMALL = dict(
    vocab_size=12, block_size=8, scale=2.0
)  # weights large enough for gradient norms near 2 (so that clipping to 1 shows)
STEP_X = torch.randint(12, (4, 8), generator=generator(50))
STEP_Y = torch.randint(12, (4, 8), generator=generator(51))
TRAIN_DATA = torch.randint(12, (300,), generator=generator(52))


def _gradient_vector(model):
    return torch.cat(
        [(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in model.parameters()]
    ).detach()


@suite.case(
    "train",
    "train_step returns the batch loss as a Python float",
    points=1,
    check=close_number(rtol=1e-5, atol=1e-6),
    expected=REFERENCE,
    timeout=60,
)  # the first optimiser of a process imports torch._dynamo: seconds
def _(ns):
    model = CausalMean(60, **SMALL)
    return ns.train_step(model, torch.optim.SGD(model.parameters(), lr=0.0), STEP_X, STEP_Y, grad_clip=None)


@suite.case(
    "train",
    "after two calls the gradients are those of one batch (zeroed first)",
    points=1,
    check=close(
        rtol=1e-4,
        atol=1e-6,
        hints=[
            Hint(
                lambda got, exp: torch.allclose(got, 2 * exp, rtol=1e-3, atol=1e-6),
                "the second call added its gradients to the first call's: zero them at the start of each step",
                mistake="gradients not zeroed",
            ),
            Hint(
                lambda got, exp: float(got.abs().max()) == 0.0,
                "the gradients are all zero after the call: zero them at the start, before the forward pass, never after the backward pass",
                mistake="gradients zeroed after the step",
            ),
        ],
    ),
    expected=REFERENCE,
    timeout=60,
)
def _(ns):
    model = CausalMean(61, **SMALL)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    ns.train_step(model, optimizer, STEP_X, STEP_Y, grad_clip=None)
    ns.train_step(model, optimizer, STEP_X, STEP_Y, grad_clip=None)
    return _gradient_vector(model)


@suite.case(
    "train",
    "grad_clip=0.05 scales the total gradient norm down to 0.05",
    points=1,
    check=close_number(rtol=1e-3, atol=0.0),
    expected=0.05,
)
def _(ns):
    model = CausalMean(62, **SMALL)
    ns.train_step(model, torch.optim.SGD(model.parameters(), lr=0.0), STEP_X, STEP_Y, grad_clip=0.05)
    return float(_gradient_vector(model).norm())


@suite.case(
    "train",
    "grad_clip=None leaves the gradients as they are",
    points=1,
    check=close_number(rtol=1e-4, atol=0.0),
    expected=REFERENCE,
)
def _(ns):
    model = CausalMean(62, **SMALL)
    ns.train_step(model, torch.optim.SGD(model.parameters(), lr=0.0), STEP_X, STEP_Y, grad_clip=None)
    return float(_gradient_vector(model).norm())


@suite.case(
    "train",
    "without a grad_clip argument the total gradient norm is clipped to 1.0",
    points=1,
    check=close_number(rtol=1e-3, atol=0.0),
    expected=1.0,
)
def _(ns):
    model = CausalMean(62, **SMALL)
    ns.train_step(model, torch.optim.SGD(model.parameters(), lr=0.0), STEP_X, STEP_Y)
    return float(_gradient_vector(model).norm())


@suite.case(
    "train",
    "one optimiser step with the clipped gradients",
    points=1,
    check=close(rtol=1e-4, atol=1e-6),
    expected=REFERENCE,
    builds_on=("grad_clip=0.05 scales the total gradient norm down to 0.05",),
)
def _(ns):
    model = CausalMean(63, **SMALL)
    ns.train_step(model, torch.optim.SGD(model.parameters(), lr=0.5), STEP_X, STEP_Y, grad_clip=0.05)
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def _kept_mode(got):
    for before, after in zip(("eval", "train"), got):
        if after != before:
            return (
                f"the model was in {before} mode before train_step and must be left in it; it was in {after} mode after"
            )
    return None


@suite.case(
    "train",
    "train_step keeps the caller's train or eval mode",
    points=1,
    check=satisfies(_kept_mode),
    guard=True,  # a train_step that does nothing keeps the mode: it counts only when a test of the step passes
)
def _(ns):
    modes = []
    for mode in (False, True):
        model = CausalMean(64, **SMALL)
        model.train(mode)
        ns.train_step(model, torch.optim.SGD(model.parameters(), lr=0.0), STEP_X, STEP_Y)
        modes.append(mode_of(model))
    return modes


@suite.case(
    "train",
    "train_step: grad_clip=0 and grad_clip=-1 are refused with ValueError",
    points=1,
    check=each_raised(["train_step(..., grad_clip=0)", "train_step(..., grad_clip=-1)"]),
)
def _(ns):
    raised = []
    for clip in (0, -1.0):
        model = CausalMean(68, **SMALL)
        raised.append(
            catch(ns.train_step, model, torch.optim.SGD(model.parameters(), lr=0.0), STEP_X, STEP_Y, grad_clip=clip)[
                "raised"
            ]
        )
    return raised


def _mean_problem(got):
    if got["kind"] != "float":
        return f"estimate_loss must return a Python float, got {got['kind']}"
    losses = got["losses"]
    if len(losses) != 5:
        return f"with eval_iters=5 the model should be run on 5 batches with targets, it was run on {len(losses)}"
    mean = sum(losses) / len(losses)
    if abs(got["value"] - mean) > 1e-6 + 1e-6 * abs(mean):
        return f"estimate_loss returned {got['value']:.6f}, but the mean loss of the batches it ran is {mean:.6f}"
    return None


@suite.case(
    "train", "estimate_loss returns the mean loss of eval_iters batches", points=1, check=satisfies(_mean_problem)
)
def _(ns):
    model = CausalMean(65, **SMALL)
    value = ns.estimate_loss(model, TRAIN_DATA, 8, 3, eval_iters=5, generator=generator(1))
    losses = [entry["loss"] for entry in model.log if entry["loss"] is not None]
    return {"kind": type(value).__name__, "value": float(value), "losses": losses}


@suite.case(
    "train",
    "estimate_loss: eval mode and no gradients inside, the caller's mode after",
    points=1,
    check=satisfies(lambda got: mode_problem(got, "estimate_loss")),
)
def _(ns):
    out = []
    for mode in (True, False):
        model = CausalMean(66, **SMALL, dropout=0.2)
        model.train(mode)
        before = mode_of(model)
        ns.estimate_loss(model, TRAIN_DATA, 8, 2, eval_iters=2)
        out.append((before, [[e["mode"], e["grad"]] for e in model.log], mode_of(model)))
    return out


def _windows_problem(got):
    if len(got) != 3:
        return f"with eval_iters=3 estimate_loss must run the model on 3 batches, it ran it {len(got)} times"
    for x, y in got:
        if list(x.shape) != [5, 6] or y is None or list(y.shape) != [5, 6]:
            return f"each batch must be (batch_size, block_size) = (5, 6) with targets of the same shape, got {list(x.shape)}"
        if not bool(((x[:, 1:] - x[:, :-1]) == 1).all()) or int(x.max()) > 39:
            return "each row of the input must be a window of consecutive tokens of the data"
        if not torch.equal(y, x + 1):
            return "the targets must be the input windows shifted by one token (the next token at every position)"
    return None


@suite.case(
    "train",
    "estimate_loss batches: windows of block_size tokens with next-token targets",
    points=1,
    check=satisfies(_windows_problem),
)
def _(ns):
    model = CausalMean(67, vocab_size=48, block_size=6)
    ns.estimate_loss(model, torch.arange(40), 6, 5, eval_iters=3, generator=generator(2))
    return [(e["idx"], e["targets"]) for e in model.log]


@suite.case(
    "train",
    "estimate_loss: eval_iters=0, batch_size=0 and data too short for one window are refused with ValueError",
    points=1,
    check=each_raised(
        [
            "estimate_loss(..., eval_iters=0)",
            "estimate_loss(..., batch_size=0, ...)",
            "estimate_loss on 8 tokens with block_size=8",
        ]
    ),
)
def _(ns):
    model = CausalMean(69, **SMALL)
    return [
        catch(ns.estimate_loss, model, TRAIN_DATA, 8, 3, eval_iters=0)["raised"],
        catch(ns.estimate_loss, model, TRAIN_DATA, 8, 0, eval_iters=2)["raised"],
        catch(ns.estimate_loss, model, TRAIN_DATA[:8], 8, 3, eval_iters=2)["raised"],
    ]


def _train_run(ns, seed, steps, warmup, eval_interval, lr=3e-3, device="cpu", progress=False, **extra):
    model = CausalMean(seed, **SMALL)
    with _optimizer_watch() as seen:
        history = ns.train(
            model,
            TRAIN_DATA[:250],
            TRAIN_DATA[250:],
            steps=steps,
            batch_size=4,
            lr=lr,
            device=device,
            eval_interval=eval_interval,
            eval_iters=1,
            warmup=warmup,
            generator=generator(seed),
            progress=progress,
            **extra,
        )
    return history, seen


def _evaluations_problem(got):
    if not isinstance(got, dict):
        return f"train must return a dict, got {type(got).__name__}"
    missing = [k for k, v in got.items() if v is None]
    if missing:
        return f"the history has no {missing[0]!r}"
    if [int(s) for s in got["step"]] != [0, 5, 10, 13]:
        return f"with steps=13 and eval_interval=5 the evaluations come before training and at steps 5, 10 and 13 (the end): [0, 5, 10, 13], got {got['step']}"
    if len(got["train_loss"]) != 4 or len(got["val_loss"]) != 4:
        return f"train_loss and val_loss need one entry per evaluation (4), got {len(got['train_loss'])} and {len(got['val_loss'])}"
    if not all(math.isfinite(v) for v in got["train_loss"] + got["val_loss"]):
        return "the recorded losses must be finite numbers"
    if len(got["lr"]) != 13:
        return f"lr needs one entry per step (13), got {len(got['lr'])}"
    if got["bar"] != "shown":
        return "with progress=True train must show a progress bar (tqdm writes it to stderr); nothing was written there"
    return None


@suite.case(
    "train",
    "history: evaluations at steps 0, 5, 10, 13 and an lr per step (device given as torch.device, progress bar on)",
    points=1,
    check=satisfies(_evaluations_problem),
    timeout=60,
)
def _(ns):
    with contextlib.redirect_stderr(io.StringIO()) as err:
        history, _ = _train_run(ns, 70, steps=13, warmup=3, eval_interval=5, device=torch.device("cpu"), progress=True)
    return dict(_plain(history), bar="shown" if err.getvalue() else "hidden")


def _schedule_problem(got):
    lrs, peak, steps, warmup = got["lr"], 3e-3, 60, 10
    if lrs is None or len(lrs) != steps:
        return f"lr needs one entry per step ({steps})"
    if any(v < 0 or v > peak * (1 + 1e-9) for v in lrs):
        return f"every learning rate must lie between 0 and lr={peak:g}"
    if abs(max(lrs) - peak) > 0.03 * peak:
        return f"the schedule should reach lr={peak:g}; its largest value is {max(lrs):.4g}"
    top = lrs.index(max(lrs))
    if not warmup - 2 <= top <= warmup + 1:
        return f"with warmup={warmup} the learning rate should peak at step {warmup - 1} or {warmup}, it peaks at step {top}"
    if lrs[0] > 0.25 * peak or not all(a < b for a, b in zip(lrs[:top], lrs[1 : top + 1])):
        return f"the warm-up must rise linearly from near 0: the first steps use {[f'{v:.3g}' for v in lrs[:4]]}"
    if not all(a >= b - 1e-15 for a, b in zip(lrs[top:], lrs[top + 1 :])):
        return "after the warm-up the learning rate must never rise again"
    if lrs[-1] > 0.05 * peak:
        return f"the cosine decay ends near 0, but the last step uses {lrs[-1]:.3g}"
    span = steps - warmup
    for fraction, low, high in ((0.25, 0.80, 0.92), (0.75, 0.07, 0.19)):
        s = warmup + round(fraction * span)
        if not low * peak <= lrs[s] <= high * peak:
            return (
                f"{int(fraction * 100)}% into the decay (step {s}) a cosine schedule is at about "
                f"{0.5 * (1 + math.cos(math.pi * fraction)):.2f} * lr, got {lrs[s] / peak:.2f} * lr (a straight line would give {1 - fraction:.2f})"
            )
    return None


@suite.case(
    "train",
    "lr: linear warm-up over 10 steps, then cosine decay towards 0 (60 steps)",
    points=2,
    check=satisfies(_schedule_problem),
    timeout=60,
    builds_on=(
        "history: evaluations at steps 0, 5, 10, 13 and an lr per step (device given as torch.device, progress bar on)",
    ),
)
def _(ns):
    history, _ = _train_run(ns, 71, steps=60, warmup=10, eval_interval=60)
    return _plain(history)


@suite.case(
    "train",
    "lr: every step's rate as the docstring states it, lr * (s + 1) / warmup, then the cosine (30 steps, warmup 6)",
    points=1,
    check=close(rtol=1e-6, atol=1e-12, dtype=None),
    expected=REFERENCE,
    timeout=60,
    builds_on=(
        "history: evaluations at steps 0, 5, 10, 13 and an lr per step (device given as torch.device, progress bar on)",
    ),
)
def _(ns):
    history, _ = _train_run(ns, 77, steps=30, warmup=6, eval_interval=30, lr=2e-3)
    return torch.tensor([float(v) for v in history["lr"]], dtype=torch.float64)


def _optimizer_problem(got):
    recorded, seen = got
    if not seen:
        return "no optimiser step was seen: train must call optimizer.step() on a torch.optim optimiser"
    if not all(s["class"] == "AdamW" for s in seen):
        return "the optimiser must be torch.optim.AdamW"
    if len(seen) != 20:
        return f"20 steps were asked for, the optimiser stepped {len(seen)} times"
    for step, (want, s) in enumerate(zip(recorded, seen)):
        for lr, _, _, betas in s["groups"]:
            if abs(lr - want) > 1e-9 * max(abs(want), 1e-12):
                return f"at step {step} the history says lr={want:.6g} but the optimiser used {lr:.6g}: set group['lr'] in every parameter group before the step"
            if betas != [0.9, 0.95]:
                return f"AdamW's betas must be (0.9, 0.95), got {tuple(betas)}"
    for _, decay, dims, _ in seen[0]["groups"]:
        if dims and max(dims) >= 2 and abs(decay - 0.1) > 1e-12:
            return f"without a weight_decay argument the matrices must be decayed with the default 0.1, got {decay}"
    return None


@suite.case(
    "train",
    "every step is an AdamW step (betas 0.9, 0.95, default weight decay 0.1) with the learning rate the history records",
    points=1,
    check=satisfies(_optimizer_problem),
    timeout=60,
)
def _(ns):
    history, seen = _train_run(ns, 72, steps=20, warmup=5, eval_interval=20)
    return [float(v) for v in history["lr"]], seen


def _decay_problem(got):
    if not got:
        return "no optimiser step was seen"
    for _lr, decay, dims, _ in got[0]["groups"]:
        if not dims:
            continue
        if decay > 0 and min(dims) < 2:
            return "weight decay must not apply to biases or LayerNorm parameters (1-D): put them in a group with weight_decay=0.0"
        if decay == 0 and max(dims) >= 2:
            return "matrices and embeddings (2-D parameters) must be decayed with the weight_decay argument"
        if decay > 0 and abs(decay - 0.05) > 1e-12:
            return f"weight_decay=0.05 was asked for, the optimiser uses {decay}"
    if not any(decay > 0 for _, decay, _, _ in got[0]["groups"]):
        return "no parameter group has weight decay"
    return None


@suite.case(
    "train",
    "weight decay on matrices and embeddings only, with the value asked for",
    points=1,
    check=satisfies(_decay_problem),
    timeout=60,
    guard=True,  # it watches what the code did (calls, steps, hooks): a no-op that copies the work passes it
)
def _(ns):
    _, seen = _train_run(ns, 73, steps=2, warmup=1, eval_interval=2, weight_decay=0.05)
    return seen


def _clipping_problem(got):
    for label, limit, seen in (("grad_clip=0.01", 0.01, got[0]), ("the default grad_clip=1.0", 1.0, got[1])):
        if not seen:
            return "no optimiser step was seen"
        worst = max(s["grad_norm"] for s in seen)
        if worst > limit * (1 + 1e-3):
            return f"with {label} the gradients reached the optimiser with a total norm of {worst:.4g}: pass grad_clip on to train_step"
    return None


@suite.case(
    "train",
    "train passes grad_clip on (0.01, and 1.0 by default) to every step",
    points=1,
    check=satisfies(_clipping_problem),
    timeout=60,
    guard=True,  # it watches what the code did (calls, steps, hooks): a no-op that copies the work passes it
)
def _(ns):
    _, small = _train_run(ns, 75, steps=4, warmup=1, eval_interval=4, lr=1.0, grad_clip=0.01)
    _, default = _train_run(ns, 75, steps=4, warmup=1, eval_interval=4, lr=1.0)
    return [small, default]


def _same_problem(got):
    a, b = got
    if a != b:
        return "two runs from the same weights with generators seeded alike differ: draw every batch with the generator"
    return None


@suite.case(
    "train",
    "the same generator seed gives the same run",
    points=1,
    check=satisfies(_same_problem),
    timeout=60,
    builds_on=(
        "history: evaluations at steps 0, 5, 10, 13 and an lr per step (device given as torch.device, progress bar on)",
    ),
    guard=True,  # it watches what the code did (calls, steps, hooks): a no-op that copies the work passes it
)
def _(ns):
    runs = []
    for _ in range(2):
        history, _ = _train_run(ns, 74, steps=6, warmup=2, eval_interval=3)
        runs.append(_plain(history))
        torch.rand(5)  # move the global generator between the runs
    return runs


def _batches_problem(got):
    batches = [(x, y) for mode, grad, x, y in got if mode == "train" and grad == "grad"]
    if len(batches) != 16:
        return f"16 training steps should run the model 16 times in training mode with gradients, it ran {len(batches)} times"
    starts = []
    for x, y in batches:
        if y is None or list(x.shape) != [3, 6] or list(y.shape) != [3, 6]:
            return f"each training batch must be (batch_size, block_size) = (3, 6) with targets of that shape, got {list(x.shape)}"
        if int(x.min()) < 50:
            return "the training batches must come from train_data, not from val_data"
        if not bool(((x[:, 1:] - x[:, :-1]) == 1).all()):
            return "each row of a training batch must be a window of consecutive tokens of train_data"
        if not torch.equal(y, x + 1):
            return "the targets of a training batch must be its inputs shifted by one token (the next token at every position)"
        starts += x[:, 0].tolist()
    if all(torch.equal(batches[0][0], x) for x, _ in batches[1:]):
        return "every step trained on the same batch: draw a new batch of random windows at each step"
    if max(starts) - min(starts) < 30:
        return "the windows start only within a small part of train_data: every start from 0 to len(train_data) - block_size - 1 must be possible"
    return None


@suite.case(
    "train",
    "each step trains on a new batch of random windows of train_data, with next-token targets",
    points=1,
    check=satisfies(_batches_problem),
    timeout=60,
)
def _(ns):
    model = CausalMean(76, vocab_size=130, block_size=6)
    train_data, val_data = torch.arange(50, 130), torch.arange(0, 30)
    ns.train(
        model,
        train_data,
        val_data,
        steps=16,
        batch_size=3,
        lr=0.01,
        device="cpu",
        eval_interval=16,
        eval_iters=1,
        warmup=2,
        generator=generator(3),
        progress=False,
    )
    return [[e["mode"], e["grad"], e["idx"], e["targets"]] for e in model.log]


@suite.case(
    "train",
    "train: steps=0, lr=0 and warmup > steps are refused with ValueError",
    points=1,
    check=each_raised(["train(..., steps=0)", "train(..., lr=0.0)", "train(..., steps=4, warmup=5)"]),
)
def _(ns):
    raised = []
    for settings in (
        dict(steps=0, lr=1e-3, warmup=0),
        dict(steps=4, lr=0.0, warmup=1),
        dict(steps=4, lr=1e-3, warmup=5),
    ):
        model = CausalMean(77, **SMALL)
        raised.append(
            catch(
                ns.train,
                model,
                TRAIN_DATA[:250],
                TRAIN_DATA[250:],
                batch_size=4,
                device="cpu",
                eval_interval=2,
                eval_iters=1,
                progress=False,
                **settings,
            )["raised"]
        )
    return raised


class _Table(nn.Module):
    """A bigram stand-in for keep_best: logits ``table[idx] + bias``, uniform at first (zeros)."""

    def __init__(self, vocab_size, block_size):
        super().__init__()
        self.config = stand_in_config(vocab_size, block_size, n_layer=1, n_head=1, n_embd=vocab_size, tie_weights=False)
        self.table = nn.Embedding(vocab_size, vocab_size)
        self.bias = nn.Parameter(torch.zeros(vocab_size))
        with torch.no_grad():
            self.table.weight.zero_()
        self.seen = []  # every call: the mode and a copy of the weights

    def forward(self, idx, targets=None):
        self.seen.append([mode_of(self), torch.cat([self.table.weight.detach().reshape(-1), self.bias.detach()])])
        logits = self.table(idx) + self.bias  # (B, T, V)
        loss = None if targets is None else F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return logits, loss


def _table_run(ns, vocab_size, val_data, steps, eval_interval, lr, warmup, seed, **extra):
    """Train a _Table to predict token + 1 (train_data counts up, modulo vocab_size); returns the
    history's steps, validation losses and best fields, the weights at every call and at the end."""
    model = _Table(vocab_size, block_size=4)
    history = ns.train(
        model,
        torch.arange(70) % vocab_size,
        val_data,
        steps=steps,
        batch_size=4,
        lr=lr,
        device="cpu",
        eval_interval=eval_interval,
        eval_iters=1,
        warmup=warmup,
        generator=generator(seed),
        progress=False,
        **extra,
    )
    plain = {k: None if history.get(k) is None else [float(v) for v in history[k]] for k in ("step", "val_loss")}
    for key in ("best_step", "best_val_loss"):
        plain[key] = None if history.get(key) is None else float(history[key])
    final = torch.cat([model.table.weight.detach().reshape(-1), model.bias.detach()])
    return {"history": plain, "seen": model.seen, "final": final}


def _kept_problem(got, want_best=None):
    h = got["history"]
    if h["best_step"] is None or h["best_val_loss"] is None:
        return "with keep_best=True the history must hold best_step and best_val_loss"
    steps, losses = h["step"], h["val_loss"]
    best = losses.index(min(losses))
    if h["best_step"] != steps[best] or abs(h["best_val_loss"] - losses[best]) > 1e-9:
        return (
            f"the lowest validation loss, {losses[best]:.4f}, came at step {steps[best]:.0f}; the history says "
            f"best_step={h['best_step']:.0f}, best_val_loss={h['best_val_loss']:.4f}"
        )
    evaluations = _evaluation_weights(got["seen"])
    if len(evaluations) != len(steps):
        return (
            f"{len(steps)} evaluations are recorded, but the model was evaluated (eval mode) {len(evaluations)} times"
        )
    if not torch.equal(got["final"], evaluations[best]):
        return f"after train the model's weights must be those it had at step {steps[best]:.0f}, its best evaluation"
    return None


@suite.case(
    "train",
    "keep_best=True: the weights and the step of the lowest validation loss (7 tokens, evaluations every 3 steps)",
    points=1,
    check=satisfies(_kept_problem),
    timeout=60,
)
def _(ns):
    # measured with the reference: the validation loss is lowest at step 18 of 30
    val_data = torch.tensor([0, 1, 3, 4, 6, 0, 2, 3, 5, 6, 1, 2, 4, 5] * 3)  # steps of +1 and +2, alternating
    return _table_run(ns, 7, val_data, steps=30, eval_interval=3, lr=0.08, warmup=3, seed=5, keep_best=True)


@suite.case(
    "train",
    "keep_best=True when no evaluation beats the first: the starting weights come back, best_step 0",
    points=1,
    check=satisfies(_kept_problem),
    timeout=60,
)
def _(ns):
    # the validation text only steps by +2: learning +1 makes it worse from the first step
    return _table_run(
        ns, 6, torch.tensor([0, 2, 4] * 12), steps=12, eval_interval=4, lr=0.1, warmup=2, seed=6, keep_best=True
    )


def _last_problem(got):
    evaluations = _evaluation_weights(got["seen"])
    if not evaluations or not torch.equal(got["final"], evaluations[-1]):
        return "without keep_best the model must end with the weights of its last step"
    return None


@suite.case(
    "train",
    "without keep_best the model ends with the last step's weights",
    points=1,
    check=satisfies(_last_problem),
    timeout=60,
)
def _(ns):
    # the validation text only steps by +2: the first evaluation is the best, the last step's weights differ from it
    return _table_run(ns, 6, torch.tensor([0, 2, 4] * 12), steps=12, eval_interval=4, lr=0.1, warmup=2, seed=7)


# ======================================================================== training_works

BOUND = 1.5


def _other_sentences(seed, size=3000):
    """Another tiny grammar than the public test's: names, verbs, objects and a time."""
    pick = random.Random(seed).choice
    names = ["ann", "bob", "eve", "tim"]
    verbs = ["sees", "likes", "has"]
    things = ["tea", "jam", "figs", "a hat"]
    times = ["today", "at noon"]
    text = ""
    while len(text) < size:
        text += pick(names) + " " + pick(verbs) + " " + pick(things) + " " + pick(times) + ". "
    return text


def _below_bound(got):
    if not isinstance(got, float) or not math.isfinite(got):
        return f"the validation loss after training is {got}"
    if got >= BOUND:
        return (
            f"after 300 steps your GPT's validation loss is {got:.3f}, not below {BOUND}: it does not learn well enough "
            "(look at how the weights start: all equal or all zero, a model cannot tell its units apart; and at the "
            "targets, the batches, and where the gradients are zeroed)"
        )
    return None


@suite.case(
    "training_works",
    "300 steps on another corpus of generated sentences: validation loss below 1.5",
    points=3,
    check=satisfies(_below_bound),
    timeout=60,
)
def _(ns):
    return _train_and_measure(ns, _other_sentences(1), seed=1)
