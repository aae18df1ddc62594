"""A pytest plugin that writes each failure, as a line of JSON, to the file named by
``$GPTCOURSE_FAILURES``: the rule "the stage's own tests pass" (``run_rules``) loads it
(``-p autograder.authoring.pytest_failures``) to name every failing test with its output.

It changes nothing in how the tests run; without the variable set it writes nothing.
"""

import json
import os

ENV = "GPTCOURSE_FAILURES"


def _write(nodeid: str, when: str, text: str) -> None:
    path = os.environ.get(ENV)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"id": nodeid, "when": when, "text": text}) + "\n")


def pytest_runtest_logreport(report) -> None:
    if report.failed:
        _write(report.nodeid, report.when, report.longreprtext)


def pytest_collectreport(report) -> None:
    if report.failed:
        _write(report.nodeid, "collect", report.longreprtext)
