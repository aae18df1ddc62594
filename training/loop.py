"""The training run behind ``gptcourse train``: stage 07's GPT, AdamW, warm-up + cosine, keep the best.

One function, :func:`run`, trains :class:`training.model.TrainGPT` (the reference GPT with
fused kernels) on a prepared corpus with a :class:`~training.presets.Preset`, on one device
or, under ``torchrun``, on several processes with DistributedDataParallel (see
:mod:`training.ddp`). It

- draws each step's global batch from a seeded CPU generator (the same draws on every
  device and process count; each process keeps its rows);
- sets the learning rate of step ``s``: ``lr * (s+1) / warmup`` during the warm-up, then
  a cosine from ``lr`` down to ``min_lr`` at the last step;
- every ``eval_interval`` steps (and at the last) estimates the training loss and measures
  the *exact* validation loss (every window of the held-out split, float32), and **keeps
  the best**: the weights of the evaluation with the lowest validation loss are the run's
  result and the model of ``ckpt.pt``; after ``patience`` evaluations in a row without a
  new best (when set) it stops early;
- shows a progress bar with the batch loss and tokens per second, and a line per
  evaluation with the best so far and its step;
- writes ``ckpt.pt`` when the best improves, at the end and on Ctrl-C: the best weights,
  and the last step's whole state (weights, optimiser, random-number states), so that an
  interrupted run resumes exactly as if it had not stopped.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn as nn
from tqdm import tqdm

from autograder.engine.progress import interactive
from autograder.kit.threads import configure_threads, thread_count
from training import checkpoint, ddp
from training.data import Corpus
from training.ddp import DistInfo
from training.evaluate import estimate_loss, full_loss
from training.model import TrainConfig, TrainGPT, compile_blocks
from training.presets import Preset

LOG_INTERVAL = 10  # steps between progress-bar updates (each one reads the losses back)


@dataclass
class RunResult:
    """What :func:`run` hands back."""

    model: TrainGPT  # with the kept (best) weights
    history: dict[str, list]
    step: int  # the last step trained
    seconds: float  # wall time of this run's steps and evaluations (probes excluded)
    tokens: int  # training tokens processed by this run (all processes together)
    final_val: float | None = None  # exact validation loss of the last step (None when interrupted)
    best_step: int | None = None  # the step whose weights were kept
    best_val: float | None = None  # their exact validation loss
    stopped_early: bool = False  # patience ran out before preset.steps
    best_saved_at: float | None = None  # when (time.time()) this run last wrote a new best to ckpt.pt
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
    """Empty lists: per evaluation ``step``, ``train_loss`` (an estimate), ``val_loss`` (exact),
    ``time`` (seconds); per step ``batch_step``, ``batch_loss`` and ``lr``."""
    return {"step": [], "train_loss": [], "val_loss": [], "time": [], "batch_step": [], "batch_loss": [], "lr": []}


class _Clock:
    """Seconds of training and evaluation, probes excluded, continuing a resumed run's count."""

    def __init__(self, base: float) -> None:
        self.start, self.excluded, self.base = time.perf_counter(), 0.0, base

    def elapsed(self) -> float:
        """Seconds of this run so far, without the probes' time."""
        return time.perf_counter() - self.start - self.excluded

    def excluding(self, work: Callable[[], None]) -> None:
        """Run ``work`` without counting its time."""
        t = time.perf_counter()
        work()
        self.excluded += time.perf_counter() - t


class _Best:
    """The best evaluation so far: its step, its exact validation loss and a copy of its weights."""

    def __init__(self) -> None:
        self.step: int | None = None
        self.val = math.inf
        self.weights: dict[str, torch.Tensor] | None = None

    def offer(self, step: int, val: float, model: nn.Module) -> bool:
        """Keep ``model``'s weights if ``val`` beats the best so far; returns whether it did."""
        if not val < self.val:
            return False
        self.step, self.val = step, val
        self.weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
        return True

    def evaluations_since(self, history: dict[str, list]) -> int:
        """How many evaluations came after the best one."""
        return sum(1 for s in history["step"] if self.step is not None and s > self.step)


class _Training:
    """One run's state and its steps: the model, the optimiser, the batch draws, the history, the best.

    :func:`run` builds one, then (through :func:`_train_until`) calls :meth:`step` until the
    run ends, :meth:`evaluate` at each evaluation (which keeps the best and saves when it
    improves), and :meth:`flush` whenever it reads the losses.
    """

    def __init__(
        self,
        preset: Preset,
        corpus: Corpus,
        device: torch.device,
        out_dir: Path | None,
        info: DistInfo,
        resume: dict | None,
    ) -> None:
        T = preset.block_size
        for name, data in (("training", corpus.train), ("validation", corpus.val)):
            if len(data) <= T:
                raise ValueError(f"the {name} split has {len(data)} tokens, too few for block_size {T}")
        self.preset, self.corpus, self.device, self.info = preset, corpus, device, info
        self.rows = ddp.local_rows(preset.batch_size, info)  # this process's rows of the global batch
        torch.manual_seed(preset.seed)
        self.config = TrainConfig(
            vocab_size=corpus.vocab_size,
            block_size=T,
            n_layer=preset.n_layer,
            n_head=preset.n_head,
            n_embd=preset.n_embd,
            dropout=preset.dropout,
            positions=preset.positions,
        )
        self.model = TrainGPT(self.config).to(device)
        self.optimizer = make_optimizer(self.model, preset, device)
        self.generator = torch.Generator().manual_seed(preset.seed)  # the batch draws, on CPU everywhere
        self.step_count, self.history, self.best = 0, new_history(), _Best()
        self.best_saved_at: float | None = None
        if resume is not None:
            self._restore(resume)
        self.train, self.val = corpus.train.to(device), corpus.val.to(device)
        self.fast = compiled(self.model, preset, device)
        self.trained = ddp.wrap(self.fast, info, device)
        self.amp = autocast_for(preset, device)
        self.offsets = torch.arange(T, device=device)
        self.ckpt_path = Path(out_dir) / checkpoint.FILENAME if out_dir is not None else None
        self.clock = _Clock(self.history["time"][-1] if self.history["time"] else 0.0)
        self.pending: list[torch.Tensor] = []  # batch losses not yet read back

    def _restore(self, resume: dict) -> None:
        if checkpoint.config_dict(resume) != checkpoint.config_dict({"config": self.config}):
            raise ValueError("the checkpoint's model does not match this preset and corpus")
        last = resume["train_state"]
        self.model.load_state_dict(last["model"])
        self.optimizer.load_state_dict(last["optimizer"])
        self.generator.set_state(last["rng"]["batches"])
        torch.set_rng_state(last["rng"]["torch"])
        if self.device.type == "cuda" and last["rng"]["cuda"]:
            torch.cuda.set_rng_state_all(last["rng"]["cuda"])
        self.step_count, self.history = resume["step"], resume["history"]
        if resume["best_step"] is not None:
            self.best.step, self.best.val = resume["best_step"], resume["best_val_loss"]
            self.best.weights = {k: v.to(self.device) for k, v in resume["model"].items()}

    def step(self) -> None:
        """One optimiser step on a fresh draw of the global batch, at the schedule's rate."""
        T, B = self.preset.block_size, self.preset.batch_size
        lr = lr_at(self.step_count, self.preset)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.history["lr"].append(lr)
        starts = torch.randint(len(self.train) - T, (B,), generator=self.generator)[self.rows]
        ix = starts.to(self.device)[:, None] + self.offsets  # (b, T)
        with self.amp():
            _, loss = self.trained(self.train[ix], self.train[ix + 1])
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.preset.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.preset.grad_clip)
        self.optimizer.step()
        self.pending.append(loss.detach())
        self.step_count += 1

    def flush(self) -> None:
        """Read the pending batch losses back (averaged over the processes) into the history."""
        if self.pending:
            losses = ddp.all_mean(torch.stack(self.pending).float(), self.info).tolist()
            first = self.history["batch_step"][-1] + 1 if self.history["batch_step"] else 1
            self.history["batch_step"].extend(range(first, first + len(losses)))
            self.history["batch_loss"].extend(losses)
            self.pending.clear()

    def evaluate(self) -> bool:
        """Estimate the training loss (the same windows every time), measure the exact validation
        loss, and keep the weights if they are the best so far; returns whether they were.

        Both run on the uncompiled model (no recompilation for eval mode or the last, short
        batch); the validation pass is in float32 over every window of the held-out split.
        """
        p = self.preset
        self.history["step"].append(self.step_count)
        train = estimate_loss(
            self.model,
            self.train,
            block_size=p.block_size,
            batch_size=p.batch_size,
            eval_iters=p.eval_iters,
            seed=p.seed + 1,
            info=self.info,
            autocast=self.amp(),
        )
        val = full_loss(self.model, self.val, p.block_size, batch_size=max(p.batch_size, 64), info=self.info)
        self.history["train_loss"].append(train)
        self.history["val_loss"].append(val)
        self.history["time"].append(self.clock.base + self.clock.elapsed())
        return self.best.offer(self.step_count, val, self.model)

    def out_of_patience(self) -> bool:
        """Whether ``preset.patience`` evaluations in a row have brought no new best."""
        patience = self.preset.patience
        return patience is not None and self.best.evaluations_since(self.history) >= patience

    def keep_best(self) -> None:
        """Put the best weights into the model (the run's result), uncompiled."""
        if self.best.weights is not None:
            self.model.load_state_dict(self.best.weights)
        self.model.compiled_block = None

    def save(self) -> None:
        """Write the checkpoint (rank 0, when there is an output folder): the best weights and
        this step's whole state."""
        if self.info.is_main and self.ckpt_path is not None:
            checkpoint.save(
                self.ckpt_path,
                model=self.model,
                best=self.best.weights,
                best_step=self.best.step,
                best_val_loss=self.best.val if self.best.step is not None else None,
                optimizer=self.optimizer,
                preset=self.preset,
                tokenizer=self.corpus.tokenizer,
                corpus=self.corpus.name,
                step=self.step_count,
                history=self.history,
                generator=self.generator,
            )


def evaluation_line(history: dict[str, list], best_step: int | None, best_val: float) -> str:
    """The progress line of the last evaluation: its losses, the best so far and its step.

    Example:
        >>> h = {"step": [0, 100], "train_loss": [4.2, 2.1], "val_loss": [4.2, 2.2], "time": [0.0, 9.6]}
        >>> evaluation_line(h, 100, 2.2)
        'step 100: train 2.1000, val 2.2000 (exact) | best 2.2000 at step 100 (10 s)'
    """
    return (
        f"step {history['step'][-1]}: train {history['train_loss'][-1]:.4f}, "
        f"val {history['val_loss'][-1]:.4f} (exact) | best {best_val:.4f} at step {best_step} "
        f"({history['time'][-1]:.0f} s)"
    )


class _Progress:
    """The progress bar (batch loss, tokens per second; in a terminal only) and the evaluation
    lines, on rank 0."""

    def __init__(self, training: _Training, show: bool, log: Callable[[str], None]) -> None:
        self.training, self.log = training, log
        self.main = training.info.is_main
        self.bar = tqdm(
            total=training.preset.steps,
            initial=training.step_count,
            desc="training",
            unit="step",
            disable=not (show and self.main and interactive()),  # a log or CI gets the evaluation lines only
        )
        self.restart()

    def restart(self) -> None:
        """Measure the next rate from here (evaluations are not training time)."""
        self.window = (time.perf_counter(), self.training.step_count)

    def update(self) -> None:
        """Show the latest batch loss and the rate since the last update."""
        t, step, p = self.training, self.training.step_count, self.training.preset
        t.flush()
        now = time.perf_counter()
        rate = (step - self.window[1]) * p.batch_size * p.block_size / max(now - self.window[0], 1e-9)
        self.bar.update(step - self.bar.n)
        self.bar.set_postfix(loss=f"{t.history['batch_loss'][-1]:.3f}", tok_s=f"{rate:,.0f}")
        self.window = (now, step)

    def evaluated(self) -> None:
        """Write the evaluation's line."""
        t = self.training
        if self.main:
            line = evaluation_line(t.history, t.best.step, t.best.val)
            (self.log if self.bar.disable else self.bar.write)(line)
        self.restart()

    def close(self) -> None:
        self.bar.close()


def compiled(model: TrainGPT, preset: Preset, device: torch.device) -> nn.Module:
    """What the training steps run: on CUDA, ``torch.compile(model)`` (``preset.compile == "model"``)
    or the model with its block compiled (``"blocks"``, :func:`training.model.compile_blocks`);
    elsewhere, or with ``"none"``, the model itself (on a CPU compiling costs more than it saves).
    Either shares the model's weights; evaluations run the uncompiled model."""
    if device.type != "cuda" or preset.compile == "none":
        return model
    return torch.compile(model) if preset.compile == "model" else compile_blocks(model)


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
    probe: Callable[[int, nn.Module], None] | None = None,
    probe_every: int = 0,
    log: Callable[[str], None] = print,
) -> RunResult:
    """Train stage 07's GPT on ``corpus`` with ``preset``, keep the best; returns a :class:`RunResult`.

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
            end (with the last step's weights); its time is not counted (the benchmark's judge).
        log: where the evaluation lines go when there is no progress bar (rank 0 only).

    Raises:
        ValueError: if the corpus is too short for the block size, the global batch does
            not split over the processes, or a resumed checkpoint does not fit.
    """
    _prepare_device(preset, device, info)
    t = _Training(preset, corpus, device, out_dir, info, resume)
    tokens_at_start = t.step_count * preset.batch_size * preset.block_size
    end = preset.steps if stop_after is None else min(preset.steps, stop_after)

    def call_probe() -> None:
        if probe is not None:
            t.clock.excluding(lambda: probe(t.step_count, t.model))

    shown = _Progress(t, progress, log)
    if t.step_count == 0:
        t.evaluate()
        shown.evaluated()
    t.model.train()
    try:
        stopped_early = _train_until(t, end, shown, probe_every, call_probe)
    except KeyboardInterrupt:
        t.flush()
        t.save()
        shown.close()
        if info.is_main:
            log(f"\ninterrupted at step {t.step_count}; resume with --resume {t.ckpt_path}")
        raise
    shown.close()
    t.flush()
    if probe_every:
        call_probe()
    finished = t.step_count == preset.steps or stopped_early
    t.save()  # the best weights and the last state: the finished run, or where an early stop reached
    if stopped_early and info.is_main:
        log(f"stopped early at step {t.step_count}: no better validation loss in {preset.patience} evaluations")
    t.keep_best()
    return _result(t, tokens_at_start, finished, stopped_early)


def _prepare_device(preset: Preset, device: torch.device, info: DistInfo) -> None:
    """Set this process's CPU threads on a CPU; allow TF32 matrix products on CUDA."""
    if device.type == "cpu":
        cpu_threads(preset, info)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True


def _train_until(t: _Training, end: int, shown: _Progress, probe_every: int, call_probe: Callable[[], None]) -> bool:
    """Step ``t`` up to step ``end``: probe when due, show progress, evaluate (saving each new best) every
    ``eval_interval`` steps and at the last; returns whether patience ran out first (an early stop)."""
    preset = t.preset
    stopped_early = False
    while t.step_count < end and not stopped_early:
        if probe_every and t.step_count % probe_every == 0:
            call_probe()
        t.step()
        step = t.step_count
        due = step % preset.eval_interval == 0 or step == preset.steps
        if step % LOG_INTERVAL == 0 or due or step == end:
            shown.update()
        if due:
            if t.evaluate():
                t.save()
                t.best_saved_at = time.time()
            shown.evaluated()
            stopped_early = step < preset.steps and t.out_of_patience()
    return stopped_early


def _result(t: _Training, tokens_at_start: int, finished: bool, stopped_early: bool) -> RunResult:
    """The :class:`RunResult` of the run ``t`` ended (its model already holds the kept weights)."""
    preset, step = t.preset, t.step_count
    return RunResult(
        model=t.model,
        history=t.history,
        step=step,
        seconds=t.clock.elapsed(),
        tokens=step * preset.batch_size * preset.block_size - tokens_at_start,
        final_val=t.history["val_loss"][-1] if finished else None,
        best_step=t.best.step,
        best_val=t.best.val if t.best.step is not None else None,
        stopped_early=stopped_early,
        best_saved_at=t.best_saved_at,
        checkpoint=t.ckpt_path,
    )
