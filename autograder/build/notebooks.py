"""Making a stage's notebooks from its source: the student's release and the reference.

Both come from the same blocks (see ``source``); they differ only in the stub cells,
which hold the reference code in the reference notebook and a stub (signature,
docstring, ``NotImplementedError``) in the student's. Output is deterministic: the
same sources give byte-identical files.
"""

import ast
import base64
import copy
import json
from pathlib import Path

from autograder.course import Stage
from autograder.engine import submission as nbtags
from autograder.kit import PASTED

from .answers import answer_of, course_of, course_source, group_note, stub_source
from .source import Block, parse_source
from .stubs import bound_names, make_stub, needed_imports, reference_source
from .written import parse_written, student_cells

KIT = Path(__file__).resolve().parent.parent / "kit"
NBFORMAT_MINOR = 5

HARNESS_HEADER = """\
# @title Run this cell first: the check harness
# It defines check("question"), which runs a question's public tests on your code, and
# package_submission(), which packs your saved notebook for hand-in. It holds the course's
# test kit and this stage's public tests, packed into one line: print(_gptcourse.__source__)
# shows them. It also gives torch one thread per CPU this notebook may use and other
# programs leave free (GPTCOURSE_THREADS=N, set before starting Jupyter, overrides it).
# You need not read or change this cell.
"""

HARNESS_BODY = """\
import base64 as _base64, sys as _sys, types as _types
_gptcourse = _sys.modules["gptcourse_checks"] = _types.ModuleType("gptcourse_checks")
_gptcourse.__source__ = _base64.b64decode("{packed}").decode("utf-8")
exec(compile(_gptcourse.__source__, "gptcourse_checks", "exec"), _gptcourse.__dict__)
_gptcourse.configure_threads()
check, package_submission = _gptcourse.check, _gptcourse.package_submission
"""

# Where the harness cell is shown: JupyterLab and Notebook 7 collapse its source, Colab
# shows its title as a form, and nbconvert's exports (HTML, PDF, what a TA reads) leave
# its source out. Front ends that honour none of these show the few lines above.
HARNESS_METADATA = {
    "editable": False,
    "deletable": False,
    "jupyter": {"source_hidden": True},
    "cellView": "form",
    "transient": {"remove_source": True},
}


def _package_import(node: ast.stmt) -> bool:
    """A top-level import of the kit or of a sibling module (``from .checks import ...``)."""
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] == "autograder"
    return isinstance(node, ast.Import) and any(a.name.split(".")[0] == "autograder" for a in node.names)


def _pasteable(text: str) -> str:
    """A kit module or suite without its package imports, each over however many lines the
    formatter gave it (the paste makes them one module).

    Example:
        >>> _pasteable("import torch\\nfrom autograder.kit import (\\n    Suite,\\n    equal,\\n)\\nx = 1")
        'import torch\\nx = 1'
    """
    dropped = {
        line
        for node in ast.parse(text).body
        if _package_import(node)
        for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)
    }
    return "\n".join(line for number, line in enumerate(text.splitlines(), 1) if number not in dropped)


def harness_module(stage: Stage) -> str:
    """The module the harness cell runs: the kit and the stage's public tests, pasted together."""
    parts = [
        *((KIT / f"{name}.py").read_text(encoding="utf-8") for name in PASTED),
        stage.public.read_text(encoding="utf-8"),
    ]
    return "\n\n".join(_pasteable(p) for p in parts) + "\n"


def harness_source(stage: Stage) -> str:
    """The check harness cell: a short header, and ``harness_module`` packed into one line.

    The packing is plain base64 (no compression, whose output differs between zlib
    builds), so the same sources give the same cell everywhere; ``unpack_harness``
    gives the module back.
    """
    packed = base64.b64encode(harness_module(stage).encode("utf-8")).decode("ascii")
    return HARNESS_HEADER + HARNESS_BODY.format(packed=packed)


def unpack_harness(source: str) -> str:
    """The module a harness cell runs (what ``harness_module`` gave when it was built).

    Example:
        >>> from autograder.course import get_stage
        >>> stage = get_stage("01_tokenisation")
        >>> unpack_harness(harness_source(stage)) == harness_module(stage)
        True
    """
    prefix = '_gptcourse.__source__ = _base64.b64decode("'
    lines = [line for line in source.splitlines() if line.startswith(prefix)]
    if len(lines) != 1:
        raise ValueError("not a harness cell: it must hold exactly one packed line")
    return base64.b64decode(lines[0][len(prefix) :].split('"', 1)[0]).decode("utf-8")


def _code(source: str, tags: list[str], extra: dict | None = None) -> dict:
    metadata: dict = {"tags": tags}
    if extra:
        metadata.update(copy.deepcopy(extra))
    return {"cell_type": "code", "execution_count": None, "metadata": metadata, "outputs": [], "source": source}


def _markdown(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def stage_cells(stage: Stage, variant: str, answers: str | None = None) -> list[dict]:
    """The cells of a stage's notebook; ``variant`` is ``student`` or ``reference``.

    Given code copied from a reference (a ``reference`` block) carries the module-level
    imports it needs that no earlier cell made, so that it runs on its own. An earlier
    stage's answer (see ``answers``) holds the course's version where ``answers`` is
    ``course`` (the reference notebook's default) and, where it is ``released`` (the
    student's default), only once the instructor has released that stage's answers;
    otherwise its stub. A note before each run of them says which. A written question
    becomes its prompt and an answer cell (``written.student_cells``).
    """
    if variant not in {"student", "reference"}:
        raise ValueError(f"unknown notebook variant {variant!r}")
    answers = answers or ("course" if variant == "reference" else "released")
    if answers not in {"course", "released"}:
        raise ValueError(f"unknown answers mode {answers!r}")
    blocks, stages = parse_source(stage.source), course_of(stage)
    cells, bound = [], set()
    for index, block in enumerate(blocks):
        if block.kind == "reference" and (index == 0 or blocks[index - 1].kind != "reference"):
            run = _run_of_references(blocks, index)
            found = [(a, answers == "course" or a.released) for b in run if (a := answer_of(b, stages)) is not None]
            if found:
                cells.append(_markdown(group_note(found)))
        if block.kind == "written":  # the prompt and the answer cell; the rubric stays out
            cells += student_cells(parse_written(block, str(stage.source), stage.id))
            continue
        answer = answer_of(block, stages)
        if answer is not None:
            course = answers == "course" or answer.released
            source = (course_source if course else stub_source)(answer, bound)
            meta = {"gptcourse": {"answer": block.arg, "given": course}}
            cell = _code(source, [nbtags.TAG_GIVEN if course else nbtags.TAG_ANSWER], meta)
        else:
            cell = _cell(stage, block, variant, bound)
        if block.kind in {"given", "reference"}:
            bound |= bound_names(cell["source"])
        cells.append(cell)
    return cells


def answer_import_problems(stage: Stage) -> list[str]:
    """Earlier stages' answers that need an import no cell before them makes but their own
    (empty: none).

    The build puts the imports a given answer needs (``import math``) at the top of its
    cell. A student replaces that cell with their own answer, written beside their earlier
    stage's imports cell, and the import goes with the replaced code: the notebook fails
    further on. So every import the earlier answers need belongs in the notebook's imports
    cell (or another ``given`` cell before them).
    """
    stages, bound, problems = course_of(stage), set(), []
    for block in parse_source(stage.source):
        module, _, name = block.arg.rpartition(".")
        if answer_of(block, stages) is not None:
            needed = needed_imports(module, name, bound)
            if needed:
                problems.append(
                    f"`reference {block.arg}` is an earlier stage's answer, which students replace with their "
                    f"own, and it needs {'; '.join(needed)}: put that in the notebook's imports cell"
                )
        elif block.kind == "given":
            bound |= bound_names(block.text)
        elif block.kind == "reference":
            bound |= bound_names("\n".join(needed_imports(module, name, bound)))
    return problems


def _run_of_references(blocks: list[Block], start: int) -> list[Block]:
    """The consecutive ``reference`` blocks from ``start`` on."""
    run = []
    for block in blocks[start:]:
        if block.kind != "reference":
            break
        run.append(block)
    return run


CHECK_CALL = 'check("{qid}")'  # the source of a question's check cell


def check_cell_question(cell: dict) -> str | None:
    """The question a check cell of a built notebook checks; None for any other cell.

    >>> check_cell_question({"source": 'check("rope")', "metadata": {"tags": [nbtags.TAG_CHECK]}})
    'rope'
    """
    if nbtags.TAG_CHECK not in cell["metadata"].get("tags", []):
        return None
    return "".join(cell["source"]).split('"')[1]


def _cell(stage: Stage, block: Block, variant: str, bound: set[str]) -> dict:
    if block.kind == "markdown":
        return _markdown(block.text)
    if block.kind == "harness":
        return _code(harness_source(stage), [nbtags.TAG_HARNESS], HARNESS_METADATA)
    if block.kind == "given":
        return _code(block.text.strip("\n"), [nbtags.TAG_GIVEN])
    if block.kind == "reference":
        module, _, name = block.arg.rpartition(".")
        imports = needed_imports(module, name, bound)
        source = reference_source(module, name).rstrip("\n")
        return _code("\n".join(imports) + "\n\n\n" + source if imports else source, [nbtags.TAG_GIVEN])
    if block.kind == "stub":
        source = reference_source(stage.module, block.arg)
        if variant == "student":
            source = make_stub(source, block.arg, block.text)
        return _code(source.rstrip("\n"), [nbtags.TAG_STUB], {"gptcourse": {"name": block.arg}})
    if block.kind == "check":
        return _code(CHECK_CALL.format(qid=block.arg), [nbtags.TAG_CHECK], {"editable": False})
    if block.kind == "demo":
        return _code(block.text.strip("\n"), [nbtags.TAG_DEMO])
    if block.kind == "train":
        return _code(block.text.strip("\n"), [nbtags.TAG_TRAIN])
    raise ValueError(f"unknown block kind {block.kind!r}")


def check_cells_problems(stage: Stage) -> list[str]:
    """What is wrong between the notebook's check cells and the stage's questions (empty: nothing)."""
    checks = [b.arg for b in parse_source(stage.source) if b.kind == "check"]
    questions = [q for q, _ in stage.tests().questions()]
    problems = [
        f"`check {q}` names no question (the questions are: {', '.join(questions)})"
        for q in checks
        if q not in questions
    ]
    problems += [f"question {q} has no check cell" for q in questions if q not in checks]
    problems += [
        f"question {q} has {checks.count(q)} check cells" for q in dict.fromkeys(checks) if checks.count(q) > 1
    ]
    return problems


HAND_IN = """\
## Hand in

Save the notebook (Ctrl+S / Cmd+S), then run the cell below. It checks that the saved
file holds the code you last ran (graders read the file, not your session) and zips it
for upload; if something was not saved, it says what."""


def make_notebook(stage: Stage, variant: str, answers: str | None = None) -> dict:
    """A complete nbformat-4 notebook document with deterministic cell ids (``answers``: see ``stage_cells``)."""
    cells = stage_cells(stage, variant, answers)
    cells += [_markdown(HAND_IN), _code("package_submission()", [nbtags.TAG_DEMO])]
    for index, cell in enumerate(cells):
        cell["id"] = f"{stage.id[:2]}-{index:03d}"
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
            "gptcourse": {"stage": stage.id},
        },
        "nbformat": 4,
        "nbformat_minor": NBFORMAT_MINOR,
    }


def dumps_notebook(notebook: dict) -> str:
    """Serialise a notebook the way Jupyter does, deterministically."""
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def student_path(stage: Stage, out: Path) -> Path:
    """Where a build into ``out`` writes the stage's student notebook."""
    return out / "student" / stage.id / f"{stage.id}.ipynb"


def release_folder(stage: Stage) -> Path:
    """The course's committed release: ``release/`` beside the ``assignments/`` folder the stage is in."""
    return stage.folder.parent.parent / "release"


def stale_release(stage: Stage, out: Path) -> list[str]:
    """Why the student notebook under ``out`` is not what ``gptcourse build`` would write for the
    stage now (empty: it is): missing, or naming the first cell that differs. It writes nothing."""
    path = student_path(stage, out)
    fix = f"run `gptcourse build --stages {stage.id[:2]}` and commit what it writes"
    if not path.is_file():
        return [f"{path} does not exist: {fix}"]
    fresh = make_notebook(stage, "student")
    committed = path.read_text(encoding="utf-8")
    if committed == dumps_notebook(fresh):
        return []
    return [f"{path} is stale, not what a fresh build writes ({_difference(committed, fresh)}): {fix}"]


def _difference(committed: str, fresh: dict) -> str:
    """Where a committed notebook first differs from a fresh one, in words."""
    try:
        cells = json.loads(committed)["cells"]
    except (json.JSONDecodeError, KeyError, TypeError):
        return "it is no notebook"
    for index, (old, new) in enumerate(zip(cells, fresh["cells"])):
        if old != new:
            return f"cell {index} differs first: {_cell_name(new)}"
    if len(cells) != len(fresh["cells"]):
        return f"it has {len(cells)} cells, a fresh build {len(fresh['cells'])}"
    return "its metadata or layout differs"


def _cell_name(cell: dict) -> str:
    """A cell, named so that an author finds it in ``notebook.md``."""
    tags = cell["metadata"].get("tags", [])
    if nbtags.TAG_HARNESS in tags:
        return "the check harness, which holds the kit and public.py"
    first = next((line.strip() for line in cell["source"].splitlines() if line.strip()), "")
    return f"{cell['cell_type']} cell {first[:60]!r}"


def write_notebook(notebook: dict, path: Path) -> None:
    """Write a notebook file (creating folders as needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps_notebook(notebook), encoding="utf-8")
