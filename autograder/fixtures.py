"""Expected outputs of the hidden tests, made by running the reference on the test inputs.

The reference notebook (the stage's source with the reference code in place of the
stubs) goes through exactly the path a submission takes; the raw outputs of every
``expected=REFERENCE`` case are saved as JSON (see ``codec``) with a hash of the
sources they came from. Grading loads them, rebuilding when a source changed.
"""

import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

from . import codec
from .build.notebooks import make_notebook, write_notebook
from .harness import REFERENCE
from .runner import Limits, run_submission
from .stages import ROOT, Stage, load_cases

DEFAULT_DIR = ROOT / "release" / "fixtures"
ENGINE_FILES = ["child.py", "codec.py", "harness.py", "checks.py", "notebook.py", "runner.py"]


class FixtureError(RuntimeError):
    """The reference failed one of its own tests' probes."""


def source_hash(stage: Stage) -> str:
    """A hash of everything a stage's expected outputs depend on."""
    digest = hashlib.sha256()
    engine = Path(__file__).resolve().parent
    paths = [ROOT / "solutions" / f"{stage.module}.py", stage.source, *stage.suite_files]
    paths += [engine / name for name in ENGINE_FILES]
    paths += sorted((ROOT / "solutions").glob("*.py"))
    for path in paths:
        digest.update(path.name.encode())
        digest.update(path.read_bytes() if path.exists() else b"")
    return digest.hexdigest()


def build_fixtures(stage: Stage, directory: Path = DEFAULT_DIR) -> Path:
    """Run the reference on every reference-fixture case and save its outputs."""
    cases = [c for c in load_cases(stage.id) if c.expected is REFERENCE]
    with tempfile.TemporaryDirectory(prefix="gptcourse-ref-") as tmp:
        path = Path(tmp) / f"{stage.id}-reference.ipynb"
        write_notebook(make_notebook(stage, "reference"), path)
        outcome = run_submission(path, stage.suite_files, cases, Limits())
    problems = [f"{key}: {msg}" for key, msg in outcome.errors.items()]
    problems += [f"cell {i}: {msg}" for i, msg in outcome.cell_errors.items()]
    if problems:
        raise FixtureError(f"{stage.id}: the reference fails its own probes:\n" + "\n".join(problems))
    doc = {
        "stage": stage.id,
        "source_hash": source_hash(stage),
        "values": {c.key: codec.encode(outcome.values[c.key]) for c in cases},
    }
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{stage.id}.json"
    target.write_text(json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
    return target


def read_fixtures(path: Path) -> dict[str, Any]:
    """Decode a fixture file into ``{case key: expected value}``."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    return {key: codec.decode(value) for key, value in doc["values"].items()}


def load_fixtures(stage: Stage, directory: Path = DEFAULT_DIR, rebuild: bool = True) -> dict[str, Any]:
    """The stage's fixtures, rebuilt first when missing or made from older sources."""
    path = directory / f"{stage.id}.json"
    fresh = False
    if path.exists():
        fresh = json.loads(path.read_text(encoding="utf-8")).get("source_hash") == source_hash(stage)
    if not fresh:
        if not rebuild:
            raise FixtureError(f"{path} is missing or stale: run `gptcourse build`")
        build_fixtures(stage, directory)
    return read_fixtures(path)
