"""Checkpoints as plain data: tensors, numbers, strings, lists and dicts, no pickled objects.

A checkpoint loads with ``torch.load(path, weights_only=True)``: it holds the model's
``GPTConfig`` and the preset as dicts, the tokenizer as its ``state()``, the model and
optimiser state dicts, the random-number states (so a resumed run draws the batches
an uninterrupted one would have), the step reached and the history so far.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import torch

from solutions.gpt import GPT, GPTConfig
from training.data import BPE, CharTokenizer, tokenizer_from_state
from training.presets import Preset

FORMAT = "gptcourse-checkpoint-1"


def save(
    path: Path,
    *,
    model: GPT,
    optimizer: torch.optim.Optimizer,
    preset: Preset,
    tokenizer: CharTokenizer | BPE,
    corpus: str,
    step: int,
    history: dict[str, list],
    generator: torch.Generator,
) -> None:
    """Write a checkpoint atomically (a temporary file, then a rename)."""
    state = {
        "format": FORMAT,
        "config": dataclasses.asdict(model.config),
        "preset": dataclasses.asdict(preset),
        "tokenizer": tokenizer.state(),
        "corpus": corpus,
        "step": step,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "history": history,
        "rng": {
            "batches": generator.get_state(),
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        },
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def load(path: Path | str, device: torch.device | str = "cpu") -> dict:
    """Read a checkpoint (``weights_only=True``: plain data and tensors only).

    Raises:
        ValueError: if the file is missing or is not a gptcourse checkpoint.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no checkpoint at {path}")
    state = torch.load(path, map_location=device, weights_only=True)
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValueError(f"{path} is not a gptcourse checkpoint")
    return state


def model_from(state: dict, device: torch.device | str = "cpu") -> tuple[GPT, CharTokenizer | BPE]:
    """The trained model (in eval mode, on ``device``) and its tokenizer."""
    model = GPT(GPTConfig(**state["config"]))
    model.load_state_dict(state["model"])
    return model.to(device).eval(), tokenizer_from_state(state["tokenizer"])


def preset_from(state: dict) -> Preset:
    """The preset the checkpointed run was started with."""
    return Preset(**state["preset"])
