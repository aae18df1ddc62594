"""An Otter-Grader plugin that hands grading to the gptcourse engine.

The Gradescope zip names this plugin in its ``otter_config.json``, so that otter's own
runner (``otter run -a <stage>.zip notebook.ipynb``, or the zip's ``run_otter.py``)
grades exactly as the zip's ``run_autograder`` does on Gradescope:

- ``before_execution`` gives otter's kernel an empty notebook: no student code runs in
  otter's process tree, so the cheats otter falls for (patching ``torch.allclose``,
  replacing otter's test runner, ``os._exit`` in a cell) reach nothing;
- ``after_grading`` runs the zip's ``run_autograder`` on the same root (the engine runs
  the student's code in its own confined child processes and judges outside them) and
  turns its results.json into otter's ``GradingResults``, whose Gradescope document is
  that results.json unchanged.

``otter run`` needs this package importable where otter runs (it is, wherever gptcourse
is installed); on Gradescope the zip's copy is found next to ``run_otter.py``.
"""

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
from otter.plugins import AbstractOtterPlugin
from otter.test_files import GradingResults
from otter.test_files.abstract_test import TestCase, TestCaseResult, TestFile

ENGINE_TIMEOUT = 1800  # seconds; the engine stops each submission well before this


class EngineTestFile(TestFile):
    """One question's results as the engine judged them (never run by otter)."""

    @classmethod
    def from_file(cls, path: str) -> "TestFile":
        raise NotImplementedError("gptcourse tests are run by the gptcourse engine, not by otter")

    @classmethod
    def from_metadata(cls, s: Any, path: str) -> "TestFile":
        raise NotImplementedError("gptcourse tests are run by the gptcourse engine, not by otter")

    def run(self, global_environment: dict[str, Any]) -> None:
        raise NotImplementedError("gptcourse tests are run by the gptcourse engine, not by otter")


class EngineResults(GradingResults):
    """Otter's results object whose Gradescope document is the engine's results.json."""

    engine_doc: dict[str, Any]

    def to_gradescope_dict(self, ag_config: Any) -> dict[str, Any]:
        return copy.deepcopy(self.engine_doc)


def question_files(doc: dict[str, Any]) -> list[TestFile]:
    """The engine's tests grouped by question (the part of each name before the colon)."""
    by_question: dict[str, list[TestCaseResult]] = {}
    for test in doc.get("tests", []):
        name = str(test.get("name", ""))
        case = TestCase(
            name=name,
            body=None,
            hidden=test.get("visibility") != "visible",
            points=float(test.get("max_score", 0)),
            success_message=None,
            failure_message=None,
        )
        passed = float(test.get("score", 0)) >= float(test.get("max_score", 0))
        by_question.setdefault(name.split(":", 1)[0], []).append(TestCaseResult(case, None if passed else test.get("output"), passed))
    files = []
    for qid, outcomes in by_question.items():
        tf = EngineTestFile(qid, qid, [o.test_case for o in outcomes], all_or_nothing=False)
        tf.test_case_results = outcomes
        files.append(tf)
    return files


def run_engine(root: Path, timeout: float = ENGINE_TIMEOUT) -> dict[str, Any]:
    """Run the zip's ``run_autograder`` on ``root`` with this Python; return its results.json."""
    script = root / "source" / "run_autograder"
    results = root / "results" / "results.json"
    env = dict(os.environ, GRADESCOPE_ROOT=str(root), GPTCOURSE_PYTHON=sys.executable)
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0 or not results.exists():
        raise RuntimeError(f"the gptcourse engine failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return json.loads(results.read_text(encoding="utf-8"))


class GptcoursePlugin(AbstractOtterPlugin):
    """Grade with the gptcourse engine instead of otter's in-kernel tests."""

    def before_execution(self, submission: Any) -> Any:
        return nbformat.v4.new_notebook()

    def after_grading(self, results: GradingResults) -> None:
        root = Path(self.submission_path).resolve().parent.parent
        try:
            doc = run_engine(root)
        except (OSError, RuntimeError, ValueError, subprocess.TimeoutExpired) as exc:
            results.results = {}
            results._catastrophic_error = exc
            return
        results.results = {tf.name: tf for tf in question_files(doc)}
        results.output = doc.get("output")
        results.__class__ = EngineResults  # otter's hook may only change the object it is given
        results.engine_doc = doc
