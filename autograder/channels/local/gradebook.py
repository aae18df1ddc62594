"""The class gradebook, rebuilt from every student folder of a ``gptcourse grade`` output.

``grades.csv`` keeps the format instructors know, extended at the end::

    submission,build_vocab,...,total,id,name,email
    (max),3,...,32,,,
    alice,3,...,30,1234,"Smith, Alice",alice@uni.edu

a row per student (named as ``channels.local.identity`` finds them), a column per question, the
total, then the student's roster entry (``id``, ``name``, ``email``; without a roster,
``id`` is the id an LMS wrote into the file name, if any). The ``(max)`` row stays second.

A stage with written questions (``build.written``) has, after ``email``, a column per
written question (``scaling (written)``), left empty for the instructor's scores, and
``total with written``. ``total`` stays the autograder's: no written score reaches it.
The instructor types the scores into ``grades.csv``; every rebuild keeps them (read back
by student; a score that is not a number from 0 to the question's points stops the
rebuild, naming its cell, so nothing typed is lost).

With a roster, every student on it has a row: one who handed in nothing comes after the
graded students, ``(no submission)`` in the ``submission`` cell, their ``id``, ``name`` and
``email``, and 0 in every score (the written ones too: there is nothing to grade), so the
gradebook an instructor uploads misses nobody::

    (no submission),0,...,0,77,"Jones, Bob",bob@uni.edu

``canvas.csv`` is what Canvas's gradebook import (Grades > Import) reads: the columns
``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID``, ``Section`` and one assignment
column holding each student's total (with the written scores entered so far); no
points-possible row. It lists the students with a Canvas id (from the roster, or from a
Canvas download's file names), and every roster student with no submission, with 0; the
others are returned as unmatched, for the command to name. A rebuild keeps the assignment
column's name unless a new one is given.

``moodle.csv`` is what Moodle's CSV grade import (Grade administration > Import > CSV file)
reads, as https://docs.moodle.org/405/en/Grade_import describes it::

    Email address,Full name,Assignment: Tokenisation (Real)
    alice@uni.edu,Alice Smith,30
    carol@uni.edu,Carol Li,0

Moodle reads a header row, comma-separated and UTF-8 by default, then asks which column
identifies the user ("Map from") and which user field it holds ("Map to": user id, username,
ID number or email address), and which grade item each other column fills ("Ignore" leaves
one out, "New grade item" makes one named after its header). So the email address comes
first, copied from the roster as written (Moodle compares it as written), then the name (for
the reader; left at "Ignore"), then one grade column: each student's total with the written
scores entered so far, named like ``canvas.csv``'s column (the stage id unless named, kept
by a rebuild). Moodle's importer (grade/import/csv/classes/load_data.php) reads an empty
grade or "-" as no grade, and stops the whole import at an email it does not know; so every
line has an email and a number: the students whose roster entry has an email, and every
roster student with no submission, with 0. The others (on no roster, or with no email on it)
are returned as left out, for the command to name. The file is written when any student
has an email.

A student that two submissions name (handed in twice under two names the roster matches
to them, say) is in neither import file (``Gradebook.named_twice``): each submission keeps
its row in ``grades.csv``, and the command names them until all but one are removed.
"""

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from autograder.engine.results import write_atomic
from autograder.engine.suites import StageTests
from autograder.errors import UsageError

from .records import StudentFolder, read_folder
from .roster import Student, match

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_COLUMNS = ["Email address", "Full name"]  # Moodle's own names for the user fields


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


WRITTEN = " (written)"  # the suffix of a written question's column
WRITTEN_TOTAL = "total with written"
NO_SUBMISSION = "(no submission)"  # the submission cell of a roster student who handed in nothing


def written_column(wid: str) -> str:
    """``grades.csv``'s column of written question ``wid``.

    >>> written_column("scaling")
    'scaling (written)'
    """
    return wid + WRITTEN


@dataclass
class Row:
    """One student's line of the gradebook: the autograder's scores, and the instructor's written
    scores (None: not graded yet)."""

    key: str
    scores: dict[str, float]
    student: Student | None = None
    lms_id: str = ""  # the id an LMS wrote into the file or folder name
    lms: str = ""  # which LMS ("canvas", "moodle", "blackboard"), when one did
    written: dict[str, float | None] = field(default_factory=dict)
    handed_in: bool = True  # False: a roster student with no submission (``absent_row``)

    @property
    def total(self) -> float:
        """The autograder's total (never a written score)."""
        return sum(self.scores.values())

    @property
    def total_with_written(self) -> float:
        return self.total + sum(v for v in self.written.values() if v is not None)

    @property
    def id(self) -> str:
        """The roster's id, else the LMS's id from the path."""
        return self.student.id if self.student else self.lms_id

    @property
    def canvas_id(self) -> str:
        """The id Canvas knows the student by: the roster's, else a Canvas download's."""
        if self.student:
            return "" if self.student.source == "moodle" else self.student.id
        return self.lms_id if self.lms == "canvas" else ""

    @property
    def email(self) -> str:
        """The email address Moodle knows the student by: the roster's (a path carries none)."""
        return self.student.email if self.student else ""

    @property
    def who(self) -> str:
        """The student as the command names them: the row's key, or an absent student's roster name."""
        if self.handed_in or self.student is None:
            return self.key
        return self.student.name or self.student.id


def absent_row(student: Student, qids: list[str], written: list[str]) -> Row:
    """The row of a roster student who handed in nothing: 0 for every question, written ones included.

    >>> row = absent_row(Student("77", "Jones, Bob"), ["encode", "decode"], ["context"])
    >>> row.key, row.id, row.total, row.total_with_written, row.written
    ('(no submission)', '77', 0.0, 0.0, {'context': 0.0})
    """
    return Row(NO_SUBMISSION, {q: 0.0 for q in qids}, student, written={w: 0.0 for w in written}, handed_in=False)


@dataclass
class Gradebook:
    """The class as the gradebook files show it."""

    qids: list[str]
    maxima: dict[str, float]
    rows: list[Row]  # the students graded into the folder
    unmatched: list[str] = field(default_factory=list)  # students the roster does not name
    absent: list[Student] = field(default_factory=list)  # roster entries with no submission
    written: dict[str, float] = field(default_factory=dict)  # written question -> its points

    @property
    def autograded(self) -> float:
        """The points of the stage's autograded questions."""
        return sum(self.maxima.values())

    @property
    def possible(self) -> float:
        """The points of the whole stage: its autograded and its written questions."""
        return self.autograded + sum(self.written.values())

    @property
    def listed(self) -> list[Row]:
        """The rows of ``grades.csv``, ``canvas.csv`` and ``moodle.csv``: the students graded, then the
        roster's absent (0)."""
        return [*self.rows, *(absent_row(s, self.qids, list(self.written)) for s in self.absent)]

    @property
    def named_twice(self) -> dict[str, list[Row]]:
        """The students (by ``Row.id``: the roster's, else an LMS's) that two or more graded
        submissions name, with those submissions' rows. Which one counts is the instructor's
        call: each keeps its row in ``grades.csv``, none reaches ``canvas.csv`` or ``moodle.csv``.

        >>> book = Gradebook([], {}, [Row("alice", {}, Student("s1")), Row("smithalice", {}, Student("s1"))])
        >>> {who: [r.key for r in rows] for who, rows in book.named_twice.items()}
        {'s1': ['alice', 'smithalice']}
        """
        by_id: dict[str, list[Row]] = {}
        for row in self.rows:
            if row.id:
                by_id.setdefault(row.id, []).append(row)
        return {who: rows for who, rows in by_id.items() if len(rows) > 1}


def read_written_scores(path: Path, written: dict[str, float]) -> dict[str, dict[str, float | None]]:
    """The written scores an instructor typed into an existing ``grades.csv``, by student.

    An empty cell is a question not graded yet; anything else must be a number from 0 to
    the question's points (a ``UsageError`` names the cell otherwise).
    """
    path = Path(path)
    if not written or not path.is_file():
        return {}
    with path.open(encoding="utf-8", newline="") as handle:
        table = list(csv.DictReader(handle))
    found: dict[str, dict[str, float | None]] = {}
    for number, line in enumerate(table, start=2):
        key = line.get("submission") or ""
        if key in ("(max)", NO_SUBMISSION) or not key:  # an absent student's 0s are rewritten, not typed
            continue
        scores: dict[str, float | None] = {}
        for wid, points in written.items():
            text = (line.get(written_column(wid)) or "").strip()
            if not text:
                scores[wid] = None
                continue
            try:
                value = float(text)
            except ValueError:
                value = -1.0
            if not 0 <= value <= points:
                raise UsageError(
                    f"{path}, line {number} ({key}), column {written_column(wid)!r}: {text!r} is not a score "
                    f"from 0 to {points:g}; correct it (or empty it) and run again: nothing was rewritten"
                )
            scores[wid] = value
        found[key] = scores
    return found


def build_gradebook(
    folders: list[StudentFolder],
    tests: StageTests,
    roster: list[Student] | None = None,
    written: dict[str, float] | None = None,
    typed: dict[str, dict[str, float | None]] | None = None,
) -> Gradebook:
    """Rows for every student folder, matched to ``roster`` when one is given (the roster entries no
    folder claims are ``absent``: ``Gradebook.listed`` gives them their rows of 0); ``written`` maps
    the stage's written questions to their points, ``typed`` gives the scores already entered."""
    maxima = dict(tests.questions())
    qids = list(maxima)
    written, typed = dict(written or {}), typed or {}
    rows = []
    for folder in folders:
        lms_id, lms = str(folder.record.get("lms_id") or ""), str(folder.record.get("named_by") or "")
        key = lms_id if lms == "blackboard" else folder.key  # a Blackboard attempt numbered asmith-2 is asmith's
        student = match(key, lms_id if lms == "canvas" else "", roster) if roster else None
        entered = {w: typed.get(folder.key, {}).get(w) for w in written}
        rows.append(Row(folder.key, scores_from_results(folder.results, qids), student, lms_id, lms, entered))
    book = Gradebook(qids, maxima, rows, written=written)
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
    wids = list(book.written)
    extra = [*map(written_column, wids), WRITTEN_TOTAL] if wids else []
    writer.writerow(["submission", *book.qids, "total", "id", "name", "email", *extra])
    top = [*(_number(book.written[w]) for w in wids), _number(book.possible)]
    writer.writerow(
        [
            "(max)",
            *(_number(book.maxima[q]) for q in book.qids),
            _number(book.autograded),
            "",
            "",
            "",
            *(top if wids else []),
        ]
    )
    for row in book.listed:
        student = row.student or Student("")
        typed = ["" if row.written.get(w) is None else _number(row.written[w]) for w in wids]
        writer.writerow(
            [
                row.key,
                *(_number(row.scores[q]) for q in book.qids),
                _number(row.total),
                row.id,
                student.name,
                student.email,
                *([*typed, _number(row.total_with_written)] if wids else []),
            ]
        )
    return buffer.getvalue()


def canvas_csv(book: Gradebook, assignment: str) -> tuple[str, list[str]]:
    """``canvas.csv`` for Canvas's gradebook import, and the students left out (no Canvas id)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*CANVAS_COLUMNS, assignment])
    left_out = []
    twice = book.named_twice
    for row in book.listed:
        if not row.canvas_id or row.id in twice:
            left_out.append(row.key)
            continue
        s = row.student or Student(row.canvas_id, row.key)
        name = s.name or (row.key if row.handed_in else s.id)
        writer.writerow([name, s.id, s.sis_user_id, s.sis_login_id, s.section, _number(row.total_with_written)])
    return buffer.getvalue(), left_out


def moodle_csv(book: Gradebook, item: str) -> tuple[str, list[str]]:
    """``moodle.csv`` for Moodle's CSV grade import, and the students left out (no email address)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*MOODLE_COLUMNS, item])
    left_out = []
    twice = book.named_twice
    for row in book.listed:
        if not row.email or row.id in twice:
            left_out.append(row.who)
            continue
        writer.writerow([row.email, row.student.name, _number(row.total_with_written)])
    return buffer.getvalue(), left_out


def grade_column(path: Path, fixed: list[str]) -> str | None:
    """The grade column of an existing import file whose first columns are ``fixed`` (None when there is none)."""
    try:
        with Path(path).open(encoding="utf-8", newline="") as handle:
            header = next(csv.reader(handle), [])
    except OSError:
        return None
    return header[len(fixed)] if len(header) > len(fixed) and header[: len(fixed)] == fixed else None


def canvas_column(path: Path) -> str | None:
    """The assignment column of an existing ``canvas.csv`` (None when there is none)."""
    return grade_column(path, CANVAS_COLUMNS)


def moodle_column(path: Path) -> str | None:
    """The grade column of an existing ``moodle.csv`` (None when there is none)."""
    return grade_column(path, MOODLE_COLUMNS)


def write_gradebook(
    out_dir: Path,
    tests: StageTests,
    roster: list[Student] | None = None,
    canvas_assignment: str | None = None,
    written: dict[str, float] | None = None,
    moodle_item: str | None = None,
) -> Gradebook:
    """Rebuild ``grades.csv`` (and ``canvas.csv`` when any student has a Canvas id, ``moodle.csv`` when
    any has an email address) from every folder in ``out_dir``, keeping the written scores typed into the
    old ``grades.csv`` (``written``: question -> points) and the grade column of the old ``canvas.csv``
    and ``moodle.csv`` unless ``canvas_assignment`` or ``moodle_item`` names another."""
    out_dir = Path(out_dir)
    typed = read_written_scores(out_dir / "grades.csv", dict(written or {}))
    book = build_gradebook(read_folder(out_dir, tests.stage_id), tests, roster, written, typed)
    write_atomic(out_dir / "grades.csv", gradebook_csv(book))
    canvas, moodle = out_dir / "canvas.csv", out_dir / "moodle.csv"
    canvas_text = moodle_text = None
    if any(row.canvas_id for row in book.listed):
        canvas_text, _ = canvas_csv(book, canvas_assignment or canvas_column(canvas) or tests.stage_id)
    if any(row.email for row in book.listed):
        moodle_text, _ = moodle_csv(book, moodle_item or moodle_column(moodle) or tests.stage_id)
    _write_or_remove(canvas, canvas_text)
    _write_or_remove(moodle, moodle_text)
    return book


def _write_or_remove(path: Path, text: str | None) -> None:
    """Write ``text`` to ``path``, or remove the file when there is nothing to write (an import file
    no student can be in any more)."""
    if text is not None:
        write_atomic(path, text)
    elif path.exists():
        path.unlink()
