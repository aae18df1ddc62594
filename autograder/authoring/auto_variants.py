"""The variants ``gptcourse check-stage`` makes by itself from a stage's reference.

Beside the catalogue written by hand (``mistakes.py``), three kinds of variant are made from
the reference and graded in the same batch (``grades.CatalogueGrades``):

- **no-ops**: every stub of the notebook replaced by a stand-in that does nothing and
  returns ``None``, its first argument, or zeros shaped like the reference's answer (one
  notebook each). None may earn a point (the rule "no-ops earn nothing"): a test that a
  no-op passes is a guard (``Case.is_guard``), counted only when a test of the work passes.
- **the builder** (``builds-only``): every function stub raising ``ValueError`` on every call,
  every class stub keeping the reference's ``__init__`` and raising ``ValueError`` from its other
  methods. It may earn only the points of tests marked ``structure=True`` (the rule "building
  alone earns only structure"): a test of structure unlocks no guard (``Case.role``).
- **dtype audits**: per question, the stubs of that question replaced by the reference
  with every tensor it returns in another dtype (floats float64, integers int32). Such a
  slip may fail only the tests that a dtype or device clause of the question cites, and
  no check may raise on it (the rules "dtype slips cost only their clause" and "checks
  never fault").

- **empty answers**: per question, the stubs of that question left as the release has them
  (they raise ``NotImplementedError``), the rest the reference. Such a notebook loses every
  point of that question and none of another, unless the hidden suite declares that the other
  question's tests run the student's code of it (``QUESTIONS_USE``; the rule "an empty answer
  costs only its own question"): a student who skipped one question keeps the others.

The stand-ins are ``slips``: authoring only, never shipped.

Example:
    >>> from autograder.course import get_stage
    >>> [v.slug for v in auto_variants(get_stage("03"))][:5]
    ['noop-none', 'noop-input', 'noop-zeros', 'builds-only', 'audit-embedding']
"""

import inspect
from dataclasses import dataclass
from pathlib import Path

from autograder.build.notebooks import make_notebook, write_notebook
from autograder.build.source import parse_source
from autograder.build.stubs import reference_source
from autograder.course import Stage

from . import slips
from .variants import variant_notebook

NOOPS = {
    "none": "every stub returns None",
    "input": "every stub returns its first argument",
    "zeros": "every stub returns zeros shaped like the reference's answer",
}


@dataclass(frozen=True)
class AutoVariant:
    """A variant made from the reference: a no-op or the builder (``qid`` None: every question), or a
    dtype audit or an empty answer of ``qid``."""

    kind: str  # "noop", "builder", "audit" or "empty"
    slug: str  # its file name, and its name among the graded
    qid: str | None
    what: str  # what it is, for problems: "a no-op stage (every stub returns None)"
    cells: dict[str, str]  # stub name -> the cell's source


def question_stubs(stage: Stage) -> dict[str, list[str]]:
    """The stubs of each question: those between its check cell and the check cell before it.

    Example:
        >>> from autograder.course import get_stage
        >>> question_stubs(get_stage("03"))["rope"]
        ['apply_rope']
    """
    out: dict[str, list[str]] = {}
    pending: list[str] = []
    for block in parse_source(stage.source):
        if block.kind == "stub":
            pending.append(block.arg)
        elif block.kind == "check":
            out[block.arg] = pending
            pending = []
    return out


def _cell(stage: Stage, name: str, wrapped: str) -> str:
    """The reference's own source of ``name``, the stand-ins, then ``name`` rebound to ``wrapped``."""
    return "\n\n\n".join(
        [reference_source(stage.module, name).rstrip("\n"), inspect.getsource(slips).rstrip("\n"), wrapped]
    )


def noop_variants(stage: Stage) -> list[AutoVariant]:
    """One notebook per kind of no-op, every stub of the stage replaced."""
    stubs = [name for names in question_stubs(stage).values() for name in names]
    return [
        AutoVariant(
            "noop",
            f"noop-{how}",
            None,
            f"the no-op notebook noop-{how} ({what})",
            {name: _cell(stage, name, f"{name} = _gptcourse_noop({name}, {how!r})") for name in stubs},
        )
        for how, what in NOOPS.items()
    ]


def builder_variants(stage: Stage) -> list[AutoVariant]:
    """The one notebook whose every stub only builds: functions raise, classes keep ``__init__`` alone."""
    stubs = [name for names in question_stubs(stage).values() for name in names]
    what = (
        "the notebook builds-only (every function stub raises ValueError on every call; every class stub "
        "keeps the reference's __init__ and raises ValueError from its other methods)"
    )
    return [
        AutoVariant(
            "builder",
            "builds-only",
            None,
            what,
            {name: _cell(stage, name, f"{name} = _gptcourse_builder({name})") for name in stubs},
        )
    ]


def audit_variants(stage: Stage) -> list[AutoVariant]:
    """Per question with stubs, its stubs returning every tensor in another dtype."""
    return [
        AutoVariant(
            "audit",
            f"audit-{qid}",
            qid,
            f"the dtype audit audit-{qid} ({', '.join(names)} returning floats in float64, integers in int32)",
            {name: _cell(stage, name, f"{name} = _gptcourse_recast({name})") for name in names},
        )
        for qid, names in question_stubs(stage).items()
        if names
    ]


def empty_variants(stage: Stage) -> list[AutoVariant]:
    """Per question with stubs, its stubs as the release has them."""
    released = {
        cell["metadata"]["gptcourse"]["name"]: cell["source"]
        for cell in make_notebook(stage, "student")["cells"]
        if "name" in cell.get("metadata", {}).get("gptcourse", {})
    }
    return [
        AutoVariant(
            "empty",
            f"empty-{qid}",
            qid,
            f"the notebook empty-{qid} ({', '.join(names)} left as the release's stubs)",
            {name: released[name] for name in names},
        )
        for qid, names in question_stubs(stage).items()
        if names
    ]


def auto_variants(stage: Stage) -> list[AutoVariant]:
    """The no-ops, the builder, the dtype audits, then the empty answers."""
    return noop_variants(stage) + builder_variants(stage) + audit_variants(stage) + empty_variants(stage)


def write_auto_variant(stage: Stage, variant: AutoVariant, folder: Path) -> Path:
    """Write an automatic variant as ``folder/<slug>.ipynb``."""
    path = Path(folder) / f"{variant.slug}.ipynb"
    write_notebook(variant_notebook(stage, variant.cells), path)
    return path
