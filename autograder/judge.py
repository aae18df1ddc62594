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


def judge(cases: list[Case], outcome: Outcome, fixtures: dict[str, Any]) -> list[TestResult]:
    """Score every case of a submission."""
    results = []
    for case in cases:
        verdict = judge_case(case, outcome, fixtures)
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
