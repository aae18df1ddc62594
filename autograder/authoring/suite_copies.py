"""Helpers a hidden suite repeats from its public suite, which it can import instead.

``hidden.py`` runs beside ``public.py`` (loaded as the module ``public``), so a helper both
need is written once, in ``public.py``, and the hidden suite imports it
(``from public import _fill``): two copies drift apart when one is mended. A repeat is a
top-level function or class of ``hidden.py`` that equals one of ``public.py`` once
docstrings, annotations and the definition's own name are set aside.

Example::

    >>> public = "def _rows(x):\\n    return x.tolist()\\n"
    >>> repeated_helpers(public, 'def _as_rows(x):\\n    "Rows."\\n    return x.tolist()\\n')
    ['hidden.py: _as_rows repeats public.py: _rows (import it: from public import _rows)']
    >>> repeated_helpers(public, "def _rows(x):\\n    return x.flatten().tolist()\\n")  # another helper
    []
"""

import ast

from .bare import bare


def _definitions(source: str) -> dict[str, str]:
    """Each top-level function or class of ``source`` (probes, all named ``_``, aside): its
    name -> its text without docstrings, annotations or its own name."""
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name != "_":
            name, node.name = node.name, "_"
            found[name] = bare(ast.unparse(node))
    return found


def repeated_helpers(public_source: str, hidden_source: str) -> list[str]:
    """Each definition of the hidden suite that repeats one of the public suite (see the module's example)."""
    public = {text: name for name, text in _definitions(public_source).items()}
    return [
        f"hidden.py: {name} repeats public.py: {public[text]} (import it: from public import {public[text]})"
        for name, text in _definitions(hidden_source).items()
        if text in public
    ]
