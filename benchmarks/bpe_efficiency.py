"""Stage 02's speed question as the grader sees it: each learner's time over the calibration's.

The grader judges ``efficiency`` on the CPU time the student's process used for the test
(read from ``/proc`` by the parent) over the calibration workload's CPU time, with a
budget of ``K`` (``assignments/02_bpe/hidden.py``). This script grades the efficiency
tests of the reference, of every catalogued alternative and of every catalogued mistake
of ``efficiency`` and ``train_bpe`` (correct-but-slow learners, and fast learners with
a mistake) through the engine, ``--rounds`` times, and records both ratios: CPU time
(what is graded) and wall time (what the grader used before, which a busy machine
inflates), with the machine's load while it ran. The tests run here without their CPU
budget (``Case.budget``: grading stops a test at 20 calibration workloads), so that the
slow learners' ratios are measured to the end (or to the test's time limit).

    .venv/bin/python benchmarks/bpe_efficiency.py            # writes benchmarks/RESULTS_bpe_efficiency.json
    .venv/bin/python benchmarks/bpe_efficiency.py --rounds 1 --only reference

The notebook's sentence on the ratios (02, "How this is graded") is claimed from the
recorded file (``assignments/02_bpe/claims.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from autograder.authoring.catalogue import catalogue  # noqa: E402
from autograder.authoring.variants import write_variant  # noqa: E402
from autograder.build.fixtures import stage_tests  # noqa: E402
from autograder.build.notebooks import make_notebook, write_notebook  # noqa: E402
from autograder.course import get_stage  # noqa: E402
from autograder.engine.runner import Limits, run_submission  # noqa: E402
from autograder.kit.runtime import calibrate, calibration_workload  # noqa: E402

RESULTS = Path(__file__).with_name("RESULTS_bpe_efficiency.json")


def submissions(folder: Path) -> dict[str, tuple[str, Path]]:
    """name -> (kind, notebook): the reference, the alternatives, the mistakes that matter here."""
    stage = get_stage("02_bpe")
    reference = folder / "reference.ipynb"
    write_notebook(make_notebook(stage, "reference"), reference)
    out = {"reference": ("reference", reference)}
    mistakes, alternatives = catalogue(stage)
    for variant in alternatives:
        out[variant.slug] = ("alternative", write_variant(stage, variant, folder))
    for variant in mistakes:
        if variant.qid == "efficiency":
            out[variant.slug] = ("slow learner", write_variant(stage, variant, folder))
        elif variant.qid == "train_bpe":
            out[variant.slug] = ("train_bpe mistake", write_variant(stage, variant, folder))
    return out


def measure(path: Path, keys: list[str], tests) -> dict[str, dict[str, float]]:
    """One grading of the timed tests: per test, the CPU and wall seconds and both ratios."""
    outcome = run_submission(path, tests, Limits(), keys=keys)
    cpu_calibration = calibrate()
    best_wall = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        calibration_workload()
        best_wall = min(best_wall, time.perf_counter() - start)
    out = {}
    for key in keys:
        if key in outcome.errors or key not in outcome.cpu_seconds:
            out[key] = {"error": outcome.errors.get(key, "no CPU time")}
            continue
        cpu, wall = outcome.cpu_seconds[key], outcome.seconds[key]
        out[key] = {
            "cpu_seconds": round(cpu, 3),
            "wall_seconds": round(wall, 3),
            "cpu_ratio": round(cpu / cpu_calibration, 2),
            "wall_ratio": round(wall / best_wall, 2),
        }
    return out


def summarise(records: dict[str, dict]) -> dict[str, float]:
    """The range of CPU ratios of the fast learners (reference, alternatives, train_bpe
    mistakes), and the smallest of the slow ones (a slow one cut off at its time limit
    counts as over every ratio here: it is left out of the minimum)."""
    fast, slow, cut_off = [], [], 0
    for record in records.values():
        ratios = [t["cpu_ratio"] for run in record["runs"] for t in run["tests"].values() if "cpu_ratio" in t]
        if record["kind"] == "slow learner":
            slow += ratios
            cut_off += sum("error" in t for run in record["runs"] for t in run["tests"].values())
        else:
            fast += ratios
    return {
        "fast_min": min(fast, default=float("nan")),
        "fast_max": max(fast, default=float("nan")),
        "slow_min": min(slow, default=float("nan")),
        "slow_cut_off": cut_off,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="gradings of each submission")
    parser.add_argument("--only", nargs="*", help="names of the submissions to measure")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    graded = stage_tests(get_stage("02_bpe"))
    tests = dataclasses.replace(graded, cases=tuple(dataclasses.replace(c, budget=None) for c in graded.cases))
    keys = [c.key for c in tests.cases if c.timed]
    records: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (kind, path) in submissions(Path(tmp)).items():
            if args.only and name not in args.only:
                continue
            runs = []
            for _ in range(args.rounds):
                load = os.getloadavg()[0]
                runs.append({"load": round(load, 1), "tests": measure(path, keys, tests)})
            records[name] = {"kind": kind, "runs": runs}
            ratios = [t.get("cpu_ratio") for r in runs for t in r["tests"].values()]
            walls = [t.get("wall_ratio") for r in runs for t in r["tests"].values()]
            print(f"{kind:18} {name:60} CPU ratio {ratios}  wall ratio {walls}", flush=True)
    doc = {
        "command": "python benchmarks/bpe_efficiency.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": f"{os.cpu_count()} CPUs",
        "date": time.strftime("%Y-%m-%d"),
        "summary": summarise(records),
        "submissions": records,
    }
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"summary (CPU ratios): {doc['summary']}")
    print(f"-> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
