"""A pytest plugin that writes each failure, as a line of JSON, to the file named by
``$GPTCOURSE_FAILURES``: the rule "the stage's own tests pass" (``run_rules``) loads it
(``-p autograder.authoring.pytest_failures``) to name every failing test with its output.

It changes nothing in how the tests run; without the variable set it writes nothing.
"""

import json
import os

ENV = "GPTCOURSE_FAILURES"


def _write(nodeid: str, when: str, report) -> None:
    path = os.environ.get(ENV)
    if path:
        failure = {"id": nodeid, "when": when, "crash": _crash(report), "text": report.longreprtext}
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(failure) + "\n")


def _crash(report) -> str:
    """The first line of what was raised, as pytest's short summary has it (``assert 3 == 4``):
    the same whatever pytest's verbosity, where the end of the full output is not (on a CI
    machine pytest prints an assertion's full diff after it)."""
    crash = getattr(report.longrepr, "reprcrash", None)
    message = crash.message if crash is not None else ""
    return message.splitlines()[0] if message else ""


def pytest_runtest_logreport(report) -> None:
    if report.failed:
        _write(report.nodeid, report.when, report)


def pytest_collectreport(report) -> None:
    if report.failed:
        _write(report.nodeid, "collect", report)
