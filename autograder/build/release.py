"""``gptcourse build``: the student release, the fixtures, the Gradescope and otter zips, the nbgrader course."""

from pathlib import Path

from autograder.course import ROOT, Stage

from .fixtures import fixture_file, is_fresh
from .gradescope_zip import build_gradescope_zip, settings_note
from .nbgrader_course import build_nbgrader_course
from .notebooks import check_cells_problems, make_notebook, write_notebook
from .otter_zip import build_otter_zip
from .source import SourceError

DEFAULT_OUT = ROOT / "release"


def build_student(stage: Stage, out: Path) -> Path:
    """Write ``out/student/<stage>/<stage>.ipynb``."""
    path = out / "student" / stage.id / f"{stage.id}.ipynb"
    write_notebook(make_notebook(stage, "student"), path)
    return path


def build_stage(stage: Stage, out: Path = DEFAULT_OUT, log=print) -> None:
    """Everything the build makes for one stage; a check cell naming no question stops it."""
    problems = check_cells_problems(stage)
    if problems:
        raise SourceError(f"{stage.source}: " + "; ".join(problems))
    log(f"{stage.id}: student notebook -> {build_student(stage, out)}")
    fresh = is_fresh(stage, out / "fixtures")
    target = fixture_file(stage, out / "fixtures")
    log(f"{stage.id}: fixtures -> {target}{' (up to date)' if fresh else ''}")
    log(
        f"{stage.id}: Gradescope autograder -> {build_gradescope_zip(stage, out / 'gradescope', target)} "
        f"({settings_note(stage)})"
    )
    log(
        f"{stage.id}: otter-grader autograder -> {build_otter_zip(stage, out / 'otter', target)} "
        f"(otter run -a, otter grade -a; {settings_note(stage, limits=False)})"
    )
    log(f"{stage.id}: nbgrader source -> {build_nbgrader_course(stage, out / 'nbgrader', target)}")
