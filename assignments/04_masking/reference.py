"""Reference solutions for stage 04_masking: causal and padding masks, shifted inputs.

Boolean masks follow the course convention: ``True`` means BLOCKED (the query may
not attend to that key), as in ``nn.MultiheadAttention``'s boolean ``attn_mask``.
Then the right shift that turns targets into decoder inputs, batching of
variable-length sequences, and the language-modelling loss that skips padding.

Every graded name here is self-contained: the build copies its source alone into
the reference notebook, so it uses only the imports below and the other graded
names of this stage.
"""

import torch
import torch.nn.functional as F


def causal_mask(T: int, device: torch.device | str | None = None) -> torch.Tensor:
    """The ``(T, T)`` causal mask: ``True`` strictly above the diagonal.

    Row ``i`` (a query) blocks every key ``j > i``, so position ``i`` sees only
    itself and the past.

    Raises:
        ValueError: if ``T`` is not a non-negative integer.

    Example:
        >>> causal_mask(3).int().tolist()
        [[0, 1, 1], [0, 0, 1], [0, 0, 0]]
    """
    if isinstance(T, bool) or not isinstance(T, int) or T < 0:
        raise ValueError(f"T must be a non-negative integer, got {T!r}")
    return torch.ones(T, T, dtype=torch.bool, device=device).triu(diagonal=1)


def padding_mask(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """The ``(B, 1, T)`` key-padding mask: ``True`` where the key is padding.

    The middle axis of size 1 broadcasts over the queries.

    Raises:
        ValueError: if ``ids`` is not 2-D.

    Example:
        >>> padding_mask(torch.tensor([[5, 6, 0], [7, 0, 0]]), pad_id=0).int().tolist()
        [[[0, 0, 1]], [[0, 1, 1]]]
    """
    if ids.dim() != 2:
        raise ValueError(f"ids must have shape (B, T), got {tuple(ids.shape)}")
    return (ids == pad_id).unsqueeze(1)


def combined_mask(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """The ``(B, T, T)`` decoder mask: causal OR key padding.

    Raises:
        ValueError: if ``ids`` is not 2-D.

    Example:
        >>> combined_mask(torch.tensor([[5, 6, 0]]), pad_id=0).int().tolist()
        [[[0, 1, 1], [0, 0, 1], [0, 0, 1]]]
    """
    if ids.dim() != 2:
        raise ValueError(f"ids must have shape (B, T), got {tuple(ids.shape)}")
    return causal_mask(ids.shape[1], device=ids.device) | padding_mask(ids, pad_id)


def shift_right(tokens: torch.Tensor, start_id: int) -> torch.Tensor:
    """Shift ``tokens`` ``(B, T)`` one step right, putting ``start_id`` first.

    Each row ``[x1, ..., xT]`` becomes ``[start, x1, ..., x_{T-1}]``; the last
    token drops off, so the shape stays ``(B, T)``.

    Raises:
        ValueError: if ``tokens`` is not 2-D.

    Example:
        >>> shift_right(torch.tensor([[5, 6, 7]]), start_id=1).tolist()
        [[1, 5, 6]]
    """
    if tokens.dim() != 2:
        raise ValueError(f"tokens must have shape (B, T), got {tuple(tokens.shape)}")
    start = tokens.new_full((tokens.shape[0], 1), start_id)
    return torch.cat([start, tokens[:, :-1]], dim=1)


def pad_and_shift(
    sequences: list[list[int]],
    start_id: int,
    pad_id: int,
    ignore_index: int = -100,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Batch variable-length sequences into decoder inputs and targets.

    With ``T_max`` the longest length, the inputs are each sequence shifted right
    with ``start_id`` in front (its last token drops off) and padded with
    ``pad_id``; the targets are the sequences themselves padded with
    ``ignore_index``, so the loss skips the padding.

    Returns:
        ``(inputs, targets)``, LongTensors of shape ``(B, T_max)``.

    Raises:
        ValueError: if ``sequences`` is empty.

    Example:
        >>> inputs, targets = pad_and_shift([[5, 6, 7], [8]], start_id=1, pad_id=0)
        >>> inputs.tolist()
        [[1, 5, 6], [1, 0, 0]]
        >>> targets.tolist()
        [[5, 6, 7], [8, -100, -100]]
    """
    if len(sequences) == 0:
        raise ValueError("sequences must hold at least one sequence")
    seqs = [[int(t) for t in seq] for seq in sequences]
    T_max = max(len(seq) for seq in seqs)
    inputs = torch.full((len(seqs), T_max), pad_id, dtype=torch.long)
    targets = torch.full((len(seqs), T_max), ignore_index, dtype=torch.long)
    for b, seq in enumerate(seqs):
        if seq:
            inputs[b, : len(seq)] = torch.tensor([start_id] + seq[:-1], dtype=torch.long)
            targets[b, : len(seq)] = torch.tensor(seq, dtype=torch.long)
    return inputs, targets


def lm_loss(logits: torch.Tensor, targets: torch.Tensor, ignore_index: int = -100) -> torch.Tensor:
    """Mean cross-entropy of ``logits`` ``(B, T, V)`` against ``targets`` ``(B, T)``,
    over the positions whose target is not ``ignore_index``.

    (If every target is ignored the mean is over nothing and comes out NaN.)

    Raises:
        ValueError: if the shape of ``targets`` is not that of ``logits`` without its
            last axis (another ``B`` or ``T``).

    Example:
        >>> logits = torch.zeros(1, 2, 4)                  # uniform over 4 tokens
        >>> round(lm_loss(logits, torch.tensor([[3, -100]])).item(), 4)   # log 4
        1.3863
    """
    if logits.dim() != 3 or logits.shape[:-1] != targets.shape:
        raise ValueError(
            f"logits must be (B, T, V) and targets (B, T), got {tuple(logits.shape)} and {tuple(targets.shape)}"
        )
    V = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), ignore_index=ignore_index)
