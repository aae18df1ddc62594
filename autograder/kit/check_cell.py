"""The notebook's ``check("question")``: a question's public tests, run in place.

The build pastes the kit and the stage's public suite into the notebook's first code
cell as one module, whose global ``suite`` is then that public suite. ``check`` runs
its cases on the notebook's own names the way grading does (``runtime.run_probe``,
``runtime.judge_output``) and prints a short report. It says "public tests passed",
never "all tests passed": hidden tests run only when the work is graded.

Part of the kit: standard library and torch only, pasted verbatim into every notebook.
"""

import random
import sys
from typing import Any

import numpy
import torch

from .cases import WITHHELD, Case, Namespace, failure_cause, failure_roots, withheld_guards
from .runtime import CheckFault, calibrate, fault_message, judge_output, run_probe


def run_cases(cases: list[Case], names: dict[str, Any]) -> list[tuple[Case, bool, str, str | None]]:
    """Run and judge public ``cases`` in this process: ``(case, passed, message, cause)`` each,
    ``cause`` being what the failure is grouped by (its hint's mistake, else its message).

    A passed guard (``Case.is_guard``) of a question where no test of the work passed counts
    as failed, as in grading (``withheld_guards``). The caller's random states are restored
    afterwards, so a check cell does not disturb the notebook.
    """
    saved = (random.getstate(), numpy.random.get_state(), torch.get_rng_state())
    space = Namespace(names)
    out = []
    try:
        for case in cases:
            got, error, seconds = run_probe(case, space)
            if error is not None:
                out.append((case, False, error, failure_cause(error)))
                continue
            if case.timed:
                got = {"output": got, "seconds": seconds, "calibration": calibrate()}
            try:
                verdict = judge_output(case, got, case.expected)
            except CheckFault as fault:
                message = fault_message(fault)
                out.append((case, False, message, message))
                continue
            out.append((case, verdict.passed, verdict.message, failure_cause(verdict.message, verdict.hint)))
    finally:
        random.setstate(saved[0])
        numpy.random.set_state(saved[1])
        torch.set_rng_state(saved[2])
    withheld = withheld_guards([(c.key, c.qid, ok, c.role) for c, ok, _, _ in out])
    return [
        (case, False, WITHHELD.format(qid=case.qid), None) if case.key in withheld else (case, ok, message, cause)
        for case, ok, message, cause in out
    ]


def _report(outcomes: list[tuple[Case, bool, str, str | None]]) -> list[str]:
    """The report's lines: failures first, the most basic ones (``Case.builds_on``, or the
    first of those with the same cause) before those that follow from them, then the guards
    whose points wait for the work, then the tests that passed."""
    roots = failure_roots([(case.name, case.builds_on, ok or cause is None, cause) for case, ok, _, cause in outcomes])
    followers = {name: [f for f, on in roots.items() if name in on] for name in roots}
    ordered = [o for o in outcomes if o[0].name in roots and not roots[o[0].name]]
    ordered += [o for o in outcomes if o[0].name in roots and roots[o[0].name]]
    ordered += [o for o in outcomes if not o[1] and o[0].name not in roots] + [o for o in outcomes if o[1]]
    lines = []
    for case, ok, message, _ in ordered:
        lines.append(f"  [{'ok  ' if ok else 'FAIL'}] {case.name}")
        if ok:
            continue
        if roots.get(case.name):
            lines.append("         follows from the failure of " + ", ".join(f'"{r}"' for r in roots[case.name]))
        lines.extend("         " + line for line in message.splitlines())
        if followers.get(case.name):
            lines.append(f"         ({len(followers[case.name])} later test(s) fail because of this one: start here)")
    return lines


def run_public(cases: list[Case], qid: str, names: dict[str, Any]) -> tuple[bool, str, float]:
    """Run the public tests of one question against ``names``: ``(all passed, report, points)``."""
    mine = [c for c in cases if c.qid == qid]
    if not mine:
        known = ", ".join(dict.fromkeys(c.qid for c in cases))
        return False, f"No public tests are registered for {qid!r}; the questions are: {known}.", 0.0
    outcomes = run_cases(mine, names)
    passed = sum(ok for _, ok, _, _ in outcomes)
    if passed == len(mine):
        head = f"{qid}: public tests passed ({passed}/{len(mine)}). Hidden tests are run when your work is graded."
    else:
        head = f"{qid}: {len(mine) - passed} of {len(mine)} public tests failed."
    points = sum(c.points for c, ok, _, _ in outcomes if ok)
    return passed == len(mine), "\n".join([head, *_report(outcomes)]), points


def check(qid: str, names: dict[str, Any] | None = None, strict: bool = False) -> None:
    """Notebook entry point: print the public-test report of question ``qid``.

    It looks the student's functions up in the calling notebook's globals, so it works
    whatever the notebook file is called and needs no package beyond torch. With
    ``strict`` a failed test raises ``AssertionError`` with the report as its message
    (nbgrader's grade cells use it: its Validate button shows the error, naming the
    question and its failed public tests).
    """
    if names is None:
        names = sys._getframe(1).f_globals
    ok, report, _ = run_public(globals()["suite"].cases, qid, names)
    if strict and not ok:
        raise AssertionError(report)
    print(report)
