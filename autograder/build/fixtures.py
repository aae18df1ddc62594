"""Expected outputs of the hidden tests, made by running the reference on the test inputs.

The reference notebook (the stage's source with the reference code in place of the
stubs) goes through exactly the path a submission takes; the raw outputs of every
``expected=REFERENCE`` case are saved as JSON (see ``engine.codec``) with a hash of the
sources they came from, beside the course's code of the earlier answers the notebook uses
(``given``: grading runs it in their cells) and, for each public test, the hidden tests of the
same clauses (``partners``, from ``clauses.md``: grading counts its points once one passed).
``stage_tests`` gives a stage's tests with fresh fixtures, rebuilding them first when a source changed.
"""

import fcntl
import hashlib
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from autograder.course import ASSIGNMENTS, ROOT, Stage
from autograder.engine import codec
from autograder.engine.fixtures import FixtureError, read_fixture_file
from autograder.engine.results import write_atomic
from autograder.engine.runner import Limits, Outcome, run_submission
from autograder.engine.suites import StageTests
from autograder.kit.cases import REFERENCE

from .clauses import proving_partners, read_clauses
from .notebooks import make_notebook, write_notebook

DEFAULT_DIR = ROOT / "release" / "fixtures"
PACKAGE = Path(__file__).resolve().parent.parent
# what a probe's output can depend on besides the stage's own files
ENGINE_FILES = [
    *sorted((PACKAGE / "kit").glob("*.py")),
    *(PACKAGE / "engine" / n for n in ("child.py", "codec.py", "runner.py", "submission.py", "suites.py")),
    *(PACKAGE / "build" / n for n in ("answers.py", "stubs.py")),  # the given answers' code
    PACKAGE / "build" / "clauses.py",  # the partners saved beside the outputs
    PACKAGE / "engine" / "judge.py",  # ... and the roles that prove each kind (PROVEN_BY)
]


def source_hash(stage: Stage) -> str:
    """A hash of everything a stage's expected outputs depend on."""
    digest = hashlib.sha256()
    named = [(p.name, p) for p in (stage.source, stage.public, stage.hidden, stage.folder / "clauses.md")]
    named += [
        (str(p.relative_to(ROOT)), p)
        for p in (*sorted(ASSIGNMENTS.glob("*/reference.py")), ROOT / "solutions" / "data.py", *ENGINE_FILES)
    ]
    for name, path in named:
        digest.update(name.encode())
        digest.update(path.read_bytes() if path.exists() else b"")
    return digest.hexdigest()


def build_fixtures(stage: Stage, directory: Path = DEFAULT_DIR) -> Path:
    """Run the reference on every reference-fixture case and save its outputs."""
    tests = stage.tests()
    keys = [c.key for c in tests.cases if c.expected is REFERENCE]
    outcome = run_reference(stage, tests, keys)
    problems = [f"{key}: {msg}" for key, msg in outcome.errors.items()]
    problems += [f"cell {i}: {msg}" for i, msg in outcome.cell_errors.items()]
    if problems:
        raise FixtureError(f"{stage.id}: the reference fails its own probes:\n" + "\n".join(problems))
    doc = {
        "stage": stage.id,
        "source_hash": source_hash(stage),
        "values": {k: codec.encode(outcome.values[k]) for k in keys},
        "given": given_code(stage),
        "partners": proving_partners(read_clauses(stage.folder / "clauses.md"), tests.cases),
    }
    target = directory / f"{stage.id}.json"
    write_atomic(target, json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n")  # a reader never sees half
    return target


def run_reference(stage: Stage, tests: StageTests, keys: list[str]) -> Outcome:
    """The stage's reference notebook run on the tests ``keys`` name, as a submission is run."""
    with tempfile.TemporaryDirectory(prefix="gptcourse-ref-") as tmp:
        path = Path(tmp) / f"{stage.id}-reference.ipynb"
        write_notebook(make_notebook(stage, "reference"), path)
        return run_submission(path, tests, Limits(), keys)


def given_code(stage: Stage) -> dict[str, str]:
    """The course's code of each earlier answer the stage's notebook uses, as its cell holds it
    in the reference notebook (grading runs it in the student's cell: ``build.answers``)."""
    return {
        cell["metadata"]["gptcourse"]["answer"]: cell["source"]
        for cell in make_notebook(stage, "reference")["cells"]
        if "answer" in cell.get("metadata", {}).get("gptcourse", {})
    }


def is_fresh(stage: Stage, directory: Path = DEFAULT_DIR) -> bool:
    """Whether the stage's fixture file exists and was made from the current sources."""
    path = directory / f"{stage.id}.json"
    return path.exists() and json.loads(path.read_text(encoding="utf-8")).get("source_hash") == source_hash(stage)


def fixture_file(stage: Stage, directory: Path = DEFAULT_DIR, rebuild: bool = True) -> Path:
    """The stage's fixture file, rebuilt first when missing or made from older sources."""
    if not is_fresh(stage, directory):
        if not rebuild:
            raise FixtureError(f"{directory / stage.id}.json is missing or stale: run `gptcourse build`")
        with _building(directory):  # processes that find it stale at once build it once, one after another
            if not is_fresh(stage, directory):
                build_fixtures(stage, directory)
    return directory / f"{stage.id}.json"


@contextmanager
def _building(directory: Path):
    """Hold an exclusive lock on ``directory`` (the folder itself: nothing is left in it) while
    this process builds fixtures that others wait for."""
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def stage_tests(stage: Stage, directory: Path = DEFAULT_DIR, rebuild: bool = True) -> StageTests:
    """The stage's tests with its expected outputs (rebuilt first when stale)."""
    path = fixture_file(stage, directory, rebuild)
    return stage.tests().with_fixtures(*read_fixture_file(path))
