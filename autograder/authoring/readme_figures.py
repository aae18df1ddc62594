"""check-stage's rule "README's figures current": the README states figures that follow from
the stages (how many catalogued mistakes and written questions the course has in all, and each
stage's row of the table of what it asks), so that a change to one stage that makes one of them
false is named at once, with the figure to write, instead of at the end of the full suite.

Totals are counted with the stage checked as it is and every other stage of the course as it
is in the project (a scratch copy of one stage is checked against the project's README).

Example::

    >>> from autograder.course import get_stage
    >>> readme_problems(get_stage("04"))
    []
"""

import re

from autograder.build.written import written_questions
from autograder.course import ROOT, Stage, all_stages

from .catalogue import catalogue
from .stage_load import HEADER, table_row

README = ROOT / "README.md"
MISTAKES = re.compile(r"each of the (\d+) catalogued realistic mistakes")
WRITTEN = re.compile(r"Each stage asks two or three conceptual questions \((\d+) in all\)")


def readme_problems(stage: Stage) -> list[str]:
    """Each figure of the README that the stage, as it is, makes false."""
    text = README.read_text(encoding="utf-8")
    flat = " ".join(text.split())
    others = [s for s in all_stages() if s.id != stage.id]
    mistakes = len(catalogue(stage)[0]) + sum(len(catalogue(s)[0]) for s in others)
    written = {s.id: len(written_questions(s)) for s in [stage, *others]}
    problems = _total(flat, MISTAKES, mistakes, "catalogued mistakes")
    problems += _total(flat, WRITTEN, sum(written.values()), "written questions")
    problems += [
        f"README.md says each stage asks two or three written questions; {stage_id} asks {n}"
        for stage_id, n in written.items()
        if n not in (2, 3)
    ]
    row, lines = table_row(stage.folder), text.splitlines()
    if row not in lines:
        table = lines[lines.index(HEADER.splitlines()[0]) :] if HEADER.splitlines()[0] in lines else []
        stated = next((line for line in table if line.startswith(f"| `{stage.id}` |")), "no row")
        problems.append(
            f"README.md's table of what each stage asks has {stated!r} for {stage.id}; as measured: {row!r}"
            " (python benchmarks/stage_load.py prints the table)"
        )
    return problems


def _total(flat: str, pattern: re.Pattern, count: int, what: str) -> list[str]:
    """A problem when the README's total of ``what`` (``pattern``'s number) is not ``count``."""
    stated = pattern.search(flat)
    if stated is None:
        return [f"README.md no longer states the {what} in all (the rule reads {pattern.pattern!r})"]
    if int(stated[1]) != count:
        return [f"README.md says {stated[1]} {what} in all; the course has {count}: write {count}"]
    return []
