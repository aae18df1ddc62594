r"""Hand copies of the reference in a catalogue, which drift when the reference changes.

A mistake written as "the reference with one slip" slips ``catalogue.reference(module, name)``,
the reference's own source, so that it stays one slip away from the reference. A copy is
text of a ``mistakes.py`` that parses as one function or class named like a function or
class of its stage's reference, and equals it once docstrings and annotations are set aside.
Two kinds of text are read:

- a module-level string written out in the file (``SHIFT = "def shift_right(...): ..."``);
- a template filled with its right slots: what a *template helper* gives when called with no
  changes. A template helper is a module-level function whose only parameter is ``**changes``
  and which reads a module-level string written out in the file (its template, with ``{slot}``
  placeholders), e.g. ``def _block(**changes): return _BLOCK.format(**{**_BLOCK_RIGHT, **changes})``.
  Every stage names its right slots its own way (``_BLOCK_RIGHT``, ``_LN_RIGHT``, ``_RIGHT``)
  and fills them its own way (``str.format``, ``str.replace``, a template built of several
  strings), so the rule asks the helper itself: ``_block()`` is the template with every slot
  right. This runs the catalogue's own module (as ``catalogue()`` does); nothing is graded.

A base written otherwise (a shorter rewrite, a template whose right slots give something
else than the reference) is not a copy.

Example::

    >>> copy = bare(reference_source("masking", "shift_right"))  # the reference, docstring and annotations aside
    >>> copied_references(f"SHIFT = {copy!r}", "masking")
    ['SHIFT copies solutions.masking.shift_right']
    >>> copied_references(f"SHIFT = {copy.replace('[:, :-1]', '[:, 1:]')!r}", "masking")  # a slip: not a copy
    []
    >>> template = copy.replace("{", "{{").replace("}", "}}").replace("[:, :-1]", "{keep}")
    >>> helper = "def _shift(**changes):\n    return SHIFT.format(**{**RIGHT, **changes})\n"
    >>> copied_references(f"SHIFT = {template!r}\nRIGHT = {{'keep': '[:, :-1]'}}\n{helper}", "masking")
    ['SHIFT filled with RIGHT (_shift()) copies solutions.masking.shift_right']
    >>> copied_references(f"SHIFT = {template!r}\nRIGHT = {{'keep': '[:, 1:]'}}\n{helper}", "masking")  # not a copy
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


def _written_strings(tree: ast.Module) -> dict[str, str]:
    """``{name: text}`` of the module-level strings written out in the file, in their order."""
    found = {}
    for node in tree.body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            found[ast.unparse(target)] = value.value
    return found


def _template_helpers(tree: ast.Module, strings: dict[str, str]) -> dict[str, list[str]]:
    """``{helper: the names it reads}`` of the template helpers: module-level functions whose only
    parameter is ``**changes`` and which read one of ``strings`` (names in the order they are read)."""
    helpers = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        arguments = node.args
        if arguments.posonlyargs or arguments.args or arguments.kwonlyargs or arguments.vararg or not arguments.kwarg:
            continue
        names = sorted(
            (n for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)),
            key=lambda n: (n.lineno, n.col_offset),
        )
        read = list(dict.fromkeys(n.id for n in names))
        if any(name in strings for name in read):
            helpers[node.name] = read
    return helpers


def _filled_templates(mistakes_source: str, tree: ast.Module, strings: dict[str, str]) -> dict[str, str]:
    """``{"TEMPLATE filled with RIGHT (helper())": text}``: each template helper called with no
    changes, named by the templates (written-out strings) and the right slots (dicts) it reads."""
    helpers = _template_helpers(tree, strings)
    if not helpers:
        return {}
    namespace = {"__name__": "mistakes"}
    exec(compile(mistakes_source, "mistakes.py", "exec"), namespace)  # the catalogue's module, as catalogue() loads it
    filled = {}
    for helper, read in helpers.items():
        templates = " and ".join(n for n in read if n in strings)
        slots = " and ".join(n for n in read if isinstance(namespace.get(n), dict)) or "its right slots"
        filled[f"{templates} filled with {slots} ({helper}())"] = namespace[helper]()
    return filled


def copied_references(mistakes_source: str, module: str) -> list[str]:
    """The module-level strings of ``mistakes_source``, and the templates its template helpers
    fill with their right slots, that are copies of a function or class of ``solutions.<module>``,
    as ``"NAME copies solutions.<module>.<def>"`` (NAME: a string's name, or ``"TEMPLATE filled
    with RIGHT (helper())"``)."""
    reference = import_module(f"solutions.{module}")
    defined = {n for n, v in vars(reference).items() if inspect.isfunction(v) or inspect.isclass(v)}
    tree = ast.parse(mistakes_source)
    strings = _written_strings(tree)
    texts = {**strings, **_filled_templates(mistakes_source, tree, strings)}
    found = []
    for label, text in texts.items():
        name = _one_definition(text) if isinstance(text, str) else None
        if name in defined and bare(text) == bare(reference_source(module, name)):
            found.append(f"{label} copies solutions.{module}.{name}")
    return found
