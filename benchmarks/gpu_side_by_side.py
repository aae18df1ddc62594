"""The ``gpu`` preset and nanoGPT's ``shakespeare_char`` recipe side by side, and the KV cache, on one GPU.

    python benchmarks/gpu_side_by_side.py --out /tmp/gpu            # on a CUDA machine (about 3-4 minutes)
    python benchmarks/gpu_side_by_side.py --out /tmp/cpu --cpu      # the same steps at tiny sizes, on a CPU

1. **nanoGPT itself** (``benchmarks/nanogpt/``: its ``train.py``, ``model.py`` and
   ``config/train_shakespeare_char.py``, unchanged, MIT licence) on Tiny Shakespeare,
   prepared as its ``data/shakespeare_char/prepare.py`` does. ``--max_iters=2500``: the
   recipe's 5000 iterations overfit (its best came at iteration 1750 on an H100, issue 24)
   and ``lr_decay_iters`` stays 5000, so the run is the recipe's own up to there. Its time to
   its best checkpoint is the time from the command's start to the last write of its
   ``ckpt.pt`` (nanoGPT writes one only when its validation estimate improves).
2. **``python -m training train --preset gpu``**, timed from the command's start: to the
   last write of a new best to ``ckpt.pt`` (``summary.json``'s ``best_saved_at``) and to
   the end of the command.
3. One judge for both kept checkpoints: the exact validation loss, every window of the
   held-out split in float32 (``training.evaluate.full_loss``), each model at its own block size.
4. ``gptcourse sample``'s generation on the preset's kept model: 500 new tokens, greedy,
   from a one-character prompt, with the KV cache (a CUDA graph per token) and without
   (the whole window per token), best of 3 after a warm-up; the tokens must be identical.
5. Optionally (``--variant``), the preset again with other options (e.g. ``--compile none``).

Writes ``side_by_side.json`` and ``side_by_side.md`` (the section for
``benchmarks/RESULTS_training.md``) to ``--out``, with the card, torch and CUDA versions and
the commands. ``--cpu`` runs the same steps at tiny sizes on the CPU (the test of this script).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from solutions.data import load_corpus  # noqa: E402
from training import checkpoint  # noqa: E402
from training.data import prepare  # noqa: E402
from training.evaluate import full_loss  # noqa: E402
from training.generate import generate_fast  # noqa: E402

NANOGPT = ROOT / "benchmarks" / "nanogpt"
NANOGPT_GPU = ["--max_iters=2500"]
NANOGPT_CPU = [
    "--device=cpu",
    "--compile=False",
    "--dtype=float32",
    "--max_iters=30",
    "--eval_interval=10",
    "--eval_iters=2",
    "--log_interval=10",
    "--batch_size=8",
    "--block_size=32",
    "--n_layer=2",
    "--n_head=2",
    "--n_embd=32",
]
PRESET_GPU = ["--preset", "gpu", "--device", "cuda", "--corpus", "shakespeare"]
PRESET_CPU = ["--preset", "tiny", "--device", "cpu", "--steps", "30", "--eval-interval", "10"]
CPU_CHARACTERS = 100_000  # --cpu: the first 100,000 characters of Tiny Shakespeare, for both runs


def prepare_nanogpt_data(text: str, folder: Path) -> None:
    """``data/shakespeare_char/{train,val}.bin`` and ``meta.pkl``, as nanoGPT's prepare.py writes them."""
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    ids = np.array([stoi[c] for c in text], dtype=np.uint16)
    n = len(ids)
    folder.mkdir(parents=True, exist_ok=True)
    ids[: int(n * 0.9)].tofile(folder / "train.bin")
    ids[int(n * 0.9) :].tofile(folder / "val.bin")
    with open(folder / "meta.pkl", "wb") as f:
        pickle.dump({"vocab_size": len(chars), "itos": dict(enumerate(chars)), "stoi": stoi}, f)


def timed(command: list[str], cwd: Path, log: Path) -> dict:
    """Run ``command``, its output to ``log`` with each line's seconds since the start; returns
    ``{"start": epoch seconds, "seconds": wall time, "returncode": ...}``."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT)}
    start = time.time()
    with open(log, "w") as out:
        out.write(f"$ {' '.join(command)}  (in {cwd})\n")
        process = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        for line in process.stdout:
            out.write(f"[{time.time() - start:7.2f} s] {line}")
        process.wait()
    seconds = time.time() - start
    if process.returncode != 0:
        raise SystemExit(f"{command[:4]}... failed ({process.returncode}); see {log}")
    return {"start": start, "seconds": seconds, "returncode": process.returncode, "command": " ".join(command)}


def nanogpt_run(text: str, work: Path, cpu: bool) -> dict:
    """nanoGPT's recipe, timed; its kept checkpoint judged exactly."""
    folder = work / "nanogpt"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(NANOGPT, folder)
    prepare_nanogpt_data(text, folder / "data" / "shakespeare_char")
    out_dir = folder / "out"
    args = NANOGPT_CPU if cpu else NANOGPT_GPU
    command = [sys.executable, "train.py", "config/train_shakespeare_char.py", f"--out_dir={out_dir}", *args]
    run = timed(command, folder, work / "nanogpt.log")
    ckpt = out_dir / "ckpt.pt"
    run["seconds_to_best"] = ckpt.stat().st_mtime - run["start"]
    sys.path.insert(0, str(folder))
    from model import GPT, GPTConfig  # nanoGPT's model.py

    state = torch.load(ckpt, map_location="cpu", weights_only=False)  # nanoGPT pickles its config dict
    model = GPT(GPTConfig(**state["model_args"]))
    model.load_state_dict({k.removeprefix("_orig_mod."): v for k, v in state["model"].items()})
    device = "cpu" if cpu else "cuda"
    val = prepare("text", text=text).val.to(device)
    run["best_iter"] = state["iter_num"]
    run["best_val_estimate"] = float(state["best_val_loss"])
    run["best_val_exact"] = full_loss(model.to(device), val, state["model_args"]["block_size"], batch_size=64)
    return run


def preset_run(work: Path, name: str, args: list[str]) -> dict:
    """``python -m training train`` with ``args``, timed; its summary."""
    out = work / name
    command = [sys.executable, "-m", "training", "train", *args, "--out", str(out), "--quiet", "--sample-tokens", "0"]
    run = timed(command, ROOT, work / f"{name}.log")
    summary = json.loads((out / "summary.json").read_text())
    run |= {k: v for k, v in summary.items() if k != "seconds"} | {"training_seconds": summary["seconds"]}
    run["seconds_to_best"] = summary["best_saved_at"] - run["start"]
    run["checkpoint"] = str(out / "ckpt.pt")
    return run


def sampling(ckpt: str, device: str, tokens: int, repeats: int = 3) -> dict:
    """Seconds for ``tokens`` greedy tokens with and without the KV cache (best of ``repeats``)."""
    model, _ = checkpoint.model_from(checkpoint.load(ckpt), device)
    prompt = torch.zeros(1, 1, dtype=torch.long, device=device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    times: dict[str, list[float]] = {"plain": [], "cached": []}
    outs = {}
    for name, cache in (("plain", False), ("cached", True)):
        generate_fast(model, prompt, 8, temperature=0, cache=cache)  # warm-up (kernels chosen, graph captured)
        for _ in range(repeats):
            sync()
            start = time.perf_counter()
            outs[name] = generate_fast(model, prompt, tokens, temperature=0, cache=cache)
            sync()
            times[name].append(time.perf_counter() - start)
    plain, cached = min(times["plain"]), min(times["cached"])
    return {
        "tokens": tokens,
        "block_size": model.config.block_size,
        "plain": plain,
        "cached": cached,
        "speedup": plain / cached,
        "same_tokens": bool(torch.equal(outs["plain"], outs["cached"])),
    }


def machine(cpu: bool) -> dict:
    info = {"torch": torch.__version__, "python": platform.python_version(), "cuda": torch.version.cuda}
    if not cpu and torch.cuda.is_available():
        info["card"] = torch.cuda.get_device_name(0)
        info["cards"] = torch.cuda.device_count()
    else:
        info["card"] = f"none (CPU: {platform.processor() or platform.machine()}, {os.cpu_count()} cores)"
    return info


def report(results: dict) -> str:
    """The markdown section."""
    m, n, p = results["machine"], results["nanogpt"], results["preset"]
    label = " ".join(results["preset_args"])
    ratio = p["seconds_to_best"] / n["seconds_to_best"]
    rows = [
        f"| nanoGPT `shakespeare_char` | {n['best_iter']} | {n['best_val_estimate']:.4f} | {n['best_val_exact']:.4f} "
        f"| {n['seconds_to_best']:.1f} s | {n['seconds']:.1f} s |",
        f"| `{label}` | {p['best_step']} | - | {p['best_val_loss']:.4f} | {p['seconds_to_best']:.1f} s "
        f"| {p['seconds']:.1f} s |",
    ]
    for v in results.get("variants", []):
        rows.append(
            f"| `{' '.join(v['args'])}` | {v['best_step']} | - | {v['best_val_loss']:.4f} | {v['seconds_to_best']:.1f} s "
            f"| {v['seconds']:.1f} s |"
        )
    s = results["sampling"]
    goal = "met" if p["best_val_loss"] <= 1.45 and ratio <= 0.5 else "NOT met"
    return f"""## GPU: the `gpu` preset against nanoGPT's `shakespeare_char` recipe

Machine: {m["card"]}; torch {m["torch"]}, CUDA {m["cuda"]}, Python {m["python"]}.
Command: `{results["command"]}` (one after the other, on the same card).

| run | kept step | its own validation estimate | exact validation loss (whole split) | start to kept checkpoint | whole command |
|---|---|---|---|---|---|
{chr(10).join(rows)}

Kept checkpoint at {p["best_val_loss"]:.4f} (goal <= 1.45) in {ratio:.2f}x nanoGPT's time to its best checkpoint
(goal <= 0.5x): the goal is **{goal}**.

Sampling (`gptcourse sample`'s generation, the preset's kept model, block {s["block_size"]}): {s["tokens"]} new tokens,
greedy, plain {s["plain"]:.3f} s, with the KV cache {s["cached"]:.3f} s: **{s["speedup"]:.1f}x**; the same tokens:
{"yes" if s["same_tokens"] else "NO"}.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="folder for the logs, side_by_side.json and side_by_side.md")
    parser.add_argument("--cpu", action="store_true", help="tiny sizes on the CPU (the script's own test)")
    parser.add_argument("--variant", action="append", default=[], help="another preset run: its extra options")
    parser.add_argument("--tokens", type=int, default=500)
    args = parser.parse_args(argv)
    if not args.cpu and not torch.cuda.is_available():
        raise SystemExit("no CUDA GPU here: use --cpu for the tiny CPU run")
    work = Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    text = load_corpus("shakespeare")
    if len(set(text)) != 65:
        raise SystemExit("this benchmark needs Tiny Shakespeare (set $GPTCOURSE_SHAKESPEARE)")
    preset_args = PRESET_GPU
    if args.cpu:
        text = text[:CPU_CHARACTERS]
        (work / "shakespeare_start.txt").write_text(text, encoding="utf-8")
        preset_args = [*PRESET_CPU, "--corpus", str(work / "shakespeare_start.txt")]
    command = "python benchmarks/gpu_side_by_side.py" + (" --cpu" if args.cpu else "")
    command += "".join(f" --variant '{v}'" for v in args.variant)
    results = {"machine": machine(args.cpu), "command": command, "preset_args": preset_args}
    print("== nanoGPT", flush=True)
    results["nanogpt"] = nanogpt_run(text, work, args.cpu)
    print(json.dumps({k: v for k, v in results["nanogpt"].items() if k != "command"}), flush=True)
    print("== preset", flush=True)
    results["preset"] = preset_run(work, "preset", preset_args)
    keys = ("best_step", "best_val_loss", "seconds_to_best", "seconds", "training_seconds")
    print(json.dumps({k: results["preset"][k] for k in keys}), flush=True)
    print("== sampling", flush=True)
    results["sampling"] = sampling(results["preset"]["checkpoint"], "cpu" if args.cpu else "cuda", args.tokens)
    print(json.dumps(results["sampling"]), flush=True)
    results["variants"] = []
    for index, extra in enumerate(args.variant):
        print(f"== variant {extra}", flush=True)
        run = preset_run(work, f"variant{index}", preset_args + extra.split())
        run["args"] = extra.split()
        results["variants"].append(run)
    (work / "side_by_side.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
    section = report(results)
    (work / "side_by_side.md").write_text(section)
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
