"""A catalogue graded without running again what a variant's change cannot reach.

A catalogued variant is the reference with a few functions rewritten. A test that called
none of them when the reference was graded runs exactly as it ran then: every test starts
reseeded (``kit.runtime.run_probe``) on the same notebook, and the code it runs is the
same. So its output is the reference's. ``grade_catalogue`` grades the reference once with
the child's tracer on (``run_submission(trace=True)``: which of the notebook's functions
ran while the cells ran and while each test ran), then each variant on the tests its change
reaches, taking the reference's outputs for the others; the judge then scores every test
of the variant as usual. A timed test's output is its CPU time, judged against a calibration
measured with it: a variant that took every timed test takes the reference's calibration too.

What a change is, code cell by code cell (``changes``):

- the body of a top-level function, or of a method of a top-level class, differs: that
  function (a *unit*) changed, and the tests that called it run again (all of them when the
  cells called it while they ran); docstrings and annotations do not count (variants are often
  written without them, and no test reads them);
- anything else differs (a statement outside any function, a signature, a decorator, a class
  attribute, a function added, removed or moved, the number or labels of the code cells): every
  test runs.

A variant whose run of the other tests met a time-out, a restart or a fatal error is graded
again on every test: a question whose test ran out of time gives its other tests shorter
limits, which the reference's outputs did not have.

The trust rests on what ``tests/test_reuse.py`` checks: no suite reads a function's source,
docstring, annotations or code object without calling it, and a catalogue graded this way
scores every test as grading every test does. The tracer sees the threads of the grading
process, not other processes: a reference whose functions ran in a worker process (a
``DataLoader`` with workers, say) would need ``--every-test``; none does.

Example:
    >>> sorted(changes(["def f(x):\\n    return x\\n"], ["def f(x):\\n    return x + 1\\n"]))
    [(0, 'f')]
    >>> changes(["N = 1\\n"], ["N = 2\\n"]) is None
    True
"""

import ast
import copy
import re
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from autograder.engine import processes
from autograder.engine.pipeline import Graded, judged
from autograder.engine.runner import RAN_IN_CELLS, Limits, Outcome, run_submission
from autograder.engine.submission import code_cells, load_notebook_json
from autograder.engine.suites import StageTests

from .bare import drop_annotations, drop_docstrings

Unit = tuple[int, str]  # (position among the notebook's code cells, "function" or "Class.method")
Cells = list[tuple[str, str]]  # each code cell the engine runs: (label, source)


def _is_def(node: ast.AST) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))


def _units(source: str) -> tuple[str, dict[str, list[str]]] | None:
    """A cell's skeleton (its syntax tree with every unit's body and annotations left out,
    dumped) and each unit's bodies (dumped; a name defined twice has both), docstrings
    left out of both; None when it does not parse.

    >>> skeleton, units = _units("class A:\\n    k = 1\\n    def m(self):\\n        return 2\\n")
    >>> sorted(units), "k" in skeleton, "2" in skeleton
    (['A.m'], True, False)
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    drop_docstrings(tree)
    units: dict[str, list[str]] = {}
    for node in tree.body:
        members = [(node.name, node)] if _is_def(node) else []
        if isinstance(node, ast.ClassDef):
            members = [(f"{node.name}.{m.name}", m) for m in node.body if _is_def(m)]
        for name, member in members:
            units.setdefault(name, []).append("\n".join(ast.dump(statement) for statement in member.body))
            member.body = []
            drop_annotations(member)
    return ast.dump(tree), units


# what would let a test depend on a function it never calls (reading its code, docstring,
# defaults or signature), and what would run a reference's functions where the tracer cannot see
READS_CODE = re.compile(
    r"getsource|getsourcelines|__doc__|__code__|__annotations__|signature\(|getfullargspec|__defaults__|__wrapped__"
    r"|\bimport dis\b|\bdis\.",
)
OTHER_PROCESS = re.compile(r"num_workers|multiprocessing|subprocess|os\.fork|Pool\(|concurrent\.futures")


def trust_problems(public: str, hidden: str, reference: str) -> list[str]:
    """What would make reuse unsound, in a stage's suites' and reference's sources: a suite
    reading a function's code without calling it, a reference running its functions in
    another process.

    >>> for problem in trust_problems("x = f(1)", "s = inspect.signature(ns.f)", "import subprocess"):
    ...     print(problem)
    hidden.py reads code without running it (signature(): a test would depend on a function it never calls
    reference.py runs code in another process (subprocess), where the tracer cannot see what it calls
    """
    problems = [
        f"{name} reads code without running it ({', '.join(found)}): a test would depend on a function it never calls"
        for name, text in (("public.py", public), ("hidden.py", hidden))
        if (found := sorted({m.group(0) for m in READS_CODE.finditer(text)}))
    ]
    if found := sorted({m.group(0) for m in OTHER_PROCESS.finditer(reference)}):
        problems.append(
            f"reference.py runs code in another process ({', '.join(found)}), where the tracer cannot see what it calls"
        )
    return problems


def changes(reference: list[str], variant: list[str]) -> set[Unit] | None:
    """The units whose bodies differ between two notebooks' code cells (their sources, in
    order); None when anything else differs."""
    if len(reference) != len(variant):
        return None
    changed: set[Unit] = set()
    for position, (before, after) in enumerate(zip(reference, variant, strict=True)):
        if before == after:
            continue
        old, new = _units(before), _units(after)
        if old is None or new is None or old[0] != new[0]:
            return None
        changed |= {(position, name) for name, dumps in old[1].items() if new[1].get(name) != dumps}
    return changed


def unit_of(qualname: str, classes: set[str]) -> str:
    """The unit a function's qualified name belongs to (a class body's own code: the class).

    >>> unit_of("GPT.forward.<locals>.f", {"GPT"}), unit_of("train.<locals>.lr_at", {"GPT"})
    ('GPT.forward', 'train')
    """
    parts = qualname.split(".")
    if parts[0] in classes and len(parts) > 1 and parts[1] != "<locals>":
        return f"{parts[0]}.{parts[1]}"
    return parts[0]


def reached(outcome: Outcome, cells: Cells) -> dict[str, set[Unit]]:
    """The units each case of a traced run called, those the cells called included."""
    position = {f"<{label}>": i for i, (label, _) in enumerate(cells)}
    classes = {
        i: {n.name for n in ast.parse(source).body if isinstance(n, ast.ClassDef)}
        for i, (_, source) in enumerate(cells)
    }

    def units(ran: set[tuple[str, str]]) -> set[Unit]:
        return {(position[f], unit_of(q, classes[position[f]])) for f, q in ran if f in position}

    loading = units(outcome.ran.get(RAN_IN_CELLS, set()))
    return {key: loading | units(ran) for key, ran in outcome.ran.items() if key != RAN_IN_CELLS}


def _cells(path: Path, tests: StageTests) -> Cells:
    return [(c.label, c.source) for c in code_cells(load_notebook_json(path), tests.given)]


class _Reference:
    """The reference, graded with the tracer on: its outputs and what each test reached."""

    def __init__(self, path: Path, cells: Cells, tests: StageTests, limits: Limits) -> None:
        start = time.monotonic()
        self.outcome = run_submission(path, tests, limits, trace=True)
        self.calibration: dict[str, float] = {}  # filled on its first timed test, if it has one
        self.graded = judged(path, tests, self.outcome, path.stem, start, self.calibration)
        self.cells = cells
        traced = self.outcome.traced and _settled(self.outcome)
        self.reach = reached(self.outcome, self.cells) if traced else {}

    def reusable(self, changed: set[Unit]) -> list[str]:
        """The keys whose outputs a variant with ``changed`` units takes from here."""
        return [key for key, units in self.reach.items() if key in self.outcome.values and not units & changed]


def _settled(outcome: Outcome) -> bool:
    """No test ran out of time, took a process down or was left out."""
    return not outcome.fatal and not outcome.interrupted


def _changed(reference: Cells, variant: Cells) -> set[Unit] | None:
    """The units a variant changed (None: something else, or its cells are labelled otherwise)."""
    if [label for label, _ in reference] != [label for label, _ in variant]:
        return None
    return changes([source for _, source in reference], [source for _, source in variant])


def _grade_variant(
    path: Path, tests: StageTests, limits: Limits, changed: set[Unit] | None, reference: "Future[_Reference]"
) -> tuple[Graded, list[str]]:
    """A variant graded on the tests its change reaches, the reference's outputs for the others
    (on every test when ``changed`` is None, or when that run did not settle). Returns the
    grading and the keys whose outputs were taken."""
    start = time.monotonic()
    known = reference.result() if changed is not None else None
    taken = known.reusable(changed) if known is not None else []
    keys = [c.key for c in tests.cases if c.key not in taken]
    outcome = run_submission(path, tests, limits, keys=keys)
    if taken and not _settled(outcome):
        outcome, taken = run_submission(path, tests, limits), []
    for key in taken:
        outcome.values[key] = copy.deepcopy(known.outcome.values[key])
        for mine, theirs in (
            (outcome.seconds, known.outcome.seconds),
            (outcome.cpu_seconds, known.outcome.cpu_seconds),
        ):
            if key in theirs:
                mine[key] = theirs[key]
    if taken and not keys:  # no test reached the change: the cells ran as the reference's did
        outcome.output, outcome.cell_errors = known.outcome.output, dict(known.outcome.cell_errors)
        outcome.isolation = known.outcome.isolation
    # timed tests all taken: judged against the calibration they were measured with
    timed = {c.key for c in tests.cases if c.timed}
    calibration = dict(known.calibration) if taken and timed <= set(taken) else None
    return judged(path, tests, outcome, path.stem, start, calibration), taken


def grade_catalogue(
    reference: Path, variants: list[Path], tests: StageTests, limits: Limits, workers: int = 2
) -> tuple[list[Graded], dict[str, list[str]]]:
    """The reference and every variant graded (``workers`` at a time), each variant's tests
    that its change cannot reach taken from the reference (see the module's docstring).

    The variants that take nothing (those changed outside a unit) are graded while the
    reference is. Returns the gradings (the reference first, then the variants in order) and,
    per variant's name, the keys of the tests whose outputs came from the reference.
    """
    processes.become_subreaper()
    cells = _cells(reference, tests)
    changed = [_changed(cells, _cells(path, tests)) for path in variants]
    order = sorted(range(len(variants)), key=lambda i: changed[i] is not None)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        first: Future = pool.submit(_Reference, reference, cells, tests, limits)
        jobs = {i: pool.submit(_grade_variant, variants[i], tests, limits, changed[i], first) for i in order}
        done = [jobs[i].result() for i in range(len(variants))]
        graded = [first.result().graded] + [g for g, _ in done]
    processes.reap_strays()
    return graded, {g.name: taken for g, taken in done}


def differing(one: dict[str, Graded], other: dict[str, Graded], timed: frozenset[str] = frozenset()) -> list[str]:
    """The submissions graded in both whose results differ in any test's key, score, message,
    hint, fault or withheld points (how reuse is compared with grading every test). The
    messages of the ``timed`` tests' keys are left out: a slow submission's message gives the
    CPU time it took, which no two runs share."""

    def results(graded: Graded) -> list[tuple]:
        return [
            (r.key, r.score, None if r.key in timed else r.message, r.hint, r.fault, r.withheld) for r in graded.results
        ]

    return sorted(name for name in one.keys() & other.keys() if results(one[name]) != results(other[name]))
