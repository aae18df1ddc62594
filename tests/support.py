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
import re
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
from autograder.course import ROOT, get_stage, local_shakespeare
from autograder.engine import processes

SHAKESPEARE = local_shakespeare()  # the test copy of Tiny Shakespeare (it may not exist)


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
        f"{k}={v}"
        for k, v in sorted(os.environ.items())
        if k.startswith("GPTCOURSE_") and k not in ("GPTCOURSE_TEST_CACHE", "GPTCOURSE_TEST_CPU")
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
                by_name, reused = pickle.load(handle)
            grades = CatalogueGrades(stage, folder, graded=by_name)
            grades.reused = reused
            return grades
        for old in root.glob(f"{stage.id}-*"):  # grades of older sources
            shutil.rmtree(old, ignore_errors=True)
        folder.mkdir(parents=True)
        grades = CatalogueGrades(stage, folder)
        partial = saved.with_suffix(".partial")
        with partial.open("wb") as handle:
            pickle.dump((grades.by_name, grades.reused), handle)
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
    "tests/test_otter.py::test_the_hostile_catalogue_gains_nothing",
    "tests/test_rules.py::test_graded_rule[10_encoders",
    "tests/test_rules.py::test_graded_rule[07_gpt",
    "tests/test_rules.py::test_graded_rule[08_generation",
    "tests/test_nbgrader.py::test_a_course_runs_through_nbgrader",
    "tests/test_rules.py::test_graded_rule[02_bpe",
    "tests/test_rules.py::test_graded_rule[09_rnn",
    "tests/test_otter.py::test_in_kernel_cheats",
    "tests/test_otter.py::test_otter_grades_path",
    "tests/test_otter.py::test_every_stage_through_otter_run",
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
SPREAD = ("tests/test_nbgrader.py", "tests/test_rules.py", "tests/test_gradescope_limits.py", "tests/test_otter.py")
PER_STAGE = {"tests/test_hostile.py": "hostile", "tests/test_rules.py::test_graded_rule": "catalogue"}
STAGE_ID = re.compile(r"\[(\d\d_[a-z]+)")  # the stage a parametrised test's id starts with


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: the tests pytest-xdist runs on one worker, in order.

    >>> unit_of("tests/test_rules.py::test_graded_rule[10_encoders-hints right or absent]")
    'catalogue 10_encoders'
    >>> unit_of("tests/test_build.py::test_unclosed_block_is_a_clear_error")
    'tests/test_build.py'
    """
    path = nodeid.split("::", 1)[0]
    stage = STAGE_ID.search(nodeid)
    for prefix, kind in PER_STAGE.items():
        if nodeid.startswith(prefix) and stage:
            return f"{kind} {stage.group(1)}"
    return nodeid if path in SPREAD else path


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's scheduler by units of work (``unit_of``), in the order of collection.

    (Its own ``--dist loadgroup`` marks a test's group in its node id, which pytest 9 no longer
    lets a plugin change; the units here are read off the node ids as they are.)
    """
    from xdist.scheduler import LoadScopeScheduling

    class ByUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    config.option.loadscopereorder = False  # the slowest first, as collected (pytest_collection_modifyitems)
    return ByUnit(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Start the slowest tests first (``SLOW_FIRST``).

    pytest-xdist hands each worker two units of work at the start and one more whenever it
    finishes one, so that the unit queued behind each of the first (the slowest) waits for
    all of it: those second units are small (a static rule each).
    """
    rank = {
        i.nodeid: next((n for n, p in enumerate(SLOW_FIRST) if i.nodeid.startswith(p)), len(SLOW_FIRST)) for i in items
    }
    items.sort(key=lambda item: rank[item.nodeid])  # stable: the collection order otherwise
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))  # set by pytest-xdist on its workers
    small = [i for i in items if i.nodeid.startswith("tests/test_rules.py::test_static_rule")][:workers]
    if workers > 1 and len(small) == workers:
        first = [item for item in items if item not in small]
        units = []  # the units of work the first tests are in, up to the first after the slowest
        for item in first:
            if unit_of(item.nodeid) not in units:
                units.append(unit_of(item.nodeid))
            if len(units) > workers:
                break
        cut = next(i for i, item in enumerate(first) if unit_of(item.nodeid) == units[-1])
        items[:] = first[:cut] + small + first[cut:]


# GPTCOURSE_TEST_CPU=<file>: the CPU time of each test, for finding what makes the suite slow.
# Each process of pytest (each worker of pytest-xdist) moves into a cgroup of its own (cgroup v1
# cpuacct, root only), with every process it starts, the engine's fork servers and graders
# included: a test's CPU time is then its own, however busy the machine. One JSON line per test
# (nodeid, cpu and wall seconds) is appended to the file.
CPU_LOG = os.environ.get("GPTCOURSE_TEST_CPU", "")
CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def _own_cpuacct() -> Path | None:
    """A cpuacct cgroup holding this process (and what it starts from now on), or None where none can be made."""
    group = CPUACCT / f"gptcourse-test-{os.getpid()}"
    try:
        group.mkdir(exist_ok=True)
        (group / "cgroup.procs").write_text(str(os.getpid()))
        return group
    except OSError:
        return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not CPU_LOG:
        yield
        return
    import time

    group = _own_cpuacct()
    usage = (lambda: int((group / "cpuacct.usage").read_text()) / 1e9) if group else time.process_time
    cpu, wall = usage(), time.monotonic()
    yield
    line = {"test": item.nodeid, "cpu": usage() - cpu, "wall": time.monotonic() - wall, "cgroup": group is not None}
    with open(CPU_LOG, "a") as handle:
        handle.write(json.dumps(line) + "\n")


def pytest_sessionfinish(session):
    """Leave the cgroup of ``GPTCOURSE_TEST_CPU`` and remove it (when nothing started in it is left)."""
    group = CPUACCT / f"gptcourse-test-{os.getpid()}"
    if CPU_LOG and group.is_dir():
        try:
            (CPUACCT / "cgroup.procs").write_text(str(os.getpid()))
            group.rmdir()
        except OSError:
            pass
