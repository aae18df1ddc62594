"""``gptcourse grade --stage S --nbgrader COURSE``: nbgrader's own autograde, then its gradebook.

It checks that the course's configuration grades through the engine (its
``nbgrader_config.py`` loads ``gptcourse_config.py``), runs ``nbgrader autograde S
--force`` in the course directory (``--student`` for one student) and reads each
student's scores back from the gradebook as the formgrader and ``nbgrader export`` see
them: per question (an instructor's manual score where there is one), per written
question (the formgrader's score), the late penalty, the total. There is no other way in:
the scores are always nbgrader's, whose total adds the written questions' manual scores to
the engine's.

Each student whose ``results.json`` the engine wrote also gets the record ``graded.json``
beside it, naming the stage and the course (``record_course``), so that ``gptcourse report``
reads the written questions' scores from that course's gradebook (``written_scores``): the
ones typed in the formgrader by the time the report is made.
"""

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from autograder.channels.local.records import RECORD, RESULTS, StudentFolder
from autograder.engine.results import write_atomic
from autograder.errors import UsageError

from . import question_of, written_cell_id

if TYPE_CHECKING:  # report_written's annotation; it imports the class report itself when it runs
    from autograder.reports.class_report import WrittenStats

PREPROCESSOR = "autograder.channels.nbgrader.preprocessor.GradeWithEngine"


@dataclass
class Row:
    """One student's submission as the gradebook holds it."""

    student: str
    scores: dict[str, float] = field(default_factory=dict)  # question -> score (manual where given)
    penalty: float = 0.0  # late submission penalty
    total: float = 0.0  # after the penalty
    manual: list[str] = field(default_factory=list)  # questions whose score an instructor set
    ungraded: list[str] = field(default_factory=list)  # written answers awaiting the formgrader (an empty one is 0)


def course_config(course: Path):
    """The traitlets config of ``course/nbgrader_config.py`` (and what it loads)."""
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    if not (course / "nbgrader_config.py").exists():
        return Config()
    return PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()


def _db_url(course: Path) -> str:
    """The gradebook's address; a usage error when it is an SQLite file not made yet."""
    from nbgrader.coursedir import CourseDirectory

    url = CourseDirectory(config=course_config(course), root=str(course.resolve())).db_url
    if url.startswith("sqlite:///") and not Path(url[len("sqlite:///") :]).exists():
        raise UsageError(f"{course} has no gradebook yet: run `nbgrader generate_assignment <stage>` there first")
    return url


def require_engine(course: Path) -> None:
    """Refuse a course whose ``nbgrader autograde`` would run submissions in a kernel."""
    if not course.is_dir():
        raise UsageError(f"no such nbgrader course directory: {course}")
    chosen = course_config(course).Autograde.get("autograde_preprocessors", [])
    names = [p if isinstance(p, str) else f"{p.__module__}.{p.__qualname__}" for p in chosen]
    if PREPROCESSOR not in names:
        raise UsageError(
            f"{course}/nbgrader_config.py does not make nbgrader autograde grade through the gptcourse engine: "
            'it must load gptcourse_config.py (`load_subconfig("gptcourse_config.py")`; `gptcourse build` writes both)'
        )


def nbgrader_env() -> dict[str, str]:
    """The environment for nbgrader: this Python's bin first on PATH (nbgrader runs ``alembic``)."""
    return dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")


def run_autograde(
    course: Path, assignment: str, student: str | None = None, settings: tuple[str, ...] = (), quiet: bool = False
) -> int:
    """``nbgrader autograde ASSIGNMENT --force`` in ``course``; its exit status."""
    command = [sys.executable, "-m", "nbgrader", "autograde", assignment, "--force", *settings]
    if student:
        command.append(f"--student={student}")
    done = subprocess.run(command, cwd=course, env=nbgrader_env(), capture_output=quiet, text=True)
    if done.returncode != 0 and quiet:
        print(done.stdout[-5000:] + done.stderr[-5000:], file=sys.stderr)
    return done.returncode


def gradebook_rows(
    course: Path, assignment: str, qids: list[str], written: list[str] = ()
) -> tuple[list[tuple[str, float]], list[Row]]:
    """The questions' maxima in the gradebook, and every submission of ``assignment``, by student.

    ``written`` are the stage's written questions (manually graded answer cells): their
    columns follow the code questions', holding the formgrader's scores."""
    from nbgrader.api import Gradebook, MissingEntry

    def column(grade_id: str) -> str | None:
        return question_of(grade_id, qids) or next((w for w in written if written_cell_id(w) == grade_id), None)

    rows = []
    with Gradebook(_db_url(course)) as gb:
        try:
            record = gb.find_assignment(assignment)
        except MissingEntry:
            raise UsageError(
                f"the gradebook has no assignment {assignment}: run `nbgrader generate_assignment {assignment}` first"
            ) from None
        maxima = {column(c.name): float(c.max_score) for n in record.notebooks for c in n.grade_cells}
        questions = [(q, maxima[q]) for q in [*qids, *written] if q in maxima]
        for submission in sorted(record.submissions, key=lambda s: s.student.id):
            row = Row(submission.student.id, total=float(submission.score))
            for notebook in submission.notebooks:
                row.penalty += float(notebook.late_submission_penalty or 0.0)
                for grade in notebook.grades:
                    qid = column(grade.name)
                    if qid is not None:
                        row.scores[qid] = float(grade.score)
                        if qid in written and grade.needs_manual_grade and grade.manual_score is None:
                            row.ungraded.append(qid)
                        elif grade.manual_score is not None and qid not in written:
                            row.manual.append(qid)
            rows.append(row)
    return questions, rows


def record_course(out: Path, course: Path, assignment: str, students: list[str]) -> None:
    """Write ``out/<student>/graded.json`` for each of ``students`` with a ``results.json`` there: the
    stage, and the course whose gradebook holds the student's scores (``nbgrader``)."""
    for student in students:
        folder = Path(out) / student
        if (folder / RESULTS).is_file():
            record = {"stage": assignment, "nbgrader": str(Path(course).resolve())}
            write_atomic(folder / RECORD, json.dumps(record, indent=2, sort_keys=True) + "\n")


def written_scores(
    course: Path, assignment: str, written: list[str]
) -> tuple[dict[str, float], dict[str, dict[str, float | None]]]:
    """The written questions' points in the gradebook of ``course``, and each student's score for them:
    the formgrader's, or None for an answer still to grade there (nbgrader holds 0 for it until then)."""
    questions, rows = gradebook_rows(course, assignment, [], written)
    points = dict(questions)
    return points, {r.student: {w: None if w in r.ungraded else r.scores.get(w, 0.0) for w in points} for r in rows}


def report_written(folders: list[StudentFolder]) -> "tuple[list[WrittenStats], str] | None":
    """For ``gptcourse report``: the written questions of a class graded through nbgrader (its
    folders' records name the course), as the course's gradebook holds them for these students
    (None: not such a class), and where the scores were typed; a usage error when the folders
    name more than one course or stage."""
    from autograder.build.written import written_questions
    from autograder.course import get_stage
    from autograder.reports.class_report import WrittenStats

    graded = {(f.record["nbgrader"], f.record.get("stage")) for f in folders if f.record.get("nbgrader")}
    if not graded:
        return None
    if len(graded) > 1:
        named = "; ".join(f"{stage} in {course}" for course, stage in sorted(graded))
        raise UsageError(f"the results come from more than one nbgrader course or stage ({named}): report each apart")
    ((course, stage),) = graded
    points, scores = written_scores(Path(course), stage, [q.id for q in written_questions(get_stage(stage))])
    found = []
    for wid, top in points.items():
        stats = WrittenStats(wid, top)
        for folder in folders:
            stats.scores[folder.key] = scores.get(folder.key, {}).get(wid)
        found.append(stats)
    return found, f"nbgrader's formgrader (the gradebook of {course})"


def why_not_autograded(folder: Path, assignment: str) -> str:
    """What is wrong with the submitted notebook(s) in ``folder``, as far as can be told without nbgrader.

    nbgrader's autograde matches a submission's cells to the source's by their nbgrader
    metadata, and fails (a ``KeyError`` of its own) on a notebook without it (the notebook of
    ``release/student/``, or one copied cell by cell into a new file) or with another
    assignment's cells (the notebook of another stage, which its metadata names).
    """
    notebooks = sorted(folder.glob("*.ipynb"))
    if not notebooks:
        return "no notebook (.ipynb) was handed in"
    for path in notebooks:
        try:
            notebook = json.loads(path.read_text(encoding="utf-8"))
            cells, metadata = notebook["cells"], notebook.get("metadata") or {}
            stage = (metadata.get("gptcourse") or {}).get("stage")
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return f"{path.name} is not a readable notebook"
        if isinstance(stage, str) and stage != assignment:
            return f"{path.name} is a notebook of stage {stage}, not {assignment}: was the right notebook handed in?"
        if not any("nbgrader" in (cell.get("metadata") or {}) for cell in cells if isinstance(cell, dict)):
            return (
                f"{path.name} has no nbgrader cell metadata, so it is not the notebook nbgrader released "
                "(release_assignment, fetch_assignment), e.g. release/student's: grade it with "
                f"`gptcourse grade --stage {assignment} <file>`, or have the student hand in nbgrader's "
                "released notebook with their answers"
            )
    return "see nbgrader's log above"


def not_autograded(course: Path, assignment: str, students: list[str]) -> dict[str, str]:
    """The students of ``students`` whose submission of ``assignment`` nbgrader's autograde left
    without an autograded notebook (it removes what it could not finish), with the likely reason."""
    from nbgrader.coursedir import CourseDirectory

    where = CourseDirectory(config=course_config(course), root=str(course.resolve()))
    failed = {}
    for student in students:
        submitted = Path(where.format_path(where.submitted_directory, student, assignment))
        autograded = Path(where.format_path(where.autograded_directory, student, assignment))
        if submitted.is_dir() and not any(autograded.glob("*.ipynb")):
            failed[student] = why_not_autograded(submitted, assignment)
    return failed


def _score(row: Row, qid: str) -> str:
    """A cell of ``table``: the score, or "" for a written answer still to grade."""
    return "" if qid in row.ungraded else f"{row.scores.get(qid, 0.0):g}"


def table(rows: list[Row], questions: list[tuple[str, float]]) -> str:
    """The gradebook as plain text: a row per student, a column per question, the late penalty, the total.
    A written answer still to grade in the formgrader is left empty (nbgrader holds 0 for it until then).

    >>> print(table([Row("ada", {"q": 2.0, "why": 0.0}, 2.0, 0.0, ungraded=["why"])], [("q", 3.0), ("why", 2.0)]))
    student      q    why  late  total
    (max)        3      2            5
    ada          2           -2      0
    """
    width = max([len("student"), *(len(r.student) for r in rows)])
    cols = [max(len(q), 5) for q, _ in questions]
    lines = ["student".ljust(width) + "".join(f"  {q:>{w}}" for (q, _), w in zip(questions, cols)) + "  late  total"]
    lines.append(
        "(max)".ljust(width)
        + "".join(f"  {p:>{w}g}" for (_, p), w in zip(questions, cols))
        + f"        {sum(p for _, p in questions):5g}"
    )
    for r in rows:
        late = f"{-r.penalty:4g}" if r.penalty else "    "
        lines.append(
            r.student.ljust(width)
            + "".join(f"  {_score(r, q):>{w}}" for (q, _), w in zip(questions, cols))
            + f"  {late}  {r.total:5g}"
        )
    return "\n".join(lines)
