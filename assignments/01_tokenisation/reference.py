"""Reference solutions for stage 01_tokenisation: the language-modelling task.

Character vocabularies, encoding, the train/validation split, random batches with
shifted targets, an add-alpha n-gram baseline and an interpolated Kneser-Ney bigram.
Every graded function here is self-contained: the build copies its source into the
reference notebook, and its signature and docstring into the student's stub.
"""

import math

import torch


def build_vocab(text: str) -> tuple[dict[str, int], dict[int, str]]:
    """Build a character vocabulary from ``text``.

    The vocabulary is the sorted set of distinct characters; character ``c`` gets
    the id of its position in that sorted order, so ids run from 0 to V-1.

    Args:
        text: the training text.

    Returns:
        ``(stoi, itos)``: the map from character to id and its inverse.

    Example:
        >>> stoi, itos = build_vocab("hello")
        >>> stoi
        {'e': 0, 'h': 1, 'l': 2, 'o': 3}
        >>> itos[3]
        'o'
    """
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    itos = {i: ch for i, ch in enumerate(chars)}
    return stoi, itos


def encode(text: str, stoi: dict[str, int]) -> list[int]:
    """Turn ``text`` into a list of token ids with the map ``stoi``.

    Raises:
        ValueError: if ``text`` holds a character that is not in ``stoi``; the
            message names that character.

    Example:
        >>> encode("hole", {'e': 0, 'h': 1, 'l': 2, 'o': 3})
        [1, 3, 2, 0]
    """
    ids = []
    for ch in text:
        if ch not in stoi:
            raise ValueError(f"character {ch!r} is not in the vocabulary")
        ids.append(stoi[ch])
    return ids


def decode(ids: list[int] | torch.Tensor, itos: dict[int, str]) -> str:
    """Turn token ids (a list or a 1-D LongTensor) back into text with ``itos``.

    Example:
        >>> decode(torch.tensor([1, 3, 2, 0]), {0: 'e', 1: 'h', 2: 'l', 3: 'o'})
        'hole'
    """
    if isinstance(ids, torch.Tensor):
        ids = ids.tolist()
    return "".join(itos[int(i)] for i in ids)


def train_val_split(data: torch.Tensor, val_fraction: float = 0.1) -> tuple[torch.Tensor, torch.Tensor]:
    """Split a 1-D tensor of token ids into a training and a validation part.

    The split is contiguous (no shuffling): the first
    ``int(len(data) * (1 - val_fraction))`` items are the training part and the
    rest is the validation part. Both parts keep the dtype of ``data``.

    Raises:
        ValueError: if ``val_fraction`` is not in the interval [0, 1).

    Example:
        >>> train, val = train_val_split(torch.arange(10), val_fraction=0.2)
        >>> train.tolist(), val.tolist()
        ([0, 1, 2, 3, 4, 5, 6, 7], [8, 9])
    """
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
    n_train = int(len(data) * (1 - val_fraction))
    return data[:n_train], data[n_train:]


def get_batch(
    data: torch.Tensor,
    block_size: int,
    batch_size: int,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw a random batch of windows and their next-token targets.

    Each row of ``x`` is a window ``data[i:i+block_size]`` whose start ``i`` is
    drawn uniformly from every valid start ``0 .. len(data)-block_size-1``; the
    matching row of ``y`` is the same window shifted by one, ``data[i+1:i+block_size+1]``.

    Args:
        data: 1-D tensor of token ids.
        block_size: T, the length of each window.
        batch_size: B, the number of windows.
        generator: optional source of randomness.

    Returns:
        ``(x, y)``, both LongTensors of shape ``(B, T)``.

    Raises:
        ValueError: if ``data`` is too short for one window and its target.

    Example:
        >>> x, y = get_batch(torch.arange(100), block_size=4, batch_size=2)
        >>> x.shape, bool((y - x == 1).all())
        (torch.Size([2, 4]), True)
    """
    if len(data) <= block_size:
        raise ValueError(f"data of length {len(data)} is too short for block_size {block_size}")
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    x = torch.stack([data[i : i + block_size] for i in starts.tolist()]).long()
    y = torch.stack([data[i + 1 : i + block_size + 1] for i in starts.tolist()]).long()
    return x, y


class NGramLM:
    """An n-gram language model with add-alpha (Laplace when alpha=1) smoothing.

    ``P(w | context) = (c(context, w) + alpha) / (c(context) + alpha * V)`` where the
    context is the last ``n-1`` tokens and ``c(context)`` is the number of times the
    context was followed by any token in the training data (so that each
    distribution sums to 1). For ``n = 1`` the context is empty and the model is a
    smoothed unigram model.

    Example:
        >>> lm = NGramLM(2, vocab_size=3).fit([0, 1, 0, 1, 2])
        >>> round(lm.prob([0], 1), 4)   # (2 + 1) / (2 + 3)
        0.6
    """

    def __init__(self, n: int, vocab_size: int, alpha: float = 1.0) -> None:
        """Create an empty model of order ``n`` over ``vocab_size`` tokens.

        Raises:
            ValueError: if ``n < 1``, ``vocab_size < 1`` or ``alpha <= 0``.
        """
        if n < 1:
            raise ValueError(f"n must be at least 1, got {n}")
        if vocab_size < 1:
            raise ValueError(f"vocab_size must be at least 1, got {vocab_size}")
        if alpha <= 0:
            raise ValueError(f"alpha must be positive, got {alpha}")
        self.n = n
        self.vocab_size = vocab_size
        self.alpha = alpha
        self.counts: dict[tuple[int, ...], dict[int, int]] = {}
        self.context_counts: dict[tuple[int, ...], int] = {}

    def fit(self, ids: list[int] | torch.Tensor) -> "NGramLM":
        """Count every n-gram of ``ids`` (a list or a 1-D tensor) and return ``self``."""
        ids = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        self.counts = {}
        self.context_counts = {}
        for t in range(self.n - 1, len(ids)):
            context = tuple(ids[t - self.n + 1 : t])
            token = ids[t]
            follow = self.counts.setdefault(context, {})
            follow[token] = follow.get(token, 0) + 1
            self.context_counts[context] = self.context_counts.get(context, 0) + 1
        return self

    def prob(self, context: list[int] | torch.Tensor, token: int) -> float:
        """Smoothed probability of ``token`` after the last ``n-1`` ids of ``context``
        (a list or a 1-D tensor), as a Python float.

        Raises:
            ValueError: if ``context`` holds fewer than ``n-1`` ids.
        """
        context = context.tolist() if isinstance(context, torch.Tensor) else list(context)
        if len(context) < self.n - 1:
            raise ValueError(f"a {self.n}-gram model needs {self.n - 1} context tokens, got {len(context)}")
        key = tuple(context[len(context) - (self.n - 1) :]) if self.n > 1 else ()
        count = self.counts.get(key, {}).get(int(token), 0)
        total = self.context_counts.get(key, 0)
        return (count + self.alpha) / (total + self.alpha * self.vocab_size)

    def perplexity(self, ids: list[int] | torch.Tensor) -> float:
        """``exp`` of the mean negative log-likelihood over every position of ``ids``
        (a list or a 1-D tensor) that has a full context of ``n-1`` earlier tokens, as a
        Python float.

        Raises:
            ValueError: if ``ids`` is too short to hold one such position.
        """
        ids = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        if len(ids) < self.n:
            raise ValueError(f"need at least {self.n} tokens to score a {self.n}-gram model, got {len(ids)}")
        nll = 0.0
        for t in range(self.n - 1, len(ids)):
            nll -= math.log(self.prob(ids[t - self.n + 1 : t], ids[t]))
        return math.exp(nll / (len(ids) - self.n + 1))


def kneser_ney_bigram(ids: list[int] | torch.Tensor, vocab_size: int, discount: float = 0.75) -> torch.Tensor:
    """Interpolated Kneser-Ney bigram table.

    ``P(w | a) = max(c(a,w) - d, 0) / c(a) + d * N1+(a,.) / c(a) * Pcont(w)`` with
    ``Pcont(w) = N1+(.,w) / N1+(.,.)``: the share of distinct bigram types that
    end in ``w``. A history ``a`` never followed by a token (``c(a) = 0``: absent, or
    only the last id) gets ``Pcont`` as its row.

    Args:
        ids: the training token ids (a list or a 1-D tensor).
        vocab_size: V.
        discount: d, in [0, 1].

    Returns:
        A float32 tensor ``(V, V)`` whose row ``a`` is ``P(. | a)``; every row sums to 1.

    Raises:
        ValueError: if ``discount`` is outside [0, 1] or ``ids`` holds no bigram.

    Example:
        >>> table = kneser_ney_bigram([0, 1, 0, 2], vocab_size=3)
        >>> torch.allclose(table.sum(dim=1), torch.ones(3))
        True
    """
    if not 0.0 <= discount <= 1.0:
        raise ValueError(f"discount must be in [0, 1], got {discount}")
    ids = torch.as_tensor(ids, dtype=torch.long)
    if ids.numel() < 2:
        raise ValueError("need at least two tokens to count a bigram")
    counts = torch.zeros(vocab_size, vocab_size, dtype=torch.float64)
    counts.index_put_((ids[:-1], ids[1:]), torch.ones(ids.numel() - 1, dtype=torch.float64), accumulate=True)
    seen = (counts > 0).double()
    p_cont = seen.sum(dim=0) / seen.sum()  # (V,): N1+(., w) / N1+(., .)
    history = counts.sum(dim=1, keepdim=True)  # (V, 1): c(a)
    safe = history.clamp(min=1.0)
    discounted = (counts - discount).clamp(min=0.0) / safe
    backoff = discount * seen.sum(dim=1, keepdim=True) / safe  # (V, 1)
    table = discounted + backoff * p_cont
    table = torch.where(history > 0, table, p_cont.expand_as(table))
    return table.float()
