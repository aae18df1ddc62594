"""No catalogue copies a reference by hand: a mistake that is "the reference with one slip"
slips ``reference(module, name)`` (the reference's own source), so that it follows the
reference when the reference changes. Static: nothing is graded.

A copy is a module-level string of a ``mistakes.py`` that parses as one function or class
named like a function or class of its stage's reference, and equals it once docstrings and
annotations are set aside. A base written otherwise (a shorter rewrite, a template with
``{placeholders}``) is not a copy.
"""

import ast
import inspect
import textwrap
from importlib import import_module

import pytest

from autograder.build.stubs import reference_source
from autograder.course import all_stages, get_stage

STAGES = all_stages()


class _Bare(ast.NodeTransformer):
    """Drops docstrings and annotations (``x: int = 0`` becomes ``x = 0``)."""

    def _body(self, node):
        self.generic_visit(node)
        first = node.body[0] if node.body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            node.body = node.body[1:] or [ast.Pass()]
        return node

    def visit_FunctionDef(self, node):
        node.returns = None
        return self._body(node)

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_ClassDef = _body

    def visit_arg(self, node):
        node.annotation = None
        return node

    def visit_AnnAssign(self, node):
        if node.value is None or not node.simple:
            return node
        return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)


def bare(source: str) -> str:
    """``source`` without docstrings and annotations, as one canonical text.

    >>> bare('def f(x: int) -> int:\\n    "Twice."\\n    y: int = 2 * x\\n    return y')
    'def f(x):\\n    y = 2 * x\\n    return y'
    """
    return ast.unparse(_Bare().visit(ast.parse(textwrap.dedent(source))))


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
        try:
            tree = ast.parse(textwrap.dedent(value.value))
        except SyntaxError:
            continue
        if len(tree.body) != 1 or not isinstance(tree.body[0], (ast.FunctionDef, ast.ClassDef)):
            continue
        name = tree.body[0].name
        if name in defined and bare(value.value) == bare(reference_source(module, name)):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            found.append(f"{ast.unparse(target)} copies solutions.{module}.{name}")
    return found


@pytest.mark.parametrize("stage", STAGES, ids=[s.id for s in STAGES])
def test_no_catalogue_copies_a_reference(stage):
    copies = copied_references(stage.mistakes.read_text(encoding="utf-8"), stage.module)
    assert copies == [], f"{stage.mistakes}: use reference(module, name) instead of a copy: {copies}"


def test_a_copy_without_docstrings_and_annotations_is_found_and_a_slipped_one_is_not():
    stage = get_stage("04")
    copy = bare(reference_source(stage.module, "causal_mask"))
    slipped = copy.replace("triu(diagonal=1)", "triu(diagonal=0)")
    assert slipped != copy
    source = f"CAUSAL = {copy!r}\nWRONG = {slipped!r}\nPLACEHOLDER = 'def causal_mask(T):\\n    return {{x}}'\n"
    assert copied_references(source, stage.module) == ["CAUSAL copies solutions.masking.causal_mask"]
