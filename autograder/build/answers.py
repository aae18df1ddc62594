"""Earlier stages' answers in a later notebook: handed out only when the instructor releases them.

A later notebook needs code students wrote before (07 builds on 06's ``TransformerBlock``);
its source names it with a ``reference MODULE.NAME`` block. When ``NAME`` is a graded stub
of the stage whose module is ``MODULE``, the block is an *earlier answer*, and what the
student notebook holds depends on that earlier stage's release option,
``assignments/<stage>/release.json``::

    {"answers_released": true}

- absent or false (the default): the cell holds the stub (signature and docstring, the body
  raising ``NotImplementedError``), and the student pastes their own version of that stage
  (or the course's, ``release/answers/<stage>.py``, once the instructor posts it);
- true: the cell holds the course's version, as given code.

So handing out stage N+1 never hands out stage N's answers unless the instructor sets the
option (after stage N's deadline) and rebuilds. Grading is the same either way: the build
stores the course's version of every earlier answer with the stage's fixtures, and the
engine runs it in place of whatever the student's cell holds
(``engine.submission.code_cells``), so a mistake of an earlier stage never costs points twice.

Example:
    >>> from autograder.course import get_stage
    >>> [a.name for a in given_answers(get_stage("05_multihead"))]
    ['masking.causal_mask', 'masking.padding_mask']
    >>> given_answers(get_stage("05_multihead"))[0].stage.id
    '04_masking'
"""

import json
from dataclasses import dataclass
from pathlib import Path

from autograder.course import Stage, all_stages
from autograder.errors import UsageError

from .source import Block, parse_source
from .stubs import bound_names, make_stub, needed_imports, reference_source

RELEASE_FILE = "release.json"
OPTIONS = {"answers_released": bool}
REPORT = "answers.md"  # release/answers.md: what each student notebook holds
ANSWERS_FOLDER = "answers"  # release/answers/<stage>.py: a stage's answers, to post after its deadline


@dataclass(frozen=True)
class GivenAnswer:
    """A graded answer of an earlier stage that a later notebook uses: ``name`` is the block's
    ``MODULE.NAME``, ``stage`` the stage that grades it."""

    name: str
    stage: Stage

    @property
    def short(self) -> str:
        """The function or class name (``LayerNorm``)."""
        return self.name.rpartition(".")[2]

    @property
    def released(self) -> bool:
        return answers_released(self.stage)


def release_options(stage: Stage) -> dict:
    """The stage's ``release.json`` (empty when it has none), checked."""
    path = stage.folder / RELEASE_FILE
    if not path.is_file():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise UsageError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise UsageError(f'{path} must hold a JSON object, such as {{"answers_released": true}}')
    for key, value in doc.items():
        if key not in OPTIONS:
            raise UsageError(f"{path}: unknown option {key!r} (the options are: {', '.join(OPTIONS)})")
        if not isinstance(value, OPTIONS[key]):
            raise UsageError(f"{path}: {key} must be true or false, got {value!r}")
    return doc


def answers_released(stage: Stage) -> bool:
    """Whether the instructor has released ``stage``'s answers to later notebooks."""
    return bool(release_options(stage).get("answers_released", False))


def graded_names(stage: Stage) -> set[str]:
    """The names a stage's students write (its stub blocks)."""
    return {b.arg for b in parse_source(stage.source) if b.kind == "stub"}


def course_of(stage: Stage) -> list[Stage]:
    """The stages beside ``stage`` (its course: the folders of its ``assignments/``)."""
    return all_stages(stage.folder.parent)


def answer_of(block: Block, stages: list[Stage]) -> GivenAnswer | None:
    """The earlier answer a ``reference`` block gives (``stages``: the course), or None (a helper
    such as ``data.load_corpus``, or a given part of the stage's own module)."""
    if block.kind != "reference":
        return None
    module, _, name = block.arg.rpartition(".")
    for stage in stages:
        if stage.module == module:
            return GivenAnswer(block.arg, stage) if name in graded_names(stage) else None
    return None


def given_answers(stage: Stage) -> list[GivenAnswer]:
    """The earlier answers ``stage``'s notebook uses, in notebook order."""
    stages = course_of(stage)
    found = (answer_of(b, stages) for b in parse_source(stage.source))
    return [a for a in found if a is not None]


def course_source(answer: GivenAnswer, bound: set[str]) -> str:
    """The course's version of an answer, with the imports it needs that ``bound`` lacks."""
    module, _, name = answer.name.rpartition(".")
    imports = needed_imports(module, name, bound)
    source = reference_source(module, name).rstrip("\n")
    return "\n".join(imports) + "\n\n\n" + source if imports else source


def stub_source(answer: GivenAnswer, bound: set[str]) -> str:
    """The cell a student gets before the answer is released: its signature and docstring, to
    replace with their own version."""
    module, _, name = answer.name.rpartition(".")
    pointer = f"Paste your {name} of stage {answer.stage.id[:2]} here (see the note above)."
    stub = make_stub(reference_source(module, name), name, pointer).rstrip("\n")
    imports = needed_imports(module, name, bound)
    return "\n".join(imports) + "\n\n\n" + stub if imports else stub


def group_note(answers: list[tuple[GivenAnswer, bool]]) -> str:
    """The Markdown cell before a run of earlier answers (each with whether its cell holds the
    course's version): what they are, and how they are graded."""
    given = [a for a, course in answers if course]
    withheld = [a for a, course in answers if not course]
    parts = ["**Code of earlier stages.**"]
    if given:
        parts.append(f"The next cells give the course's {_listing(given)}; read them again if you like.")
    if withheld:
        stages = sorted({a.stage.id[:2] for a in withheld})
        parts.append(
            f"Paste your own {_listing(withheld)} into the cells below that hold only their signatures "
            f"and docstrings (replace each cell's code), or the course's versions once your instructor "
            f"releases the answers of stage{'s' if len(stages) > 1 else ''} {_and(stages)}."
        )
    parts.append(
        "When this notebook is graded, these cells run the course's versions whatever they hold, "
        "so a mistake of an earlier stage never costs points twice: only this stage's code is graded. "
        "Keep your own helpers out of these cells."
    )
    return " ".join(parts)


def _listing(answers: list[GivenAnswer]) -> str:
    """``LayerNorm and FeedForward (stage 06), MultiHeadAttention (stage 05)``."""
    by_stage: dict[str, list[str]] = {}
    for a in answers:
        by_stage.setdefault(a.stage.id[:2], []).append(f"`{a.short}`")
    parts = [f"{_and(names)} (stage {number})" for number, names in by_stage.items()]
    return _and(parts)


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def notebook_answers(notebook: dict) -> list[tuple[str, bool]]:
    """``(MODULE.NAME, given)`` for each earlier answer a built notebook has a cell for: ``given``
    when the cell holds the course's version, not when it holds the stub."""
    found = []
    for cell in notebook.get("cells", []):
        meta = cell.get("metadata", {}).get("gptcourse", {})
        if "answer" in meta:
            found.append((meta["answer"], bool(meta.get("given"))))
    return found


def answers_line(stage: Stage, notebook: dict) -> str:
    """What ``gptcourse build`` prints about a student notebook's earlier answers."""
    held = notebook_answers(notebook)
    given = [name.rpartition(".")[2] for name, course in held if course]
    withheld = [name.rpartition(".")[2] for name, course in held if not course]
    if not held:
        return f"{stage.id}: earlier answers: none used"
    return (
        f"{stage.id}: earlier answers given: {', '.join(given) or 'none'}; "
        f"withheld (students paste their own): {', '.join(withheld) or 'none'}"
    )


def answers_report(student_dir: Path, stages: list[Stage]) -> str:
    """``release/answers.md``: for each student notebook on disk, the earlier answers it holds."""
    lines = [
        "# Earlier answers in the student notebooks",
        "",
        "Written by `gptcourse build` from the notebooks in `release/student/`. A later notebook",
        "holds an earlier stage's graded answers only when that stage's",
        f'`assignments/<stage>/{RELEASE_FILE}` says `{{"answers_released": true}}`; otherwise its',
        "cells hold the signatures and docstrings, and students paste their own versions.",
        "Grading always runs the course's versions in those cells, in the student's own process:",
        "compiled, without their text or docstrings, but a determined student can read that",
        "compiled form there and copy it out through their failing tests' messages. While a",
        "stage still takes submissions (late days included), a later stage open beside it is",
        "that risk (`assignments/SPEC.md` § Earlier answers).",
        "",
        "| notebook | answers it gives | answers withheld |",
        "|---|---|---|",
    ]
    for stage in stages:
        path = Path(student_dir) / stage.id / f"{stage.id}.ipynb"
        if not path.is_file():
            lines.append(f"| {stage.id} | (not built) | |")
            continue
        held = notebook_answers(json.loads(path.read_text(encoding="utf-8")))
        cells = [
            "; ".join(_by_stage([n for n, g in held if g == wanted], stages)) or "none" for wanted in (True, False)
        ]
        lines.append(f"| {stage.id} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines) + "\n"


def _by_stage(names: list[str], stages: list[Stage]) -> list[str]:
    """``["blocks.LayerNorm", "blocks.FeedForward"]`` as ``["06_blocks: LayerNorm, FeedForward"]``."""
    module_stage = {s.module: s.id for s in stages}
    grouped: dict[str, list[str]] = {}
    for name in names:
        module, _, short = name.rpartition(".")
        grouped.setdefault(module_stage.get(module, module), []).append(short)
    return [f"{stage}: {', '.join(shorts)}" for stage, shorts in sorted(grouped.items())]


def answers_file(stage: Stage, later: list[Stage]) -> str | None:
    """``release/answers/<stage>.py``: the course's versions of ``stage``'s answers that ``later``
    notebooks use, for the instructor to post after its deadline (None: no later notebook uses any)."""
    used = {a.name: a for s in later for a in given_answers(s) if a.stage.id == stage.id}
    if not used:
        return None
    bound: set[str] = set()
    parts = [
        f'"""The course\'s answers of stage {stage.id} that later notebooks use: post this after its deadline.\n\n'
        "Students paste each definition into the cell of the same name in a later notebook.\n"
        '"""'
    ]
    for answer in used.values():
        source = course_source(answer, bound)
        bound |= bound_names(source)
        parts.append(source)
    return "\n\n\n".join(parts) + "\n"
