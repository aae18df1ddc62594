"""Turning reference code into a student's stub: signature and docstring kept, body replaced.

    def f(x: int) -> int:                        def f(x: int) -> int:
        'Double x.'                   becomes          'Double x.'
        return 2 * x                                 raise NotImplementedError("Write f: ...")

In a class every method is stubbed the same way; the class line, its docstring and
class-level statements (dataclass fields, constants) are kept.
"""

import ast
import inspect
import textwrap
from importlib import import_module


def reference_source(module: str, name: str) -> str:
    """The source of ``name`` in ``solutions.<module>`` (or a dotted ``module.name``)."""
    obj = getattr(import_module(f"solutions.{module}"), name)
    return textwrap.dedent(inspect.getsource(obj))


def _body_range(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int, int]:
    """First and last line (1-based) of a function's body, after its docstring."""
    body = node.body
    start = body[0]
    if isinstance(start, ast.Expr) and isinstance(start.value, ast.Constant) and isinstance(start.value.value, str):
        if len(body) == 1:
            return start.end_lineno + 1, start.end_lineno
        start = body[1]
    return start.lineno, node.end_lineno


def make_stub(source: str, name: str, pointer: str = "", solution_region: bool = False) -> str:
    """Replace the body of every function in ``source`` by a ``NotImplementedError``.

    With ``solution_region`` the body is kept between nbgrader's ``### BEGIN SOLUTION``
    and ``### END SOLUTION`` markers instead, for the nbgrader source notebook.
    """
    tree = ast.parse(source)
    lines = source.splitlines()
    message = pointer.strip() or f"Write {name}: see its docstring and the explanation above."
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    # innermost last: replace from the bottom of the file up so line numbers stay valid
    outer = [f for f in functions if not any(o is not f and o.lineno <= f.lineno <= o.end_lineno for o in functions)]
    for func in sorted(outer, key=lambda f: f.lineno, reverse=True):
        first, last = _body_range(func)
        indent = " " * (func.col_offset + 4)
        what = name if func.name == name else f"{name}.{func.name}"
        text = message if func.name == name or pointer.strip() else f"Write {what}: see its docstring and the explanation above."
        if solution_region:
            lines[first - 1 : last] = [f"{indent}### BEGIN SOLUTION", *lines[first - 1 : last], f"{indent}### END SOLUTION"]
        else:
            lines[first - 1 : last] = [f"{indent}raise NotImplementedError({text!r})"]
    return "\n".join(lines) + "\n"
