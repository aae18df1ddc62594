"""Hidden tests of stage 08_generation (run only when grading; never shipped to students).

Expected values marked REFERENCE are the reference solution's outputs on the same
probe, saved at build time. Probes return raw outputs (tensors, numbers, strings; a
module's mode as "train"/"eval", the grad state as "grad"/"no_grad"); every comparison
happens in the checks, in the grading process. The clause table of each question is
``clauses.md`` beside this file.

Keeping the questions apart (and no implementation of a graded function in this file)
    generate runs on the kit's ``CausalMean``, a stand-in language model that is no
    transformer (each position's logits come from the running mean of the embeddings so
    far); kv_cache runs on ``_PartsOnly``, a GPT's parts (the notebook's given
    TransformerBlock and LayerNorm, embeddings, an untied or tied head) with no GPT
    forward pass. While generate and generate_cached run, the notebook's
    ``sample_next`` is replaced by ``_Chooser``, which notes its arguments and the
    logits it is handed and picks the most likely token (it filters nothing and draws
    nothing), so a sample_next mistake costs only sampling points; while
    generate_cached runs, ``generate`` is replaced by a placeholder that appends zeros
    (a cached generation may call it past block_size; only shapes are tested there), so
    a generate mistake costs only generate points. The student's GPT (stage 07's answer,
    the course's version when grading) is never run.

Weights
    ``kit.set_parameters`` fills each parameter from its dotted name and a seed, a tied
    head/embedding matrix once under the name tok_emb.weight, so neither the order in
    which modules were created nor the model's own initialisation matters.

Tolerances (relative + absolute, per test)
    - logits handed to sample_next by generate / generate_cached: rtol 1e-4, atol 1e-4;
    - greedy tokens: exact. The kv_cache models were chosen so that at every step the
      best logit leads the second by at least 0.1 (far beyond float32 rounding), and
      their fixtures are exactly the tokens of plain greedy generation by a GPT with
      the same weights (test_generation.py checks both);
    - shapes, supports: exact;
    - sampling frequencies: 4000 draws, each frequency within 0.035 of its
      probability (about 4.4 standard deviations at worst), never exact draws.
"""

import torch
import torch.nn as nn

from autograder.kit import (
    REFERENCE,
    CausalMean,
    Hint,
    Suite,
    Verdict,
    catch,
    close,
    dtypes,
    each_raised,
    equal,
    generator,
    grad_mode,
    mode_of,
    mode_problem,
    near,
    randn,
    replacing,
    same_shape,
    satisfies,
    set_parameters,
    stand_in_config,
)

from public import DECODE_STEP, LOGITS, _Chooser, _decode_hint, _same_draws

suite = Suite(public=False)


# ======================================================================== helpers


class _PartsOnly(nn.Module):
    """A GPT's parts and nothing more, for the kv_cache tests: a cached generation must
    run its prompt and each new token through them.

    Past block_size a cached generation may recompute the cropped window with the
    model's forward; for that test only (``whole_window``), the forward returns logits
    of the right shape from the embeddings alone (no blocks: it is no GPT).
    """

    whole_window = False

    def __init__(
        self,
        ns,
        seed,
        vocab_size,
        block_size,
        n_layer,
        n_head,
        n_embd,
        ff_dim=None,
        norm_first=True,
        tie_weights=True,
        dropout=0.0,
    ):
        super().__init__()
        cfg = stand_in_config(vocab_size, block_size, n_layer, n_head, n_embd, ff_dim, dropout, tie_weights, norm_first)
        hidden = ff_dim if ff_dim is not None else 4 * n_embd
        self.config = cfg
        self.tok_emb = nn.Embedding(vocab_size, n_embd)
        self.pos_emb = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList(
            ns.TransformerBlock(n_embd, n_head, hidden, dropout=dropout, norm_first=norm_first) for _ in range(n_layer)
        )
        self.ln_f = ns.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab_size, bias=False)
        if tie_weights:
            self.head.weight = self.tok_emb.weight  # tied: one Parameter in both modules
        set_parameters(self, seed, 1.0, first=("tok_emb.weight",))

    def forward(self, idx, targets=None):
        if not self.whole_window:
            raise ValueError(
                "this test model has no forward pass: within block_size, run the prompt and each new token through its parts and the cache"
            )
        return self.head(
            self.ln_f(self.tok_emb(idx) + self.pos_emb(torch.arange(idx.size(1), device=idx.device)))
        ), None


def _zeros_generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    """Stands in for the notebook's generate while generate_cached runs: appends zeros."""
    return torch.cat([idx, torch.zeros(idx.size(0), max_new_tokens, dtype=torch.long, device=idx.device)], dim=1)


def _stacked(chooser):
    return torch.stack(chooser.logits) if chooser.logits else None


def _logged_logits(rtol, atol, hints=()):
    inner = close(rtol=rtol, atol=atol, hints=list(hints))

    def check(got, expected, reveal=True):
        if got is None:
            return Verdict(
                False,
                "sample_next was never called: draw every new token with sample_next(logits, temperature, top_k, top_p, generator)",
            )
        verdict = inner(got, expected, reveal)
        if not verdict.passed:
            verdict.message = (
                "the logits handed to sample_next (steps x batch x vocab) are not the model's last-position logits: "
                + verdict.message
            )
        return verdict

    check.hints = inner.hints  # the rules read a check's hints here
    return check


def _arguments_problem(count, temperature, top_k, top_p, seed):
    def test(got):
        if len(got) != count:
            return f"{count} new tokens need {count} calls of sample_next, there were {len(got)}"
        for t, k, p, s in got:
            if [t, k, p] != [temperature, top_k, top_p]:
                return f"sample_next was called with temperature={t}, top_k={k}, top_p={p}: pass on temperature, top_k and top_p as given"
            if s != seed:
                return "sample_next did not get the generator: pass it on as generator=generator"
        return None

    return satisfies(test)


# ======================================================================== sampling

PROBS = torch.softmax(LOGITS[0], dim=-1)  # about 0.610, 0.050, 0.224, 0.011, 0.083, 0.030
BATCH_GREEDY = randn(7, 13, seed=80) * 3


def _sets(settings, hints=()):
    """A check on the sets of tokens drawn under each of ``settings`` (their descriptions, in order)."""

    def check(got, expected, reveal=True):
        for setting, mine, right in zip(settings, got, expected):
            if list(mine) != list(right):
                verdict = Verdict(
                    False, f"with {setting} the tokens drawn were {list(mine)}, which is not the set the contract keeps"
                )
                for hint in hints:
                    if hint.when(got, expected):
                        return Verdict(False, f"{verdict.message}\nHint: {hint.text}", hint.mistake)
                return verdict
        if len(got) != len(expected):
            return Verdict(False, "the test expected one set of tokens per setting")
        return Verdict(True)

    return check


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
    check=equal(dtype=None),
    expected=[BATCH_GREEDY.argmax(dim=-1, keepdim=True)] * 2,
)
def _(ns):
    return [
        ns.sample_next(BATCH_GREEDY.clone(), temperature=0),
        ns.sample_next(BATCH_GREEDY.clone(), temperature=0, top_k=3, top_p=0.3),
    ]


def _shape_problem(got):
    out, support = got
    if type(out) is not torch.Tensor or list(out.shape) != [2000, 1]:
        return f"sample_next must return a (B, 1) tensor; for B=2000 got {type(out).__name__} {list(getattr(out, 'shape', []))}"
    if support != list(range(6)):
        return f"without top_k or top_p every token can be drawn; in 2000 draws only {support} came"
    return None


@suite.case(
    "sampling",
    "shape (B, 1) and every token possible without filters",
    points=1,
    check=satisfies(_shape_problem),
)
def _(ns):
    out = ns.sample_next(LOGITS.expand(2000, -1).clone(), generator=generator(81))
    return out, sorted(set(out.flatten().tolist()))


@suite.case(
    "sampling",
    "the tokens are torch.long: greedy, drawn, with top_k and with top_p",
    points=1,
    check=dtypes(),
    expected=REFERENCE,
)
def _(ns):
    rows = BATCH_GREEDY.clone()
    return [
        ns.sample_next(rows, temperature=0),
        ns.sample_next(rows, generator=generator(84)),
        ns.sample_next(rows, top_k=2, generator=generator(85)),
        ns.sample_next(rows, top_p=0.5, generator=generator(86)),
    ]


def _freq_check(expected):
    def test(got):
        err = (got - expected).abs()
        if float(err.max()) > 0.035:
            k = int(err.argmax())
            return f"token {k} came with frequency {float(got[k]):.3f} in 4000 draws, but its probability is {float(expected[k]):.3f}"
        return None

    return satisfies(test)


@suite.case(
    "sampling", "frequencies follow softmax(logits) at temperature 1", points=1, check=_freq_check(PROBS.double())
)
def _(ns):
    return _frequencies(ns, 4000, 82)


@suite.case(
    "sampling",
    "temperature 2 flattens: frequencies follow softmax(logits / 2)",
    points=1,
    check=_freq_check(torch.softmax(LOGITS[0] / 2, dim=-1).double()),
    builds_on=("frequencies follow softmax(logits) at temperature 1",),
)
def _(ns):
    return _frequencies(ns, 4000, 83, temperature=2.0)


@suite.case(
    "sampling",
    "temperature 0.5 sharpens: frequencies follow softmax(logits / 0.5)",
    points=1,
    check=_freq_check(torch.softmax(LOGITS[0] / 0.5, dim=-1).double()),
    builds_on=("frequencies follow softmax(logits) at temperature 1",),
)
def _(ns):
    return _frequencies(ns, 4000, 84, temperature=0.5)


@suite.case(
    "sampling",
    "top_k keeps the k most likely tokens (k = 1, 3, 5, 6 and 50)",
    points=1,
    check=_sets(["top_k=1", "top_k=3", "top_k=5", "top_k=6", "top_k=50"]),
    expected=[[0], [0, 2, 4], [0, 1, 2, 4, 5], [0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5]],
)
def _(ns):
    return [_support(ns, 3000, 85 + k, top_k=k) for k in (1, 3, 5, 6, 50)]


@suite.case(
    "sampling",
    "top_k=3: the kept tokens are drawn in proportion to their probabilities",
    points=1,
    builds_on=("top_k keeps the k most likely tokens (k = 1, 3, 5, 6 and 50)",),
    check=_freq_check(
        torch.where(torch.tensor([1, 0, 1, 0, 1, 0]).bool(), PROBS, torch.zeros(6)).double()
        / float(PROBS[[0, 2, 4]].sum())
    ),
)
def _(ns):
    return _frequencies(ns, 4000, 86, top_k=3)


@suite.case(
    "sampling",
    "top_p keeps the smallest set whose mass reaches p, the crossing token included",
    points=2,
    check=_sets(
        [
            "top_p just below half the top token's probability",
            "top_p just above the top token's probability",
            "top_p just below the two top tokens' mass",
            "top_p just above the two top tokens' mass",
            "top_p just above the four top tokens' mass",
        ],
        [
            Hint(
                lambda got, exp: isinstance(got, list) and len(got) == 5 and got[1] == [0],
                "a token stays while the mass of the more likely tokens is still below p: the token that crosses p stays in",
                mistake="top-p drops the crossing token",
            )
        ],
    ),
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
    builds_on=("top_p keeps the smallest set whose mass reaches p, the crossing token included",),
    check=_freq_check(
        torch.where(torch.tensor([1, 0, 1, 0, 1, 0]).bool(), PROBS, torch.zeros(6)).double()
        / float(PROBS[[0, 2, 4]].sum())
    ),
)
def _(ns):
    return _frequencies(ns, 4000, 96, top_p=0.9)


@suite.case(
    "sampling",
    "with both, top_k is applied first and top_p to the renormalised rest",
    points=1,
    check=_sets(
        ["top_k=2, top_p=0.7", "top_k=2, top_p=0.75", "top_k=3, top_p=0.72"],
        [
            Hint(
                lambda got, exp: isinstance(got, list) and got[0] == [0, 2],
                "apply top_k first; top_p then works on the probabilities of the tokens top_k kept, renormalised",
                mistake="top-p before top-k",
            )
        ],
    ),
    expected=[[0], [0, 2], [0, 2]],
    builds_on=(
        "top_k keeps the k most likely tokens (k = 1, 3, 5, 6 and 50)",
        "top_p keeps the smallest set whose mass reaches p, the crossing token included",
    ),
)
def _(ns):
    # after top_k=2 token 0 holds 0.73 of the mass: p=0.7 keeps it alone (on the full
    # distribution, where it holds 0.61, p=0.7 would keep two tokens)
    return [
        _support(ns, 2000, 97, top_k=2, top_p=0.7),
        _support(ns, 2000, 98, top_k=2, top_p=0.75),
        _support(ns, 2000, 99, top_k=3, top_p=0.72),
    ]


# the two rows keep their two best tokens above different thresholds (3.5 and 1.0): one row's
# k-th value used for the other keeps four tokens in row 0, or none in row 1
ROWS = torch.tensor([[4.0, 3.5, 3.0, 2.5, -2.0, -3.0], [-3.0, -2.0, -1.0, 0.0, 1.0, 1.5]])


@suite.case(
    "sampling",
    "each row of a batch is filtered and drawn on its own",
    points=1,
    check=_sets(["top_k=2 on the first row", "top_k=2 on the second row"]),
    expected=[[0, 1], [4, 5]],
)
def _(ns):
    out = ns.sample_next(ROWS.repeat(500, 1), top_k=2, generator=generator(100))
    return [sorted(set(out[0::2].flatten().tolist())), sorted(set(out[1::2].flatten().tolist()))]


@suite.case(
    "sampling",
    "draws come from the generator (same seed, same draws)",
    points=1,
    check=satisfies(_same_draws),
    guard=True,  # zeros are the same draws twice: it counts only when a test of the draws passes
)
def _(ns):
    first = ns.sample_next(torch.zeros(64, 20), generator=generator(5))
    torch.rand(7)
    return first, ns.sample_next(torch.zeros(64, 20), generator=generator(5))


@suite.case(
    "sampling",
    "a negative temperature, top_k=0, top_p=0, top_p=1.5 and 1-D logits raise ValueError",
    points=1,
    check=each_raised(["temperature=-1", "top_k=0", "top_p=0", "top_p=1.5", "1-D logits (V,)"]),
)
def _(ns):
    bad = [dict(temperature=-1.0), dict(top_k=0), dict(top_p=0.0), dict(top_p=1.5)]
    return [catch(ns.sample_next, LOGITS.clone(), **kwargs)["raised"] for kwargs in bad] + [
        catch(ns.sample_next, LOGITS[0].clone())["raised"]
    ]


# ======================================================================== generate

GEN = dict(vocab_size=12, block_size=12)
GEN_PROMPT = torch.randint(12, (2, 3), generator=generator(40))
CROP = dict(vocab_size=12, block_size=6)
CROP_PROMPT = torch.randint(12, (2, 9), generator=generator(41))


def _generate(ns, model, prompt, new, **kwargs):
    with replacing(ns, "sample_next", _Chooser()) as chooser:
        out = ns.generate(model, prompt.clone(), new, **kwargs)
    return out, chooser


def _size_words(got, shape):
    """How the size of ``got`` differs from ``shape`` (rows, then columns), in words without numbers."""
    if type(got) is not torch.Tensor or got.dim() != 2:
        return "yours is not a 2-D tensor"
    if got.size(0) != shape[0]:
        return "yours has a different number of rows from the prompt"
    side = "fewer" if got.size(1) < shape[1] else "more"
    return f"yours has {side} columns than the prompt's length plus max_new_tokens"


_PROMPT_HINT = Hint(
    lambda got, exp: type(got) is torch.Tensor and got.dim() == 2 and got.size(1) < exp.size(1),
    "return the prompt followed by the new tokens",
    mistake="prompt dropped",
)


def _tokens(hints=(_PROMPT_HINT,)):
    """A check on generated token ids: the prompt, then the expected greedy tokens (described in words)."""

    def check(got, expected, reveal=True):
        if type(got) is not torch.Tensor or got.dtype.is_floating_point or got.dtype == torch.bool or got.dim() != 2:
            verdict = Verdict(
                False,
                f"the result must be a 2-D tensor of token ids (integers), got {type(got).__name__} {getattr(got, 'dtype', '')} with shape {list(getattr(got, 'shape', []))}",
            )
        elif got.shape != expected.shape:
            verdict = Verdict(
                False,
                f"the result must hold each prompt row followed by the new tokens; {_size_words(got, expected.shape)}",
            )
        elif not torch.equal(got.long(), expected.long()):
            wrong = (got.long() != expected.long()).nonzero()[0].tolist()
            verdict = Verdict(
                False,
                f"{int((got.long() != expected.long()).sum())} token ids differ from the expected ones, the first in row {wrong[0]} at position {wrong[1]}",
            )
        else:
            return Verdict(True)
        for hint in hints:
            if hint.when(got, expected):
                return Verdict(False, f"{verdict.message}\nHint: {hint.text}", hint.mistake)
        return verdict

    return check


@suite.case(
    "generate",
    "greedy: the logits handed to sample_next are the last position's",
    points=1,
    check=_logged_logits(1e-4, 1e-4),
    expected=REFERENCE,
    guard=True,  # it watches what the code did (calls, steps, hooks): a no-op that copies the work passes it
)
def _(ns):
    return _stacked(_generate(ns, CausalMean(1, **GEN), GEN_PROMPT, 6, temperature=0)[1])


@suite.case(
    "generate",
    "greedy tokens of a model with fixed weights",
    points=2,
    check=_tokens(),
    expected=REFERENCE,
    builds_on=("greedy: the logits handed to sample_next are the last position's",),
)
def _(ns):
    return _generate(ns, CausalMean(1, **GEN), GEN_PROMPT, 6, temperature=0)[0]


@suite.case(
    "generate",
    "cropping: the logits at every step are those of the last block_size tokens",
    points=1,
    check=_logged_logits(1e-4, 1e-4),
    expected=REFERENCE,
    guard=True,  # it watches what the code did (calls, steps, hooks): a no-op that copies the work passes it
)
def _(ns):
    return _stacked(_generate(ns, CausalMean(14, **CROP), CROP_PROMPT, 10, temperature=0)[1])


@suite.case(
    "generate",
    "a prompt of 9 tokens, block_size 6: the context is cropped to the last 6",
    points=2,
    check=_tokens(),
    expected=REFERENCE,
    builds_on=("cropping: the logits at every step are those of the last block_size tokens",),
)
def _(ns):
    return _generate(ns, CausalMean(14, **CROP), CROP_PROMPT, 10, temperature=0)[0]


@suite.case(
    "generate",
    "eval mode and no gradients inside; the caller's mode (train or eval) after",
    points=1,
    check=satisfies(lambda got: mode_problem(got, "generate")),
)
def _(ns):
    out = []
    for mode in (True, False):
        model = CausalMean(2, **GEN, dropout=0.3)
        model.train(mode)
        before = mode_of(model)
        _generate(ns, model, GEN_PROMPT, 3, temperature=0)
        out.append((before, [[e["mode"], e["grad"]] for e in model.log], mode_of(model)))
    return out


_SAMPLED_SHAPE = (2, 13)  # GEN_PROMPT (2, 3) and 10 new tokens


def _sampled_problem(got):
    out, prompt = got
    if type(out) is not torch.Tensor or list(out.shape) != list(_SAMPLED_SHAPE):
        return f"the result must hold each prompt row followed by the new tokens; {_size_words(out, _SAMPLED_SHAPE)}"
    if out.dtype.is_floating_point or out.dtype == torch.bool:
        return f"token ids are integers, got {out.dtype}"
    if not torch.equal(out[:, :3].long(), prompt.long()):
        return "the output must start with the prompt"
    if int(out.min()) < 0 or int(out.max()) >= 12:
        return "every new id must be a token of the vocabulary"
    return None


@suite.case(
    "generate",
    "sampling (top_k=5, temperature 0.9): shape (B, T0 + N), the prompt kept",
    points=1,
    check=satisfies(_sampled_problem),
)
def _(ns):
    out, _ = _generate(ns, CausalMean(3, **GEN), GEN_PROMPT, 10, temperature=0.9, top_k=5, generator=generator(3))
    return out, GEN_PROMPT


@suite.case(
    "generate",
    "temperature, top_k, top_p and the generator reach sample_next at every step",
    points=1,
    check=_arguments_problem(8, 0.8, 4, 0.95, 4),
    guard=True,  # it watches what the code did (calls, steps, hooks): a no-op that copies the work passes it
)
def _(ns):
    return _generate(
        ns, CausalMean(4, **GEN), GEN_PROMPT, 8, temperature=0.8, top_k=4, top_p=0.95, generator=generator(4)
    )[1].calls


@suite.case(
    "generate",
    "without sampling arguments sample_next gets temperature 1.0, no top_k, no top_p and no generator",
    points=1,
    check=_arguments_problem(3, 1.0, None, None, None),
    guard=True,  # it watches what the code did (calls, steps, hooks): a no-op that copies the work passes it
)
def _(ns):
    return _generate(ns, CausalMean(5, **GEN), GEN_PROMPT, 3)[1].calls


@suite.case("generate", "max_new_tokens=0 returns the prompt", points=1, check=_tokens(), expected=GEN_PROMPT)
def _(ns):
    return _generate(ns, CausalMean(6, **GEN), GEN_PROMPT, 0, temperature=0)[0]


@suite.case(
    "generate",
    "max_new_tokens=-1 and a 1-D prompt are refused with ValueError",
    points=1,
    check=each_raised(["generate(model, idx, -1)", "generate(model, idx) with a 1-D idx"]),
)
def _(ns):
    model = CausalMean(7, **GEN)
    with replacing(ns, "sample_next", _Chooser()):
        return [
            catch(ns.generate, model, GEN_PROMPT.clone(), -1)["raised"],
            catch(ns.generate, model, GEN_PROMPT[0].clone(), 2)["raised"],
        ]


# ======================================================================== kv_cache

KV_PRE = dict(vocab_size=12, block_size=12, n_layer=3, n_head=2, n_embd=16)
KV_PRE_PROMPT = torch.randint(12, (3, 4), generator=generator(42))
KV_POST = dict(
    vocab_size=12, block_size=12, n_layer=2, n_head=4, n_embd=16, ff_dim=24, norm_first=False, tie_weights=False
)
KV_POST_PROMPT = torch.randint(12, (2, 5), generator=generator(43))
KV_ONE = dict(vocab_size=12, block_size=12, n_layer=2, n_head=2, n_embd=16)
KV_ONE_PROMPT = torch.randint(12, (2, 1), generator=generator(44))


def _cached(ns, model, prompt, new, **kwargs):
    with replacing(ns, "sample_next", _Chooser()) as chooser, replacing(ns, "generate", _zeros_generate):
        out = ns.generate_cached(model, prompt.clone(), new, **kwargs)
    return out, chooser


def _greedy(ns, model, prompt, new):
    """The greedy tokens of a cached generation, and the logits of its first step (the prompt's
    own pass; None if sample_next was never called)."""
    out, chooser = _cached(ns, model, prompt, new, temperature=0)
    return out, chooser.logits[0] if chooser.logits else None


def _greedy_tokens(prompt):
    """The check of ``_greedy``'s output: its tokens as ``_tokens`` checks them, with the public
    suite's decode-step hint when the prompt's own pass is right: the tokens up to the first new
    one, and the first step's logits (rtol and atol 1e-4), which rule out a prefill mistake that
    picks the same first token by chance (unscaled attention does in the pre-norm test)."""
    tokens, decode = _tokens(), _decode_hint(prompt.size(1))

    def when(got, expected):
        return (
            type(got[0]) is torch.Tensor
            and decode.when(got[0].tolist(), expected[0].tolist())
            and near(got[1], expected[1], atol=1e-4, rtol=1e-4)
        )

    hint = Hint(when, decode.text, decode.mistake)

    def check(got, expected, reveal=True):
        verdict = tokens(got[0], expected[0], reveal)
        if verdict.passed or verdict.hint or not hint.when(got, expected):
            return verdict
        return Verdict(False, f"{verdict.message}\nHint: {hint.text}", hint.mistake)

    check.hints = [hint]  # the rules read a check's hints here
    return check


@suite.case(
    "kv_cache",
    "greedy tokens within block_size: pre-norm, 3 layers, tied",
    points=2,
    check=_greedy_tokens(KV_PRE_PROMPT),
    expected=REFERENCE,
)
def _(ns):
    return _greedy(ns, _PartsOnly(ns, 37, **KV_PRE), KV_PRE_PROMPT, 8)


@suite.case(
    "kv_cache",
    "greedy tokens within block_size: post-norm, 4 heads, untied, ff_dim=24",
    points=2,
    check=_greedy_tokens(KV_POST_PROMPT),
    expected=REFERENCE,
    builds_on=("greedy tokens within block_size: pre-norm, 3 layers, tied",),
)
def _(ns):
    return _greedy(ns, _PartsOnly(ns, 30, **KV_POST), KV_POST_PROMPT, 7)


@suite.case(
    "kv_cache",
    "a one-token prompt grown to exactly block_size tokens",
    points=1,
    check=_greedy_tokens(KV_ONE_PROMPT),
    expected=REFERENCE,
)
def _(ns):
    return _greedy(ns, _PartsOnly(ns, 26, **KV_ONE), KV_ONE_PROMPT, 11)


_DECODE_HINT = Hint(
    lambda got, exp: same_shape(got, exp) and near(got[:1], exp[:1], atol=1e-4, rtol=1e-4),
    "the logits of the first step (the prompt's own pass) are right and a later step's are not: " + DECODE_STEP,
    mistake="prefill right, decode step wrong",
)


@suite.case(
    "kv_cache",
    "the logits handed to sample_next are those of the whole sequence so far (post-norm)",
    points=1,
    check=_logged_logits(1e-4, 1e-4, [_DECODE_HINT]),
    expected=REFERENCE,
    guard=True,  # it watches what the code did (calls, steps, hooks): a no-op that copies the work passes it
)
def _(ns):
    return _stacked(_cached(ns, _PartsOnly(ns, 30, **KV_POST), KV_POST_PROMPT, 7, temperature=0)[1])


def _positions_seen(ns, model, prompt, new):
    seen = {}
    hooks = []

    def counting(label, width):
        def hook(module, args, output):
            first = args[0]
            seen[label] = seen.get(label, 0) + first.numel() // (first.size(0) * width)

        return hook

    # tok_emb reads ids (B, T), one number per position; k_proj reads (B, T, C)
    targets = [("tok_emb", model.tok_emb, 1)] + [
        (f"blocks[{i}].attn.k_proj", b.attn.k_proj, b.attn.k_proj.in_features) for i, b in enumerate(model.blocks)
    ]
    for label, module, width in targets:
        seen[label] = 0
        hooks.append(module.register_forward_hook(counting(label, width)))
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
            return (
                f"{count} positions went through {label}, fewer than the {prompt} of the prompt: "
                "call the model's modules (model.tok_emb(ids), attn.k_proj(h)); the test counts what passes through them"
            )
        if count > prompt + new:
            return (
                f"{count} positions went through {label} for a prompt of {prompt} and {new} new tokens: "
                f"a cache computes each position once (at most {prompt + new}), so each new token adds one position"
            )
    return None


@suite.case(
    "kv_cache",
    "one position per new token through tok_emb and every block's k_proj",
    points=2,
    check=satisfies(_positions_problem),
    guard=True,  # it watches what the code did (calls, steps, hooks): a no-op that copies the work passes it
)
def _(ns):
    return _positions_seen(ns, _PartsOnly(ns, 37, **KV_PRE), KV_PRE_PROMPT, 8)


@suite.case(
    "kv_cache",
    "eval mode and no gradients inside; the caller's mode after",
    points=1,
    check=satisfies(lambda got: mode_problem(got, "generate_cached", called="model.tok_emb")),
    guard=True,  # it watches what the code did (calls, steps, hooks): a no-op that copies the work passes it
)
def _(ns):
    out = []
    for mode in (True, False):
        model = _PartsOnly(ns, 7, **KV_ONE, dropout=0.3)
        model.train(mode)
        before = mode_of(model)
        calls = []
        handle = model.tok_emb.register_forward_hook(
            lambda module, args, output: calls.append([mode_of(module), grad_mode()])  # noqa: B023 (the hook is removed in this iteration)
        )
        try:
            _cached(ns, model, KV_ONE_PROMPT, 4, temperature=0)
        finally:
            handle.remove()
        out.append((before, calls, mode_of(model)))
    return out


def _cached_sampled_problem(got):
    out, prompt, total = got
    if type(out) is not torch.Tensor or list(out.shape) != [prompt.size(0), total]:
        return f"the result must hold each prompt row followed by the new tokens; {_size_words(out, (prompt.size(0), total))}"
    if not torch.equal(out[:, : prompt.size(1)].long(), prompt.long()):
        return "the output must start with the prompt"
    if int(out.min()) < 0 or int(out.max()) >= 12:
        return "every new id must be a token of the vocabulary"
    return None


@suite.case(
    "kv_cache",
    "sampling with top_k and a generator: shape (B, T0 + N), the prompt kept",
    points=1,
    check=satisfies(_cached_sampled_problem),
)
def _(ns):
    out, _ = _cached(
        ns, _PartsOnly(ns, 8, **KV_PRE), KV_PRE_PROMPT, 6, temperature=0.8, top_k=4, generator=generator(8)
    )
    return out, KV_PRE_PROMPT, 10


@suite.case(
    "kv_cache",
    "temperature, top_k, top_p and the generator reach sample_next at every step",
    points=1,
    check=_arguments_problem(6, 0.8, 4, 0.9, 8),
    guard=True,  # it watches what the code did (calls, steps, hooks): a no-op that copies the work passes it
)
def _(ns):
    return _cached(
        ns, _PartsOnly(ns, 8, **KV_PRE), KV_PRE_PROMPT, 6, temperature=0.8, top_k=4, top_p=0.9, generator=generator(8)
    )[1].calls


@suite.case(
    "kv_cache",
    "without sampling arguments sample_next gets temperature 1.0, no top_k, no top_p and no generator",
    points=1,
    check=_arguments_problem(4, 1.0, None, None, None),
    guard=True,  # it watches what the code did (calls, steps, hooks): a no-op that copies the work passes it
)
def _(ns):
    return _cached(ns, _PartsOnly(ns, 12, **KV_PRE), KV_PRE_PROMPT, 4)[1].calls


@suite.case(
    "kv_cache",
    "a prompt of 14 tokens, block_size 12: (B, T0 + N) tokens, the prompt kept",
    points=1,
    check=satisfies(_cached_sampled_problem),
)
def _(ns):
    model = _PartsOnly(ns, 13, **KV_ONE)
    model.whole_window = True
    prompt = torch.randint(12, (2, 14), generator=generator(45))
    out, _ = _cached(ns, model, prompt, 3, temperature=0)
    return out, prompt, 17


@suite.case(
    "kv_cache",
    "past block_size it still returns (B, T0 + N) tokens, the prompt kept",
    points=1,
    check=satisfies(_cached_sampled_problem),
)
def _(ns):
    model = _PartsOnly(ns, 9, **KV_ONE)
    model.whole_window = True
    out, _ = _cached(ns, model, KV_PRE_PROMPT, 14, temperature=0)
    return out, KV_PRE_PROMPT, 18


@suite.case("kv_cache", "max_new_tokens=0 returns the prompt", points=1, check=_tokens(), expected=KV_PRE_PROMPT)
def _(ns):
    return _cached(ns, _PartsOnly(ns, 10, **KV_PRE), KV_PRE_PROMPT, 0, temperature=0)[0]


@suite.case(
    "kv_cache",
    "max_new_tokens=-1 and a 1-D prompt are refused with ValueError",
    points=1,
    check=each_raised(["generate_cached(model, idx, -1)", "generate_cached(model, idx) with a 1-D idx"]),
)
def _(ns):
    model = _PartsOnly(ns, 11, **KV_PRE)
    with replacing(ns, "sample_next", _Chooser()), replacing(ns, "generate", _zeros_generate):
        return [
            catch(ns.generate_cached, model, KV_PRE_PROMPT.clone(), -1)["raised"],
            catch(ns.generate_cached, model, KV_PRE_PROMPT[0].clone(), 2)["raised"],
        ]
