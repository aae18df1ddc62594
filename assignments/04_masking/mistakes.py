"""Realistic mistakes and correct alternatives for stage 04_masking.

Most mistakes are the reference with one slip (``slip(reference(...), (old, new))``), so that each
breaks exactly the clause (``clauses.md`` id) it declares; a few are written out whole,
as a student would write them.
"""

from autograder.authoring.catalogue import Variant, reference, slip

# question -> the stub (a reference function of solutions.masking) its mistakes slip
_STUBS = {
    "causal_mask": "causal_mask",
    "padding_mask": "padding_mask",
    "combined_mask": "combined_mask",
    "shift": "shift_right",
    "pad_and_shift": "pad_and_shift",
    "lm_loss": "lm_loss",
}


def mistake(qid, name, changes, clauses, **options):
    """A mistake of ``qid``: its reference with each ``(old, new)`` of ``changes`` made."""
    stub = _STUBS[qid]
    return Variant(qid, name, {stub: slip(reference("masking", stub), *changes)}, clauses=clauses, **options)


# A correct pad_and_shift that pads first, shifts the whole batch with shift_right, and
# then writes pad_id where the target is ignored.
_WHOLE_BATCH_SHIFT = """
        def pad_and_shift(sequences, start_id, pad_id, ignore_index=-100):
            if len(sequences) == 0:
                raise ValueError("no sequences")
            T_max = max(len(s) for s in sequences)
            targets = torch.full((len(sequences), T_max), ignore_index, dtype=torch.long)
            for b, s in enumerate(sequences):
                targets[b, : len(s)] = torch.tensor(s, dtype=torch.long)
            ignored = targets == ignore_index
            inputs = shift_right(targets.masked_fill(ignored, pad_id), start_id).masked_fill(ignored, pad_id)
            return inputs, targets
    """

MISTAKES = [
    # causal_mask
    mistake(
        "causal_mask",
        "diagonal=0 blocks each position from itself",
        [(".triu(diagonal=1)", ".triu(diagonal=0)")],
        ("diagonal",),
        hints=("diagonal blocked",),
    ),
    mistake(
        "causal_mask",
        "inverted: True marks the keys that may be attended",
        [(".triu(diagonal=1)", ".tril()")],
        ("future", "diagonal"),
        hints=("mask inverted",),
    ),
    mistake(
        "causal_mask",
        "transposed: blocks the past, opens the future",
        [(".triu(diagonal=1)", ".tril(diagonal=-1)")],
        ("future",),
        hints=("past blocked instead of the future",),
    ),
    mistake(
        "causal_mask",
        "additive float mask of 0 and -inf",
        [("torch.ones(T, T, dtype=torch.bool, device=device)", 'torch.full((T, T), float("-inf"), device=device)')],
        ("bool-shape",),
        hints=("mask not boolean",),
    ),
    mistake(
        "causal_mask",
        "device argument ignored",
        [("torch.ones(T, T, dtype=torch.bool, device=device)", "torch.ones(T, T, dtype=torch.bool)")],
        ("device",),
        hints=("device ignored",),
    ),
    mistake("causal_mask", "T = 0 refused as not positive", [("T < 0:", "T < 1:")], ("empty",)),
    mistake(
        "causal_mask",
        "T not checked",
        [
            (
                "    if isinstance(T, bool) or not isinstance(T, int) or T < 0:\n"
                '        raise ValueError(f"T must be a non-negative integer, got {T!r}")\n',
                "",
            )
        ],
        ("not-int",),
    ),
    # padding_mask
    mistake(
        "padding_mask",
        "shape (B, T, 1): blocks queries instead of keys",
        [(".unsqueeze(1)", ".unsqueeze(-1)")],
        ("shape",),
        hints=("padding mask (B, T, 1)",),
    ),
    mistake(
        "padding_mask",
        "shape (B, T) without the query axis",
        [(".unsqueeze(1)", "")],
        ("shape",),
        hints=("padding mask (B, T)",),
    ),
    mistake(
        "padding_mask",
        "pad id hard-coded as 0",
        [("(ids == pad_id)", "(ids == 0)")],
        ("pad-id",),
        hints=("pad id fixed",),
    ),
    mistake(
        "padding_mask",
        "inverted: True on the real tokens",
        [("(ids == pad_id)", "(ids != pad_id)")],
        ("padding-true",),
        hints=("mask inverted",),
    ),
    mistake(
        "padding_mask",
        "shape (B, 1, 1, T) with a head axis",
        [(".unsqueeze(1)", "[:, None, None, :]")],
        ("shape",),
        hints=("padding mask with a head axis",),
    ),
    mistake(
        "padding_mask",
        "ids that are not 2-D not rejected",
        [("if ids.dim() != 2:", "if ids.dim() > 2:")],
        ("not-2d",),
    ),
    Variant(  # the combined_mask is right: it leaves the check to padding_mask, whose table refuses those ids
        "padding_mask",
        "no check of the ids, with a combined_mask that leaves its check to padding_mask",
        {
            "padding_mask": slip(
                reference("masking", "padding_mask"),
                (
                    "    if ids.dim() != 2:\n"
                    '        raise ValueError(f"ids must have shape (B, T), got {tuple(ids.shape)}")\n',
                    "",
                ),
            ),
            "combined_mask": """
        def combined_mask(ids, pad_id):
            return causal_mask(ids.shape[-1], device=ids.device) | padding_mask(ids, pad_id)
    """,
        },
        clauses=("not-2d",),
    ),
    # combined_mask
    mistake(
        "combined_mask",
        "AND instead of OR",
        [("causal_mask(ids.shape[1], device=ids.device) |", "causal_mask(ids.shape[1], device=ids.device) &")],
        ("or",),
        hints=("AND instead of OR",),
    ),
    mistake(
        "combined_mask",
        "padding applied on the query side",
        [("padding_mask(ids, pad_id)", "(ids == pad_id).unsqueeze(2)")],
        ("keys",),
        hints=("padding on the query side",),
    ),
    mistake(
        "combined_mask",
        "padding broadcast as (B, T): right only when B == T",
        [("padding_mask(ids, pad_id)", "(ids == pad_id)")],
        ("keys",),
    ),
    mistake(
        "combined_mask",
        "inverted: True where attention is allowed",
        [
            (
                "return causal_mask(ids.shape[1], device=ids.device) | padding_mask(ids, pad_id)",
                "return ~(causal_mask(ids.shape[1], device=ids.device) | padding_mask(ids, pad_id))",
            )
        ],
        ("or", "diagonal"),
        hints=("mask inverted",),
    ),
    mistake(
        "combined_mask",
        "own causal part built with diagonal=0",
        [
            (
                "causal_mask(ids.shape[1], device=ids.device)",
                "torch.ones(ids.shape[1], ids.shape[1], dtype=torch.bool, device=ids.device).triu()",
            )
        ],
        ("diagonal",),
        hints=("diagonal blocked",),
    ),
    mistake(
        "combined_mask",
        "the mask returned as 0/1 floats",
        [
            ("| padding_mask(ids, pad_id)", "| padding_mask(ids, pad_id)).float()"),
            ("return causal_mask(", "return (causal_mask("),
        ],
        ("shape",),
    ),
    mistake(
        "combined_mask",
        "ids that are not 2-D not rejected",
        [("if ids.dim() != 2:", "if ids.dim() > 2:")],
        ("not-2d",),
    ),
    # shift
    mistake(
        "shift",
        "drops the first token instead of the last",
        [("tokens[:, :-1]", "tokens[:, 1:]")],
        ("row",),
        hints=("first token dropped",),
    ),
    mistake(
        "shift",
        "shifts left, the way targets move",
        [("torch.cat([start, tokens[:, :-1]], dim=1)", "torch.cat([tokens[:, 1:], start], dim=1)")],
        ("row",),
        hints=("shift to the left",),
    ),
    Variant(  # the pad_and_shift is right: it shifts the padded batch, whose shift the table answers
        "shift",
        "shifts to the left, with a pad_and_shift that shifts the whole padded batch",
        {
            "shift_right": slip(
                reference("masking", "shift_right"),
                ("torch.cat([start, tokens[:, :-1]], dim=1)", "torch.cat([tokens[:, 1:], start], dim=1)"),
            ),
            "pad_and_shift": _WHOLE_BATCH_SHIFT,
        },
        clauses=("row",),
        hints=("shift to the left",),
    ),
    mistake(
        "shift",
        "keeps every token (length T + 1)",
        [("tokens[:, :-1]", "tokens")],
        ("shape",),
        hints=("shift keeps every token",),
    ),
    Variant(
        "shift",
        "writes into the caller's tensor",
        {
            "shift_right": """
        def shift_right(tokens, start_id):
            if tokens.dim() != 2:
                raise ValueError("tokens must be (B, T)")
            tokens[:, 1:] = tokens[:, :-1].clone()
            tokens[:, 0] = start_id
            return tokens
    """
        },
        hints=("writes into the input",),
        clauses=("new-tensor",),
    ),
    mistake(
        "shift",
        "start column made as floats",
        [
            (
                "tokens.new_full((tokens.shape[0], 1), start_id)",
                "tokens.new_full((tokens.shape[0], 1), float(start_id), dtype=torch.float)",
            )
        ],
        ("dtype",),
        hints=("shift changes the dtype",),
    ),
    mistake(
        "shift",
        "start column made with torch.ones (float, default device)",
        [("tokens.new_full((tokens.shape[0], 1), start_id)", "torch.ones(tokens.shape[0], 1) * start_id")],
        ("dtype", "device"),
        hints=("shift changes the dtype", "start column off the tokens' device"),
    ),
    mistake(
        "shift",
        "start column made on the default device",
        [
            (
                "tokens.new_full((tokens.shape[0], 1), start_id)",
                "torch.full((tokens.shape[0], 1), start_id, dtype=tokens.dtype)",
            )
        ],
        ("device",),
        hints=("start column off the tokens' device",),
    ),
    mistake(
        "shift",
        "tokens that are not 2-D not rejected",
        [("if tokens.dim() != 2:", "if tokens.dim() > 2:")],
        ("not-2d",),
    ),
    # pad_and_shift
    mistake(
        "pad_and_shift",
        "targets padded with pad_id",
        [
            (
                "targets = torch.full((len(seqs), T_max), ignore_index,",
                "targets = torch.full((len(seqs), T_max), pad_id,",
            )
        ],
        ("targets",),
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
        clauses=("inputs",),
    ),
    mistake(
        "pad_and_shift",
        "pads on the left",
        [
            ("inputs[b, : len(seq)]", "inputs[b, T_max - len(seq) :]"),
            ("targets[b, : len(seq)]", "targets[b, T_max - len(seq) :]"),
        ],
        ("inputs", "targets"),
        hints=("padding on the left",),
    ),
    mistake(
        "pad_and_shift",
        "ignore_index argument ignored (always -100)",
        [("targets = torch.full((len(seqs), T_max), ignore_index,", "targets = torch.full((len(seqs), T_max), -100,")],
        ("ignore-given",),
        hints=("ignore_index argument ignored",),
    ),
    mistake(
        "pad_and_shift",
        "the default ignore_index is -1",
        [("ignore_index: int = -100,", "ignore_index: int = -1,")],
        ("ignore-default",),
    ),
    mistake(
        "pad_and_shift",
        "inputs not shifted (start token forgotten)",
        [("torch.tensor([start_id] + seq[:-1], dtype=torch.long)", "torch.tensor(seq, dtype=torch.long)")],
        ("inputs",),
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
        clauses=("dtype",),
    ),
    mistake(
        "pad_and_shift",
        "one more column for the start token (T_max + 1)",
        [("T_max = max(len(seq) for seq in seqs)", "T_max = max(len(seq) for seq in seqs) + 1")],
        ("shape",),
    ),
    mistake(
        "pad_and_shift",
        "an empty list gives empty tensors",
        [
            (
                '    if len(sequences) == 0:\n        raise ValueError("sequences must hold at least one sequence")\n',
                "",
            ),
            ("T_max = max(len(seq) for seq in seqs)", "T_max = max((len(seq) for seq in seqs), default=0)"),
        ],
        ("empty",),
    ),
    # lm_loss
    mistake(
        "lm_loss",
        "mean over every position, ignored ones included",
        [("ignore_index=ignore_index)", 'ignore_index=ignore_index, reduction="none").mean()')],
        ("mean",),
        hints=("mean over every position",),
    ),
    mistake(
        "lm_loss",
        "ignore_index not passed on",
        [(", ignore_index=ignore_index)", ")")],
        ("ignore-given",),
        hints=("ignore_index not passed on",),
    ),
    mistake(
        "lm_loss",
        "the default ignore_index is -1",
        [("ignore_index: int = -100)", "ignore_index: int = -1)")],
        ("ignore-default",),
    ),
    mistake(
        "lm_loss",
        "(B, T, V) passed to cross_entropy as it is (runs only when T == V)",
        [("F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1),", "F.cross_entropy(logits, targets,")],
        ("any-t-v",),
    ),
    mistake(
        "lm_loss",
        "sum instead of mean",
        [("ignore_index=ignore_index)", 'ignore_index=ignore_index, reduction="sum")')],
        ("mean",),
        hints=("sum instead of mean",),
    ),
    mistake(
        "lm_loss",
        "returns a Python float",
        [("ignore_index=ignore_index)", "ignore_index=ignore_index).item()")],
        ("tensor",),
        hints=("loss returned as a float",),
    ),
    mistake(
        "lm_loss",
        "softmax applied before cross_entropy",
        [("F.cross_entropy(logits.reshape(-1, V),", "F.cross_entropy(torch.softmax(logits, dim=-1).reshape(-1, V),")],
        ("cross-entropy",),
    ),
    mistake(
        "lm_loss",
        "the loss detached from the graph",
        [("ignore_index=ignore_index)", "ignore_index=ignore_index).detach()")],
        ("grad",),
    ),
    mistake(
        "lm_loss",
        "shapes not checked",
        [
            (
                "    if logits.dim() != 3 or logits.shape[:-1] != targets.shape:\n"
                "        raise ValueError(\n"
                '            f"logits must be (B, T, V) and targets (B, T), got {tuple(logits.shape)} and {tuple(targets.shape)}"\n'
                "        )\n",
                "",
            )
        ],
        ("shapes",),
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
            return torch.logical_or(padding_mask(ids, pad_id), causal_mask(ids.size(1), ids.device))  # padding_mask checks ids
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
        "pad_and_shift",
        "pad first, shift the whole batch with shift_right, then put pad_id where the target is ignored",
        {"pad_and_shift": _WHOLE_BATCH_SHIFT},
    ),
    Variant(
        "pad_and_shift",
        "shift the targets padded with ignore_index as one batch, then overwrite the padding",
        {
            "pad_and_shift": """
        def pad_and_shift(sequences, start_id, pad_id, ignore_index=-100):
            if not sequences:
                raise ValueError("pad_and_shift needs at least one sequence")
            T_max = max(map(len, sequences))
            targets = torch.tensor([list(s) + [ignore_index] * (T_max - len(s)) for s in sequences], dtype=torch.long)
            inputs = shift_right(targets, start_id)
            inputs[targets == ignore_index] = pad_id
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
        "the common check logits.shape[:-1] != targets.shape alone",
        {
            "lm_loss": """
        def lm_loss(logits, targets, ignore_index=-100):
            if logits.shape[:-1] != targets.shape:
                raise ValueError(f"targets {tuple(targets.shape)} do not fit logits {tuple(logits.shape)}")
            return F.cross_entropy(logits.flatten(0, -2), targets.flatten(), ignore_index=ignore_index)
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
