"""The hidden reference solutions: ``solutions.<name>`` is ``assignments/<NN>_<name>/reference.py``.

Each reference lives in its stage's folder, beside the notebook source and the tests, and
is never shipped to students or to Gradescope. This package makes every stage's reference
importable under one name (``from solutions.gpt import GPT``), found from the folders, so
that a new stage needs no registration here. ``solutions.data`` (the corpora) is a plain
module of this package: it is given code, not a solution.
"""

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from pathlib import Path

ASSIGNMENTS = Path(__file__).resolve().parent.parent / "assignments"


class StageReferences(importlib.abc.MetaPathFinder):
    """Finds ``solutions.<name>`` as ``assignments/<NN>_<name>/reference.py``."""

    def find_spec(self, fullname: str, path=None, target=None) -> importlib.machinery.ModuleSpec | None:
        package, _, name = fullname.rpartition(".")
        if package != __name__ or not name:
            return None
        found = sorted(ASSIGNMENTS.glob(f"[0-9][0-9]_{name}/reference.py"))
        return importlib.util.spec_from_file_location(fullname, found[0]) if len(found) == 1 else None


if not any(isinstance(finder, StageReferences) for finder in sys.meta_path):
    sys.meta_path.append(StageReferences())
