"""The model ``gptcourse train`` trains: stage 07's GPT with fused kernels and a choice of positions.

:class:`TrainGPT` *is* the reference :class:`solutions.gpt.GPT` (same modules, same
parameter names, same initialisation), with a forward pass written for speed:

- attention through ``F.scaled_dot_product_attention(..., is_causal=True)`` (flash or
  memory-efficient kernels on CUDA, a fused kernel on CPU) instead of the reference's
  explicit ``(T, T)`` scores, mask and softmax;
- LayerNorm through ``F.layer_norm`` with the reference's own ``weight``, ``bias`` and ``eps``.

With learned positions its state dict is the reference GPT's, so a checkpoint loads into
either; without dropout both compute the same function (to float rounding, see
``tests/test_training.py``). :attr:`TrainConfig.positions` picks one of stage 03's
position schemes:

- ``learned``: the reference's ``pos_emb`` table (GPT-2);
- ``sinusoidal``: the fixed table of stage 03's ``sinusoidal_positions`` added to the
  token embeddings (a buffer, not learned, not saved);
- ``rope``: no added positions; every head's queries and keys are rotated as by stage
  03's ``apply_rope`` (interleaved pairs, base 10000), with the angles computed once;
- ``none``: no position information at all (the causal mask alone tells order).

Example:
    >>> model = TrainGPT(TrainConfig(vocab_size=10, block_size=8, n_layer=1, n_embd=16, positions="rope"))
    >>> logits, loss = model(torch.randint(10, (2, 8)), torch.randint(10, (2, 8)))
    >>> logits.shape, hasattr(model, "pos_emb")
    (torch.Size([2, 8, 10]), False)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from solutions.attention import sinusoidal_positions
from solutions.gpt import GPT, GPTConfig

POSITIONS = ("learned", "sinusoidal", "rope", "none")
ROPE_BASE = 10000.0


@dataclass
class TrainConfig(GPTConfig):
    """:class:`solutions.gpt.GPTConfig` and the position scheme (one of :data:`POSITIONS`)."""

    positions: str = "learned"


def rope_tables(T: int, D: int, device: torch.device | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``cos`` and ``sin`` of the RoPE angles ``p * base^(-2i/D)``, each ``(T, D/2)``, float32."""
    positions = torch.arange(T, dtype=torch.float64, device=device).unsqueeze(1)  # (T, 1)
    inv_freq = ROPE_BASE ** (-torch.arange(0, D, 2, dtype=torch.float64, device=device) / D)  # (D/2,)
    angles = positions * inv_freq  # (T, D/2)
    return torch.cos(angles).float(), torch.sin(angles).float()


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate the interleaved pairs of ``x (B, H, T, D)`` by the angles of ``cos``/``sin`` ``(T, D/2)``.

    Equal to stage 03's ``apply_rope(x)`` when the tables cover positions ``0 .. T-1``.
    """
    even, odd = x[..., 0::2], x[..., 1::2]  # (B, H, T, D/2)
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


class TrainGPT(GPT):
    """The reference GPT with fused attention and LayerNorm, and a choice of positions."""

    def __init__(self, config: TrainConfig) -> None:
        """Build the reference GPT, then set up ``config.positions``.

        Raises:
            ValueError: for an unknown position scheme, an odd ``n_embd`` with sinusoidal
                positions or an odd head size with RoPE (and whatever the GPT refuses).
        """
        if config.positions not in POSITIONS:
            raise ValueError(f"unknown positions {config.positions!r}: choose one of {', '.join(POSITIONS)}")
        super().__init__(config)
        self.compiled_block: Callable | None = None  # set by compile_blocks: used in training mode
        C, T, H = config.n_embd, config.block_size, config.n_head
        if config.positions != "learned":
            del self.pos_emb  # no learned table: the state dict has no pos_emb.weight
        if config.positions == "sinusoidal":
            if C % 2:
                raise ValueError(f"sinusoidal positions need an even n_embd, got {C}")
            self.register_buffer("pos_table", sinusoidal_positions(T, C), persistent=False)  # (T, C)
        if config.positions == "rope":
            if (C // H) % 2:
                raise ValueError(f"RoPE needs an even head size, got n_embd / n_head = {C // H}")
            cos, sin = rope_tables(T, C // H)
            self.register_buffer("rope_cos", cos, persistent=False)  # (T, D/2)
            self.register_buffer("rope_sin", sin, persistent=False)

    def embed(self, idx: torch.Tensor, start: int | torch.Tensor = 0) -> torch.Tensor:
        """Token embeddings of ``idx (B, T)`` at positions ``start .. start+T-1``, positions added
        (learned or sinusoidal); ``(B, T, C)``. ``start`` may be a 0-d tensor (no host sync)."""
        T = idx.size(1)
        x = self.tok_emb(idx)  # (B, T, C)
        positions = self.config.positions
        if positions in ("learned", "sinusoidal"):
            pos = torch.arange(T, device=idx.device) + start  # (T,)
            x = x + (self.pos_emb(pos) if positions == "learned" else self.pos_table[pos])
        return x

    def attend(
        self, block: nn.Module, h: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor] | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The block's queries, keys and values of ``h (B, T, C)``, ``(B, H, T, D)`` each, RoPE applied."""
        attn, (B, T, C), H = block.attn, h.shape, self.config.n_head
        q, k, v = (proj(h).view(B, T, H, C // H).transpose(1, 2) for proj in (attn.q_proj, attn.k_proj, attn.v_proj))
        if rope is not None:
            q, k = rotate(q, *rope), rotate(k, *rope)
        return q, k, v

    def layer_norm(self, ln: nn.Module, x: torch.Tensor) -> torch.Tensor:
        """The reference LayerNorm ``ln`` as one fused kernel."""
        return F.layer_norm(x, (x.size(-1),), ln.weight, ln.bias, ln.eps)

    def forward(
        self, idx: torch.Tensor, targets: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """As :meth:`solutions.gpt.GPT.forward`: ``(logits (B, T, V), loss or None)``.

        Raises:
            ValueError: if ``idx`` is not 2-D or ``T > block_size``.
        """
        if idx.dim() != 2:
            raise ValueError(f"idx must be (B, T), got shape {tuple(idx.shape)}")
        B, T = idx.shape
        if T > self.config.block_size:
            raise ValueError(f"sequence length {T} exceeds block_size {self.config.block_size}")
        rope = (self.rope_cos[:T], self.rope_sin[:T]) if self.config.positions == "rope" else None
        x = self.drop(self.embed(idx))  # (B, T, C)
        run_block = self.compiled_block if self.compiled_block is not None and self.training else self.block
        for block in self.blocks:
            x = run_block(block, x, rope)
        logits = self.head(self.layer_norm(self.ln_f, x))  # (B, T, V)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T), ignore_index=-100)
        return logits, loss

    def block(self, block: nn.Module, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor:
        """One transformer block on ``x (B, T, C)``, causal, in the block's pre- or post-norm order."""
        attn, norm_first = block.attn, self.config.norm_first
        h = self.layer_norm(block.ln1, x) if norm_first else x
        q, k, v = self.attend(block, h, rope)
        p = attn.attn_dropout.p if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)  # (B, H, T, D)
        a = attn.resid_dropout(attn.out_proj(y.transpose(1, 2).reshape(x.shape)))  # (B, T, C)
        if norm_first:
            x = x + a
            return x + block.ff(self.layer_norm(block.ln2, x))
        x = self.layer_norm(block.ln1, x + a)
        return self.layer_norm(block.ln2, x + block.ff(x))


def compile_blocks(model: TrainGPT, **options) -> TrainGPT:
    """Compile the transformer block once for all layers (``torch.compile(model.block, **options)``),
    for training mode; evaluation and generation stay uncompiled. Returns ``model``.

    "Regional" compilation: every layer has the same structure, so one compiled block serves
    them all (one graph with the parameters as inputs, at most two: ``tests/test_training_model.py``),
    which compiles in a fraction of the time the whole model takes.
    """
    model.compiled_block = torch.compile(model.block, **options)
    return model


def config_from(state: dict) -> TrainConfig:
    """A :class:`TrainConfig` from its ``dataclasses.asdict`` (a checkpoint's ``config``)."""
    return TrainConfig(**state)
