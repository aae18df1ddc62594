"""The engine's results in otter's own objects.

otter keeps a submission's results as a ``GradingResults``: a ``TestFile`` per question
(``otter grade``'s gradebook has a column per question), its test cases with their
points and hidden flags. ``fill`` rebuilds each question from the zip's declaration
(``tests/<question>.py``) with the engine's verdict for each case and the engine's score
for the question, and makes the results an ``EngineResults``, whose Gradescope document
is the engine's own: a line per test, public tests visible at once, hidden ones as the
stage's settings say (``after_published`` by default), the same as the engine's
Gradescope zip. Everything else in otter's document (a PDF that failed, a plugin's
message or hidden results, a ``points_possible`` or ``score_threshold`` in
``otter_config.json``) stays as otter makes it.

This module imports otter and the standard library only: it runs in otter's process.
"""

import copy

from otter.run.run_autograder.utils import OtterRuntimeError
from otter.test_files import GradingResults, OKTestFile, TestCaseResult

from . import PLUGIN

OTTER_SUMMARY = "Public Tests"  # the entry otter's document opens with, which the engine's tests replace


class EngineResults(GradingResults):
    """otter's results of a submission the engine graded (see the module's docstring).

    It is pickled (otter's ``results.pkl``, which ``otter grade`` reads on the instructor's
    machine) as a plain ``GradingResults``, so that reading it needs otter alone.
    """

    def to_gradescope_dict(self, ag_config) -> dict:
        doc = super().to_gradescope_dict(ag_config)
        engine = self.get_plugin_data(PLUGIN)
        if self.has_catastrophic_failure() or engine is None:
            return doc
        ours = {OTTER_SUMMARY, *self.results}
        tests = [t for t in doc["tests"] if t.get("name") not in ours]  # what otter adds of its own
        tests += copy.deepcopy(engine["tests"])
        if self.all_hidden:
            for test in tests:
                test["visibility"] = "hidden"
        doc["tests"] = tests
        doc["output"] = "\n".join(x for x in (engine["output"], self.output) if x)
        doc.setdefault("score", engine["score"])  # otter sets its own only to rescale or threshold
        doc.update({k: v for k, v in engine.items() if k in ("execution_time", "extra_data")})
        doc.setdefault("stdout_visibility", "hidden")
        return doc

    def __reduce_ex__(self, protocol):
        return object.__new__, (GradingResults,), dict(self.__dict__)


def fill(results: GradingResults, graded: dict, declared: dict[str, OKTestFile]) -> None:
    """Put the engine's results (the worker's document) in ``results``, a question per declared test file.

    Raises otter's ``OtterRuntimeError`` when the engine's tests are not the ones the
    zip declares (a zip put together from two builds).
    """
    mine = {qid: [r for r in graded["results"] if r["qid"] == qid] for qid, _ in graded["questions"]}
    if set(mine) != set(declared):
        raise OtterRuntimeError(
            f"the zip's tests/ declare {sorted(declared)} but its stage has {sorted(mine)}: rebuild the zip"
        )
    results.clear_results()
    for qid, tests in mine.items():
        question = copy.deepcopy(declared[qid])
        cases = {case.name: case for case in question.test_cases}
        if set(cases) != {r["key"] for r in tests}:
            raise OtterRuntimeError(f"the zip's tests/{qid}.py does not declare the engine's tests of {qid}")
        question.test_case_results = [
            TestCaseResult(test_case=cases[r["key"]], message=r["message"], passed=r["score"] >= r["max_score"])
            for r in tests
        ]
        question.update_score(sum(r["score"] for r in tests))
        results.results[qid] = question
    results.set_plugin_data(PLUGIN, graded["gradescope"])
    results.__class__ = EngineResults
