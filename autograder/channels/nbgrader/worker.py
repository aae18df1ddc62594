"""One nbgrader submission graded by the engine, in a process of its own.

``python -m autograder.channels.nbgrader.worker TESTS NOTEBOOK OUT`` loads a stage's
tests from the folder ``TESTS`` (``public.py``, ``hidden.py``, ``fixtures.json``, which
the build puts in the course directory), grades ``NOTEBOOK`` (nbgrader's sanitized copy
of a submission) through the engine's pipeline: the student's code in confined child
processes, judged here, every stray process killed before anything is written. It
writes to ``OUT``, as JSON, each question's points and report for its grade cell and
the notes on cells that failed; with ``--results DIR`` also ``DIR/<name>/results.json``
(for ``gptcourse report``).

With ``--serve`` it grades one submission per request, so that Python, torch and the
engine's fork servers start once per ``nbgrader autograde`` rather than once per student:
each line on standard input is a command line as above (a JSON list), each answer a JSON
line on standard output (``{"status": 0}``, or 1 and the error); it stops when standard
input closes or no request came for ``--idle`` seconds. Each submission is graded as
``gptcourse grade`` grades a class: its own children, every stray killed before the next.

nbgrader's own process never hosts the engine's children: the formgrader's Autograde
button runs autograde inside the Jupyter server, whose other processes (the
instructor's kernels) the engine's sweep of stray processes must never touch.
"""

import argparse
import json
import os
import select
import sys
import traceback
from pathlib import Path

from autograder.engine.fixtures import read_fixture_file
from autograder.engine.judge import TestResult
from autograder.engine.pipeline import Graded, grade_batch
from autograder.engine.results import cell_notes, dump_json, gradescope_json, write_atomic
from autograder.engine.runner import Limits
from autograder.engine.submission import TAG_CHECK, SubmissionError, load_notebook_json
from autograder.engine.suites import StageTests

from . import IDLE, TEST_FILES, question_of

_loaded: dict[tuple, StageTests] = {}  # a serving worker's tests, by folder and the files' times


def load_tests(folder: Path) -> StageTests:
    """The tests of the stage whose files are in ``folder`` (the folder is named after the stage);
    read again only when one of the files changed."""
    folder = Path(folder)
    missing = [name for name in TEST_FILES if not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(
            f"{folder} lacks {', '.join(missing)}: run `gptcourse build` to make the course's test files"
        )
    public, hidden, fixtures = (folder / name for name in TEST_FILES)
    key = (str(folder.resolve()), *(os.stat(p).st_mtime_ns for p in (public, hidden, fixtures)))
    if key not in _loaded:
        _loaded[key] = StageTests.load(folder.name, public, hidden, *read_fixture_file(fixtures))
    return _loaded[key]


def skip_question_cells(notebook: dict, qids: list[str]) -> dict:
    """The notebook with the questions' grade cells tagged as check cells, which the engine does not run.

    nbgrader has restored their source (``check(...)``), but a student may have removed
    their tags, or nbgrader may have put a deleted one back without them.
    """
    for cell in notebook["cells"]:
        meta = cell.get("metadata") if isinstance(cell, dict) and isinstance(cell.get("metadata"), dict) else {}
        nbg = meta.get("nbgrader") if isinstance(meta.get("nbgrader"), dict) else {}
        if isinstance(nbg.get("grade_id"), str) and question_of(nbg["grade_id"], qids):
            tags = meta.get("tags") if isinstance(meta.get("tags"), list) else []
            meta["tags"] = [*tags, TAG_CHECK]
            cell["metadata"] = meta
    return notebook


def question_report(qid: str, results: list[TestResult], hidden_details: bool = True) -> str:
    """What a question's grade cell shows: its points, then its tests (hidden ones by name unless told not to).

    >>> r = [TestResult("q: a", "q", "a", True, 1.0, 1.0, ""),
    ...      TestResult("q: b", "q", "b", False, 0.0, 2.0, "wrong shape")]
    >>> print(question_report("q", r))
    q: 1 of 3 points (graded by gptcourse)
    Public tests: 1 of 1 passed.
      [ok  ] a
    Hidden tests: 0 of 1 passed.
      [FAIL] b
             wrong shape
    """
    mine = [r for r in results if r.qid == qid]
    lines = [
        f"{qid}: {sum(r.score for r in mine):g} of {sum(r.max_score for r in mine):g} points (graded by gptcourse)"
    ]
    for label, public in (("Public", True), ("Hidden", False)):
        group = [r for r in mine if r.public == public]
        if not group:
            continue
        lines.append(f"{label} tests: {sum(r.passed for r in group)} of {len(group)} passed.")
        if not public and not hidden_details:
            continue
        for r in group:
            lines.append(f"  [{'ok  ' if r.passed else 'FAIL'}] {r.name}")
            if not r.passed and r.message:
                lines.extend("         " + line for line in r.message.splitlines())
    return "\n".join(lines)


def summary(graded: Graded, tests: StageTests, hidden_details: bool = True) -> dict:
    """What the preprocessor writes into the notebook, as JSON."""
    fatal = f"Your notebook could not be graded: {graded.outcome.fatal}\n" if graded.outcome.fatal else ""
    questions = []
    for qid, worth in tests.questions():
        earned = sum(r.score for r in graded.results if r.qid == qid)
        questions.append(
            {
                "qid": qid,
                "earned": earned,
                "worth": worth,
                "report": fatal + question_report(qid, graded.results, hidden_details),
            }
        )
    return {
        "questions": questions,
        "cell_errors": {str(i): m for i, m in graded.outcome.cell_errors.items()},
        "fallback": graded.outcome.isolation.get("fallback"),
        "seconds": graded.seconds,
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--serve"]:
        return serve(float(argv[2]) if argv[1:2] == ["--idle"] else IDLE)
    return grade_one(argv)


def serve(idle: float = IDLE) -> int:
    """Grade a submission per request line (``grade_one``'s arguments as a JSON list) and answer
    each with a JSON line, until standard input closes or no request comes for ``idle`` seconds."""
    answers = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # whatever else prints goes to standard error, never among the answers
    while True:
        ready, _, _ = select.select([sys.stdin], [], [], idle)
        line = sys.stdin.readline() if ready else ""
        if not line:
            return 0
        try:
            answer = {"status": grade_one(json.loads(line))}
        except (Exception, SystemExit):  # this submission's grading failed (or its arguments): say why, serve the next
            answer = {"status": 1, "error": traceback.format_exc()[-3000:]}
        answers.write(json.dumps(answer) + "\n")


def grade_one(argv: list[str]) -> int:
    """Grade the submission the command line ``argv`` names (see the module's docstring)."""
    parser = argparse.ArgumentParser(
        prog="python -m autograder.channels.nbgrader.worker", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("tests", help="folder of the stage's public.py, hidden.py and fixtures.json")
    parser.add_argument("notebook", help="the submission (nbgrader's sanitized copy)")
    parser.add_argument("out", help="where to write the summary (JSON)")
    parser.add_argument("--name", default="submission", help="the submission's name (the student)")
    parser.add_argument("--timeout", type=float, default=Limits.total_timeout, help="seconds for the whole submission")
    parser.add_argument("--cell-timeout", type=float, default=Limits.cell_timeout, help="seconds per notebook cell")
    parser.add_argument("--test-timeout", type=float, help="cap every test's own time limit (seconds)")
    parser.add_argument("--brief-hidden", action="store_true", help="say only how many hidden tests passed")
    parser.add_argument("--results", help="also write RESULTS/<name>/results.json")
    args = parser.parse_args(argv)
    tests = load_tests(Path(args.tests))
    qids = [q for q, _ in tests.questions()]
    limits = Limits(
        total_timeout=args.timeout, cell_timeout=min(args.cell_timeout, args.timeout), case_timeout=args.test_timeout
    )
    path = Path(args.notebook)
    try:
        notebook = skip_question_cells(load_notebook_json(path), qids)
    except SubmissionError:
        pass  # the engine refuses the file itself, with a reason the student sees
    else:
        path.write_text(json.dumps(notebook), encoding="utf-8")

    def write(graded: Graded) -> None:
        if args.results:
            doc = gradescope_json(graded.results, output=cell_notes(graded.outcome), execution_time=graded.seconds)
            write_atomic(Path(args.results) / graded.name / "results.json", dump_json(doc))

    (graded,) = grade_batch([path], [args.name], tests, limits, progress=False, write=write)
    write_atomic(Path(args.out), json.dumps(summary(graded, tests, not args.brief_hidden)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
