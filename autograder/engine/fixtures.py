"""Reading the expected outputs of the hidden tests (the reference's outputs, saved by the build),
and what the build saved with them: the course's code of the earlier answers, and which hidden
tests prove each public test."""

import json
from pathlib import Path
from typing import Any, NamedTuple

from . import codec


class FixtureError(RuntimeError):
    """Fixtures that are missing, stale or not the reference's."""


class FixtureFile(NamedTuple):
    """What a stage's fixture file holds, in the order ``StageTests.load`` and ``with_fixtures`` take it.

    - ``values``: ``{case key: expected value}``, the reference's outputs;
    - ``given``: the course's code of the earlier stages' answers the notebook uses (``MODULE.NAME``
      -> the cell's code); grading runs it in those cells;
    - ``partners``: for each public test, the hidden tests that check only clauses of the contract
      it checks too and can prove it (``build.clauses.proving_partners``): a passed public test's
      points count once one of them passed (``judge``). Empty in an older file.
    """

    values: dict[str, Any]
    given: dict[str, str]
    partners: dict[str, tuple[str, ...]]


def read_fixture_file(path: Path) -> FixtureFile:
    """Read and check a fixture file once."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    given = doc.get("given", {})
    if not isinstance(given, dict) or not all(isinstance(v, str) for v in given.values()):
        raise FixtureError(f"{path}: `given` must map names to code")
    partners = doc.get("partners", {})
    if not isinstance(partners, dict) or not all(
        isinstance(v, list) and all(isinstance(k, str) for k in v) for v in partners.values()
    ):
        raise FixtureError(f"{path}: `partners` must map test names to lists of test names")
    return FixtureFile(
        values={key: codec.decode(value) for key, value in doc["values"].items()},
        given=given,
        partners={key: tuple(keys) for key, keys in partners.items()},
    )
