"""Hand copies of the reference in a catalogue, which drift when the reference changes.

A mistake written as "the reference with one slip" slips ``catalogue.reference(module, name)``,
the reference's own source, so that it stays one slip away from the reference. A copy is a
module-level string of a ``mistakes.py`` that parses as one function or class named like a
function or class of its stage's reference, and equals it once docstrings and annotations
are set aside. A base written otherwise (a shorter rewrite, a template with ``{placeholders}``)
is not a copy.

Example::

    >>> copy = bare(reference_source("masking", "shift_right"))  # the reference, docstring and annotations aside
    >>> copied_references(f"SHIFT = {copy!r}", "masking")
    ['SHIFT copies solutions.masking.shift_right']
    >>> copied_references(f"SHIFT = {copy.replace('[:, :-1]', '[:, 1:]')!r}", "masking")  # a slip: not a copy
    []
"""

import ast
import inspect
import textwrap
from importlib import import_module

from autograder.build.stubs import reference_source

from .bare import bare


def _one_definition(text: str) -> str | None:
    """The name of the single function or class ``text`` defines, if that is all it is."""
    try:
        tree = ast.parse(textwrap.dedent(text))
    except SyntaxError:
        return None
    only = tree.body[0] if len(tree.body) == 1 else None
    return only.name if isinstance(only, (ast.FunctionDef, ast.ClassDef)) else None


def copied_references(mistakes_source: str, module: str) -> list[str]:
    """The module-level strings of ``mistakes_source`` that are copies of a function or
    class of ``solutions.<module>``, as ``"NAME copies solutions.<module>.<def>"``."""
    reference = import_module(f"solutions.{module}")
    defined = {n for n, v in vars(reference).items() if inspect.isfunction(v) or inspect.isclass(v)}
    found = []
    for node in ast.parse(mistakes_source).body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
            continue
        name = _one_definition(value.value)
        if name in defined and bare(value.value) == bare(reference_source(module, name)):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            found.append(f"{ast.unparse(target)} copies solutions.{module}.{name}")
    return found
