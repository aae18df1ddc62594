"""Shared fixtures: graded catalogues are computed once per session and stage."""

import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from autograder import processes
from autograder.fixtures import DEFAULT_DIR, load_fixtures
from autograder.grading import grade_many
from autograder.mistakes import catalogue
from autograder.runner import Limits
from autograder.stages import get_stage
from autograder.submissions import variant_notebook, write_variant
from autograder.build.notebooks import make_notebook, write_notebook



def _local_shakespeare() -> Path:
    """The test copy of Tiny Shakespeare: ``$GPTCOURSE_SHAKESPEARE``, else the workspace's
    ``shared/data`` beside the checkout, else ``/work/shared/data`` (a clone made elsewhere)."""
    name = "shared/data/tinyshakespeare.txt"
    candidates = [os.environ.get("GPTCOURSE_SHAKESPEARE", ""), Path(__file__).resolve().parents[2] / name, Path("/work") / name]
    return next((Path(c) for c in candidates if c and Path(c).is_file()), Path("/work") / name)


SHAKESPEARE = _local_shakespeare()


@pytest.fixture(scope="session", autouse=True)
def _subreaper():
    processes.become_subreaper()
    if SHAKESPEARE.exists():
        os.environ.setdefault("GPTCOURSE_SHAKESPEARE", str(SHAKESPEARE))


class Graded:
    """Every catalogue submission of a stage, graded in one batch."""

    def __init__(self, stage_id: str, folder: Path) -> None:
        self.stage = get_stage(stage_id)
        self.fixtures = load_fixtures(self.stage, DEFAULT_DIR)
        self.mistakes, self.alternatives = catalogue(self.stage.id)
        paths = []
        write_notebook(make_notebook(self.stage, "reference"), folder / "reference.ipynb")
        write_notebook(make_notebook(self.stage, "student"), folder / "empty.ipynb")
        paths += [folder / "reference.ipynb", folder / "empty.ipynb"]
        for variant in self.mistakes + self.alternatives:
            paths.append(write_variant(self.stage, variant, folder))
        graded = grade_many(self.stage, paths, folder / "out", self.fixtures, Limits(), workers=2, progress=False)
        self.by_name = {g.name: g for g in graded}
        self.folder = folder

    def scores(self, name: str) -> dict[str, float]:
        per: dict[str, float] = {}
        for r in self.by_name[name].results:
            per[r.qid] = per.get(r.qid, 0.0) + r.score
        return per


_graded: dict[str, Graded] = {}


@pytest.fixture(scope="session")
def graded_catalogue(tmp_path_factory):
    """``graded_catalogue(stage_id)`` grades the stage's reference, empty release and catalogue once."""

    def get(stage_id: str) -> Graded:
        if stage_id not in _graded:
            _graded[stage_id] = Graded(stage_id, tmp_path_factory.mktemp(f"catalogue-{stage_id}"))
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
