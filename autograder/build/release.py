"""``gptcourse build``: the student release, the fixtures, the Gradescope zips, the nbgrader course."""

from pathlib import Path

from ..fixtures import build_fixtures, source_hash
from ..stages import ROOT, Stage
from .gradescope import build_gradescope_zip
from .nbgrader_course import build_nbgrader_course
from .notebooks import make_notebook, write_notebook

DEFAULT_OUT = ROOT / "release"


def build_student(stage: Stage, out: Path) -> Path:
    """Write ``out/student/<stage>/<stage>.ipynb``."""
    path = out / "student" / stage.id / f"{stage.id}.ipynb"
    write_notebook(make_notebook(stage, "student"), path)
    return path


def build_stage(stage: Stage, out: Path = DEFAULT_OUT, log=print) -> None:
    """Everything the build makes for one stage."""
    log(f"{stage.id}: student notebook -> {build_student(stage, out)}")
    fixtures = out / "fixtures"
    target = fixtures / f"{stage.id}.json"
    import json

    stale = not target.exists() or json.loads(target.read_text()).get("source_hash") != source_hash(stage)
    if stale:
        build_fixtures(stage, fixtures)
    log(f"{stage.id}: fixtures -> {target}{'' if stale else ' (up to date)'}")
    log(f"{stage.id}: Gradescope autograder -> {build_gradescope_zip(stage, out / 'gradescope', target)}")
    log(f"{stage.id}: nbgrader source -> {build_nbgrader_course(stage, out / 'nbgrader', target)}")
