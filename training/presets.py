"""Training presets: the model size and the optimisation recipe of a `gptcourse train` run.

- ``cpu``: a laptop or small-server CPU. Tuned on this project's 2-core AMD EPYC (Zen 5)
  virtual machine to reach Tiny Shakespeare validation loss <= 1.88 in less time than
  nanoGPT's CPU recipe (4x4x128, block 64, batch 12, 2000 iterations), measured side by
  side in ``benchmarks/train_vs_nanogpt.py`` (see ``benchmarks/RESULTS_training.md``).
- ``gpu``: one large GPU (e.g. an H100): nanoGPT's Shakespeare-char model (6 layers, 6
  heads, 384 wide, dropout 0.2) with a context of 512, fused attention, bf16 autocast and a
  schedule that ends where the validation loss stops falling. Measured on one H100
  (``benchmarks/RESULTS_training.md``): 1500 steps keep an exact validation loss of 1.444,
  below nanoGPT's best of the same model, 1.468. Its goal, to do so in at most half of
  nanoGPT's time to its best checkpoint, is not shown: the 1000-step preset before it took
  0.55x, and this one is still to be timed whole on a fresh machine.
- ``tiny``: about 90 s on 2 free CPU cores (longer on one), on the offline default corpus (``make demo``).

Every field can be overridden from the command line where an option exists
(``--steps``, ``--batch-size``, ``--lr``, ...) or with :meth:`Preset.replace` from Python.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

COMPILE = ("none", "model", "blocks")


@dataclass(frozen=True)
class Preset:
    """Everything a training run needs besides the data and the device."""

    name: str
    # the model (solutions.gpt.GPTConfig)
    n_layer: int
    n_head: int
    n_embd: int
    block_size: int
    dropout: float = 0.0
    # optimisation
    batch_size: int = 32  # the global batch (split over the processes under DDP)
    steps: int = 1000
    lr: float = 1e-3
    min_lr: float = 1e-4  # the cosine decays from lr to min_lr
    warmup: int = 100
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float | None = 1.0
    # evaluation and logging
    eval_interval: int = 250
    eval_iters: int = 20  # batches of batch_size windows in each estimate of the training loss
    # (the validation loss is exact: every window of the held-out split, at every evaluation)
    patience: int | None = None  # stop after this many evaluations in a row without a new best (None: never)
    sample_tokens: int = 300  # printed at the end of the run
    # execution
    seed: int = 1337
    threads: int | None = None  # CPU threads (None: the rule of autograder.kit.threads, the CPUs really free)
    autocast: str | None = None  # "bf16": bfloat16 autocast on CUDA and on CPUs with bf16 instructions
    compile: str = "none"  # CUDA only (on a CPU compiling costs more than it saves): torch.compile the
    # "model" (training steps), its "blocks" (one compiled block for every layer), or "none"
    positions: str = "learned"  # learned, sinusoidal, rope or none (training.model)
    corpus: str = "shakespeare"  # the corpus used when --corpus is not given

    def __post_init__(self) -> None:
        if self.compile not in COMPILE:
            raise ValueError(f"compile must be one of {', '.join(COMPILE)}, got {self.compile!r}")

    def replace(self, **changes) -> Preset:
        """A copy with the fields named in ``changes`` replaced."""
        return dataclasses.replace(self, **changes)


# cpu: nanoGPT's CPU model (4x4x128, block 64) with a faster recipe, measured on this
# project's 2-core machine (exact validation loss, float32; benchmarks/RESULTS_training.md):
# - bf16 autocast: about 1.9x the tokens/s of float32 on a CPU with bf16 instructions;
# - batch 24 and lr 3e-3 (nanoGPT: 12 and 1e-3): 800 steps (1.23M tokens) reach 1.878 and
#   1000 steps 1.823, where nanoGPT's 2001 x 12 windows (1.54M tokens) end at 1.898;
#   batch 32 with lr 4e-3 and 600 steps (1.23M tokens) ends at 1.888; batch 12 with lr 2e-3
#   and 1500 steps (1.15M tokens) at 1.866.
CPU = Preset(
    name="cpu",
    n_layer=4,
    n_head=4,
    n_embd=128,
    block_size=64,
    batch_size=24,
    steps=900,
    lr=3e-3,
    min_lr=1e-4,
    warmup=100,
    eval_interval=300,
    eval_iters=20,
    autocast="bf16",
)

# gpu: nanoGPT's config/train_shakespeare_char.py model (6x6x384, dropout 0.2, beta2 0.99), with
# what uses the card. Measured on one H100 80GB HBM3 (torch 2.11.0+cu130) by
# benchmarks/gpu_check.sh and three runs of `gptcourse train --preset gpu --steps N` on the same
# machine (benchmarks/RESULTS_training.md):
# - fused attention (F.scaled_dot_product_attention, training.model), bf16 autocast, TF32 and
#   fused AdamW; evaluations on the same model;
# - no torch.compile: compiling the block cost about 13 s on a fresh machine (the first 100
#   steps took 17 s compiled, 4 s not) and saved almost nothing after (about 2.9 s per 100
#   steps compiled, 3.0 s not, evaluations included); `--compile blocks` or `model` still
#   offers it;
# - 32,768 tokens a step (64 windows of 512), twice nanoGPT's 16,384: a 10.8M-parameter model
#   leaves an H100 waiting on kernel launches at nanoGPT's size (0.99M tokens/s at 64 windows
#   against 0.49M at 32, compiled, on the same machine), so a larger step costs little more
#   time; the peak
#   rate rises with it (1.5e-3 against 1e-3, about the square root of the ratio) and the
#   warm-up halves with the steps;
# - a schedule that ends near the best: nanoGPT's 5000 steps overfit (its validation estimate
#   lowest at step 1750, 1.472, then rising). Here the cosine reaches min_lr at the end of 1500
#   steps (49M tokens): with 1000 steps the run ended at 1.4865, with 1200 at 1.4580, with
#   1500 its lowest was 1.4443 at step 1400 (1.4455 at the end); a shorter schedule anneals
#   before the model has learnt what it can. Patience stops a run that turns up before;
# - a context of 512: a position sees twice the text on average, and `gptcourse sample`'s KV
#   cache keeps all of 500 new tokens (past the block the window slides and every token is
#   recomputed, cache or not); with the cache 500 greedy tokens took 0.30 s, without 1.53 s;
# - cheap evaluations: the exact validation loss is 217 windows (111,540 tokens, 4 forward
#   passes of 64), the training estimate 8 batches; nanoGPT estimates both on 200 batches.
GPU = Preset(
    name="gpu",
    n_layer=6,
    n_head=6,
    n_embd=384,
    block_size=512,
    dropout=0.2,
    batch_size=64,
    steps=1500,
    lr=1.5e-3,
    min_lr=1e-4,
    warmup=50,
    beta2=0.99,
    eval_interval=100,
    eval_iters=8,
    patience=3,
    autocast="bf16",
)

# tiny: about 90 s on a 2-core CPU with both threads free (make demo), on the offline default corpus (Python
# docstrings): the cpu preset's model and recipe, a few more steps, fewer evaluation batches
TINY = CPU.replace(name="tiny", steps=1000, eval_interval=250, eval_iters=10, corpus="default")

PRESETS: dict[str, Preset] = {p.name: p for p in (CPU, GPU, TINY)}


def get_preset(name: str) -> Preset:
    """The preset called ``name``.

    Raises:
        ValueError: for an unknown name.
    """
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}: choose one of {', '.join(PRESETS)}") from None
