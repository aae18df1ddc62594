"""Reading the expected outputs of the hidden tests (the reference's outputs, saved by the build)."""

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
