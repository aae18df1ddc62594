"""Realistic mistakes and correct alternatives for stage 04_masking."""

from autograder.authoring.catalogue import Variant

MISTAKES = [
    # causal_mask
    Variant(
        "causal_mask",
        "diagonal=0 blocks each position from itself",
        {
            "causal_mask": """
        def causal_mask(T, device=None):
            return torch.triu(torch.ones(T, T, dtype=torch.bool, device=device), diagonal=0)
    """
        },
        hints=("diagonal blocked",),
    ),
    Variant(
        "causal_mask",
        "inverted: True marks the keys that may be attended",
        {
            "causal_mask": """
        def causal_mask(T, device=None):
            return torch.tril(torch.ones(T, T, device=device)).bool()
    """
        },
        hints=("mask inverted",),
    ),
    Variant(
        "causal_mask",
        "transposed: blocks the past, opens the future",
        {
            "causal_mask": """
        def causal_mask(T, device=None):
            return torch.ones(T, T, device=device).tril(diagonal=-1).bool()
    """
        },
        hints=("past blocked instead of the future",),
    ),
    Variant(
        "causal_mask",
        "additive float mask of 0 and -inf",
        {
            "causal_mask": """
        def causal_mask(T, device=None):
            return torch.full((T, T), float("-inf"), device=device).triu(diagonal=1)
    """
        },
        hints=("mask not boolean",),
    ),
    Variant(
        "causal_mask",
        "device argument ignored",
        {
            "causal_mask": """
        def causal_mask(T, device=None):
            return torch.triu(torch.ones(T, T), diagonal=1).bool()
    """
        },
        hints=("device ignored",),
    ),
    # padding_mask
    Variant(
        "padding_mask",
        "shape (B, T, 1): blocks queries instead of keys",
        {
            "padding_mask": """
        def padding_mask(ids, pad_id):
            return (ids == pad_id).unsqueeze(-1)
    """
        },
        hints=("padding mask (B, T, 1)",),
    ),
    Variant(
        "padding_mask",
        "shape (B, T) without the query axis",
        {
            "padding_mask": """
        def padding_mask(ids, pad_id):
            return ids == pad_id
    """
        },
        hints=("padding mask (B, T)",),
    ),
    Variant(
        "padding_mask",
        "pad id hard-coded as 0",
        {
            "padding_mask": """
        def padding_mask(ids, pad_id):
            return (ids == 0)[:, None, :]
    """
        },
        hints=("pad id fixed",),
    ),
    Variant(
        "padding_mask",
        "inverted: True on the real tokens",
        {
            "padding_mask": """
        def padding_mask(ids, pad_id):
            return (ids != pad_id).unsqueeze(1)
    """
        },
        hints=("mask inverted",),
    ),
    Variant(
        "padding_mask",
        "shape (B, 1, 1, T) with a head axis",
        {
            "padding_mask": """
        def padding_mask(ids, pad_id):
            return (ids == pad_id)[:, None, None, :]
    """
        },
        hints=("padding mask with a head axis",),
    ),
    # combined_mask
    Variant(
        "combined_mask",
        "AND instead of OR",
        {
            "combined_mask": """
        def combined_mask(ids, pad_id):
            return causal_mask(ids.shape[1], device=ids.device) & padding_mask(ids, pad_id)
    """
        },
        hints=("AND instead of OR",),
    ),
    Variant(
        "combined_mask",
        "padding applied on the query side",
        {
            "combined_mask": """
        def combined_mask(ids, pad_id):
            T = ids.shape[1]
            return causal_mask(T, device=ids.device) | (ids == pad_id).unsqueeze(2)
    """
        },
        hints=("padding on the query side",),
    ),
    Variant(
        "combined_mask",
        "padding broadcast as (B, T): right only when B == T",
        {
            "combined_mask": """
        def combined_mask(ids, pad_id):
            T = ids.shape[1]
            return causal_mask(T, device=ids.device) | (ids == pad_id)
    """
        },
    ),
    Variant(
        "combined_mask",
        "inverted: True where attention is allowed",
        {
            "combined_mask": """
        def combined_mask(ids, pad_id):
            return ~(causal_mask(ids.shape[1], device=ids.device) | padding_mask(ids, pad_id))
    """
        },
        hints=("mask inverted",),
    ),
    Variant(
        "combined_mask",
        "own causal part built with diagonal=0",
        {
            "combined_mask": """
        def combined_mask(ids, pad_id):
            B, T = ids.shape
            future = torch.ones(T, T, dtype=torch.bool, device=ids.device).triu()
            return future | (ids == pad_id)[:, None, :]
    """
        },
        hints=("diagonal blocked",),
    ),
    # shift
    Variant(
        "shift",
        "drops the first token instead of the last",
        {
            "shift_right": """
        def shift_right(tokens, start_id):
            start = torch.full((tokens.shape[0], 1), start_id, dtype=tokens.dtype, device=tokens.device)
            return torch.cat([start, tokens[:, 1:]], dim=1)
    """
        },
        hints=("first token dropped",),
    ),
    Variant(
        "shift",
        "shifts left, the way targets move",
        {
            "shift_right": """
        def shift_right(tokens, start_id):
            start = torch.full((tokens.shape[0], 1), start_id, dtype=tokens.dtype, device=tokens.device)
            return torch.cat([tokens[:, 1:], start], dim=1)
    """
        },
        hints=("shift to the left",),
    ),
    Variant(
        "shift",
        "keeps every token (length T + 1)",
        {
            "shift_right": """
        def shift_right(tokens, start_id):
            start = torch.full((tokens.shape[0], 1), start_id, dtype=tokens.dtype, device=tokens.device)
            return torch.cat([start, tokens], dim=1)
    """
        },
        hints=("shift keeps every token",),
    ),
    Variant(
        "shift",
        "writes into the caller's tensor",
        {
            "shift_right": """
        def shift_right(tokens, start_id):
            tokens[:, 1:] = tokens[:, :-1].clone()
            tokens[:, 0] = start_id
            return tokens
    """
        },
        hints=("writes into the input",),
    ),
    Variant(
        "shift",
        "start column made with torch.ones (float result)",
        {
            "shift_right": """
        def shift_right(tokens, start_id):
            start = torch.ones(tokens.shape[0], 1) * start_id
            return torch.cat([start, tokens[:, :-1]], dim=1)
    """
        },
        hints=("shift changes the dtype",),
    ),
    Variant(
        "shift",
        "start column made on the default device",
        {
            "shift_right": """
        def shift_right(tokens, start_id):
            if tokens.dim() != 2:
                raise ValueError("tokens must be (B, T)")
            start = torch.full((tokens.shape[0], 1), start_id, dtype=tokens.dtype)
            return torch.cat([start, tokens[:, :-1]], dim=1)
    """
        },
        hints=("start column off the tokens' device",),
    ),
    # pad_and_shift
    Variant(
        "pad_and_shift",
        "targets padded with pad_id",
        {
            "pad_and_shift": """
        def pad_and_shift(sequences, start_id, pad_id, ignore_index=-100):
            if not sequences:
                raise ValueError("no sequences")
            T = max(len(s) for s in sequences)
            inputs = torch.full((len(sequences), T), pad_id, dtype=torch.long)
            targets = torch.full((len(sequences), T), pad_id, dtype=torch.long)
            for b, s in enumerate(sequences):
                inputs[b, : len(s)] = torch.tensor([start_id] + list(s[:-1]))
                targets[b, : len(s)] = torch.tensor(s)
            return inputs, targets
    """
        },
        hints=("targets padded with pad_id",),
    ),
    Variant(
        "pad_and_shift",
        "pads first, then shifts the padded batch",
        {
            "pad_and_shift": """
        def pad_and_shift(sequences, start_id, pad_id, ignore_index=-100):
            if not sequences:
                raise ValueError("no sequences")
            T = max(len(s) for s in sequences)
            padded = torch.full((len(sequences), T), pad_id, dtype=torch.long)
            targets = torch.full((len(sequences), T), ignore_index, dtype=torch.long)
            for b, s in enumerate(sequences):
                padded[b, : len(s)] = torch.tensor(s)
                targets[b, : len(s)] = torch.tensor(s)
            return shift_right(padded, start_id), targets
    """
        },
        hints=("padded before shifting",),
    ),
    Variant(
        "pad_and_shift",
        "pads on the left",
        {
            "pad_and_shift": """
        def pad_and_shift(sequences, start_id, pad_id, ignore_index=-100):
            if not sequences:
                raise ValueError("no sequences")
            T = max(len(s) for s in sequences)
            inputs = torch.full((len(sequences), T), pad_id, dtype=torch.long)
            targets = torch.full((len(sequences), T), ignore_index, dtype=torch.long)
            for b, s in enumerate(sequences):
                inputs[b, T - len(s) :] = torch.tensor([start_id] + list(s[:-1]))
                targets[b, T - len(s) :] = torch.tensor(s)
            return inputs, targets
    """
        },
        hints=("padding on the left",),
    ),
    Variant(
        "pad_and_shift",
        "ignore_index argument ignored (always -100)",
        {
            "pad_and_shift": """
        def pad_and_shift(sequences, start_id, pad_id, ignore_index=-100):
            if not sequences:
                raise ValueError("no sequences")
            T = max(len(s) for s in sequences)
            inputs = torch.full((len(sequences), T), pad_id, dtype=torch.long)
            targets = torch.full((len(sequences), T), -100, dtype=torch.long)
            for b, s in enumerate(sequences):
                inputs[b, : len(s)] = torch.tensor([start_id] + list(s[:-1]))
                targets[b, : len(s)] = torch.tensor(s)
            return inputs, targets
    """
        },
        hints=("ignore_index argument ignored",),
    ),
    Variant(
        "pad_and_shift",
        "inputs not shifted (start token forgotten)",
        {
            "pad_and_shift": """
        def pad_and_shift(sequences, start_id, pad_id, ignore_index=-100):
            if not sequences:
                raise ValueError("no sequences")
            T = max(len(s) for s in sequences)
            inputs = torch.full((len(sequences), T), pad_id, dtype=torch.long)
            targets = torch.full((len(sequences), T), ignore_index, dtype=torch.long)
            for b, s in enumerate(sequences):
                inputs[b, : len(s)] = torch.tensor(s)
                targets[b, : len(s)] = torch.tensor(s)
            return inputs, targets
    """
        },
        hints=("inputs not shifted",),
    ),
    Variant(
        "pad_and_shift",
        "inputs built on torch.zeros (float ids)",
        {
            "pad_and_shift": """
        def pad_and_shift(sequences, start_id, pad_id, ignore_index=-100):
            if not sequences:
                raise ValueError("no sequences")
            T = max(len(s) for s in sequences)
            inputs = torch.zeros(len(sequences), T) + pad_id
            targets = torch.full((len(sequences), T), ignore_index)
            for b, s in enumerate(sequences):
                inputs[b, : len(s)] = torch.tensor([start_id] + list(s[:-1]))
                targets[b, : len(s)] = torch.tensor(s)
            return inputs, targets
    """
        },
        hints=("batch not torch.long",),
    ),
    # lm_loss
    Variant(
        "lm_loss",
        "mean over every position, ignored ones included",
        {
            "lm_loss": """
        def lm_loss(logits, targets, ignore_index=-100):
            B, T, V = logits.shape
            if targets.shape != (B, T):
                raise ValueError("targets must be (B, T)")
            per_position = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), ignore_index=ignore_index, reduction="none")
            return per_position.mean()
    """
        },
        hints=("mean over every position",),
    ),
    Variant(
        "lm_loss",
        "ignore_index not passed on",
        {
            "lm_loss": """
        def lm_loss(logits, targets, ignore_index=-100):
            B, T, V = logits.shape
            if targets.shape != (B, T):
                raise ValueError("targets must be (B, T)")
            return F.cross_entropy(logits.reshape(B * T, V), targets.reshape(B * T))
    """
        },
        hints=("ignore_index not passed on",),
    ),
    Variant(
        "lm_loss",
        "(B, T, V) passed to cross_entropy as it is (runs only when T == V)",
        {
            "lm_loss": """
        def lm_loss(logits, targets, ignore_index=-100):
            return F.cross_entropy(logits, targets, ignore_index=ignore_index)
    """
        },
    ),
    Variant(
        "lm_loss",
        "sum instead of mean",
        {
            "lm_loss": """
        def lm_loss(logits, targets, ignore_index=-100):
            B, T, V = logits.shape
            if targets.shape != (B, T):
                raise ValueError("targets must be (B, T)")
            return F.cross_entropy(logits.view(-1, V), targets.view(-1), ignore_index=ignore_index, reduction="sum")
    """
        },
        hints=("sum instead of mean",),
    ),
    Variant(
        "lm_loss",
        "returns a Python float",
        {
            "lm_loss": """
        def lm_loss(logits, targets, ignore_index=-100):
            B, T, V = logits.shape
            if targets.shape != (B, T):
                raise ValueError("targets must be (B, T)")
            return F.cross_entropy(logits.view(-1, V), targets.view(-1), ignore_index=ignore_index).item()
    """
        },
        hints=("loss returned as a float",),
    ),
    Variant(
        "lm_loss",
        "softmax applied before cross_entropy",
        {
            "lm_loss": """
        def lm_loss(logits, targets, ignore_index=-100):
            B, T, V = logits.shape
            if targets.shape != (B, T):
                raise ValueError("targets must be (B, T)")
            probs = torch.softmax(logits, dim=-1)
            return F.cross_entropy(probs.view(-1, V), targets.view(-1), ignore_index=ignore_index)
    """
        },
    ),
]

ALTERNATIVES = [
    Variant(
        "causal_mask",
        "comparison of position indices",
        {
            "causal_mask": """
        def causal_mask(T, device=None):
            if not isinstance(T, int) or isinstance(T, bool) or T < 0:
                raise ValueError(f"T must be a non-negative int, got {T!r}")
            i = torch.arange(T, device=device)
            return i[None, :] > i[:, None]
    """
        },
    ),
    Variant(
        "causal_mask",
        "torch.tril negated",
        {
            "causal_mask": """
        def causal_mask(T, device=None):
            if type(T) is not int or T < 0:
                raise ValueError("T must be a non-negative integer")
            allowed = torch.tril(torch.ones(T, T, dtype=torch.bool, device=device))
            return ~allowed
    """
        },
    ),
    Variant(
        "padding_mask",
        "eq and view",
        {
            "padding_mask": """
        def padding_mask(ids, pad_id):
            if ids.dim() != 2:
                raise ValueError(f"ids must be (B, T), got {tuple(ids.shape)}")
            B, T = ids.shape
            return ids.eq(pad_id).view(B, 1, T)
    """
        },
    ),
    Variant(
        "combined_mask",
        "self-contained with explicit broadcasting",
        {
            "combined_mask": """
        def combined_mask(ids, pad_id):
            B, T = ids.shape
            pos = torch.arange(T, device=ids.device)
            future = (pos.view(1, T) > pos.view(T, 1)).unsqueeze(0)   # (1, T, T)
            pad = (ids == pad_id).unsqueeze(1)                          # (B, 1, T)
            return (future | pad).expand(B, T, T).clone()
    """
        },
    ),
    Variant(
        "combined_mask",
        "built from the stage's own helpers with torch.logical_or",
        {
            "combined_mask": """
        def combined_mask(ids, pad_id):
            return torch.logical_or(causal_mask(ids.size(1), ids.device), padding_mask(ids, pad_id))
    """
        },
    ),
    Variant(
        "shift",
        "F.pad then slice",
        {
            "shift_right": """
        def shift_right(tokens, start_id):
            if tokens.ndim != 2:
                raise ValueError(f"tokens must be (B, T), got {tuple(tokens.shape)}")
            return F.pad(tokens, (1, 0), value=start_id)[:, :-1]
    """
        },
    ),
    Variant(
        "shift",
        "torch.roll, then overwrite the first column of the copy",
        {
            "shift_right": """
        def shift_right(tokens, start_id):
            if len(tokens.shape) != 2:
                raise ValueError("shift_right needs a (B, T) tensor")
            out = torch.roll(tokens, shifts=1, dims=1)
            out[:, 0] = start_id
            return out
    """
        },
    ),
    Variant(
        "pad_and_shift",
        "pad_sequence and the student's own shift_right",
        {
            "pad_and_shift": """
        def pad_and_shift(sequences, start_id, pad_id, ignore_index=-100):
            from torch.nn.utils.rnn import pad_sequence

            if len(sequences) == 0:
                raise ValueError("pad_and_shift needs at least one sequence")
            rows = [torch.as_tensor(s, dtype=torch.long) for s in sequences]
            inputs = pad_sequence([shift_right(r[None], start_id)[0] for r in rows], batch_first=True, padding_value=pad_id)
            targets = pad_sequence(rows, batch_first=True, padding_value=ignore_index)
            return inputs, targets
    """
        },
    ),
    Variant(
        "lm_loss",
        "log_softmax, gather and a masked mean",
        {
            "lm_loss": """
        def lm_loss(logits, targets, ignore_index=-100):
            if logits.dim() != 3 or logits.shape[:-1] != targets.shape:
                raise ValueError(f"shapes {tuple(logits.shape)} and {tuple(targets.shape)} do not match")
            keep = targets != ignore_index
            logp = torch.log_softmax(logits, dim=-1)
            picked = logp.gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)
            return -(picked * keep).sum() / keep.sum()
    """
        },
    ),
    Variant(
        "lm_loss",
        "cross_entropy with the class axis moved to position 1",
        {
            "lm_loss": """
        def lm_loss(logits, targets, ignore_index=-100):
            if logits.dim() != 3 or logits.shape[:2] != targets.shape:
                raise ValueError("logits must be (B, T, V) and targets (B, T)")
            return F.cross_entropy(logits.transpose(1, 2), targets, ignore_index=ignore_index)
    """
        },
    ),
]
