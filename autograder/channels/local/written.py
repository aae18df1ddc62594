"""Written questions in a ``gptcourse grade`` folder: the answers, for the instructor to grade by hand.

Grading keeps each student's answers as ``<out>/<student>/written.json`` (read from the
answer cells of the notebook graded: ``engine.submission.written_answers``), and every
rebuild of the gradebook writes ``<out>/written.md``: per question its prompt and rubric,
then every student's answer with the score typed into ``grades.csv`` so far. The scores
themselves go into ``grades.csv``'s written columns (``gradebook``); the autograder never
scores an answer.
"""

import json
from pathlib import Path

from autograder.engine.results import write_atomic
from autograder.engine.submission import SubmissionError, load_notebook_json, written_answers

from .gradebook import Gradebook, written_column

ANSWERS = "written.json"
CLASS_FILE = "written.md"


def save_answers(notebook: Path | None, folder: Path) -> None:
    """Write ``folder/written.json``: the notebook's written answers (``{}`` when it could not be read)."""
    try:
        answers = written_answers(load_notebook_json(notebook)) if notebook is not None else {}
    except SubmissionError:
        answers = {}
    write_atomic(Path(folder) / ANSWERS, json.dumps(answers, indent=1, ensure_ascii=False, sort_keys=True) + "\n")


def read_answers(folder: Path) -> dict[str, str]:
    """A student's saved answers (``{}`` when none were saved)."""
    try:
        doc = json.loads((Path(folder) / ANSWERS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in doc.items() if isinstance(v, str)} if isinstance(doc, dict) else {}


def changed_since_scored(out_dir: Path, book: Gradebook, before: dict[str, dict[str, str]]) -> list[tuple[str, str]]:
    """``(student, question)`` for each written answer that differs from ``before`` (a student's
    answers before this run regraded them) while ``grades.csv`` keeps a score typed for it: a score
    given to another answer than the one now on file.

    >>> import tempfile; folder = Path(tempfile.mkdtemp()); (folder / "bob").mkdir()
    >>> _ = (folder / "bob" / ANSWERS).write_text('{"split": "a new answer"}')
    >>> from types import SimpleNamespace as Row
    >>> book = Row(rows=[Row(key="bob", written={"split": 2.0, "context": None})])
    >>> changed_since_scored(folder, book, {"bob": {"split": "the old answer"}})
    [('bob', 'split')]
    """
    changed = []
    for row in (r for r in book.rows if r.key in before):
        now = read_answers(Path(out_dir) / row.key)
        for qid, score in row.written.items():
            if score is not None and now.get(qid, "") != before[row.key].get(qid, ""):
                changed.append((row.key, qid))
    return changed


def still_to_grade(out_dir: Path, book: Gradebook) -> tuple[int, int]:
    """``(answered, blank)``: the written answers with no score in ``grades.csv`` yet, those a student
    wrote and those left blank (the placeholder, an emptied cell, or a notebook that could not be read)."""
    answered = blank = 0
    for row in book.rows:
        answers = read_answers(Path(out_dir) / row.key)
        for qid, score in row.written.items():
            if score is None:
                answered += bool(answers.get(qid))
                blank += not answers.get(qid)
    return answered, blank


def _quoted(text: str) -> list[str]:
    return [f"> {line}" if line else ">" for line in text.splitlines()]


def class_markdown(out_dir: Path, questions: list, book: Gradebook) -> str:
    """``written.md``: by question, its prompt and rubric, then each student's answer and typed score."""
    lines = [
        "# Written answers",
        "",
        "Grade each answer with its rubric and type the score into its column of `grades.csv`",
        "(empty means not graded yet); the next `gptcourse grade` (with or without files) keeps",
        "the scores and adds them to `total with written` and to the LMS imports (`canvas.csv`, `moodle.csv`).",
    ]
    for q in questions:
        graded = [r for r in book.rows if r.written.get(q.id) is not None]
        lines += ["", f"## {q.id} ({q.points:g} points): {len(graded)} of {len(book.rows)} graded", ""]
        lines += ["Prompt:", "", *_quoted(q.prompt), "", "Rubric:", "", q.rubric, ""]
        for row in book.rows:
            answer = read_answers(Path(out_dir) / row.key).get(q.id, "")
            score = row.written.get(q.id)
            typed = "not graded yet" if score is None else f"{score:g} / {q.points:g}"
            lines += [f"### {row.key} ({written_column(q.id)}: {typed})", ""]
            lines += _quoted(answer) if answer else ["*(no answer)*"]
            lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def write_class_file(out_dir: Path, questions: list, book: Gradebook) -> Path | None:
    """Write ``out_dir/written.md`` (None, and no file, for a stage without written questions)."""
    target = Path(out_dir) / CLASS_FILE
    if not questions:
        target.unlink(missing_ok=True)
        return None
    write_atomic(target, class_markdown(out_dir, questions, book))
    return target
