"""A stage's tests as the engine uses them: each suite file read and run once.

``StageTests.load`` reads the public and the hidden suite of a stage, runs each once as
a module to collect its cases, and keeps its source, and the text the child process runs
it from for the probes only (a hidden suite without its expected values and checks:
``probe_text``). The same object serves every channel: local
grading, the Gradescope entry point and the build's fixture run.

A hidden suite reuses its public suite's helpers (stand-ins, runs, tables) by importing
them: ``from public import _stand_ins``. While a hidden suite runs as a module, the
module name ``public`` is its stage's public suite (``exec_suite``'s ``public``), here
and in the child alike; the public suite, pasted into the notebook, imports nothing of
the hidden one.
"""

import ast
import contextlib
import sys
import threading
import types
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from autograder.kit.cases import Case, Suite

from .probe_text import probe_text

_parse_lock = (
    threading.Lock()
)  # CPython 3.11's ast is not safe across threads ("AST constructor recursion depth mismatch")


PUBLIC = "public"  # the module a hidden suite imports its public suite's helpers from
_public_lock = threading.RLock()  # one suite at a time sees its own public suite as ``public``


def exec_suite(source: str, filename: str, module_name: str, public: types.ModuleType | None = None) -> Suite:
    """Run a suite's source as a module named ``module_name`` and return its ``suite``;
    ``public`` (the stage's public suite, for a hidden one) is importable as ``public`` meanwhile.
    A suite that imports ``public`` without it is refused: a plain import would find whichever
    ``public.py`` comes first on ``sys.path`` (pytest puts every stage's folder there)."""
    with _parse_lock:
        tree = ast.parse(source, filename)
        code = compile(tree, filename, "exec")
    if public is None and _imports_public(tree):
        raise ValueError(f"{filename} imports {PUBLIC!r}: pass its stage's public suite (exec_suite's public)")
    module = types.ModuleType(module_name)
    module.__file__ = filename
    sys.modules[module_name] = module
    with importable_as_public(public):
        exec(code, module.__dict__)
    suite = module.__dict__.get("suite")
    if not isinstance(suite, Suite):
        raise ValueError(f"{filename} defines no `suite = Suite(...)`")
    return suite


def _imports_public(tree: ast.Module) -> bool:
    """Whether a suite imports the module ``public`` (anywhere: a function's body included).

    >>> _imports_public(ast.parse("def f():\\n    from public import _x"))
    True
    >>> _imports_public(ast.parse("import publicity; from .public import _x"))
    False
    """
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == PUBLIC and not node.level:
            return True
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == PUBLIC for a in node.names):
            return True
    return False


@contextlib.contextmanager
def importable_as_public(module: types.ModuleType | None):
    """``sys.modules["public"]`` is ``module`` while the block runs (nothing when None), then as before."""
    if module is None:
        yield
        return
    with _public_lock:
        saved = sys.modules.get(PUBLIC)
        sys.modules[PUBLIC] = module
        try:
            yield
        finally:
            if saved is None:
                sys.modules.pop(PUBLIC, None)
            else:
                sys.modules[PUBLIC] = saved


def imported_modules(source: str) -> tuple[str, ...]:
    """The modules a suite imports (the child imports them before it is confined)."""
    with _parse_lock:
        tree = ast.parse(source)
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level and node.module != PUBLIC:
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names if a.name != "*"]
    return tuple(sorted(set(names)))


def _shown_literal(line: str, shown: frozenset[str]) -> bool:
    """Whether a line is only a string that students are shown anyway (a test's name on a line of its own)."""
    try:
        value = ast.literal_eval(line.rstrip(","))
    except (ValueError, SyntaxError):
        return False
    return isinstance(value, str) and value in shown


def secret_lines(texts: list[str], shortest: int = 16, shown: frozenset[str] = frozenset()) -> list[str]:
    """The lines of hidden test files worth hiding (long enough to be specific), longest first;
    a line that is only one of the ``shown`` strings (the tests' names) is not one of them.

    >>> hidden = 'check(\\n    "a name students see",\\n    ns.f(31415926535),\\n)'
    >>> secret_lines([hidden], shown=frozenset({"a name students see"}))
    ['ns.f(31415926535),']
    """
    lines = set()
    for text in texts:
        for line in text.splitlines():
            line = line.strip()
            if len(line) >= shortest and not line.startswith(("import ", "from ", "#")):
                if not _shown_literal(line, shown):
                    lines.add(line)
    return sorted(lines, key=len, reverse=True)


@dataclass(frozen=True)
class SuiteFile:
    """A test file: its source, the text the child runs it from (``probes``), whether it is
    public, its case keys and the modules it imports."""

    label: str  # "public" or "hidden"
    source: str
    keys: frozenset[str]
    imports: tuple[str, ...]
    probes: str  # a hidden file without its expected values and checks (``probe_text``); a public one as it is

    @property
    def public(self) -> bool:
        return self.label == "public"


@dataclass(frozen=True)
class StageTests:
    """Every test case of a stage (public first, in file order), their sources and expected values."""

    stage_id: str
    suites: tuple[SuiteFile, ...]
    cases: tuple[Case, ...]
    fixtures: dict[str, Any] = field(default_factory=dict)  # case key -> the reference's output
    secrets: tuple[str, ...] = ()  # hidden-test lines (and the given answers' lines) that must never reach a student
    given: dict[str, str] = field(default_factory=dict)  # earlier answer (MODULE.NAME) -> the course's code
    # public test key -> the hidden tests of the same clauses whose pass proves it (``judge``)
    partners: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def load(
        cls,
        stage_id: str,
        public: Path,
        hidden: Path,
        fixtures: dict[str, Any] | None = None,
        given: dict[str, str] | None = None,
        partners: dict[str, tuple[str, ...]] | None = None,
    ) -> "StageTests":
        """Read and run the two suite files once; ``given`` is the course's code of the earlier
        stages' answers the notebook uses (run in their cells when grading: ``submission.code_cells``),
        ``partners`` the hidden tests that prove each public test (``fixtures.FixtureFile``)."""
        suites, cases, public_module = [], [], None
        for label, path in (("public", Path(public)), ("hidden", Path(hidden))):
            source = path.read_text(encoding="utf-8")
            name = f"gptcourse_suite_{stage_id}_{label}"
            suite = exec_suite(source, str(path), name, public_module)
            public_module = sys.modules[name]
            if suite.public != (label == "public"):
                raise ValueError(f"{path}: expected Suite(public={label == 'public'})")
            keys, imports = frozenset(c.key for c in suite.cases), imported_modules(source)
            with _parse_lock:  # probe_text parses too
                probes = source if label == "public" else probe_text(source)
            suites.append(SuiteFile(label, source, keys, imports, probes))
            cases += suite.cases
        keys = [c.key for c in cases]
        shared = sorted({key for key in keys if keys.count(key) > 1})
        if shared:
            where = {key: [s.label for s in suites if key in s.keys] for key in shared}
            named = "; ".join(f"{key!r} (in {' and '.join(where[key])})" for key in shared)
            raise ValueError(f"{stage_id}: a public and a hidden test share a name: {named}")
        for case in cases:
            for name in case.builds_on:
                if f"{case.qid}: {name}" not in keys[: keys.index(case.key)]:
                    raise ValueError(f"{case.key}: builds_on names {name!r}, which is no earlier test of {case.qid}")
        given = dict(given or {})
        secrets = tuple(secret_lines([suites[1].source, *given.values()], shown=frozenset(c.name for c in cases)))
        return cls(stage_id, tuple(suites), tuple(cases), dict(fixtures or {}), secrets, given, dict(partners or {}))

    def with_fixtures(
        self,
        fixtures: dict[str, Any],
        given: dict[str, str] | None = None,
        partners: dict[str, tuple[str, ...]] | None = None,
    ) -> "StageTests":
        """The same tests with these expected values and the course's code of earlier answers (and
        these hidden tests that prove each public test; None keeps the ones they have)."""
        given = dict(given or {})
        shown = frozenset(c.name for c in self.cases)
        secrets = tuple(secret_lines([self.suites[1].source, *given.values()], shown=shown))
        partners = self.partners if partners is None else dict(partners)
        return replace(self, fixtures=dict(fixtures), given=given, secrets=secrets, partners=partners)

    @property
    def guard_tests(self) -> frozenset[str]:
        """Keys of the tests a no-op could pass (``Case.is_guard``): errors, dtypes, marked guards."""
        return frozenset(c.key for c in self.cases if c.is_guard)

    def questions(self) -> list[tuple[str, float]]:
        """``(question id, points)`` in the order the public tests introduce them."""
        totals: dict[str, float] = {}
        for case in self.cases:
            totals[case.qid] = totals.get(case.qid, 0.0) + case.points
        return list(totals.items())
