"""An nbgrader course directory whose ``nbgrader autograde`` grades through the engine.

For each stage the build writes:

- ``source/<stage>/<stage>.ipynb``, the instructor's source notebook with nbgrader's
  cell metadata: the harness and given code locked (an earlier stage's answer is given
  code only once released, ``build.answers``; until then it is the student's cell to
  fill, and grading runs the course's version in it), each stub a solution cell (the
  reference between ``### BEGIN SOLUTION`` and ``### END SOLUTION``), and each
  question's check cell a locked grade cell worth the whole question. A grade cell holds
  ``check("question", strict=True)``: the public tests, raising when one fails, so that
  ``nbgrader validate`` (the student's Validate button) passes a notebook whose public
  tests pass and names the question of one that does not. No cell holds a hidden test.
  A written question (``build.written``) is a read-only prompt and a manually graded
  answer cell worth its points, holding its rubric here (nbgrader's release replaces it
  by an empty answer): graded in the formgrader, never by the engine.
  Demonstration and training cells do nothing under nbgrader (``NBGRADER_EXECUTION``).
- ``gptcourse_tests/<stage>/`` (``public.py``, ``hidden.py``, ``fixtures.json``): what
  the engine grades with, outside nbgrader's ``source/`` tree, so never released.
- ``gptcourse_config.py``, gptcourse's nbgrader settings, rewritten by every build:
  autograde runs the engine (``channels.nbgrader.preprocessor``) in place of a kernel.
- ``nbgrader_config.py``, written only when absent: it loads ``gptcourse_config.py``,
  then holds the instructor's own settings, which no later build touches.
"""

import copy
import shutil
import textwrap
from pathlib import Path

from autograder.channels.nbgrader import TEST_FILES, TESTS_FOLDER, grade_cell_id, written_cell_id
from autograder.course import Stage
from autograder.engine import submission as nbtags

from .fixtures import DEFAULT_DIR
from .notebooks import check_cell_question, make_notebook, write_notebook
from .stubs import make_stub, reference_source
from .written import written_questions

GPTCOURSE_CONFIG = """\
# gptcourse's nbgrader settings, rewritten by every `gptcourse build`. Put your own
# settings in nbgrader_config.py: it loads this file first, so yours win.
import os
import warnings

c = get_config()
# nbgrader 0.9.6's Gradebook.add_submission builds a student's first submission before
# adding it to the session, and SQLAlchemy 2 warns when a query flushes in between; the
# submission is added right after, so nothing is lost: silence that warning only.
_NOT_IN_SESSION = r"Object of type <(SubmittedAssignment|SubmittedNotebook)> not in session"
warnings.filterwarnings("ignore", message=_NOT_IN_SESSION, category=RuntimeWarning)
# `nbgrader autograde` grades through the gptcourse engine: no kernel runs a submission;
# the engine runs it in confined child processes, judges it outside them and fills each
# question's grade cell with its report and points. nbgrader's own steps follow.
c.Autograde.autograde_preprocessors = [
    "autograder.channels.nbgrader.preprocessor.GradeWithEngine",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
c.GradeWithEngine.tests_directory = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gptcourse_tests")
c.GradeWithEngine.timeout = 600         # seconds per submission
c.GradeWithEngine.cell_timeout = 30     # seconds per notebook cell
c.GradeWithEngine.hidden_details = True # grade cells (and so the feedback) name each hidden test and why it failed
c.OverwriteCells.add_missing_cells = True  # a deleted grade cell comes back, and the engine scores it
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "*Your answer here.*"  # a written answer cell, as the student notebook has it
# nbgrader validate (the Validate button) runs the notebook's check cells in a kernel
c.Execute.timeout = 120
c.Execute.kernel_name = "python3"
"""

NBGRADER_CONFIG = """\
# The nbgrader configuration of this course. `gptcourse build` wrote this file once and
# never changes it again: edit it freely (course id, exchange, late penalties, ...).
# gptcourse's own settings are in gptcourse_config.py, loaded here first; a setting
# below overrides it.
c = get_config()
load_subconfig("gptcourse_config.py")

c.CourseDirectory.course_id = "gptcourse"
"""

SKIP_WHILE_GRADING = """\
# This demonstration is skipped while nbgrader grades the notebook.
import os as _os
if not _os.environ.get("NBGRADER_EXECUTION"):
"""


def _meta(
    grade_id: str, *, solution: bool = False, grade: bool = False, locked: bool = False, points: float = 0
) -> dict:
    meta = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": 3,
        "solution": solution,
        "task": False,
    }
    if grade:
        meta["points"] = points
    return meta


def grade_cell_source(qid: str) -> str:
    """A question's grade cell: its public tests, raising when one fails (which Validate reports).

    >>> grade_cell_source("ngram")
    'check("ngram", strict=True)'
    """
    return f'check("{qid}", strict=True)'


def rubric_cell(question) -> str:
    """A written question's answer cell in the instructor's source notebook: its rubric, which
    ``generate_assignment`` replaces by the answer placeholder (``ClearSolutions.text_stub``)."""
    return (
        f"**Rubric of {question.id} ({question.points:g} points; graders only: the released notebook has "
        f"an empty answer cell here).**\n\n{question.rubric}"
    )


def nbgrader_notebook(stage: Stage) -> dict:
    """The instructor's nbgrader source notebook of a stage."""
    nb = copy.deepcopy(make_notebook(stage, "reference", answers="released"))
    worth = dict(stage.tests().questions())
    rubrics = {q.id: q for q in written_questions(stage)}
    for index, cell in enumerate(nb["cells"]):
        tags = cell.get("metadata", {}).get("tags", [])
        if nbtags.TAG_WRITTEN in tags:
            cell["metadata"]["nbgrader"] = _meta(f"{cell['metadata']['gptcourse']['written']}-prompt", locked=True)
        elif nbtags.TAG_WRITTEN_ANSWER in tags:
            question = rubrics[cell["metadata"]["gptcourse"]["written_answer"]]
            cell["source"] = rubric_cell(question)
            cell["metadata"]["nbgrader"] = _meta(
                written_cell_id(question.id), solution=True, grade=True, points=question.points
            )
        if cell["cell_type"] != "code":
            continue
        if nbtags.TAG_HARNESS in tags or nbtags.TAG_GIVEN in tags:
            cell["metadata"]["nbgrader"] = _meta(f"cell-{index:03d}", locked=True)
        elif nbtags.TAG_STUB in tags:
            name = cell["metadata"]["gptcourse"]["name"]
            cell["source"] = make_stub(reference_source(stage.module, name), name, solution_region=True).rstrip("\n")
            cell["metadata"]["nbgrader"] = _meta(f"{name}-solution", solution=True)
        elif qid := check_cell_question(cell):
            cell["source"] = grade_cell_source(qid)
            cell["metadata"]["nbgrader"] = _meta(grade_cell_id(qid), grade=True, locked=True, points=worth[qid])
        elif nbtags.TAG_DEMO in tags or nbtags.TAG_TRAIN in tags:
            cell["source"] = SKIP_WHILE_GRADING + textwrap.indent(cell["source"], "    ")
    return nb


def write_configs(course_dir: Path, log=print) -> None:
    """Rewrite ``gptcourse_config.py``; write ``nbgrader_config.py`` only when there is none."""
    course_dir.mkdir(parents=True, exist_ok=True)
    (course_dir / "gptcourse_config.py").write_text(GPTCOURSE_CONFIG, encoding="utf-8")
    config = course_dir / "nbgrader_config.py"
    if not config.exists():
        config.write_text(NBGRADER_CONFIG, encoding="utf-8")
    elif "gptcourse_config.py" not in config.read_text(encoding="utf-8"):
        log(
            f"warning: {config} does not load gptcourse_config.py, so nbgrader "
            "autograde will not grade through the engine: "
            'add `load_subconfig("gptcourse_config.py")` after `c = get_config()`'
        )


def build_nbgrader_course(stage: Stage, course_dir: Path, fixture_file: Path = DEFAULT_DIR, log=print) -> Path:
    """Write the configs, the stage's source notebook and its test files; return the notebook's path."""
    course_dir = Path(course_dir)
    write_configs(course_dir, log)
    if Path(fixture_file).is_dir():
        fixture_file = Path(fixture_file) / f"{stage.id}.json"
    tests = course_dir / TESTS_FOLDER / stage.id
    tests.mkdir(parents=True, exist_ok=True)
    for name, source in zip(TEST_FILES, (stage.public, stage.hidden, Path(fixture_file))):
        shutil.copyfile(source, tests / name)
    path = course_dir / "source" / stage.id / f"{stage.id}.ipynb"
    write_notebook(nbgrader_notebook(stage), path)
    return path
