"""An nbgrader course directory: ``nbgrader_config.py`` and ``source/<stage>/<stage>.ipynb``.

The source notebook has nbgrader's cell metadata: the harness and given code locked,
each stub a solution cell (the reference between ``### BEGIN SOLUTION`` and
``### END SOLUTION``), each check cell an autograded test cell worth its question's
public points. See the README for what nbgrader itself cannot guarantee.
"""

import copy
from pathlib import Path

from .. import notebook as nbtags
from ..stages import Stage, load_cases
from .notebooks import make_notebook, write_notebook
from .stubs import make_stub, reference_source

CONFIG = """\
# nbgrader configuration for the gptcourse stages (made by `gptcourse build`).
c = get_config()
c.CourseDirectory.course_id = "gptcourse"
c.CourseDirectory.root = "."
c.Execute.timeout = 120          # seconds per cell
c.Execute.interrupt_on_timeout = True
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}
"""


def _meta(grade_id: str, *, solution: bool = False, grade: bool = False, locked: bool = False, points: float = 0) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution, "task": False}
    if grade:
        meta["points"] = points
    return meta


def nbgrader_notebook(stage: Stage) -> dict:
    """The instructor's nbgrader source notebook of a stage."""
    nb = copy.deepcopy(make_notebook(stage, "reference"))
    public_points: dict[str, float] = {}
    for case in load_cases(stage.id):
        if case.public:
            public_points[case.qid] = public_points.get(case.qid, 0.0) + case.points
    for index, cell in enumerate(nb["cells"]):
        tags = cell.get("metadata", {}).get("tags", [])
        grade_id = f"cell-{index:03d}"
        if cell["cell_type"] != "code":
            continue
        if nbtags.TAG_STUB in tags:
            name = cell["metadata"]["gptcourse"]["name"]
            cell["source"] = make_stub(reference_source(stage.module, name), name, solution_region=True).rstrip("\n")
            cell["metadata"]["nbgrader"] = _meta(f"{name}-solution", solution=True)
        elif nbtags.TAG_CHECK in tags:
            qid = cell["source"].split('"')[1]
            cell["source"] = f'check("{qid}", strict=True)'
            cell["metadata"]["nbgrader"] = _meta(f"{qid}-public", grade=True, locked=True, points=public_points.get(qid, 0))
        elif nbtags.TAG_HARNESS in tags or nbtags.TAG_GIVEN in tags:
            cell["metadata"]["nbgrader"] = _meta(grade_id, locked=True)
    return nb


def build_nbgrader_course(stage: Stage, course_dir: Path) -> Path:
    """Write the config (once) and the stage's source notebook; return the notebook's path."""
    course_dir.mkdir(parents=True, exist_ok=True)
    (course_dir / "nbgrader_config.py").write_text(CONFIG, encoding="utf-8")
    path = course_dir / "source" / stage.id / f"{stage.id}.ipynb"
    write_notebook(nbgrader_notebook(stage), path)
    return path
