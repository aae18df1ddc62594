"""How far the reference stays inside each test's tolerance, under a perturbation that a
correct alternative implementation (or another machine) could cause.

For every stage and every test judged with a tolerance (``checks.Close`` on tensors,
``checks.CloseNumber`` on numbers), the reference solution's probe output is computed
again under each perturbation and compared with the expected value the grader uses
(the fixture for hidden tests, the literal for public ones):

- ``baseline``: as grading computes it (CPU, float32, one thread): the error should be 0;
- ``threads``: CPU, float32, several threads (other summation orders in matrix products);
- ``float64``: every float32 result computed in float64 instead (how far float32 rounding
  of the reference itself goes);
- ``cuda`` (with ``--device cuda``): every operation on the GPU, inputs drawn on the CPU
  exactly as in grading, compared with the CPU fixtures.

For each it prints the largest absolute error, the tolerance allowed where the error is
closest to it (``atol + rtol * |expected|``) and the margin, their ratio: a margin of
10x means the error could grow tenfold before the test failed. It also lists exact-match
tests whose result changes under a perturbation.

    python benchmarks/tolerance_margins.py                      # CPU, every stage
    python benchmarks/tolerance_margins.py --device cuda --markdown

Needs only torch and numpy (no nbformat, otter or nbgrader): it runs the reference
notebook's code in this process. Expected values come from ``release/fixtures`` when
present, else from the baseline run itself (a fixture is exactly that output).
"""

import argparse
import builtins
import json
import math
import os
import sys
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder.build.notebooks import make_notebook  # noqa: E402
from autograder.course import all_stages, get_stage, load_cases  # noqa: E402
from autograder.engine import codec  # noqa: E402
from autograder.engine.submission import code_cells  # noqa: E402
from autograder.kit import checks  # noqa: E402
from autograder.kit.cases import REFERENCE, Namespace  # noqa: E402
from autograder.kit.runtime import CASE_SEED, reseed  # noqa: E402

FIXTURES = ROOT / "release" / "fixtures"


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


class Float64(TorchFunctionMode):
    """Every float32 tensor an operation makes becomes float64 (inputs are still drawn in float32)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not _in_place(func):
            args, kwargs = _map(args, _to_double), _map(kwargs, _to_double)
        return _map(func(*args, **kwargs), _to_double)


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


def load_expected(stage, cases, names) -> tuple[dict, str]:
    path = FIXTURES / f"{stage.id}.json"
    if path.exists():
        doc = json.loads(path.read_text(encoding="utf-8"))
        return {
            key: codec.decode(value) for key, value in doc["values"].items()
        }, f"fixtures from {path.relative_to(ROOT)}"
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


def measure_stage(stage, perts: list[Perturbation]) -> tuple[list[Row], list[str], str]:
    names = reference_namespace(stage)
    cases = list(load_cases(stage.id))
    expected, source = load_expected(stage, cases, names)
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
                    flips.append(f"{stage.id} | {case.key} | {pert.name}")
            except Exception as exc:
                flips.append(f"{stage.id} | {case.key} | {pert.name} (not run: {type(exc).__name__})")
    return rows, flips, source


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    if math.isinf(x):
        return "inf"
    return f"{x:.2e}"


def _fmt_margin(x: float | None) -> str:
    if x is None:
        return "-"
    return "exact" if math.isinf(x) else f"{x:.3g}x"


def render(rows: list[Row], flips: list[str], markdown: bool) -> str:
    head = ["stage", "test", "tolerance", "perturbation", "max error", "allowed", "margin", "note"]
    body = [
        [
            r.stage,
            r.test,
            r.tolerance,
            r.perturbation,
            _fmt(r.max_error),
            _fmt(r.allowed),
            _fmt_margin(r.margin),
            r.note,
        ]
        for r in rows
    ]
    lines = []
    if markdown:
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "|".join("---" for _ in head) + "|")
        lines += ["| " + " | ".join(row) + " |" for row in body]
    else:
        widths = [min(max(len(h), *(len(row[i]) for row in body)), 70) if body else len(h) for i, h in enumerate(head)]
        lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths)))
        lines += ["  ".join(cell[:w].ljust(w) for cell, w in zip(row, widths)) for row in body]
    lines.append("")
    lines.append("Smallest margin per stage and perturbation:")
    seen: dict[tuple[str, str], float] = {}
    for r in rows:
        if r.margin is not None:
            key = (r.stage, r.perturbation)
            seen[key] = min(seen.get(key, math.inf), r.margin)
    for (stage, pert), value in sorted(seen.items()):
        lines.append(f"  {stage:16s} {pert:9s} {_fmt_margin(value)}")
    lines.append("")
    lines.append("The ten tightest margins:")
    tight = sorted((r for r in rows if r.margin is not None and not math.isinf(r.margin)), key=lambda r: r.margin)[:10]
    for r in tight:
        lines.append(
            f"  {_fmt_margin(r.margin):>8s}  {r.perturbation:9s} {r.stage} | {r.test} ({r.tolerance}; error {_fmt(r.max_error)})"
        )
    lines.append("")
    lines.append("Exact-match tests whose result changes under a perturbation: " + ("none" if not flips else ""))
    lines += [f"  {f}" for f in flips]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--device", choices=["cpu", "cuda"], default="cpu", help="add the cuda perturbation (default: cpu only)"
    )
    parser.add_argument("--stages", nargs="+", help="only these stages (default: every written stage)")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    perts = perturbations(args.device)
    stages = [get_stage(s) for s in args.stages] if args.stages else all_stages()
    all_rows, all_flips = [], []
    print(
        f"torch {torch.__version__}, Python {sys.version.split()[0]}, CUDA {torch.version.cuda} "
        f"({torch.cuda.get_device_name() if args.device == 'cuda' else 'not used'}), "
        f"TF32 matmul {torch.backends.cuda.matmul.allow_tf32}, perturbations: {', '.join(p.name for p in perts)}"
    )
    for stage in stages:
        start = time.monotonic()
        rows, flips, source = measure_stage(stage, perts)
        print(
            f"{stage.id}: {len({r.test for r in rows})} tolerance tests, {source}, {time.monotonic() - start:.1f} s",
            file=sys.stderr,
        )
        all_rows += rows
        all_flips += flips
    print(render(all_rows, all_flips, args.markdown))
    failing = [r for r in all_rows if r.margin is not None and r.margin < 1]
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
