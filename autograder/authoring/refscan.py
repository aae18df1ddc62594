"""Looking for an implementation of a graded function where a student or the child can reach it.

Two detectors, because a copy and a re-implementation look different:

- **by structure** (``structural_matches``): every function of a source file is compared
  with each graded function (and each method of a graded class) of the stage's
  reference, statement by statement after normalisation (docstrings and annotations
  dropped, local names renamed in order of appearance, so that renaming variables does
  not hide a copy). A function that holds most of a reference unit's statements is one.
- **by behaviour** (``behavioural_matches``): the stage's probes run here on the
  reference (``record_reference_calls``), which records every call of a graded function
  (its arguments and what it returned); each function and class of the suite is then
  called on the same arguments (and, when it wants one or two more, on each of a few
  neutral values for them). One that returns what the reference returned on most
  calls, for at least two different answers, is an implementation, however written
  (a loop of ``math.sin`` for a vectorised table, say). A table of literal answers to
  a few inputs is not: it has no answer for the others. Classes and functions defined
  inside a suite's functions (a probe's helper that builds "known-good" parts, say) are
  candidates too: they are made here from the source, as their enclosing function would
  make them, the reference's names standing for its ``ns``.
"""

import ast
import builtins
import copy
import inspect
import itertools
import math
import signal
import types
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from autograder.build.notebooks import make_notebook
from autograder.build.source import parse_source
from autograder.course import Stage
from autograder.engine.submission import code_cells
from autograder.kit.cases import Namespace
from autograder.kit.runtime import run_probe

_KEEP = frozenset(dir(builtins)) | {"torch", "nn", "F", "math", "np", "numpy", "self"}
MIN_STATEMENTS = 3  # a reference unit with fewer significant statements is too small to recognise by structure
SHARE = 0.6  # the share of a reference unit's statements that makes a function a copy of it
NEUTRAL = (
    1,
    1.0,
    -1.0,
    0,
    True,
    False,
    None,
)  # values tried for the parameters a candidate wants beyond the graded function's


# ------------------------------------------------------------------ structure


class _Normalise(ast.NodeTransformer):
    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def _rename(self, name: str) -> str:
        if name in _KEEP:
            return name
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.copy_location(ast.Name(self._rename(node.id), ast.Load()), node)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        return ast.arg(self._rename(node.arg))

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        return (
            self.visit(ast.Assign([node.target], node.value or ast.Constant(None)))
            if node.value is not None
            else ast.Pass()
        )


def _statements(function: ast.AST) -> list[str]:
    """A function's significant statements, normalised (each on its own, names in order of appearance)."""
    body = list(function.body)
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    out = []
    for stmt in (s for top in body for s in ast.walk(top) if isinstance(s, ast.stmt)):
        if isinstance(
            stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.FunctionDef, ast.ClassDef, ast.Pass, ast.Raise)
        ):
            # compound statements are compared through the statements they hold; error messages differ by nature
            continue
        if sum(1 for _ in ast.walk(stmt)) < 8:
            continue
        out.append(ast.dump(_Normalise().visit(copy.deepcopy(stmt)), annotate_fields=False))
    return out


@dataclass(frozen=True)
class Unit:
    """A graded function, or a method of a graded class, of a stage's reference."""

    name: str
    statements: tuple[str, ...]


def reference_units(stage: Stage) -> list[Unit]:
    """The stage's graded functions and methods of graded classes, big enough to recognise."""
    tree = ast.parse(stage.reference.read_text(encoding="utf-8"))
    graded = {b.arg for b in parse_source(stage.source) if b.kind == "stub"}
    units = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in graded:
            functions = (
                [node]
                if isinstance(node, ast.FunctionDef)
                else [n for n in node.body if isinstance(n, ast.FunctionDef)]
            )
            for function in functions:
                name = node.name if function is node else f"{node.name}.{function.name}"
                statements = tuple(_statements(function))
                if len(statements) >= MIN_STATEMENTS:
                    units.append(Unit(name, statements))
    return units


def structural_matches(source: str, filename: str, units: list[Unit]) -> list[str]:
    """The functions of ``source`` that hold most of a reference unit's statements."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        mine = set(_statements(node))
        for unit in units:
            shared = sum(s in mine for s in unit.statements)
            if shared >= MIN_STATEMENTS and shared >= SHARE * len(unit.statements):
                found.append(
                    f"{filename}:{node.lineno}: {node.name} holds {shared} of the {len(unit.statements)} statements"
                    f" of the reference {unit.name}"
                )
    return found


# ------------------------------------------------------------------ behaviour


def _snapshot(value: Any, depth: int = 0) -> Any:
    """A copy of a recorded value that later calls cannot change."""
    if depth > 8:
        return value
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, torch.Generator):
        twin = torch.Generator(device=value.device)
        twin.set_state(value.get_state())
        return twin
    if isinstance(value, (list, tuple)):
        return type(value)(_snapshot(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return {k: _snapshot(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (int, float, str, bytes, type(None), torch.dtype, torch.device)):
        return value
    try:
        return copy.deepcopy(value)
    except Exception:  # an object that cannot be copied is kept as it is
        return value


@dataclass
class Call:
    args: tuple
    kwargs: dict
    result: Any  # what the reference returned (None when it raised)
    raised: str | None


def _recorder(function: Callable, calls: list[Call], limit: int) -> Callable:
    def recorded(*args, **kwargs):
        if len(calls) >= limit:
            return function(*args, **kwargs)
        args_copy, kwargs_copy = _snapshot(args), _snapshot(kwargs)
        try:
            result = function(*args, **kwargs)
        except Exception as exc:
            calls.append(Call(args_copy, kwargs_copy, None, type(exc).__name__))
            raise
        calls.append(Call(args_copy, kwargs_copy, _snapshot(result), None))
        return result

    recorded.__wrapped__ = function
    return recorded


@dataclass
class ModuleCall:
    """One forward call of an instance of a graded ``nn.Module`` class."""

    init: tuple[tuple, dict]  # the arguments the instance was made with
    state: dict  # its state_dict at the call
    training: bool
    args: tuple
    kwargs: dict
    result: Any


def _record_module_class(cls: type, calls: list[ModuleCall], limit: int) -> None:
    """Make every instance of ``cls`` (a fresh class of the reference namespace) record its forward calls."""
    init, forward = cls.__init__, cls.forward

    def recording_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.__dict__["_recorded_init"] = (_snapshot(args), _snapshot(kwargs))

    def recording_forward(self, *args, **kwargs):
        result = forward(self, *args, **kwargs)
        made = self.__dict__.get("_recorded_init")
        if made is not None and len(calls) < limit:
            state = {k: v.detach().clone() for k, v in self.state_dict().items()}
            calls.append(ModuleCall(made, state, self.training, _snapshot(args), _snapshot(kwargs), _snapshot(result)))
        return result

    cls.__init__, cls.forward = recording_init, recording_forward


class _Slow(Exception):
    pass


@contextmanager
def _time_limit(seconds: float):
    def alarm(signum, frame):
        raise _Slow()

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def reference_namespace(stage: Stage) -> dict:
    """The names of the reference notebook, as grading runs its cells (in this process)."""
    module = types.ModuleType(f"reference_{stage.module}")
    for cell in code_cells(make_notebook(stage, "reference")):
        exec(compile(cell.source, f"<cell {cell.index}>", "exec"), module.__dict__)
    return module.__dict__


def record_reference_calls(stage: Stage, limit: int = 16, probe_seconds: float = 5.0) -> tuple[dict, dict[str, list]]:
    """Run every probe of the stage on the reference here: ``(the reference's names, the
    recorded calls of each graded function and of each graded nn.Module class)``.

    A probe that takes longer than ``probe_seconds`` is stopped (what it recorded so far is kept).
    """
    names = reference_namespace(stage)
    graded = [b.arg for b in parse_source(stage.source) if b.kind == "stub"]
    calls: dict[str, list] = {}
    for name in graded:
        value = names.get(name)
        if inspect.isfunction(value):
            calls[name] = []
            names[name] = _recorder(value, calls[name], limit)
        elif inspect.isclass(value) and issubclass(value, torch.nn.Module):
            calls[name] = []
            _record_module_class(value, calls[name], limit)
    for case in stage.tests().cases:
        try:
            with _time_limit(probe_seconds):
                run_probe(case, Namespace(names))
        except _Slow:
            continue
    return names, calls


def same(a: Any, b: Any, depth: int = 0) -> bool:
    """Whether two outputs agree (tensors within 1e-4 relative, any floating dtype)."""
    if depth > 8:
        return False
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.shape != b.shape:
            return False
        if a.dtype.is_floating_point or b.dtype.is_floating_point:
            return bool(torch.allclose(a.detach().double(), b.detach().double(), rtol=1e-4, atol=1e-5, equal_nan=True))
        return a.dtype == b.dtype and bool(torch.equal(a, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y, depth + 1) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k], depth + 1) for k in a)
    if isinstance(a, float) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9) or (math.isnan(a) and math.isnan(float(b)))
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # an object without a usable ==
        return False


def _candidates(module: types.ModuleType) -> list[tuple[str, Callable]]:
    """The module's own functions, and its classes (and their instances, when made without arguments)."""
    out = []
    for name, value in vars(module).items():
        if getattr(value, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(value):
            out.append((name, value))
        elif inspect.isclass(value):
            out += _class_candidates(name, value)
    return out


def _enclosed_definitions(tree: ast.Module) -> list[tuple[ast.AST, list[ast.AST]]]:
    """Each function of the module (top-level, or a method of a top-level class) that holds
    definitions, with the classes and functions defined inside it (at any depth, in order)."""
    outers = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            outers.append(node)
        elif isinstance(node, ast.ClassDef):
            outers += [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    found = []
    for outer in outers:
        inner = [
            n
            for top in outer.body
            for n in ast.walk(top)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        ]
        inner = [
            n for n in inner if not any(n in parent.body for parent in inner if isinstance(parent, ast.ClassDef))
        ]  # methods come with their class
        if inner:
            found.append((outer, sorted(inner, key=lambda n: n.lineno)))
    return found


def _nested_candidates(module: types.ModuleType, source: str, context: dict | None) -> list[tuple[str, Callable]]:
    """The classes and functions defined inside the module's functions, made here as the
    enclosing function would make them: in the module's globals, the enclosing function's
    parameter ``ns`` standing for ``context`` (the reference's names) and its other local
    names for ``None``, decorators left out. Each enclosing function's definitions are made together, in order,
    so that one may use another."""
    out = []
    for outer, inner in _enclosed_definitions(ast.parse(source)):
        scope = dict(vars(module))
        local = {a.arg for a in ast.walk(outer.args) if isinstance(a, ast.arg)}
        local |= {n.id for n in ast.walk(outer) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for name in local - set(scope):
            scope[name] = Namespace(context) if name == "ns" and context is not None else None
        made = []
        for node in inner:
            try:
                with _time_limit(2.0):
                    bare = copy.copy(node)
                    bare.decorator_list = []  # a decorator (a suite's case registration, say) is not run here
                    exec(compile(ast.Module([bare], []), f"<{module.__name__}: {outer.name}>", "exec"), scope)
            except BaseException:  # a definition that needs what only the enclosing call has: not tried
                continue
            made.append(node.name)
        for name in made:
            value = scope[name]
            label = f"{outer.name}.<locals>.{name}"
            if inspect.isfunction(value):
                out.append((label, value))
            elif inspect.isclass(value):
                out += _class_candidates(label, value)
    return out


def _class_candidates(name: str, value: type) -> list[tuple[str, Callable]]:
    """A class, and an instance of it when one can be made without arguments."""
    out = [(name, value)]
    try:
        with _time_limit(2.0):
            instance = value()
    except BaseException:  # needs arguments, or fails: only the class itself is tried
        return out
    if callable(instance):
        out.append((f"{name}()", instance))
    return out


def _arity(callable_: Callable) -> tuple[int, int] | None:
    """``(required, most)`` positional arguments ``callable_`` takes (most: a large number for ``*args``)."""
    try:
        signature = inspect.signature(callable_)
    except (TypeError, ValueError):
        return None
    parameters = list(signature.parameters.values())
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = sum(p.default is p.empty for p in positional)
    most = 1000 if any(p.kind == p.VAR_POSITIONAL for p in parameters) else len(positional)
    return required, most


def _arguments(signature: inspect.Signature, call: Call, arity: tuple[int, int]) -> tuple | None:
    """The call's arguments as the candidate may take them: all of them in order, or the
    leading ones when the rest are the graded function's defaults (None: neither)."""
    try:
        bound = signature.bind(*call.args, **call.kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    values = list(bound.arguments.values())
    defaults = [p.default for p in signature.parameters.values()]
    keep = min(len(values), arity[1])
    if any(v is not d and not (type(v) is type(d) and same(v, d)) for v, d in zip(values[keep:], defaults[keep:])):
        return None
    return tuple(values[:keep])


def _try(candidate: Callable, args: tuple) -> tuple[bool, Any]:
    try:
        with _time_limit(2.0):
            return True, candidate(*_snapshot(args))
    except BaseException:  # a candidate that fails on these arguments implements nothing here
        return False, None


def _module_hits(candidate: type, recorded: list[ModuleCall]) -> int:
    """On how many recorded forward calls an instance of ``candidate``, made with the same
    arguments and given the same state, returns what the graded class returned."""
    hits = 0
    for call in recorded:
        try:
            with _time_limit(2.0):
                module = candidate(*_snapshot(call.init[0]), **_snapshot(call.init[1]))
                module.load_state_dict(call.state, strict=True)
                module.train(call.training)
                got = module(*_snapshot(call.args), **_snapshot(call.kwargs))
        except BaseException:  # another constructor, other parameter names, or a failure: no hit
            continue
        hits += same(got, call.result)
    return hits


def behavioural_matches(
    module: types.ModuleType,
    graded: dict[str, Callable],
    calls: dict[str, list],
    label: str,
    source: str | None = None,
    context: dict | None = None,
) -> list[str]:
    """The module's functions and classes that reproduce a graded function (or the forward of
    a graded nn.Module class) on its recorded calls; with the module's ``source``, also the
    classes and functions defined inside its functions (see ``_nested_candidates``)."""
    found = []
    calls = {name: list(recorded) for name, recorded in calls.items()}  # fixed: trying a candidate may record more
    candidates = _candidates(module) + (_nested_candidates(module, source, context) if source is not None else [])
    for name, recorded in calls.items():
        if isinstance(graded[name], type):
            if len({repr(c.result)[:2000] for c in recorded}) < 2:
                continue
            for candidate_name, candidate in candidates:
                if inspect.isclass(candidate) and issubclass(candidate, torch.nn.Module):
                    hits = _module_hits(candidate, recorded)
                    if hits >= 2 and hits >= 2 * len(recorded) / 3:
                        found.append(
                            f"{label}: {candidate_name} reproduces the reference {name} on {hits} of {len(recorded)}"
                            " recorded forward calls"
                        )
            continue
        answered = [c for c in recorded if c.raised is None]
        if len({repr(c.result)[:2000] for c in answered}) < 2:
            continue  # fewer than two different answers: nothing to recognise
        signature = inspect.signature(graded[name])
        for candidate_name, candidate in candidates:
            arity = _arity(candidate)
            if arity is None:
                continue
            usable = [(args, c.result) for c in answered if (args := _arguments(signature, c, arity)) is not None]
            if len(usable) < 2:
                continue
            extra = max(0, arity[0] - len(usable[0][0]))
            if extra > 2 or any(len(args) != len(usable[0][0]) for args, _ in usable):
                continue
            for fill in itertools.product(NEUTRAL, repeat=extra):
                hits = 0
                for args, result in usable:
                    ok, got = _try(candidate, args + fill)
                    hits += ok and same(got, result)
                if hits >= 2 and hits >= 2 * len(usable) / 3:
                    found.append(
                        f"{label}: {candidate_name} reproduces the reference {name} on {hits} of {len(usable)}"
                        " recorded calls" + (f" (given {fill} for its extra parameters)" if fill else "")
                    )
                    break
    return found


def scan_stage(stage: Stage) -> dict:
    """``{"found": [...], "recorded": {graded name: calls}}``: every implementation of a graded
    function found in the stage's two suites, both ways, and how many calls the behavioural
    scan had to go on (a graded name with none is not looked for by behaviour)."""
    import sys

    units = reference_units(stage)
    found = []
    for path in (stage.public, stage.hidden):
        found += structural_matches(path.read_text(encoding="utf-8"), f"{stage.id}/{path.name}", units)
    names, calls = record_reference_calls(stage)
    for label, path in (("public", stage.public), ("hidden", stage.hidden)):
        module = sys.modules[f"gptcourse_suite_{stage.id}_{label}"]
        found += behavioural_matches(
            module,
            {k: names[k] for k in calls},
            calls,
            f"{stage.id}/{label}.py",
            source=path.read_text(encoding="utf-8"),
            context=names,
        )
    return {"found": found, "recorded": {name: len(c) for name, c in calls.items()}}


def main() -> None:
    """``python -m autograder.authoring.refscan STAGE``: print ``scan_stage`` as one JSON line after
    ``REFSCAN`` (STAGE is a stage's id or its folder; check-stage's rule "no suite holds the
    reference" and the tests run it in a process of its own, since the probes run here on the
    reference)."""
    import json
    import sys

    from autograder.course import command_line_stage

    print("REFSCAN " + json.dumps(scan_stage(command_line_stage(sys.argv[1]))))


if __name__ == "__main__":
    main()
