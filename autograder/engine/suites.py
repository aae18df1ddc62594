"""A stage's tests as the engine uses them: each suite file read and run once.

``StageTests.load`` reads the public and the hidden suite of a stage, runs each once as
a module to collect its cases, and keeps its source for the child process (which runs
it again there, for the probes only). The same object serves every channel: local
grading, the Gradescope entry point and the build's fixture run.
"""

import ast
import sys
import threading
import types
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from autograder.kit.cases import Case, Suite

_parse_lock = (
    threading.Lock()
)  # CPython 3.11's ast is not safe across threads ("AST constructor recursion depth mismatch")


def exec_suite(source: str, filename: str, module_name: str) -> Suite:
    """Run a suite's source as a module named ``module_name`` and return its ``suite``."""
    module = types.ModuleType(module_name)
    module.__file__ = filename
    sys.modules[module_name] = module
    with _parse_lock:
        code = compile(source, filename, "exec")
    exec(code, module.__dict__)
    suite = module.__dict__.get("suite")
    if not isinstance(suite, Suite):
        raise ValueError(f"{filename} defines no `suite = Suite(...)`")
    return suite


def imported_modules(source: str) -> tuple[str, ...]:
    """The modules a suite imports (the child imports them before it is confined)."""
    with _parse_lock:
        tree = ast.parse(source)
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names if a.name != "*"]
    return tuple(sorted(set(names)))


def secret_lines(texts: list[str], shortest: int = 16) -> list[str]:
    """The lines of hidden test files worth hiding (long enough to be specific), longest first."""
    lines = set()
    for text in texts:
        for line in text.splitlines():
            line = line.strip()
            if len(line) >= shortest and not line.startswith(("import ", "from ", "#")):
                lines.add(line)
    return sorted(lines, key=len, reverse=True)


def _names_used(code: types.CodeType) -> set[str]:
    """The global names a function's code uses, its comprehensions and nested functions included."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_used(const)
    return names


@dataclass(frozen=True)
class SuiteFile:
    """A test file as the child gets it: its source, whether it is public, its case keys."""

    label: str  # "public" or "hidden"
    source: str
    keys: frozenset[str]
    imports: tuple[str, ...]

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

    @classmethod
    def load(
        cls,
        stage_id: str,
        public: Path,
        hidden: Path,
        fixtures: dict[str, Any] | None = None,
        given: dict[str, str] | None = None,
    ) -> "StageTests":
        """Read and run the two suite files once; ``given`` is the course's code of the earlier
        stages' answers the notebook uses (run in their cells when grading: ``submission.code_cells``)."""
        suites, cases = [], []
        for label, path in (("public", Path(public)), ("hidden", Path(hidden))):
            source = path.read_text(encoding="utf-8")
            suite = exec_suite(source, str(path), f"gptcourse_suite_{stage_id}_{label}")
            if suite.public != (label == "public"):
                raise ValueError(f"{path}: expected Suite(public={label == 'public'})")
            suites.append(SuiteFile(label, source, frozenset(c.key for c in suite.cases), imported_modules(source)))
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
        secrets = tuple(secret_lines([suites[1].source, *given.values()]))
        return cls(stage_id, tuple(suites), tuple(cases), dict(fixtures or {}), secrets, given)

    def with_fixtures(self, fixtures: dict[str, Any], given: dict[str, str] | None = None) -> "StageTests":
        """The same tests with these expected values (and the course's code of earlier answers)."""
        given = dict(given or {})
        secrets = tuple(secret_lines([self.suites[1].source, *given.values()]))
        return replace(self, fixtures=dict(fixtures), given=given, secrets=secrets)

    @property
    def error_tests(self) -> frozenset[str]:
        """Keys of the tests whose probe calls ``catch``: they test errors, not the function's work."""
        return frozenset(c.key for c in self.cases if "catch" in _names_used(c.probe.__code__))

    def questions(self) -> list[tuple[str, float]]:
        """``(question id, points)`` in the order the public tests introduce them."""
        totals: dict[str, float] = {}
        for case in self.cases:
            totals[case.qid] = totals.get(case.qid, 0.0) + case.points
        return list(totals.items())
