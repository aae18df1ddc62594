"""How much each stage asks a student to write: its graded functions and classes, the lines
of the reference solution they need, and its written questions.

    python benchmarks/stage_load.py            # the README's Markdown table

The README's table is these rows (check-stage's rule "README's figures current").

A line is a line of the reference's code for a stub (``python stub NAME`` in the notebook),
without blank lines, comments and docstrings: what a student's solution of the same design
holds, give or take. It is a measure of size, not of time. The hours are an estimate by a
stated rule, not a timing of students: an hour to read the notebook and run its cells, a
quarter of an hour per written question, and the lines written at a pace between
``FAST`` and ``SLOW`` tested lines an hour (input checks and debugging included); 07 and
09 add the CPU time of their training runs on a 2-core laptop (``RUNS``, from
``benchmarks/RESULTS_training.md``), which the student waits for.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

READING_HOURS, WRITTEN_HOURS = 1.0, 0.25
FAST, SLOW = 50, 25  # tested lines an hour
# hours a 2-core laptop runs the notebook's training cells (RESULTS_training.md): 07's real run,
# 1034 CPU s over two threads; 09's comparison, 623 CPU s on the one thread its text advises
RUNS = {"07_gpt": 1034 / 2 / 3600, "09_rnn": 623 / 3600}
STUB = re.compile(r"^```python stub (\S+)", re.MULTILINE)
WRITTEN = re.compile(r"^```written ", re.MULTILINE)


def code_lines(node: ast.AST, source: list[str]) -> int:
    """The lines of a definition that hold code: no blank lines, comments or docstrings."""
    docstrings = set()
    for inner in ast.walk(node):
        body = getattr(inner, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docstrings |= set(range(body[0].lineno, body[0].end_lineno + 1))
    lines = range(node.lineno, node.end_lineno + 1)
    return sum(
        1 for n in lines if n not in docstrings and source[n - 1].strip() and not source[n - 1].strip().startswith("#")
    )


def stage_load(folder: Path) -> dict:
    """The stubs, their reference lines and the written questions of one stage."""
    notebook = (folder / "notebook.md").read_text(encoding="utf-8")
    reference = (folder / "reference.py").read_text(encoding="utf-8")
    source = reference.splitlines()
    definitions = {
        node.name: node for node in ast.parse(reference).body if isinstance(node, (ast.FunctionDef, ast.ClassDef))
    }
    stubs = STUB.findall(notebook)
    return {
        "stubs": len(stubs),
        "lines": sum(code_lines(definitions[name], source) for name in stubs),
        "written": len(WRITTEN.findall(notebook)),
    }


def hours(stage: str, load: dict) -> tuple[float, float]:
    """The estimate's range in hours, by the rule of the module's docstring."""
    fixed = READING_HOURS + WRITTEN_HOURS * load["written"] + RUNS.get(stage, 0.0)
    return fixed + load["lines"] / FAST, fixed + load["lines"] / SLOW


HEADER = (
    "| stage | graded functions and classes | lines of the reference for them | written questions | estimate |\n"
    "|---|---|---|---|---|"
)


def table_row(folder: Path) -> str:
    """The stage's row of the README's table.

    >>> from autograder.course import get_stage
    >>> table_row(get_stage("04").folder).startswith("| `04_masking` | 6 |")
    True
    """
    load = stage_load(folder)
    low, high = hours(folder.name, load)
    row = f"| `{folder.name}` | {load['stubs']} | {load['lines']} | {load['written']} |"
    return f"{row} {round(low * 2) / 2:g} to {round(high * 2) / 2:g} hours |"
