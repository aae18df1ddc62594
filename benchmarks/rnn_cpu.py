"""09's CPU figures: the short LSTM run of section 6 and the comparison of section 8.

    python benchmarks/rnn_cpu.py                         # runs 09's notebook (run_notebook.py), then records
    python benchmarks/rnn_cpu.py --records run.json      # records a run_notebook.py --json run already made

09's reference notebook runs top to bottom under ``benchmarks/run_notebook.py`` with
``GPTCOURSE_THREADS`` torch threads (``--threads``, default 1). From its records: the CPU time
of section 6's 400-step run (what the cell printed), and each model's line of the comparison
(its size, the CPU seconds of training its budget bought, its validation loss over the whole
split). They go to ``benchmarks/RESULTS_rnn.json`` (read by 09's ``claims.py``) and to the
section of ``benchmarks/RESULTS_training.md`` between its ``rnn`` markers.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from measure import load_average, notebook_records_parser, write_section  # noqa: E402
from real_run_cpu import machine  # noqa: E402

RESULTS_JSON = ROOT / "benchmarks" / "RESULTS_rnn.json"
RESULTS_MD = ROOT / "benchmarks" / "RESULTS_training.md"
START, END = "<!-- rnn:start -->", "<!-- rnn:end -->"
SHORT_RUN = re.compile(r"(\d+) steps in ([\d.]+) s of CPU")
MODEL_LINE = re.compile(
    r"^(?P<name>\S+)\s+(?P<params>[\d,]+) parameters\s+(?P<seconds>[\d.]+) s of CPU\s+validation loss (?P<loss>[\d.]+)",
    re.MULTILINE,
)


def figures(records: Path) -> dict:
    """Section 6's short run and section 8's models, from the cells' records."""
    cells = json.loads(records.read_text())["09_rnn"]
    short = next(SHORT_RUN.search(c["output"]) for c in cells if SHORT_RUN.search(c["output"]))
    comparison = next(c for c in cells if c["first_line"].startswith("text = load_corpus"))
    models = {
        m["name"]: {
            "params": int(m["params"].replace(",", "")),
            "cpu_seconds": float(m["seconds"]),
            "val_loss": float(m["loss"]),
        }
        for m in MODEL_LINE.finditer(comparison["output"])
    }
    if not models:
        raise SystemExit(f"{records}: the comparison cell printed no model lines")
    return {
        "short_run": {"steps": int(short.group(1)), "cpu_seconds": float(short.group(2))},
        "comparison": models,
        "comparison_cell": {"cpu_seconds": comparison["cpu_seconds"], "wall_seconds": comparison["seconds"]},
    }


def markdown(results: dict) -> str:
    """The RESULTS_training.md section."""
    rows = [
        f"| {name} | {m['params']:,} | {m['cpu_seconds']:.1f} s | {m['val_loss']:.3f} |"
        for name, m in results["comparison"].items()
    ]
    short, cell = results["short_run"], results["comparison_cell"]
    return "\n".join(
        [
            START,
            "## CPU: 09's recurrent runs",
            "",
            f"Command: `{results['command']}`.",
            f"Machine: {results['machine']}; {results['threads']} torch thread(s). Load average (1/5/15 min)",
            f"before: {results['load_before']}; after: {results['load_after']} (shared with other developers:",
            "the budgets and times are CPU time, which other work does not spend).",
            "",
            f"Section 6, the LSTM's short run: {short['steps']} steps in {short['cpu_seconds']:.1f} s of CPU.",
            "",
            "Section 8, each model's training budget and its validation loss over the whole split",
            "(nats per character; the n-grams' time is their counting):",
            "",
            "| model | parameters (n-gram: stored counts) | training (CPU) | validation loss |",
            "|---|---|---|---|",
            *rows,
            "",
            f"The comparison cell, with its evaluations: {cell['cpu_seconds']:.0f} s of CPU ({cell['wall_seconds']:.0f} s wall here).",
            END,
        ]
    )


def record(results: dict) -> None:
    """Write the JSON and replace (or add) the Markdown section."""
    RESULTS_JSON.write_text(json.dumps(results, indent=1) + "\n")
    write_section(RESULTS_MD, START, END, markdown(results))


def main(argv: list[str] | None = None) -> int:
    args = notebook_records_parser(__doc__.split("\n")[0], "09").parse_args(argv)
    load_before = load_average()
    if args.records:
        records = Path(args.records)
        command = (
            f"GPTCOURSE_THREADS={args.threads} python benchmarks/run_notebook.py 09_rnn --json $RUN/{records.name}; "
            f"python benchmarks/rnn_cpu.py --records $RUN/{records.name}"
        )
    else:
        records = Path(tempfile.mkdtemp(prefix="rnn-")) / "records.json"
        env = dict(os.environ, GPTCOURSE_THREADS=str(args.threads))
        run_notebook = [sys.executable, str(ROOT / "benchmarks" / "run_notebook.py"), "09_rnn", "--json", str(records)]
        subprocess.run(run_notebook, env=env, check=True)
        command = f"python benchmarks/rnn_cpu.py --threads {args.threads}"
    results = {
        "command": command,
        "machine": machine(),
        "threads": args.threads,
        "load_before": args.load_before or load_before,
        "load_after": args.load_after or load_average(),
        **figures(records),
    }
    record(results)
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
