"""The engine in nbgrader's autograde pipeline, in place of nbgrader's ``Execute``.

``GradeWithEngine`` takes the submission as nbgrader has sanitized it (outputs cleared,
locked cells restored from the gradebook), has the engine grade it in a process of its
own (``worker``, kept for the next submission of the same ``nbgrader autograde``, so that
torch starts once, not once per student) and writes what the engine found into the
notebook, which no kernel ever runs:

- each question's grade cell gets the question's report as its output (every test by
  name, public and hidden, and each failure's message: never hidden test code or an
  expected value) and its points as an ``execute_result``, which nbgrader's
  ``SaveAutoGrades`` reads as the cell's score (``nbgrader.utils.determine_grade``);
- a cell that failed while the submission ran gets a note saying so.

Late penalties, manual grades, the formgrader, feedback and export are nbgrader's own
steps after this one. A code grade cell that is not one of the stage's questions (one
an instructor added) is not run: it gets an error output (0 points) to grade by hand.
This module imports neither torch nor the engine: it may run inside a Jupyter server.
"""

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from nbformat.notebooknode import NotebookNode, from_dict
from nbformat.v4 import new_output
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Float, Unicode

from . import IDLE, question_of

TOTAL_TIMEOUT = 600.0  # the engine's Limits.total_timeout
CELL_TIMEOUT = 30.0  # the engine's Limits.cell_timeout
STARTUP = 180.0  # seconds allowed on top of the engine's own limit (starting Python and torch, a busy machine)


def cell_points(earned: float, worth: float, cell_max: float) -> float:
    """The engine's points for a question on the scale of its grade cell (an instructor may reweigh it).

    >>> cell_points(3, 4, 4), cell_points(3, 4, 8), cell_points(0, 0, 2)
    (3.0, 6.0, 0.0)
    """
    return 0.0 if worth <= 0 else min(cell_max, max(0.0, cell_max * earned / worth))


class _Worker:
    """The engine's worker process (``worker --serve``), kept between submissions: nbgrader
    makes a new preprocessor for every notebook, this process-wide worker outlives them.

    One request at a time. A worker that does not answer in time, or dies, is stopped (its
    whole session) and the next submission starts a new one. An idle one stops by itself
    after ``IDLE`` seconds, and when this process ends (its standard input closes); one idle
    for half that is not asked again (it might be stopping), a new one is started.
    """

    def __init__(self) -> None:
        self.errors = tempfile.TemporaryFile(mode="w+", encoding="utf-8")  # its standard error, for failures
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autograder.channels.nbgrader.worker", "--serve", "--idle", str(IDLE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            text=True,
            start_new_session=True,
        )
        self.answered = time.monotonic()

    def grade(self, command: list[str], timeout: float) -> tuple[int, str]:
        """Have the worker run ``command`` (its arguments); its exit status and what went wrong."""
        try:
            self.proc.stdin.write(json.dumps(command) + "\n")
            self.proc.stdin.flush()
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
            line = self.proc.stdout.readline() if ready else ""
        except OSError:  # it is gone
            line, ready = "", True
        if not line:
            self.stop()
            said = "did not answer in time" if not ready else f"stopped (exit {self.proc.returncode})"
            return 1, f"the engine's worker {said}:\n{self._error_tail()}"
        self.answered = time.monotonic()
        answer = json.loads(line)
        return int(answer["status"]), answer.get("error") or self._error_tail()

    def _error_tail(self) -> str:
        self.errors.seek(0)
        return self.errors.read()[-3000:]

    def ready(self) -> bool:
        """Alive, and not so long idle that it may be stopping."""
        return self.proc.poll() is None and time.monotonic() - self.answered < IDLE / 2

    def stop(self) -> None:
        """End the worker and whatever it started."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()


_kept: _Worker | None = None
_kept_lock = threading.Lock()


def _worker() -> _Worker:
    """The process-wide worker, started (again) when there is none ready."""
    global _kept
    with _kept_lock:
        if _kept is None or not _kept.ready():
            if _kept is not None:
                _kept.stop()
            _kept = _Worker()
        return _kept


class GradeWithEngine(NbGraderPreprocessor):
    """Grade the submission with the gptcourse engine and fill its grade cells."""

    tests_directory = Unicode(
        "", help="Folder holding <assignment>/public.py, hidden.py and fixtures.json (gptcourse build writes it)."
    ).tag(config=True)
    timeout = Float(TOTAL_TIMEOUT, help="Seconds the engine may spend on one submission.").tag(config=True)
    cell_timeout = Float(CELL_TIMEOUT, help="Seconds one notebook cell may run.").tag(config=True)
    test_timeout = Float(
        None, allow_none=True, help="Caps every test's own time limit (seconds); None keeps each test's own."
    ).tag(config=True)
    hidden_details = Bool(
        True,
        help="Show each hidden test's name and failure message in the grade cells "
        "(and so in the feedback); False shows how many passed.",
    ).tag(config=True)
    results_directory = Unicode("", help="Also write <this>/<student>/results.json (for `gptcourse report`).").tag(
        config=True
    )

    def grade(self, nb: NotebookNode, assignment: str, student: str) -> dict:
        """Run the worker on ``nb``; its JSON summary (see ``worker.summary``)."""
        if not self.tests_directory:
            raise ValueError(
                "GradeWithEngine.tests_directory is not set: the course's nbgrader_config.py "
                "must load gptcourse_config.py"
            )
        with tempfile.TemporaryDirectory(prefix="gptcourse-nbgrader-") as tmp:
            path, out = Path(tmp) / f"{student}.ipynb", Path(tmp) / "graded.json"
            path.write_text(json.dumps(nb), encoding="utf-8")
            command = [
                str(Path(self.tests_directory) / assignment),
                str(path),
                str(out),
                "--name",
                student,
                "--timeout",
                str(self.timeout),
                "--cell-timeout",
                str(self.cell_timeout),
            ]
            if self.test_timeout is not None:
                command += ["--test-timeout", str(self.test_timeout)]
            if not self.hidden_details:
                command.append("--brief-hidden")
            if self.results_directory:
                command += ["--results", str(Path(self.results_directory).resolve())]
            status, error = _worker().grade(command, self.timeout + STARTUP)
            if status != 0 or not out.exists():
                raise RuntimeError(f"the gptcourse engine failed on {student}'s {assignment} (exit {status}):\n{error}")
            return json.loads(out.read_text(encoding="utf-8"))

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        info = resources["nbgrader"]
        graded = self.grade(nb, info["assignment"], info["student"])
        if graded["fallback"]:
            self.log.warning(
                "gptcourse: the student code ran less confined than this machine should allow (%s)", graded["fallback"]
            )
        questions = {q["qid"]: q for q in graded["questions"]}
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            if str(index) in graded["cell_errors"]:
                cell.outputs.append(
                    new_output(
                        "stream",
                        name="stdout",
                        text=f"gptcourse: when graded, this cell {graded['cell_errors'][str(index)]}\n",
                    )
                )
            if not utils.is_grade(cell) or utils.is_solution(cell):
                continue
            grade_id = cell.metadata.nbgrader["grade_id"]
            qid = question_of(grade_id, list(questions))
            if qid is None:
                self.log.warning(
                    "gptcourse: grade cell %s is not a question of %s; it was not run (grade it by hand)",
                    grade_id,
                    info["assignment"],
                )
                cell.outputs = [
                    new_output(
                        "error",
                        ename="NotGraded",
                        evalue="gptcourse grades only the stage's own questions: grade this cell by hand",
                        traceback=[],
                    )
                ]
                continue
            q = questions[qid]
            points = cell_points(q["earned"], q["worth"], float(cell.metadata.nbgrader["points"]))
            cell.outputs = [
                new_output("stream", name="stdout", text=q["report"] + "\n"),
                from_dict(new_output("execute_result", data={"text/plain": repr(points)}, execution_count=None)),
            ]
        earned, worth = sum(q["earned"] for q in questions.values()), sum(q["worth"] for q in questions.values())
        self.log.info(
            "gptcourse: %s's %s graded by the engine: %g of %g points in %.1f s",
            info["student"],
            info["assignment"],
            earned,
            worth,
            graded["seconds"],
        )
        return nb, resources
