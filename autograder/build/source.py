"""Reading a stage's notebook source (``assignments/<stage>.md``).

The source is Markdown. Prose becomes markdown cells (a line ``<!-- cell -->`` starts a
new one). A fenced block whose info string is ``python`` followed by a directive
becomes a code cell:

    ```python given            code every student receives as it is
    ```python stub NAME        the student writes NAME (a function or class of the
                               stage's reference module); the block's text, if any,
                               is the pointer placed in the stub's NotImplementedError
    ```python check QID        the cell that runs question QID's public tests
    ```python demo             a demonstration or plot (never run when grading)
    ```python train            a long training run (never run when grading)
    ```python reference MODULE.NAME
                               given code copied from an earlier stage's reference
    ```python harness          where the public-test harness goes (first code cell)
    ```written ID POINTS       a written question graded by hand: its prompt, a line
                               ``<!-- rubric -->``, its rubric (see ``build.written``)

Any other fence stays in the prose as displayed code.
"""

from dataclasses import dataclass
from pathlib import Path

DIRECTIVES = {"given", "stub", "check", "demo", "train", "reference", "harness"}
CELL_BREAK = "<!-- cell -->"
RUBRIC_BREAK = "<!-- rubric -->"  # in a written question: the prompt above, the rubric below


class SourceError(ValueError):
    """The notebook source is malformed."""


@dataclass(frozen=True)
class Block:
    """One future cell: ``kind`` is ``markdown`` or a directive, ``arg`` its argument."""

    kind: str
    arg: str
    text: str


def parse_source(path: Path) -> list[Block]:
    """Split a notebook source into blocks, in order."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    prose: list[str] = []

    def flush_prose() -> None:
        text = "\n".join(prose).strip("\n")
        if text.strip():
            blocks.append(Block("markdown", "", text))
        prose.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        words = line[3:].split() if line.startswith("```") else []
        directive = len(words) >= 2 and words[0] == "python" and words[1] in DIRECTIVES
        if directive or (words[:1] == ["written"]):
            kind, arg = (words[1], " ".join(words[2:])) if directive else ("written", " ".join(words[1:]))
            if kind in {"stub", "check", "reference", "written"} and not arg:
                raise SourceError(f"{path}:{i + 1}: `{kind}` needs an argument")
            body: list[str] = []
            i += 1
            while i < len(lines) and lines[i].rstrip() != "```":
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise SourceError(f"{path}: the block opened as `{line}` is never closed")
            flush_prose()
            blocks.append(Block(kind, arg, "\n".join(body)))
        elif line.strip() == CELL_BREAK:
            flush_prose()
        else:
            prose.append(line)
        i += 1
    flush_prose()
    return blocks
