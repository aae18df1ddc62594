"""Stage 02's tokenizers and stage 03's position schemes in one model, compared in bits per character.

    .venv/bin/python benchmarks/positions_tokenizers.py            # 8 runs of the cpu preset: about 8-10 minutes on 2 quiet cores
    .venv/bin/python benchmarks/positions_tokenizers.py --steps 60 --chars 100000 --no-write   # a quick look

Trains ``gptcourse train``'s model (``training.loop.run``, the ``cpu`` preset: 4 layers x 4
heads x 128, a context of 64 tokens, 900 steps of 24 windows, keep the best) on Tiny
Shakespeare once per pair of

- tokenizer: ``char`` (stage 01; 65 symbols) or ``byte-bpe`` (stage 02's byte-level BPE, 256
  merges learned on the training text: 512 symbols, about 1.8 characters a token);
- positions: ``learned``, ``sinusoidal``, ``rope`` or ``none`` (stage 03).

Every run is judged by its kept checkpoint's exact validation loss, converted to **bits
per character** of the validation text (``Corpus.bits_per_char``): a loss per token is in a
different unit for each tokenizer, the cost of the text in bits is not. The BPE model sees
about twice as many characters per window and per step (its 64 tokens are about 128
characters), for a larger embedding and head (512 symbols): the comparison is of the
same training budget in steps and tokens, not in characters.

Writes ``benchmarks/positions_tokenizers.png`` (bits per character against training
time, one line per run) and the section between the markers of
``benchmarks/RESULTS_training.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.measure import load_average, write_section  # noqa: E402
from training import loop  # noqa: E402
from training.data import load_corpus, prepare  # noqa: E402
from training.model import POSITIONS  # noqa: E402
from training.presets import CPU  # noqa: E402

TOKENIZERS = ("char", "byte-bpe")
MERGES = 256
START, END = "<!-- positions-tokenizers:start -->", "<!-- positions-tokenizers:end -->"


def one_run(corpus, positions: str, steps: int, threads: int, eval_iters: int = CPU.eval_iters) -> dict:
    preset = CPU.replace(positions=positions, steps=steps, threads=threads, eval_interval=max(1, steps // 6))
    preset = preset.replace(eval_iters=eval_iters)
    preset = preset.replace(warmup=min(preset.warmup, steps))
    at_start, cpu_start = load_average(), time.process_time()
    result = loop.run(preset, corpus, torch.device("cpu"), None, progress=False, log=lambda line: None)
    cpu_seconds = time.process_time() - cpu_start
    h = result.history
    return {
        "tokenizer": corpus.tokenizer.kind,
        "positions": positions,
        "load": at_start,
        "seconds": result.seconds,
        "cpu_seconds": cpu_seconds,
        "best_step": result.best_step,
        "best_loss": result.best_val,
        "bpc": corpus.bits_per_char(result.best_val),
        "curve": [(t, corpus.bits_per_char(v)) for t, v in zip(h["time"], h["val_loss"])],
        "vocab": corpus.vocab_size,
        "tokens_per_char": len(corpus.val) / corpus.val_chars,
    }


def plot(runs: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    styles = {"char": "-", "byte-bpe": "--"}
    for r in runs:
        color = f"C{POSITIONS.index(r['positions'])}"
        t, bpc = zip(*r["curve"])
        ax.plot(t, bpc, styles[r["tokenizer"]], color=color, marker=".", label=f"{r['tokenizer']}, {r['positions']}")
    ax.set_xlabel("training time (s)")
    ax.set_ylabel("exact validation loss (bits per character)")
    ax.set_ylim(top=min(4.0, ax.get_ylim()[1]))
    ax.set_title("cpu preset: tokenizers (line style) and positions (colour)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def report(runs: list[dict], command: str, loads: tuple[str, str], threads: int, steps: int) -> str:
    rows = [
        f"| {r['tokenizer']} | {r['positions']} | {r['vocab']} | {r['tokens_per_char']:.3f} | {r['best_step']} "
        f"| {r['best_loss']:.4f} | **{r['bpc']:.3f}** | {r['seconds']:.0f} s | {r['cpu_seconds']:.0f} s | {r['load']} |"
        for r in sorted(runs, key=lambda r: r["bpc"])
    ]
    cpu = platform.processor() or platform.machine()
    return f"""{START}
## Tokenizers and positions, in bits per character (CPU)

Command: `{command}`; {steps} steps of the `cpu` preset per run (4x4x128, a context of 64
tokens, batch 24, bf16 autocast where the CPU has it), {threads} thread(s), on {cpu} with
{os.cpu_count()} cores, torch {torch.__version__}. Load average before: {loads[0]}; after: {loads[1]}
(other developers share the machine: wall times are slowed by their work, losses are not; the CPU
time is what the run itself used).

| tokenizer | positions | vocabulary | tokens per character | kept step | exact val loss (nats/token) | bits per character | training time (wall) | CPU time (training and evaluations) | load at start |
|---|---|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

![bits per character against training time](positions_tokenizers.png)
{END}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=CPU.steps)
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (default 1: CPU time is then the run's own)"
    )
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    parser.add_argument(
        "--eval-iters", type=int, default=CPU.eval_iters, help="batches in each estimate of the training loss"
    )
    parser.add_argument(
        "--chars", type=int, default=None, help="use only the first CHARS characters of the corpus (a quick look)"
    )
    args = parser.parse_args(argv)
    loads = [load_average()]
    runs = []
    text = load_corpus("shakespeare")
    if args.chars is not None:
        if args.chars < 1000:
            parser.error("--chars must be at least 1000 (the split needs a validation text)")
        text = text[: args.chars]
    for tokenizer in TOKENIZERS:
        corpus = prepare("shakespeare", tokenizer, MERGES, text=text)
        if tokenizer == "char" and args.chars is None and corpus.vocab_size != 65:
            raise SystemExit("this benchmark needs Tiny Shakespeare (set $GPTCOURSE_SHAKESPEARE)")
        for positions in POSITIONS:
            start = time.perf_counter()
            runs.append(one_run(corpus, positions, args.steps, args.threads, args.eval_iters))
            r = runs[-1]
            print(
                f"{tokenizer:8s} {positions:10s} best {r['best_loss']:.4f} at step {r['best_step']}, "
                f"{r['bpc']:.3f} bits/char ({time.perf_counter() - start:.0f} s, load {r['load']})",
                flush=True,
            )
    loads.append(load_average())
    command = "python benchmarks/positions_tokenizers.py" + (
        f" --steps {args.steps}" if args.steps != CPU.steps else ""
    )
    command += f" --chars {args.chars}" if args.chars is not None else ""
    command += f" --eval-iters {args.eval_iters}" if args.eval_iters != CPU.eval_iters else ""
    section = report(runs, command, tuple(loads), args.threads, args.steps)
    print(section)
    if not args.no_write:
        plot(runs, ROOT / "benchmarks" / "positions_tokenizers.png")
        write_section(ROOT / "benchmarks" / "RESULTS_training.md", START, END, section.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
