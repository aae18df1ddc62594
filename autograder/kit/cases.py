"""How test cases are written: a suite of cases, each a probe and a check.

A test case is a *probe* and a *check*. The probe receives the student's namespace
and calls the student's code on fixed inputs, returning raw outputs as plain data;
it runs where the student's code runs (the grading child, or the notebook). The check
(see ``checks``) compares that output with an expected value; when grading it runs in
the parent process, which never runs student code.

    suite = Suite(public=True)

    @suite.case("encode_decode", "round trip", points=1, check=equal(), expected="hi")
    def _(ns):
        stoi, itos = ns.build_vocab("hi")
        return ns.decode(ns.encode("hi", stoi), itos)

``expected=REFERENCE`` (hidden tests only) means the expected value is the reference
solution's output for the same probe, saved as a fixture at build time.

A probe returns raw outputs, never a verdict: no ``bool`` anywhere in its output (the
judge refuses one as a fault of the test, see ``runtime.boolean_in``), and no comparison
of the student's objects in its body or in the suite's helpers it calls (``gptcourse
check-stage`` refuses ``==``, ``is``, ``torch.equal`` and the like there; see
``autograder.authoring.verdicts``). What the test needs to know is returned as it is
(the tensors before and after, ``data_ptr()`` values for identity, ``None`` for a missing
bias), and the check decides. Boolean *state* is returned as a word: ``mode_of(module)``
(``"train"`` or ``"eval"``) and ``grad_mode()`` (``"grad"`` or ``"no_grad"``).

Part of the kit: standard library and torch only, pasted verbatim into every notebook.
"""

import contextlib
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from .checks import Dtypes

TEXT_LIMIT = 300  # characters of an exception's message kept in a probe's output or an error


class _Reference:
    def __repr__(self) -> str:
        return "REFERENCE"


REFERENCE = _Reference()


@dataclass
class Case:
    """One test case: ``probe(ns)`` makes raw output, ``check(got, expected, reveal)`` judges it."""

    qid: str
    name: str
    points: float
    probe: Callable[["Namespace"], Any]
    check: Callable[..., Any]
    expected: Any
    public: bool
    timeout: float
    timed: bool = False
    builds_on: tuple[str, ...] = ()  # names of more basic tests of the same question whose failure explains this one's
    guard: bool = False  # a no-op passes it: it earns points only when a test of the question's work passes
    budget: float | None = None  # a timed case's CPU budget, in calibration workloads (the grader stops it there)
    structure: bool = False  # a correct constructor alone passes it: it earns its points, but unlocks no guard

    @property
    def key(self) -> str:
        """The name every report uses: ``"<question id>: <description>"``."""
        return f"{self.qid}: {self.name}"

    @property
    def is_guard(self) -> bool:
        """Whether a no-op or garbage implementation could pass this test, so that it earns its
        points only when a test of the question's work passes (``withheld_guards``).

        Three kinds are: a test marked ``guard=True`` (the input is not modified, the mode
        restored, the device kept, nothing raised...), a test of errors (its probe calls
        ``catch``: a function that raises on every call passes it) and a test of dtypes
        (``checks.dtypes()``: zeros of the right dtype pass it).
        """
        return self.guard or isinstance(self.check, Dtypes) or "catch" in names_used(self.probe.__code__)

    @property
    def role(self) -> str:
        """How the test counts towards its question's guards (``withheld_guards``): ``"guard"``
        (``is_guard``), ``"structure"`` (marked ``structure=True``: the right submodules, tables
        or parameter shapes exist, which a correct ``__init__`` alone gives) or ``"work"`` (a
        test of the behaviour, the only kind whose pass lets the question's guards count)."""
        return "guard" if self.is_guard else "structure" if self.structure else "work"


@dataclass
class Suite:
    """An ordered collection of test cases (one file of public or hidden tests)."""

    public: bool
    cases: list[Case] = field(default_factory=list)

    def case(
        self,
        qid: str,
        name: str,
        *,
        points: float,
        check: Callable[..., Any],
        expected: Any = None,
        timeout: float = 10.0,
        timed: bool = False,
        builds_on: tuple[str, ...] = (),
        guard: bool = False,
        budget: float | None = None,
        structure: bool = False,
    ) -> Callable[[Callable[["Namespace"], Any]], Callable[["Namespace"], Any]]:
        """Register the decorated probe as a test case of question ``qid``.

        A ``timed`` case is judged on ``{"output": ..., "seconds": ..., "calibration": ...}``:
        the probe's output, the CPU seconds the student's process used for it (read by the
        grader from outside that process; in a notebook's check(), the kernel's own), and
        the CPU seconds a fixed calibration workload took on the same machine in the same
        run (``runtime.calibrate``): CPU time, so that a busy or shared machine does not
        fail fast code.

        ``budget`` (timed cases only) is the most CPU time the test allows, in calibration
        workloads, when its check fails whatever the output of a slower run: the grader then
        stops the probe once it has used that much (``budget`` times the calibration) instead
        of waiting for its time limit, and the test fails saying so. The check must still
        compare the seconds with the same budget (a notebook's check() runs the probe to the end).

        ``guard=True`` marks a test that a no-op could pass (the caller's tensor is not
        modified, the mode is restored, nothing is raised): it earns its points only when a
        test of the question's work passes (``Case.is_guard``; ``gptcourse check-stage``
        grades no-op stubs and refuses a test they pass that is no guard).

        ``structure=True`` marks a test that a class with a correct ``__init__`` and methods that
        raise on every call passes (the right submodules, tables or parameter shapes exist): it
        earns its points, but it is no test of the work, so its pass lets no guard of the question
        count (``Case.role``; ``gptcourse check-stage`` grades such a class and refuses any other
        test it passes). A guard cannot be marked so.
        """
        if self.public and expected is REFERENCE:
            raise ValueError(f"public test {qid}: {name} cannot use a reference fixture")
        if points <= 0:
            raise ValueError(f"test {qid}: {name} must carry positive points")
        if budget is not None and not (timed and budget > 0):
            raise ValueError(f"test {qid}: {name}: a CPU budget needs timed=True and a positive number")

        def register(probe: Callable[["Namespace"], Any]) -> Callable[["Namespace"], Any]:
            new = Case(
                qid,
                name,
                float(points),
                probe,
                check,
                expected,
                self.public,
                float(timeout),
                timed,
                tuple(builds_on),
                bool(guard),
                None if budget is None else float(budget),
                bool(structure),
            )
            if new.structure and new.is_guard:
                raise ValueError(
                    f"test {new.key}: a guard (errors, dtypes, guard=True) cannot be marked structure=True"
                )
            twin = next((c for c in self.cases if c.key == new.key), None)
            if twin is not None:
                lines = f"lines {twin.probe.__code__.co_firstlineno} and {probe.__code__.co_firstlineno}"
                raise ValueError(f"duplicate test name {new.key!r} in {probe.__code__.co_filename}, {lines}")
            self.cases.append(new)
            return probe

        return register


class MissingName(Exception):
    """The notebook does not define a name a test needs."""


class Namespace:
    """Attribute access to the names a notebook defined, with a clear error for missing ones."""

    def __init__(self, names: dict[str, Any]) -> None:
        self._names = names

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._names[name]
        except KeyError:
            raise MissingName(f"`{name}` is not defined: run (or restore) the cell that defines it") from None


def catch(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Call ``fn`` and report which exception it raised, if any, as plain data.

    A name the notebook does not define (``MissingName``) is not what the call raised: it
    propagates, so that the test fails as every test of a missing name does ("`f` is not defined").

    Example:
        >>> catch(int, "x")["raised"], catch(int, "3")["raised"]
        ('ValueError', None)
    """
    try:
        fn(*args, **kwargs)
    except MissingName:
        raise
    except Exception as exc:  # the type is the answer; tests check it
        return {"raised": type(exc).__name__, "message": str(exc)[:TEXT_LIMIT]}
    return {"raised": None, "message": ""}


def mode_of(module: torch.nn.Module) -> str:
    """A module's training flag as a word (a probe returns no booleans).

    Example:
        >>> mode_of(torch.nn.Linear(2, 2).eval())
        'eval'
    """
    return "train" if module.training else "eval"


def grad_mode() -> str:
    """Whether autograd records operations here, as a word (a probe returns no booleans).

    Example:
        >>> with torch.no_grad():
        ...     grad_mode()
        'no_grad'
    """
    return "grad" if torch.is_grad_enabled() else "no_grad"


def names_used(code: types.CodeType) -> set[str]:
    """The global names a function's code uses, its comprehensions and nested functions included.

    Example:
        >>> sorted(names_used((lambda ns: catch(ns.f, [len(x) for x in ns.xs])).__code__))
        ['catch', 'f', 'len', 'xs']
    """
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= names_used(const)
    return names


WITHHELD = (
    "this passed, but no test of the work of {qid} did: a test that a function doing nothing could "
    "pass (its errors, dtypes, what must stay unchanged) counts only once the function also works "
    "(the right parts being built is not enough)"
)


def withheld_guards(tests: list[tuple[str, str, bool, str]]) -> set[str]:
    """The passed guards whose points are withheld: ``tests`` holds ``(name, question id,
    passed, role)`` (``Case.role``); a passed guard counts only when a test of the work of its
    question passed too, a test of structure (what a correct constructor alone gives) not
    being one. Grading and ``check()`` both decide by this.

    Example:
        >>> sorted(withheld_guards([("a: raises", "a", True, "guard"), ("a: values", "a", False, "work"),
        ...                         ("b: raises", "b", True, "guard"), ("b: values", "b", True, "work"),
        ...                         ("c: raises", "c", True, "guard"), ("c: tables", "c", True, "structure")]))
        ['a: raises', 'c: raises']
    """
    working = {qid for _, qid, passed, role in tests if passed and role == "work"}
    return {name for name, qid, passed, role in tests if passed and role == "guard" and qid not in working}


NOT_IMPLEMENTED = "not implemented yet"  # how runtime.describe_error words a stub's NotImplementedError


def failure_cause(message: str, hint: str | None = None) -> str:
    """What a failure is grouped by (``failure_roots``): the known mistake its hint named, else its
    message, a stub's ``NotImplementedError`` being one cause however the test words it.

    Example:
        >>> failure_cause("expected ValueError, got NotImplementedError: 'Write f'") == failure_cause(NOT_IMPLEMENTED)
        True
    """
    if hint:
        return hint
    if message.startswith(NOT_IMPLEMENTED) or "got NotImplementedError" in message:
        return NOT_IMPLEMENTED
    return message


def failure_roots(tests: list[tuple]) -> dict[str, list[str]]:
    """Which failures of one question follow from which: by ``Case.builds_on``, and by cause.

    ``tests`` holds ``(name, builds_on, passed)`` or ``(name, builds_on, passed, cause)``
    for each test of the question, in order. A failure whose ``cause`` (the known mistake
    its hint named, else its message) is that of an earlier failure follows from that
    one: one mistake, one place to start. The answer maps each failed test's name to the
    most basic failed tests it follows from (through failed tests only), and to ``[]``
    when it follows from no other failure: those are where a student should start.

    Example:
        >>> failure_roots([("shape", (), False), ("values", ("shape",), False),
        ...                ("grad", ("values",), False), ("eval", (), True)])
        {'shape': [], 'values': ['shape'], 'grad': ['shape']}
        >>> failure_roots([("a", (), False, "raised TypeError"), ("b", (), False, "raised TypeError")])
        {'a': [], 'b': ['a']}
    """
    failed: dict[str, tuple[str, ...]] = {}
    first_of: dict[str, str] = {}  # cause -> the first failure with it
    for name, on, passed, *cause in tests:
        if passed:
            continue
        links = tuple(on)
        if cause and cause[0]:
            if cause[0] in first_of:
                links += (first_of[cause[0]],)
            else:
                first_of[cause[0]] = name
        failed[name] = links
    found: dict[str, list[str]] = {}

    def roots(name: str, seen: frozenset[str]) -> list[str]:
        if name not in found:
            basic: list[str] = []
            for parent in failed[name]:
                if parent in failed and parent not in seen:
                    basic += [r for r in roots(parent, seen | {name}) or [parent] if r not in basic]
            found[name] = basic
        return found[name]

    return {name: roots(name, frozenset()) for name in failed}


def generator(seed: int) -> torch.Generator:
    """A CPU random generator with a fixed seed, for test inputs."""
    g = torch.Generator()
    g.manual_seed(seed)
    return g


def randn(*shape: int, seed: int) -> torch.Tensor:
    """Standard normal float32 test input, the same on every machine with the pinned torch."""
    return torch.randn(*shape, generator=generator(seed))


def _better_name(name: str, kept: str, first: tuple[str, ...]) -> bool:
    """Whether ``name`` should replace ``kept`` as the one name of a shared parameter.

    Example:
        >>> _better_name("ff.fc1.weight", "ff.net.0.weight", ()), _better_name("head.weight", "tok_emb.weight", ())
        (True, False)
    """
    if name in first or kept in first:
        return name in first and kept not in first
    numbered = [sum(step.isdigit() for step in n.split(".")) for n in (name, kept)]
    return numbered[0] < numbered[1]


def set_parameters(module: torch.nn.Module, seed: int, scale: float = 0.5, first: tuple[str, ...] = ()) -> None:
    """Give every parameter of ``module`` fixed values drawn from its name and a seed.

    Each parameter's values depend only on its dotted name, shape and ``seed``, never on
    the order in which the student's code created it. A parameter with several names (a
    head tied to the token embedding, or a layer kept both as ``fc1`` and inside an
    ``nn.Sequential``) is filled once, under the first of its names that ``first`` lists,
    or else under the one with the fewest numbered steps (``fc1.weight``, the name a
    contract gives, before ``net.0.weight``), the first registered of equal ones.

    Example:
        >>> a, b = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
        >>> set_parameters(a, seed=1); set_parameters(b, seed=1)
        >>> torch.equal(a.weight, b.weight)
        True
        >>> c = torch.nn.Module(); c.net = torch.nn.Sequential(torch.nn.Linear(2, 2)); c.fc1 = c.net[0]
        >>> d = torch.nn.Module(); d.fc1 = torch.nn.Linear(2, 2)
        >>> set_parameters(c, seed=1); set_parameters(d, seed=1)
        >>> torch.equal(c.fc1.weight, d.fc1.weight)
        True
    """
    named: dict[int, tuple[str, torch.nn.Parameter]] = {}
    for name, param in module.named_parameters(remove_duplicate=False):
        kept = named.get(id(param))
        if kept is None or _better_name(name, kept[0], first):
            named[id(param)] = (name, param)
    with torch.no_grad():
        for name, param in sorted(named.values(), key=lambda item: item[0]):
            offset = sum(ord(ch) * (i + 1) for i, ch in enumerate(name))
            values = torch.randn(param.shape, generator=generator(seed * 100003 + offset)) * scale
            param.copy_(values)


@contextlib.contextmanager
def replacing(ns: Namespace, name: str, stand_in: Any) -> Iterator[Any]:
    """The notebook's global ``name`` is ``stand_in`` while the block runs, then what it was.

    Example:
        >>> ns = Namespace({"sample_next": print})
        >>> with replacing(ns, "sample_next", max) as chooser:
        ...     ns.sample_next is max
        True
        >>> ns.sample_next is print
        True
    """
    table = ns._names
    before = table.get(name)
    table[name] = stand_in
    try:
        yield stand_in
    finally:
        if before is None:
            table.pop(name, None)
        else:
            table[name] = before
