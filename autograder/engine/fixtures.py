"""Reading the expected outputs of the hidden tests (the reference's outputs, saved by the build),
and what the build saved with them: the course's code of the earlier answers, and which hidden
tests prove each public test."""

import json
from pathlib import Path
from typing import Any

from . import codec


class FixtureError(RuntimeError):
    """Fixtures that are missing, stale or not the reference's."""


def read_fixtures(path: Path) -> dict[str, Any]:
    """Decode a fixture file into ``{case key: expected value}``."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    return {key: codec.decode(value) for key, value in doc["values"].items()}


def read_given(path: Path) -> dict[str, str]:
    """The course's code of the earlier stages' answers a stage's notebook uses (``MODULE.NAME`` ->
    the cell's code), saved beside the expected outputs; grading runs it in those cells."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    given = doc.get("given", {})
    if not isinstance(given, dict) or not all(isinstance(v, str) for v in given.values()):
        raise FixtureError(f"{path}: `given` must map names to code")
    return given


def read_partners(path: Path) -> dict[str, tuple[str, ...]]:
    """For each public test, the hidden tests that check only clauses of the contract it checks too
    and can prove it (``build.clauses.proving_partners``), saved beside the expected outputs: a passed
    public test's points count once one of them passed (``judge``). Empty in an older file."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    partners = doc.get("partners", {})
    if not isinstance(partners, dict) or not all(
        isinstance(v, list) and all(isinstance(k, str) for k in v) for v in partners.values()
    ):
        raise FixtureError(f"{path}: `partners` must map test names to lists of test names")
    return {key: tuple(keys) for key, keys in partners.items()}
