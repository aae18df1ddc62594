"""The judge: turns a submission's raw outputs into scored test results (parent side only)."""

from dataclasses import dataclass
from typing import Any

from autograder.kit.cases import REFERENCE, WITHHELD, Case, failure_cause, failure_roots, withheld_guards
from autograder.kit.checks import Verdict
from autograder.kit.runtime import CheckFault, calibrate, fault_message, judge_output

from .runner import Outcome
from .suites import StageTests

MESSAGE_LIMIT = 1500  # characters of a failed test's message
# ... of a hidden test's error from the student's code: enough for an honest error, little room to smuggle anything out
HIDDEN_ERROR_LIMIT = 400
PUBLIC_WITHHELD = (
    "this passed, but no hidden test of the work of {qid} did: a public test's inputs and answers are "
    "printed in the notebook, so its points count only once the code also passes a hidden test of {qid}"
)
# the roles of hidden tests whose pass proves a public test of each role (``Case.role``): a
# public test of the work by a hidden test of the work, one of structure by either
PROVEN_BY = {"work": ("work",), "structure": ("structure", "work")}
# a public test with partners (``StageTests.partners``: hidden tests of the same clauses);
# students read it before the hidden tests' results are shown, so it names none of them
PUBLIC_UNPROVEN = (
    "this passed, but no hidden test of what it checks did: a public test's inputs and answers are "
    "printed in the notebook, so its points count only once the code also passes a hidden test of the "
    "same part of the contract of {qid}"
)


@dataclass
class TestResult:
    """One test case as the student and the gradebook see it."""

    key: str
    qid: str
    name: str
    public: bool
    score: float
    max_score: float
    message: str
    fault: str | None = None  # the test's own check failed on this output (for the instructor)
    hint: str | None = None  # the known mistake a hint recognised (``Hint.mistake``)
    builds_on: tuple[str, ...] = ()  # more basic tests of the question (``Case.builds_on``)
    withheld: bool = False  # passed, its points withheld: a guard, or a public test, with no test of the work passed
    awaits_hidden: bool = False  # a public test withheld: no hidden test of the work passed

    @property
    def passed(self) -> bool:
        return self.score >= self.max_score

    @property
    def cause(self) -> str | None:
        """What a failure is grouped by (``failure_roots``, ``failure_cause``): the known mistake
        its hint named, else its message; None for a pass or a withheld guard (nothing to fix)."""
        if self.passed or self.withheld:
            return None
        return failure_cause(self.message, self.hint)


def question_scores(results: list[TestResult], qids: list[str]) -> dict[str, float]:
    """Points earned per question, every question of ``qids`` present (the one place they are summed).

    Example:
        >>> question_scores([TestResult("a: x", "a", "x", True, 1.0, 1.0, ""),
        ...                  TestResult("a: y", "a", "y", False, 0.5, 2.0, "half")], ["a", "b"])
        {'a': 1.5, 'b': 0.0}
    """
    scores = dict.fromkeys(qids, 0.0)
    for result in results:
        scores[result.qid] = scores.get(result.qid, 0.0) + result.score
    return scores


def follows_from(results: list[TestResult]) -> dict[str, list[str]]:
    """For each failed result's key, the keys of the most basic failed tests of its question
    that it builds on (``[]``: it follows from no other failure; start there)."""
    out: dict[str, list[str]] = {}
    for qid in dict.fromkeys(r.qid for r in results):
        mine = [r for r in results if r.qid == qid]
        roots = failure_roots([(r.name, r.builds_on, r.passed or r.withheld, r.cause) for r in mine])
        out.update({f"{qid}: {name}": [f"{qid}: {root}" for root in on] for name, on in roots.items()})
    return out


def by_cause(results: list[TestResult]) -> list[TestResult]:
    """The results in the order feedback explains them: per question (in order), its failures
    that follow from no other first, then the failures that follow from them, then the guards
    whose points wait for the work, then the passes."""
    roots = follows_from(results)
    ordered = []
    for qid in dict.fromkeys(r.qid for r in results):
        mine = [r for r in results if r.qid == qid]
        ordered += [r for r in mine if r.key in roots and not roots[r.key]]
        ordered += [r for r in mine if r.key in roots and roots[r.key]]
        ordered += [r for r in mine if r.withheld]
        ordered += [r for r in mine if r.passed]
    return ordered


class MissingFixture(KeyError):
    """A hidden test needs an expected value that the fixtures do not hold."""


def _expected(case: Case, fixtures: dict[str, Any]) -> Any:
    if case.expected is not REFERENCE:
        return case.expected
    if case.key not in fixtures:
        raise MissingFixture(f"no fixture for {case.key!r}: rebuild the fixtures (gptcourse build)")
    return fixtures[case.key]


def judge_case(
    case: Case, outcome: Outcome, fixtures: dict[str, Any], calibration: dict[str, float] | None = None
) -> Verdict:
    """The verdict on one case (``CheckFault`` when the test's check fails on the output).

    A timed case is judged on the CPU time its child used (read from outside it), against
    the calibration workload's CPU time measured in the parent (``calibration`` keeps it for
    the submission's other timed cases; ``judge`` starts it from ``Outcome.calibration``,
    else it is measured here): CPU time is what a busy or shared machine does not inflate. Where the child's CPU time
    cannot be read (no ``/proc``), its wall time stands in.
    """
    if case.key in outcome.errors:
        return Verdict(False, outcome.errors[case.key])
    if case.key not in outcome.values:
        return Verdict(False, "no result came back for this test")
    got = outcome.values[case.key]
    if case.timed:
        seconds = outcome.cpu_seconds.get(case.key, outcome.seconds.get(case.key))
        if seconds is None:
            return Verdict(False, "the time of this test could not be measured")
        calibration = {} if calibration is None else calibration
        if "seconds" not in calibration:
            calibration["seconds"] = calibrate()
        got = {"output": got, "seconds": seconds, "calibration": calibration["seconds"]}
    return judge_output(case, got, _expected(case, fixtures))


def bound(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, saying so."""
    return text if len(text) <= limit else text[: limit - 20] + " [... message cut]"


def scrub(text: str, secrets: tuple[str, ...] | list[str], limit: int = MESSAGE_LIMIT, own: str = "") -> str:
    """Remove hidden test source from a message a student will see, and bound its length.

    Student code can put anything into an exception message or its output, including
    what it read of the grader's files; nothing of the hidden tests passes through,
    wherever it stands in the text (a prefix glued to a line hides nothing). A secret
    line that the student's own code, ``own``, holds is theirs already and stays: their
    line ``seq_out, h = self.lstm(x, state)``, quoted where it raised, is never shown as
    ``seq_[hidden test code]`` because a hidden line reads ``out, h = self.lstm(x, state)``.

    Example:
        >>> secret = ["out, h = self.lstm(x, state)"]
        >>> scrub("at line 3: `seq_out, h = self.lstm(x, state)`", secret, own="seq_out, h = self.lstm(x, state)")
        'at line 3: `seq_out, h = self.lstm(x, state)`'
        >>> scrub("leaked: out, h = self.lstm(x, state)", secret)
        'leaked: [hidden test code]'
    """
    for line in secrets:
        if line in text and line not in own:
            text = text.replace(line, "[hidden test code]")
    return bound(text, limit)


def _text_atoms(value: Any, out: set[str], depth: int = 0) -> set[str]:
    """The strings inside an expected value (dictionary keys included)."""
    if depth > 32:
        return out
    if isinstance(value, str):
        out.add(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            _text_atoms(key, out, depth + 1)
            _text_atoms(item, out, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            _text_atoms(item, out, depth + 1)
    return out


def hide_expected(message: str, expected: Any, got: Any = None) -> str:
    """Replace every quoted piece of text of ``expected`` in a hidden test's message, unless
    the student's output ``got`` holds it too (a key the student wrote is theirs to see).

    Checks describe a difference without quoting expected values when they judge a
    hidden test; this holds even for a check that slips (a missing dictionary key,
    say), since the judge knows what must not be quoted.
    """
    own = _text_atoms(got, set())
    for atom in sorted(_text_atoms(expected, set()) - own, key=len, reverse=True):
        for quoted in {repr(atom), f'"{atom}"'}:
            if quoted in message:
                message = message.replace(quoted, "[a hidden expected value]")
    return message


def judge(tests: StageTests, outcome: Outcome, calibration: dict[str, float] | None = None) -> list[TestResult]:
    """Score every case of a submission. Messages are scrubbed of hidden test source and,
    for hidden tests, of expected values; a test whose check fails on the output scores 0
    and carries the fault for the instructor.

    ``calibration`` (see ``judge_case``) is measured on the first timed case and kept in it; one
    given already measured is used as it is (a variant that took every timed output from the
    reference takes the reference's calibration with them, ``authoring.reuse``), else the one the
    runner measured before the first timed test ran (``Outcome.calibration``), the unit of the
    CPU budgets the child was stopped at."""
    results = []
    calibration = {} if calibration is None else calibration
    if outcome.calibration is not None:
        calibration.setdefault("seconds", outcome.calibration)
    for case in tests.cases:
        fault = None
        try:
            verdict = judge_case(case, outcome, tests.fixtures, calibration)
        except CheckFault as exc:
            fault = str(exc)
            verdict = Verdict(False, fault_message(exc))
        error = case.key in outcome.errors
        limit = HIDDEN_ERROR_LIMIT if error and not case.public else MESSAGE_LIMIT
        message = verdict.message
        if not case.public and not verdict.passed and not error:
            message = hide_expected(message, _expected(case, tests.fixtures), outcome.values.get(case.key))
        results.append(
            TestResult(
                key=case.key,
                qid=case.qid,
                name=case.name,
                public=case.public,
                score=case.points if verdict.passed else 0.0,
                max_score=case.points,
                message=scrub(message, tests.secrets, limit, outcome.code),
                fault=fault,
                hint=None if verdict.passed else verdict.hint,
                builds_on=case.builds_on,
            )
        )
    return _guards_need_working_code(_public_points_need_hidden_work(results, tests), tests)


def _public_points_need_hidden_work(results: list[TestResult], tests: StageTests) -> list[TestResult]:
    """Take back the points of a passed public test (of the work or of structure) that no passed
    hidden test proves: one of its partners (``StageTests.partners``: the hidden tests, of its
    work for a public test of the work, of its work or structure for one of structure, that
    check only clauses of the contract it checks too); for a public test without partners, a
    hidden test of its question of the same kind.

    A public test's inputs and expected values are printed in the notebook, so code that
    recognises them and returns the printed answers passes it without doing the work; its
    points are earned when the code also passes a hidden test of the same clauses, whose inputs
    the student never saw (working code for one clause does not prove a printed answer for
    another, and a mistake in another clause does not fail it). Guards are left to
    ``_guards_need_working_code``, which runs next and no longer counts a public test taken
    back here as work.
    """
    roles = {case.key: case.role for case in tests.cases}
    passed_keys = {r.key for r in results if not r.public and r.passed}
    passed = {(r.qid, roles[r.key]) for r in results if not r.public and r.passed}
    for result in results:
        wanted = PROVEN_BY.get(roles[result.key])
        if not (result.public and result.passed and wanted):
            continue
        partners = tests.partners.get(result.key)
        if partners and not passed_keys.intersection(partners):
            _withhold(result, PUBLIC_UNPROVEN)
            result.awaits_hidden = True
        elif not partners and not any((result.qid, w) in passed for w in wanted):
            _withhold(result, PUBLIC_WITHHELD)
            result.awaits_hidden = True
    return results


def _guards_need_working_code(results: list[TestResult], tests: StageTests) -> list[TestResult]:
    """Take back the points of passed guards in a question where no test of its work passed.

    A guard (``Case.is_guard``: a test of errors, of dtypes, or marked ``guard=True``)
    passes for a function that raises ``ValueError`` on every call, returns zeros of the
    right dtype, or leaves its input alone by doing nothing; those points are earned only
    when the function also works, that is when a test of the question's work passed: one
    that is neither a guard nor a test of structure (``Case.role``; a class whose correct
    ``__init__`` builds the right parts passes those, however its methods behave). The
    notebook's ``check()`` decides by the same ``withheld_guards``.
    """
    roles = {case.key: case.role for case in tests.cases}
    withheld = withheld_guards([(r.key, r.qid, r.passed, roles[r.key]) for r in results])
    for result in results:
        if result.key in withheld:
            _withhold(result, WITHHELD)
    return results


def _withhold(result: TestResult, message: str) -> None:
    """Take back a passed test's points, saying why (``message``, formatted with its question id)."""
    result.score = 0.0
    result.withheld = True
    result.message = message.format(qid=result.qid)
