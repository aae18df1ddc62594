"""The numbers 10's notebook states, each with the measurement that makes it true
(``autograder.authoring.claims``; measured by ``test_claims.py``).

The exact-match accuracy of the reference on ``seq2seq_works``, measured as the grader
measures it: the reference notebook graded on that question's public and hidden training
tests (the grader's own blocks, PyTorch's default initialisation, 200 steps), its
predictions scored against the unseen strings of each.
"""

import functools

from autograder.authoring.claims import Claim, public_suite
from autograder.build.fixtures import run_reference
from autograder.course import get_stage


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


CLAIMS = [
    # section 8: the last check
    Claim("The reference reaches 97 to 100%", lambda: _reference_accuracy()[0], low=0.97, high=1.0),
    Claim("The reference reaches 97 to 100%", lambda: _reference_accuracy()[1], low=0.97, high=1.0),
]
