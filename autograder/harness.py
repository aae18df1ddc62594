"""How test cases are written, and how the public ones run inside a notebook.

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

This module is self-contained (standard library and torch only) because the build
copies it verbatim into every student notebook.
"""

import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import torch


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

    @property
    def key(self) -> str:
        """The name every report uses: ``"<question id>: <description>"``."""
        return f"{self.qid}: {self.name}"


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
    ) -> Callable[[Callable[["Namespace"], Any]], Callable[["Namespace"], Any]]:
        """Register the decorated probe as a test case of question ``qid``.

        A ``timed`` case is judged on ``{"output": ..., "seconds": ..., "calibration": ...}``:
        the probe's output, the seconds it took as measured by the grader (outside the
        student's process), and the seconds a fixed calibration workload took on the
        same machine in the same run (see ``calibration``).
        """
        if self.public and expected is REFERENCE:
            raise ValueError(f"public test {qid}: {name} cannot use a reference fixture")
        if points <= 0:
            raise ValueError(f"test {qid}: {name} must carry positive points")

        def register(probe: Callable[["Namespace"], Any]) -> Callable[["Namespace"], Any]:
            new = Case(qid, name, float(points), probe, check, expected, self.public, float(timeout), timed)
            if any(c.key == new.key for c in self.cases):
                raise ValueError(f"duplicate test name {new.key!r}")
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
    """Call ``fn`` and report which exception it raised, if any, as plain data."""
    try:
        fn(*args, **kwargs)
    except Exception as exc:  # the type is the answer; tests check it
        return {"raised": type(exc).__name__, "message": str(exc)[:200]}
    return {"raised": None, "message": ""}


def generator(seed: int) -> torch.Generator:
    """A CPU random generator with a fixed seed, for test inputs."""
    g = torch.Generator()
    g.manual_seed(seed)
    return g


def randn(*shape: int, seed: int) -> torch.Tensor:
    """Standard normal float32 test input, the same on every machine with the pinned torch."""
    return torch.randn(*shape, generator=generator(seed))


def set_parameters(module: torch.nn.Module, seed: int, scale: float = 0.5) -> None:
    """Give every parameter of ``module`` fixed values drawn from its name and a seed.

    Each parameter's values depend only on its dotted name, shape and ``seed``, never on
    the order in which the student's code created it.
    """
    with torch.no_grad():
        for name, param in sorted(module.named_parameters()):
            offset = sum(ord(ch) * (i + 1) for i, ch in enumerate(name))
            values = torch.randn(param.shape, generator=generator(seed * 100003 + offset)) * scale
            param.copy_(values)


def calibration_workload(rounds: int = 75) -> int:
    """A fixed amount of pure-Python work: the longest word under each of many tuple keys.

    Efficiency tests compare a student's time with this workload's time on the same
    machine in the same run, so that a slow or busy grader does not fail fast code. It
    does what tokenizer code spends its time on (slicing short strings, hashing tuples
    of them, dictionary look-ups) and is no function of the course. It keeps few objects
    alive, so its time does not depend on how much memory the process already holds.
    """
    words = [f"{(i * 7919) % 5003:x}z{i % 97}" for i in range(5000)]
    total = 0
    for r in range(rounds):
        longest: dict[tuple[str, str], str] = {}
        for word in words:
            signature = (word[: 1 + r % 2], word[-2:])
            if len(word) > len(longest.get(signature, "")):
                longest[signature] = word
        total += len(longest)
    return total


def calibrate(repeats: int = 3) -> float:
    """Seconds the calibration workload takes here (the fastest of a few runs)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        calibration_workload()
        best = min(best, time.perf_counter() - start)
    return best


def describe_error(exc: BaseException) -> str:
    """A short, student-facing account of an exception raised by the student's code."""
    if isinstance(exc, NotImplementedError):
        return "not implemented yet (the stub still raises NotImplementedError)"
    if isinstance(exc, MissingName):
        return str(exc)
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    for frame in reversed(frames):
        if frame.filename.startswith("<cell"):
            where = f" (in {frame.filename.strip('<>')}, line {frame.lineno}: {(frame.line or '').strip()[:80]})"
            break
    text = str(exc)
    if len(text) > 300:
        text = text[:297] + "..."
    return f"raised {type(exc).__name__}: {text}{where}"


CASE_SEED = 1234


def reseed(seed: int) -> None:
    """Seed every global random generator a test may touch (Python, NumPy, torch)."""
    import random

    import numpy

    random.seed(seed)
    numpy.random.seed(seed)
    torch.manual_seed(seed)


def run_cases(cases: list[Case], names: dict[str, Any], expected: dict[str, Any], reveal: bool) -> list[tuple[Case, bool, str]]:
    """Run cases in this process, as grading does: reseeded, timed, judged.

    ``expected`` maps case keys to fixture values for ``REFERENCE`` cases. The caller's
    random states are restored afterwards, so a check cell does not disturb the notebook.
    """
    import random

    import numpy

    saved = (random.getstate(), numpy.random.get_state(), torch.get_rng_state())
    ns = Namespace(names)
    out = []
    try:
        for case in cases:
            reseed(CASE_SEED)
            try:
                start = time.perf_counter()
                got = case.probe(ns)
                if case.timed:
                    got = {"output": got, "seconds": time.perf_counter() - start, "calibration": calibrate()}
            except Exception as exc:  # a student's error is a failed test, not a crash of the check
                out.append((case, False, describe_error(exc)))
                continue
            want = expected.get(case.key) if case.expected is REFERENCE else case.expected
            try:
                verdict = case.check(got, want, reveal)
            except Exception as exc:  # an output of a shape no check expects
                out.append((case, False, f"the output could not be compared ({type(exc).__name__})"))
                continue
            out.append((case, verdict.passed, verdict.message))
    finally:
        random.setstate(saved[0])
        numpy.random.set_state(saved[1])
        torch.set_rng_state(saved[2])
    return out


def _report(qid: str, kind: str, outcomes: list[tuple[Case, bool, str]]) -> list[str]:
    lines = []
    for case, ok, message in outcomes:
        lines.append(f"  [{'ok  ' if ok else 'FAIL'}] {case.name}")
        if not ok and message:
            lines.extend("         " + line for line in message.splitlines())
    return lines


def run_public(cases: list[Case], qid: str, names: dict[str, Any]) -> tuple[bool, str, float]:
    """Run the public tests of one question against ``names``: (all passed, report, points)."""
    mine = [c for c in cases if c.qid == qid]
    if not mine:
        return False, f"No public tests are registered for {qid!r}.", 0.0
    outcomes = run_cases(mine, names, {}, True)
    passed = sum(ok for _, ok, _ in outcomes)
    if passed == len(mine):
        head = f"{qid}: public tests passed ({passed}/{len(mine)}). Hidden tests are run when your work is graded."
    else:
        head = f"{qid}: {len(mine) - passed} of {len(mine)} public tests failed."
    points = sum(c.points for c, ok, _ in outcomes if ok)
    return passed == len(mine), "\n".join([head, *_report(qid, "public", outcomes)]), points


def run_hidden(qid: str, hidden_source: str, expected_json: str, names: dict[str, Any] | None = None) -> float:
    """Run the hidden tests of ``qid`` in this kernel (nbgrader's grade cells); return the points.

    ``hidden_source`` is the stage's hidden test file and ``expected_json`` the reference
    outputs of its fixture cases, both placed by the build inside nbgrader's hidden-test
    region. This runs in the student's kernel, as everything does under nbgrader.
    """
    import json

    if names is None:
        names = sys._getframe(1).f_globals
    space = dict(globals())
    code = "\n".join(line for line in hidden_source.splitlines() if not line.startswith(("from autograder", "import autograder")))
    exec(compile(code, "hidden tests", "exec"), space)
    decoder = globals().get("decode")  # the codec is part of the notebook's harness module
    if decoder is None:
        from autograder.codec import decode as decoder
    expected = {key: decoder(value) for key, value in json.loads(expected_json).items()}
    mine = [c for c in space["suite"].cases if c.qid == qid]
    outcomes = run_cases(mine, names, expected, False)
    print(f"{qid}: {sum(ok for _, ok, _ in outcomes)} of {len(mine)} hidden tests passed.")
    print("\n".join(_report(qid, "hidden", outcomes)))
    return sum(c.points for c, ok, _ in outcomes if ok)


def check(qid: str, names: dict[str, Any] | None = None, strict: bool = False, points: bool = False) -> float | None:
    """Notebook entry point: print the public-test report of question ``qid``.

    It looks the student's functions up in the calling notebook's globals, so it works
    whatever the notebook file is called and needs no package beyond torch. With
    ``strict`` a failed test raises ``AssertionError``; with ``points`` the points earned
    are returned (nbgrader's grade cells add the hidden tests' points to them).
    """
    if names is None:
        names = sys._getframe(1).f_globals
    # In a notebook the build runs this file, the checks and the stage's public tests
    # as one module, so the stage's public suite is the global ``suite`` here.
    ok, report, earned = run_public(globals()["suite"].cases, qid, names)
    print(report)
    if strict and not ok:
        raise AssertionError(f"{qid}: some public tests failed")
    return earned if points else None


def load_suite(path: str, module_name: str) -> Suite:
    """Run a suite file (``public.py`` or ``hidden.py``) as a module and return its ``suite``."""
    import types

    module = types.ModuleType(module_name)
    module.__file__ = path
    sys.modules[module_name] = module
    with open(path, encoding="utf-8") as handle:
        exec(compile(handle.read(), path, "exec"), module.__dict__)
    suite = module.__dict__.get("suite")
    if not isinstance(suite, Suite):
        raise ValueError(f"{path} defines no `suite = Suite(...)`")
    return suite
