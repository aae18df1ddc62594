"""The CPU preset against nanoGPT's CPU recipe, side by side in one run; and the KV cache.

    .venv/bin/python benchmarks/train_vs_nanogpt.py              # about 3 minutes on 2 quiet cores
    .venv/bin/python benchmarks/train_vs_nanogpt.py --repeats 2  # ABBA order; the fastest of each compared

Both runs train on the same Tiny Shakespeare character ids (the first 90 % for
training, the last 10 % held out) on the same machine, one after the other in one
process. One judge scores both: the exact validation loss over the whole held-out split
(non-overlapping windows of the model's 64-token block, float32, see
``training.evaluate.full_loss``), taken every ``--probe-every`` steps; the judge's time
is not counted for either run. Each run's own evaluations and checkpoints (nanoGPT's
every 250 iterations, the preset's) are counted: the times are those a user waits.

Reported per run: the time to the first judged point with validation loss <= 1.88,
the whole run's time, its final validation loss and its training tokens per second
(training tokens / the run's time). Other work on the machine only slows a run down, so
the fastest run of each is the one compared. Then the KV cache: 500 new tokens, greedy, with
:func:`solutions.generation.generate_cached` and with :func:`solutions.generation.generate`.

The results replace the CPU section of ``benchmarks/RESULTS_training.md`` (between
its markers); the GPU section is left alone.
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

from benchmarks import nanogpt_baseline  # noqa: E402
from solutions.generation import generate, generate_cached  # noqa: E402
from training import loop  # noqa: E402
from training.data import prepare  # noqa: E402
from training.evaluate import full_loss  # noqa: E402
from training.generate import generate_fast  # noqa: E402
from training.model import TrainConfig, TrainGPT  # noqa: E402
from training.presets import CPU  # noqa: E402

TARGET = 1.88
START, END = "<!-- cpu-benchmark:start -->", "<!-- cpu-benchmark:end -->"


def judged_run(name: str, train_fn, val: torch.Tensor, block_size: int) -> dict:
    """Time ``train_fn(probe) -> training tokens``, the probe's own time excluded.

    The probe records ``(step, seconds so far, exact validation loss)``.
    """
    points: list[tuple[int, float, float]] = []
    clock = {"start": time.perf_counter(), "excluded": 0.0}

    def probe(step: int, model: torch.nn.Module) -> None:
        t = time.perf_counter()
        seconds = t - clock["start"] - clock["excluded"]
        loss = full_loss(model, val, block_size, batch_size=256)
        points.append((step, seconds, loss))
        print(f"  {name:8s} step {step:5d}  {seconds:6.1f} s  val {loss:.4f}", flush=True)
        clock["excluded"] += time.perf_counter() - t

    tokens = train_fn(probe)
    seconds = time.perf_counter() - clock["start"] - clock["excluded"]
    reached = next(((s, t) for s, t, v in points if v <= TARGET), None)
    return {
        "name": name,
        "points": points,
        "seconds": seconds,
        "tokens_per_second": tokens / seconds,
        "final_val": points[-1][2],
        "steps_to_target": reached[0] if reached else None,
        "time_to_target": reached[1] if reached else None,
    }


def run_baseline(corpus, probe_every: int, threads: int) -> dict:
    torch.set_num_threads(threads)
    recipe = nanogpt_baseline.Recipe()

    def train_fn(probe) -> int:
        out = nanogpt_baseline.run(
            corpus.train, corpus.val, corpus.vocab_size, recipe, probe=probe, probe_every=probe_every
        )
        return out["steps"] * recipe.batch_size * recipe.block_size

    return judged_run("nanoGPT", train_fn, corpus.val, recipe.block_size)


def run_preset(corpus, probe_every: int, threads: int) -> dict:
    preset = CPU.replace(threads=threads)  # as many as the baseline's (the loop would otherwise follow the thread rule)

    def train_fn(probe) -> int:
        r = loop.run(
            preset,
            corpus,
            torch.device("cpu"),
            None,
            progress=False,
            probe=probe,
            probe_every=probe_every,
            log=lambda line: None,
        )
        return r.tokens

    return judged_run("preset", train_fn, corpus.val, CPU.block_size)


def kv_cache_speedup(
    block_size: int,
    new_tokens: int = 500,
    repeats: int = 3,
    device: str = "cpu",
    n_layer: int = CPU.n_layer,
    n_head: int = CPU.n_head,
    n_embd: int = CPU.n_embd,
) -> dict:
    """Seconds for ``new_tokens`` greedy tokens from a one-token prompt: stage 08's reference
    ``generate`` and ``generate_cached``, and ``gptcourse sample``'s generation
    (``training.generate.generate_fast``) without and with its cache, on the same weights.

    The model has fresh weights (a forward pass takes as long whatever the weights'
    values); the best of ``repeats`` timings of each is kept, after one warm-up call (on
    CUDA it captures the graph). ``same_tokens`` says whether all four gave the same tokens
    (fresh weights give near-ties, which rounding may break either way, so it is reported,
    not required).
    """
    torch.manual_seed(0)
    config = TrainConfig(vocab_size=65, block_size=block_size, n_layer=n_layer, n_head=n_head, n_embd=n_embd)
    model = TrainGPT(config).to(device)
    prompt = torch.zeros(1, 1, dtype=torch.long, device=device)
    sync = torch.cuda.synchronize if torch.device(device).type == "cuda" else (lambda: None)
    ways = {
        "plain": lambda n: generate(model, prompt, n, temperature=0),
        "cached": lambda n: generate_cached(model, prompt, n, temperature=0),
        "fast_plain": lambda n: generate_fast(model, prompt, n, temperature=0, cache=False),
        "fast_cached": lambda n: generate_fast(model, prompt, n, temperature=0),
    }
    times: dict[str, list[float]] = {name: [] for name in ways}
    outs = {}
    for way in ways.values():
        way(4)  # warm-up
    for _ in range(repeats):
        for name, way in ways.items():
            sync()
            t = time.perf_counter()
            outs[name] = way(new_tokens)
            sync()
            times[name].append(time.perf_counter() - t)
    best = {name: min(ts) for name, ts in times.items()}
    same = all(torch.equal(outs["plain"], out) for out in outs.values())
    return {
        "block_size": block_size,
        **best,
        "speedup": best["plain"] / best["cached"],
        "fast_speedup": best["fast_plain"] / best["fast_cached"],
        "same_tokens": same,
    }


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, torch {torch.__version__}, Python {platform.python_version()}"


def load() -> str:
    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def fmt_time(t: float | None) -> str:
    return f"{t:.1f} s" if t is not None else "not reached"


def report(
    order: list[dict], kv: list[dict], command: str, loads: tuple[str, str], threads: int, probe_every: int
) -> str:
    """The markdown section: a row per run in the order run, the best runs compared."""
    label = {"nanoGPT": "nanoGPT CPU recipe", "preset": "`--preset cpu`"}
    rows = [
        f"| {i} | {label[r['name']]} | {r['load']} | {fmt_time(r['time_to_target'])} | {r['steps_to_target'] or '-'} "
        f"| {r['seconds']:.1f} s | {r['final_val']:.4f} | {r['tokens_per_second']:,.0f} |"
        for i, r in enumerate(order, 1)
    ]
    base = min((r for r in order if r["name"] == "nanoGPT"), key=lambda r: r["seconds"])
    ours = min((r for r in order if r["name"] == "preset"), key=lambda r: r["seconds"])
    if ours["time_to_target"] is None:
        verdict = f"The preset did NOT reach val <= {TARGET}."
    else:
        b_time = base["time_to_target"] or base["seconds"]
        what = (
            f"its time to val <= {TARGET}" if base["time_to_target"] else f"its whole run, which never reached {TARGET}"
        )
        verdict = (
            f"Fastest run of each: the preset reached val <= {TARGET} in {ours['time_to_target']:.1f} s, "
            f"**{b_time / ours['time_to_target']:.2f}x** faster than the nanoGPT recipe ({what}: {b_time:.1f} s); "
            f"whole runs {ours['seconds']:.1f} s against {base['seconds']:.1f} s ({base['seconds'] / ours['seconds']:.2f}x), "
            f"training tokens/s {ours['tokens_per_second']:,.0f} against {base['tokens_per_second']:,.0f} "
            f"({ours['tokens_per_second'] / base['tokens_per_second']:.2f}x)."
        )
    curves = [
        f"  - {r['name']}: " + ", ".join(f"{s}: {v:.3f} ({t:.0f} s)" for s, t, v in r["points"]) for r in (base, ours)
    ]
    p = CPU
    kv_rows = [
        f"| {k['block_size']} | {k['plain']:.2f} s | {k['cached']:.2f} s | **{k['speedup']:.1f}x** "
        f"| {k['fast_plain']:.2f} s | {k['fast_cached']:.2f} s | **{k['fast_speedup']:.1f}x** "
        f"| {'yes' if k['same_tokens'] else 'NO'} |"
        for k in kv
    ]
    return f"""{START}
## CPU: the `cpu` preset against nanoGPT's CPU recipe

Command: `{command}` (one process; runs in the order listed).
Machine: {machine()}; {threads} threads for both runs (`--threads`; torch's default unless set).
Load average (1/5/15 min) before: {loads[0]}; after: {loads[1]}. Other engineers share
these 2 cores and run tests at the same time, which can slow a run several times over;
interference only ever slows a run down, so the fastest run of each is compared.

| # | run | load at start | time to val <= {TARGET} | steps to it | whole run | final val (exact) | training tokens/s |
|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

{verdict}

- Same data and split (Tiny Shakespeare, characters, first 90 % / last 10 %), same
  judge: the exact validation loss over the whole held-out split in float32, every
  {probe_every} steps, its time excluded; each run's own evaluations and checkpoints count.
- Baseline: `benchmarks/nanogpt_baseline.py`, nanoGPT's model and `train.py` loop with its
  README CPU command (4x4x128, block 64, batch 12, 2000 iterations, lr 1e-3 -> 1e-4,
  no dropout, float32, no compile).
- Preset `cpu`: {p.n_layer}x{p.n_head}x{p.n_embd}, block {p.block_size}, batch {p.batch_size},
  {p.steps} steps, lr {p.lr:g} -> {p.min_lr:g} after {p.warmup} warm-up steps, beta2 {p.beta2},
  {threads} threads, autocast {p.autocast or "none"}{" (this CPU has bf16 instructions)" if loop.cpu_has_bf16() else ""} (see `training/presets.py`).
- Judged curves of the runs compared (step: val (seconds)):
{chr(10).join(curves)}

### KV cache: 500 new tokens, greedy, one-token prompt, CPU

| block_size | stage 08 `generate` | `generate_cached` | speed-up | `gptcourse sample --no-cache` | `gptcourse sample` | speed-up | same tokens |
|---|---|---|---|---|---|---|---|
{chr(10).join(kv_rows)}

Stage 08's reference functions (written for clarity: `torch.cat` per token, a mask per
token) and `gptcourse sample`'s generation (`training/generate.py`: a preallocated cache,
no host sync per token, fused attention; a CUDA graph per token on a GPU), in one run on the
same fresh weights of the `cpu` preset's shape (the time of a forward pass does not depend
on their values); best of 3 after a warm-up. The cache helps only while the sequence fits in `block_size`:
with learned absolute positions the window cannot slide, so past it `generate_cached`
recomputes the window as `generate` does. With the `cpu` preset's block of 64, 437 of the
500 new tokens come past it; a 512-position model keeps all 500 in the cache.
{END}
"""


def write_section(path: Path, section: str) -> None:
    text = path.read_text() if path.exists() else "# Training benchmarks\n\n" + START + "\n" + END + "\n"
    if START not in text:
        text = text.rstrip() + "\n\n" + START + "\n" + END + "\n"
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1]
    path.write_text(before + section.strip() + after)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=1, help="runs of each (ABBA order from 2)")
    parser.add_argument("--probe-every", type=int, default=100, help="steps between the judge's evaluations")
    parser.add_argument(
        "--threads", type=int, default=torch.get_num_threads(), help="threads of both runs (default: torch's)"
    )
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "RESULTS_training.md"))
    parser.add_argument("--no-write", action="store_true", help="print the report only")
    parser.add_argument("--kv-only", action="store_true", help="only the KV-cache timings (printed, not written)")
    args = parser.parse_args(argv)

    if args.kv_only:
        torch.set_num_threads(args.threads)
        for block in (CPU.block_size, 512):
            print(kv_cache_speedup(block), flush=True)
        return 0
    corpus = prepare("shakespeare")
    if corpus.vocab_size != 65:
        raise SystemExit("this benchmark needs Tiny Shakespeare (set $GPTCOURSE_SHAKESPEARE or go online)")
    order = (
        ["nanoGPT", "preset"]
        if args.repeats == 1
        else (["nanoGPT", "preset", "preset", "nanoGPT"] * args.repeats)[: 2 * args.repeats]
    )
    loads = [load()]
    done: list[dict] = []
    for name in order:
        print(f"== {name} (load {load()})", flush=True)
        at_start = load().split(" / ")[0]
        r = (
            run_baseline(corpus, args.probe_every, args.threads)
            if name == "nanoGPT"
            else run_preset(corpus, args.probe_every, args.threads)
        )
        r["load"] = at_start
        done.append(r)
        print(
            f"   -> to val <= {TARGET}: {fmt_time(r['time_to_target'])}; whole run {r['seconds']:.1f} s; "
            f"final {r['final_val']:.4f}; {r['tokens_per_second']:,.0f} tokens/s",
            flush=True,
        )
    torch.set_num_threads(args.threads)
    kv = [kv_cache_speedup(CPU.block_size), kv_cache_speedup(512)]
    for k in kv:
        print(
            f"== KV cache, block {k['block_size']}: stage 08 {k['plain']:.2f} s -> {k['cached']:.2f} s "
            f"({k['speedup']:.1f}x); gptcourse sample {k['fast_plain']:.2f} s -> {k['fast_cached']:.2f} s "
            f"({k['fast_speedup']:.1f}x)"
        )
    loads.append(load())
    command = "python benchmarks/train_vs_nanogpt.py" + (f" --repeats {args.repeats}" if args.repeats > 1 else "")
    section = report(done, kv, command, tuple(loads), args.threads, args.probe_every)
    print(section)
    if not args.no_write:
        write_section(Path(args.out), section)
        print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
