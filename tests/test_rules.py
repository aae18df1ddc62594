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
            "06",
            "no-ops earn nothing",
            "stage 06: a no-op passes tests that are no guards (feedforward's and block's dropout-in-eval and causal tests)",
        ),
        (
            "06",
            "dtype slips cost only their clause",
            "stage 06: no dtype clauses; value tests of layernorm, feedforward and block also test the dtype (32 tests)",
        ),
        (
            "06",
            "every clause has a mistake",
            "stage 06: clause rows have no ids (39 rows in 3 questions) and no mistake declares the clauses it breaks (27 mistakes)",
        ),
        (
            "07",
            "checks never fault",
            "stage 07: the check of 'model: changing later tokens leaves earlier logits unchanged' raises IndexError on a no-op's output (its input)",
        ),
        (
            "07",
            "no-ops earn nothing",
            "stage 07: a no-op passes tests that are no guards (train's mode and batches, sampling's seeding, generate's and kv_cache's call records, model's causality for zeros)",
        ),
        (
            "07",
            "dtype slips cost only their clause",
            "stage 07: no dtype clauses; value tests of model, sampling, generate and kv_cache also test the dtype (13 tests)",
        ),
        (
            "07",
            "every clause has a mistake",
            "stage 07: clause rows have no ids (83 rows in 8 questions) and no mistake declares the clauses it breaks (57 mistakes)",
        ),
        (
            "08",
            "every clause has a mistake",
            "stage 08: 2 clauses without a mistake that breaks them alone: rnn_lm logits (a slip there, e.g. log-probabilities, passes every public test: needs a public logits test with fixed weights) and tbptt dtype-streams (an int32 stream breaks training too unless train_tbptt converts; needs a public dtype test)",
        ),
        (
            "09",
            "no-ops earn nothing",
            "stage 09: a no-op passes tests that are no guards (padding and causality properties of encoder, cross_attention, decoder_block and seq2seq; mlm_mask's shapes and dtypes; train_seq2seq's seeding; greedy's mode restored)",
        ),
        (
            "09",
            "dtype slips cost only their clause",
            "stage 09: no dtype clauses; value tests of every question with stubs also test the dtype (33 tests)",
        ),
        (
            "09",
            "every clause has a mistake",
            "stage 09: no mistake declares the clauses it breaks (51 mistakes), so no clause (70 rows in 7 questions, with ids) has a mistake that breaks it alone",
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
