"""A real nbgrader course in a temporary folder, driven by nbgrader's own commands.

``Course`` builds the course directory with ``build_nbgrader_course`` (fresh fixtures
first), appends the instructor's own settings to its ``nbgrader_config.py`` and runs
``nbgrader`` there; the functions below make students' notebooks from nbgrader's
release and read what nbgrader shows (gradebook, export, feedback).
"""

import csv
import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from kernels import run_starting_kernels

from autograder.build.fixtures import DEFAULT_DIR, stage_tests
from autograder.build.nbgrader_course import build_nbgrader_course
from autograder.build.stubs import reference_source
from autograder.channels.local.gradebook import WRITTEN, WRITTEN_TOTAL
from autograder.channels.nbgrader.autograde import gradebook_rows
from autograder.course import get_stage

BIN = Path(sys.executable).parent
COURSE_ID = "gptcourse"


def environment() -> dict[str, str]:
    """nbgrader needs the venv's bin on PATH (it runs ``alembic``). ``nbgrader validate`` runs a
    notebook top to bottom in a kernel: its demonstrations at their reduced size
    (``GPTCOURSE_QUICK=1``, as ``test_notebooks_run.py`` runs them), since what validate
    decides comes from the check cells, not from the size of a demonstration."""
    return dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", GPTCOURSE_QUICK="1")


def nbgrader(*args, cwd: Path, check: bool = True, timeout: float = 1200) -> subprocess.CompletedProcess:
    """Run ``nbgrader ARGS`` in ``cwd``; fail the test with its log when it fails (unless ``check`` is off)."""
    done = run_starting_kernels([str(BIN / "nbgrader"), *map(str, args)], cwd=cwd, env=environment(), timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(
            f"nbgrader {' '.join(map(str, args))} failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
        )
    return done


def gptcourse(*args, cwd: Path, timeout: float = 1200) -> subprocess.CompletedProcess:
    """Run ``gptcourse ARGS`` (the CLI of this checkout); it must exit 0."""
    done = run_starting_kernels(
        [sys.executable, "-m", "autograder.cli", *map(str, args)], cwd=cwd, env=environment(), timeout=timeout
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return done


class Course:
    """A course directory for ``stages``, with extra lines in its ``nbgrader_config.py``."""

    def __init__(self, folder: Path, stages: list[str], settings: str = "") -> None:
        self.root = folder / "course"
        for stage_id in stages:
            stage = get_stage(stage_id)
            stage_tests(stage)  # fresh fixtures
            build_nbgrader_course(stage, self.root, DEFAULT_DIR)
        with (self.root / "nbgrader_config.py").open("a", encoding="utf-8") as config:
            config.write(settings)

    def run(self, *args, check: bool = True) -> subprocess.CompletedProcess:
        return nbgrader(*args, cwd=self.root, check=check)

    def released(self, stage_id: str) -> dict:
        return json.loads((self.root / "release" / stage_id / f"{stage_id}.ipynb").read_text(encoding="utf-8"))

    def submitted(self, student: str, stage_id: str) -> Path:
        return self.root / "submitted" / student / stage_id / f"{stage_id}.ipynb"

    def hand_in(
        self, student: str, stage_id: str, notebook: dict, when: str = "2025-01-15 10:00:00.000000 UTC"
    ) -> Path:
        """Put a notebook straight into ``submitted/`` (as ``nbgrader collect`` would)."""
        path = self.submitted(student, stage_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(notebook), encoding="utf-8")
        (path.parent / "timestamp.txt").write_text(when, encoding="utf-8")
        return path

    def gradebook(self, stage_id: str) -> dict[str, dict[str, float]]:
        """``{student: {question: score}}`` as the gradebook holds them (manual scores where given)."""
        qids = [q for q, _ in get_stage(stage_id).tests().questions()]
        return {row.student: row.scores for row in gradebook_rows(self.root, stage_id, qids)[1]}

    def export(self) -> dict[tuple[str, str], dict[str, str]]:
        """``nbgrader export``: its rows by ``(assignment, student)``."""
        self.run("export")
        with (self.root / "grades.csv").open(encoding="utf-8") as handle:
            return {(r["assignment"], r["student_id"]): r for r in csv.DictReader(handle)}


def filled(released: dict, stage_id: str, replace: dict[str, str] | None = None) -> dict:
    """nbgrader's released notebook as a student hands it in: every stub answered with the
    reference, and every earlier answer that is withheld pasted in (the course's), except the
    cells in ``replace``."""
    replace = replace or {}
    notebook = json.loads(json.dumps(released))
    for cell in notebook["cells"]:
        meta = cell.get("metadata", {}).get("gptcourse", {})
        name = meta.get("name")
        if name:
            cell["source"] = replace.get(name, reference_source(get_stage(stage_id).module, name).rstrip("\n"))
        elif meta.get("answer") and not meta.get("given"):  # "module.name": a student pastes their own
            module, earlier = meta["answer"].rsplit(".", 1)
            cell["source"] = reference_source(module, earlier).rstrip("\n")
    return notebook


def as_nbgrader(notebook: dict, released: dict) -> dict:
    """A gptcourse notebook (a test submission) carrying nbgrader's cell metadata, matched by cell id."""
    meta = {c["id"]: c["metadata"]["nbgrader"] for c in released["cells"] if "nbgrader" in c.get("metadata", {})}
    out = json.loads(json.dumps(notebook))
    for cell in out["cells"]:
        if cell.get("id") in meta:
            cell["metadata"]["nbgrader"] = json.loads(json.dumps(meta[cell["id"]]))
    out["metadata"] = released["metadata"]
    return out


def cell_sources(notebook: dict) -> str:
    """Every cell's source, as its author wrote it."""
    return "\n".join(c["source"] if isinstance(c["source"], str) else "".join(c["source"]) for c in notebook["cells"])


def html_text(path: Path) -> str:
    """The text a reader sees in an HTML page (tags and syntax highlighting removed, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


def engine_scores(out: Path) -> dict[str, dict[str, float]]:
    """``{submission: {question: score}}`` from the ``grades.csv`` of ``gptcourse grade``."""
    with (out / "grades.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    [maxima] = [r for r in rows if r["submission"] == "(max)"]
    questions = [  # not id, name, email, nor the written questions' columns left for manual scores
        q
        for q, v in maxima.items()
        if v and q not in ("submission", "total", WRITTEN_TOTAL) and not q.endswith(WRITTEN)
    ]
    return {r["submission"]: {q: float(r[q]) for q in questions} for r in rows if r is not maxima}
