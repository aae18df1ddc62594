"""07's real run on a CPU against the course's best n-gram, on the same split.

    python benchmarks/real_run_cpu.py                         # runs 07's notebook (run_notebook.py), then records
    python benchmarks/real_run_cpu.py --records run.json      # records a run_notebook.py --json run already made

Steps:

1. the n-gram models of the course (stage 01's ``NGramLM``, ``alpha = 0.01`` as stage 09 uses)
   of orders 1 to 7, counted on the whole training split of 07's real run (Shakespeare's
   characters, the first 90 %) and scored on its validation split: the best is the baseline;
2. 07's reference notebook, run top to bottom by ``benchmarks/run_notebook.py`` with
   ``GPTCOURSE_THREADS`` torch threads (``--threads``, default 1), its real-run cell's CPU
   time (this process, all its threads) and wall time, and what the cell printed: the kept
   step and the exact validation loss (every window of the validation split);
3. ``benchmarks/RESULTS_real_run.json`` (read by 07's ``claims.py``) and the section of
   ``benchmarks/RESULTS_training.md`` between its ``real-run`` markers.

On a machine shared with other work the wall time says little; the CPU time is what the
run itself needed. A 2-core laptop that gives torch both threads takes about CPU seconds / 2
of wall time (less where its cores are faster than this machine's, more where the two
threads do not halve the work).
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.measure import load_average, notebook_records_parser, write_section  # noqa: E402

RESULTS_JSON = ROOT / "benchmarks" / "RESULTS_real_run.json"
RESULTS_MD = ROOT / "benchmarks" / "RESULTS_training.md"
START, END = "<!-- real-run:start -->", "<!-- real-run:end -->"
REAL_RUN_CELL = "TOKENIZER = "
PRINTED = re.compile(
    r"kept the weights of step (?P<best_step>\d+) of (?P<steps>\d+): exact validation loss "
    r"(?P<exact_val_loss>[\d.]+) nats per token, (?P<bits_per_char>[\d.]+) bits per character"
)
PARAMETERS = re.compile(r"([\d,]+) parameters, (\w+) positions, on (\w+)")


def ngram_losses(orders=range(1, 8), alpha: float = 0.01) -> dict[int, float]:
    """The validation loss (nats per character) of each n-gram order on 07's split."""
    import torch

    from solutions.data import load_corpus
    from solutions.tokenisation import NGramLM, build_vocab, encode, train_val_split

    text = load_corpus("shakespeare", offline_ok=False)
    stoi, _ = build_vocab(text)
    train_data, val_data = train_val_split(torch.tensor(encode(text, stoi), dtype=torch.long))
    train_ids, val_ids = train_data.tolist(), val_data.tolist()
    return {n: math.log(NGramLM(n, len(stoi), alpha=alpha).fit(train_ids).perplexity(val_ids)) for n in orders}


def run_notebook(threads: int, records: Path) -> None:
    """Run 07's reference notebook with ``threads`` torch threads, its cells' records to ``records``."""
    env = dict(os.environ, GPTCOURSE_THREADS=str(threads))
    command = [sys.executable, str(ROOT / "benchmarks" / "run_notebook.py"), "07_gpt", "--json", str(records)]
    subprocess.run(command, env=env, check=True)


def real_run_cell(records: Path) -> dict:
    """The real-run cell's record, and the figures it printed."""
    cells = json.loads(records.read_text())["07_gpt"]
    cell = next(c for c in cells if c["first_line"].startswith(REAL_RUN_CELL))
    printed = PRINTED.search(cell["output"])
    if printed is None:
        raise SystemExit(f"{records}: the real-run cell printed no exact validation loss")
    size = PARAMETERS.search(cell["output"])
    figures = {key: float(value) for key, value in printed.groupdict().items()}
    return {
        "cpu_seconds": cell["cpu_seconds"],
        "wall_seconds": cell["seconds"],
        "parameters": int(size.group(1).replace(",", "")),
        "device": size.group(3),
        **figures,
        "notebook_cpu_seconds": round(sum(c["cpu_seconds"] for c in cells), 1),
    }


def machine() -> str:
    """The CPU's model name and count, torch's and Python's versions."""
    import torch

    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in line
        ),
        platform.processor() or "unknown CPU",
    )
    return f"{model}, {os.cpu_count()} CPUs, torch {torch.__version__}, Python {platform.python_version()}"


def markdown(results: dict) -> str:
    """The RESULTS_training.md section."""
    run, best = results["real_run"], results["best_ngram"]
    grams = ", ".join(f"{n}: {loss:.3f}" for n, loss in results["ngram_val_loss"].items())
    return "\n".join(
        [
            START,
            "## CPU: 07's real run against the best n-gram",
            "",
            f"Command: `{results['command']}`.",
            f"Machine: {results['machine']}; {results['threads']} torch thread(s). Load average (1/5/15 min)",
            f"before: {results['load_before']}; after: {results['load_after']} (the machine is shared with",
            "other developers: the CPU time is what the run needed, the wall time is not comparable).",
            "",
            "| model | validation loss (nats per character) | CPU time |",
            "|---|---|---|",
            f"| best n-gram: {best['order']}-gram, alpha 0.01, whole training split | {best['val_loss']:.3f} | "
            f"{results['ngram_cpu_seconds']:.0f} s for orders 1-7 |",
            f"| 07's real run, CPU branch ({run['parameters']:,} parameters), kept step {run['best_step']:.0f} "
            f"of {run['steps']:.0f} | **{run['exact_val_loss']:.3f}** (exact, every window) | "
            f"{run['cpu_seconds']:.0f} s ({run['wall_seconds']:.0f} s wall here) |",
            "",
            f"The GPT is **{results['margin']:.3f} nat** below the best n-gram. Its cell needed "
            f"{run['cpu_seconds']:.0f} CPU seconds: on a 2-core laptop that gives torch both threads, about "
            f"{results['laptop_minutes']:.1f} minutes (CPU seconds / 2, an estimate: not timed on a laptop).",
            f"The whole notebook, every cell: {run['notebook_cpu_seconds']:.0f} CPU seconds.",
            "",
            f"- n-grams on 07's split (order: loss): {grams}.",
            "- Split: Tiny Shakespeare's characters, first 90 % for training, last 10 % for validation",
            "  (`train_val_split`, as 07's real run and 09 split it).",
            "- The GPT's loss is 07's `exact_loss`: the validation split cut into windows of the block",
            "  size, every character but each window's first predicted once; the n-gram's is the log",
            "  of its perplexity over every position with a full context.",
            END,
        ]
    )


def record(results: dict) -> None:
    """Write the JSON and replace (or add) the Markdown section."""
    RESULTS_JSON.write_text(json.dumps(results, indent=1) + "\n")
    write_section(RESULTS_MD, START, END, markdown(results))


def main(argv: list[str] | None = None) -> int:
    args = notebook_records_parser(__doc__.split("\n")[0], "07").parse_args(argv)
    import time

    load_before = load_average()
    start = time.process_time()
    losses = ngram_losses()
    ngram_cpu = time.process_time() - start
    if args.records:
        records = Path(args.records)
        command = (
            f"GPTCOURSE_THREADS={args.threads} python benchmarks/run_notebook.py 07_gpt --json $RUN/{records.name}; "
            f"python benchmarks/real_run_cpu.py --records $RUN/{records.name}"
        )
    else:
        records = Path(tempfile.mkdtemp(prefix="real-run-")) / "records.json"
        run_notebook(args.threads, records)
        command = f"python benchmarks/real_run_cpu.py --threads {args.threads}"
    run = real_run_cell(records)
    order = min(losses, key=losses.get)
    results = {
        "command": command,
        "machine": machine(),
        "threads": args.threads,
        "load_before": args.load_before or load_before,
        "load_after": args.load_after or load_average(),
        "ngram_val_loss": {str(n): round(loss, 4) for n, loss in losses.items()},
        "ngram_cpu_seconds": round(ngram_cpu, 1),
        "best_ngram": {"order": order, "val_loss": round(losses[order], 4)},
        "real_run": run,
        "margin": round(losses[order] - run["exact_val_loss"], 4),
        "laptop_minutes": round(run["cpu_seconds"] / 2 / 60, 2),
    }
    record(results)
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
