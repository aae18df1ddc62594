"""Catalogues of realistic student mistakes and of correct answers in other styles.

One module per stage (``stage_01_tokenisation.py`` for ``01_tokenisation``), each with

    MISTAKES: list[Variant]      each must lose points on its own question, and only there
    ALTERNATIVES: list[Variant]  each must earn full marks

A variant replaces the reference code of some stub cells by its own source. The
project's tests grade every variant; ``gptcourse demo`` grades a few of them.
"""

import textwrap
from dataclasses import dataclass
from importlib import import_module


@dataclass(frozen=True)
class Variant:
    """A submission that differs from the reference in the named cells."""

    qid: str
    name: str
    cells: dict[str, str]  # stub name -> the full source of that cell

    def __post_init__(self) -> None:
        object.__setattr__(self, "cells", {k: textwrap.dedent(v).strip("\n") for k, v in self.cells.items()})

    @property
    def slug(self) -> str:
        """A file-name-safe id, e.g. ``build_vocab-ids-start-at-1``."""
        words = "".join(ch if ch.isalnum() else " " for ch in self.name.lower()).split()
        return f"{self.qid}-{'-'.join(words)[:48]}"


def catalogue(stage_id: str) -> tuple[list[Variant], list[Variant]]:
    """``(mistakes, alternatives)`` of a stage (empty lists when none are written)."""
    try:
        module = import_module(f"autograder.mistakes.stage_{stage_id}")
    except ModuleNotFoundError:
        return [], []
    return list(module.MISTAKES), list(module.ALTERNATIVES)
