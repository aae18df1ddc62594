"""Catalogues of realistic student mistakes and of correct answers in other styles.

Each stage's ``assignments/<stage>/mistakes.py`` defines

    MISTAKES: list[Variant]      each must lose points on its own question, and only there,
                                 breaking the clauses (``clauses.md`` ids) it declares
    ALTERNATIVES: list[Variant]  each must earn full marks

A variant replaces the reference code of some stub cells by its own source. The
project's tests grade every variant; ``gptcourse demo`` grades a few of them.
"""

import importlib.util
import textwrap
from dataclasses import dataclass

from autograder.build.stubs import reference_source
from autograder.course import Stage, get_stage


@dataclass(frozen=True)
class Variant:
    """A submission that differs from the reference in the named cells."""

    qid: str
    name: str
    cells: dict[str, str]  # stub name -> the full source of that cell
    hints: tuple[str, ...] = ()  # the hints (``Hint.mistake``) this mistake must trigger, and no others
    hidden_only: str = ""  # why no public test can catch this mistake (empty: a public test must)
    clauses: tuple[str, ...] = ()  # the ids of the clauses (clauses.md) of its question that this mistake breaks

    def __post_init__(self) -> None:
        object.__setattr__(self, "cells", {k: textwrap.dedent(v).strip("\n") for k, v in self.cells.items()})
        if isinstance(self.clauses, str):
            raise TypeError(f"Variant {self.name!r}: clauses is a tuple of clause ids, e.g. ({self.clauses!r},)")
        object.__setattr__(self, "clauses", tuple(self.clauses))

    @property
    def slug(self) -> str:
        """A file-name-safe id, e.g. ``build_vocab-ids-start-at-1``."""
        words = "".join(ch if ch.isalnum() else " " for ch in self.name.lower()).split()
        return f"{self.qid}-{'-'.join(words)[:48]}"


def slip(source: str, *changes: tuple[str, str]) -> str:
    """``source`` with each ``(old, new)`` of ``changes`` made: the reference with one slip,
    the usual way to write a mistake that breaks exactly one clause.

    An ``old`` that is absent or occurs more than once is an error (the slip would be
    ambiguous or do nothing)::

        >>> slip("return x + 1", ("+ 1", "- 1"))
        'return x - 1'
    """
    for old, new in changes:
        if source.count(old) != 1:
            raise ValueError(f"{old!r} occurs {source.count(old)} times in the base source")
        source = source.replace(old, new)
    return source


def reference(module: str, name: str) -> str:
    """The reference's own source of ``name`` in ``solutions.<module>`` (docstring and
    annotations included): the base of a slip, so that a mistake stays the reference with
    one slip when the reference changes. Never copy a reference into a catalogue by hand
    (``tests/test_slip_bases.py`` refuses such copies)::

        >>> slip(reference("masking", "shift_right"), ("tokens[:, :-1]", "tokens[:, 1:]")).splitlines()[0]
        'def shift_right(tokens: torch.Tensor, start_id: int) -> torch.Tensor:'
    """
    return reference_source(module, name)


def catalogue(stage: Stage | str) -> tuple[list[Variant], list[Variant]]:
    """``(mistakes, alternatives)`` of a stage (or stage id), read from its ``mistakes.py``.

    A missing file or a missing list is an error, never an empty catalogue.
    """
    if isinstance(stage, str):
        stage = get_stage(stage)
    path = stage.mistakes
    if not path.is_file():
        raise FileNotFoundError(f"{stage.id} has no catalogue: {path}")
    spec = importlib.util.spec_from_file_location(f"gptcourse_catalogue_{stage.id}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lists = []
    for name in ("MISTAKES", "ALTERNATIVES"):
        items = getattr(module, name, None)
        if not isinstance(items, list) or not all(isinstance(v, Variant) for v in items):
            raise ValueError(f"{path} must define {name} as a list of Variant")
        lists.append(list(items))
    return lists[0], lists[1]
