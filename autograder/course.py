"""The course: every stage is a folder ``assignments/<NN>_<name>/``, found, not registered.

A stage folder holds everything about the stage (see ``assignments/README.md``)::

    notebook.md       the notebook source (Markdown with ```python <directive> blocks)
    reference.py      the reference solution, imported as ``solutions.<name>`` (never shipped)
    public.py         public tests, pasted into the student's notebook
    hidden.py         hidden tests, run only when grading
    mistakes.py       the catalogue: realistic MISTAKES and correct ALTERNATIVES
    clauses.md        each question's contract clauses and the hidden tests that cover them
    test_<name>.py    the project's own tests of the reference (pytest)
    gradescope.json   optional Gradescope settings (hidden-test visibility, rate limit)
    claims.py         optional: the numbers the notebook states, each with its measurement
"""

import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .engine.submission import STAGE_ID
from .engine.suites import StageTests
from .errors import UsageError

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENTS = ROOT / "assignments"
REQUIRED = ("notebook.md", "reference.py", "public.py", "hidden.py", "mistakes.py", "clauses.md")


def local_shakespeare() -> Path:
    """The local copy of Tiny Shakespeare the project's own runs use (tests, check-stage):
    ``$GPTCOURSE_SHAKESPEARE``, else the workspace's ``shared/data`` beside the checkout, else
    ``/work/shared/data`` (a clone made elsewhere); the last when none exists, so check ``is_file()``."""
    name = "shared/data/tinyshakespeare.txt"
    candidates = [os.environ.get("GPTCOURSE_SHAKESPEARE", ""), ROOT.parent / name, Path("/work") / name]
    return next((Path(c) for c in candidates if c and Path(c).is_file()), Path("/work") / name)


def command_line_stage(argument: str) -> "Stage":
    """The stage a child process of check-stage is given: its id (``03``) or its folder (a scratch
    copy's included); the local Tiny Shakespeare, when there is one, is the corpus it loads."""
    if local_shakespeare().is_file():
        os.environ.setdefault("GPTCOURSE_SHAKESPEARE", str(local_shakespeare()))
    named = Path(argument)
    return get_stage(named.name, root=named.resolve().parent) if named.is_dir() else get_stage(argument)


@dataclass(frozen=True)
class Stage:
    """One stage (one notebook) of the course: a folder of ``assignments/``."""

    id: str  # "03_attention"
    folder: Path

    @property
    def module(self) -> str:
        """The reference's module name under ``solutions`` (``attention`` for ``03_attention``)."""
        return self.id[3:]

    @property
    def source(self) -> Path:
        return self.folder / "notebook.md"

    @property
    def reference(self) -> Path:
        return self.folder / "reference.py"

    @property
    def public(self) -> Path:
        return self.folder / "public.py"

    @property
    def hidden(self) -> Path:
        return self.folder / "hidden.py"

    @property
    def mistakes(self) -> Path:
        return self.folder / "mistakes.py"

    @property
    def settings(self) -> Path:
        """Optional Gradescope settings of the stage."""
        return self.folder / "gradescope.json"

    @property
    def title(self) -> str:
        """The notebook's first heading, without its "Stage NN ·" prefix."""
        for line in self.source.read_text(encoding="utf-8").splitlines():
            if line.startswith("# "):
                return re.sub(r"^Stage \d+\s*[·:-]\s*", "", line[2:].strip())
        return self.id

    def missing(self) -> list[str]:
        """The required files this folder does not have."""
        return [name for name in REQUIRED if not (self.folder / name).is_file()]

    def tests(self) -> StageTests:
        """The stage's test cases, without expected values (see ``build.fixtures.stage_tests``)."""
        return _tests(self.id, self.public, self.hidden)


@cache
def _tests(stage_id: str, public: Path, hidden: Path) -> StageTests:
    return StageTests.load(stage_id, public, hidden)


def all_stages(root: Path = ASSIGNMENTS) -> list[Stage]:
    """Every stage folder, in course order."""
    return [Stage(p.name, p) for p in sorted(root.iterdir()) if p.is_dir() and STAGE_ID.fullmatch(p.name)]


def _same_number(given: str, number: str) -> bool:
    """Whether ``given`` is the stage number ``number`` written without its leading zero ("4" for "04")."""
    return given.isascii() and given.isdigit() and int(given) == int(number)


def get_stage(stage_id: str, root: Path = ASSIGNMENTS) -> Stage:
    """The stage called ``stage_id`` (``03_attention``, ``03``, ``3`` or ``attention``), complete."""
    stages = all_stages(root)
    for stage in stages:
        if stage_id in (stage.id, stage.id[:2], stage.module) or _same_number(stage_id, stage.id[:2]):
            missing = stage.missing()
            if missing:
                raise UsageError(f"stage {stage.id} is incomplete: {stage.folder} has no {', '.join(missing)}")
            return stage
    known = ", ".join(s.id for s in stages)
    raise UsageError(f"unknown stage {stage_id!r}; the stages are: {known}")


def load_cases(stage_id: str):
    """All test cases of a stage, public first, in file order."""
    return get_stage(stage_id).tests().cases


def questions(stage_id: str) -> list[tuple[str, float]]:
    """``(question id, points)`` of a stage, in the order the public tests introduce them."""
    return get_stage(stage_id).tests().questions()
