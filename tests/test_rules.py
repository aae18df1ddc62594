"""Every stage held to every rule of ``gptcourse check-stage`` (``autograder.authoring.rules``):
one loop over the same list the command runs, a test per stage and rule.

The graded rules read each stage's catalogue graded once per session (``graded_catalogue``).
How each rule fails is shown in ``test_authoring.py`` (scratch copies of a stage) and
``test_stage_feedback.py`` (small graded catalogues made to break it).
"""

import re

import pytest

from autograder.authoring.rules import RULES, apply, get_rule
from autograder.authoring.static_rules import Subject
from autograder.course import ROOT, all_stages

STAGES = [s for s in all_stages()]


@pytest.mark.parametrize("rule", [r.name for r in RULES if not r.graded])
@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.id)
def test_static_rule(stage, rule):
    problems = apply(get_rule(rule), Subject(stage))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("rule", [r.name for r in RULES if r.graded])
@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.id)
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
