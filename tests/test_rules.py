"""Every stage held to every rule of ``gptcourse check-stage`` (``autograder.authoring.rules``):
one loop over the same list the command runs, a test per stage and rule.

The graded rules read each stage's catalogue graded once per session (``graded_catalogue``).
How each rule fails is shown in ``test_authoring.py`` (scratch copies of a stage),
``test_stage_feedback.py`` and ``test_precision.py`` (small cases made to break it).

``NOT_YET`` may list a stage and a rule it does not meet yet, with what is missing: that
test is then expected to fail, strictly, so that a stage brought into compliance fails
here until its line is deleted. Every stage meets every rule: the list is empty.
"""

import re

import pytest

from autograder.authoring.claims import stage_claims
from autograder.authoring.rules import RULES, apply, get_rule
from autograder.authoring.static_rules import Subject
from autograder.course import ROOT, all_stages

STAGES = [s for s in all_stages()]
# (stage id, rule name) -> what is missing, e.g. ("09", "every clause has a mistake"): "2 clauses ..."
NOT_YET: dict[tuple[str, str], str] = {}


# The run rules do what this suite does itself, for real: it collects every stage's own tests
# (testpaths), test_notebooks_run.py runs every reference notebook in a Jupyter kernel,
# test_reachable.py scans every stage's suites and test_claims.py measures every claim. Run
# here too they would add about 110 s of CPU and find nothing new (test_the_suite_does_what_the_
# run_rules_do); how they fail is shown in test_authoring.py.
RUN_HERE_BY = {
    "reference notebook runs": "test_notebooks_run.py::test_reference_notebook_runs_clean_offline",
    "the stage's own tests pass": "pyproject.toml's testpaths (assignments)",
    "no suite holds the reference": "test_reachable.py::test_no_suite_holds_an_implementation_of_a_graded_function",
    "stated numbers true": "test_claims.py::test_a_stated_number_is_what_its_measurement_gives",
    "tolerances keep a margin": "test_margins.py::test_every_stage_keeps_a_margin_on_its_tolerances",
}


def _params(graded: bool) -> list:
    """``(stage, rule)`` pairs of the static or graded rules, those in ``NOT_YET`` marked to fail."""
    params = []
    for stage in STAGES:
        for rule in (r for r in RULES if r.graded == graded and r.name not in RUN_HERE_BY):
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


def test_the_suite_does_what_the_run_rules_do():
    import tomllib

    import test_claims
    import test_margins
    import test_notebooks_run
    import test_reachable

    assert set(RUN_HERE_BY) == {rule.name for rule in RULES if rule.runs}
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert "assignments" in settings["testpaths"]
    assert test_notebooks_run.RUNS["test_reference_notebook_runs_clean_offline"] == "reference"
    assert callable(test_reachable.test_no_suite_holds_an_implementation_of_a_graded_function)
    assert [s.id for s in test_reachable.STAGES] == [s.id for s in STAGES]
    assert len(test_claims.CLAIMS) == sum(len(stage_claims(s)) for s in STAGES)
    assert [s.id for s in test_notebooks_run.STAGES] == [s.id for s in STAGES]
    assert [s.id for s in test_margins.STAGES] == [s.id for s in STAGES]


def test_the_authoring_guide_lists_every_rule_as_the_code_has_it():
    guide = (ROOT / "assignments" / "README.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| \*\*(.+?)\*\* \|", guide, flags=re.MULTILINE)
    assert listed == [rule.name for rule in RULES]
    for rule in RULES:
        assert rule.asks, f"rule {rule.name!r} has no docstring to say what it asks"


def test_rule_names_are_unique_and_one_graded_rule_blocks_the_others():
    names = [rule.name for rule in RULES]
    assert len(set(names)) == len(names)
    # every graded rule but the empty release's compares variants with the reference
    graded = [rule for rule in RULES if rule.graded]
    assert [rule.name for rule in graded if rule.blocking] == ["reference full"]
    graded_names = [rule.name for rule in graded]
    assert graded_names[: graded_names.index("reference full")] == ["empty release earns nothing"]
