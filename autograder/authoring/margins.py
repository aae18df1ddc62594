"""How far the reference stays inside each test's tolerance under a perturbation that a correct
solution written another way, or another machine, could cause; and whether an exact-match
test's result changes under one.

For every test judged with a tolerance (``checks.Close`` on tensors, ``checks.CloseNumber`` on
numbers) the reference's probe output is computed again under each perturbation and compared
with the expected value grading uses (the fixture for hidden tests, the literal for public
ones). The margin is ``allowed / error`` where the error comes closest to its tolerance
(``allowed = atol + rtol * |expected|``): 10x means the error could grow tenfold before the
test failed; ``inf`` means no error at all. Perturbations (``perturbations``):

- ``baseline``: as grading computes it (CPU, float32, one thread);
- ``threads``: float32 with every core (other summation orders in matrix products);
- ``float64``: every float32 result computed in float64 (the reference's own float32 rounding);
- ``cuda`` (``perturbations("cuda")``): every operation on the GPU, inputs drawn on the CPU.

The rule "tolerances keep a margin" (``run_rules``) runs ``python -m autograder.authoring.margins
STAGE`` (the CPU perturbations, expected values from the baseline run) and refuses a margin
below ``MIN_MARGIN`` and an exact-match test that changes; ``benchmarks/tolerance_margins.py``
prints every margin of every stage (``benchmarks/RESULTS_margins.md``).

Needs only torch and numpy (no nbformat, otter or nbgrader): it runs the reference notebook's
code in this process, so the GPU check runs it where Jupyter is not installed.

Example::

    rows, flips, _ = measure_stage(get_stage("05"), perturbations("cpu"))
    min(r.margin for r in rows if r.perturbation == "float64")  # 6.85 (05's tightest)
"""

import builtins
import json
import math
import os
import sys
import types
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from autograder.build.notebooks import make_notebook
from autograder.engine import codec
from autograder.engine.submission import code_cells
from autograder.kit import checks
from autograder.kit.cases import REFERENCE, Namespace
from autograder.kit.runtime import CASE_SEED, reseed

# The least margin a tolerance must keep on the CPU perturbations: an alternative may err more
# than the reference does under the same perturbation (another order of sums, a fused kernel), so
# half the tolerance stays free. Stage 06's GELU tests at 1.96x (atol 1e-6) were loosened to 1e-5
# for that reason (benchmarks/RESULTS_margins.md).
MIN_MARGIN = 2.0
MARGINS = "MARGINS "  # what starts the line of the child's answer (``main``)


def _map(value: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, tuple):
        items = [_map(v, fn) for v in value]
        if type(value) is tuple:
            return tuple(items)
        try:
            return type(value)(items)  # torch.return_types (structseq)
        except TypeError:
            return type(value)(*items)  # a namedtuple
    if isinstance(value, list):
        return [_map(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: _map(v, fn) for k, v in value.items()}
    return value


def _in_place(func: Any) -> bool:
    name = getattr(func, "__name__", "")
    return (
        name.endswith("_")
        and not name.endswith("__")
        or name in ("__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__")
    )


def _to_double(t: torch.Tensor) -> torch.Tensor:
    return t.double() if t.dtype == torch.float32 else t


def _made_double(t: torch.Tensor) -> torch.Tensor:
    """``_to_double`` for what an operation made: a new leaf that asks for gradients (a factory's
    ``requires_grad=True``) becomes a float64 leaf, whose ``.grad`` backward fills, not a copy of it."""
    if t.dtype == torch.float32 and t.is_leaf and t.requires_grad:
        return t.detach().double().requires_grad_()
    return _to_double(t)


class Float64(TorchFunctionMode):
    """Every float32 tensor an operation makes becomes float64 (inputs are still drawn in float32)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not _in_place(func):
            args, kwargs = _map(args, _to_double), _map(kwargs, _to_double)
        return _map(func(*args, **kwargs), _made_double)


class OnDevice(TorchFunctionMode):
    """Every operation runs on ``device``; random draws with a CPU generator stay on the CPU, then move."""

    def __init__(self, device: str) -> None:
        super().__init__()
        self.device = torch.device(device)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        generator = kwargs.get("generator")
        if isinstance(generator, torch.Generator) and generator.device.type == "cpu":
            if "device" in kwargs:
                kwargs["device"] = "cpu"
            out = func(*_map(args, torch.Tensor.cpu), **_map(kwargs, torch.Tensor.cpu))
        elif _in_place(func) and args and isinstance(args[0], torch.Tensor):
            here = args[0].device
            out = func(args[0], *_map(args[1:], lambda t: t.to(here)), **_map(kwargs, lambda t: t.to(here)))
            return out
        else:
            out = func(*_map(args, self._move), **_map(kwargs, self._move))
        return _map(out, self._move)

    def _move(self, t: torch.Tensor) -> torch.Tensor:
        return t.to(self.device)


@dataclass
class Perturbation:
    name: str
    enter: Callable[[], Any]  # returns a context manager (or None)
    threads: int = 1


def perturbations(device: str) -> list[Perturbation]:
    out = [
        Perturbation("baseline", lambda: None),
        Perturbation("threads", lambda: None, threads=max(2, os.cpu_count() or 2)),
    ]
    out.append(Perturbation("float64", Float64))
    if device == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: CUDA is not available here")
        out.append(Perturbation("cuda", lambda: OnDevice("cuda")))
    return out


def reference_namespace(stage) -> dict:
    """The reference notebook's code run as grading runs it (cells tagged check, demo or train skipped)."""
    module = types.ModuleType("submission")
    module.__dict__["__builtins__"] = builtins
    sys.modules["submission"] = module
    reseed(0)
    for cell in code_cells(make_notebook(stage, "reference")):
        exec(compile(cell.source, f"<cell {cell.index}>", "exec"), module.__dict__)
    return module.__dict__


def run_probe(case, names: dict, perturbation: Perturbation) -> Any:
    torch.set_num_threads(perturbation.threads)
    reseed(CASE_SEED)
    mode = perturbation.enter()
    try:
        if mode is None:
            return case.probe(Namespace(names))
        with mode:
            return _map(case.probe(Namespace(names)), lambda t: t.detach().cpu())
    finally:
        torch.set_num_threads(1)


def margin(check: Any, got: Any, expected: Any) -> tuple[float, float, float]:
    """(largest absolute error, tolerance where the error is closest to it, tolerance / error there)."""
    g = torch.as_tensor(got).detach().cpu().to(torch.float64)
    e = torch.as_tensor(expected).detach().cpu().to(torch.float64)
    if g.shape != e.shape:
        raise ValueError(f"shape {tuple(g.shape)} instead of {tuple(e.shape)}")
    err = (g - e).abs()
    err = torch.where(torch.isnan(g) & torch.isnan(e), torch.zeros_like(err), err)
    allowed = check.atol + check.rtol * e.abs()
    if err.numel() == 0:
        return 0.0, float("inf"), float("inf")
    ratio = err / allowed.clamp_min(1e-300)
    worst = int(torch.argmax(torch.where(torch.isnan(ratio), torch.full_like(ratio, math.inf), ratio)))
    worst_err, worst_allowed = float(err.reshape(-1)[worst]), float(allowed.reshape(-1)[worst])
    return float(err.max()), worst_allowed, (worst_allowed / worst_err if worst_err > 0 else math.inf)


def load_expected(stage, cases, names, fixtures: Path | None) -> tuple[dict, str]:
    """The expected value of every hidden test: the fixtures in folder ``fixtures`` when it has the
    stage's, else the reference's baseline output (a fixture is exactly that)."""
    path = fixtures / f"{stage.id}.json" if fixtures is not None else None
    if path is not None and path.exists():
        doc = json.loads(path.read_text(encoding="utf-8"))
        return {key: codec.decode(value) for key, value in doc["values"].items()}, f"fixtures from {path}"
    base = Perturbation("baseline", lambda: None)
    return {
        c.key: run_probe(c, names, base) for c in cases if c.expected is REFERENCE
    }, "fixtures computed here (baseline)"


@dataclass
class Row:
    stage: str
    test: str
    tolerance: str
    perturbation: str
    max_error: float | None
    allowed: float | None
    margin: float | None
    note: str = ""


@dataclass
class Flip:
    """An exact-match test whose result changes under a perturbation (or that cannot run under it: ``note``)."""

    stage: str
    test: str
    perturbation: str
    note: str = ""

    def __str__(self) -> str:
        return f"{self.stage} | {self.test} | {self.perturbation}" + (f" ({self.note})" if self.note else "")


def measure_stage(stage, perts: list[Perturbation], fixtures: Path | None = None) -> tuple[list[Row], list[Flip], str]:
    """Every tolerance-checked test's margin under each perturbation (``Row``), the exact-match
    tests whose result changes under one (``Flip``), and where the expected values came from
    (``load_expected``)."""
    names = reference_namespace(stage)
    cases = list(stage.tests().cases)
    expected, source = load_expected(stage, cases, names, fixtures)
    tolerant = [c for c in cases if isinstance(c.check, (checks.Close, checks.CloseNumber))]
    exact = [c for c in cases if isinstance(c.check, checks.Equal)]
    rows, flips = [], []
    for case in tolerant:
        want = expected.get(case.key) if case.expected is REFERENCE else case.expected
        tolerance = f"rtol {case.check.rtol:g}, atol {case.check.atol:g}"
        for pert in perts:
            try:
                got = run_probe(case, names, pert)
                biggest, allowed, ratio = margin(case.check, got, want)
                note = "" if pert.name != "baseline" or case.check(got, want, False).passed else "FAILS its check"
                rows.append(Row(stage.id, case.key, tolerance, pert.name, biggest, allowed, ratio, note))
            except Exception as exc:  # a perturbation this probe cannot run under
                rows.append(
                    Row(
                        stage.id,
                        case.key,
                        tolerance,
                        pert.name,
                        None,
                        None,
                        None,
                        f"not run: {type(exc).__name__}: {str(exc)[:80]}",
                    )
                )
    for case in exact:
        want = expected.get(case.key) if case.expected is REFERENCE else case.expected
        for pert in perts[1:]:
            try:
                got = run_probe(case, names, pert)
                if pert.name == "float64":
                    got = _map(got, lambda t: t.float() if t.dtype == torch.float64 else t)
                if not case.check(got, want, False).passed:
                    flips.append(Flip(stage.id, case.key, pert.name))
            except Exception as exc:
                flips.append(Flip(stage.id, case.key, pert.name, f"not run: {type(exc).__name__}"))
    return rows, flips, source


def main() -> None:
    """``python -m autograder.authoring.margins STAGE`` (a stage's id or folder): measure the stage's
    margins under the CPU perturbations, expected values from the baseline run, and print
    ``MARGINS`` and a JSON object: ``rows`` (each ``Row``) and ``flips``."""
    from autograder.course import command_line_stage

    torch.set_num_threads(1)
    stage = command_line_stage(sys.argv[1])
    rows, flips, _ = measure_stage(stage, perturbations("cpu"))
    print(MARGINS + json.dumps({"rows": [asdict(row) for row in rows], "flips": [asdict(flip) for flip in flips]}))


if __name__ == "__main__":
    main()
