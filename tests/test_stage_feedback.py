"""The feedback rules (``feedback_rules``), each shown failing on a small graded catalogue made
to break it; every stage is held to them in ``test_rules.py``.

- hints are right or absent: each mistake triggers exactly the hints it declares, each
  hint is named, fires on a catalogued mistake and stays silent on another of its
  question, and correct code triggers none;
- the public tests catch every mistake not declared ``hidden_only``, and none declared so;
- no failed hidden test's message gives a hidden expected value away.
"""

from dataclasses import dataclass, field
from types import SimpleNamespace

from autograder.authoring.catalogue import Variant
from autograder.authoring.feedback_rules import hidden_value_problems, hint_problems, public_catch_problems
from autograder.engine.judge import TestResult as Result
from autograder.engine.runner import Outcome
from autograder.kit import Hint, Suite, equal

# --- each rule, broken on purpose ------------------------------------------------------------


@dataclass
class FakeGrades:
    """What the rules read of a ``CatalogueGrades``: the tests, the catalogue, the results."""

    tests: object
    mistakes: list
    alternatives: list = field(default_factory=list)
    by_name: dict = field(default_factory=dict)
    fixtures: dict = field(default_factory=dict)


def _graded(*results: Result, values: dict | None = None) -> SimpleNamespace:
    return SimpleNamespace(results=list(results), outcome=Outcome(values=dict(values or {})))


def _suite():
    public, hidden = Suite(public=True), Suite(public=False)
    public.case(
        "q",
        "small",
        points=1,
        check=equal([Hint(lambda g, e: g == 1, "ids start at 0", mistake="ids start at 1")]),
        expected=0,
    )(lambda ns: 0)
    hidden.case("q", "large", points=1, check=equal([Hint(lambda g, e: True, "no name")]), expected=[0] * 13)(
        lambda ns: 0
    )
    return SimpleNamespace(cases=public.cases + hidden.cases)


def _r(key: str, public: bool, passed: bool, hint: str | None = None, message: str = "wrong") -> Result:
    return Result(key, "q", key.split(": ")[1], public, float(passed), 1.0, "" if passed else message, hint=hint)


def test_the_hint_rule_fails_on_unnamed_undeclared_missing_and_ever_firing_hints():
    mistakes = [
        Variant("q", "one based", {}, hints=("ids start at 1",)),
        Variant("q", "declares wrongly", {}, hints=("other",)),
    ]
    grades = FakeGrades(
        _suite(),
        mistakes,
        [Variant("q", "alt", {})],
        {
            "reference": _graded(_r("q: small", True, True)),
            mistakes[0].slug: _graded(_r("q: small", True, False, "ids start at 1")),
            mistakes[1].slug: _graded(_r("q: small", True, False, "ids start at 1")),
            "q-alt": _graded(_r("q: small", True, False, "ids start at 1")),
        },
    )
    problems = hint_problems(grades)
    assert any("'q: large' has no mistake name" in p for p in problems), problems
    assert any(
        "q-declares-wrongly' triggers hints it does not declare: ids start at 1; declares hints that do not fire: other"
        in p
        for p in problems
    ), problems
    assert any("'q-alt' (correct) triggers hints: ids start at 1" in p for p in problems), problems
    assert any("'ids start at 1' of q fires on every mistake of its question" in p for p in problems), problems
    grades.mistakes = grades.mistakes[1:]
    grades.by_name[grades.mistakes[0].slug] = _graded(_r("q: small", True, False))
    assert any("'ids start at 1' of q fires on no catalogued mistake" in p for p in hint_problems(grades))


def test_the_public_rule_fails_on_an_uncaught_mistake_and_on_a_false_hidden_only():
    mistakes = [Variant("q", "uncaught", {}), Variant("q", "said hidden", {}, hidden_only="needs a large input")]
    grades = FakeGrades(
        _suite(),
        mistakes,
        [],
        {
            mistakes[0].slug: _graded(_r("q: small", True, True), _r("q: large", False, False)),
            mistakes[1].slug: _graded(_r("q: small", True, False), _r("q: large", False, False)),
        },
    )
    assert public_catch_problems(grades) == [
        "mistake 'q-uncaught' passes every public test of q (catch it, or say why only hidden tests can: hidden_only=...)",
        "mistake 'q-said-hidden' is declared hidden_only, but the public test 'small' catches it",
    ]


def test_the_hidden_value_rule_fails_on_a_message_with_an_expected_length():
    mistake = Variant("q", "one too many", {})
    grades = FakeGrades(
        _suite(),
        [mistake],
        [],
        {
            mistake.slug: _graded(
                _r("q: large", False, False, message="expected length 13, got 14"), values={"q: large": [0] * 14}
            ),
        },
    )
    assert hidden_value_problems(grades) == [
        "q-one-too-many: 'q: large' says an expected length, 13 ('length 13'): 'expected length 13, got 14'"
    ]
    grades.by_name[mistake.slug] = _graded(
        _r("q: large", False, False, message="your list has 14 items, which is not the expected number"),
        values={"q: large": [0] * 14},
    )
    assert hidden_value_problems(grades) == []
