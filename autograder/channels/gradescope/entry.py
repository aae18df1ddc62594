"""Entry point of the Gradescope autograder (``run_autograder`` calls it).

Grades the notebook in ``ROOT/submission`` with the suites and fixtures shipped in the
zip (``stage/``), through the engine's one pipeline, then writes
``ROOT/results/results.json`` once every process the submission started is gone.
``ROOT`` is ``/autograder`` on Gradescope; tests point it elsewhere. The stage and its
settings (hidden-test visibility, rate limit, Gradescope's timeout) come from the zip's
``gptcourse.json``. ``--self-check`` (the end of ``setup.sh``) grades an empty notebook,
so that a broken image fails when it is built, not at a first submission. The written
questions (``stage/written.json``) are graded by hand on Gradescope: the output lists the
answer to each, and the score never counts them.

Results are always written before Gradescope's timeout: the submission's code gets the
timeout less what start-up used and a reserve for judging and writing
(``engine.container.grading_budget``); a watchdog writes a valid "not graded in time"
document shortly before the timeout should anything still be running. The first lines
printed (which only instructors see) give the container's memory and CPU limits and the
budget.
"""

import argparse
import json
import sys
import tempfile
import threading
from pathlib import Path

from autograder.engine import processes, sandbox
from autograder.engine.container import container_limits, grading_budget, process_seconds
from autograder.engine.fixtures import read_fixture_file
from autograder.engine.judge import TestResult
from autograder.engine.pipeline import grade_submission
from autograder.engine.results import cell_notes, dump_json, gradescope_json, write_atomic
from autograder.engine.runner import Limits
from autograder.engine.submission import SubmissionError, load_notebook_json, written_answers
from autograder.engine.suites import StageTests

from .rate_limit import check_rate_limit
from .settings import GradescopeSettings, read_shipped

SOURCE = Path(__file__).resolve().parents[3]  # /autograder/source: the zip's root
WATCHDOG_MARGIN = 20.0  # seconds before Gradescope's timeout at which the watchdog writes
LATE = "not graded: grading did not finish within the time Gradescope allows"


def find_submission(folder: Path) -> tuple[Path | None, str]:
    """The notebook (or exported zip) to grade, and a note when the choice was not obvious."""
    candidates = sorted(
        p for p in folder.rglob("*") if p.suffix.lower() in (".ipynb", ".zip") and ".ipynb_checkpoints" not in p.parts
    )
    notebooks = [p for p in candidates if p.suffix.lower() == ".ipynb"] or candidates
    if not notebooks:
        return None, "No notebook (.ipynb) was found in your submission."
    if len(notebooks) > 1:
        return notebooks[0], f"Several notebooks were submitted; {notebooks[0].name} was graded."
    return notebooks[0], ""


def shipped_tests(stage_id: str, source: Path = SOURCE) -> StageTests:
    """The zip's suites and fixtures."""
    folder = source / "stage"
    fixtures = folder / "fixtures.json"
    return StageTests.load(stage_id, folder / "public.py", folder / "hidden.py", *read_fixture_file(fixtures))


def shipped_written(source: Path = SOURCE) -> list[dict]:
    """The stage's written questions as the zip carries them (``stage/written.json``; none in an older zip)."""
    path = source / "stage" / "written.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else []


ANSWER_SHOWN = 4000  # characters of each written answer repeated in the output


def written_section(submission: Path | None, questions: list[dict]) -> str:
    """The output's part on the written questions: each one's answer as found in the notebook, for
    the graders (and the student, who sees what was handed in). Never scored here."""
    if not questions:
        return ""
    unread = "no notebook was found" if submission is None else ""
    try:
        answers = written_answers(load_notebook_json(submission)) if submission is not None else {}
    except SubmissionError:
        answers, unread = {}, "the notebook could not be read"
    total = sum(float(q["points"]) for q in questions)
    lines = [f"Written questions ({total:g} points, graded by hand after the deadline; not part of this score):"]
    for q in questions:
        text = answers.get(q["id"], "")
        if unread:
            state = f"no answer: {unread}"
        elif q["id"] not in answers:
            state = "no answer cell found (it was deleted): write your answer under the question"
        elif not text:
            state = "not answered yet"
        else:
            state = f"answered ({len(text.split())} words)"
        lines.append(f"- {q['id']} ({float(q['points']):g} points): {state}")
        if text:
            shown = text if len(text) <= ANSWER_SHOWN else text[:ANSWER_SHOWN] + " [... cut here; the notebook has all]"
            lines += ["  " + line for line in shown.splitlines()]
    return "\n".join(lines)


def grade(root: Path, tests: StageTests, settings: GradescopeSettings, limits: Limits | None = None) -> dict:
    """Grade ``root/submission`` and return the results.json document (not yet written)."""
    submission, note = find_submission(root / "submission")
    graded = grade_submission(submission, tests, limits or Limits(), missing=note)
    processes.reap_strays()
    notes = "\n".join(
        x
        for x in (
            note if submission is not None else "",
            cell_notes(graded.outcome),
            written_section(submission, shipped_written()),
        )
        if x
    )
    return gradescope_json(
        graded.results, output=notes, execution_time=graded.seconds, hidden_visibility=settings.hidden_visibility
    )


class Watchdog:
    """Writes a valid results.json of zeros if grading is still running ``seconds`` from now.

    Whatever happens, the student then sees why there is no score, rather than Gradescope's
    "The autograder failed to execute correctly". ``write`` (the real results) wins when it
    comes first, and replaces the watchdog's document when it comes after.
    """

    def __init__(self, target: Path, tests: StageTests, settings: GradescopeSettings, seconds: float) -> None:
        self.target, self.tests, self.settings = target, tests, settings
        self._lock = threading.Lock()
        self._written = False
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True

    def start(self) -> "Watchdog":
        self._timer.start()
        return self

    def late_document(self) -> dict:
        results = [TestResult(c.key, c.qid, c.name, c.public, 0.0, c.points, LATE) for c in self.tests.cases]
        note = (
            "Grading did not finish within the time Gradescope allows, so nothing was scored. "
            "Please tell your instructor, who can regrade this submission."
        )
        return gradescope_json(results, output=note, hidden_visibility=self.settings.hidden_visibility)

    def _fire(self) -> None:
        with self._lock:
            if not self._written:
                write_atomic(self.target, dump_json(self.late_document()))
                self._written = True

    def write(self, doc: dict) -> None:
        """Write the real results (always, even after the watchdog fired) and stop the watchdog."""
        self._timer.cancel()
        with self._lock:
            write_atomic(self.target, dump_json(doc))
            self._written = True


def read_metadata(path: Path) -> dict:
    """``submission_metadata.json`` at ``path`` (an empty document when missing or unreadable)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def self_check(settings: GradescopeSettings, torch_version: str) -> int:
    """Check the environment and grade an empty notebook; non-zero when anything is wrong."""
    import torch

    problems = []
    if torch.__version__ != torch_version or torch.version.cuda is not None:
        problems.append(
            f"torch {torch.__version__} (CUDA {torch.version.cuda}) is installed; the fixtures need {torch_version}"
        )
    tests = shipped_tests(settings.stage)
    with tempfile.TemporaryDirectory(prefix="gptcourse-selfcheck-") as tmp:
        root = Path(tmp)
        (root / "submission").mkdir()
        empty = {
            "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": "x = 1"}],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
        (root / "submission" / "empty.ipynb").write_text(json.dumps(empty), encoding="utf-8")
        doc = grade(root, tests, settings)
    if len(doc["tests"]) != len(tests.cases) or doc["score"] != 0:
        problems.append(f"grading an empty notebook gave {doc['score']} points over {len(doc['tests'])} tests")
    if "could not be graded" in doc["output"]:
        problems.append(doc["output"])
    for problem in problems:
        print(f"autograder self-check FAILED: {problem}", file=sys.stderr)
    if not problems:
        worth = sum(c.points for c in tests.cases)
        print(
            f"autograder ready: {settings.stage}, {len(tests.cases)} tests worth "
            f"{worth:g} points, torch {torch.__version__}"
        )
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", type=Path, default=Path("/autograder"))
    parser.add_argument("--settings", type=Path, default=SOURCE / "gptcourse.json", help="the zip's gptcourse.json")
    parser.add_argument(
        "--self-check", action="store_true", help="check the environment, grade an empty notebook, exit"
    )
    args = parser.parse_args(argv)
    settings, torch_version = read_shipped(args.settings)
    processes.become_subreaper()
    if args.self_check:
        return self_check(settings, torch_version)
    timeout = settings.timeout_minutes * 60
    tests = shipped_tests(settings.stage)
    watchdog = Watchdog(
        args.root / "results" / "results.json", tests, settings, timeout - process_seconds() - WATCHDOG_MARGIN
    ).start()
    budget = grading_budget(timeout, elapsed=process_seconds())
    print(
        f"limits: {container_limits().describe()}; Gradescope timeout {settings.timeout_minutes:g} min, "
        f"the submission's code may run {budget:.0f} s in all"
    )
    limited = check_rate_limit(read_metadata(args.root / "submission_metadata.json"), settings)
    # Where the child cannot get a mount namespace it runs as another user on the real
    # filesystem: the metadata (names, emails, earlier scores) must be ours alone.
    sandbox.protect([args.root / "submission_metadata.json"])
    if limited is not None:
        doc = limited.doc
    else:
        doc = grade(args.root, tests, settings, Limits(total_timeout=budget))
    watchdog.write(doc)
    print(doc["output"].splitlines()[0])
    print(f"graded in {process_seconds():.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
