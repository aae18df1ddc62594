"""nbgrader's gradebook, graded by the gptcourse engine (the stronger path).

``gptcourse grade --stage S --nbgrader COURSE`` grades every
``COURSE/submitted/<student>/<S>/*.ipynb`` with the engine (the student's code in
confined child processes, judged outside them) and writes each question's points into
the course's gradebook through nbgrader's own ``Gradebook`` API: the auto score of that
question's grade cell. ``nbgrader export`` and the formgrader then show them, with no
``nbgrader autograde`` needed. A manual score an instructor already gave is kept.
The assignment must be in the gradebook (``nbgrader generate_assignment S`` puts it there).
"""

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from autograder.errors import UsageError

from . import grade_cell_id


@dataclass
class Submitted:
    """One student's submitted notebook, and when it was submitted (nbgrader's timestamp.txt)."""

    student: str
    notebook: Path
    timestamp: str | None = None
    note: str = ""


@dataclass
class WriteReport:
    """What was written into the gradebook."""

    written: list[str] = field(default_factory=list)
    kept_manual: list[str] = field(default_factory=list)


def course_directory(course: Path):
    """nbgrader's ``CourseDirectory`` for ``course``, configured by its ``nbgrader_config.py``."""
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    config = Config()
    if (course / "nbgrader_config.py").exists():
        config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    return CourseDirectory(config=config, root=str(course.resolve()))


def find_submitted(course: Path, assignment: str) -> list[Submitted]:
    """Every student's notebook for ``assignment`` under the course's ``submitted/`` tree."""
    course = Path(course)
    if not course.is_dir():
        raise UsageError(f"no such nbgrader course directory: {course}")
    top = course / course_directory(course).submitted_directory
    found = []
    for folder in sorted(p for p in top.glob(f"*/{assignment}") if p.is_dir()):
        notebooks = sorted(p for p in folder.glob("*.ipynb"))
        if not notebooks:
            continue
        preferred = [p for p in notebooks if p.stem == assignment] or notebooks
        note = f"several notebooks were submitted; {preferred[0].name} was graded" if len(notebooks) > 1 else ""
        stamp = folder / "timestamp.txt"
        timestamp = stamp.read_text(encoding="utf-8").strip() if stamp.exists() else None
        found.append(Submitted(folder.parent.name, preferred[0], timestamp or None, note))
    if not found:
        raise UsageError(f"no submissions of {assignment} under {top}/<student>/{assignment}/")
    return found


def stage_copies(submitted: list[Submitted], folder: Path) -> list[Path]:
    """Copy each notebook to ``folder/<student>.ipynb``, so results are named by student."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for item in submitted:
        target = folder / f"{item.student}.ipynb"
        shutil.copyfile(item.notebook, target)
        paths.append(target)
    return paths


def _gradebook_url(course: Path, assignment: str) -> str:
    url = course_directory(Path(course)).db_url
    if url.startswith("sqlite:///") and not Path(url[len("sqlite:///"):]).exists():
        raise UsageError(f"{course} has no gradebook yet: run `nbgrader generate_assignment {assignment}` there first")
    return url


def _assignment_notebook(gb, assignment: str):
    from nbgrader.api import MissingEntry

    try:
        record = gb.find_assignment(assignment)
    except MissingEntry:
        raise UsageError(f"the gradebook has no assignment {assignment}: run `nbgrader generate_assignment {assignment}` first") from None
    if len(record.notebooks) != 1:
        raise UsageError(f"assignment {assignment} has {len(record.notebooks)} notebooks in the gradebook; expected one")
    return record.notebooks[0]


def require_assignment(course: Path, assignment: str) -> None:
    """Fail with a usage error, before any grading, when the gradebook cannot take the scores."""
    from nbgrader.api import Gradebook

    with Gradebook(_gradebook_url(course, assignment)) as gb:
        _assignment_notebook(gb, assignment)


def write_gradebook(course: Path, assignment: str, submitted: list[Submitted], scores: dict[str, dict[str, float]]) -> WriteReport:
    """Write ``scores[student][question]`` as the auto scores of the grade cells of ``assignment``."""
    from nbgrader.api import Gradebook

    report = WriteReport()
    with Gradebook(_gradebook_url(course, assignment)) as gb:
        notebook = _assignment_notebook(gb, assignment)
        cells = {cell.name: cell for cell in notebook.grade_cells}
        for item in submitted:
            gb.update_or_create_student(item.student)
            extra = {"timestamp": item.timestamp} if item.timestamp else {}
            gb.update_or_create_submission(assignment, item.student, **extra)
            for qid, points in scores[item.student].items():
                if grade_cell_id(qid) not in cells:
                    continue
                grade = gb.find_grade(grade_cell_id(qid), notebook.name, assignment, item.student)
                grade.auto_score = float(points)
                grade.needs_manual_grade = False
                if grade.manual_score is not None:
                    report.kept_manual.append(f"{item.student}: {qid}")
            gb.db.commit()
            report.written.append(item.student)
    return report
