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

Needs only torch and numpy (no nbformat, otter or nbgrader): the measurement is
``autograder/authoring/margins.py``'s (the rule "tolerances keep a margin" runs it too), and
it runs the reference notebook's code in this process. Expected values come from
``release/fixtures`` when present, else from the baseline run itself (a fixture is exactly
that output).
"""

import argparse
import math
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder.authoring.margins import Flip, Row, measure_stage, perturbations  # noqa: E402
from autograder.course import all_stages, get_stage  # noqa: E402

FIXTURES = ROOT / "release" / "fixtures"


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


def render(rows: list[Row], flips: list[Flip], markdown: bool) -> str:
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
        rows, flips, source = measure_stage(stage, perts, FIXTURES)
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
