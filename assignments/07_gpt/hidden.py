"""Hidden tests of stage 07_gpt (run only when grading; never shipped to students).

Expected values marked REFERENCE are the reference solution's outputs on the same
probe, saved at build time.

Keeping the questions apart
    model and params call only GPT and num_parameters. train, generate and kv_cache run
    on `_TestGPT`, a model the probe builds from the notebook's given TransformerBlock
    and LayerNorm with the contract's attributes (config, tok_emb, pos_emb, blocks,
    ln_f, head) and fixed weights, never on the student's GPT. While generate and
    generate_cached run, the notebook's `sample_next` is replaced by `_GraderSampler`
    (the grader's own, which also records the logits it is handed), so a mistake in
    sample_next costs only sampling points; while generate_cached runs, `generate` is
    replaced by the grader's too (a cached generation may fall back on it past
    block_size), so a generate mistake costs only generate points. The one dependency left is by design:
    training_works trains the student's GPT with the student's train (and so its
    train_step and estimate_loss) and measures the validation loss itself.

Weights
    `_weights_from_names` fills each parameter from its dotted name and a seed (as
    harness.set_parameters), filling a tied head/embedding matrix once under the name
    tok_emb.weight, so neither the order in which modules were created nor the
    model's own initialisation matters.

Tolerances (relative + absolute, per test)
    - logits of a whole model, float32: rtol 1e-4, atol 1e-4 (values of order 1-10;
      a different but equivalent order of operations moves them by about 1e-6);
    - losses: rtol 1e-5, atol 1e-5 (Python floats from float32 tensors);
    - gradients after train_step: rtol 1e-4, atol 1e-6; parameters after one SGD
      step: rtol 1e-4, atol 1e-6; a clipped gradient norm: rtol 1e-3 (what
      clip_grad_norm_ leaves after its 1e-6 guard);
    - logits handed to sample_next by generate / generate_cached: rtol 1e-4, atol 1e-4;
    - greedy tokens: exact. The fixed models were chosen so that at every step the
      best logit leads the second by at least 0.1 (far beyond float32 rounding). The
      kv_cache token fixtures are therefore exactly the tokens of plain greedy
      generation (the reference's cached and plain generations agree token for token;
      tests/test_solutions_gpt.py checks it on these very models);
    - parameter counts, evaluation steps, shapes, supports: exact;
    - learning rates: 1e-9 relative where one is compared with another (history
      against what the optimiser used); the schedule's shape is judged by properties
      with margins that admit an off-by-one in the step count;
    - sampling frequencies: 4000 draws, each frequency within 0.035 of its
      probability (about 4.4 standard deviations at worst), never exact draws;
    - training_works: the validation loss after training below 1.5 nats (the
      reference reaches about 0.3; a model that learns nothing stays near ln V = 2.8,
      one that only learns character frequencies near 2.5).
"""

import contextlib
import math
import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.optimizer import register_optimizer_step_pre_hook

from autograder.kit import REFERENCE, Hint, Suite, Verdict, catch, close, close_number, equal, generator, randn, satisfies

suite = Suite(public=False)


# ======================================================================== helpers


def _weights_from_names(model, seed, scale=1.0):
    """Every parameter from its dotted name and ``seed``; a tied matrix once, as tok_emb.weight."""
    embedding = getattr(getattr(model, "tok_emb", None), "weight", None)
    with torch.no_grad():
        for dotted, tensor in list(model.named_parameters(remove_duplicate=False)):
            if dotted == "head.weight" and tensor is embedding:
                continue
            salt = sum(ord(letter) * (k + 1) for k, letter in enumerate(dotted))
            tensor.copy_(scale * torch.randn(tensor.shape, generator=generator(seed * 100003 + salt)))


class _TestGPT(nn.Module):
    """The grader's GPT, from the notebook's given blocks, with the contract's attributes.

    Every forward call is logged (mode, grad state, inputs, loss) for the tests of
    estimate_loss, train and generate.
    """

    def __init__(self, ns, seed, scale=1.0, **sizes):
        super().__init__()
        cfg = ns.GPTConfig(**sizes)
        width = cfg.n_embd
        hidden = cfg.ff_dim if cfg.ff_dim is not None else 4 * width
        self.config = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, width)
        self.pos_emb = nn.Embedding(cfg.block_size, width)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(
            ns.TransformerBlock(width, cfg.n_head, hidden, dropout=cfg.dropout, norm_first=cfg.norm_first) for _ in range(cfg.n_layer)
        )
        self.ln_f = ns.LayerNorm(width)
        self.head = nn.Linear(width, cfg.vocab_size, bias=False)
        if cfg.tie_weights:
            self.head.weight = self.tok_emb.weight
        _weights_from_names(self, seed, scale)
        self.log = []

    def forward(self, idx, targets=None):
        n_batch, length = idx.shape
        if length > self.config.block_size:
            raise ValueError(f"the test model reads at most {self.config.block_size} tokens, got {length}")
        where = torch.arange(length, device=idx.device)
        h = self.drop(self.tok_emb(idx) + self.pos_emb(where))
        future = torch.triu(torch.ones(length, length, dtype=torch.bool, device=idx.device), diagonal=1)
        for block in self.blocks:
            h = block(h, mask=future)
        logits = self.head(self.ln_f(h))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(n_batch * length, -1), targets.reshape(-1), ignore_index=-100)
        self.log.append({
            "training": self.training,
            "grad": torch.is_grad_enabled(),
            "idx": idx.detach().cpu().clone(),
            "targets": None if targets is None else targets.detach().cpu().clone(),
            "loss": None if loss is None else float(loss.detach()),
        })
        return logits, loss


class _GraderSampler:
    """Stands in for the notebook's sample_next during generation tests; logs its logits."""

    def __init__(self):
        self.logits = []

    def __call__(self, logits, temperature=1.0, top_k=None, top_p=None, generator=None):
        self.logits.append(logits.detach().float().cpu().clone())
        if temperature == 0:
            return logits.argmax(dim=-1, keepdim=True)
        scores = logits.float() / temperature
        if top_k is not None and top_k < scores.size(-1):
            floor = scores.topk(top_k, dim=-1).values[..., -1:]
            scores = scores.masked_fill(scores < floor, -math.inf)
        if top_p is not None and top_p < 1.0:
            ranked, order = scores.sort(dim=-1, descending=True)
            p = ranked.softmax(dim=-1)
            earlier = p.cumsum(dim=-1) - p
            ranked = ranked.masked_fill((earlier >= top_p) & (torch.arange(p.size(-1)) > 0), -math.inf)
            scores = torch.empty_like(scores).scatter(-1, order, ranked)
        return torch.multinomial(scores.softmax(dim=-1).cpu(), 1, generator=generator).to(logits.device)


@contextlib.contextmanager
def _replacing(ns, name, stand_in):
    """The notebook's global ``name`` is ``stand_in`` while the block runs."""
    table = ns._names
    absent = object()
    before = table.get(name, absent)
    table[name] = stand_in
    try:
        yield stand_in
    finally:
        if before is absent:
            table.pop(name, None)
        else:
            table[name] = before


def _stacked(sampler):
    return torch.stack(sampler.logits) if sampler.logits else None


def _logits_problem(got, expected):
    """Check for the logits logged by _GraderSampler (REFERENCE: the reference's log)."""
    if got is None:
        return "sample_next was never called: draw every new token with sample_next(logits, temperature, top_k, top_p, generator)"
    return None


def _logged_logits(rtol, atol):
    inner = close(rtol=rtol, atol=atol)

    def check(got, expected, reveal=True):
        problem = _logits_problem(got, expected)
        if problem:
            return Verdict(False, problem)
        verdict = inner(got, expected, reveal)
        if not verdict.passed:
            verdict.message = "the logits handed to sample_next (steps x batch x vocab) are not the model's last-position logits: " + verdict.message
        return verdict

    return check


# ======================================================================== model

TINY = dict(vocab_size=13, block_size=9, n_layer=2, n_head=3, n_embd=12)


def _untied_hint(got, expected):
    return isinstance(got, dict) and got.get("tied") is False


@suite.case(
    "model",
    "the parts of a 3-layer model: config kept, ModuleList of blocks, head without bias",
    points=1,
    check=equal([Hint(lambda got, exp: isinstance(got, dict) and got.get("head_bias") is True, "the head is a linear map without bias")]),
    expected={"config": True, "blocks": ["ModuleList", 3], "block_type": "TransformerBlock", "ln_f": "LayerNorm", "head": [12, 13], "head_bias": False,
              "tok_emb": [13, 12], "pos_emb": [9, 12]},
)
def _(ns):
    config = ns.GPTConfig(**dict(TINY, n_layer=3))
    model = ns.GPT(config)
    blocks = getattr(model, "blocks", None)
    head = model.head
    return {
        "config": getattr(model, "config", None) == config,
        "blocks": [type(blocks).__name__, len(blocks) if blocks is not None else 0],
        "block_type": type(blocks[0]).__name__ if blocks else None,
        "ln_f": type(getattr(model, "ln_f", None)).__name__,
        "head": [getattr(head, "in_features", None), getattr(head, "out_features", None)],
        "head_bias": getattr(head, "bias", None) is not None,
        "tok_emb": list(model.tok_emb.weight.shape),
        "pos_emb": list(model.pos_emb.weight.shape),
    }


@suite.case(
    "model",
    "tie_weights=True shares one Parameter, tie_weights=False keeps two",
    points=1,
    check=equal([
        Hint(lambda got, exp: isinstance(got, list) and got[:1] == [False], "tie by assigning the embedding's Parameter to the head (one object), not by copying values"),
        Hint(lambda got, exp: isinstance(got, list) and got[1:] == [True], "with tie_weights=False the head has a matrix of its own"),
    ]),
    expected=[True, False],
)
def _(ns):
    tied = ns.GPT(ns.GPTConfig(**TINY))
    untied = ns.GPT(ns.GPTConfig(**dict(TINY, tie_weights=False)))
    return [tied.head.weight is tied.tok_emb.weight, untied.head.weight is untied.tok_emb.weight]


def _unique_count(model):
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


@suite.case("model", "the model's own parameter count for tied, untied and ff_dim configurations", points=1, check=equal(), expected=REFERENCE)
def _(ns):
    configs = [TINY, dict(TINY, tie_weights=False), dict(TINY, ff_dim=20, norm_first=False)]
    return [_unique_count(ns.GPT(ns.GPTConfig(**c))) for c in configs]


MODEL_IDX = torch.randint(13, (3, 7), generator=generator(11))


@suite.case(
    "model",
    "logits with fixed weights: pre-norm, tied (B=3, T=7, V=13, C=12)",
    points=2,
    check=close(rtol=1e-4, atol=1e-4),
    expected=REFERENCE,
)
def _(ns):
    model = ns.GPT(ns.GPTConfig(**TINY))
    _weights_from_names(model, 21, scale=0.5)
    model.eval()
    with torch.no_grad():
        return model(MODEL_IDX)[0]


@suite.case(
    "model",
    "logits with fixed weights: post-norm, untied, ff_dim=20",
    points=2,
    check=close(rtol=1e-4, atol=1e-4),
    expected=REFERENCE,
)
def _(ns):
    model = ns.GPT(ns.GPTConfig(**dict(TINY, norm_first=False, tie_weights=False, ff_dim=20)))
    _weights_from_names(model, 22, scale=0.5)
    model.eval()
    with torch.no_grad():
        return model(MODEL_IDX)[0]


@suite.case(
    "model",
    "losses with targets: all kept, some -100, all but one -100",
    points=1,
    check=close(rtol=1e-5, atol=1e-5, dtype=None),
    expected=REFERENCE,
)
def _(ns):
    model = ns.GPT(ns.GPTConfig(**TINY))
    _weights_from_names(model, 23, scale=0.5)
    model.eval()
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
    "T == block_size runs; T = block_size + 1 raises ValueError",
    points=1,
    check=equal(),
    expected=[[2, 9, 13], "ValueError"],
)
def _(ns):
    model = ns.GPT(ns.GPTConfig(**TINY))
    logits = model(torch.zeros(2, 9, dtype=torch.long))[0]
    return [list(logits.shape), catch(model, torch.zeros(1, 10, dtype=torch.long))["raised"]]


def _causal_problem(got):
    if got > 1e-5:
        return f"changing the tokens from position 4 on changed the logits of positions 0-3 by up to {got:.3g}: each position may only see itself and earlier positions"
    return None


@suite.case("model", "changing later tokens leaves earlier logits unchanged", points=1, check=satisfies(_causal_problem))
def _(ns):
    model = ns.GPT(ns.GPTConfig(**dict(TINY, norm_first=False)))
    _weights_from_names(model, 24, scale=0.5)
    model.eval()
    changed = MODEL_IDX.clone()
    changed[:, 4:] = (changed[:, 4:] + 5) % 13
    with torch.no_grad():
        a, b = model(MODEL_IDX)[0], model(changed)[0]
    return float((a[:, :4] - b[:, :4]).abs().max())


# ======================================================================== params

SHAKESPEARE_GPT = dict(vocab_size=65, block_size=256, n_layer=6, n_head=6, n_embd=384)


_EMBEDDING_SIZES = {65 * 384, 50 * 24, 5 * 2, 11 * 10, 7 * 8}


def _twice_hint(got, expected):
    return isinstance(got, list) and any(g - e in _EMBEDDING_SIZES for g, e in zip(got, expected))


_COUNT_HINTS = [
    Hint(_twice_hint, "a tied head shares the embedding's matrix: count it once"),
]


@suite.case("params", "Shakespeare-sized models, tied (10.8 million)", points=1, check=equal(_COUNT_HINTS), expected=REFERENCE)
def _(ns):
    return [ns.num_parameters(ns.GPTConfig(**SHAKESPEARE_GPT)), ns.num_parameters(ns.GPTConfig(**dict(SHAKESPEARE_GPT, n_layer=2, block_size=64)))]


@suite.case("params", "untied heads are counted", points=1, check=equal(), expected=REFERENCE)
def _(ns):
    return [ns.num_parameters(ns.GPTConfig(**dict(SHAKESPEARE_GPT, tie_weights=False))),
            ns.num_parameters(ns.GPTConfig(vocab_size=11, block_size=5, n_layer=3, n_head=2, n_embd=10, tie_weights=False))]


@suite.case("params", "a given ff_dim replaces 4 * n_embd", points=1, check=equal(_COUNT_HINTS), expected=REFERENCE)
def _(ns):
    return [ns.num_parameters(ns.GPTConfig(vocab_size=50, block_size=32, n_layer=3, n_head=3, n_embd=24, ff_dim=100)),
            ns.num_parameters(ns.GPTConfig(vocab_size=50, block_size=32, n_layer=2, n_head=3, n_embd=24, ff_dim=24, tie_weights=False))]


@suite.case("params", "small sizes, post-norm and dropout (which add no parameters)", points=1, check=equal(_COUNT_HINTS), expected=REFERENCE)
def _(ns):
    configs = [
        dict(vocab_size=5, block_size=3, n_layer=1, n_head=1, n_embd=2),
        dict(vocab_size=11, block_size=10, n_layer=4, n_head=2, n_embd=10, norm_first=False, dropout=0.3),
        dict(vocab_size=7, block_size=100, n_layer=2, n_head=4, n_embd=8),
    ]
    return [ns.num_parameters(ns.GPTConfig(**c)) for c in configs]


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


_DEVICE_HINTS = [Hint(lambda got, exp: isinstance(got, list) and got[0] == "str", "return torch.device(...), not a string")]


@suite.case("device", "CUDA and MPS both available: cuda comes first", points=1, check=equal(_DEVICE_HINTS), expected=["device", "cuda"])
def _(ns):
    return _chosen(ns, True, True)


@suite.case("device", "only MPS available: mps", points=1, check=equal(_DEVICE_HINTS), expected=["device", "mps"])
def _(ns):
    return _chosen(ns, False, True)


@suite.case(
    "device",
    "no GPU at all: cpu",
    points=1,
    check=equal(_DEVICE_HINTS + [Hint(lambda got, exp: isinstance(got, list) and got[1] == "cuda", "call the function: torch.cuda.is_available() (without the parentheses it is always true)")]),
    expected=["device", "cpu"],
)
def _(ns):
    return _chosen(ns, False, False)


# ======================================================================== train

SMALL = dict(vocab_size=12, block_size=8, n_layer=1, n_head=2, n_embd=16)
STEP_X = torch.randint(12, (4, 8), generator=generator(50))
STEP_Y = torch.randint(12, (4, 8), generator=generator(51))
TRAIN_DATA = torch.randint(12, (300,), generator=generator(52))


def _gradient_vector(model):
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in model.parameters()]).detach()


@suite.case(
    "train",
    "train_step returns the batch loss as a Python float",
    points=1,
    check=close_number(rtol=1e-5, atol=1e-6),
    expected=REFERENCE,
)
def _(ns):
    model = _TestGPT(ns, 60, **SMALL)
    return ns.train_step(model, torch.optim.SGD(model.parameters(), lr=0.0), STEP_X, STEP_Y, grad_clip=None)


@suite.case(
    "train",
    "after two calls the gradients are those of one batch (zeroed first)",
    points=1,
    check=close(rtol=1e-4, atol=1e-6, hints=[
        Hint(lambda got, exp: torch.allclose(got, 2 * exp, rtol=1e-3, atol=1e-6), "the second call added its gradients to the first call's: zero them at the start of each step"),
        Hint(lambda got, exp: float(got.abs().max()) == 0.0, "the gradients are all zero after the call: zero them before the backward pass, not after the step"),
    ]),
    expected=REFERENCE,
)
def _(ns):
    model = _TestGPT(ns, 61, **SMALL)
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
    model = _TestGPT(ns, 62, **SMALL)
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
    model = _TestGPT(ns, 62, **SMALL)
    ns.train_step(model, torch.optim.SGD(model.parameters(), lr=0.0), STEP_X, STEP_Y, grad_clip=None)
    return float(_gradient_vector(model).norm())


@suite.case(
    "train",
    "one optimiser step with the clipped gradients",
    points=1,
    check=close(rtol=1e-4, atol=1e-6),
    expected=REFERENCE,
)
def _(ns):
    model = _TestGPT(ns, 63, **SMALL)
    ns.train_step(model, torch.optim.SGD(model.parameters(), lr=0.5), STEP_X, STEP_Y, grad_clip=0.05)
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


@suite.case("train", "train_step keeps the caller's train or eval mode", points=1, check=equal(), expected=[False, True])
def _(ns):
    modes = []
    for mode in (False, True):
        model = _TestGPT(ns, 64, **SMALL)
        model.train(mode)
        ns.train_step(model, torch.optim.SGD(model.parameters(), lr=0.0), STEP_X, STEP_Y)
        modes.append(model.training)
    return modes


def _mean_problem(got):
    if got["kind"] != "float":
        return f"estimate_loss must return a Python float, got {got['kind']}"
    losses = got["losses"]
    if len(losses) != 5:
        return f"with eval_iters=5 the model should be run on 5 batches, it was run {len(losses)} times"
    mean = sum(losses) / len(losses)
    if abs(got["value"] - mean) > 1e-6 + 1e-6 * abs(mean):
        return f"estimate_loss returned {got['value']:.6f}, but the mean loss of the batches it ran is {mean:.6f}"
    return None


@suite.case("train", "estimate_loss returns the mean loss of eval_iters batches", points=1, check=satisfies(_mean_problem))
def _(ns):
    model = _TestGPT(ns, 65, **SMALL)
    value = ns.estimate_loss(model, TRAIN_DATA, 8, 3, eval_iters=5, generator=generator(1))
    losses = [entry["loss"] for entry in model.log if entry["loss"] is not None]
    return {"kind": type(value).__name__, "value": float(value), "losses": losses}


def _modes_problem(got):
    for before, log, after in got:
        if not log:
            return "estimate_loss never called the model"
        if any(entry[0] for entry in log):
            return "the model must be evaluated in eval mode (model.eval())"
        if any(entry[1] for entry in log):
            return "the evaluation must run without gradients (torch.no_grad())"
        if after != before:
            return f"the model was in {'training' if before else 'eval'} mode before the call and must be left in it"
    return None


@suite.case("train", "estimate_loss: eval mode and no gradients inside, the caller's mode after", points=1, check=satisfies(_modes_problem))
def _(ns):
    out = []
    for mode in (True, False):
        model = _TestGPT(ns, 66, **dict(SMALL, dropout=0.2))
        model.train(mode)
        ns.estimate_loss(model, TRAIN_DATA, 8, 2, eval_iters=2)
        out.append((mode, [(e["training"], e["grad"]) for e in model.log], model.training))
    return out


def _windows_problem(got):
    for x, y in got:
        if list(x.shape) != [5, 6] or y is None or list(y.shape) != [5, 6]:
            return f"each batch must be (batch_size, block_size) = (5, 6) with targets of the same shape, got {list(x.shape)}"
        if not bool(((x[:, 1:] - x[:, :-1]) == 1).all()) or int(x.max()) > 39:
            return "each row of the input must be a window of consecutive tokens of the data"
        if not torch.equal(y, x + 1):
            return "the targets must be the input windows shifted by one token (the next token at every position)"
    return None


@suite.case("train", "estimate_loss batches: windows of block_size tokens with next-token targets", points=1, check=satisfies(_windows_problem))
def _(ns):
    model = _TestGPT(ns, 67, **dict(SMALL, vocab_size=48, block_size=6))
    ns.estimate_loss(model, torch.arange(40), 6, 5, eval_iters=3, generator=generator(2))
    return [(e["idx"], e["targets"]) for e in model.log]


@contextlib.contextmanager
def _optimizer_watch():
    """Log, at every optimiser step, its class and its parameter groups' settings."""
    steps = []

    def hook(optimizer, args, kwargs):
        steps.append({
            "adamw": isinstance(optimizer, torch.optim.AdamW),
            "groups": [(float(g["lr"]), float(g.get("weight_decay", 0.0)), sorted({p.dim() for p in g["params"]})) for g in optimizer.param_groups],
        })

    handle = register_optimizer_step_pre_hook(hook)
    try:
        yield steps
    finally:
        handle.remove()


def _train_run(ns, seed, steps, warmup, eval_interval, lr=3e-3, device="cpu", progress=False, weight_decay=0.1):
    model = _TestGPT(ns, seed, **SMALL)
    with _optimizer_watch() as seen:
        history = ns.train(model, TRAIN_DATA[:250], TRAIN_DATA[250:], steps=steps, batch_size=4, lr=lr, device=device,
                           eval_interval=eval_interval, eval_iters=1, warmup=warmup, generator=generator(seed), progress=progress,
                           weight_decay=weight_decay)
    return history, seen


def _plain(history):
    if not isinstance(history, dict):
        return history
    return {k: [float(v) for v in history[k]] if k in history else None for k in ("step", "train_loss", "val_loss", "lr")}


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
    return None


@suite.case("train", "history: evaluations at steps 0, 5, 10, 13 and an lr per step (device given as torch.device, progress bar on)",
            points=1, check=satisfies(_evaluations_problem))
def _(ns):
    history, _ = _train_run(ns, 70, steps=13, warmup=3, eval_interval=5, device=torch.device("cpu"), progress=True)
    return _plain(history)


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
    if lrs[0] > 0.25 * peak or not all(a < b for a, b in zip(lrs[: top], lrs[1 : top + 1])):
        return f"the warm-up must rise linearly from near 0: the first steps use {[f'{v:.3g}' for v in lrs[:4]]}"
    if not all(a >= b - 1e-15 for a, b in zip(lrs[top:], lrs[top + 1 :])):
        return "after the warm-up the learning rate must never rise again"
    if lrs[-1] > 0.05 * peak:
        return f"the cosine decay ends near 0, but the last step uses {lrs[-1]:.3g}"
    span = steps - warmup
    for fraction, low, high in ((0.25, 0.80, 0.92), (0.75, 0.07, 0.19)):
        s = warmup + round(fraction * span)
        if not low * peak <= lrs[s] <= high * peak:
            return (f"{int(fraction * 100)}% into the decay (step {s}) a cosine schedule is at about "
                    f"{0.5 * (1 + math.cos(math.pi * fraction)):.2f} * lr, got {lrs[s] / peak:.2f} * lr (a straight line would give {1 - fraction:.2f})")
    return None


@suite.case("train", "lr: linear warm-up over 10 steps, then cosine decay towards 0 (60 steps)", points=2, check=satisfies(_schedule_problem))
def _(ns):
    history, _ = _train_run(ns, 71, steps=60, warmup=10, eval_interval=60)
    return _plain(history)


def _optimizer_problem(got):
    recorded, seen = got
    if not seen:
        return "no optimiser step was seen: train must call optimizer.step() on a torch.optim optimiser"
    if not all(s["adamw"] for s in seen):
        return "the optimiser must be torch.optim.AdamW"
    if len(seen) != 20:
        return f"20 steps were asked for, the optimiser stepped {len(seen)} times"
    for step, (want, s) in enumerate(zip(recorded, seen)):
        for lr, _, _ in s["groups"]:
            if abs(lr - want) > 1e-9 * max(abs(want), 1e-12):
                return f"at step {step} the history says lr={want:.6g} but the optimiser used {lr:.6g}: set group['lr'] in every parameter group before the step"
    return None


@suite.case("train", "every step is an AdamW step with the learning rate the history records", points=1, check=satisfies(_optimizer_problem))
def _(ns):
    history, seen = _train_run(ns, 72, steps=20, warmup=5, eval_interval=20)
    return [float(v) for v in history["lr"]], seen


def _decay_problem(got):
    if not got:
        return "no optimiser step was seen"
    for lr, decay, dims in got[0]["groups"]:
        if not dims:
            continue
        if decay > 0 and min(dims) < 2:
            return "weight decay must not apply to biases or LayerNorm parameters (1-D): put them in a group with weight_decay=0.0"
        if decay == 0 and dims and max(dims) >= 2:
            return "matrices and embeddings (2-D parameters) must be decayed with the weight_decay argument"
        if decay > 0 and abs(decay - 0.05) > 1e-12:
            return f"weight_decay=0.05 was asked for, the optimiser uses {decay}"
    if not any(decay > 0 for _, decay, _ in got[0]["groups"]):
        return "no parameter group has weight decay"
    return None


@suite.case("train", "weight decay on matrices and embeddings only, with the value asked for", points=1, check=satisfies(_decay_problem))
def _(ns):
    _, seen = _train_run(ns, 73, steps=2, warmup=1, eval_interval=2, weight_decay=0.05)
    return seen


def _same_problem(got):
    a, b = got
    if a != b:
        return "two runs from the same weights with generators seeded alike differ: draw every batch with the generator"
    return None


@suite.case("train", "the same generator seed gives the same run", points=1, check=satisfies(_same_problem))
def _(ns):
    runs = []
    for _ in range(2):
        history, _ = _train_run(ns, 74, steps=6, warmup=2, eval_interval=3)
        runs.append(_plain(history))
        torch.rand(5)  # move the global generator between the runs
    return runs


# ======================================================================== sampling

LOGITS = torch.tensor([[3.0, 0.5, 2.0, -1.0, 1.0, 0.0]])  # sorted: 0, 2, 4, 1, 5, 3
PROBS = torch.softmax(LOGITS[0], dim=-1)  # about 0.610, 0.050, 0.224, 0.011, 0.083, 0.030
BATCH_GREEDY = randn(7, 13, seed=80) * 3


def _support(ns, n, seed, logits=LOGITS, **kwargs):
    out = ns.sample_next(logits.expand(n, -1).clone(), generator=generator(seed), **kwargs)
    return sorted(set(out.flatten().tolist()))


def _frequencies(ns, n, seed, logits=LOGITS, **kwargs):
    out = ns.sample_next(logits.expand(n, -1).clone(), generator=generator(seed), **kwargs)
    return torch.bincount(out.flatten(), minlength=logits.size(-1)).double() / n


@suite.case(
    "sampling",
    "temperature 0 is greedy for every row, whatever top_k and top_p say",
    points=2,
    check=equal(),
    expected=[BATCH_GREEDY.argmax(dim=-1, keepdim=True)] * 2,
)
def _(ns):
    return [ns.sample_next(BATCH_GREEDY.clone(), temperature=0), ns.sample_next(BATCH_GREEDY.clone(), temperature=0, top_k=3, top_p=0.3)]


def _shape_problem(got):
    out, support = got
    if type(out) is not torch.Tensor or out.dtype != torch.long or list(out.shape) != [2000, 1]:
        return f"sample_next must return a (B, 1) torch.long tensor; for B=2000 got {type(out).__name__} {getattr(out, 'dtype', '')} {list(getattr(out, 'shape', []))}"
    if support != list(range(6)):
        return f"without top_k or top_p every token can be drawn; in 2000 draws only {support} came"
    return None


@suite.case("sampling", "shape (B, 1), long, and every token possible without filters", points=1, check=satisfies(_shape_problem))
def _(ns):
    out = ns.sample_next(LOGITS.expand(2000, -1).clone(), generator=generator(81))
    return out, sorted(set(out.flatten().tolist()))


def _freq_check(expected):
    def test(got):
        err = (got - expected).abs()
        if float(err.max()) > 0.035:
            k = int(err.argmax())
            return f"token {k} came with frequency {float(got[k]):.3f} in 4000 draws, but its probability is {float(expected[k]):.3f}"
        return None

    return satisfies(test)


@suite.case("sampling", "frequencies follow softmax(logits) at temperature 1", points=1, check=_freq_check(PROBS.double()))
def _(ns):
    return _frequencies(ns, 4000, 82)


@suite.case(
    "sampling",
    "temperature 2 flattens: frequencies follow softmax(logits / 2)",
    points=1,
    check=_freq_check(torch.softmax(LOGITS[0] / 2, dim=-1).double()),
)
def _(ns):
    return _frequencies(ns, 4000, 83, temperature=2.0)


@suite.case(
    "sampling",
    "temperature 0.5 sharpens: frequencies follow softmax(logits / 0.5)",
    points=1,
    check=_freq_check(torch.softmax(LOGITS[0] / 0.5, dim=-1).double()),
)
def _(ns):
    return _frequencies(ns, 4000, 84, temperature=0.5)


@suite.case(
    "sampling",
    "top_k keeps the k most likely tokens (k = 1, 3, 5, 6 and 50)",
    points=1,
    check=equal(),
    expected=[[0], [0, 2, 4], [0, 1, 2, 4, 5], [0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5]],
)
def _(ns):
    return [_support(ns, 3000, 85 + k, top_k=k) for k in (1, 3, 5, 6, 50)]


@suite.case(
    "sampling",
    "top_k=3: the kept tokens are drawn in proportion to their probabilities",
    points=1,
    check=_freq_check(torch.where(torch.tensor([1, 0, 1, 0, 1, 0]).bool(), PROBS, torch.zeros(6)).double() / float(PROBS[[0, 2, 4]].sum())),
)
def _(ns):
    return _frequencies(ns, 4000, 86, top_k=3)


@suite.case(
    "sampling",
    "top_p keeps the smallest set whose mass reaches p, the crossing token included",
    points=2,
    check=equal([Hint(lambda got, exp: isinstance(got, list) and len(got) == 5 and got[1] == [0], "a token stays while the mass of the more likely tokens is still below p: the token that crosses p stays in")]),
    expected=[[0], [0, 2], [0, 2], [0, 2, 4], [0, 1, 2, 4, 5]],
)
def _(ns):
    p0, p2, p4, p1 = (float(PROBS[i]) for i in (0, 2, 4, 1))
    cuts = [p0 / 2, p0 + 0.01, p0 + p2 - 0.01, p0 + p2 + 0.01, p0 + p2 + p4 + p1 + 0.01]
    return [_support(ns, 3000, 90 + i, top_p=p) for i, p in enumerate(cuts)]


@suite.case(
    "sampling",
    "top_p=0.9: the kept tokens are drawn in proportion to their probabilities",
    points=1,
    check=_freq_check(torch.where(torch.tensor([1, 0, 1, 0, 1, 0]).bool(), PROBS, torch.zeros(6)).double() / float(PROBS[[0, 2, 4]].sum())),
)
def _(ns):
    return _frequencies(ns, 4000, 96, top_p=0.9)


@suite.case(
    "sampling",
    "with both, top_k is applied first and top_p to the renormalised rest",
    points=1,
    check=equal([Hint(lambda got, exp: isinstance(got, list) and got[0] == [0, 2], "apply top_k first; top_p then works on the probabilities of the tokens top_k kept, renormalised")]),
    expected=[[0], [0, 2], [0, 2]],
)
def _(ns):
    # after top_k=2 token 0 holds 0.73 of the mass: p=0.7 keeps it alone (on the full
    # distribution, where it holds 0.61, p=0.7 would keep two tokens)
    return [_support(ns, 2000, 97, top_k=2, top_p=0.7), _support(ns, 2000, 98, top_k=2, top_p=0.75), _support(ns, 2000, 99, top_k=3, top_p=0.72)]


# the two rows keep their two best tokens above different thresholds (3.5 and 1.0): one row's
# k-th value used for the other keeps four tokens in row 0, or none in row 1
ROWS = torch.tensor([[4.0, 3.5, 3.0, 2.5, -2.0, -3.0], [-3.0, -2.0, -1.0, 0.0, 1.0, 1.5]])


@suite.case(
    "sampling",
    "each row of a batch is filtered and drawn on its own",
    points=1,
    check=equal(),
    expected=[[0, 1], [4, 5]],
)
def _(ns):
    out = ns.sample_next(ROWS.repeat(500, 1), top_k=2, generator=generator(100))
    return [sorted(set(out[0::2].flatten().tolist())), sorted(set(out[1::2].flatten().tolist()))]


@suite.case("sampling", "draws come from the generator (same seed, same draws)", points=1, check=satisfies(
    lambda got: None if got else "two calls with generators seeded alike gave different draws: pass generator= to torch.multinomial"))
def _(ns):
    a = ns.sample_next(torch.zeros(64, 20), generator=generator(5))
    torch.rand(7)
    b = ns.sample_next(torch.zeros(64, 20), generator=generator(5))
    return bool(torch.equal(a, b))


@suite.case("sampling", "a negative temperature, top_k=0, top_p=0 and top_p=1.5 raise ValueError", points=1, check=equal(),
            expected=["ValueError"] * 4)
def _(ns):
    bad = [dict(temperature=-1.0), dict(top_k=0), dict(top_p=0.0), dict(top_p=1.5)]
    return [catch(ns.sample_next, LOGITS.clone(), **kwargs)["raised"] for kwargs in bad]


# ======================================================================== generate

GEN = dict(vocab_size=12, block_size=12, n_layer=2, n_head=2, n_embd=16)
GEN_PROMPT = torch.randint(12, (2, 3), generator=generator(40))
CROP = dict(vocab_size=12, block_size=6, n_layer=2, n_head=2, n_embd=16)
CROP_PROMPT = torch.randint(12, (2, 9), generator=generator(41))


def _generate(ns, model, prompt, new, **kwargs):
    with _replacing(ns, "sample_next", _GraderSampler()) as sampler:
        out = ns.generate(model, prompt.clone(), new, **kwargs)
    return out, sampler


_TOKENS_HINTS = [Hint(lambda got, exp: type(got) is torch.Tensor and got.dim() == 2 and got.size(1) < exp.size(1), "return the prompt followed by the new tokens")]


@suite.case("generate", "greedy tokens of a model with fixed weights", points=2, check=equal(_TOKENS_HINTS), expected=REFERENCE)
def _(ns):
    return _generate(ns, _TestGPT(ns, 1, **GEN), GEN_PROMPT, 6, temperature=0)[0]


@suite.case("generate", "greedy: the logits handed to sample_next are the last position's", points=1, check=_logged_logits(1e-4, 1e-4), expected=REFERENCE)
def _(ns):
    return _stacked(_generate(ns, _TestGPT(ns, 1, **GEN), GEN_PROMPT, 6, temperature=0)[1])


@suite.case("generate", "a prompt of 9 tokens, block_size 6: the context is cropped to the last 6", points=2, check=equal(_TOKENS_HINTS), expected=REFERENCE)
def _(ns):
    return _generate(ns, _TestGPT(ns, 14, **CROP), CROP_PROMPT, 10, temperature=0)[0]


@suite.case("generate", "cropping: the logits at every step are those of the last block_size tokens", points=1, check=_logged_logits(1e-4, 1e-4), expected=REFERENCE)
def _(ns):
    return _stacked(_generate(ns, _TestGPT(ns, 14, **CROP), CROP_PROMPT, 10, temperature=0)[1])


def _inference_problem(got):
    for before, calls, after in got:
        if not calls:
            return "generate never called the model"
        if any(training for training, _ in calls):
            return "the model must run in eval mode while generating (model.eval())"
        if any(grad for _, grad in calls):
            return "generation must run without gradients (torch.no_grad())"
        if after != before:
            return f"the model was in {'training' if before else 'eval'} mode before the call and must be left in it"
    return None


@suite.case("generate", "eval mode and no gradients inside; the caller's mode (train or eval) after", points=1, check=satisfies(_inference_problem))
def _(ns):
    out = []
    for mode in (True, False):
        model = _TestGPT(ns, 2, **dict(GEN, dropout=0.3))
        model.train(mode)
        _generate(ns, model, GEN_PROMPT, 3, temperature=0)
        out.append((mode, [(e["training"], e["grad"]) for e in model.log], model.training))
    return out


def _sampled_problem(got):
    out, prompt = got
    if type(out) is not torch.Tensor or list(out.shape) != [2, 13]:
        return f"for a (2, 3) prompt and 10 new tokens expected a (2, 13) tensor, got {list(getattr(out, 'shape', []))}"
    if out.dtype != torch.long:
        return f"token ids are torch.long, got {out.dtype}"
    if not torch.equal(out[:, :3], prompt):
        return "the output must start with the prompt"
    if int(out.min()) < 0 or int(out.max()) >= 12:
        return "every new id must be a token of the vocabulary"
    return None


@suite.case("generate", "sampling (top_k=5, temperature 0.9): shape (B, T0 + N), the prompt kept", points=1, check=satisfies(_sampled_problem))
def _(ns):
    out, _ = _generate(ns, _TestGPT(ns, 3, **GEN), GEN_PROMPT, 10, temperature=0.9, top_k=5, generator=generator(3))
    return out, GEN_PROMPT


@suite.case("generate", "top_k=1 at temperature 1 gives the greedy tokens (the arguments reach sample_next)", points=1, check=satisfies(
    lambda got: None if got else "with top_k=1 only the most likely token can be drawn: pass temperature, top_k, top_p and generator on to sample_next"))
def _(ns):
    model = _TestGPT(ns, 4, **GEN)
    greedy, _ = _generate(ns, model, GEN_PROMPT, 8, temperature=0)
    narrow, _ = _generate(ns, model, GEN_PROMPT, 8, temperature=1.0, top_k=1, generator=generator(4))
    return bool(torch.equal(greedy, narrow))


@suite.case("generate", "the same seeded generator gives the same text", points=1, check=satisfies(
    lambda got: None if got else "two calls with generators seeded alike gave different tokens: pass the generator on to sample_next"))
def _(ns):
    model = _TestGPT(ns, 5, **GEN)
    a, _ = _generate(ns, model, GEN_PROMPT, 8, generator=generator(6))
    torch.rand(3)
    b, _ = _generate(ns, model, GEN_PROMPT, 8, generator=generator(6))
    return bool(torch.equal(a, b))


@suite.case("generate", "max_new_tokens=0 returns the prompt", points=1, check=equal(), expected=GEN_PROMPT.tolist())
def _(ns):
    return _generate(ns, _TestGPT(ns, 6, **GEN), GEN_PROMPT, 0, temperature=0)[0].tolist()


# ======================================================================== kv_cache

KV_PRE = dict(vocab_size=12, block_size=12, n_layer=3, n_head=2, n_embd=16)
KV_PRE_PROMPT = torch.randint(12, (3, 4), generator=generator(42))
KV_POST = dict(vocab_size=12, block_size=12, n_layer=2, n_head=4, n_embd=16, ff_dim=24, norm_first=False, tie_weights=False)
KV_POST_PROMPT = torch.randint(12, (2, 5), generator=generator(43))
KV_ONE = dict(vocab_size=12, block_size=12, n_layer=2, n_head=2, n_embd=16)
KV_ONE_PROMPT = torch.randint(12, (2, 1), generator=generator(44))


class _GraderGenerate:
    """Stands in for the notebook's generate while generate_cached runs (a student's cached
    generation may call it past block_size), drawing with the grader's sampler."""

    def __init__(self, sampler):
        self.sampler = sampler

    def __call__(self, model, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
        before = model.training
        model.eval()
        with torch.no_grad():
            for _ in range(max_new_tokens):
                last = model(idx[:, -model.config.block_size :])[0][:, -1, :]
                idx = torch.cat([idx, self.sampler(last, temperature, top_k, top_p, generator)], dim=1)
        model.train(before)
        return idx


def _cached(ns, model, prompt, new, **kwargs):
    with _replacing(ns, "sample_next", _GraderSampler()) as sampler, _replacing(ns, "generate", _GraderGenerate(sampler)):
        out = ns.generate_cached(model, prompt.clone(), new, **kwargs)
    return out, sampler


@suite.case("kv_cache", "greedy tokens within block_size: pre-norm, 3 layers, tied", points=2, check=equal(_TOKENS_HINTS), expected=REFERENCE)
def _(ns):
    return _cached(ns, _TestGPT(ns, 37, **KV_PRE), KV_PRE_PROMPT, 8, temperature=0)[0]


@suite.case("kv_cache", "greedy tokens within block_size: post-norm, 4 heads, untied, ff_dim=24", points=2, check=equal(_TOKENS_HINTS), expected=REFERENCE)
def _(ns):
    return _cached(ns, _TestGPT(ns, 30, **KV_POST), KV_POST_PROMPT, 7, temperature=0)[0]


@suite.case("kv_cache", "a one-token prompt grown to exactly block_size tokens", points=1, check=equal(_TOKENS_HINTS), expected=REFERENCE)
def _(ns):
    return _cached(ns, _TestGPT(ns, 26, **KV_ONE), KV_ONE_PROMPT, 11, temperature=0)[0]


@suite.case("kv_cache", "the logits handed to sample_next equal the full forward pass's (post-norm)", points=1, check=_logged_logits(1e-4, 1e-4), expected=REFERENCE)
def _(ns):
    return _stacked(_cached(ns, _TestGPT(ns, 30, **KV_POST), KV_POST_PROMPT, 7, temperature=0)[1])


def _positions_seen(ns, model, prompt, new):
    seen = {}
    hooks = []

    def counting(label):
        def hook(module, args, output):
            first = args[0]
            per_row = first.numel() // first.size(0)
            seen[label] = seen.get(label, 0) + (per_row // first.size(-1) if first.dim() == 3 else per_row)
        return hook

    targets = [("tok_emb", model.tok_emb)] + [(f"blocks[{i}].attn.k_proj", b.attn.k_proj) for i, b in enumerate(model.blocks)]
    for label, module in targets:
        seen[label] = 0
        hooks.append(module.register_forward_hook(counting(label)))
    try:
        _cached(ns, model, prompt, new, temperature=0)
    finally:
        for hook in hooks:
            hook.remove()
    return {"prompt": prompt.size(1), "new": new, "seen": seen}


def _positions_problem(got):
    prompt, new = got["prompt"], got["new"]
    for label, count in got["seen"].items():
        if count < prompt:
            return (f"{count} positions went through {label}, fewer than the {prompt} of the prompt: "
                    "call the model's modules (model.tok_emb(ids), attn.k_proj(h)); the test counts what passes through them")
        if count > prompt + new:
            return (f"{count} positions went through {label} for a prompt of {prompt} and {new} new tokens: "
                    f"a cache computes each position once (at most {prompt + new}), so each new token adds one position")
    return None


@suite.case("kv_cache", "one position per new token through tok_emb and every block's k_proj", points=2, check=satisfies(_positions_problem))
def _(ns):
    return _positions_seen(ns, _TestGPT(ns, 37, **KV_PRE), KV_PRE_PROMPT, 8)


def _cached_mode_problem(got):
    for before, calls, after in got:
        if not calls:
            return "generate_cached never called model.tok_emb"
        if any(training for training, _ in calls):
            return "the model must be in eval mode while generating (model.eval())"
        if any(grad for _, grad in calls):
            return "generation must run without gradients (torch.no_grad())"
        if after != before:
            return f"the model was in {'training' if before else 'eval'} mode before the call and must be left in it"
    return None


@suite.case("kv_cache", "eval mode and no gradients inside; the caller's mode after", points=1, check=satisfies(_cached_mode_problem))
def _(ns):
    out = []
    for mode in (True, False):
        model = _TestGPT(ns, 7, **dict(KV_ONE, dropout=0.3))
        model.train(mode)
        calls = []
        handle = model.tok_emb.register_forward_hook(lambda module, args, output: calls.append((module.training, torch.is_grad_enabled())))
        try:
            _cached(ns, model, KV_ONE_PROMPT, 4, temperature=0)
        finally:
            handle.remove()
        out.append((mode, calls, model.training))
    return out


def _cached_sampled_problem(got):
    out, prompt, total = got
    if type(out) is not torch.Tensor or list(out.shape) != [prompt.size(0), total]:
        return f"expected a ({prompt.size(0)}, {total}) tensor, got {list(getattr(out, 'shape', []))}"
    if not torch.equal(out[:, : prompt.size(1)], prompt):
        return "the output must start with the prompt"
    if int(out.min()) < 0 or int(out.max()) >= 12:
        return "every new id must be a token of the vocabulary"
    return None


@suite.case("kv_cache", "sampling with top_k and a generator: shape (B, T0 + N), the prompt kept", points=1, check=satisfies(_cached_sampled_problem))
def _(ns):
    out, _ = _cached(ns, _TestGPT(ns, 8, **KV_PRE), KV_PRE_PROMPT, 6, temperature=0.8, top_k=4, generator=generator(8))
    return out, KV_PRE_PROMPT, 10


@suite.case("kv_cache", "past block_size it still returns (B, T0 + N) tokens, the prompt kept", points=1, check=satisfies(_cached_sampled_problem))
def _(ns):
    out, _ = _cached(ns, _TestGPT(ns, 9, **KV_ONE), KV_PRE_PROMPT, 14, temperature=0)
    return out, KV_PRE_PROMPT, 18


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


def _fit_and_score(ns, text, seed):
    vocab = sorted(set(text))
    ids = torch.tensor([vocab.index(ch) for ch in text])
    split = int(0.9 * len(ids))
    torch.manual_seed(seed)
    model = ns.GPT(ns.GPTConfig(vocab_size=len(vocab), block_size=16, n_layer=1, n_head=2, n_embd=32))
    ns.train(model, ids[:split], ids[split:], steps=300, batch_size=16, lr=1e-2, device="cpu", eval_interval=100,
             eval_iters=8, warmup=30, generator=generator(seed), progress=False)
    held = ids[split:]
    offsets = torch.arange(16)
    first = torch.arange(len(held) - 16).unsqueeze(1)
    inputs, following = held[first + offsets], held[first + offsets + 1]
    model.cpu().eval()
    with torch.no_grad():
        scores = model(inputs)[0]
    return F.cross_entropy(scores.reshape(-1, len(vocab)), following.reshape(-1)).item()


def _below_bound(got):
    if not isinstance(got, float) or not math.isfinite(got):
        return f"the validation loss after training is {got}"
    if got >= BOUND:
        return (f"after 300 steps your GPT's validation loss is {got:.3f}, not below {BOUND}: it does not learn well enough "
                "(look for targets that are not the next tokens, the same batch at every step, windows from only part of "
                "the data, gradients zeroed between backward and step, or a step before the backward pass)")
    return None


@suite.case("training_works", "300 steps on another corpus of generated sentences: validation loss below 1.5", points=3,
            check=satisfies(_below_bound), timeout=60)
def _(ns):
    return _fit_and_score(ns, _other_sentences(1), seed=1)
