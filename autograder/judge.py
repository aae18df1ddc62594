"""The judge: turns a submission's raw outputs into scored test results (parent side only)."""

import threading
from dataclasses import dataclass
from typing import Any

from .checks import Verdict
from .harness import REFERENCE, Case, calibrate
from .runner import Outcome

_calibration: list[float] = []
_calibration_lock = threading.Lock()


def calibration_seconds() -> float:
    """The calibration workload's time, measured once per grading process (never in a child)."""
    with _calibration_lock:
        if not _calibration:
            _calibration.append(calibrate())
        return _calibration[0]


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

    @property
    def passed(self) -> bool:
        return self.score >= self.max_score


def judge_case(case: Case, outcome: Outcome, fixtures: dict[str, Any]) -> Verdict:
    """The verdict on one case; any surprise in the check itself counts as a failure."""
    if case.key in outcome.errors:
        return Verdict(False, outcome.errors[case.key])
    if case.key not in outcome.values:
        return Verdict(False, "no result came back for this test")
    if case.expected is REFERENCE:
        if case.key not in fixtures:
            raise KeyError(f"no fixture for {case.key!r}: rebuild the fixtures (gptcourse build)")
        expected = fixtures[case.key]
    else:
        expected = case.expected
    got = outcome.values[case.key]
    if case.timed:
        if case.key not in outcome.seconds:
            return Verdict(False, "the time of this test could not be measured")
        got = {"output": got, "seconds": outcome.seconds[case.key], "calibration": calibration_seconds()}
    try:
        verdict = case.check(got, expected, case.public)
    except Exception as exc:  # the output was of a shape no check expects
        return Verdict(False, f"the output could not be compared ({type(exc).__name__}); check its type and shape")
    if not isinstance(verdict, Verdict):
        return Verdict(False, "the test could not judge this output")
    return verdict


MESSAGE_LIMIT = 1500
ERROR_LIMIT = 1000  # characters of an error the child reported (student code's exception) in a public test
HIDDEN_ERROR_LIMIT = 400  # ... in a hidden test: enough for an honest error, little room to smuggle anything out


def bound(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, saying so."""
    return text if len(text) <= limit else text[: limit - 20] + " [... message cut]"


def secret_lines(texts: list[str], shortest: int = 16) -> list[str]:
    """The lines of hidden test files worth hiding (long enough to be specific)."""
    lines = set()
    for text in texts:
        for line in text.splitlines():
            line = line.strip()
            if len(line) >= shortest and not line.startswith(("import ", "from ", "#")):
                lines.add(line)
    return sorted(lines, key=len, reverse=True)


def scrub(text: str, secrets: list[str], limit: int = MESSAGE_LIMIT) -> str:
    """Remove hidden test source from a message a student will see, and bound its length.

    Student code can put anything into an exception message or its output, including
    what it read of the grader's files; nothing of the hidden tests passes through.
    """
    for line in secrets:
        if line in text:
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


def hide_expected(message: str, expected: Any) -> str:
    """Replace every quoted piece of text of ``expected`` in a hidden test's message.

    Checks describe a difference without quoting expected values when they judge a
    hidden test; this holds even for a check that slips (a missing dictionary key,
    say), since the judge knows what must not be quoted.
    """
    for atom in sorted(_text_atoms(expected, set()), key=len, reverse=True):
        for quoted in {repr(atom), f'"{atom}"'}:
            if quoted in message:
                message = message.replace(quoted, "[a hidden expected value]")
    return message


def _expected(case: Case, fixtures: dict[str, Any]) -> Any:
    return fixtures.get(case.key) if case.expected is REFERENCE else case.expected


def judge(cases: list[Case], outcome: Outcome, fixtures: dict[str, Any], secrets: list[str] | None = None) -> list[TestResult]:
    """Score every case of a submission; messages are scrubbed of ``secrets`` and, for hidden
    tests, of expected values."""
    results = []
    for case in cases:
        verdict = judge_case(case, outcome, fixtures)
        limit = MESSAGE_LIMIT if case.key not in outcome.errors else ERROR_LIMIT if case.public else HIDDEN_ERROR_LIMIT
        if not case.public and not verdict.passed and case.key not in outcome.errors:
            verdict.message = hide_expected(verdict.message, _expected(case, fixtures))
        verdict.message = scrub(verdict.message, secrets or [], limit)
        results.append(
            TestResult(
                key=case.key,
                qid=case.qid,
                name=case.name,
                public=case.public,
                score=case.points if verdict.passed else 0.0,
                max_score=case.points,
                message=verdict.message,
            )
        )
    return results
