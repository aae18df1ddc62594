"""Turning reference code into a student's stub: signature and docstring kept, body replaced.

    def f(x: int) -> int:                        def f(x: int) -> int:
        'Double x.'                   becomes          'Double x.'
        return 2 * x                                 raise NotImplementedError("Write f: ...")

In a class every method is stubbed the same way; the class line, its docstring and
class-level statements (dataclass fields, constants) are kept. ``needed_imports`` gives
the module-level imports a reference copied into a notebook as given code needs.
"""

import ast
import inspect
import textwrap
from importlib import import_module


def reference_source(module: str, name: str) -> str:
    """The source of ``name`` in ``solutions.<module>``."""
    obj = getattr(import_module(f"solutions.{module}"), name)
    return textwrap.dedent(inspect.getsource(obj))


def _import_statements(tree: ast.Module) -> dict[str, str]:
    """Each name a module's top-level imports bind, with one statement that binds it."""
    bound = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = f"import {alias.name} as {alias.asname}"
                else:
                    bound[alias.name.split(".")[0]] = f"import {alias.name}"
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level and node.module != "__future__":
            for alias in node.names:
                as_part = f" as {alias.asname}" if alias.asname else ""
                bound[alias.asname or alias.name] = f"from {node.module} import {alias.name}{as_part}"
    return bound


def bound_names(source: str) -> set[str]:
    """The names a cell's top-level imports bind (``import torch.nn as nn`` binds ``nn``)."""
    return set(_import_statements(ast.parse(source)))


def needed_imports(module: str, name: str, bound: set[str]) -> list[str]:
    """The import statements ``name`` of ``solutions.<module>`` needs that ``bound`` lacks.

    A reference copied into a notebook leaves its module's imports behind; these put
    them back (``import os``, ``from pathlib import Path``...). Names the module takes from
    other references (``from solutions.blocks import LayerNorm``) are the notebook's given
    code, never imports.
    """
    module_source = inspect.getsource(import_module(f"solutions.{module}"))
    statements = {
        k: v
        for k, v in _import_statements(ast.parse(module_source)).items()
        if not v.split()[1].startswith("solutions")
    }
    used = set()
    for node in ast.walk(ast.parse(reference_source(module, name))):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Attribute):
            root = node
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name):
                used.add(root.id)
    return sorted(
        {statements[n] for n in used if n in statements and n not in bound},
        key=lambda line: (line.startswith("from"), line),
    )


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
        text = (
            message
            if func.name == name or pointer.strip()
            else f"Write {what}: see its docstring and the explanation above."
        )
        if solution_region:
            lines[first - 1 : last] = [
                f"{indent}### BEGIN SOLUTION",
                *lines[first - 1 : last],
                f"{indent}### END SOLUTION",
            ]
        else:
            lines[first - 1 : last] = [f"{indent}raise NotImplementedError({text!r})"]
    return "\n".join(lines) + "\n"
