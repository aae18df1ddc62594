"""Corpus -> token ids: a character tokenizer (the default) or the course's BPE.

``prepare(corpus, tokenizer)`` loads a corpus with :func:`solutions.data.load_corpus`
(``"shakespeare"``, ``"default"`` or a path), encodes it and splits it into a training
part (the first 90 %) and a held-out validation part (the last 10 %), as nanoGPT and
stage 01 do.

Two tokenizers, both serialisable to plain data (strings, lists) so that a checkpoint
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
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from solutions.bpe import BPETokenizer, train_bpe
from solutions.data import load_corpus
from solutions.tokenisation import build_vocab, train_val_split

VAL_FRACTION = 0.1
DEFAULT_BPE_MERGES = 300


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


def tokenizer_from_state(state: dict) -> CharTokenizer | BPE:
    """Rebuild a tokenizer from ``tokenizer.state()`` (as stored in a checkpoint)."""
    if state["kind"] == "char":
        return CharTokenizer(state["chars"])
    if state["kind"] == "bpe":
        return BPE([tuple(m) for m in state["merges"]], state["alphabet"], state["eow"])
    raise ValueError(f"unknown tokenizer kind {state['kind']!r}")


@dataclass
class Corpus:
    """A tokenised corpus: ``train`` and ``val`` are 1-D ``torch.long`` id tensors."""

    name: str
    tokenizer: CharTokenizer | BPE
    train: torch.Tensor
    val: torch.Tensor

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size


def prepare(
    corpus: str = "shakespeare",
    tokenizer: str = "char",
    bpe_merges: int = DEFAULT_BPE_MERGES,
    val_fraction: float = VAL_FRACTION,
    text: str | None = None,
) -> Corpus:
    """Load ``corpus`` (or use ``text``), tokenise it and split it 90/10 into train/val.

    Character level: the vocabulary comes from the whole text and the id sequence is
    split with :func:`solutions.tokenisation.train_val_split` (exactly nanoGPT's split).
    BPE: the *text* is split at the same character position, the merges are learned on
    the training text only, and each part is encoded separately.
    """
    if text is None:
        text = load_corpus(corpus)
    if tokenizer == "char":
        tok = CharTokenizer.fit(text)
        ids = torch.tensor(tok.encode(text), dtype=torch.long)
        train, val = train_val_split(ids, val_fraction)
    elif tokenizer == "bpe":
        cut = int(len(text) * (1 - val_fraction))
        tok = BPE.fit(text[:cut], bpe_merges, alphabet_text=text)
        train = torch.tensor(tok.encode(text[:cut]), dtype=torch.long)
        val = torch.tensor(tok.encode(text[cut:]), dtype=torch.long)
    else:
        raise ValueError(f"unknown tokenizer {tokenizer!r}: use 'char' or 'bpe'")
    return Corpus(name=corpus, tokenizer=tok, train=train, val=val)
