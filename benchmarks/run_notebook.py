"""Run a stage's reference notebook top to bottom as plain Python: no Jupyter needed.

    python benchmarks/run_notebook.py 07_gpt                      # the real sizes, on the best device
    python benchmarks/run_notebook.py 07_gpt 09_rnn --quick       # GPTCOURSE_QUICK=1: tiny runs
    python benchmarks/run_notebook.py 07_gpt --set TOKENIZER='"byte-bpe"' --set POSITIONS='"rope"'
    python benchmarks/run_notebook.py 07_gpt --json out.json      # a record of every cell
    python benchmarks/run_notebook.py 07_gpt --replace "steps=800," "steps=1200,"   # another recipe

The notebook is built as ``gptcourse build`` builds the reference notebook (the reference
solution in every stub cell) and its code cells run in order in one namespace, as a
kernel would run them: the harness, the given code, the solutions, every check cell
(whose public tests must pass), the demonstrations and the training runs. Only the
hand-in cell (``package_submission()``, which needs the saved notebook) is left out.
Figures go to the Agg backend and are closed; the cells run in ``--workdir`` (a new temporary
folder by default), where the files they write land. ``--set NAME=VALUE`` replaces the line
``NAME = ...`` of the cell that assigns it (the options of 07's real run); ``--replace OLD NEW``
replaces the text OLD, wherever it stands, by NEW (a candidate recipe for a run, tried without
editing the notebook; OLD found nowhere stops the run).

Each cell's wall time and CPU time (this process's, all its threads: on a machine shared with
other work, the CPU time is what the cell itself needed), and its printed output, are shown; a cell that raises, or a check
cell whose public tests do not pass, stops the run with exit status 1. This is how the
GPU check (``benchmarks/gpu_check.sh``) runs 07-10 on CUDA, and how the figures of the
notebooks' real runs are measured on a CPU. The cells are read and run by
``autograder/authoring/notebook_run.py``, as check-stage's rule "reference notebook runs"
reads and runs them (at quick sizes, offline, going on after a failure).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.authoring.notebook_run import (  # noqa: E402
    cell_tags,
    first_line,
    reference_code_cells,
    run_cell,
    source_of,
)
from autograder.course import get_stage  # noqa: E402


def apply_settings(source: str, settings: dict[str, str]) -> tuple[str, set[str]]:
    """``source`` with each line ``NAME = ...`` (at the start of a line) replaced by ``NAME = VALUE``."""
    done = set()
    for name, value in settings.items():
        pattern = re.compile(rf"^{re.escape(name)} = .*$", re.MULTILINE)
        if pattern.search(source):
            source = pattern.sub(f"{name} = {value}", source, count=1)
            done.add(name)
    return source, done


def apply_replacements(source: str, replacements: list[tuple[str, str]]) -> str:
    """``source`` with every OLD of ``replacements`` replaced by its NEW.

    Example:
        >>> apply_replacements("settings = dict(steps=800, lr=1e-3)", [("steps=800,", "steps=1200,")])
        'settings = dict(steps=1200, lr=1e-3)'
    """
    for old, new in replacements:
        source = source.replace(old, new)
    return source


def run(stage_id: str, settings: dict[str, str], replacements: list[tuple[str, str]] = ()) -> list[dict]:
    """Run the stage's cells; returns a record per cell. Raises ``SystemExit(1)`` at a failure,
    ``SystemExit(2)`` when a setting or a replacement finds nothing to change."""
    namespace: dict = {"__name__": "__main__"}
    records, applied = [], set()
    cells = reference_code_cells(get_stage(stage_id))
    unknown = {old for old, _ in replacements} - {old for c in cells for old, _ in replacements if old in source_of(c)}
    if unknown:
        print(f"--replace: no cell of {stage_id} holds {', '.join(map(repr, sorted(unknown)))}", file=sys.stderr)
        raise SystemExit(2)
    for index, cell in enumerate(cells):
        source, done = apply_settings(source_of(cell), settings)
        applied |= done
        source = apply_replacements(source, replacements)
        print(f"--- {stage_id} cell {index} [{cell_tags(cell)}] {first_line(source)}", flush=True)
        ran = run_cell(stage_id, index, cell, source, namespace, out=sys.stdout)
        records.append(ran.record())
        print(f"    ({ran.seconds:.1f} s, {ran.cpu_seconds:.1f} s of CPU)", flush=True)
        if ran.error:
            print(ran.error, file=sys.stderr)
            raise SystemExit(1)
    missing = set(settings) - applied
    if missing:
        print(f"--set: no cell assigns {', '.join(sorted(missing))}", file=sys.stderr)
        raise SystemExit(2)
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("stages", nargs="+", help="stage ids, e.g. 07_gpt")
    parser.add_argument("--quick", action="store_true", help="GPTCOURSE_QUICK=1: the notebooks' tiny sizes")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="replace NAME = ... lines")
    parser.add_argument(
        "--replace", nargs=2, action="append", default=[], metavar=("OLD", "NEW"), help="replace the text OLD by NEW"
    )
    parser.add_argument("--json", help="write the cells' records here")
    parser.add_argument("--workdir", help="the folder the cells run in (default: a new temporary one)")
    args = parser.parse_args(argv)
    json_path = Path(args.json).resolve() if args.json else None
    os.chdir(args.workdir or tempfile.mkdtemp(prefix="run-notebook-"))
    if args.quick:
        os.environ["GPTCOURSE_QUICK"] = "1"
    settings = dict(item.split("=", 1) for item in args.set)
    results = {}
    for stage_id in args.stages:
        start = time.perf_counter()
        results[stage_id] = run(stage_id, settings, [tuple(pair) for pair in args.replace])
        print(f"=== {stage_id}: {len(results[stage_id])} cells in {time.perf_counter() - start:.1f} s", flush=True)
    if json_path:
        json_path.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
