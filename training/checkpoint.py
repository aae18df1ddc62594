"""Checkpoints as plain data: tensors, numbers, strings, lists and dicts, no pickled objects.

A checkpoint loads with ``torch.load(path, weights_only=True)``. It holds the model's
:class:`~training.model.TrainConfig` and the preset as dicts, the tokenizer as its
``state()``, and

- ``model``: the weights *kept*, those of the evaluation with the lowest exact validation
  loss (``best_step``, ``best_val_loss``): what ``gptcourse sample`` and
  :func:`model_from` load;
- ``train_state``: the last step's weights, the optimiser state and the random-number
  states, so that a resumed run draws the batches an uninterrupted one would have and
  continues exactly; ``step`` is that step, ``history`` the losses so far.

Format 1 (before the best was kept) had the last weights as ``model`` and no
``train_state``: it still loads for sampling, not for resuming.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
from pathlib import Path

import torch

from training.data import BPE, ByteBPE, CharTokenizer, tokenizer_from_state
from training.model import TrainConfig, TrainGPT
from training.presets import Preset

FORMAT = "gptcourse-checkpoint-2"
FILENAME = "ckpt.pt"  # what a run writes into its folder (loop.Run) and train keeps aside (cli)
OLD_FORMATS = ("gptcourse-checkpoint-1",)
# torch.load on a file that is no checkpoint: not a zip (RuntimeError), not a pickle
# (UnpicklingError), a text file (KeyError), cut short (EOFError, RuntimeError)
UNREADABLE = (RuntimeError, pickle.UnpicklingError, KeyError, EOFError, ValueError)


def save(
    path: Path,
    *,
    model: TrainGPT,
    best: dict[str, torch.Tensor] | None,
    best_step: int | None,
    best_val_loss: float | None,
    optimizer: torch.optim.Optimizer,
    preset: Preset,
    tokenizer: CharTokenizer | BPE | ByteBPE,
    corpus: str,
    step: int,
    history: dict[str, list],
    generator: torch.Generator,
) -> None:
    """Write a checkpoint atomically (a temporary file, then a rename).

    ``model`` is the model at ``step`` (its weights go to ``train_state``); ``best`` the
    weights kept (``None``: none evaluated yet, the model's own are kept).
    """
    state = {
        "format": FORMAT,
        "config": dataclasses.asdict(model.config),
        "preset": dataclasses.asdict(preset),
        "tokenizer": tokenizer.state(),
        "corpus": corpus,
        "step": step,
        "model": best if best is not None else model.state_dict(),
        "best_step": best_step,
        "best_val_loss": best_val_loss,
        "history": history,
        "train_state": {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "rng": {
                "batches": generator.get_state(),
                "torch": torch.get_rng_state(),
                "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
            },
        },
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def load(path: Path | str, device: torch.device | str = "cpu") -> dict:
    """Read a checkpoint onto ``device`` (``map_location``: a checkpoint written on a GPU loads on
    a CPU-only machine), with ``weights_only=True`` (plain data and tensors only).

    Raises:
        ValueError: if the file is missing or is not a gptcourse checkpoint.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no checkpoint at {path}")
    try:
        state = torch.load(path, map_location=device, weights_only=True)
    except UNREADABLE as error:  # what torch.load raises for a file that is no checkpoint it can read
        first = str(error).strip().splitlines()[0][:120] if str(error).strip() else type(error).__name__
        raise ValueError(f"{path} is not a gptcourse checkpoint (torch could not read it: {first})") from error
    if not isinstance(state, dict) or state.get("format") not in (FORMAT, *OLD_FORMATS):
        raise ValueError(f"{path} is not a gptcourse checkpoint")
    return state


def resumable(state: dict, path: Path | str) -> dict:
    """``state`` if a run can continue from it.

    Raises:
        ValueError: for a checkpoint of format 1, which lacks the last step's state.
    """
    if "train_state" not in state:
        raise ValueError(f"{path} was written by an older gptcourse: it samples, but a run cannot resume from it")
    return state


def config_dict(state: dict) -> dict:
    """The model's configuration in a checkpoint (or ``{"config": a TrainConfig}``), as a dict with
    every field (an older checkpoint's learned positions filled in)."""
    config = state["config"]
    return dataclasses.asdict(config) if isinstance(config, TrainConfig) else dataclasses.asdict(TrainConfig(**config))


def model_from(state: dict, device: torch.device | str = "cpu") -> tuple[TrainGPT, CharTokenizer | BPE | ByteBPE]:
    """The kept model (in eval mode, on ``device``) and its tokenizer."""
    model = TrainGPT(TrainConfig(**config_dict(state)))
    model.load_state_dict(state["model"])
    return model.to(device).eval(), tokenizer_from_state(state["tokenizer"])


def preset_from(state: dict) -> Preset:
    """The preset the checkpointed run was started with (fields added since filled by their defaults)."""
    known = {f.name for f in dataclasses.fields(Preset)}
    fields = {k: v for k, v in state["preset"].items() if k in known}
    if isinstance(fields.get("compile"), bool):  # format 1: compile was True or False
        fields["compile"] = "model" if fields["compile"] else "none"
    return Preset(**fields)
