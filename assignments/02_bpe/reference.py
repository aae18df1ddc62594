"""Reference solutions for stage 02_bpe: byte pair encoding.

The token learner (count pairs, merge the most frequent, repeat) in a plain form
and an incremental form fast enough for a 1 MB corpus, the segmenter that applies a
learned merge list to a new word, a small tokenizer built on both, and byte-level
BPE over the UTF-8 byte stream.

Pre-tokenisation splits on whitespace; each word becomes the tuple of its
characters followed by an end-of-word symbol ``eow``. Word types are kept in order
of first appearance, and that order settles ties: among the pairs of highest count
the learner takes the one met first when the word types are scanned in order, each
left to right.

Every graded name here is self-contained: the build copies its source alone into
the reference notebook, so it uses only the imports below and the other graded
names of this stage.
"""

import collections
import collections.abc
import heapq

import torch


def word_frequencies(text: str, eow: str = "</w>") -> dict[tuple[str, ...], int]:
    """Count the words of ``text``, each written as its characters plus ``eow``.

    Words are the pieces of ``text.split()`` (runs of non-whitespace). The result
    keeps the word types in order of their first appearance in the text.

    Args:
        text: the training text.
        eow: the end-of-word symbol appended to every word.

    Returns:
        A dict from the symbol tuple of each word type to its count.

    Raises:
        ValueError: if ``eow`` is an empty string.

    Example:
        >>> word_frequencies("low lower low", eow="_")
        {('l', 'o', 'w', '_'): 2, ('l', 'o', 'w', 'e', 'r', '_'): 1}
    """
    if not isinstance(eow, str) or not eow:
        raise ValueError(f"eow must be a non-empty string, got {eow!r}")
    freqs: dict[tuple[str, ...], int] = {}
    for word in text.split():
        key = (*word, eow)
        freqs[key] = freqs.get(key, 0) + 1
    return freqs


def count_pairs(word_freqs: dict[tuple[str, ...], int]) -> dict[tuple[str, str], int]:
    """Count every adjacent pair of symbols, weighted by the count of its word.

    Overlapping pairs all count: the word ``a a a`` holds ``(a, a)`` twice. The
    pairs appear in the result in the order they are first met when the words
    are scanned in order, each left to right.

    Example:
        >>> count_pairs({('a', 'a', 'a', '_'): 2, ('b', 'a', '_'): 1})
        {('a', 'a'): 4, ('a', '_'): 3, ('b', 'a'): 1}
    """
    counts: dict[tuple[str, str], int] = {}
    for symbols, freq in word_freqs.items():
        for pair in zip(symbols, symbols[1:]):
            counts[pair] = counts.get(pair, 0) + freq
    return counts


def merge_pair(word_freqs: dict[tuple[str, ...], int], pair: tuple[str, str]) -> dict[tuple[str, ...], int]:
    """Replace every occurrence of ``pair`` in every word by the merged symbol.

    Occurrences are replaced left to right without overlapping: ``a a a`` with
    ``(a, a)`` becomes ``aa a``. The input is left unchanged; the result keeps the
    order of the words (two words that become equal have their counts added).

    Raises:
        ValueError: if ``pair`` is not a pair of two symbols.

    Example:
        >>> merge_pair({('a', 'a', 'a', '_'): 2, ('b', 'a', '_'): 1}, ('a', 'a'))
        {('aa', 'a', '_'): 2, ('b', 'a', '_'): 1}
    """
    if len(pair) != 2:
        raise ValueError(f"pair must hold exactly two symbols, got {pair!r}")
    first, second = pair
    merged = first + second
    result: dict[tuple[str, ...], int] = {}
    for symbols, freq in word_freqs.items():
        out: list[str] = []
        i = 0
        while i < len(symbols):
            if i + 1 < len(symbols) and symbols[i] == first and symbols[i + 1] == second:
                out.append(merged)
                i += 2
            else:
                out.append(symbols[i])
                i += 1
        key = tuple(out)
        result[key] = result.get(key, 0) + freq
    return result


def train_bpe(text: str, num_merges: int, eow: str = "</w>") -> list[tuple[str, str]]:
    """Learn up to ``num_merges`` BPE merges from ``text``.

    Each step merges the most frequent adjacent pair in every word and records it.
    Ties go to the pair met first when the current word types are scanned in order
    of first appearance, each left to right. Training stops early when no pair is
    left (every word is a single symbol).

    The result is the same as recounting every pair after every merge, but only
    the words that a merge changes are recounted: the learner keeps the pair
    counts and, for each pair, the set of words that hold it.

    Args:
        text: the training text, split on whitespace.
        num_merges: the number of merges to learn (at most).
        eow: the end-of-word symbol.

    Returns:
        The merges in the order learned, as ``(left, right)`` symbol pairs.

    Raises:
        ValueError: if ``num_merges`` is negative or ``eow`` is empty.

    Example:
        >>> text = "low " * 5 + "lowest " * 2 + "newer " * 6 + "wider " * 3 + "new " * 2
        >>> train_bpe(text, 3, eow="_")
        [('e', 'r'), ('er', '_'), ('n', 'e')]
    """
    if isinstance(num_merges, bool) or not isinstance(num_merges, int) or num_merges < 0:
        raise ValueError(f"num_merges must be a non-negative integer, got {num_merges!r}")
    word_freqs = word_frequencies(text, eow)
    words = [tuple(w) for w in word_freqs]  # index = order of first appearance
    freqs = list(word_freqs.values())

    counts: dict[tuple[str, str], int] = {}
    holders: dict[tuple[str, str], set[int]] = collections.defaultdict(set)  # pair -> words holding it
    first_word: dict[tuple[str, str], int] = {}  # pair -> smallest word index holding it (a cache)
    for i, symbols in enumerate(words):
        for pair in zip(symbols, symbols[1:]):
            counts[pair] = counts.get(pair, 0) + freqs[i]
            holders[pair].add(i)
            first_word.setdefault(pair, i)
    # a max-heap on the count; stale entries (count changed since) are skipped when popped
    heap = [(-c, pair) for pair, c in counts.items()]
    heapq.heapify(heap)

    def first_seen(pair: tuple[str, str]) -> tuple[int, int]:
        """(word index, symbol index) of the first occurrence of ``pair`` in scan order."""
        if pair not in first_word:
            first_word[pair] = min(holders[pair])
        i = first_word[pair]
        symbols = words[i]
        for j in range(len(symbols) - 1):
            if symbols[j] == pair[0] and symbols[j + 1] == pair[1]:
                return i, j
        raise RuntimeError(f"pair {pair!r} is indexed under word {i} but not found in it")

    def merge_symbols(symbols: tuple[str, ...], a: str, b: str) -> tuple[str, ...]:
        out: list[str] = []
        j = 0
        while j < len(symbols):
            if j + 1 < len(symbols) and symbols[j] == a and symbols[j + 1] == b:
                out.append(a + b)
                j += 2
            else:
                out.append(symbols[j])
                j += 1
        return tuple(out)

    merges: list[tuple[str, str]] = []
    while len(merges) < num_merges:
        # the highest current count, then every pair that has it
        while heap and counts.get(heap[0][1], 0) != -heap[0][0]:
            heapq.heappop(heap)
        if not heap:
            break  # no pair left
        top = heap[0][0]
        tied: set[tuple[str, str]] = set()
        while heap and heap[0][0] == top:
            _, pair = heapq.heappop(heap)
            if counts.get(pair, 0) == -top:
                tied.add(pair)
        best = min(tied, key=first_seen) if len(tied) > 1 else tied.pop()
        for pair in tied - {best}:
            heapq.heappush(heap, (top, pair))
        merges.append(best)

        # rewrite only the words that hold the pair, updating counts and the index
        delta: dict[tuple[str, str], int] = {}
        for i in list(holders[best]):
            old = words[i]
            new = merge_symbols(old, *best)
            words[i] = new
            freq = freqs[i]
            old_list = list(zip(old, old[1:]))
            new_list = list(zip(new, new[1:]))
            for pair in old_list:
                delta[pair] = delta.get(pair, 0) - freq
            for pair in new_list:
                delta[pair] = delta.get(pair, 0) + freq
            old_pairs, new_pairs = set(old_list), set(new_list)
            for pair in old_pairs - new_pairs:
                holders[pair].discard(i)
                if first_word.get(pair) == i:
                    del first_word[pair]  # recomputed from ``holders`` when needed
            for pair in new_pairs - old_pairs:
                holders[pair].add(i)
                if pair in first_word and i < first_word[pair]:
                    first_word[pair] = i
        for pair, d in delta.items():
            if d == 0:
                continue
            c = counts.get(pair, 0) + d
            if c > 0:
                counts[pair] = c
                heapq.heappush(heap, (-c, pair))
            else:
                counts.pop(pair, None)
                holders.pop(pair, None)
                first_word.pop(pair, None)
    return merges


def bpe_segment(word: str, merges: list[tuple[str, str]], eow: str = "</w>") -> list[str]:
    """Split one word into BPE tokens by applying ``merges`` in the order learned.

    The word starts as its characters plus ``eow``; then each merge in turn joins
    every occurrence of its pair, left to right without overlapping.

    Args:
        word: one word (no whitespace).
        merges: a merge list, as ``train_bpe`` returns.
        eow: the end-of-word symbol used in training.

    Returns:
        The tokens; the last one ends with ``eow``.

    Raises:
        ValueError: if ``word`` is empty or holds whitespace.

    Example:
        >>> merges = [('e', 'r'), ('er', '_'), ('n', 'e'), ('ne', 'w'),
        ...           ('l', 'o'), ('lo', 'w'), ('new', 'er_'), ('low', '_')]
        >>> bpe_segment("lower", merges, eow="_")
        ['low', 'er_']
    """
    if not word or any(ch.isspace() for ch in word):
        raise ValueError(f"bpe_segment needs one non-empty word without whitespace, got {word!r}")
    symbols = [*word, eow]
    ranks_of: dict[tuple[str, str], list[int]] = {}  # a pair may (rarely) be learned twice
    for r, pair in enumerate(merges):
        ranks_of.setdefault((pair[0], pair[1]), []).append(r)
    # Applying the merges in order skips every merge whose pair is absent at its
    # turn, so it is the same as: repeatedly apply the present pair whose next
    # rank after the last merge applied is lowest.
    last = -1
    while len(symbols) > 1:
        upcoming = [r for p in zip(symbols, symbols[1:]) for r in ranks_of.get(p, ()) if r > last]
        if not upcoming:
            break
        last = min(upcoming)
        a, b = merges[last]
        out: list[str] = []
        j = 0
        while j < len(symbols):
            if j + 1 < len(symbols) and symbols[j] == a and symbols[j + 1] == b:
                out.append(a + b)
                j += 2
            else:
                out.append(symbols[j])
                j += 1
        symbols = out
    return symbols


class BPETokenizer:
    """A word-level BPE tokenizer: whitespace pre-tokenisation, then ``bpe_segment``.

    The vocabulary ``vocab`` maps each token to its id: first the base symbols in
    sorted order, then ``eow``, then the token made by each merge in merge order (a
    token already present keeps its first id). The base symbols are ``alphabet``
    when given, else the single characters other than ``eow`` that appear in the
    merges.

    ``decode(encode(s))`` equals ``" ".join(s.split())``: whitespace between words
    is normalised to single spaces.

    Example:
        >>> tok = BPETokenizer.train("low low lower newest", num_merges=4, eow="_")
        >>> tok.merges
        [('l', 'o'), ('lo', 'w'), ('low', '_'), ('low', 'e')]
        >>> ids = tok.encode("lower   low")
        >>> tok.decode(ids)
        'lower low'
    """

    def __init__(
        self,
        merges: list[tuple[str, str]],
        eow: str = "</w>",
        alphabet: collections.abc.Iterable[str] | None = None,
    ) -> None:
        """Build the vocabulary from ``merges``, ``eow`` and the optional ``alphabet``.

        Args:
            merges: the merge list, as ``train_bpe`` returns.
            eow: the end-of-word symbol used in training.
            alphabet: an iterable of base symbols (a string counts as its
                characters), or ``None`` for the single characters of the merges
                other than ``eow``.

        Raises:
            ValueError: if ``eow`` is empty or a merge is not a pair of strings.
        """
        if not isinstance(eow, str) or not eow:
            raise ValueError(f"eow must be a non-empty string, got {eow!r}")
        checked = []
        for m in merges:
            if len(m) != 2 or not all(isinstance(s, str) and s for s in m):
                raise ValueError(f"each merge must be a pair of non-empty strings, got {m!r}")
            checked.append((m[0], m[1]))
        self.merges = checked
        self.eow = eow
        if alphabet is None:
            base = {s for pair in checked for s in pair if len(s) == 1 and s != eow}
        else:
            base = set(alphabet)
        self.vocab: dict[str, int] = {}
        for symbol in sorted(base):
            self.vocab.setdefault(symbol, len(self.vocab))
        self.vocab.setdefault(eow, len(self.vocab))
        for a, b in checked:
            self.vocab.setdefault(a + b, len(self.vocab))
        self.itos = {i: s for s, i in self.vocab.items()}
        self.cache: dict[str, list[int]] = {}

    @classmethod
    def train(cls, text: str, num_merges: int, eow: str = "</w>") -> "BPETokenizer":
        """Learn ``num_merges`` merges from ``text`` with ``train_bpe`` and build a
        tokenizer whose alphabet is the text's characters (every character of its
        words; whitespace only separates words and is never a token).

        Example:
            >>> BPETokenizer.train("aa ab", num_merges=1, eow="_").vocab
            {'a': 0, 'b': 1, '_': 2, 'aa': 3}
        """
        merges = train_bpe(text, num_merges, eow)
        return cls(merges, eow=eow, alphabet=set("".join(text.split())))

    def encode(self, text: str) -> list[int]:
        """Split ``text`` on whitespace, segment each word and return the token ids.

        Raises:
            ValueError: if a word holds a symbol that is not in the vocabulary (the
                message names it), or holds ``eow`` itself, which would make the
                word boundaries ambiguous when decoding.

        Example:
            >>> tok = BPETokenizer([('a', 'b'), ('ab', '_')], eow="_")
            >>> tok.vocab
            {'a': 0, 'b': 1, '_': 2, 'ab': 3, 'ab_': 4}
            >>> tok.encode("ab ba")
            [4, 1, 0, 2]
        """
        ids: list[int] = []
        for word in text.split():
            if word not in self.cache:
                if self.eow in word:
                    raise ValueError(f"the word {word!r} contains the end-of-word symbol {self.eow!r}")
                word_ids = []
                for token in bpe_segment(word, self.merges, self.eow):
                    if token not in self.vocab:
                        raise ValueError(f"symbol {token!r} (in the word {word!r}) is not in the vocabulary")
                    word_ids.append(self.vocab[token])
                self.cache[word] = word_ids
            ids.extend(self.cache[word])
        return ids

    def decode(self, ids: list[int] | torch.Tensor) -> str:
        """Turn token ids (a list or a 1-D LongTensor) back into text.

        A token that ends with ``eow`` ends a word; words are joined by single
        spaces. Trailing ids that do not end a word still form a last word.

        Raises:
            ValueError: if an id is not in the vocabulary.

        Example:
            >>> tok = BPETokenizer([('a', 'b'), ('ab', '_')], eow="_")
            >>> tok.decode([4, 1, 0, 2])
            'ab ba'
        """
        if isinstance(ids, torch.Tensor):
            ids = ids.tolist()
        words: list[str] = []
        current: list[str] = []
        for i in ids:
            i = int(i)
            if i not in self.itos:
                raise ValueError(f"id {i} is not in the vocabulary (size {len(self.itos)})")
            token = self.itos[i]
            if token.endswith(self.eow):
                current.append(token[: len(token) - len(self.eow)])
                words.append("".join(current))
                current = []
            else:
                current.append(token)
        if current:
            words.append("".join(current))
        return " ".join(words)


def train_byte_bpe(text: str, vocab_size: int) -> list[tuple[int, int]]:
    """Learn byte-level BPE merges over the whole UTF-8 byte stream of ``text``.

    Ids 0..255 are the bytes; merge ``i`` makes the new id ``256 + i``. There is
    no pre-splitting: the text is one sequence. Each step counts every adjacent
    pair (overlapping ones included), merges the most frequent one (ties go to the
    pair met first, left to right) non-overlapping left to right, and stops early
    when fewer than two ids are left. At most ``vocab_size - 256`` merges.

    Raises:
        ValueError: if ``vocab_size`` is below 256.

    Example:
        >>> train_byte_bpe("aaabdaaabac", 258)   # 'a' = 97, 'b' = 98
        [(97, 97), (256, 97)]
    """
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 256:
        raise ValueError(f"vocab_size must be an integer of at least 256, got {vocab_size!r}")
    ids = list(text.encode("utf-8"))
    merges: list[tuple[int, int]] = []
    for new_id in range(256, vocab_size):
        if len(ids) < 2:
            break
        counts = collections.Counter(zip(ids, ids[1:]))  # insertion order = first occurrence
        best = max(counts, key=counts.__getitem__)
        out: list[int] = []
        j = 0
        while j < len(ids):
            if j + 1 < len(ids) and ids[j] == best[0] and ids[j + 1] == best[1]:
                out.append(new_id)
                j += 2
            else:
                out.append(ids[j])
                j += 1
        ids = out
        merges.append(best)
    return merges


def byte_bpe_encode(text: str, merges: list[tuple[int, int]]) -> list[int]:
    """Encode ``text`` as UTF-8 bytes, then apply ``merges`` by rank.

    Repeatedly, the pair present with the lowest rank (its index in ``merges``)
    is replaced by its id ``256 + rank``, non-overlapping left to right, until no
    pair present has a merge.

    Raises:
        ValueError: if a merge uses an id not defined before it. The whole
            merge list is checked first, whatever the text: merge ``i`` may only
            join ids below ``256 + i``.

    Example:
        >>> byte_bpe_encode("aaab", [(97, 97), (256, 97)])
        [257, 98]
    """
    rank: dict[tuple[int, int], int] = {}
    for r, pair in enumerate(merges):
        if len(pair) != 2 or not all(0 <= int(x) < 256 + r for x in pair):
            raise ValueError(f"merge {r} {pair!r} must join two ids below {256 + r}")
        rank.setdefault((int(pair[0]), int(pair[1])), r)
    ids = list(text.encode("utf-8"))
    while len(ids) > 1:
        present = set(zip(ids, ids[1:]))
        best = min(present, key=lambda p: rank.get(p, len(merges)))
        if best not in rank:
            break
        new_id = 256 + rank[best]
        out: list[int] = []
        j = 0
        while j < len(ids):
            if j + 1 < len(ids) and ids[j] == best[0] and ids[j + 1] == best[1]:
                out.append(new_id)
                j += 2
            else:
                out.append(ids[j])
                j += 1
        ids = out
    return ids


def byte_bpe_decode(ids: list[int] | torch.Tensor, merges: list[tuple[int, int]]) -> str:
    """Turn byte-level BPE ids (a list or a 1-D LongTensor) back into text.

    Each id expands to its bytes; the bytes are decoded as UTF-8, and invalid
    UTF-8 becomes replacement characters (U+FFFD).

    Raises:
        ValueError: if an id is outside ``0 .. 255 + len(merges)`` or a merge uses
            an id not defined before it. The whole merge list is checked first,
            whatever the ids: merge ``i`` may only join ids below ``256 + i``.

    Example:
        >>> byte_bpe_decode([257, 98], [(97, 97), (256, 97)])
        'aaab'
        >>> byte_bpe_decode([255], [])
        '\\ufffd'
    """
    table = [bytes([b]) for b in range(256)]
    for r, pair in enumerate(merges):
        if len(pair) != 2 or not all(0 <= int(x) < 256 + r for x in pair):
            raise ValueError(f"merge {r} {pair!r} must join two ids below {256 + r}")
        table.append(table[int(pair[0])] + table[int(pair[1])])
    if isinstance(ids, torch.Tensor):
        ids = ids.tolist()
    pieces = []
    for i in ids:
        i = int(i)
        if not 0 <= i < len(table):
            raise ValueError(f"id {i} is outside the vocabulary 0..{len(table) - 1}")
        pieces.append(table[i])
    return b"".join(pieces).decode("utf-8", errors="replace")
