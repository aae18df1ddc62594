"""Reference solutions for stage 10_encoders: encoders, masked language modelling, encoder-decoder.

A bidirectional encoder (BERT-style: no causal mask, padding keys blocked), a sequence
classifier that pools its outputs, BERT's masking of tokens for the masked-language-model
objective, cross-attention, the decoder block of the original transformer, and the
encoder-decoder model with teacher-forced training and greedy decoding. With the same
weights, ``CrossAttention`` computes what ``nn.MultiheadAttention`` does when called with
``(x, memory, memory)``, and ``DecoderBlock`` what ``nn.TransformerDecoderLayer`` does.
Every graded name here is self-contained: the build copies its source into the reference
notebook, and its signature and docstring into the student's stub; the earlier stages'
parts it uses (attention, blocks, masks, shifting) are given code in the notebook.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from solutions.blocks import FeedForward, LayerNorm, TransformerBlock
from solutions.masking import causal_mask, padding_mask, shift_right
from solutions.multihead import MultiHeadAttention, merge_heads, split_heads


class Encoder(nn.Module):
    """A bidirectional transformer encoder (the body of BERT).

    ``x = drop(tok_emb(idx) + pos_emb(positions))``, then ``n_layer`` pre-norm
    :class:`TransformerBlock` (GELU, ``ff_dim`` hidden units, ``4 * n_embd`` when
    ``None``) and a final LayerNorm ``ln_f``. There is no causal mask: every position
    attends to every other, before and after it. Keys whose token is ``pad_id`` are
    blocked for every query (the ``(B, 1, T)`` mask of ``padding_mask``), so padding
    never changes the outputs at real positions. (Outputs at padding positions are
    computed too, and are meaningless; a row made only of padding gives NaN.)

    Example:
        >>> encoder = Encoder(vocab_size=10, max_len=8, n_layer=1, n_head=2, n_embd=16)
        >>> idx = torch.tensor([[5, 6, 7, 0, 0], [5, 6, 7, 8, 9]])
        >>> out = encoder(idx)
        >>> out.shape
        torch.Size([2, 5, 16])
        >>> alone = encoder(idx[:1, :3])            # the same sentence without its padding
        >>> torch.allclose(out[0, :3], alone[0], atol=1e-5)
        True
    """

    def __init__(
        self,
        vocab_size: int,
        max_len: int,
        n_layer: int = 2,
        n_head: int = 4,
        n_embd: int = 64,
        ff_dim: int | None = None,
        dropout: float = 0.0,
        pad_id: int = 0,
    ) -> None:
        """Create ``tok_emb``, ``pos_emb``, ``blocks`` and ``ln_f``; keep ``pad_id``."""
        super().__init__()
        self.pad_id = pad_id
        self.max_len = max_len
        hidden = ff_dim if ff_dim is not None else 4 * n_embd
        self.tok_emb = nn.Embedding(vocab_size, n_embd)
        self.pos_emb = nn.Embedding(max_len, n_embd)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            [
                TransformerBlock(n_embd, n_head, hidden, dropout=dropout, activation="gelu", norm_first=True)
                for _ in range(n_layer)
            ]
        )
        self.ln_f = LayerNorm(n_embd)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Encode ``idx (B, T)`` into ``(B, T, C)``: every position sees the whole sequence.

        Raises:
            ValueError: if ``T > max_len``.
        """
        T = idx.size(1)
        if T > self.max_len:
            raise ValueError(f"sequence length {T} exceeds max_len {self.max_len}")
        pos = torch.arange(T, device=idx.device)  # (T,)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))  # (B, T, C)
        mask = padding_mask(idx, self.pad_id)  # (B, 1, T): padding keys blocked for every query
        for block in self.blocks:
            x = block(x, mask=mask)  # (B, T, C)
        return self.ln_f(x)


class SequenceClassifier(nn.Module):
    """An encoder with a classification head on one pooled vector per sequence.

    ``pooling="mean"`` averages the encoder's outputs over the positions whose token is
    not ``encoder.pad_id`` (padding must not dilute the average); ``pooling="first"``
    takes the output at position 0, where BERT puts its ``[CLS]`` token. The pooled
    ``(B, C)`` vector goes through ``head = nn.Linear(C, num_classes)``, with ``C`` the
    encoder's width, ``encoder.tok_emb.embedding_dim``.

    Example:
        >>> encoder = Encoder(vocab_size=10, max_len=8, n_layer=1, n_head=2, n_embd=16)
        >>> clf = SequenceClassifier(encoder, num_classes=3)
        >>> logits = clf(torch.tensor([[4, 5, 6, 0], [7, 8, 0, 0]]))
        >>> logits.shape
        torch.Size([2, 3])
        >>> padded = clf(torch.tensor([[7, 8, 0, 0, 0, 0]]))   # more padding, same logits
        >>> torch.allclose(padded[0], logits[1], atol=1e-5)
        True
    """

    def __init__(self, encoder: nn.Module, num_classes: int, pooling: str = "mean") -> None:
        """Keep ``encoder`` and create ``head``.

        Raises:
            ValueError: if ``pooling`` is neither ``"mean"`` nor ``"first"``.
        """
        super().__init__()
        if pooling not in ("mean", "first"):
            raise ValueError(f"pooling must be 'mean' or 'first', got {pooling!r}")
        self.encoder = encoder
        self.pooling = pooling
        self.head = nn.Linear(encoder.tok_emb.embedding_dim, num_classes)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Class logits ``(B, num_classes)`` for the sequences ``idx (B, T)``."""
        h = self.encoder(idx)  # (B, T, C)
        if self.pooling == "first":
            pooled = h[:, 0]  # (B, C): the [CLS] position
        else:
            real = (idx != self.encoder.pad_id).unsqueeze(-1).to(h.dtype)  # (B, T, 1): 1 at real tokens
            pooled = (h * real).sum(dim=1) / real.sum(dim=1).clamp_min(1.0)  # (B, C)
        return self.head(pooled)


def mlm_mask_tokens(
    ids: torch.Tensor,
    mask_id: int,
    vocab_size: int,
    special_ids: tuple[int, ...] = (),
    prob: float = 0.15,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's corruption for masked language modelling: ``(inputs, labels)``, both like ``ids``.

    Each position whose token is not in ``special_ids`` is *chosen* with probability
    ``prob``, independently. A chosen position gets, in ``inputs``:

    - ``mask_id`` with probability 0.8,
    - a token drawn uniformly from ``0 .. vocab_size-1`` with probability 0.1 (it may
      be the original token, ``mask_id`` or a special id),
    - its original token with probability 0.1.

    Positions not chosen keep their token. ``labels`` holds the original token at the
    chosen positions and ``-100`` (ignored by the loss) everywhere else. ``ids`` itself
    is not modified. Every random draw uses ``generator`` (made on its device; the
    results move to ``ids.device``).

    Raises:
        ValueError: if ``prob`` is outside ``[0, 1]``.

    Example:
        >>> ids = torch.tensor([[1, 5, 6, 7, 8, 2]])        # 1 and 2 are [CLS] and [SEP]
        >>> inputs, labels = mlm_mask_tokens(ids, mask_id=3, vocab_size=10, special_ids=(1, 2),
        ...                                  prob=1.0, generator=torch.Generator().manual_seed(0))
        >>> labels.tolist()                                  # every other token chosen
        [[-100, 5, 6, 7, 8, -100]]
        >>> inputs[0, 0].item(), inputs[0, -1].item()       # specials are never touched
        (1, 2)
    """
    if not 0.0 <= prob <= 1.0:
        raise ValueError(f"prob must be in [0, 1], got {prob}")
    device = generator.device if generator is not None else ids.device
    choose = torch.rand(ids.shape, generator=generator, device=device).to(ids.device)
    action = torch.rand(ids.shape, generator=generator, device=device).to(ids.device)
    random_ids = torch.randint(vocab_size, ids.shape, generator=generator, device=device).to(ids.device, ids.dtype)

    special = torch.isin(ids, torch.tensor(list(special_ids), dtype=ids.dtype, device=ids.device))
    chosen = (choose < prob) & ~special  # (B, T)
    labels = torch.where(chosen, ids, torch.full_like(ids, -100))
    inputs = ids.clone()
    to_mask = chosen & (action < 0.8)
    to_random = chosen & (action >= 0.8) & (action < 0.9)  # the remaining 10 % stay as they are
    inputs[to_mask] = mask_id
    inputs[to_random] = random_ids[to_random]
    return inputs, labels


class CrossAttention(nn.Module):
    """Multi-head attention whose queries come from ``x`` and keys and values from ``memory``.

    ``q_proj(x)``, ``k_proj(memory)`` and ``v_proj(memory)`` (each ``nn.Linear(C, C)``)
    are split into H heads of width ``D = C // H``; every head computes
    ``softmax(Q K^T / sqrt(D)) V`` over the ``T_k`` memory positions, blocked scores set to
    ``-inf``; the heads are merged and projected by ``out_proj``. A query position of
    ``x`` never sees the other positions of ``x``, only the memory. ``memory_mask`` is
    boolean (``True`` = blocked), ``(B, 1, T_k)`` as ``padding_mask`` makes it or
    ``(B, T_q, T_k)``; the head axis is added here. Dropout (training mode only) acts on
    the attention weights and on the output. Equals ``nn.MultiheadAttention(C, H,
    batch_first=True)`` called as ``mha(x, memory, memory)`` with the same weights.

    Example:
        >>> cross = CrossAttention(embed_dim=8, num_heads=2)
        >>> x, memory = torch.randn(3, 4, 8), torch.randn(3, 6, 8)   # T_q = 4, T_k = 6
        >>> cross(x, memory).shape
        torch.Size([3, 4, 8])
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0) -> None:
        """Create the four projections.

        Raises:
            ValueError: if ``embed_dim`` is not divisible by ``num_heads``.
        """
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError(f"embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})")
        self.num_heads = num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, memory_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Attend from ``x (B, T_q, C)`` to ``memory (B, T_k, C)``; returns ``(B, T_q, C)``."""
        if memory_mask is not None:
            memory_mask = memory_mask.unsqueeze(1)  # (B, 1, 1 or T_q, T_k): the same for every head

        q = split_heads(self.q_proj(x), self.num_heads)  # (B, H, T_q, D)
        k = split_heads(self.k_proj(memory), self.num_heads)  # (B, H, T_k, D)
        v = split_heads(self.v_proj(memory), self.num_heads)  # (B, H, T_k, D)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, T_q, T_k)
        if memory_mask is not None:
            scores = scores.masked_fill(memory_mask, float("-inf"))
        weights = F.softmax(scores, dim=-1)  # each query's weights over the memory sum to 1
        out = self.attn_dropout(weights) @ v  # (B, H, T_q, D)
        return self.resid_dropout(self.out_proj(merge_heads(out)))  # (B, T_q, C)


class DecoderBlock(nn.Module):
    """The decoder block of the original transformer: three sublayers, each with a residual.

    Pre-norm (``norm_first=True``)::

        x = x + self_attn(ln1(x), self_mask)
        x = x + cross_attn(ln2(x), memory, memory_mask)
        x = x + ff(ln3(x))

    Post-norm (``norm_first=False``)::

        x = ln1(x + self_attn(x, self_mask))
        x = ln2(x + cross_attn(x, memory, memory_mask))
        x = ln3(x + ff(x))

    ``self_attn`` is a :class:`MultiHeadAttention` (masked self-attention over the target),
    ``cross_attn`` a :class:`CrossAttention` (queries from the target, keys and values from
    the encoder's ``memory``, which is used as it comes, never normalised here), ``ff`` a
    :class:`FeedForward` and ``ln1``, ``ln2``, ``ln3`` are :class:`LayerNorm`. Equals
    ``nn.TransformerDecoderLayer(C, H, ff_dim, dropout=0.0, activation=...,
    batch_first=True, norm_first=...)`` with the same weights.

    Example:
        >>> block = DecoderBlock(embed_dim=8, num_heads=2, ff_dim=32)
        >>> x, memory = torch.randn(3, 5, 8), torch.randn(3, 7, 8)
        >>> block(x, memory, self_mask=torch.ones(5, 5, dtype=torch.bool).triu(1)).shape
        torch.Size([3, 5, 8])
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        ff_dim: int,
        dropout: float = 0.0,
        activation: str = "gelu",
        norm_first: bool = True,
    ) -> None:
        """Create ``self_attn``, ``cross_attn``, ``ff``, ``ln1``, ``ln2`` and ``ln3``."""
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(embed_dim, num_heads, dropout=dropout)
        self.cross_attn = CrossAttention(embed_dim, num_heads, dropout=dropout)
        self.ff = FeedForward(embed_dim, ff_dim, activation=activation, dropout=dropout)
        self.ln1 = LayerNorm(embed_dim)
        self.ln2 = LayerNorm(embed_dim)
        self.ln3 = LayerNorm(embed_dim)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        self_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Run the block on the target ``x (B, T, C)`` with the encoder output ``memory (B, S, C)``."""
        if self.norm_first:
            x = x + self.self_attn(self.ln1(x), mask=self_mask)  # (B, T, C)
            x = x + self.cross_attn(self.ln2(x), memory, memory_mask=memory_mask)
            x = x + self.ff(self.ln3(x))
        else:
            x = self.ln1(x + self.self_attn(x, mask=self_mask))
            x = self.ln2(x + self.cross_attn(x, memory, memory_mask=memory_mask))
            x = self.ln3(x + self.ff(x))
        return x


class Seq2Seq(nn.Module):
    """An encoder-decoder transformer: the source is encoded once, the target decoded from it.

    - ``encoder``: an :class:`Encoder` of the source (``n_layer`` blocks, padding blocked);
    - the target ids are embedded by ``tgt_emb`` plus the learned positions ``tgt_pos_emb``;
    - ``decoder_blocks``: ``n_layer`` pre-norm :class:`DecoderBlock` (GELU, ``ff_dim =
      4 * n_embd``) with a causal self-mask and the source's padding blocked in
      cross-attention (``padding_mask(src, pad_id)``);
    - ``ln_f``, then ``head = nn.Linear(C, tgt_vocab)`` (with a bias) gives the logits.

    ``pad_id`` is the padding id of both vocabularies. In training the decoder reads the
    target shifted right behind a start token (teacher forcing), so the logits at
    position ``t`` predict target token ``t``.

    Example:
        >>> model = Seq2Seq(src_vocab=12, tgt_vocab=9, max_len=10, n_layer=1, n_head=2, n_embd=16)
        >>> src = torch.tensor([[4, 5, 6, 0], [7, 8, 9, 10]])
        >>> tgt_in = torch.tensor([[1, 6, 5], [1, 3, 2]])
        >>> model(src, tgt_in).shape
        torch.Size([2, 3, 9])
    """

    def __init__(
        self,
        src_vocab: int,
        tgt_vocab: int,
        max_len: int,
        n_layer: int = 2,
        n_head: int = 4,
        n_embd: int = 64,
        pad_id: int = 0,
    ) -> None:
        """Create ``encoder``, ``tgt_emb``, ``tgt_pos_emb``, ``decoder_blocks``, ``ln_f`` and ``head``."""
        super().__init__()
        self.pad_id = pad_id
        self.encoder = Encoder(src_vocab, max_len, n_layer=n_layer, n_head=n_head, n_embd=n_embd, pad_id=pad_id)
        self.tgt_emb = nn.Embedding(tgt_vocab, n_embd)
        self.tgt_pos_emb = nn.Embedding(max_len, n_embd)
        self.decoder_blocks = nn.ModuleList(
            [DecoderBlock(n_embd, n_head, 4 * n_embd, activation="gelu", norm_first=True) for _ in range(n_layer)]
        )
        self.ln_f = LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, tgt_vocab)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, T, tgt_vocab)`` for the decoder inputs ``tgt_in (B, T)`` given ``src (B, S)``."""
        T = tgt_in.size(1)
        memory = self.encoder(src)  # (B, S, C)
        memory_mask = padding_mask(src, self.pad_id)  # (B, 1, S): source padding blocked
        self_mask = causal_mask(T, device=tgt_in.device)  # (T, T): no peeking at later targets
        pos = torch.arange(T, device=tgt_in.device)  # (T,)
        x = self.tgt_emb(tgt_in) + self.tgt_pos_emb(pos)  # (B, T, C)
        for block in self.decoder_blocks:
            x = block(x, memory, self_mask=self_mask, memory_mask=memory_mask)  # (B, T, C)
        return self.head(self.ln_f(x))  # (B, T, tgt_vocab)


def greedy_decode(model: nn.Module, src: torch.Tensor, start_id: int, end_id: int, max_len: int) -> torch.Tensor:
    """Decode ``src (B, S)`` greedily; returns the generated tokens ``(B, L)``, ``L <= max_len``.

    The decoder input starts as the start token; each step runs ``model(src, tgt_in)``,
    takes the most likely token at the last position and appends it. A row that has
    produced ``end_id`` is finished: ``end_id`` stays in its output and every later
    position holds ``model.pad_id``. Decoding stops as soon as every row is finished,
    else after ``max_len`` tokens. The start token is not part of the result. Runs in
    eval mode without gradients and puts the model back in the mode it was in.

    Raises:
        ValueError: if ``max_len`` is negative.

    Example:
        >>> model = Seq2Seq(src_vocab=12, tgt_vocab=9, max_len=10, n_layer=1, n_head=2, n_embd=16)
        >>> out = greedy_decode(model, torch.tensor([[4, 5, 6], [7, 8, 9]]), start_id=1, end_id=2, max_len=6)
        >>> out.shape[0], out.shape[1] <= 6
        (2, True)
    """
    if max_len < 0:
        raise ValueError(f"max_len must be non-negative, got {max_len}")
    B = src.size(0)
    out = torch.full((B, 1), start_id, dtype=torch.long, device=src.device)  # the decoder input so far
    finished = torch.zeros(B, dtype=torch.bool, device=src.device)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for _ in range(max_len):
                logits = model(src, out)[:, -1, :]  # (B, V): the prediction after the last input
                next_id = logits.argmax(dim=-1)  # (B,)
                next_id = next_id.masked_fill(finished, model.pad_id)  # finished rows only pad
                out = torch.cat([out, next_id[:, None]], dim=1)
                finished |= next_id == end_id
                if bool(finished.all()):
                    break
    finally:
        model.train(was_training)
    return out[:, 1:]  # (B, L) without the start token


def train_seq2seq(
    model: nn.Module,
    src: torch.Tensor,
    tgt: torch.Tensor,
    *,
    steps: int,
    batch_size: int,
    lr: float,
    start_id: int,
    generator: torch.Generator | None = None,
    grad_clip: float | None = 1.0,
) -> list[float]:
    """Train ``model`` with teacher forcing on the pairs ``(src[i], tgt[i])``; returns each step's loss.

    ``src (N, S)`` holds the source sequences and ``tgt (N, T)`` the target sequences
    (each ending with its end token), both padded at the end with ``model.pad_id``. Each
    step draws ``batch_size`` rows uniformly at random (with ``generator``) and:

    - feeds the decoder the targets shifted right behind ``start_id``
      (``shift_right(tgt_rows, start_id)``), so position ``t`` sees target tokens
      before ``t`` only;
    - scores the logits against the unshifted targets with the mean cross-entropy over
      the positions that are not padding (padding becomes ``-100``);
    - zeroes the gradients, back-propagates, clips the total gradient norm to
      ``grad_clip`` (unless ``None``) and takes an AdamW step with learning rate ``lr``.

    The model is put in training mode and trained on its own device (each batch is
    moved there).

    Returns:
        The loss of each step's batch, ``steps`` Python floats.

    Raises:
        ValueError: if ``steps``, ``batch_size`` or ``lr`` is not positive, or ``src`` and
            ``tgt`` have different numbers of rows.

    Example:
        >>> model = Seq2Seq(src_vocab=6, tgt_vocab=6, max_len=4, n_layer=1, n_head=2, n_embd=16)
        >>> src = torch.tensor([[3, 4, 5], [4, 5, 0]])
        >>> tgt = torch.tensor([[5, 4, 3, 2], [5, 4, 2, 0]])   # reversed, then the end token 2
        >>> losses = train_seq2seq(model, src, tgt, steps=30, batch_size=2, lr=1e-2, start_id=1)
        >>> len(losses), losses[-1] < losses[0]
        (30, True)
    """
    if steps < 1 or batch_size < 1:
        raise ValueError(f"steps and batch_size must be positive, got {steps} and {batch_size}")
    if lr <= 0:
        raise ValueError(f"lr must be positive, got {lr}")
    if src.size(0) != tgt.size(0):
        raise ValueError(f"src and tgt must have the same number of rows, got {src.size(0)} and {tgt.size(0)}")
    device = next(model.parameters()).device
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    sample_device = generator.device if generator is not None else torch.device("cpu")
    model.train()
    losses = []
    for _ in range(steps):
        rows = torch.randint(src.size(0), (batch_size,), generator=generator, device=sample_device).to(src.device)
        source, target = src[rows].to(device), tgt[rows].to(device)  # (B, S), (B, T)
        tgt_in = shift_right(target, start_id)  # (B, T): [start, y1, ..., y_{T-1}]
        labels = target.masked_fill(target == model.pad_id, -100)  # padding is not scored
        logits = model(source, tgt_in)  # (B, T, V)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=-100)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        optimizer.step()
        losses.append(loss.item())
    return losses
