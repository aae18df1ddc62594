"""What the project's tests share (loaded as a pytest plugin: ``-p support`` in pyproject.toml,
so that the tests of each stage's reference in ``assignments/`` have it too): the local Tiny
Shakespeare, notebooks made for a test, a Gradescope-like root, each stage's catalogue
graded once (``graded_catalogue``), and the order in which the slow tests start."""

import fcntl
import hashlib
import json
import os
import pickle
import platform
import shutil
import sys
import zipfile
from contextlib import contextmanager
from pathlib import Path

import numpy
import pytest
import torch

from autograder.authoring.grades import CatalogueGrades
from autograder.authoring.variants import variant_notebook
from autograder.build.notebooks import write_notebook
from autograder.course import ROOT, get_stage
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
# Where graded catalogues are kept from one run of the tests to the next (git ignores build/);
# GPTCOURSE_TEST_CACHE names another folder, or "off" keeps them for one run only.
CACHE = ROOT / "build" / "test-cache"
# what decides a catalogue's grades: the engine, the kit, the build, the catalogue and every
# stage (a notebook holds the code of earlier stages), the references, and the versions below
CACHE_INPUTS = ("autograder", "assignments", "solutions")


def grading_key() -> str:
    """A hash of everything a graded catalogue depends on; any change to it grades afresh."""
    digest = hashlib.sha256()
    for top in CACHE_INPUTS:
        for path in sorted((ROOT / top).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    setting = [sys.version, platform.machine(), torch.__version__, numpy.__version__, str(os.geteuid())]
    setting += [
        f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("GPTCOURSE_") and k != "GPTCOURSE_TEST_CACHE"
    ]
    digest.update("\n".join(setting).encode())
    return digest.hexdigest()[:16]


def _cache_root(tmp_path_factory) -> Path:
    """The persistent cache, or a folder that every worker of this run shares (pytest-xdist)."""
    chosen = os.environ.get("GPTCOURSE_TEST_CACHE", "")
    if chosen.lower() not in ("off", "0", "no"):
        return Path(chosen) if chosen else CACHE
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextmanager
def _locked(path: Path):
    """Hold an exclusive lock on ``path`` (one process at a time grades a stage's catalogue)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _catalogue(stage_id: str, root: Path, key: str) -> CatalogueGrades:
    """A stage's catalogue graded once for ``key``: by the first process to ask, read back by the others."""
    stage = get_stage(stage_id)
    folder, saved = root / f"{stage.id}-{key}", root / f"{stage.id}-{key}" / "graded.pickle"
    with _locked(root / f"{stage.id}.lock"):
        if saved.exists():
            with saved.open("rb") as handle:
                return CatalogueGrades(stage, folder, graded=pickle.load(handle))
        for old in root.glob(f"{stage.id}-*"):  # grades of older sources
            shutil.rmtree(old, ignore_errors=True)
        folder.mkdir(parents=True)
        grades = CatalogueGrades(stage, folder)
        partial = saved.with_suffix(".partial")
        with partial.open("wb") as handle:
            pickle.dump(grades.by_name, handle)
        partial.replace(saved)
        return grades


@pytest.fixture(scope="session")
def graded_catalogue(tmp_path_factory):
    """``graded_catalogue(stage_id)`` grades the stage's reference, empty release and catalogue once:
    once per run whatever the number of pytest-xdist workers, and once for as long as nothing
    it depends on changes (``grading_key``)."""
    root, key = _cache_root(tmp_path_factory), grading_key()

    def get(stage_id: str) -> CatalogueGrades:
        if stage_id not in _graded:
            _graded[stage_id] = _catalogue(stage_id, root, key)
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


# The slowest tests, slowest first (from `make test --durations` on a 2-core machine): they
# start first, so that no worker of pytest-xdist begins one of them when the others are done.
# Only the order depends on this list: a test missing from it runs all the same, later.
SLOW_FIRST = (
    "tests/test_gradescope_limits.py::test_every_function_hanging",
    "tests/test_nbgrader.py::test_the_cheat_and_the_hostile_catalogue",
    "tests/test_nbgrader.py::test_every_stage_through_nbgrader",
    "tests/test_rules.py::test_graded_rule[09_encoders",
    "tests/test_rules.py::test_graded_rule[07_gpt",
    "tests/test_nbgrader.py::test_a_course_runs_through_nbgrader",
    "tests/test_rules.py::test_graded_rule[02_bpe",
    "tests/test_rules.py::test_graded_rule[08_rnn",
    "tests/test_gradescope.py",
    "tests/test_benchmarks.py",
    "tests/test_gradescope_limits.py",
    "tests/test_notebooks_run.py",
    "tests/test_hostile.py",
    "tests/test_rules.py::test_graded_rule",
)
# Files whose tests are independent of one another (no module-scoped fixture worth sharing):
# pytest-xdist spreads them over its workers. Every other file runs on one worker (its
# module-scoped fixtures are made once); test_hostile.py's batches and test_rules.py's graded
# catalogues run one worker per stage (a second worker would only wait for the first).
SPREAD = ("tests/test_nbgrader.py", "tests/test_rules.py", "tests/test_gradescope_limits.py")


def _group(item) -> str | None:
    """The pytest-xdist group of a test (``--dist loadgroup``): the tests that share a worker."""
    path = item.nodeid.split("::", 1)[0]
    params = getattr(getattr(item, "callspec", None), "params", {})
    if path == "tests/test_rules.py" and "graded_catalogue" in item.fixturenames:
        return f"catalogue-{params['stage'].id}"
    if path in SPREAD:
        return None
    if path == "tests/test_hostile.py":
        stage = next((params[k] for k in ("batch", "full_batch", "stage_id") if k in params), None)
        return f"hostile-{stage}" if stage else path
    return path


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Start the slowest tests first and keep the tests that share a fixture on one worker.

    pytest-xdist (``--dist loadgroup``) hands each worker two units of work at the start and
    one more whenever it finishes one, so that the unit queued behind each of the first
    (the slowest) waits for all of it: those second units are small (a static rule each).
    """
    rank, groups = {}, {}
    for item in items:
        rank[item.nodeid] = next((i for i, p in enumerate(SLOW_FIRST) if item.nodeid.startswith(p)), len(SLOW_FIRST))
        groups[item.nodeid] = _group(item)
        if groups[item.nodeid] is not None:
            item.add_marker(pytest.mark.xdist_group(groups[item.nodeid]))
    items.sort(key=lambda item: rank[item.nodeid])  # stable: the collection order otherwise
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))  # set by pytest-xdist on its workers
    small = [i for i in items if i.nodeid.startswith("tests/test_rules.py::test_static_rule")][:workers]
    if workers > 1 and len(small) == workers:
        first = [item for item in items if item not in small]
        units = []  # the units of work the first ``workers`` are in (a group, or a test)
        for item in first:
            unit = groups[item.nodeid] or item.nodeid
            if unit not in units:
                units.append(unit)
            if len(units) > workers:
                break
        cut = next(i for i, item in enumerate(first) if (groups[item.nodeid] or item.nodeid) == units[-1])
        items[:] = first[:cut] + small + first[cut:]
