"""Public tests of stage 08_generation: students run these in the notebook with check().

The tests of one question do not lean on the student's other answers: the generation
tests run on small stand-in models of the grader's own (the kit's ``Bigram`` made to
always prefer the next token, and a GPT's parts with no GPT forward pass), never on the
student's GPT, and they swap in a chooser of the grader's own for the student's
`sample_next` while they run (it notes what it is given and picks the most likely token).

This file is copied into the student's notebook, so it holds no reference code. Probes
return raw outputs (tensors, numbers, strings); every comparison happens in the checks.
Tolerances: sampling frequencies within 0.06 of their probability in 1000 draws (about 4
standard deviations).
"""

import torch

from autograder.kit import (
    Bigram,
    Hint,
    Suite,
    catch,
    dtypes,
    equal,
    generator,
    mode_of,
    mode_problem,
    randn,
    replacing,
    satisfies,
    set_parameters,
    stand_in_config,
)

suite = Suite(public=True)


class _Chooser:
    """The grader's stand-in for sample_next in the generation tests: it notes its arguments
    and the logits it is handed, and returns the most likely token of each row, whatever
    they say (it filters and draws nothing)."""

    def __init__(self):
        self.logits = []
        self.calls = []

    def __call__(self, logits, temperature=1.0, top_k=None, top_p=None, generator=None):
        self.logits.append(logits.detach().float().cpu().clone())
        seed = None if generator is None else generator.initial_seed()
        self.calls.append([float(temperature), top_k, top_p, seed])
        return logits.argmax(dim=-1, keepdim=True)


# ---------------------------------------------------------------- sampling

LOGITS = torch.tensor([[3.0, 0.5, 2.0, -1.0, 1.0, 0.0]])  # probabilities about 0.61, 0.05, 0.22, 0.01, 0.08, 0.03
GREEDY_LOGITS = randn(4, 9, seed=70)


def _draws(ns, n, seed, **kwargs):
    out = ns.sample_next(LOGITS.expand(n, -1).clone(), generator=generator(seed), **kwargs)
    return sorted(set(out.flatten().tolist()))


@suite.case(
    "sampling",
    "temperature 0 picks the most likely token of every row, shape (B, 1)",
    points=1,
    check=equal(dtype=None),
    expected=GREEDY_LOGITS.argmax(dim=-1, keepdim=True),
)
def _(ns):
    return ns.sample_next(GREEDY_LOGITS.clone(), temperature=0)


@suite.case(
    "sampling",
    "the tokens are torch.long, greedy or drawn",
    points=1,
    check=dtypes(),
    expected=[torch.long, torch.long],
)
def _(ns):
    return [
        ns.sample_next(GREEDY_LOGITS.clone(), temperature=0),
        ns.sample_next(LOGITS.clone(), generator=generator(9)),
    ]


@suite.case(
    "sampling",
    "top_k=2 draws only the two most likely tokens",
    points=1,
    check=equal(
        [
            Hint(
                lambda got, exp: isinstance(got, list) and len(got) == 1,
                "top_k=2 keeps two tokens, not one",
                mistake="top_k keeps one token too few",
            )
        ]
    ),
    expected=[0, 2],
)
def _(ns):
    return _draws(ns, 400, 0, top_k=2)


_CROSSING_HINT = Hint(
    lambda got, exp: isinstance(got, list) and got[1:] == [[0]],
    "a token stays if the mass of the tokens before it is still below p: the one that crosses p is kept",
    mistake="top-p drops the crossing token",
)


@suite.case(
    "sampling",
    "top_p keeps the token that carries the mass across p",
    points=1,
    check=equal([_CROSSING_HINT]),
    expected=[[0], [0, 2]],
)
def _(ns):
    # token 0 holds about 0.61, tokens 0 and 2 together about 0.83
    return [_draws(ns, 400, 1, top_p=0.5), _draws(ns, 400, 2, top_p=0.7)]


# softmax(LOGITS / 0.25) and softmax(LOGITS / 4), rounded
_SHARP = [0.9816, 0.0, 0.018, 0.0, 0.0003, 0.0]
_FLAT = [0.2659, 0.1423, 0.2071, 0.0978, 0.1613, 0.1256]


def _temperature_problem(got):
    for label, counts, want in (("0.25", got[0], _SHARP), ("4", got[1], _FLAT)):
        total = sum(counts)
        for token, (count, p) in enumerate(zip(counts, want)):
            if abs(count / total - p) > 0.06:
                return (
                    f"at temperature {label} token {token} came {count / total:.3f} of the time in {total} draws, but softmax(logits / {label}) "
                    f"gives it {p:.3f}: divide the logits by the temperature before the softmax"
                )
    return None


@suite.case(
    "sampling",
    "temperature 0.25 sharpens and 4 flattens: frequencies follow softmax(logits / temperature)",
    points=1,
    check=satisfies(_temperature_problem),
)
def _(ns):
    out = []
    for seed, temperature in ((3, 0.25), (4, 4.0)):
        draws = ns.sample_next(LOGITS.expand(1000, -1).clone(), temperature=temperature, generator=generator(seed))
        out.append(torch.bincount(draws.flatten(), minlength=6).tolist())
    return out


@suite.case(
    "sampling",
    "with both, top_k is applied first: top_k=2, top_p=0.7 keeps token 0 alone",
    points=1,
    check=equal(
        [
            Hint(
                lambda got, exp: got == [0, 2],
                "apply top_k first; top_p then works on the probabilities of the tokens top_k kept, renormalised",
                mistake="top-p before top-k",
            )
        ]
    ),
    expected=[0],
    guard=True,  # it watches what the code did (calls, steps, optimiser hooks), which a no-op copying the work can pass
)
def _(ns):
    # after top_k=2 token 0 holds 0.73 of the mass, enough for p=0.7 alone (on all six tokens it holds 0.61)
    return _draws(ns, 400, 5, top_k=2, top_p=0.7)


@suite.case(
    "sampling",
    "each row of a batch is filtered on its own (top_k=2)",
    points=1,
    check=equal(),
    expected=[[0, 1], [4, 5]],
)
def _(ns):
    rows = torch.tensor([[4.0, 3.5, 3.0, 2.5, -2.0, -3.0], [-3.0, -2.0, -1.0, 0.0, 1.0, 1.5]])
    out = ns.sample_next(rows.repeat(200, 1), top_k=2, generator=generator(6))
    return [sorted(set(out[0::2].flatten().tolist())), sorted(set(out[1::2].flatten().tolist()))]


def _same_draws(got):
    first, second = got
    if (
        type(first) is not torch.Tensor
        or type(second) is not torch.Tensor
        or first.shape != second.shape
        or not torch.equal(first, second)
    ):
        return "two calls with generators seeded alike gave different draws: pass generator= to torch.multinomial"
    return None


@suite.case(
    "sampling",
    "the draws come from the generator (the same seed, the same draws)",
    points=1,
    check=satisfies(_same_draws),
    guard=True,  # zeros are the same draws twice: it counts only when a test of the draws passes
)
def _(ns):
    first = ns.sample_next(torch.zeros(64, 20), generator=generator(7))
    torch.rand(7)  # move the global generator between the calls
    return first, ns.sample_next(torch.zeros(64, 20), generator=generator(7))


@suite.case(
    "sampling",
    "a negative temperature, top_k=0 and top_p=1.5 raise ValueError",
    points=1,
    check=equal(),
    expected=["ValueError", "ValueError", "ValueError"],
)
def _(ns):
    return [
        catch(ns.sample_next, LOGITS.clone(), temperature=-1.0)["raised"],
        catch(ns.sample_next, LOGITS.clone(), top_k=0)["raised"],
        catch(ns.sample_next, LOGITS.clone(), top_p=1.5)["raised"],
    ]


# ---------------------------------------------------------------- generate


def _successor(vocab_size, block_size, dropout=0.0):
    """A bigram stand-in whose most likely next token is always (current + 1) % V."""
    model = Bigram(vocab_size, block_size, dropout)
    with torch.no_grad():
        model.table.weight.copy_(4.0 * torch.eye(vocab_size).roll(1, dims=1))
    return model


@suite.case(
    "generate",
    "greedy continuation: shape (B, T0 + N), the prompt kept",
    points=1,
    check=equal(
        [
            Hint(
                lambda got, exp: isinstance(got, list) and len(got) == 2 and len(got[0]) == 5,
                "return the prompt followed by the new tokens, not the new tokens alone",
                mistake="prompt dropped",
            )
        ]
    ),
    expected=[[1, 2, 3, 4, 5, 6, 0], [5, 6, 0, 1, 2, 3, 4]],
)
def _(ns):
    model = _successor(7, 8)
    with replacing(ns, "sample_next", _Chooser()):
        out = ns.generate(model, torch.tensor([[1, 2], [5, 6]]), 5, temperature=0)
    return out.tolist()


@suite.case(
    "generate",
    "a prompt longer than block_size is cropped to its last block_size tokens",
    points=1,
    check=equal(),
    expected=[[0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 1, 2]],
    builds_on=("greedy continuation: shape (B, T0 + N), the prompt kept",),
)
def _(ns):
    model = _successor(9, 4)
    with replacing(ns, "sample_next", _Chooser()):
        out = ns.generate(model, torch.arange(7).unsqueeze(0), 5, temperature=0)
    return out.tolist()


@suite.case(
    "generate",
    "eval mode and no gradients inside, the caller's mode after",
    points=1,
    check=satisfies(lambda got: mode_problem(got, "generate")),
)
def _(ns):
    runs = []
    for mode in (True, False):  # a caller that left the model in training mode, then one that left it in eval mode
        model = _successor(7, 8, dropout=0.5)
        model.train(mode)
        before = mode_of(model)
        with replacing(ns, "sample_next", _Chooser()):
            ns.generate(model, torch.tensor([[3]]), 4, temperature=0)
        runs.append([before, [[c["mode"], c["grad"]] for c in model.calls], mode_of(model)])
    return runs


def _arguments_problem(count):
    def test(got):
        if len(got) != count:
            return f"{count} new tokens need {count} calls of sample_next, there were {len(got)}"
        for temperature, top_k, top_p, seed in got:
            if [temperature, top_k, top_p] != [0.7, 3, 0.9]:
                return f"sample_next was called with temperature={temperature}, top_k={top_k}, top_p={top_p}; pass on temperature=0.7, top_k=3, top_p=0.9 as given"
            if seed != 11:
                return "sample_next did not get the generator: pass it on as generator=generator"
        return None

    return test


@suite.case(
    "generate",
    "temperature, top_k, top_p and the generator are passed on to sample_next",
    points=1,
    check=satisfies(_arguments_problem(4)),
    guard=True,  # it watches what the code did (calls, steps, optimiser hooks), which a no-op copying the work can pass
)
def _(ns):
    model = _successor(7, 8)
    with replacing(ns, "sample_next", _Chooser()) as chooser:
        ns.generate(model, torch.tensor([[3]]), 4, temperature=0.7, top_k=3, top_p=0.9, generator=generator(11))
    return chooser.calls


# ---------------------------------------------------------------- kv_cache


class _PartsOnly(torch.nn.Module):
    """A GPT's parts without a GPT's forward pass: a cached generation must use the parts.

    Past block_size a cached generation may recompute the cropped window with the model's
    forward; for that test only (`whole_window`), the forward returns logits of the right
    shape, from the embeddings alone.
    """

    whole_window = False

    def forward(self, idx, targets=None):
        if not self.whole_window:
            raise ValueError(
                "this test model has no forward pass: within block_size, run the prompt and each new token through its parts and the cache"
            )
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(idx.size(1), device=idx.device))
        return self.head(self.ln_f(x)), None


def _parts(ns, seed, norm_first=True, scale=1.0):
    """What a cached generation reads, and nothing more: a config, the two embeddings, two
    of the given blocks, ln_f and an untied head, with fixed weights."""
    model = _PartsOnly()
    model.config = stand_in_config(
        vocab_size=10, block_size=12, n_layer=2, n_head=2, n_embd=16, tie_weights=False, norm_first=norm_first
    )
    model.tok_emb = torch.nn.Embedding(10, 16)
    model.pos_emb = torch.nn.Embedding(12, 16)
    model.blocks = torch.nn.ModuleList([ns.TransformerBlock(16, 2, 64, norm_first=norm_first) for _ in range(2)])
    model.ln_f = ns.LayerNorm(16)
    model.head = torch.nn.Linear(16, 10, bias=False)
    set_parameters(model, seed, scale=scale)
    return model


DECODE_STEP = (
    "look first at the decode step, at what one new token's pass uses: the position it is embedded at (its place "
    "in the whole sequence) and the cache (the keys and values of every token before it, its own appended)"
)


def _decode_hint(prompt_length):
    """The hint for greedy tokens (lists) whose prompt and first new token are right and a later
    one is not: the first new token comes from the prompt's pass, the later ones from the decode step."""

    def when(got, expected):
        return (
            isinstance(got, list)
            and len(got) == len(expected)
            and all(
                isinstance(row, list)
                and len(row) == len(want)
                and row[: prompt_length + 1] == want[: prompt_length + 1]
                for row, want in zip(got, expected)
            )
        )

    return Hint(
        when,
        "the first new token (chosen from the prompt's own pass) is right and a later one is not: " + DECODE_STEP,
        mistake="prefill right, decode step wrong",
    )


@suite.case(
    "kv_cache",
    "within block_size, greedy decoding gives exactly the tokens of plain generation",
    points=1,
    check=equal([_decode_hint(3)]),
    expected=[[4, 1, 8, 5, 2, 5, 5, 5, 5, 5, 5], [2, 2, 7, 5, 2, 2, 2, 2, 5, 2, 5]],
)
def _(ns):
    model = _parts(ns, 18)
    with replacing(ns, "sample_next", _Chooser()):
        out = ns.generate_cached(model, torch.tensor([[4, 1, 8], [2, 2, 7]]), 8, temperature=0)
    return out.tolist()


@suite.case(
    "kv_cache",
    "post-norm blocks (norm_first=False): the tokens of plain generation",
    points=1,
    check=equal([_decode_hint(3)]),
    expected=[[3, 9, 0, 1, 1, 1, 1, 1, 1, 1], [6, 6, 1, 8, 8, 8, 1, 8, 1, 1]],
    builds_on=("within block_size, greedy decoding gives exactly the tokens of plain generation",),
)
def _(ns):
    model = _parts(ns, 45, norm_first=False)
    with replacing(ns, "sample_next", _Chooser()):
        out = ns.generate_cached(model, torch.tensor([[3, 9, 0], [6, 6, 1]]), 7, temperature=0)
    return out.tolist()


def _count_problem(got):
    prompt, new = got["prompt"], got["new"]
    for name, seen in got["positions"].items():
        if seen < prompt:
            return f"only {seen} positions went through {name}, fewer than the prompt's {prompt}: call the model's modules (the test counts their calls)"
        if seen > prompt + new:
            return (
                f"{seen} positions went through {name} for a prompt of {prompt} and {new} new tokens; "
                f"a cache runs each position once (at most {prompt + new})"
            )
    return None


def _count_positions(ns, model, prompt, new):
    counts = {}
    handles = []

    def counter(name, width):
        def hook(module, args, output):
            counts[name] = counts.get(name, 0) + args[0].numel() // (args[0].size(0) * width)

        return hook

    watched = {"tok_emb": (model.tok_emb, 1)}  # ids (B, T): one number per position
    watched.update(
        {
            f"blocks[{i}].attn.k_proj": (block.attn.k_proj, block.attn.k_proj.in_features)
            for i, block in enumerate(model.blocks)
        }
    )
    for name, (module, width) in watched.items():
        counts[name] = 0
        handles.append(module.register_forward_hook(counter(name, width)))
    try:
        with replacing(ns, "sample_next", _Chooser()):
            ns.generate_cached(model, prompt, new, temperature=0)
    finally:
        for handle in handles:
            handle.remove()
    return {"prompt": prompt.size(1), "new": new, "positions": counts}


@suite.case(
    "kv_cache",
    "each new token runs one position through the model",
    points=1,
    check=satisfies(_count_problem),
    guard=True,  # it watches what the code did (calls, steps, hooks): a no-op that copies the work passes it
)
def _(ns):
    return _count_positions(ns, _parts(ns, 6), torch.tensor([[1, 2, 3, 4]]), 6)


def _past_block_problem(got):
    out, prompt = got
    if type(out) is not torch.Tensor or list(out.shape) != [2, 20]:
        return f"for a (2, 4) prompt and 16 new tokens expected a (2, 20) tensor, got {list(getattr(out, 'shape', []))}"
    if not torch.equal(out[:, :4], prompt):
        return "the output must start with the prompt"
    if int(out.min()) < 0 or int(out.max()) >= 10:
        return "every new id must be a token of the vocabulary"
    return None


@suite.case(
    "kv_cache",
    "past block_size (12) it still returns (B, T0 + N) tokens, the prompt kept",
    points=1,
    check=satisfies(_past_block_problem),
)
def _(ns):
    model = _parts(ns, 8)
    model.whole_window = True
    prompt = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])
    with replacing(ns, "sample_next", _Chooser()):
        return ns.generate_cached(model, prompt.clone(), 16, temperature=0), prompt
