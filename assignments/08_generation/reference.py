"""Reference solutions for stage 08_generation: sampling, generation and a KV cache.

Sampling the next token with temperature, top-k and top-p, generation one token at a
time, and the same with a KV cache, for the GPT of stage 07. Every graded name here is
self-contained: the build copies its source into the reference notebook, and its
signature and docstring into the student's stub.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from solutions.gpt import GPT, GPTConfig  # noqa: F401 (the docstrings' examples build one)


def sample_next(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Draw one next token per row from ``logits (B, V)``; returns ``(B, 1)`` long.

    - ``temperature == 0``: greedy, the most likely token (``top_k``, ``top_p`` and
      ``generator`` are then unused); otherwise the logits are divided by ``temperature``.
    - ``top_k``: only the ``k`` most likely tokens stay (all of them if ``k >= V``; tokens
      tied with the ``k``-th may stay too).
    - ``top_p`` (nucleus): only the smallest set of most likely tokens whose total
      probability reaches ``top_p`` stays; the most likely token always stays.
      With both, ``top_k`` is applied first and ``top_p`` to the renormalised rest.
    - ``generator``: the draw is made with it, where the logits are; it must live on
      their device (``torch.Generator(device=logits.device)``), as a generator drives
      only the draws of its own device.

    Raises:
        ValueError: if ``logits`` is not 2-D, ``temperature < 0``, ``top_k < 1`` or
            ``top_p`` is outside ``(0, 1]``.

    Example:
        >>> logits = torch.tensor([[2.0, 1.0, 0.5, -1.0]])
        >>> sample_next(logits, temperature=0).tolist()
        [[0]]
        >>> probs = torch.softmax(logits, -1)       # 0.61, 0.22, 0.14, 0.03
        >>> draws = torch.cat([sample_next(logits, top_p=0.8) for _ in range(200)])
        >>> sorted(set(draws.flatten().tolist()))   # 0.61 < 0.8 <= 0.83: two tokens
        [0, 1]
    """
    if logits.dim() != 2:
        raise ValueError(f"logits must be (B, V), got shape {tuple(logits.shape)}")
    if temperature < 0:
        raise ValueError(f"temperature must be non-negative, got {temperature}")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if temperature == 0:
        return logits.argmax(dim=-1, keepdim=True)  # (B, 1)

    logits = logits.float() / temperature
    if top_k is not None and top_k < logits.size(-1):
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]  # (B, 1): the k-th largest
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        sorted_logits, order = logits.sort(dim=-1, descending=True)  # (B, V)
        sorted_probs = F.softmax(sorted_logits, dim=-1)
        mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs  # mass of the more likely tokens
        drop = mass_before >= top_p  # the set had already reached top_p without this token
        drop[:, 0] = False  # the most likely token always stays
        sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
        logits = torch.full_like(logits, float("-inf")).scatter(-1, order, sorted_logits)

    probs = F.softmax(logits, dim=-1)  # (B, V)
    return torch.multinomial(probs, 1, generator=generator)  # (B, 1), drawn on the logits' device


def generate(
    model: nn.Module,
    idx: torch.Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Extend ``idx (B, T0)`` by ``max_new_tokens`` sampled tokens; returns ``(B, T0+max_new_tokens)``.

    Each step runs the model on the last ``block_size`` tokens (the whole context
    again, no cache) and draws the next token with :func:`sample_next`. Runs in eval
    mode without gradients, on the model's device, and puts the model back in the
    mode it was in.

    Raises:
        ValueError: if ``idx`` is not a non-empty ``(B, T0)`` tensor or
            ``max_new_tokens`` is negative.

    Example:
        >>> model = GPT(GPTConfig(vocab_size=10, block_size=8, n_layer=1, n_embd=16))
        >>> generate(model, torch.zeros(2, 3, dtype=torch.long), 12, temperature=0).shape
        torch.Size([2, 15])
    """
    if idx.dim() != 2 or idx.size(1) == 0:
        raise ValueError(f"idx must be a non-empty (B, T0) tensor, got shape {tuple(idx.shape)}")
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be non-negative, got {max_new_tokens}")
    block_size = model.config.block_size
    idx = idx.to(next(model.parameters()).device)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for _ in range(max_new_tokens):
                logits, _ = model(idx[:, -block_size:])  # (B, T, V)
                next_id = sample_next(logits[:, -1, :], temperature, top_k, top_p, generator)  # (B, 1)
                idx = torch.cat([idx, next_id], dim=1)
    finally:
        model.train(was_training)
    return idx


def generate_cached(
    model: nn.Module,
    idx: torch.Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """:func:`generate` with a KV cache: each new token runs the model on one position.

    The cache holds, for every layer, the keys and the values of every position seen
    so far, ``(B, H, t, D)`` each. The prompt (cropped to ``block_size``) is run once
    ("prefill"), filling the cache; after that, each new token is embedded at its
    position, and in every layer only its query, key and value are computed: its key
    and value are appended to the layer's cache and its query attends to all cached
    keys. Earlier positions never need recomputing because attention is causal.

    The cached pass is written here from the parts of the model (``tok_emb``,
    ``pos_emb``, and each block's ``ln1``, ``attn.q_proj`` ... ``attn.out_proj``,
    ``ln2``, ``ff``, then ``ln_f`` and ``head``), so ``GPT``, ``TransformerBlock`` and
    ``MultiHeadAttention`` need no change.

    Beyond ``block_size``: the positions are absolute, learned embeddings, so once the
    sequence is longer than ``block_size`` the window slides and every cached key
    would belong to a different position. Sliding the cache would change the
    result, so instead each such step falls back to recomputing the cropped window
    (the last ``block_size`` tokens) from scratch, exactly as :func:`generate` does.
    Within ``block_size`` the cache is used throughout; greedy decoding
    (``temperature=0``) gives the tokens of :func:`generate` at every length.

    Raises:
        ValueError: if ``idx`` is not a non-empty ``(B, T0)`` tensor or
            ``max_new_tokens`` is negative.

    Example:
        >>> model = GPT(GPTConfig(vocab_size=10, block_size=16, n_layer=2, n_embd=16))
        >>> prompt = torch.zeros(2, 3, dtype=torch.long)
        >>> torch.equal(generate_cached(model, prompt, 10, temperature=0),
        ...             generate(model, prompt, 10, temperature=0))
        True
    """
    if idx.dim() != 2 or idx.size(1) == 0:
        raise ValueError(f"idx must be a non-empty (B, T0) tensor, got shape {tuple(idx.shape)}")
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be non-negative, got {max_new_tokens}")
    config = model.config
    H = config.n_head

    def forward_cached(
        tokens: torch.Tensor, cache: list[tuple[torch.Tensor, torch.Tensor]] | None
    ) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
        """Run ``tokens (B, T_new)`` that follow the cached positions; return the
        logits of the last one ``(B, V)`` and the cache extended by ``T_new`` positions."""
        B, T_new = tokens.shape
        past = 0 if cache is None else cache[0][0].size(2)  # positions already cached
        pos = torch.arange(past, past + T_new, device=tokens.device)  # absolute positions
        x = model.tok_emb(tokens) + model.pos_emb(pos)  # (B, T_new, C)
        C = x.size(-1)
        # query i (absolute position past+i) may see keys 0 .. past+i
        mask = torch.ones(T_new, past + T_new, dtype=torch.bool, device=tokens.device).triu(past + 1)
        new_cache = []
        for layer, block in enumerate(model.blocks):
            attn = block.attn
            h = block.ln1(x) if config.norm_first else x  # the attention's input
            q = attn.q_proj(h).view(B, T_new, H, C // H).transpose(1, 2)  # (B, H, T_new, D)
            k = attn.k_proj(h).view(B, T_new, H, C // H).transpose(1, 2)
            v = attn.v_proj(h).view(B, T_new, H, C // H).transpose(1, 2)
            if cache is not None:
                k = torch.cat([cache[layer][0], k], dim=2)  # (B, H, past+T_new, D)
                v = torch.cat([cache[layer][1], v], dim=2)
            new_cache.append((k, v))
            scores = q @ k.transpose(-2, -1) / math.sqrt(C // H)  # (B, H, T_new, past+T_new)
            weights = F.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
            a = attn.out_proj((weights @ v).transpose(1, 2).reshape(B, T_new, C))  # (B, T_new, C)
            if config.norm_first:
                x = x + a
                x = x + block.ff(block.ln2(x))
            else:
                x = block.ln1(x + a)
                x = block.ln2(x + block.ff(x))
        logits = model.head(model.ln_f(x[:, -1, :]))  # (B, V)
        return logits, new_cache

    idx = idx.to(next(model.parameters()).device)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            logits, cache = forward_cached(idx[:, -config.block_size :], None)  # prefill
            for i in range(max_new_tokens):
                next_id = sample_next(logits, temperature, top_k, top_p, generator)  # (B, 1)
                idx = torch.cat([idx, next_id], dim=1)
                if i == max_new_tokens - 1:
                    break  # no logits needed after the last token
                if cache[0][0].size(2) < config.block_size:
                    logits, cache = forward_cached(next_id, cache)  # one position
                else:  # the window slides: recompute the last block_size tokens
                    logits, cache = forward_cached(idx[:, -config.block_size :], None)
    finally:
        model.train(was_training)
    return idx
