"""Every stage held to every rule of ``gptcourse check-stage`` (``autograder.authoring.rules``):
one loop over the same list the command runs, a test per stage and rule.

The graded rules read each stage's catalogue graded once per session (``graded_catalogue``).
How each rule fails is shown in ``test_authoring.py`` (scratch copies of a stage),
``test_stage_feedback.py`` and ``test_precision.py`` (small cases made to break it).

``NOT_YET`` lists the stages that the precision rules (issues 25 and 29) still find
problems in, each with what is missing: those tests are expected to fail, strictly, so
that a stage brought into compliance fails here until its line is deleted.
"""

import re

import pytest

from autograder.authoring.rules import RULES, apply, get_rule
from autograder.authoring.static_rules import Subject
from autograder.course import ROOT, all_stages

STAGES = [s for s in all_stages()]
NOT_YET: dict[tuple[str, str], str] = {
    (stage, rule): reason
    for stage, rule, reason in [
        (
            "01",
            "no-ops earn nothing",
            "stage 01: a no-op passes tests that are no guards (encode_decode's round trips for a stub returning its input; get_batch's seeding and shape tests for zeros)",
        ),
        (
            "01",
            "dtype slips cost only their clause",
            "stage 01: no dtype clauses; value tests of train_val_split, get_batch (int64) and kneser_ney (float32) also test the dtype",
        ),
        (
            "01",
            "every clause has a mistake",
            "stage 01: clause rows have no ids (49 rows in 6 questions) and no mistake declares the clauses it breaks (44 mistakes)",
        ),
        (
            "02",
            "no-ops earn nothing",
            "stage 02: a no-op passes tests that are no guards (byte_bpe's round trip for a stub returning its input; count_pairs' empty cases for zeros)",
        ),
        (
            "02",
            "every clause has a mistake",
            "stage 02: clause rows have no ids (64 rows in 8 questions) and no mistake declares the clauses it breaks (47 mistakes)",
        ),
        (
            "04",
            "no-ops earn nothing",
            "stage 04: a no-op passes tests that are no guards (shift's 'the caller's tensor is not modified'; causal_mask T=1 and T=0 and padding_mask with no padding for zeros)",
        ),
        (
            "04",
            "dtype slips cost only their clause",
            "stage 04: no dtype clauses; value tests of shift, pad_and_shift (int64) and lm_loss (float32) also test the dtype (16 tests)",
        ),
        (
            "04",
            "every clause has a mistake",
            "stage 04: clause rows have no ids (36 rows in 6 questions) and no mistake declares the clauses it breaks (33 mistakes)",
        ),
        (
            "05",
            "no-ops earn nothing",
            "stage 05: a no-op passes tests that are no guards (heads' round trips; mha's bias=False, causal-mask and shape tests)",
        ),
        (
            "05",
            "dtype slips cost only their clause",
            "stage 05: no dtype clauses; value tests of heads and mha also test the dtype (23 tests)",
        ),
        (
            "05",
            "every clause has a mistake",
            "stage 05: clause rows have no ids (30 rows in 2 questions) and no mistake declares the clauses it breaks (19 mistakes)",
        ),
        (
            "08",
            "every test serves a clause",
            "stage 08: 22 tests are cited by no clause (lstm_cell, lstm_layer, ...: the clause tables name older test names)",
        ),
        (
            "08",
            "checks never fault",
            "stage 08: the check of 'rnn_lm: later tokens leave earlier logits unchanged' raises IndexError on a no-op's output (its input)",
        ),
        (
            "08",
            "no-ops earn nothing",
            "stage 08: a no-op passes tests that are no guards (lstm_cell's fresh parameters, lstm_layer's shapes, rnn_lm's state and loss=None, tbptt's steps and clipping, sample_rnn's seeding)",
        ),
        (
            "08",
            "dtype slips cost only their clause",
            "stage 08: no dtype clauses; value tests of every question also test the dtype (31 tests)",
        ),
        (
            "08",
            "every clause has a mistake",
            "stage 08: clause rows have no ids (52 rows in 6 questions) and no mistake declares the clauses it breaks (50 mistakes)",
        ),
        (
            "09",
            "every test serves a clause",
            "stage 09: 34 tests are cited by no clause (encoder, classifier, ...: the clause tables name older test names)",
        ),
        (
            "09",
            "checks never fault",
            "stage 09: the checks of mlm_mask's seeding and prob=0/prob=1 tests index or unpack a no-op's output (None, its input) and raise",
        ),
        (
            "09",
            "no-ops earn nothing",
            "stage 09: a no-op passes tests that are no guards (padding and causality properties of encoder, cross_attention, decoder_block and seq2seq; seeding of mlm_mask and train_seq2seq; greedy's mode restored)",
        ),
        (
            "09",
            "dtype slips cost only their clause",
            "stage 09: no dtype clauses; value tests of every question with stubs also test the dtype (33 tests)",
        ),
        (
            "09",
            "every clause has a mistake",
            "stage 09: clause rows have no ids (70 rows in 7 questions) and no mistake declares the clauses it breaks (49 mistakes)",
        ),
    ]
}


def _params(graded: bool) -> list:
    """``(stage, rule)`` pairs of the static or graded rules, those in ``NOT_YET`` marked to fail."""
    params = []
    for stage in STAGES:
        for rule in (r for r in RULES if r.graded == graded):
            reason = NOT_YET.get((stage.id[:2], rule.name))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            params.append(pytest.param(stage, rule.name, marks=marks, id=f"{stage.id}-{rule.name}"))
    return params


def test_every_entry_of_not_yet_names_a_stage_and_a_rule():
    stages, rules = {s.id[:2] for s in STAGES}, {r.name for r in RULES}
    assert [key for key in NOT_YET if key[0] not in stages or key[1] not in rules] == []


@pytest.mark.parametrize("stage,rule", _params(graded=False))
def test_static_rule(stage, rule):
    problems = apply(get_rule(rule), Subject(stage))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("stage,rule", _params(graded=True))
def test_graded_rule(stage, rule, graded_catalogue):
    problems = apply(get_rule(rule), graded_catalogue(stage.id))
    assert not problems, "\n".join(problems)


def test_the_authoring_guide_lists_every_rule_as_the_code_has_it():
    guide = (ROOT / "assignments" / "README.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| \*\*(.+?)\*\* \|", guide, flags=re.MULTILINE)
    assert listed == [rule.name for rule in RULES]
    for rule in RULES:
        assert rule.asks, f"rule {rule.name!r} has no docstring to say what it asks"


def test_rule_names_are_unique_and_blocking_rules_are_static():
    names = [rule.name for rule in RULES]
    assert len(set(names)) == len(names)
    assert not [rule.name for rule in RULES if rule.blocking and rule.graded]
