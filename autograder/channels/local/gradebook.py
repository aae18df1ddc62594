"""The class gradebook, rebuilt from every student folder of a ``gptcourse grade`` output.

``grades.csv`` keeps the format instructors know, extended at the end::

    submission,build_vocab,...,total,id,name,email
    (max),3,...,32,,,
    alice,3,...,30,1234,"Smith, Alice",alice@uni.edu

a row per student (named as ``channels.local.identity`` finds them), a column per question, the
total, then the student's roster entry (``id``, ``name``, ``email``; without a roster,
``id`` is the id an LMS wrote into the file name, if any). The ``(max)`` row stays second.

``canvas.csv`` is what Canvas's gradebook import (Grades > Import) reads: the columns
``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID``, ``Section`` and one assignment
column holding each student's total; no points-possible row. It lists the students with
a Canvas id (from the roster, or from a Canvas download's file names); the others are
returned as unmatched, for the command to name.
"""

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from autograder.engine.results import write_atomic
from autograder.engine.suites import StageTests

from .records import StudentFolder, read_folder
from .roster import Student, match

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def scores_from_results(doc: dict, qids: list[str]) -> dict[str, float]:
    """Points earned per question, read from a results.json document (test names are ``qid: ...``).

    >>> scores_from_results({"tests": [{"name": "a: x", "score": 1}, {"name": "a: y", "score": 2}]}, ["a", "b"])
    {'a': 3.0, 'b': 0.0}
    """
    scores = {q: 0.0 for q in qids}
    for test in doc.get("tests", []):
        qid = str(test.get("name", "")).split(":", 1)[0]
        if qid in scores:
            scores[qid] += float(test.get("score", 0))
    return scores


@dataclass
class Row:
    """One student's line of the gradebook."""

    key: str
    scores: dict[str, float]
    student: Student | None = None
    lms_id: str = ""  # the id an LMS wrote into the file or folder name
    lms: str = ""  # which LMS ("canvas", "moodle"), when one did

    @property
    def total(self) -> float:
        return sum(self.scores.values())

    @property
    def id(self) -> str:
        """The roster's id, else the LMS's id from the path."""
        return self.student.id if self.student else self.lms_id

    @property
    def canvas_id(self) -> str:
        """The id Canvas knows the student by: the roster's, else a Canvas download's."""
        return self.student.id if self.student else (self.lms_id if self.lms == "canvas" else "")


@dataclass
class Gradebook:
    """The class as the gradebook files show it."""

    qids: list[str]
    maxima: dict[str, float]
    rows: list[Row]
    unmatched: list[str] = field(default_factory=list)  # students the roster does not name
    absent: list[Student] = field(default_factory=list)  # roster entries with no submission


def build_gradebook(folders: list[StudentFolder], tests: StageTests, roster: list[Student] | None = None) -> Gradebook:
    """Rows for every student folder, matched to ``roster`` when one is given."""
    maxima = dict(tests.questions())
    qids = list(maxima)
    rows = []
    for folder in folders:
        lms_id, lms = str(folder.record.get("lms_id") or ""), str(folder.record.get("named_by") or "")
        student = match(folder.key, lms_id if lms == "canvas" else "", roster) if roster else None
        rows.append(Row(folder.key, scores_from_results(folder.results, qids), student, lms_id, lms))
    book = Gradebook(qids, maxima, rows)
    if roster:
        book.unmatched = [r.key for r in rows if r.student is None]
        claimed = {r.student.id for r in rows if r.student}
        book.absent = [s for s in roster if s.id not in claimed]
    return book


def _number(value: float) -> str:
    return f"{value:g}"


def gradebook_csv(book: Gradebook) -> str:
    """``grades.csv`` (see the module docstring)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["submission", *book.qids, "total", "id", "name", "email"])
    writer.writerow(
        ["(max)", *(_number(book.maxima[q]) for q in book.qids), _number(sum(book.maxima.values())), "", "", ""]
    )
    for row in book.rows:
        student = row.student or Student("")
        writer.writerow(
            [
                row.key,
                *(_number(row.scores[q]) for q in book.qids),
                _number(row.total),
                row.id,
                student.name,
                student.email,
            ]
        )
    return buffer.getvalue()


def canvas_csv(book: Gradebook, assignment: str) -> tuple[str, list[str]]:
    """``canvas.csv`` for Canvas's gradebook import, and the students left out (no Canvas id)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*CANVAS_COLUMNS, assignment])
    left_out = []
    for row in book.rows:
        if not row.canvas_id:
            left_out.append(row.key)
            continue
        s = row.student or Student(row.canvas_id, row.key)
        writer.writerow([s.name or row.key, s.id, s.sis_user_id, s.sis_login_id, s.section, _number(row.total)])
    return buffer.getvalue(), left_out


def write_gradebook(
    out_dir: Path, tests: StageTests, roster: list[Student] | None = None, canvas_assignment: str | None = None
) -> Gradebook:
    """Rebuild ``grades.csv`` (and ``canvas.csv`` when any student has a Canvas id) from every folder in ``out_dir``."""
    out_dir = Path(out_dir)
    book = build_gradebook(read_folder(out_dir, tests.stage_id), tests, roster)
    write_atomic(out_dir / "grades.csv", gradebook_csv(book))
    target = out_dir / "canvas.csv"
    if any(row.canvas_id for row in book.rows):
        text, _ = canvas_csv(book, canvas_assignment or tests.stage_id)
        write_atomic(target, text)
    elif target.exists():
        target.unlink()
    return book
