"""The numbers 10's notebook states, each with the measurement that makes it true
(``autograder.authoring.claims``; measured by ``test_claims.py``).

The exact-match accuracy of the reference on ``seq2seq_works``, measured as the grader
measures it: the reference notebook graded on that question's public and hidden training
tests (the grader's own blocks, PyTorch's default initialisation, 200 steps), its
predictions scored against the unseen strings of each.

The reference run that the rubric of the written question ``both_sides`` reports: section
4's masked language model at the notebook's sizes (2 blocks of width 64, 600 steps of
AdamW at 3e-3 on batches of 64), seeded as its cell is, on one thread, in about 8 s of
CPU: the guesses for the two probes' masked words before training and after.
"""

import functools
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder.authoring.claims import Claim, public_suite, rounded
from autograder.build.fixtures import run_reference
from autograder.course import get_stage
from solutions.encoders import Encoder, mlm_mask_tokens


@functools.cache
def _reference_accuracy() -> tuple[float, float]:
    """The share of unseen strings the reference gets exactly right: (public test, hidden test)."""
    stage = get_stage("10")
    tests = stage.tests()
    training = [c for c in tests.cases if c.qid == "seq2seq_works" and c.name.startswith("200 steps")]
    outcome = run_reference(stage, tests, [c.key for c in training])
    public = public_suite("10")
    shares = {}
    for case in training:
        predictions = outcome.values[case.key]
        if case.public:
            targets = public._TEST_TGT
        else:  # the hidden test returns its seeds with its predictions
            predictions, train_seed, test_seed = predictions
            _, _, seen = public._reversal_pairs(2000, train_seed)
            _, targets, _ = public._reversal_pairs(200, test_seed, seen)
        shares[case.public] = ((predictions == targets) | (targets == 0)).all(dim=1).float().mean().item()
    return shares[True], shares[False]


@functools.cache
def _masked_lm() -> dict[str, float]:
    """Section 4's training cell, as the notebook runs it: the three guesses it prints for each
    probe before training (``"before"``, all six), and after 600 steps the probability of
    "barks" after "dog" and of "owl" before "hoots"."""
    torch.set_num_threads(1)
    animals = {"dog": "barks", "cat": "meows", "cow": "moos", "duck": "quacks", "owl": "hoots", "sheep": "bleats"}
    adjectives = ["old", "small", "lazy", "brown", "happy"]
    adverbs = ["loudly", "softly", "again", "today"]
    words = ["[PAD]", "[CLS]", "[SEP]", "[MASK]", "the", *adjectives, *animals, *animals.values(), *adverbs]
    word_id = {w: i for i, w in enumerate(words)}
    pad_id, cls_id, sep_id, mask_id = 0, 1, 2, 3
    rng = random.Random(0)

    def sentence_ids(text: str) -> list[int]:
        return [cls_id] + [word_id[w] for w in text.split()] + [sep_id]

    def sentence() -> list[int]:
        animal = rng.choice(list(animals))
        return sentence_ids(f"the {rng.choice(adjectives)} {animal} {animals[animal]} {rng.choice(adverbs)}")

    corpus = torch.tensor([sentence() for _ in range(2000)])
    torch.manual_seed(0)
    encoder = Encoder(len(words), max_len=8, n_layer=2, n_head=4, n_embd=64, pad_id=pad_id)
    head = nn.Linear(64, len(words))
    probes = torch.tensor([sentence_ids("the lazy dog barks loudly"), sentence_ids("the old owl hoots softly")])
    probes[0, 4] = mask_id  # "barks"
    probes[1, 3] = mask_id  # "owl"
    where = (probes == mask_id).nonzero()[:, 1]  # the masked position of each probe

    def guesses() -> torch.Tensor:
        """The probabilities at each probe's masked position, (2, vocabulary)."""
        encoder.eval()
        with torch.no_grad():
            return F.softmax(head(encoder(probes)), dim=-1)[torch.arange(2), where]

    before = guesses().topk(3).values  # the three guesses show_predictions prints per probe
    opt = torch.optim.AdamW([*encoder.parameters(), *head.parameters()], lr=3e-3)
    masking = torch.Generator().manual_seed(1)
    encoder.train()
    for _ in range(600):
        batch = corpus[torch.randint(len(corpus), (64,), generator=masking)]
        inputs, labels = mlm_mask_tokens(
            batch, mask_id, len(words), special_ids=(pad_id, cls_id, sep_id), generator=masking
        )
        loss = F.cross_entropy(head(encoder(inputs)).reshape(-1, len(words)), labels.reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
    after = guesses()
    return {
        "before_min": before.min().item(),
        "before_max": before.max().item(),
        "barks": after[0, word_id["barks"]].item(),
        "owl": after[1, word_id["owl"]].item(),
    }


def _mlm(key: str):
    return lambda: _masked_lm()[key]


SPREAD = "before training its guesses are spread near 0.1"


@functools.cache
def _corruption() -> dict[str, float]:
    """The shares (in %) of the chosen positions that the reference's ``mlm_mask_tokens`` gives a
    random token or leaves as they were, over about 30,000 chosen positions of a 1,000-token
    vocabulary (a random draw that lands on the original token counts as kept)."""
    ids = torch.randint(10, 1000, (400, 512), generator=torch.Generator().manual_seed(0))
    inputs, labels = mlm_mask_tokens(ids, mask_id=3, vocab_size=1000, generator=torch.Generator().manual_seed(1))
    chosen = labels != -100
    kept = chosen & (inputs == ids)
    randomised = chosen & (inputs != ids) & (inputs != 3)
    return {"random": 100 * (randomised.sum() / chosen.sum()).item(), "kept": 100 * (kept.sum() / chosen.sum()).item()}


CLAIMS = [
    # the rubric of mask_rule restates BERT's rule, which the reference's mlm_mask_tokens follows
    Claim("random tokens (10%)", lambda: _corruption()["random"], low=9.5, high=10.5),
    Claim("kept tokens (10%)", lambda: _corruption()["kept"], low=9.5, high=10.5),
    # section 8: the last check
    Claim("The reference reaches 97 to 100%", lambda: _reference_accuracy()[0], low=0.97, high=1.0),
    Claim("The reference reaches 97 to 100%", lambda: _reference_accuracy()[1], low=0.97, high=1.0),
    # section 4: the rubric of both_sides
    rounded('after 600 steps the model gives "barks" 1.00 after "dog"', 1.00, 2, _mlm("barks")),
    rounded('"owl" 0.99 before "hoots"', 0.99, 2, _mlm("owl")),
    # "near 0.1": every guess printed before training (three per probe) rounds to 0.1 at one
    # decimal; "near" would allow a little more, the measurement needs none of it
    Claim(SPREAD, _mlm("before_min"), low=0.05, high=0.15),
    Claim(SPREAD, _mlm("before_max"), low=0.05, high=0.15),
]
