"""Corpus -> token ids: a character tokenizer (the default) or the course's BPE.

``prepare(corpus, tokenizer)`` loads a corpus with :func:`solutions.data.load_corpus`
(``"shakespeare"``, ``"default"`` or a path), encodes it and splits it into a training
part (the first 90 %) and a held-out validation part (the last 10 %), as nanoGPT and
stage 01 do.

Three tokenizers, all serialisable to plain data (strings, lists) so that a checkpoint
holds its tokenizer without pickled objects:

- ``char``: one id per distinct character of the whole corpus (sorted, as
  :func:`solutions.tokenisation.build_vocab` does). ``decode(encode(s)) == s`` exactly.
- ``bpe``: :class:`solutions.bpe.BPETokenizer` with a few hundred merges learned on the
  training split only (so nothing of the validation text leaks into the vocabulary);
  its alphabet is every non-whitespace character of the corpus, so the validation
  split always encodes. This BPE is *word level*: text is split on whitespace and
  whitespace is never a token, so ``decode`` joins words with single spaces: line
  breaks, indentation and runs of spaces are lost (``decode(encode(s)) ==
  " ".join(s.split())``). Samples from a BPE model therefore come out as one long line,
  and its loss is per BPE token (not comparable with a character-level loss).
- ``byte-bpe``: stage 02's byte-level BPE (``train_byte_bpe``, ``byte_bpe_encode``): ids
  0..255 are the UTF-8 bytes, merge ``i`` makes id ``256 + i``, learned on the training
  text only, no pre-splitting, nothing lost (``decode(encode(s)) == s``). The merges and
  the ids are those of the stage's reference, computed here with numpy (one pass per
  merge over the whole text) instead of its Python loops, which would take minutes on
  Tiny Shakespeare.

Losses per token differ in unit between tokenizers; :meth:`Corpus.bits_per_char` turns a
validation loss into bits per character of the validation text, the unit they share.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from solutions.bpe import BPETokenizer, byte_bpe_decode, train_bpe
from solutions.data import load_corpus
from solutions.tokenisation import build_vocab, train_val_split

VAL_FRACTION = 0.1
DEFAULT_BPE_MERGES = 300
TOKENIZERS = ("char", "bpe", "byte-bpe")
SHAKESPEARE_OPENING = "First Citizen:"  # how Tiny Shakespeare begins (load_corpus checks its SHA-256)


class CharTokenizer:
    """One id per character; ``chars`` is the sorted vocabulary.

    Example:
        >>> tok = CharTokenizer.fit("hello")
        >>> tok.encode("hole"), tok.decode([1, 3, 2, 0]), tok.vocab_size
        ([1, 3, 2, 0], 'hole', 4)
    """

    kind = "char"

    def __init__(self, chars: str) -> None:
        self.chars = chars
        self.stoi = {c: i for i, c in enumerate(chars)}

    @classmethod
    def fit(cls, text: str) -> CharTokenizer:
        """The tokenizer of every distinct character of ``text``."""
        stoi, _ = build_vocab(text)
        return cls("".join(stoi))

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        """The ids of the characters of ``text``; ``ValueError`` names any unknown character."""
        unknown = sorted(set(text) - set(self.stoi))
        if unknown:
            raise ValueError(f"characters not in the vocabulary of this model: {''.join(unknown)!r}")
        return [self.stoi[c] for c in text]

    def decode(self, ids: list[int] | torch.Tensor) -> str:
        """The text of the ids."""
        if isinstance(ids, torch.Tensor):
            ids = ids.tolist()
        return "".join(self.chars[int(i)] for i in ids)

    def state(self) -> dict:
        """Plain data from which :func:`tokenizer_from_state` rebuilds this tokenizer."""
        return {"kind": self.kind, "chars": self.chars}


class BPE:
    """The course's word-level :class:`~solutions.bpe.BPETokenizer`, serialisable.

    Whitespace is not kept: ``decode(encode(s)) == " ".join(s.split())``.
    """

    kind = "bpe"

    def __init__(self, merges: list[tuple[str, str]], alphabet: str, eow: str = "</w>") -> None:
        self.merges = [(a, b) for a, b in merges]
        self.alphabet = alphabet
        self.eow = eow
        self.tokenizer = BPETokenizer(self.merges, eow=eow, alphabet=alphabet)

    @classmethod
    def fit(cls, train_text: str, num_merges: int = DEFAULT_BPE_MERGES, alphabet_text: str | None = None) -> BPE:
        """Learn ``num_merges`` merges on ``train_text``; the alphabet is every
        non-whitespace character of ``alphabet_text`` (default: ``train_text``)."""
        merges = train_bpe(train_text, num_merges)
        alphabet = "".join(sorted(set("".join((alphabet_text if alphabet_text is not None else train_text).split()))))
        return cls(merges, alphabet)

    @property
    def vocab_size(self) -> int:
        return len(self.tokenizer.vocab)

    def encode(self, text: str) -> list[int]:
        """The ids of the BPE tokens of ``text`` (whitespace separates words and is dropped)."""
        return self.tokenizer.encode(text)

    def decode(self, ids: list[int] | torch.Tensor) -> str:
        """The words of the ids, joined by single spaces."""
        return self.tokenizer.decode(ids)

    def state(self) -> dict:
        """Plain data from which :func:`tokenizer_from_state` rebuilds this tokenizer."""
        return {"kind": self.kind, "merges": [list(m) for m in self.merges], "alphabet": self.alphabet, "eow": self.eow}


def merge_pair(ids: np.ndarray, pair: tuple[int, int], new_id: int) -> np.ndarray:
    """``ids`` with every occurrence of ``pair`` replaced by ``new_id``, non-overlapping, left to right.

    Example:
        >>> merge_pair(np.array([97, 97, 97, 98]), (97, 97), 256).tolist()
        [256, 97, 98]
    """
    a, b = pair
    if len(ids) < 2:
        return ids
    hits = (ids[:-1] == a) & (ids[1:] == b)  # (N-1,): a pair starts here
    if a == b and hits.any():  # in a run of a's, pairs start at every other position from the run's start
        is_a = ids == a
        starts = is_a & ~np.concatenate(([False], is_a[:-1]))
        run_start = np.maximum.accumulate(np.where(starts, np.arange(len(ids)), 0))
        hits &= ((np.arange(len(ids) - 1) - run_start[:-1]) % 2) == 0
    where = np.flatnonzero(hits)
    if len(where) == 0:
        return ids
    out = ids.copy()
    out[where] = new_id
    return np.delete(out, where + 1)


def learn_byte_merges(text: str, vocab_size: int) -> list[tuple[int, int]]:
    """The merges of stage 02's ``train_byte_bpe(text, vocab_size)``, the same list, with numpy.

    Each step counts every adjacent pair (overlapping ones included), merges the most
    frequent (ties: the pair met first) and stops early when fewer than two ids are left.

    Raises:
        ValueError: if ``vocab_size`` is below 256.

    Example:
        >>> learn_byte_merges("aaabdaaabac", 258)
        [(97, 97), (256, 97)]
    """
    if vocab_size < 256:
        raise ValueError(f"vocab_size must be at least 256, got {vocab_size}")
    ids = np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int64)
    merges: list[tuple[int, int]] = []
    for new_id in range(256, vocab_size):
        if len(ids) < 2:
            break
        codes = ids[:-1] * vocab_size + ids[1:]  # one number per adjacent pair
        counts = np.bincount(codes, minlength=vocab_size * vocab_size)
        tied = np.flatnonzero(counts == counts.max())
        best = tied[0] if len(tied) == 1 else codes[np.flatnonzero(np.isin(codes, tied))[0]]  # met first
        pair = (int(best // vocab_size), int(best % vocab_size))
        ids = merge_pair(ids, pair, new_id)
        merges.append(pair)
    return merges


class ByteBPE:
    """Stage 02's byte-level BPE: bytes 0..255, then one id per merge; lossless.

    Example:
        >>> tok = ByteBPE.fit("aaabdaaabac", num_merges=2)
        >>> tok.merges, tok.encode("aaab"), tok.decode(tok.encode("héllo")), tok.vocab_size
        ([(97, 97), (256, 97)], [257, 98], 'héllo', 258)
    """

    kind = "byte-bpe"

    def __init__(self, merges: list[tuple[int, int]]) -> None:
        self.merges = [(int(a), int(b)) for a, b in merges]

    @classmethod
    def fit(cls, train_text: str, num_merges: int = DEFAULT_BPE_MERGES) -> ByteBPE:
        """Learn ``num_merges`` merges on ``train_text`` (fewer if the text runs out of pairs)."""
        return cls(learn_byte_merges(train_text, 256 + num_merges))

    @property
    def vocab_size(self) -> int:
        return 256 + len(self.merges)

    def encode(self, text: str) -> list[int]:
        """The ids of ``text``: its UTF-8 bytes with the merges applied in order (stage 02's ``byte_bpe_encode``)."""
        ids = np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int64)
        for rank, pair in enumerate(self.merges):
            ids = merge_pair(ids, pair, 256 + rank)
        return ids.tolist()

    def decode(self, ids: list[int] | torch.Tensor) -> str:
        """The text of the ids (invalid UTF-8 becomes U+FFFD)."""
        return byte_bpe_decode(ids, self.merges)

    def state(self) -> dict:
        """Plain data from which :func:`tokenizer_from_state` rebuilds this tokenizer."""
        return {"kind": self.kind, "merges": [list(m) for m in self.merges]}


def tokenizer_from_state(state: dict) -> CharTokenizer | BPE | ByteBPE:
    """Rebuild a tokenizer from ``tokenizer.state()`` (as stored in a checkpoint)."""
    if state["kind"] == "char":
        return CharTokenizer(state["chars"])
    if state["kind"] == "bpe":
        return BPE([tuple(m) for m in state["merges"]], state["alphabet"], state["eow"])
    if state["kind"] == "byte-bpe":
        return ByteBPE([tuple(m) for m in state["merges"]])
    raise ValueError(f"unknown tokenizer kind {state['kind']!r}")


@dataclass
class Corpus:
    """A tokenised corpus: ``train`` and ``val`` are 1-D ``torch.long`` id tensors;
    ``val_chars`` is the length in characters of the validation text."""

    name: str
    tokenizer: CharTokenizer | BPE | ByteBPE
    train: torch.Tensor
    val: torch.Tensor
    val_chars: int = 0

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size

    def bits_per_char(self, loss: float) -> float:
        """A validation loss (nats per token) in bits per character of the validation text.

        ``loss * tokens / characters / ln 2``: the text's total cost in bits, shared out over
        its characters, whatever the tokenizer. (For the word-level ``bpe``, which drops
        whitespace, the characters are those of the text it keeps.)
        """
        return loss * len(self.val) / self.val_chars / math.log(2)


def loaded_name(name: str, text: str) -> str:
    """The corpus that ``load_corpus(name)`` gave: ``"default"`` where Tiny Shakespeare could
    not be had and it fell back on the default corpus (it warned), else ``name``.

    >>> loaded_name("shakespeare", load_corpus("default")), loaded_name("shakespeare", "First Citizen: ...")
    ('default', 'shakespeare')
    """
    if name == "shakespeare" and not text.startswith(SHAKESPEARE_OPENING):
        return "default"
    return name


def prepare(
    corpus: str = "shakespeare",
    tokenizer: str = "char",
    bpe_merges: int = DEFAULT_BPE_MERGES,
    val_fraction: float = VAL_FRACTION,
    text: str | None = None,
) -> Corpus:
    """Load ``corpus`` (or use ``text``), tokenise it and split it 90/10 into train/val. The
    corpus is named as loaded (``loaded_name``): "default" where Tiny Shakespeare fell back on it.

    Character level: the vocabulary comes from the whole text and the id sequence is
    split with :func:`solutions.tokenisation.train_val_split` (exactly nanoGPT's split).
    BPE: the *text* is split at the same character position, the merges are learned on
    the training text only, and each part is encoded separately.
    """
    if text is None:
        text = load_corpus(corpus)
        corpus = loaded_name(corpus, text)
    cut = int(len(text) * (1 - val_fraction))  # train_val_split's cut, in characters
    if tokenizer == "char":
        tok = CharTokenizer.fit(text)
        ids = torch.tensor(tok.encode(text), dtype=torch.long)
        train, val = train_val_split(ids, val_fraction)
        val_chars = len(val)
    elif tokenizer in ("bpe", "byte-bpe"):
        tok = (
            BPE.fit(text[:cut], bpe_merges, alphabet_text=text)
            if tokenizer == "bpe"
            else ByteBPE.fit(text[:cut], bpe_merges)
        )
        train = torch.tensor(tok.encode(text[:cut]), dtype=torch.long)
        val = torch.tensor(tok.encode(text[cut:]), dtype=torch.long)
        val_chars = len(text[cut:]) if tokenizer == "byte-bpe" else len(" ".join(text[cut:].split()))
    else:
        raise ValueError(f"unknown tokenizer {tokenizer!r}: use one of {', '.join(TOKENIZERS)}")
    return Corpus(name=corpus, tokenizer=tok, train=train, val=val, val_chars=val_chars)
