"""The report of ``benchmarks/gpu_check.sh``: its figures as Markdown, for ``benchmarks/RESULTS_training.md``.

Reads what the check's steps wrote (the side-by-side JSON, the notebooks' cell records, the
tests' JUnit XML, the variant's summary) and prints one section, beginning with each step's
outcome; what a failed or cut step did not write is said, not guessed. The T4 estimate of the 07
real run's CUDA branch is the H100 time of its training cell times 10.5, the ratio of the
cards' memory bandwidths (3.35 TB/s against 320 GB/s; their float32 arithmetic differs by
8.3x, 67 against 8.1 TFLOPS, so the bandwidth ratio is the cautious one).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import gpu_side_by_side  # noqa: E402

H100_TO_T4 = 10.5  # memory bandwidth, H100 SXM 3.35 TB/s / T4 0.32 TB/s


def notebook_lines(path: Path) -> list[str]:
    """A line per notebook: its cells, its time, its training cells' times and results."""
    if not path.exists():
        return [f"- {path.name}: no record (its step failed or was cut; see check.log)"]
    lines = []
    for stage, cells in json.loads(path.read_text()).items():
        total = sum(c["seconds"] for c in cells)
        checks = sum(1 for c in cells if "check" in c["tags"])
        lines.append(f"- `{stage}`: {len(cells)} code cells in {total:.0f} s, {checks} check cells passed, no error")
        for c in cells:
            if "train" in c["tags"]:
                said = [line for line in c["output"].splitlines() if re.search(r"kept the weights|exact|loss", line)]
                estimate = f"; T4 estimate {c['seconds'] * H100_TO_T4 / 60:.1f} min" if stage == "07_gpt" else ""
                lines.append(f"  - training cell {c['cell']}: {c['seconds']:.1f} s{estimate}; {' / '.join(said[-2:])}")
    return lines


def real_run_07(path: Path) -> dict | None:
    """07's real run as its training cell reported it: seconds, kept step, exact loss, bits per character.

    Example:
        >>> import tempfile
        >>> said = "0.9 minutes; kept the weights of step 800 of 800: exact validation loss 1.628 nats per "
        >>> said += "token, 2.348 bits per character"
        >>> cell = {"cell": 35, "tags": "gptcourse:train", "seconds": 55.9, "output": said}
        >>> record = Path(tempfile.mkdtemp()) / "nb.json"
        >>> _ = record.write_text(json.dumps({"07_gpt": [cell]}))
        >>> real_run_07(record)["exact_val_loss"]
        1.628
    """
    if not path.exists():
        return None
    for cell in json.loads(path.read_text()).get("07_gpt", []):
        said = re.search(
            r"kept the weights of step (\d+) of (\d+): exact validation loss ([\d.]+) nats per token, "
            r"([\d.]+) bits per character",
            cell["output"],
        )
        if "train" in cell["tags"] and said:
            step, steps, loss, bits = said.groups()
            return {
                "seconds": cell["seconds"],
                "t4_minutes_estimate": cell["seconds"] * H100_TO_T4 / 60,
                "best_step": int(step),
                "steps": int(steps),
                "exact_val_loss": float(loss),
                "bits_per_char": float(bits),
            }
    return None


def tests_line(path: Path) -> str:
    if not path.exists():
        return "- gpu-marked tests: no report"
    suite = ET.parse(path).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    a = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
    passed = a["tests"] - a["failures"] - a["errors"] - a["skipped"]
    return f"- gpu-marked tests: {passed} passed, {a['failures'] + a['errors']} failed, {a['skipped']} skipped"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--side", required=True)
    parser.add_argument("--same", required=True, help="identical or DIFFERENT: gptcourse sample's greedy texts")
    parser.add_argument("--notebooks", nargs="+", default=[])
    parser.add_argument("--tests", required=True)
    parser.add_argument("--variants", nargs="*", default=[], help="the folders of the variant runs")
    parser.add_argument(
        "--candidate",
        nargs=2,
        action="append",
        default=[],
        metavar=("LABEL", "RECORDS"),
        help="07's notebook run with another recipe for its real run: what was changed, and its cell records",
    )
    parser.add_argument("--outcomes", nargs="*", default=[], help="each step's outcome, one argument each")
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--command", required=True)
    parser.add_argument("--json", help="also write the figures here, for the claims that cite them")
    args = parser.parse_args(argv)
    out = ["## The GPU check", "", "Steps:", *(f"- {outcome}" for outcome in args.outcomes), ""]
    side_path = Path(args.side)
    if side_path.exists():
        side = json.loads(side_path.read_text())
        machine = side["machine"]
        out += [side_path.with_suffix(".md").read_text().rstrip(), ""]
    else:
        machine = gpu_side_by_side.machine(cpu=not torch.cuda.is_available())
        out += ["The gpu preset and nanoGPT side by side: no record (its step failed or was cut; see check.log).", ""]
    for folder in map(Path, args.variants):
        options = (folder / "options.txt").read_text().strip()
        v = json.loads((folder / "summary.json").read_text())
        out.append(
            f"- `--preset gpu {options}`: kept step {v['best_step']} of {v['steps']}, exact validation loss "
            f"{v['best_val_loss']:.4f}, {v['seconds']:.1f} s of training, {v['tokens_per_second']:,.0f} tokens/s."
        )
    if args.variants:
        out.append("")
    out.append(f"`gptcourse sample`, greedy, with and without the KV cache: the texts are {args.same}.")
    out.append("")
    out.append("Notebooks, top to bottom as plain Python on the card (benchmarks/run_notebook.py):")
    for path in args.notebooks:
        out += notebook_lines(Path(path))
    candidates = [{"recipe": label, **(real_run_07(Path(path)) or {})} for label, path in args.candidate]
    if candidates:
        out.append("- 07's real run with other recipes (the whole notebook run again):")
    for c in candidates:
        out.append(
            f"  - {c['recipe']}: training cell {c['seconds']:.1f} s (T4 estimate {c['t4_minutes_estimate']:.1f} min); "
            f"kept step {c['best_step']} of {c['steps']}: exact validation loss {c['exact_val_loss']:.3f} nats "
            f"per token, {c['bits_per_char']:.3f} bits per character"
        )
    out.append(tests_line(Path(args.tests)))
    out.append("")
    m = machine
    out.append(
        f"All of it: `{args.command}`, {args.seconds:.0f} s on {m['card']} (torch {m['torch']}, CUDA {m['cuda']})."
    )
    print("\n".join(out))
    if args.json:
        figures = {"machine": machine, "command": args.command, "seconds": args.seconds, "outcomes": args.outcomes}
        figures["side_by_side"] = side if side_path.exists() else None
        figures["real_run_07"] = real_run_07(Path(args.notebooks[0])) if args.notebooks else None
        figures["real_run_07_candidates"] = candidates
        figures["same_greedy_text"] = args.same
        Path(args.json).write_text(json.dumps(figures, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
