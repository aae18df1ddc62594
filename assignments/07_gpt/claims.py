"""The numbers 07's notebook states, each with the measurement that makes it true
(``autograder.authoring.claims``; measured by ``test_claims.py``).

The CPU real run's figures take many minutes of CPU, so they are read from the results
``benchmarks/real_run_cpu.py`` recorded in ``benchmarks/RESULTS_real_run.json``; the CUDA
run's need a GPU, and are read from what ``benchmarks/gpu_check.sh`` recorded on one in
``benchmarks/RESULTS_gpu.json``; everything else is measured here with the reference
solution, in seconds.
"""

import functools
import math
import types

import torch

from autograder.authoring.claims import Claim, public_suite, recorded
from solutions.bpe import byte_bpe_encode, train_byte_bpe
from solutions.data import load_corpus
from solutions.gpt import GPT, GPTConfig, num_parameters, train
from solutions.tokenisation import NGramLM, build_vocab, encode, train_val_split

REAL_RUN = "benchmarks/RESULTS_real_run.json"
GPU_RUN = "benchmarks/RESULTS_gpu.json"


def _parameters(**sizes) -> float:
    """The number of parameters of a GPT of these sizes, for Shakespeare's 65 characters."""
    return sum(p.numel() for p in GPT(GPTConfig(vocab_size=65, **sizes)).parameters())


def _nanogpt_count() -> float:
    """nanoGPT's count of its Shakespeare model: no biases (``bias = False`` in its ``train.py``)
    and the position table left out (``get_num_params``)."""
    model = GPT(GPTConfig(vocab_size=65, block_size=256, n_layer=6, n_head=6, n_embd=384))
    return sum(
        p.numel() for name, p in model.named_parameters() if not name.endswith(".bias") and name != "pos_emb.weight"
    )


class _DefaultInitGPT(GPT):
    """The reference GPT with PyTorch's default initialisation of every layer instead of GPT-2's
    (the tied head keeps the embedding's N(0, 1), as a model that sets no initialisation has)."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__(config)
        for module in self.modules():
            if module is not self and hasattr(module, "reset_parameters"):
                module.reset_parameters()
        self.tok_emb.reset_parameters()  # the tied weight as nn.Embedding draws it


class _threads:
    """Run with this many torch threads, then restore the count (small models run best on one)."""

    def __init__(self, count: int) -> None:
        self.count = count

    def __enter__(self) -> None:
        self.before = torch.get_num_threads()
        torch.set_num_threads(self.count)

    def __exit__(self, *exc) -> None:
        torch.set_num_threads(self.before)


def _training_check(model_class) -> float:
    """The validation loss the public training check measures, for the reference train and this GPT."""
    tests = public_suite("07")
    with _threads(1):
        return tests._train_and_measure(types.SimpleNamespace(GPT=model_class, train=train), tests._sentences(0), 0)


@functools.cache
def _default_init_checks() -> list[float]:
    """The training check's validation loss with PyTorch's default initialisation, on the check's
    own text, for the draws of seeds 0 to 5 (measured: 0.33, 0.31, 0.44, 0.37, 0.36, 0.66)."""
    tests = public_suite("07")
    with _threads(1):
        ns = types.SimpleNamespace(GPT=_DefaultInitGPT, train=train)
        return [tests._train_and_measure(ns, tests._sentences(0), seed) for seed in range(6)]


def _first_loss(model_class) -> float:
    """The first loss of section 3's demo model (V = 65) on random targets."""
    torch.manual_seed(0)
    model = model_class(GPTConfig(vocab_size=65, block_size=32, n_layer=2, n_head=4, n_embd=64))
    idx, targets = torch.randint(65, (4, 32)), torch.randint(65, (4, 32))
    with torch.no_grad():
        return model(idx, targets)[1].item()


def _sentences_split():
    """The training check's characters as ids, split as the test splits them (90 % / 10 %)."""
    text = public_suite("07")._sentences(0)
    chars = sorted(set(text))
    data = [chars.index(c) for c in text]
    cut = int(len(data) * 0.9)
    return chars, data[:cut], data[cut:]


def _unigram_on_sentences() -> float:
    """The validation loss of a model that knows only how often each character occurs."""
    chars, train_ids, val_ids = _sentences_split()
    return math.log(NGramLM(1, len(chars), alpha=0.01).fit(train_ids).perplexity(val_ids))


def _sentence_entropy_per_character() -> float:
    """The public sentences' entropy per character: 4 x 4 x 3 equally likely sentences, over
    their mean length (the floor no model gets below)."""
    text = public_suite("07")._sentences(0)
    sentences = text.count(".")
    return math.log(4 * 4 * 3) / (len(text) / sentences)


@functools.cache
def _shakespeare_ids():
    """Shakespeare's characters as ids, split as 01's and 07's notebooks split them."""
    text = load_corpus("shakespeare", offline_ok=False)
    stoi, _ = build_vocab(text)
    return len(stoi), *train_val_split(torch.tensor(encode(text, stoi), dtype=torch.long))


def _characters_per_bpe_token() -> float:
    """Characters per token of section 8's byte-level BPE (256 merges learned on the first
    100,000 characters) on its validation text, the last tenth of Shakespeare."""
    text = load_corpus("shakespeare", offline_ok=False)
    cut = int(len(text) * 0.9)
    merges = train_byte_bpe(text[:100_000], 256 + 256)
    return (len(text) - cut) / len(byte_bpe_encode(text[cut:], merges))


def _stage01_demo(n: int) -> float:
    """The perplexity of 01's demo n-gram (alpha 0.01, 200,000 training and 20,000 validation characters)."""
    vocab, train_data, val_data = _shakespeare_ids()
    return NGramLM(n, vocab, alpha=0.01).fit(train_data[:200_000].tolist()).perplexity(val_data[:20_000].tolist())


def _five_gram_whole_split() -> float:
    """The validation loss (nats) of the 5-gram (alpha 0.01) counted on the whole training split."""
    vocab, train_data, val_data = _shakespeare_ids()
    return math.log(NGramLM(5, vocab, alpha=0.01).fit(train_data).perplexity(val_data))


def _count(vocab_size: int, n_layer: int, n_embd: int, block_size: int, tie_weights: bool = True) -> int:
    """The parameters of a GPT of these sizes, by the reference's closed form (no model built)."""
    config = GPTConfig(vocab_size, block_size, n_layer=n_layer, n_embd=n_embd, tie_weights=tie_weights)
    return num_parameters(config)  # the heads split the width: their number changes no count


CHARACTERS = {"vocab_size": 65, "n_layer": 4, "n_embd": 128, "block_size": 64}  # the tying question's first
GPT2 = {"vocab_size": 50257, "n_layer": 12, "n_embd": 768, "block_size": 1024}


def _tying_share(sizes: dict) -> float:
    """The percentage of the untied model's parameters that tying saves."""
    untied = _count(**sizes, tie_weights=False)
    return 100 * (untied - _count(**sizes)) / untied


CLAIMS = [
    # section 3: initialisation
    Claim("(4.18 with the course's code", lambda: _first_loss(GPT), low=4.175, high=4.185),
    Claim("against $\\ln 65 = 4.17$", lambda: math.log(65), low=4.165, high=4.175),
    Claim("the same model starts at a loss of about 41", lambda: _first_loss(_DefaultInitGPT), low=38, high=44),
    Claim(
        "validation loss of about 0.33 with GPT-2's initialisation", lambda: _training_check(GPT), low=0.31, high=0.35
    ),
    Claim("between 0.3 and 0.7 with PyTorch's default", lambda: min(_default_init_checks()), low=0.3, high=0.7),
    Claim("between 0.3 and 0.7 with PyTorch's default", lambda: max(_default_init_checks()), low=0.3, high=0.7),
    # section 6: perplexity
    Claim("from 28.8 (the unigram)", lambda: _stage01_demo(1), low=28.75, high=28.85),
    Claim("down to 9.75 (the 4-gram)", lambda: _stage01_demo(4), low=9.745, high=9.755),
    Claim("reaches 5.87 (a loss of 1.770 nats)", lambda: math.exp(_five_gram_whole_split()), low=5.865, high=5.875),
    Claim("reaches 5.87 (a loss of 1.770 nats)", _five_gram_whole_split, low=1.7695, high=1.7705),
    # section 7: the training check
    Claim("$\\ln V \\approx 2.9$", lambda: math.log(len(_sentences_split()[0])), low=2.85, high=2.95),
    Claim("how often each character occurs reaches about 2.6", _unigram_on_sentences, low=2.5, high=2.7),
    Claim("the reference reaches about 0.33", lambda: _training_check(GPT), low=0.31, high=0.35),
    Claim("no model gets below about 0.2", _sentence_entropy_per_character, low=0.17, high=0.23),
    # section 8: the real run
    Claim(
        "dropout 0.2, 10.8 million parameters",
        lambda: _parameters(block_size=256, n_layer=6, n_head=6, n_embd=384),
        low=10.75e6,
        high=10.85e6,
    ),
    Claim("nanoGPT reports 10.65 million", _nanogpt_count, low=10.645e6, high=10.655e6),
    Claim("a BPE token holds about 1.8 characters", _characters_per_bpe_token, low=1.75, high=1.85),
    Claim(
        "characters (0.8 million parameters), 5,000 steps",
        lambda: _parameters(block_size=128, n_layer=4, n_head=4, n_embd=128),
        low=0.75e6,
        high=0.85e6,
    ),
    Claim(
        "the cell needed 1034 seconds of CPU time",
        recorded(REAL_RUN, "real_run", "cpu_seconds"),
        low=1033.5,
        high=1034.5,
    ),
    Claim("kept the weights of step 4,500", recorded(REAL_RUN, "real_run", "best_step"), low=4500, high=4500),
    Claim(
        "an exact validation loss of 1.526 nats per character",
        recorded(REAL_RUN, "real_run", "exact_val_loss"),
        low=1.5255,
        high=1.5265,
    ),
    Claim("0.24 below the course's best n-gram", recorded(REAL_RUN, "margin"), low=0.235, high=0.245),
    Claim(
        "training split, 1.770; see section 6", recorded(REAL_RUN, "best_ngram", "val_loss"), low=1.7695, high=1.7705
    ),
    Claim(
        "that is about 9 minutes if the two threads halve the work",
        recorded(REAL_RUN, "laptop_minutes"),
        low=8.5,
        high=9.5,
    ),
    Claim(
        "on one thread, 17 minutes", lambda: recorded(REAL_RUN, "real_run", "cpu_seconds")() / 60, low=16.5, high=17.5
    ),
    Claim("the cell took 56 s", recorded(GPU_RUN, "real_run_07", "seconds"), low=55.5, high=56.5),
    Claim("kept the weights of step 800, the last", recorded(GPU_RUN, "real_run_07", "best_step"), low=800, high=800),
    Claim(
        "an exact validation loss of 1.628 nats per character",
        recorded(GPU_RUN, "real_run_07", "exact_val_loss"),
        low=1.628,
        high=1.628,
    ),
    Claim(
        "0.14 below the course's best n-gram (1.770, section 6)",
        lambda: recorded(REAL_RUN, "best_ngram", "val_loss")() - recorded(GPU_RUN, "real_run_07", "exact_val_loss")(),
        low=0.135,
        high=0.145,
    ),
    Claim(
        "but 0.10 above the CPU run below",
        lambda: (
            recorded(GPU_RUN, "real_run_07", "exact_val_loss")() - recorded(REAL_RUN, "real_run", "exact_val_loss")()
        ),
        low=0.095,
        high=0.105,
    ),
    Claim(
        "56 s times 10.5 is 9.8 minutes", recorded(GPU_RUN, "real_run_07", "t4_minutes_estimate"), low=9.75, high=9.85
    ),
    Claim("the character model holds 809,856 parameters tied", lambda: _count(**CHARACTERS), 809_856, 809_856),
    Claim("about 1% of the untied 818,176", lambda: _count(**CHARACTERS, tie_weights=False), 818_176, 818_176),
    Claim("about 1% of the untied 818,176", lambda: _tying_share(CHARACTERS), low=0.5, high=1.5),
    Claim("both shares, about right (1% and about a quarter)", lambda: _tying_share(CHARACTERS), 0.5, 1.5),
    Claim("both shares, about right (1% and about a quarter)", lambda: _tying_share(GPT2), low=22, high=28),
    Claim("GPT-2 small holds 124,439,808 tied", lambda: _count(**GPT2), low=124_439_808, high=124_439_808),
    Claim("about 24% of the untied 163 million", lambda: _tying_share(GPT2), low=23.5, high=24.5),
    Claim("about 24% of the untied 163 million", lambda: _count(**GPT2, tie_weights=False) / 1e6, 162.5, 163.5),
]
