"""What the project's tests share (loaded as a pytest plugin: ``-p support`` in pyproject.toml,
so that the tests of each stage's reference in ``assignments/`` have it too): the local Tiny
Shakespeare, notebooks made for a test, a Gradescope-like root, and each stage's catalogue
graded once per session."""

import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from autograder.authoring.grades import CatalogueGrades
from autograder.authoring.variants import variant_notebook
from autograder.build.notebooks import write_notebook
from autograder.course import get_stage
from autograder.engine import processes


def _local_shakespeare() -> Path:
    """The test copy of Tiny Shakespeare: ``$GPTCOURSE_SHAKESPEARE``, else the workspace's
    ``shared/data`` beside the checkout, else ``/work/shared/data`` (a clone made elsewhere)."""
    name = "shared/data/tinyshakespeare.txt"
    candidates = [
        os.environ.get("GPTCOURSE_SHAKESPEARE", ""),
        Path(__file__).resolve().parents[2] / name,
        Path("/work") / name,
    ]
    return next((Path(c) for c in candidates if c and Path(c).is_file()), Path("/work") / name)


SHAKESPEARE = _local_shakespeare()


@pytest.fixture(scope="session", autouse=True)
def _subreaper():
    processes.become_subreaper()
    if SHAKESPEARE.exists():
        os.environ.setdefault("GPTCOURSE_SHAKESPEARE", str(SHAKESPEARE))


_graded: dict[str, CatalogueGrades] = {}


@pytest.fixture(scope="session")
def graded_catalogue(tmp_path_factory):
    """``graded_catalogue(stage_id)`` grades the stage's reference, empty release and catalogue once."""

    def get(stage_id: str) -> CatalogueGrades:
        if stage_id not in _graded:
            _graded[stage_id] = CatalogueGrades(get_stage(stage_id), tmp_path_factory.mktemp(f"catalogue-{stage_id}"))
        return _graded[stage_id]

    return get


def submission(stage_id: str, folder: Path, name: str, replace=None, extra_cells=None, base="reference") -> Path:
    """Write a reference (or student) notebook with replaced or added cells."""
    path = folder / f"{name}.ipynb"
    write_notebook(variant_notebook(get_stage(stage_id), replace, extra_cells, base), path)
    return path


def make_root(autograder_zip: Path, folder: Path, notebook: Path | None = None, metadata: dict | None = None) -> Path:
    """A directory laid out like Gradescope's /autograder, with the zip unpacked in source/."""
    root = folder / "autograder"
    with zipfile.ZipFile(autograder_zip) as archive:
        archive.extractall(root / "source")
    for name in ("run_autograder", "setup.sh"):
        os.chmod(root / "source" / name, 0o755)
    (root / "submission").mkdir()
    (root / "results").mkdir()
    (root / "submission_metadata.json").write_text(json.dumps(metadata or {"previous_submissions": []}))
    if notebook is not None:
        shutil.copy(notebook, root / "submission" / notebook.name)
    return root
