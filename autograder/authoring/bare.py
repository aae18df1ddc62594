"""Python source as the catalogue tools compare it: docstrings and annotations left out.

Catalogued variants are often written without docstrings or annotations, and no test reads
them, so neither the reuse of the reference's outputs (``reuse``) nor the search for hand
copies of the reference (``copies``) counts them.

Example::

    >>> bare('def f(x: int) -> int:\\n    "Twice."\\n    y: int = 2 * x\\n    return y')
    'def f(x):\\n    y = 2 * x\\n    return y'
"""

import ast
import textwrap


def drop_docstrings(tree: ast.AST) -> None:
    """Leave every docstring of ``tree`` out (a module's, a class's, a function's)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                node.body = node.body[1:]


def drop_annotations(function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    """Leave a function's annotations out: its arguments' and its return's."""
    function.returns = None
    arguments = function.args
    for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg):
        if arg is not None:
            arg.annotation = None


class _PlainAssignments(ast.NodeTransformer):
    """``x: int = 0`` becomes ``x = 0`` (an annotation alone, ``x: int``, stays)."""

    def visit_AnnAssign(self, node):
        if node.value is None or not node.simple:
            return node
        return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)


def bare(source: str) -> str:
    """``source`` without docstrings and annotations, as one canonical text (see the module's example)."""
    tree = ast.parse(textwrap.dedent(source))
    drop_docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            drop_annotations(node)
    return ast.unparse(_PlainAssignments().visit(tree))
