"""Generation for ``gptcourse sample``: a preallocated KV cache, no host syncs, CUDA graphs.

Stage 08's ``generate_cached`` shows the idea of a KV cache; written for clarity, it
grows each layer's cache with ``torch.cat`` and builds a mask at every token, and on a
GPU the time goes to launching those small kernels, not to arithmetic (issue 24: 1.2x over
plain generation on an H100, against 9.5x on a CPU). Here:

- the cache is allocated once, ``(B, H, block_size, D)`` per layer for keys and values,
  and each new token's key and value are written in place at its position;
- the position is a 0-d tensor on the device, advanced in place, and the new tokens are
  written into a preallocated output on the device: nothing is read back to the host
  until the end (no ``.item()``, no per-token sync);
- every decoding step has the same shapes (a single query attends to the whole cache,
  the positions not yet written masked out), so on CUDA the step is captured once as a
  CUDA graph and replayed: one launch per token instead of one per operation;
- the draws come from a generator on the logits' device (stage 08's ``sample_next``).

Within ``block_size`` the cache is exact: greedy decoding gives the tokens of plain
generation (``cache=False``), which runs the model on the whole (cropped) window for every
token. Past ``block_size`` the window slides; cached keys would belong to other positions
(learned or sinusoidal positions) or other contexts (every scheme), so each such token
is computed from the cropped window, with or without the cache.

Example:
    >>> from training.model import TrainConfig, TrainGPT
    >>> model = TrainGPT(TrainConfig(vocab_size=10, block_size=16, n_layer=2, n_embd=16))
    >>> prompt = torch.zeros(2, 3, dtype=torch.long)
    >>> cached = generate_fast(model, prompt, 20, temperature=0)
    >>> torch.equal(cached, generate_fast(model, prompt, 20, temperature=0, cache=False))
    True
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from solutions.generation import sample_next
from training.model import TrainGPT


class KVDecoder:
    """A model's layers with a preallocated KV cache for ``batch`` sequences.

    :meth:`prefill` runs a prompt and fills the cache from position 0; :meth:`step` runs
    one token at the position in :attr:`pos` (a 0-d device tensor) and advances it.
    """

    def __init__(self, model: TrainGPT, batch: int) -> None:
        c = model.config
        self.model, self.block = model, c.block_size
        device, dtype = next(model.parameters()).device, next(model.parameters()).dtype
        shape = (c.n_layer, batch, c.n_head, c.block_size, c.n_embd // c.n_head)  # (L, B, H, block, D)
        self.keys = torch.zeros(shape, device=device, dtype=dtype)
        self.values = torch.zeros(shape, device=device, dtype=dtype)
        self.key_positions = torch.arange(c.block_size, device=device)  # (block,)
        self.pos = torch.zeros((), dtype=torch.long, device=device)  # the next position to fill

    def _rope(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
        m = self.model
        return (m.rope_cos[positions], m.rope_sin[positions]) if m.config.positions == "rope" else None

    def _rest_of_block(self, block, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The block after attention: ``y (B, H, T, D)`` merged, projected, the residuals and the MLP."""
        m = self.model
        a = block.attn.out_proj(y.transpose(1, 2).reshape(x.shape))  # (B, T, C)
        if m.config.norm_first:
            x = x + a
            return x + block.ff(m.layer_norm(block.ln2, x))
        x = m.layer_norm(block.ln1, x + a)
        return m.layer_norm(block.ln2, x + block.ff(x))

    def prefill(self, tokens: torch.Tensor) -> torch.Tensor:
        """Run ``tokens (B, T)``, ``T <= block_size``, at positions ``0 .. T-1``; fill the cache; return
        the last position's logits ``(B, V)``."""
        m, T = self.model, tokens.size(1)
        x = m.embed(tokens)  # (B, T, C)
        rope = self._rope(self.key_positions[:T])
        for layer, block in enumerate(m.blocks):
            h = m.layer_norm(block.ln1, x) if m.config.norm_first else x
            q, k, v = m.attend(block, h, rope)  # (B, H, T, D) each
            self.keys[layer, :, :, :T] = k
            self.values[layer, :, :, :T] = v
            x = self._rest_of_block(block, x, F.scaled_dot_product_attention(q, k, v, is_causal=True))
        self.pos.fill_(T)
        return m.head(m.layer_norm(m.ln_f, x[:, -1]))  # (B, V)

    def step(self, token: torch.Tensor) -> torch.Tensor:
        """Run ``token (B, 1)`` at position :attr:`pos` (which must be below ``block_size``), write its
        keys and values there, advance :attr:`pos`; return its logits ``(B, V)``. Fixed shapes, no sync."""
        m = self.model
        where = self.pos.view(1)  # (1,)
        x = m.embed(token, start=self.pos)  # (B, 1, C)
        rope = self._rope(where)
        visible = (self.key_positions <= self.pos).view(1, 1, 1, self.block)  # keys written so far, this one included
        for layer, block in enumerate(m.blocks):
            h = m.layer_norm(block.ln1, x) if m.config.norm_first else x
            q, k, v = m.attend(block, h, rope)  # (B, H, 1, D) each
            self.keys[layer].index_copy_(2, where, k)
            self.values[layer].index_copy_(2, where, v)
            y = F.scaled_dot_product_attention(q, self.keys[layer], self.values[layer], attn_mask=visible)
            x = self._rest_of_block(block, x, y)
        self.pos += 1
        return m.head(m.layer_norm(m.ln_f, x[:, -1]))  # (B, V)


class GraphedStep:
    """:meth:`KVDecoder.step` captured once as a CUDA graph and replayed for every token."""

    def __init__(self, decoder: KVDecoder, batch: int) -> None:
        self.decoder = decoder
        device = decoder.pos.device
        self.token = torch.zeros(batch, 1, dtype=torch.long, device=device)
        stream = torch.cuda.Stream(device)
        stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(stream):  # warm-up outside the graph (kernels chosen, workspaces made)
            for _ in range(2):
                decoder.pos.zero_()
                decoder.step(self.token)
        torch.cuda.current_stream(device).wait_stream(stream)
        decoder.pos.zero_()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.logits = decoder.step(self.token)
        decoder.pos.zero_()  # the capture ran nothing; prefill sets the real position

    def __call__(self, token: torch.Tensor) -> torch.Tensor:
        self.token.copy_(token)
        self.graph.replay()
        return self.logits


@torch.no_grad()
def generate_fast(
    model: TrainGPT,
    idx: torch.Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
    cache: bool = True,
    graphs: bool | None = None,
) -> torch.Tensor:
    """Extend ``idx (B, T0)`` by ``max_new_tokens`` tokens; returns ``(B, T0 + max_new_tokens)`` on the model's device.

    ``cache=True`` uses :class:`KVDecoder` (with a CUDA graph when ``graphs``, by default on
    CUDA); ``cache=False`` runs the model on the last ``block_size`` tokens for every new
    token. Tokens are chosen by stage 08's ``sample_next`` (``temperature=0``: greedy); a
    ``generator`` must live on the model's device. Eval mode inside, the caller's mode after.

    Raises:
        ValueError: if ``idx`` is not a non-empty ``(B, T0)`` tensor, ``max_new_tokens`` is
            negative, or the generator is on another device than the model.
    """
    if idx.dim() != 2 or idx.size(1) == 0:
        raise ValueError(f"idx must be a non-empty (B, T0) tensor, got shape {tuple(idx.shape)}")
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be non-negative, got {max_new_tokens}")
    device = next(model.parameters()).device
    if generator is not None and generator.device.type != device.type:
        raise ValueError(f"the generator is on {generator.device}, the model on {device}: make it on {device}")
    B, T0, block = idx.size(0), idx.size(1), model.config.block_size
    out = torch.empty(B, T0 + max_new_tokens, dtype=torch.long, device=device)
    out[:, :T0] = idx

    def choose(logits: torch.Tensor) -> torch.Tensor:
        return sample_next(logits, temperature, top_k, top_p, generator)  # (B, 1)

    def windowed(t: int) -> torch.Tensor:
        """The logits after the first ``t`` tokens of ``out``, from the last ``block`` of them."""
        return model(out[:, max(0, t - block) : t])[0][:, -1]

    was_training = model.training
    model.eval()
    try:
        decoder = step = None
        filled = 0  # positions in the cache (known on the host: no sync)
        if cache and max_new_tokens > 0:
            decoder = KVDecoder(model, B)
            use_graphs = device.type == "cuda" if graphs is None else graphs
            step = GraphedStep(decoder, B) if use_graphs else decoder.step
            context = out[:, max(0, T0 - block) : T0]
            logits, filled = decoder.prefill(context), context.size(1)
        for t in range(T0, T0 + max_new_tokens):
            if decoder is None:
                logits = windowed(t)
            elif t > T0:  # the token at t-1 is new: run it through the cache, or the window once past the block
                if filled < block:
                    logits, filled = step(out[:, t - 1 : t]), filled + 1
                else:
                    logits = windowed(t)
            out[:, t : t + 1] = choose(logits)
    finally:
        model.train(was_training)
    return out
