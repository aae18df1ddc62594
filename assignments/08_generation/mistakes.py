"""Realistic mistakes and correct alternatives for stage 08_generation.

Each cell is written from a template with the right code in every slot; a mistake
changes one slot. The tests keep the questions apart: ``generate`` and ``kv_cache`` run
on the grader's stand-in models and with the grader's own ``sample_next``, so a
``sample_next`` mistake costs nothing there, and no test runs the student's ``GPT``.
"""

from autograder.authoring.catalogue import Variant

# ---------------------------------------------------------------- sampling

_SAMPLE = """
def sample_next(logits, temperature=1.0, top_k=None, top_p={top_p_default}, generator=None):
    if logits.dim() != 2:
        raise ValueError("logits must be (B, V)")
    if temperature < 0:
        raise ValueError("temperature must be >= 0")
    if top_k is not None and top_k < 1:
        raise ValueError("top_k must be >= 1")
    if {p_check}:
        raise ValueError("top_p must be in (0, 1]")
    {greedy}
    logits = {scaled}
    {filters}
    probs = {probs}
    return {drawn}
"""

_TOP_K = """if top_k is not None:
        kth = torch.topk(logits, min(top_k, logits.size(-1)), dim=-1).values[{kth_index}]
        logits = logits.masked_fill(logits {kth_compare} kth, float("-inf"))"""

_TOP_P = """if top_p is not None and top_p < 1:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        sorted_probs = F.softmax(sorted_logits, dim=-1)
        {mass}
        drop[:, 0] = False
        sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
        logits = torch.empty_like(logits).scatter(-1, order, sorted_logits)"""

_SAMPLE_RIGHT = {
    "top_p_default": "None",
    "p_check": "top_p is not None and not 0 < top_p <= 1",
    "drawn": "torch.multinomial(probs, 1, generator=generator)",
    "greedy": "if temperature == 0:\n        return logits.argmax(dim=-1, keepdim=True)",
    "scaled": "logits / temperature",
    "probs": "F.softmax(logits, dim=-1)",
    "kth_index": ":, -1:",
    "kth_compare": "<",
    "mass": "drop = sorted_probs.cumsum(dim=-1) - sorted_probs >= top_p",
    "order": "k_then_p",
}


def _sample(**changes: str) -> str:
    slots = {**_SAMPLE_RIGHT, **changes}
    top_k = _TOP_K.format(kth_index=slots["kth_index"], kth_compare=slots["kth_compare"])
    top_p = _TOP_P.format(mass=slots["mass"])
    filters = f"{top_k}\n    {top_p}" if slots["order"] == "k_then_p" else f"{top_p}\n    {top_k}"
    return _SAMPLE.format(
        filters=filters, **{k: v for k, v in slots.items() if k not in ("kth_index", "kth_compare", "mass", "order")}
    )


# ---------------------------------------------------------------- generate

_GENERATE = """
def generate(model, idx, max_new_tokens, temperature=1.0, top_k={top_k_default}, top_p=None, generator=None):
    if {check}:
        raise ValueError("idx must be (B, T0) and max_new_tokens >= 0")
    block_size = model.config.block_size
    idx = idx.to(next(model.parameters()).device)
    start = idx.size(1)
    was_training = model.training
    model.eval()
    with {grad_context}:
        for _ in range({count}):
            logits, _ = model({context})
            next_id = sample_next(logits[{position}], {arguments})
            idx = torch.cat([idx, next_id], dim=1)
    {restore}
    return {result}
"""

_GENERATE_RIGHT = {
    "top_k_default": "None",
    "check": "idx.dim() != 2 or max_new_tokens < 0",
    "count": "max_new_tokens",
    "result": "idx",
    "grad_context": "torch.no_grad()",
    "context": "idx[:, -block_size:]",
    "position": ":, -1, :",
    "arguments": "temperature, top_k, top_p, generator",
    "restore": "model.train(was_training)",
}


def _generate(**changes: str) -> str:
    return _GENERATE.format(**{**_GENERATE_RIGHT, **changes})


# ---------------------------------------------------------------- kv_cache

_CACHED = """
def generate_cached(model, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    if {check}:
        raise ValueError("idx must be (B, T0) and max_new_tokens >= 0")
    cfg = model.config
    H = cfg.n_head

    def run(tokens, cache):
        T = tokens.size(1)
        start = 0 if cache is None else cache[0][0].size(2)
        pos = {positions}
        x = model.tok_emb(tokens) + model.pos_emb(pos)
        mask = torch.ones(T, start + T, dtype=torch.bool, device=tokens.device).triu(start + 1)
        new_cache = []
        for layer, block in enumerate(model.blocks):
            attn = block.attn
            h = block.ln1(x) if {pre_norm} else x
            q = split_heads(attn.q_proj(h), H)
            k = split_heads(attn.k_proj(h), H)
            v = split_heads(attn.v_proj(h), H)
            if cache is not None:
                k = torch.cat([cache[layer][0], k], dim=2)
                v = torch.cat([cache[layer][1], v], dim=2)
            {keep}
            scores = q @ k.transpose(-2, -1) / {scale}
            a = attn.out_proj(merge_heads(F.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) @ v))
            if {pre_norm}:
                x = x + a
                x = x + block.ff(block.ln2(x))
            else:
                x = block.ln1(x + a)
                x = block.ln2(x + block.ff(x))
        return {out}, new_cache

    idx = idx.to(next(model.parameters()).device)
    start = idx.size(1)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        logits, cache = run({prefill}, None)
        for i in range({count}):
            next_id = sample_next(logits, {arguments})
            idx = torch.cat([idx, next_id], dim=1)
            if i + 1 < max_new_tokens:
                {advance}
    {restore}
    return {result}
"""

_CACHED_RIGHT = {
    "check": "idx.dim() != 2 or max_new_tokens < 0",
    "scale": "math.sqrt(q.size(-1))",
    "out": "model.head(model.ln_f(x[:, -1]))",
    "prefill": "idx[:, -cfg.block_size:]",
    "count": "max_new_tokens",
    "arguments": "temperature, top_k, top_p, generator",
    "restore": "model.train(was_training)",
    "result": "idx",
    "positions": "torch.arange(start, start + T, device=tokens.device)",
    "pre_norm": "cfg.norm_first",
    "keep": "new_cache.append((k, v))",
    "advance": (
        "if cache[0][0].size(2) < cfg.block_size:\n"
        "                    logits, cache = run(next_id, cache)\n"
        "                else:\n"
        "                    logits, cache = run(idx[:, -cfg.block_size:], None)"
    ),
}


def _cached(**changes: str) -> str:
    return _CACHED.format(**{**_CACHED_RIGHT, **changes})


_NO_PUBLIC = "no public test {}"

MISTAKES = [
    # sampling
    Variant(
        "sampling",
        "temperature applied after the softmax",
        {"sample_next": _sample(scaled="logits", probs="F.softmax(logits, dim=-1) / temperature")},
        clauses=("temperature",),
    ),
    Variant(
        "sampling",
        "top-p drops the token that crosses the threshold",
        {"sample_next": _sample(mass="drop = sorted_probs.cumsum(dim=-1) > top_p")},
        hints=("top-p drops the crossing token",),
        clauses=("top-p",),
    ),
    Variant(
        "sampling",
        "top-p applied before top-k",
        {"sample_next": _sample(order="p_then_k")},
        hints=("top-p before top-k",),
        clauses=("order",),
    ),
    Variant(
        "sampling", "temperature 0 not treated as greedy", {"sample_next": _sample(greedy="pass")}, clauses=("greedy",)
    ),
    Variant(
        "sampling",
        "the first row's k-th value filters every row",
        {"sample_next": _sample(kth_index="0, -1")},
        clauses=("rows",),
    ),
    Variant(
        "sampling",
        "the generator is not used",
        {"sample_next": _sample(drawn="torch.multinomial(probs, 1)")},
        clauses=("generator",),
    ),
    Variant(
        "sampling",
        "top_k keeps k - 1 tokens (the k-th value itself filtered out)",
        {"sample_next": _sample(kth_compare="<=")},
        hints=("top_k keeps one token too few",),
        clauses=("top-k",),
    ),
    Variant(
        "sampling",
        "greedy picks without keepdim: shape (B,)",
        {"sample_next": _sample(greedy="if temperature == 0:\n        return logits.argmax(dim=-1)")},
        clauses=("shape",),
    ),
    Variant(
        "sampling",
        "the drawn tokens returned as int32",
        {"sample_next": _sample(drawn="torch.multinomial(probs, 1, generator=generator).int()")},
        clauses=("dtype",),
    ),
    Variant(
        "sampling",
        "top_p defaults to 0.9: a filter without being asked",
        {"sample_next": _sample(top_p_default="0.9")},
        clauses=("all-tokens",),
    ),
    Variant(
        "sampling",
        "top_p's range never checked",
        {"sample_next": _sample(p_check="False")},
        clauses=("errors",),
    ),
    # generate
    Variant("generate", "no context cropping", {"generate": _generate(context="idx")}, clauses=("crop",)),
    Variant(
        "generate",
        "the first position's logits used",
        {"generate": _generate(position=":, 0, :")},
        clauses=("last-position",),
    ),
    Variant("generate", "the model left in eval mode", {"generate": _generate(restore="pass")}, clauses=("mode",)),
    Variant(
        "generate",
        "the model put in training mode after, whatever the caller's mode (model.train())",
        {"generate": _generate(restore="model.train()")},
        clauses=("mode",),
    ),
    Variant(
        "generate",
        "the sampling arguments not passed on",
        {"generate": _generate(arguments="generator=generator")},
        clauses=("passed-on",),
    ),
    Variant(
        "generate",
        "generation keeps the gradients (no torch.no_grad)",
        {"generate": _generate(grad_context="torch.enable_grad()")},
        clauses=("mode",),
    ),
    Variant(
        "generate",
        "only the new tokens returned, without the prompt",
        {"generate": _generate(result="idx[:, start:]")},
        hints=("prompt dropped",),
        clauses=("shape-prompt",),
    ),
    Variant(
        "generate",
        "top_k defaults to 50",
        {"generate": _generate(top_k_default="50")},
        hidden_only=_NO_PUBLIC.format("calls generate without sampling arguments"),
        clauses=("defaults",),
    ),
    Variant(
        "generate",
        "at least one token generated, even for max_new_tokens=0",
        {"generate": _generate(count="max(max_new_tokens, 1)")},
        hidden_only=_NO_PUBLIC.format("asks for 0 new tokens"),
        clauses=("zero-new",),
    ),
    Variant(
        "generate",
        "a negative max_new_tokens accepted",
        {"generate": _generate(check="idx.dim() != 2")},
        hidden_only=_NO_PUBLIC.format("of generate's errors"),
        clauses=("errors",),
    ),
    # kv_cache
    Variant(
        "kv_cache",
        "wrong positions: each new token at position 0",
        {"generate_cached": _cached(positions="torch.arange(T, device=tokens.device)")},
        hints=("prefill right, decode step wrong",),
        clauses=("positions",),
    ),
    Variant(
        "kv_cache",
        "a cache that recomputes everything",
        {"generate_cached": _cached(advance="logits = model(idx[:, -cfg.block_size:])[0][:, -1]")},
        clauses=("one-position",),
    ),
    Variant(
        "kv_cache",
        "the new keys and values never enter the cache",
        {"generate_cached": _cached(keep="new_cache.append(cache[layer] if cache is not None else (k, v))")},
        hints=("prefill right, decode step wrong",),
        clauses=("one-position",),
    ),
    Variant(
        "kv_cache",
        "pre-norm order for every model",
        {"generate_cached": _cached(pre_norm="True")},
        clauses=("norm-order",),
    ),
    Variant(
        "kv_cache",
        "the cache keeps growing past block_size",
        {"generate_cached": _cached(advance="logits, cache = run(next_id, cache)")},
        clauses=("past-block",),
    ),
    Variant(
        "kv_cache",
        "only the new tokens returned, without the prompt",
        {"generate_cached": _cached(result="idx[:, start:]")},
        hints=("prompt dropped",),
        clauses=("shape-prompt",),
    ),
    Variant(
        "kv_cache",
        "attention scores not divided by sqrt(head size)",
        {"generate_cached": _cached(scale="1.0")},
        clauses=("greedy-exact",),
    ),
    Variant(
        "kv_cache",
        "log-probabilities handed to sample_next instead of logits",
        {"generate_cached": _cached(out="model.head(model.ln_f(x[:, -1])).log_softmax(dim=-1)")},
        hidden_only=_NO_PUBLIC.format("looks at the logits handed to sample_next by generate_cached"),
        clauses=("logits-whole",),
    ),
    Variant(
        "kv_cache",
        "the prompt not cropped to block_size",
        {"generate_cached": _cached(prefill="idx")},
        hidden_only=_NO_PUBLIC.format("gives generate_cached a prompt longer than block_size"),
        clauses=("crop",),
    ),
    Variant(
        "kv_cache",
        "the generator not passed on",
        {"generate_cached": _cached(arguments="temperature, top_k, top_p")},
        hidden_only=_NO_PUBLIC.format("looks at generate_cached's calls of sample_next"),
        clauses=("passed-on",),
    ),
    Variant(
        "kv_cache",
        "the model left in eval mode",
        {"generate_cached": _cached(restore="pass")},
        hidden_only=_NO_PUBLIC.format("looks at the mode after generate_cached"),
        clauses=("mode",),
    ),
    Variant(
        "kv_cache",
        "at least one token generated, even for max_new_tokens=0",
        {"generate_cached": _cached(count="max(max_new_tokens, 1)")},
        hidden_only=_NO_PUBLIC.format("asks generate_cached for 0 new tokens"),
        clauses=("zero-new",),
    ),
    Variant(
        "kv_cache",
        "a negative max_new_tokens accepted",
        {"generate_cached": _cached(check="idx.dim() != 2")},
        hidden_only=_NO_PUBLIC.format("of generate_cached's errors"),
        clauses=("errors",),
    ),
]


ALTERNATIVES = [
    Variant(
        "sampling",
        "filters on sorted probabilities, inverse-CDF draws",
        {
            "sample_next": """
        def sample_next(logits, temperature=1.0, top_k=None, top_p=None, generator=None):
            if logits.ndim != 2:
                raise ValueError(f"expected logits of shape (B, V), got {tuple(logits.shape)}")
            if temperature < 0 or (top_k is not None and top_k <= 0) or (top_p is not None and not 0 < top_p <= 1):
                raise ValueError(f"bad arguments: temperature={temperature}, top_k={top_k}, top_p={top_p}")
            if temperature == 0:
                return torch.argmax(logits, dim=1).unsqueeze(1)
            probs = torch.softmax(logits / temperature, dim=1)
            ranked, order = probs.sort(dim=1, descending=True)
            keep = torch.ones_like(ranked, dtype=torch.bool)
            if top_k is not None:
                keep[:, top_k:] = False
            if top_p is not None and top_p < 1:
                kept = ranked * keep
                kept = kept / kept.sum(dim=1, keepdim=True)
                keep &= torch.cumsum(kept, dim=1) - kept < top_p
            cdf = torch.cumsum(ranked * keep, dim=1)
            u = torch.rand(logits.size(0), 1, generator=generator) * cdf[:, -1:].cpu()
            choice = torch.searchsorted(cdf.cpu(), u).clamp(max=logits.size(1) - 1)
            return order.gather(1, choice.to(order.device))
    """
        },
    ),
    Variant(
        "generate",
        "a while loop under inference_mode, restored in finally",
        {
            "generate": """
        def generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
            if max_new_tokens < 0:
                raise ValueError("max_new_tokens must be >= 0")
            if idx.ndim != 2:
                raise ValueError(f"idx must be (B, T0), got {tuple(idx.shape)}")
            mode = model.training
            model.train(False)
            out = idx.to(next(model.parameters()).device)
            target = out.size(1) + max_new_tokens
            try:
                with torch.inference_mode():
                    while out.size(1) < target:
                        window = out[:, max(0, out.size(1) - model.config.block_size):]
                        scores = model(window)[0][:, -1]
                        choice = sample_next(scores, temperature=temperature, top_k=top_k, top_p=top_p, generator=generator)
                        out = torch.cat((out, choice), dim=1)
            finally:
                model.train(mode)
            return out
    """
        },
    ),
    Variant(
        "kv_cache",
        "preallocated cache tensors and scaled_dot_product_attention",
        {
            "generate_cached": """
        def generate_cached(model, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
            if idx.ndim != 2 or max_new_tokens < 0:
                raise ValueError(f"need a (B, T0) prompt and max_new_tokens >= 0, got {tuple(idx.shape)} and {max_new_tokens}")
            cfg = model.config
            n_head, width, limit = cfg.n_head, cfg.n_embd, cfg.block_size
            head_dim = width // n_head
            device = next(model.parameters()).device
            idx = idx.to(device)
            B = idx.size(0)
            keys = [torch.zeros(B, n_head, limit, head_dim, device=device) for _ in model.blocks]
            values = [torch.zeros(B, n_head, limit, head_dim, device=device) for _ in model.blocks]
            filled = 0

            def heads(t):  # (B, T, C) -> (B, H, T, D)
                return t.view(B, -1, n_head, head_dim).transpose(1, 2)

            def advance(tokens):
                nonlocal filled
                T = tokens.size(1)
                x = model.tok_emb(tokens) + model.pos_emb(torch.arange(filled, filled + T, device=device))
                allowed = torch.ones(T, filled + T, dtype=torch.bool, device=device).tril(filled)
                for layer, block in enumerate(model.blocks):
                    h = block.ln1(x) if cfg.norm_first else x
                    q = heads(block.attn.q_proj(h))
                    keys[layer][:, :, filled:filled + T] = heads(block.attn.k_proj(h))
                    values[layer][:, :, filled:filled + T] = heads(block.attn.v_proj(h))
                    y = F.scaled_dot_product_attention(q, keys[layer][:, :, :filled + T], values[layer][:, :, :filled + T], attn_mask=allowed)
                    a = block.attn.out_proj(y.transpose(1, 2).reshape(B, T, width))
                    if cfg.norm_first:
                        x = x + a
                        x = x + block.ff(block.ln2(x))
                    else:
                        mid = block.ln1(x + a)
                        x = block.ln2(mid + block.ff(mid))
                filled += T
                return model.head(model.ln_f(x[:, -1]))

            was_training = model.training
            model.eval()
            try:
                with torch.no_grad():
                    logits = advance(idx[:, -limit:])
                    for step in range(max_new_tokens):
                        token = sample_next(logits, temperature, top_k, top_p, generator)
                        idx = torch.cat([idx, token], dim=1)
                        if step == max_new_tokens - 1:
                            break
                        if filled == limit:  # the window slides: rebuild the cache from it
                            filled = 0
                            logits = advance(idx[:, -limit:])
                        else:
                            logits = advance(token)
            finally:
                model.train(was_training)
            return idx
    """
        },
    ),
]
