"""A hidden suite as the grading child gets it: its probes, and nothing that judges them.

The child runs the student's code, and whatever it holds the student's code can read
(the call stack, ``gc``, the suite module's globals). So the text the child runs a hidden
suite from keeps every probe and helper it needs and loses what only the parent needs:

1. each test's ``expected=`` and ``check=`` (their values become ``None``);
2. then, again and again until none is left, each top-level assignment, function or class
   that nothing else in the text uses any more (the tables and helpers only those held).

Lines keep their numbers (what is taken out becomes blank lines, or ``None`` followed by
the newlines it spanned), so an error in a probe names the same line as in the file.

Example:
    >>> text = '''LOGITS = [1, 2]
    ... ANSWER = [0.25, 0.75]
    ... def _near(want):
    ...     return want
    ... @suite.case("q", "softmax", points=1, check=_near(ANSWER),
    ...             expected=[0.25,
    ...                       0.75])
    ... def _(ns):
    ...     return ns.softmax(LOGITS)
    ... '''
    >>> print(probe_text(text))
    LOGITS = [1, 2]
    <BLANKLINE>
    <BLANKLINE>
    <BLANKLINE>
    @suite.case("q", "softmax", points=1, check=None,
                expected=None
    )
    def _(ns):
        return ns.softmax(LOGITS)
    <BLANKLINE>
"""

import ast
from collections import Counter

JUDGING = ("expected", "check")  # the keywords of ``Suite.case`` only the parent needs
SUITE = "suite"  # the name every suite file binds its ``Suite`` to (``suites.exec_suite``)


def probe_text(source: str) -> str:
    """``source`` without its tests' expected values and checks, nor what only they used."""
    lines = source.splitlines(keepends=True)
    text = _replace(lines, _judging_spans(ast.parse(source)))
    while True:
        unused = _unused_definitions(ast.parse(text))
        if not unused:
            return text
        text = _replace(text.splitlines(keepends=True), [(node, "") for node in unused])


def _is_case(node: ast.AST) -> bool:
    """Whether ``node`` is a call ``<something>.case(...)`` (a suite registering a test)."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "case"


def _judging_spans(tree: ast.Module) -> list[tuple[ast.AST, str]]:
    """The values of every test's ``expected=`` and ``check=``, each to become ``None``."""
    return [
        (keyword.value, "None")
        for node in ast.walk(tree)
        if _is_case(node)
        for keyword in node.keywords
        if keyword.arg in JUDGING
    ]


def _defined(node: ast.stmt) -> list[str] | None:
    """The names a top-level statement only defines (an undecorated ``def`` or ``class``, an
    assignment to plain names); None for any other statement, which always stays."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return None if node.decorator_list else [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    if targets and all(isinstance(t, ast.Name) for t in targets):
        return [t.id for t in targets]
    return None


def _unused_definitions(tree: ast.Module) -> list[ast.stmt]:
    """Top-level definitions none of whose names any other statement reads (``suite`` and
    dunder names excepted), on lines of their own."""
    shared = _lines_shared(tree)
    reads = [
        {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)}
        for node in tree.body
    ]
    readers = Counter(name for names in reads for name in names)  # how many statements read each name
    unused = []
    for node, own in zip(tree.body, reads):
        names = _defined(node)
        if not names or any(n == SUITE or n.startswith("__") for n in names):
            continue
        if any(line in shared for line in range(node.lineno, node.end_lineno + 1)):
            continue
        if not any(readers[n] - (n in own) for n in names):
            unused.append(node)
    return unused


def _lines_shared(tree: ast.Module) -> set[int]:
    """Lines that hold more than one top-level statement (``a = 1; b = 2``): never blanked."""
    seen: dict[int, int] = {}
    for node in tree.body:
        for line in range(node.lineno, node.end_lineno + 1):
            seen[line] = seen.get(line, 0) + 1
    return {line for line, count in seen.items() if count > 1}


def _replace(lines: list[str], spans: list[tuple[ast.AST, str]]) -> str:
    """``lines`` with each node's text replaced (from the last to the first), the newlines it
    spanned kept. Offsets are in UTF-8 bytes, as ``ast`` gives them."""
    raw = [line.encode("utf-8") for line in lines]
    for node, new in sorted(spans, key=lambda s: (s[0].lineno, s[0].col_offset), reverse=True):
        first, last = node.lineno - 1, node.end_lineno - 1
        head, tail = raw[first][: node.col_offset], raw[last][node.end_col_offset :]
        if not new:  # a whole statement: its lines become blank
            head, tail = b"", b"\n" if raw[last].endswith(b"\n") else b""
        spanned = b"\n" * (last - first)
        raw[first : last + 1] = (head + new.encode("utf-8") + spanned + tail).splitlines(keepends=True) or [b""]
    return b"".join(raw).decode("utf-8")
