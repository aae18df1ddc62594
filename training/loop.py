"""The training run behind ``gptcourse train``: the reference GPT, AdamW, warm-up + cosine.

One function, :func:`run`, trains :class:`solutions.gpt.GPT` on a prepared corpus with
a :class:`~training.presets.Preset`, on one device or, under ``torchrun``, on several
processes with DistributedDataParallel (see :mod:`training.ddp`). It

- draws each step's global batch from a seeded CPU generator (the same draws on every
  device and process count; each process keeps its rows);
- sets the learning rate of step ``s``: ``lr * (s+1) / warmup`` during the warm-up, then
  a cosine from ``lr`` down to ``min_lr`` at the last step;
- shows a progress bar with the batch loss and tokens per second, estimates the train
  and validation losses every ``eval_interval`` steps (the same windows every time) and
  saves a checkpoint then (and on Ctrl-C), so that an interrupted run can be resumed
  and continues exactly as if it had not stopped;
- ends with the exact validation loss over the whole held-out split, in float32.
"""

from __future__ import annotations

import dataclasses
import math
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.nn as nn
from tqdm import tqdm

from autograder.kit.threads import configure_threads, thread_count
from solutions.gpt import GPT, GPTConfig
from training import checkpoint, ddp
from training.data import Corpus
from training.ddp import DistInfo
from training.evaluate import estimate_loss, full_loss
from training.presets import Preset

LOG_INTERVAL = 10  # steps between progress-bar updates (each one reads the losses back)


@dataclass
class RunResult:
    """What :func:`run` hands back."""

    model: GPT
    history: dict[str, list]
    step: int
    seconds: float  # wall time of this run's steps and evaluations (probes excluded)
    tokens: int  # training tokens processed by this run (all processes together)
    final_val: float | None = None  # exact validation loss (None when stopped early)
    checkpoint: Path | None = None

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else float("nan")


def lr_at(step: int, preset: Preset) -> float:
    """The learning rate of step ``step`` (0-based): linear warm-up, then cosine to ``min_lr``."""
    if step < preset.warmup:
        return preset.lr * (step + 1) / preset.warmup
    ratio = min(1.0, (step - preset.warmup) / max(1, preset.steps - 1 - preset.warmup))
    return preset.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (preset.lr - preset.min_lr)


def make_optimizer(model: nn.Module, preset: Preset, device: torch.device) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices and embeddings only (fused kernels on CPU and CUDA)."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": preset.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=preset.lr,
        betas=(preset.beta1, preset.beta2),
        fused=device.type in ("cpu", "cuda"),
    )


def cpu_has_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AVX512-BF16 or AMX; read on Linux only).

    Elsewhere bf16 is emulated and slower than float32, so the answer is then ``False``.
    """
    try:
        flags = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return False
    return bool(flags & {"avx512_bf16", "amx_bf16"})


def autocast_for(preset: Preset, device: torch.device) -> Callable[[], object]:
    """A factory of the preset's autocast context on ``device``.

    ``preset.autocast == "bf16"``: bfloat16 matrix products on CUDA, and on CPUs that
    have bf16 instructions (:func:`cpu_has_bf16`); float32 everywhere else.
    """
    if preset.autocast == "bf16" and (device.type == "cuda" or (device.type == "cpu" and cpu_has_bf16())):
        return lambda: torch.autocast(device.type, dtype=torch.bfloat16)
    return nullcontext


def cpu_threads(preset: Preset, info: DistInfo = DistInfo()) -> int:
    """Set and return this process's CPU threads: ``preset.threads``, else the rule of
    :mod:`autograder.kit.threads` (overrides, affinity, cgroup quota, busy neighbours).

    Under DDP the count (``preset.threads`` or the usable CPUs) is shared out among the
    local processes; their neighbours are not subtracted there, since the ranks, starting
    together, would count one another as busy.
    """
    if not info.enabled:
        return configure_threads(preset.threads)
    threads = max(1, thread_count(preset.threads, busy=0.0) // info.local_world_size)
    torch.set_num_threads(threads)
    return threads


def new_history() -> dict[str, list]:
    """Empty lists: per evaluation ``step``, ``train_loss``, ``val_loss``, ``time`` (seconds);
    per step ``batch_step``, ``batch_loss`` and ``lr``."""
    return {"step": [], "train_loss": [], "val_loss": [], "time": [], "batch_step": [], "batch_loss": [], "lr": []}


def run(
    preset: Preset,
    corpus: Corpus,
    device: torch.device,
    out_dir: Path | None = None,
    *,
    resume: dict | None = None,
    info: DistInfo = DistInfo(),
    progress: bool = True,
    stop_after: int | None = None,
    probe: Callable[[int, GPT], None] | None = None,
    probe_every: int = 0,
    log: Callable[[str], None] = print,
) -> RunResult:
    """Train the reference GPT on ``corpus`` with ``preset``; returns a :class:`RunResult`.

    Args:
        preset: the model size and the recipe; ``preset.steps`` is the run's total.
        corpus: train and validation ids and their tokenizer (:func:`training.data.prepare`).
        device: this process's device (``cuda:LOCAL_RANK`` under DDP).
        out_dir: where ``ckpt.pt`` is written (rank 0); ``None`` writes nothing.
        resume: a checkpoint from :func:`training.checkpoint.load` to continue from.
        info: this process's place in a distributed run.
        progress: show the progress bar (rank 0 only).
        stop_after: stop once this many steps in all are done (the schedule still
            follows ``preset.steps``), as an interruption would.
        probe: ``probe(step, model)`` is called every ``probe_every`` steps and at the
            end; its time is not counted (the benchmark's common judge).
        log: where the evaluation lines go when there is no progress bar (rank 0 only).

    Raises:
        ValueError: if the corpus is too short for the block size, the global batch does
            not split over the processes, or a resumed checkpoint does not fit.
    """
    T, B = preset.block_size, preset.batch_size
    for name, data in (("training", corpus.train), ("validation", corpus.val)):
        if len(data) <= T:
            raise ValueError(f"the {name} split has {len(data)} tokens, too few for block_size {T}")
    rows = ddp.local_rows(B, info)
    if device.type == "cpu":
        cpu_threads(preset, info)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    main = info.is_main

    torch.manual_seed(preset.seed)
    config = GPTConfig(
        vocab_size=corpus.vocab_size,
        block_size=T,
        n_layer=preset.n_layer,
        n_head=preset.n_head,
        n_embd=preset.n_embd,
        dropout=preset.dropout,
    )
    model = GPT(config).to(device)
    optimizer = make_optimizer(model, preset, device)
    generator = torch.Generator().manual_seed(preset.seed)
    step, history = 0, new_history()
    if resume is not None:
        if resume["config"] != dataclasses.asdict(config):
            raise ValueError("the checkpoint's model does not match this preset and corpus")
        model.load_state_dict(resume["model"])
        optimizer.load_state_dict(resume["optimizer"])
        generator.set_state(resume["rng"]["batches"])
        torch.set_rng_state(resume["rng"]["torch"])
        if device.type == "cuda" and resume["rng"]["cuda"]:
            torch.cuda.set_rng_state_all(resume["rng"]["cuda"])
        step, history = resume["step"], resume["history"]

    train, val = corpus.train.to(device), corpus.val.to(device)
    fast = torch.compile(model) if preset.compile and device.type == "cuda" else model
    trained = ddp.wrap(fast, info, device)
    amp = autocast_for(preset, device)
    end = preset.steps if stop_after is None else min(preset.steps, stop_after)
    offsets = torch.arange(T, device=device)
    ckpt_path = Path(out_dir) / "ckpt.pt" if out_dir is not None else None

    clock = {"start": time.perf_counter(), "excluded": 0.0, "base": history["time"][-1] if history["time"] else 0.0}
    tokens_at_start = step * B * T

    def elapsed() -> float:
        return time.perf_counter() - clock["start"] - clock["excluded"]

    def call_probe(s: int) -> None:
        if probe is not None:
            t = time.perf_counter()
            probe(s, model)
            clock["excluded"] += time.perf_counter() - t

    def evaluate(s: int) -> None:
        kwargs = dict(block_size=T, batch_size=B, eval_iters=preset.eval_iters, info=info, autocast=amp())
        history["step"].append(s)
        history["train_loss"].append(estimate_loss(fast, train, seed=preset.seed + 1, **kwargs))
        history["val_loss"].append(estimate_loss(fast, val, seed=preset.seed + 2, **kwargs))
        history["time"].append(clock["base"] + elapsed())

    def save(s: int) -> None:
        if main and ckpt_path is not None:
            checkpoint.save(
                ckpt_path, model=model, optimizer=optimizer, preset=preset, tokenizer=corpus.tokenizer,
                corpus=corpus.name, step=s, history=history, generator=generator,
            )

    pending: list[torch.Tensor] = []

    def flush() -> None:
        if pending:
            losses = ddp.all_mean(torch.stack(pending).float(), info).tolist()
            first = history["batch_step"][-1] + 1 if history["batch_step"] else 1
            history["batch_step"].extend(range(first, first + len(losses)))
            history["batch_loss"].extend(losses)
            pending.clear()

    if step == 0:
        evaluate(0)
    bar = tqdm(total=preset.steps, initial=step, desc="training", unit="step", disable=not (progress and main))
    window = (time.perf_counter(), step)
    model.train()
    try:
        while step < end:
            if probe_every and step % probe_every == 0:
                call_probe(step)
            lr = lr_at(step, preset)
            for group in optimizer.param_groups:
                group["lr"] = lr
            history["lr"].append(lr)
            starts = torch.randint(len(train) - T, (B,), generator=generator)[rows]
            ix = starts.to(device)[:, None] + offsets  # (b, T)
            with amp():
                _, loss = trained(train[ix], train[ix + 1])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if preset.grad_clip is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), preset.grad_clip)
            optimizer.step()
            pending.append(loss.detach())
            step += 1

            due = step % preset.eval_interval == 0 or step == preset.steps
            if step % LOG_INTERVAL == 0 or due or step == end:
                flush()
                now = time.perf_counter()
                rate = (step - window[1]) * B * T / max(now - window[0], 1e-9)
                bar.update(step - bar.n)
                bar.set_postfix(loss=f"{history['batch_loss'][-1]:.3f}", tok_s=f"{rate:,.0f}")
                window = (now, step)
            if due:
                evaluate(step)
                save(step)
                if main:
                    line = (f"step {step}: train {history['train_loss'][-1]:.4f}, val {history['val_loss'][-1]:.4f}"
                            f" ({history['time'][-1]:.0f} s)")
                    (log if bar.disable else bar.write)(line)
                window = (time.perf_counter(), step)
    except KeyboardInterrupt:
        flush()
        save(step)
        bar.close()
        if main:
            log(f"\ninterrupted at step {step}; resume with --resume {ckpt_path}")
        raise
    bar.close()
    flush()
    if probe_every:
        call_probe(step)
    seconds = elapsed()
    result = RunResult(model=model, history=history, step=step, seconds=seconds, tokens=(step * B * T - tokens_at_start))
    if step == preset.steps:
        result.final_val = full_loss(model, val, T, batch_size=max(B, 64), info=info)  # float32
        history["final_val"] = [result.final_val]
    if step == preset.steps or not step % preset.eval_interval == 0:
        save(step)  # the finished run with its final loss, or the point an early stop reached
    result.checkpoint = ckpt_path
    return result
