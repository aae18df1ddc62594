"""An nbgrader course directory: ``nbgrader_config.py`` and ``source/<stage>/<stage>.ipynb``.

The source notebook has nbgrader's cell metadata: the harness and given code locked,
each stub a solution cell (the reference between ``### BEGIN SOLUTION`` and
``### END SOLUTION``), and each question's check cell an autograded test cell worth
the whole question. That cell runs the public tests and, inside nbgrader's hidden-test
region, the same hidden tests as the grading engine with the same expected values; it
ends with the points earned, which nbgrader reads as partial credit. Demonstration and
training cells do nothing while nbgrader grades (``NBGRADER_EXECUTION`` is set).
See the README for what nbgrader itself cannot guarantee.
"""

import copy
import json
import textwrap
from pathlib import Path

from autograder.channels.nbgrader import grade_cell_id
from autograder.course import Stage
from autograder.engine import submission as nbtags

from .fixtures import DEFAULT_DIR
from .notebooks import harness_source, make_notebook, write_notebook
from .stubs import make_stub, reference_source

CONFIG = """\
# nbgrader configuration for the gptcourse stages (made by `gptcourse build`).
c = get_config()
c.CourseDirectory.course_id = "gptcourse"
c.Execute.timeout = 300          # seconds per cell: the hidden tests of a question run in one cell
c.Execute.interrupt_on_timeout = True
c.Execute.kernel_name = "python3"
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}
"""

SKIP_WHILE_GRADING = """\
# This demonstration is skipped while nbgrader grades the notebook.
import os as _os
if not _os.environ.get("NBGRADER_EXECUTION"):
"""


def _meta(grade_id: str, *, solution: bool = False, grade: bool = False, locked: bool = False, points: float = 0) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution, "task": False}
    if grade:
        meta["points"] = points
    return meta


def grade_cell_source(stage: Stage, qid: str, fixture_values: dict) -> str:
    """Public tests, then the hidden tests in nbgrader's hidden region; the points last."""
    hidden = stage.hidden.read_text(encoding="utf-8")
    keys = [c.key for c in stage.tests().cases if c.qid == qid and not c.public]
    expected = json.dumps({k: fixture_values[k] for k in keys if k in fixture_values}, sort_keys=True)
    if "'''" in hidden:
        raise ValueError(f"{stage.hidden} must not contain three single quotes in a row")
    # nbgrader gives no points to a grade cell that writes to stderr, so a warning that
    # the student's code (or torch) prints would cost the whole question: show it on stdout.
    return (
        "import contextlib as _contextlib, sys as _sys\n"
        "with _contextlib.redirect_stderr(_sys.stdout):\n"
        f'    _points = check("{qid}", points=True)\n'
        "    ### BEGIN HIDDEN TESTS\n"
        f'    _points += _gptcourse.run_hidden("{qid}", r\'\'\'{hidden}\'\'\', r\'\'\'{expected}\'\'\', globals())\n'
        "    ### END HIDDEN TESTS\n"
        "_points"
    )


def nbgrader_notebook(stage: Stage, fixture_file: Path) -> dict:
    """The instructor's nbgrader source notebook of a stage."""
    nb = copy.deepcopy(make_notebook(stage, "reference"))
    fixture_values = json.loads(Path(fixture_file).read_text(encoding="utf-8"))["values"]
    worth = dict(stage.tests().questions())
    for index, cell in enumerate(nb["cells"]):
        tags = cell.get("metadata", {}).get("tags", [])
        if cell["cell_type"] != "code":
            continue
        if nbtags.TAG_HARNESS in tags:
            cell["source"] = harness_source(stage, with_codec=True)
            cell["metadata"]["nbgrader"] = _meta(f"cell-{index:03d}", locked=True)
        elif nbtags.TAG_STUB in tags:
            name = cell["metadata"]["gptcourse"]["name"]
            cell["source"] = make_stub(reference_source(stage.module, name), name, solution_region=True).rstrip("\n")
            cell["metadata"]["nbgrader"] = _meta(f"{name}-solution", solution=True)
        elif nbtags.TAG_CHECK in tags:
            qid = cell["source"].split('"')[1]
            cell["source"] = grade_cell_source(stage, qid, fixture_values)
            cell["metadata"]["nbgrader"] = _meta(grade_cell_id(qid), grade=True, locked=True, points=worth[qid])
        elif nbtags.TAG_GIVEN in tags:
            cell["metadata"]["nbgrader"] = _meta(f"cell-{index:03d}", locked=True)
        elif nbtags.TAG_DEMO in tags or nbtags.TAG_TRAIN in tags:
            cell["source"] = SKIP_WHILE_GRADING + textwrap.indent(cell["source"], "    ")
    return nb


def build_nbgrader_course(stage: Stage, course_dir: Path, fixture_file: Path = DEFAULT_DIR) -> Path:
    """Write the config and the stage's source notebook; return the notebook's path."""
    course_dir.mkdir(parents=True, exist_ok=True)
    (course_dir / "nbgrader_config.py").write_text(CONFIG, encoding="utf-8")
    path = course_dir / "source" / stage.id / f"{stage.id}.ipynb"
    if Path(fixture_file).is_dir():
        fixture_file = Path(fixture_file) / f"{stage.id}.json"
    write_notebook(nbgrader_notebook(stage, fixture_file), path)
    return path
