"""Realistic mistakes and correct alternatives for stage 02_bpe.

Every mistake of ``train_bpe`` is built on a correct *incremental* learner (so that
it stays within the efficiency budget and loses points on ``train_bpe`` alone), and
every mistake of ``efficiency`` but one is a *correct* learner that is too slow.
The mistakes that break one clause alone are mostly a correct function with one slip
(``slip(BASE, (old, new))``, BASE mostly the reference's own ``reference("bpe", name)``),
so that each breaks exactly the clause (``clauses.md`` id) it declares.
"""

import re
import textwrap

from autograder.authoring.catalogue import Variant, reference, slip


def _fill(template: str, right: dict[str, str], changes: dict[str, str]) -> str:
    """``template`` with each ``{name}`` replaced: a placeholder alone on its line by a
    block of code indented to its column, any other by a one-line expression."""
    values = right | changes

    def block(match: re.Match) -> str:
        code = textwrap.dedent(values[match.group(2)]).strip("\n")
        return textwrap.indent(code, match.group(1))

    code = re.sub(r"(?m)^( *)\{(\w+)\}$", block, template)
    for name, value in values.items():
        code = code.replace("{" + name + "}", value)
    return code


# A correct incremental learner in a style of its own (a scan for the maximum, an
# index of the words holding each pair). The train_bpe mistakes change one part of it.
_INCREMENTAL = """
    def train_bpe(text, num_merges, eow="</w>"):
        {check}
        table = word_frequencies(text, {eow_arg})
        words = [list(w) for w in table]
        freqs = list(table.values())
        counts = collections.Counter()
        where = collections.defaultdict(set)
        for i, w in enumerate(words):
            for pair in zip(w, w[1:]):
                counts[pair] += freqs[i]
                where[pair].add(i)

        def first_place(pair):
            i = min(where[pair])
            w = words[i]
            return i, next(j for j in range(len(w) - 1) if (w[j], w[j + 1]) == pair)

        merges = []
        while {loop}:
            {choose}
            merges.append(best)
            for i in sorted(where[best]):
                old, new, j = words[i], [], 0
                while j < len(old):
                    if j + 1 < len(old) and (old[j], old[j + 1]) == best:
                        new.append(old[j] + old[j + 1])
                        j += 2
                    else:
                        new.append(old[j])
                        j += 1
                for pair in zip(old, old[1:]):
                    counts[pair] -= freqs[i]
                    where[pair].discard(i)
                for pair in zip(new, new[1:]):
                    counts[pair] += freqs[i]
                    where[pair].add(i)
                words[i] = new
                for pair in zip(old, old[1:]):
                    if pair in counts and counts[pair] <= 0:
                        del counts[pair]
                        where.pop(pair, None)
        return merges
"""

_RIGHT = {
    "check": """
        if num_merges < 0:
            raise ValueError(f"num_merges must be >= 0, got {num_merges}")
    """,
    "eow_arg": "eow",
    "loop": "len(merges) < num_merges and counts",
    "choose": """
        top = max(counts.values())
        best = min((p for p, c in counts.items() if c == top), key=first_place)
    """,
}


def _incremental(**changes: str) -> str:
    return _fill(_INCREMENTAL, _RIGHT, changes)


# The reference functions that the single-slip mistakes below change in one place.
WORD_FREQUENCIES = reference("bpe", "word_frequencies")
MERGE_PAIR = reference("bpe", "merge_pair")
BYTE_TRAIN = reference("bpe", "train_byte_bpe")
BYTE_DECODE = reference("bpe", "byte_bpe_decode")

# A correct bpe_segment written otherwise than the reference's (each merge applied in turn
# over the whole word), which the segment mistakes change in one place.
SEGMENT = """
def bpe_segment(word, merges, eow="</w>"):
    if not word or any(ch.isspace() for ch in word):
        raise ValueError(f"not one word: {word!r}")
    symbols = list(word) + [eow]
    for a, b in merges:
        out, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
                out.append(a + b)
                i += 2
            else:
                out.append(symbols[i])
                i += 1
        symbols = out
    return symbols
"""


MISTAKES = [
    # word_frequencies
    Variant(
        "word_frequencies",
        "word types sorted instead of in order of appearance",
        {
            "word_frequencies": """
        def word_frequencies(text, eow="</w>"):
            if not eow:
                raise ValueError("eow must not be empty")
            counts = collections.Counter(text.split())
            return {tuple(word) + (eow,): counts[word] for word in sorted(counts)}
    """
        },
        hints=("word types sorted",),
        clauses=("order",),
    ),
    Variant(
        "word_frequencies",
        "end-of-word symbol added as its characters",
        {
            "word_frequencies": """
        def word_frequencies(text, eow="</w>"):
            if not eow:
                raise ValueError("eow must not be empty")
            freqs = {}
            for word in text.split():
                key = tuple(word + eow)
                freqs[key] = freqs.get(key, 0) + 1
            return freqs
    """
        },
        hints=("end-of-word symbol split into characters",),
        clauses=("eow-symbol",),
    ),
    Variant(
        "word_frequencies",
        "split on single spaces",
        {
            "word_frequencies": """
        def word_frequencies(text, eow="</w>"):
            if not eow:
                raise ValueError("eow must not be empty")
            freqs = {}
            for word in text.split(" "):
                key = tuple(word) + (eow,)
                freqs[key] = freqs.get(key, 0) + 1
            return freqs
    """
        },
        hints=("split on single spaces",),
        clauses=("split",),
    ),
    Variant(
        "word_frequencies",
        "no end-of-word symbol",
        {
            "word_frequencies": """
        def word_frequencies(text, eow="</w>"):
            if not eow:
                raise ValueError("eow must not be empty")
            freqs = {}
            for word in text.split():
                freqs[tuple(word)] = freqs.get(tuple(word), 0) + 1
            return freqs
    """
        },
        hints=("no end-of-word symbol",),
        clauses=("eow-symbol",),
    ),
    Variant(
        "word_frequencies",
        "empty eow not rejected",
        {
            "word_frequencies": """
        def word_frequencies(text, eow="</w>"):
            freqs = {}
            for word in text.split():
                key = (*word, eow)
                freqs[key] = freqs.get(key, 0) + 1
            return freqs
    """
        },
        clauses=("empty-eow",),
    ),
    # count_pairs
    Variant(
        "count_pairs",
        "each pair counted once per word type (a set of pairs)",
        {
            "count_pairs": """
        def count_pairs(word_freqs):
            counts = {}
            for symbols, n in word_freqs.items():
                for pair in dict.fromkeys(zip(symbols, symbols[1:])):
                    counts[pair] = counts.get(pair, 0) + n
            return counts
    """
        },
        hints=("overlapping pairs counted once", "counts too small"),
        clauses=("overlap",),
    ),
    Variant(
        "count_pairs",
        "word counts ignored",
        {
            "count_pairs": """
        def count_pairs(word_freqs):
            counts = {}
            for symbols in word_freqs:
                for pair in zip(symbols, symbols[1:]):
                    counts[pair] = counts.get(pair, 0) + 1
            return counts
    """
        },
        hints=("word counts ignored", "counts too small"),
        clauses=("weighted",),
    ),
    Variant(
        "count_pairs",
        "pairs across word boundaries",
        {
            "count_pairs": """
        def count_pairs(word_freqs):
            stream = []
            for symbols, n in word_freqs.items():
                stream.extend(list(symbols) * n)
            counts = {}
            for pair in zip(stream, stream[1:]):
                counts[pair] = counts.get(pair, 0) + 1
            return counts
    """
        },
        clauses=("boundary",),
    ),
    Variant(
        "count_pairs",
        "first pair of each word skipped",
        {
            "count_pairs": """
        def count_pairs(word_freqs):
            counts = {}
            for symbols, n in word_freqs.items():
                for i in range(1, len(symbols) - 1):
                    pair = (symbols[i], symbols[i + 1])
                    counts[pair] = counts.get(pair, 0) + n
            return counts
    """
        },
        clauses=("adjacent",),
    ),
    # merge_pair
    Variant(
        "merge_pair",
        "overlapping pairs merged twice",
        {
            "merge_pair": """
        def merge_pair(word_freqs, pair):
            if len(pair) != 2:
                raise ValueError("pair must hold two symbols")
            result = {}
            for symbols, n in word_freqs.items():
                out = []
                for i, s in enumerate(symbols):
                    if i + 1 < len(symbols) and (s, symbols[i + 1]) == tuple(pair):
                        out.append(s + symbols[i + 1])
                    elif i > 0 and (symbols[i - 1], s) == tuple(pair):
                        continue
                    else:
                        out.append(s)
                result[tuple(out)] = result.get(tuple(out), 0) + n
            return result
    """
        },
        hints=("overlapping occurrences merged twice",),
        clauses=("left-to-right",),
    ),
    Variant(
        "merge_pair",
        "string replace matches parts of longer symbols",
        {
            "merge_pair": """
        def merge_pair(word_freqs, pair):
            if len(pair) != 2:
                raise ValueError("pair must hold two symbols")
            a, b = pair
            result = {}
            for symbols, n in word_freqs.items():
                key = tuple(" ".join(symbols).replace(a + " " + b, a + b).split(" "))
                result[key] = result.get(key, 0) + n
            return result
    """
        },
        clauses=("whole",),
    ),
    Variant(
        "merge_pair",
        "the dict passed in is changed",
        {
            "merge_pair": """
        def merge_pair(word_freqs, pair):
            if len(pair) != 2:
                raise ValueError("pair must hold two symbols")
            a, b = pair
            for symbols in list(word_freqs):
                out, i = [], 0
                while i < len(symbols):
                    if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
                        out.append(a + b)
                        i += 2
                    else:
                        out.append(symbols[i])
                        i += 1
                if tuple(out) != symbols:
                    n = word_freqs.pop(symbols)
                    word_freqs[tuple(out)] = word_freqs.get(tuple(out), 0) + n
            return word_freqs
    """
        },
        hints=("input dict changed",),
        clauses=("new-dict",),
    ),
    Variant(
        "merge_pair",
        "words that become equal overwrite each other's counts",
        {
            "merge_pair": """
        def merge_pair(word_freqs, pair):
            if len(pair) != 2:
                raise ValueError("pair must hold two symbols")
            a, b = pair
            result = {}
            for symbols, n in word_freqs.items():
                out, i = [], 0
                while i < len(symbols):
                    if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
                        out.append(a + b)
                        i += 2
                    else:
                        out.append(symbols[i])
                        i += 1
                result[tuple(out)] = n
            return result
    """
        },
        clauses=("sum-counts",),
    ),
    Variant(
        "merge_pair",
        "merges from right to left",
        {
            "merge_pair": """
        def merge_pair(word_freqs, pair):
            if len(pair) != 2:
                raise ValueError("pair must hold two symbols")
            a, b = pair
            result = {}
            for symbols, n in word_freqs.items():
                out, i = [], len(symbols) - 1
                while i >= 0:
                    if i > 0 and symbols[i - 1] == a and symbols[i] == b:
                        out.append(a + b)
                        i -= 2
                    else:
                        out.append(symbols[i])
                        i -= 1
                key = tuple(reversed(out))
                result[key] = result.get(key, 0) + n
            return result
    """
        },
        hints=("merged right to left",),
        clauses=("left-to-right",),
    ),
    Variant(
        "merge_pair",
        "a pair of three symbols accepted (pair[0] and pair[1] only)",
        {
            "merge_pair": """
        def merge_pair(word_freqs, pair):
            result = {}
            for symbols, n in word_freqs.items():
                out, i = [], 0
                while i < len(symbols):
                    if i + 1 < len(symbols) and symbols[i] == pair[0] and symbols[i + 1] == pair[1]:
                        out.append(pair[0] + pair[1])
                        i += 2
                    else:
                        out.append(symbols[i])
                        i += 1
                result[tuple(out)] = result.get(tuple(out), 0) + n
            return result
    """
        },
        clauses=("not-two",),
    ),
    # train_bpe (each on a correct incremental learner, so it is fast enough)
    Variant(
        "train_bpe",
        "lexicographic tie-breaking (the larger pair wins)",
        {
            "train_bpe": _incremental(
                choose="best = max(counts, key=lambda p: (counts[p], p))",
            )
        },
        hints=("lexicographic tie-breaking",),
        clauses=("ties",),
    ),
    Variant(
        "train_bpe",
        "lexicographic tie-breaking (the smaller pair wins)",
        {
            "train_bpe": _incremental(
                choose="""
        top = max(counts.values())
        best = min(p for p, c in counts.items() if c == top)
    """,
            )
        },
        hints=("lexicographic tie-breaking",),
        clauses=("ties",),
    ),
    Variant(
        "train_bpe",
        "ties broken by the dict order of the pair counts (new pairs go to its end)",
        {
            "train_bpe": _incremental(
                choose="""
        top = max(counts.values())
        best = next(p for p, c in counts.items() if c == top)
    """,
            )
        },
        hints=("ties by dict order",),
        clauses=("ties",),
    ),
    Variant(
        "train_bpe",
        "merges recorded as lists",
        {"train_bpe": slip(_incremental(), ("merges.append(best)", "merges.append(list(best))"))},
        clauses=("most-frequent",),
    ),
    Variant(
        "train_bpe",
        "no early stop once no pair is left",
        {
            "train_bpe": _incremental(
                loop="len(merges) < num_merges",
            )
        },
        clauses=("early-stop",),
    ),
    Variant(
        "train_bpe",
        "eow checked but not passed on to word_frequencies",
        {
            "train_bpe": _incremental(
                check="""
                    if num_merges < 0 or not eow:
                        raise ValueError("num_merges must be >= 0 and eow not empty")
                """,
                eow_arg="",
            )
        },
        hints=("eow not passed on",),
        clauses=("eow",),
    ),
    Variant(
        "train_bpe",
        "negative num_merges not rejected",
        {
            "train_bpe": _incremental(
                check="num_merges = max(num_merges, 0)",
            )
        },
        clauses=("negative",),
    ),
    Variant(
        "train_bpe",
        "empty eow not rejected (the words split inline)",
        {
            "train_bpe": _incremental().replace(
                "table = word_frequencies(text, eow)",
                "table = collections.Counter(tuple(word) + (eow,) for word in text.split())",
            )
        },
        clauses=("empty-eow",),
    ),
    # segment
    Variant(
        "segment",
        "no end-of-word symbol on the word",
        {
            "bpe_segment": """
        def bpe_segment(word, merges, eow="</w>"):
            if not word or any(ch.isspace() for ch in word):
                raise ValueError(f"not one word: {word!r}")
            symbols = list(word)
            for a, b in merges:
                out, i = [], 0
                while i < len(symbols):
                    if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
                        out.append(a + b)
                        i += 2
                    else:
                        out.append(symbols[i])
                        i += 1
                symbols = out
            return symbols
    """
        },
        hints=("end-of-word symbol missing from the word",),
        clauses=("start",),
    ),
    Variant(
        "segment",
        "each merge applied to its first occurrence only",
        {
            "bpe_segment": """
        def bpe_segment(word, merges, eow="</w>"):
            if not word or any(ch.isspace() for ch in word):
                raise ValueError(f"not one word: {word!r}")
            symbols = list(word) + [eow]
            for a, b in merges:
                for i in range(len(symbols) - 1):
                    if symbols[i] == a and symbols[i + 1] == b:
                        symbols[i : i + 2] = [a + b]
                        break
            return symbols
    """
        },
        clauses=("every",),
    ),
    Variant(
        "segment",
        "greedy longest match against the vocabulary",
        {
            "bpe_segment": """
        def bpe_segment(word, merges, eow="</w>"):
            if not word or any(ch.isspace() for ch in word):
                raise ValueError(f"not one word: {word!r}")
            known = {a + b for a, b in merges} | {eow}
            symbols = list(word) + [eow]
            out, i = [], 0
            while i < len(symbols):
                j = len(symbols)
                while j > i + 1 and "".join(symbols[i:j]) not in known:
                    j -= 1
                out.append("".join(symbols[i:j]))
                i = j
            return out
    """
        },
        clauses=("order",),
    ),
    Variant(
        "segment",
        "end-of-word symbol hard-coded as '</w>'",
        {
            "bpe_segment": """
        def bpe_segment(word, merges, eow="</w>"):
            if not word or any(ch.isspace() for ch in word):
                raise ValueError(f"not one word: {word!r}")
            symbols = list(word) + ["</w>"]
            for a, b in merges:
                out, i = [], 0
                while i < len(symbols):
                    if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
                        out.append(a + b)
                        i += 2
                    else:
                        out.append(symbols[i])
                        i += 1
                symbols = out
            return symbols
    """
        },
        hints=("end-of-word symbol missing from the word",),
        clauses=("eow",),
    ),
    Variant(
        "segment",
        "no ValueError for an empty word or two words",
        {
            "bpe_segment": """
        def bpe_segment(word, merges, eow="</w>"):
            symbols = list(word) + [eow]
            for a, b in merges:
                out, i = [], 0
                while i < len(symbols):
                    if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
                        out.append(a + b)
                        i += 2
                    else:
                        out.append(symbols[i])
                        i += 1
                symbols = out
            return symbols
    """
        },
        clauses=("bad-word",),
    ),
]

# The tokenizer mistakes share a correct class and change one method or line of it.
_TOKENIZER = """
    class BPETokenizer:
        def __init__(self, merges, eow="</w>", alphabet=None):
            if not eow:
                raise ValueError("eow must not be empty")
            self.merges = [tuple(m) for m in merges]
            self.eow = eow
            base = {alphabet_expr}
            self.vocab = {}
            for symbol in {base_order}:
                self.vocab[symbol] = len(self.vocab)
            self.vocab[eow] = len(self.vocab)
            for a, b in self.merges:
                {add_merge}
            self.itos = {i: s for s, i in self.vocab.items()}

        @classmethod
        def train(cls, text, num_merges, eow="</w>"):
            merges = train_bpe(text, num_merges, eow)
            return cls(merges, eow=eow, alphabet={train_alphabet})

        def encode(self, text):
            ids = []
            for word in text.split():
                if self.eow in word:
                    raise ValueError(f"{word!r} contains the end-of-word symbol")
                for token in bpe_segment(word, self.merges, self.eow):
                    {lookup}
            return ids

        def decode(self, ids):
            {decode_body}
"""

_DECODE = """
    if isinstance(ids, torch.Tensor):
        ids = ids.tolist()
    words, current = [], ""
    for i in ids:
        if i not in self.itos:
            raise ValueError(f"unknown id {i}")
        token = self.itos[i]
        if token.endswith(self.eow):
            words.append(current + token[: -len(self.eow)])
            current = ""
        else:
            current += token
    if current:
        words.append(current)
    return " ".join(words)
"""

_TOKENIZER_RIGHT = {
    "alphabet_expr": "set(alphabet) if alphabet is not None else {s for m in self.merges for s in m if len(s) == 1 and s != eow}",
    "base_order": "sorted(base)",
    "add_merge": """
        if a + b not in self.vocab:
            self.vocab[a + b] = len(self.vocab)
    """,
    "train_alphabet": "{c for c in text if not c.isspace()}",
    "lookup": """
        if token not in self.vocab:
            raise ValueError(f"unknown symbol {token!r}")
        ids.append(self.vocab[token])
    """,
    "decode_body": _DECODE,
}


def _tokenizer(**changes: str) -> str:
    return _fill(_TOKENIZER, _TOKENIZER_RIGHT, changes)


def _without(code: str, *lines: str) -> str:
    """``code`` less the lines that read ``lines`` (whitespace aside)."""
    return "\n".join(line for line in code.splitlines() if line.strip() not in lines)


MISTAKES += [
    # tokenizer
    Variant(
        "tokenizer",
        "end-of-word marker left in the decoded text",
        {
            "BPETokenizer": _tokenizer(
                decode_body=_DECODE.replace(
                    "words.append(current + token[: -len(self.eow)])", "words.append(current + token)"
                ),
            )
        },
        hints=("end-of-word symbol left in the text",),
        clauses=("decode-words",),
    ),
    Variant(
        "tokenizer",
        "base symbols in order of appearance, not sorted",
        {
            "BPETokenizer": _tokenizer(
                alphabet_expr="list(dict.fromkeys(alphabet)) if alphabet is not None else list(dict.fromkeys(s for m in self.merges for s in m if len(s) == 1 and s != eow))",
                base_order="base",
            )
        },
        hints=("ids not in vocabulary order",),
        clauses=("vocab",),
    ),
    Variant(
        "tokenizer",
        "a token made by two merges gets a second id",
        {
            "BPETokenizer": _tokenizer(
                add_merge="self.vocab[a + b] = len(self.vocab)",
            )
        },
        clauses=("first-id",),
    ),
    Variant(
        "tokenizer",
        "decode cannot take a LongTensor",
        {
            "BPETokenizer": _tokenizer(
                decode_body=_without(_DECODE, "if isinstance(ids, torch.Tensor):", "ids = ids.tolist()"),
            )
        },
        clauses=("decode-forms",),
    ),
    Variant(
        "tokenizer",
        "KeyError instead of ValueError for an unknown character",
        {
            "BPETokenizer": _tokenizer(
                lookup="ids.append(self.vocab[token])",
            )
        },
        clauses=("encode-unknown",),
    ),
    Variant(
        "tokenizer",
        "ids after the last word end are dropped",
        {
            "BPETokenizer": _tokenizer(
                decode_body=_without(_DECODE, "if current:", "words.append(current)"),
            )
        },
        clauses=("last-word",),
    ),
    Variant(
        "tokenizer",
        "train takes the alphabet from the merges only",
        {
            "BPETokenizer": _tokenizer(
                train_alphabet="None",
            )
        },
        clauses=("train",),
    ),
    Variant(
        "tokenizer",
        "a word that holds eow is not refused",
        {
            "BPETokenizer": _without(
                _tokenizer(),
                "if self.eow in word:",
                'raise ValueError(f"{word!r} contains the end-of-word symbol")',
            )
        },
        clauses=("encode-eow",),
    ),
    Variant(
        "tokenizer",
        "__init__ checks nothing: an empty eow is accepted, a merge's first two symbols taken",
        {
            "BPETokenizer": slip(
                _without(_tokenizer(), "if not eow:", 'raise ValueError("eow must not be empty")'),
                ("self.merges = [tuple(m) for m in merges]", "self.merges = [(m[0], m[1]) for m in merges]"),
            )
        },
        clauses=("init-errors",),
        hidden_only="the public tests build tokenizers only from valid merges and eow",
    ),
    Variant(
        "tokenizer",
        "decode: an unknown id raises KeyError",
        {
            "BPETokenizer": _tokenizer(
                decode_body=_without(_DECODE, "if i not in self.itos:", 'raise ValueError(f"unknown id {i}")'),
            )
        },
        clauses=("decode-unknown",),
    ),
    # efficiency: correct learners that are too slow
    Variant(
        "efficiency",
        "the plain loop over count_pairs and merge_pair",
        {
            "train_bpe": """
        def train_bpe(text, num_merges, eow="</w>"):
            if num_merges < 0:
                raise ValueError("num_merges must be >= 0")
            words = word_frequencies(text, eow)
            merges = []
            while len(merges) < num_merges:
                counts = count_pairs(words)
                if not counts:
                    break
                top = max(counts.values())
                best = next(pair for pair, c in counts.items() if c == top)
                merges.append(best)
                words = merge_pair(words, best)
            return merges
    """
        },
        clauses=("budget",),
    ),
    Variant(
        "efficiency",
        "works on every word of the running text, not word types",
        {
            "train_bpe": """
        def train_bpe(text, num_merges, eow="</w>"):
            if num_merges < 0:
                raise ValueError("num_merges must be >= 0")
            if not eow:
                raise ValueError("eow must not be empty")
            words = [list(w) + [eow] for w in text.split()]
            merges = []
            for _ in range(num_merges):
                counts = collections.Counter()
                for w in words:
                    counts.update(zip(w, w[1:]))
                if not counts:
                    break
                best = max(counts, key=counts.get)
                merges.append(best)
                for k, w in enumerate(words):
                    out, i = [], 0
                    while i < len(w):
                        if i + 1 < len(w) and w[i] == best[0] and w[i + 1] == best[1]:
                            out.append(best[0] + best[1])
                            i += 2
                        else:
                            out.append(w[i])
                            i += 1
                    words[k] = out
            return merges
    """
        },
        clauses=("budget",),
    ),
    Variant(
        "efficiency",
        "counts kept, but every word type rewritten after each merge",
        {
            "train_bpe": """
        def train_bpe(text, num_merges, eow="</w>"):
            if num_merges < 0:
                raise ValueError("num_merges must be >= 0")
            words = dict(word_frequencies(text, eow))
            counts = collections.Counter()
            for symbols, n in words.items():
                for pair in zip(symbols, symbols[1:]):
                    counts[pair] += n
            merges = []
            while len(merges) < num_merges:
                counts = +counts  # drops the pairs whose count fell to 0
                if not counts:
                    break
                top = max(counts.values())
                tied = {p for p, c in counts.items() if c == top}
                best = next(p for w in words for p in zip(w, w[1:]) if p in tied)
                merges.append(best)
                rewritten = {}
                for symbols, n in words.items():
                    out, i = [], 0
                    while i < len(symbols):
                        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == best:
                            out.append(symbols[i] + symbols[i + 1])
                            i += 2
                        else:
                            out.append(symbols[i])
                            i += 1
                    new = tuple(out)
                    if new != symbols:
                        for p in zip(symbols, symbols[1:]):
                            counts[p] -= n
                        for p in zip(new, new[1:]):
                            counts[p] += n
                    rewritten[new] = n
                words = rewritten
            return merges
    """
        },
        clauses=("budget",),
    ),
    # byte_bpe
    Variant(
        "byte_bpe",
        "decode raises on invalid UTF-8",
        {"byte_bpe_decode": slip(BYTE_DECODE, ('.decode("utf-8", errors="replace")', '.decode("utf-8")'))},
        hints=("invalid UTF-8 raises",),
        clauses=("invalid-utf8",),
    ),
    Variant(
        "byte_bpe",
        "decode token by token",
        {
            "byte_bpe_decode": slip(
                BYTE_DECODE,
                ("pieces.append(table[i])", 'pieces.append(table[i].decode("utf-8", errors="replace"))'),
                ('return b"".join(pieces).decode("utf-8", errors="replace")', 'return "".join(pieces)'),
            )
        },
        clauses=("decode",),
    ),
    Variant(
        "byte_bpe",
        "ties to the numerically larger pair",
        {
            "train_byte_bpe": """
        def train_byte_bpe(text, vocab_size):
            if vocab_size < 256:
                raise ValueError("vocab_size must be at least 256")
            ids = list(text.encode("utf-8"))
            merges = []
            for new_id in range(256, vocab_size):
                if len(ids) < 2:
                    break
                counts = collections.Counter(zip(ids, ids[1:]))
                best = max(counts, key=lambda p: (counts[p], p))
                merges.append(best)
                out, i = [], 0
                while i < len(ids):
                    if i + 1 < len(ids) and (ids[i], ids[i + 1]) == best:
                        out.append(new_id)
                        i += 2
                    else:
                        out.append(ids[i])
                        i += 1
                ids = out
            return merges
    """
        },
        clauses=("ties",),
    ),
    Variant(
        "byte_bpe",
        "vocab_size - 256 + 1 merges",
        {
            "train_byte_bpe": """
        def train_byte_bpe(text, vocab_size):
            if vocab_size < 256:
                raise ValueError("vocab_size must be at least 256")
            ids = list(text.encode("utf-8"))
            merges = []
            for new_id in range(256, vocab_size + 1):
                if len(ids) < 2:
                    break
                counts = collections.Counter(zip(ids, ids[1:]))
                best = max(counts, key=counts.get)
                merges.append(best)
                out, i = [], 0
                while i < len(ids):
                    if i + 1 < len(ids) and (ids[i], ids[i + 1]) == best:
                        out.append(new_id)
                        i += 2
                    else:
                        out.append(ids[i])
                        i += 1
                ids = out
            return merges
    """
        },
        hints=("wrong number of merges",),
        clauses=("count",),
    ),
    Variant(
        "byte_bpe",
        "encode replaces only the first occurrence of each pair",
        {
            "byte_bpe_encode": """
        def byte_bpe_encode(text, merges):
            for r, pair in enumerate(merges):
                if len(pair) != 2 or not all(0 <= int(x) < 256 + r for x in pair):
                    raise ValueError(f"merge {r} {pair!r} must join two ids below {256 + r}")
            ids = list(text.encode("utf-8"))
            for r, (a, b) in enumerate(merges):
                for i in range(len(ids) - 1):
                    if ids[i] == a and ids[i + 1] == b:
                        ids[i : i + 2] = [256 + r]
                        break
            return ids
    """
        },
        clauses=("encode",),
    ),
    Variant(
        "byte_bpe",
        "vocab_size below 256 not rejected",
        {
            "train_byte_bpe": """
        def train_byte_bpe(text, vocab_size):
            ids = list(text.encode("utf-8"))
            merges = []
            for new_id in range(256, vocab_size):
                if len(ids) < 2:
                    break
                counts = collections.Counter(zip(ids, ids[1:]))
                best = max(counts, key=counts.get)
                merges.append(best)
                out, i = [], 0
                while i < len(ids):
                    if i + 1 < len(ids) and (ids[i], ids[i + 1]) == best:
                        out.append(new_id)
                        i += 2
                    else:
                        out.append(ids[i])
                        i += 1
                ids = out
            return merges
    """
        },
        clauses=("vocab-error",),
    ),
    Variant(
        "byte_bpe",
        "decode: ids outside the vocabulary not refused (list indexing)",
        {
            "byte_bpe_decode": slip(
                BYTE_DECODE,
                (
                    '        if not 0 <= i < len(table):\n            raise ValueError(f"id {i} is outside the vocabulary 0..{len(table) - 1}")\n',
                    "",
                ),
            )
        },
        clauses=("decode-range",),
    ),
    Variant(
        "byte_bpe",
        "encode does not check the merges",
        {
            "byte_bpe_encode": """
        def byte_bpe_encode(text, merges):
            rank = {tuple(pair): r for r, pair in reversed(list(enumerate(merges)))}
            ids = list(text.encode("utf-8"))
            while len(ids) > 1:
                best = min(zip(ids, ids[1:]), key=lambda p: rank.get(p, len(merges)))
                if best not in rank:
                    break
                out, i = [], 0
                while i < len(ids):
                    if i + 1 < len(ids) and (ids[i], ids[i + 1]) == best:
                        out.append(256 + rank[best])
                        i += 2
                    else:
                        out.append(ids[i])
                        i += 1
                ids = out
            return ids
    """
        },
        clauses=("undefined-merge",),
    ),
    Variant(
        "byte_bpe",
        "decode checks only the merges that its ids reach (expands them recursively)",
        {
            "byte_bpe_decode": """
        def byte_bpe_decode(ids, merges):
            if isinstance(ids, torch.Tensor):
                ids = ids.tolist()

            def expand(i):
                if i < 256:
                    return bytes([i])
                a, b = merges[i - 256]
                if not (0 <= a < i and 0 <= b < i):
                    raise ValueError(f"merge {i - 256} uses an id not defined before it")
                return expand(a) + expand(b)

            pieces = []
            for i in ids:
                i = int(i)
                if not 0 <= i < 256 + len(merges):
                    raise ValueError(f"id {i} is outside the vocabulary")
                pieces.append(expand(i))
            return b"".join(pieces).decode("utf-8", errors="replace")
    """
        },
        clauses=("undefined-merge",),
    ),
]

# One mistake per clause that the mistakes above do not break alone: mostly a correct function with one slip.
MISTAKES += [
    Variant(
        "word_frequencies",
        "eow defaults to '_', the lecture's symbol",
        {"word_frequencies": slip(WORD_FREQUENCIES, ('eow: str = "</w>"', 'eow: str = "_"'))},
        clauses=("eow-default",),
    ),
    Variant(
        "word_frequencies",
        "each word type counted once",
        {"word_frequencies": slip(WORD_FREQUENCIES, ("freqs[key] = freqs.get(key, 0) + 1", "freqs[key] = 1"))},
        clauses=("counts",),
    ),
    Variant(
        "word_frequencies",
        "a word that already ends with eow gets no second one",
        {"word_frequencies": slip(WORD_FREQUENCIES, ("key = (*word, eow)", "key = (*word.removesuffix(eow), eow)"))},
        clauses=("eow-inside",),
    ),
    Variant(
        "merge_pair",
        "only the first occurrence in each word merged",
        {
            "merge_pair": slip(
                MERGE_PAIR,
                (
                    "symbols[i] == first and symbols[i + 1] == second:",
                    "symbols[i] == first and symbols[i + 1] == second and first + second not in out:",
                ),
            )
        },
        clauses=("every",),
    ),
    Variant(
        "merge_pair",
        "the word types returned sorted",
        {"merge_pair": slip(MERGE_PAIR, ("    return result\n", "    return dict(sorted(result.items()))\n"))},
        clauses=("order",),
    ),
    Variant(
        "train_bpe",
        "each pair counted once per word, however often it occurs there",
        {
            "train_bpe": re.sub(
                r"for pair in (zip\(\w+, \w+\[1:\]\)):", r"for pair in dict.fromkeys(\1):", _incremental()
            )
        },
        clauses=("overlap",),
    ),
    Variant(
        "segment",
        "unseen characters become '<unk>'",
        {
            "bpe_segment": slip(
                SEGMENT,
                (
                    "symbols = list(word) + [eow]",
                    'symbols = [c if any(c in a + b for a, b in merges) else "<unk>" for c in word] + [eow]',
                ),
            )
        },
        clauses=("unseen",),
    ),
    Variant(
        "tokenizer",
        "eow defaults to '_', the lecture's symbol",
        {"BPETokenizer": slip(_tokenizer(), ('eow="</w>", alphabet=None', 'eow="_", alphabet=None'))},
        clauses=("eow-default",),
    ),
    Variant(
        "tokenizer",
        "without an alphabet, a one-character eow is counted among the base symbols",
        {
            "BPETokenizer": slip(
                _tokenizer(
                    alphabet_expr="set(alphabet) if alphabet is not None else {s for m in self.merges for s in m if len(s) == 1}"
                ),
                ("self.vocab[eow] = len(self.vocab)", "self.vocab.setdefault(eow, len(self.vocab))"),
            )
        },
        hints=("ids not in vocabulary order",),
        clauses=("alphabet-default",),
    ),
    Variant(
        "tokenizer",
        "without an alphabet, every symbol of the merges is a base symbol",
        {
            "BPETokenizer": _tokenizer(
                alphabet_expr="set(alphabet) if alphabet is not None else {s for m in self.merges for s in m if s != eow}"
            )
        },
        hints=("ids not in vocabulary order",),
        clauses=("alphabet-default",),
    ),
    Variant(
        "tokenizer",
        "an alphabet given as a string taken as one symbol",
        {
            "BPETokenizer": slip(
                _tokenizer(),
                ("base = set(alphabet) if", "base = ({alphabet} if isinstance(alphabet, str) else set(alphabet)) if"),
            )
        },
        clauses=("alphabet-iterable",),
    ),
    Variant(
        "tokenizer",
        "encode splits on single spaces",
        {"BPETokenizer": slip(_tokenizer(), ("for word in text.split():", 'for word in text.split(" "):'))},
        clauses=("encode",),
    ),
    Variant(
        "efficiency",
        "learns from the first 100 000 characters only, a sample for speed",
        {
            "train_bpe": _incremental(
                check="""
                    if num_merges < 0:
                        raise ValueError(f"num_merges must be >= 0, got {num_merges}")
                    text = text[:100_000]
                """
            )
        },
        hidden_only="only the hidden 1 MB corpus is long enough for a 100 kB sample to learn other merges",
        clauses=("real-merges",),
    ),
    Variant(
        "byte_bpe",
        "code points instead of UTF-8 bytes",
        {"train_byte_bpe": slip(BYTE_TRAIN, ('ids = list(text.encode("utf-8"))', "ids = [ord(c) for c in text]"))},
        clauses=("train",),
    ),
    Variant(
        "byte_bpe",
        "decode checks each id is a Python int, so refuses a LongTensor",
        {
            "byte_bpe_decode": slip(
                BYTE_DECODE,
                ("    if isinstance(ids, torch.Tensor):\n        ids = ids.tolist()\n", ""),
                (
                    "i = int(i)\n        if not 0 <= i < len(table):",
                    "if not isinstance(i, int) or not 0 <= i < len(table):",
                ),
            )
        },
        clauses=("decode-forms",),
    ),
]


ALTERNATIVES = [
    Variant(
        "word_frequencies",
        "a Counter over symbol tuples",
        {
            "word_frequencies": """
        def word_frequencies(text, eow="</w>"):
            if not isinstance(eow, str) or len(eow) == 0:
                raise ValueError(f"eow must be a non-empty string, got {eow!r}")
            return collections.Counter(tuple(word) + (eow,) for word in text.split())
    """
        },
    ),
    Variant(
        "count_pairs",
        "a Counter and index arithmetic",
        {
            "count_pairs": """
        def count_pairs(word_freqs):
            counts = collections.Counter()
            for symbols, n in word_freqs.items():
                for i in range(len(symbols) - 1):
                    counts[symbols[i], symbols[i + 1]] += n
            return dict(counts)
    """
        },
    ),
    Variant(
        "merge_pair",
        "a regular expression on space-joined symbols",
        {
            "merge_pair": """
        import re

        def merge_pair(word_freqs, pair):
            if len(pair) != 2:
                raise ValueError(f"pair must hold two symbols, got {pair!r}")
            pattern = re.compile(r"(?<!\\S)" + re.escape(pair[0] + " " + pair[1]) + r"(?!\\S)")
            result = {}
            for symbols, n in word_freqs.items():
                key = tuple(pattern.sub(lambda _: pair[0] + pair[1], " ".join(symbols)).split(" "))
                result[key] = result.get(key, 0) + n
            return result
    """
        },
    ),
    Variant("train_bpe", "incremental, a scan for the maximum and an index of words", {"train_bpe": _incremental()}),
    Variant(
        "segment",
        "lowest-ranked pair first, as GPT-2 does",
        {
            "bpe_segment": """
        def bpe_segment(word, merges, eow="</w>"):
            if len(word) == 0 or len(word.split()) != 1 or word.split()[0] != word:
                raise ValueError(f"expected one word, got {word!r}")
            rank = {}
            for r, (a, b) in enumerate(merges):
                rank.setdefault((a, b), r)
            symbols = [*word, eow]
            while len(symbols) > 1:
                pairs = set(zip(symbols, symbols[1:]))
                best = min(pairs, key=lambda p: rank.get(p, float("inf")))
                if best not in rank:
                    break
                out, i = [], 0
                while i < len(symbols):
                    if symbols[i : i + 2] == list(best):
                        out.append(best[0] + best[1])
                        i += 2
                    else:
                        out.append(symbols[i])
                        i += 1
                symbols = out
            return symbols
    """
        },
    ),
    Variant(
        "tokenizer",
        "vocabulary from dict.fromkeys, decode with removesuffix",
        {
            "BPETokenizer": """
        class BPETokenizer:
            def __init__(self, merges, eow="</w>", alphabet=None):
                if not isinstance(eow, str) or not eow:
                    raise ValueError("eow must be a non-empty string")
                self.merges = [(a, b) for a, b in merges]
                self.eow = eow
                if alphabet is None:
                    alphabet = [s for pair in self.merges for s in pair if len(s) == 1 and s != eow]
                tokens = dict.fromkeys([*sorted(set(alphabet)), eow, *(a + b for a, b in self.merges)])
                self.vocab = {token: i for i, token in enumerate(tokens)}
                self.tokens = list(tokens)

            @classmethod
            def train(cls, text, num_merges, eow="</w>"):
                return cls(train_bpe(text, num_merges, eow), eow, alphabet="".join(text.split()))

            def encode(self, text):
                ids = []
                for word in text.split():
                    if self.eow in word:
                        raise ValueError(f"{word!r} holds the end-of-word symbol {self.eow!r}")
                    try:
                        ids += [self.vocab[t] for t in bpe_segment(word, self.merges, self.eow)]
                    except KeyError as err:
                        raise ValueError(f"{err.args[0]!r} is not in the vocabulary") from None
                return ids

            def decode(self, ids):
                pieces, words = [], []
                for i in torch.as_tensor(ids, dtype=torch.long).tolist():
                    if not 0 <= i < len(self.tokens):
                        raise ValueError(f"id {i} is not in the vocabulary")
                    token = self.tokens[i]
                    pieces.append(token.removesuffix(self.eow))
                    if token.endswith(self.eow):
                        words.append("".join(pieces))
                        pieces = []
                if pieces:
                    words.append("".join(pieces))
                return " ".join(words)
    """
        },
    ),
    Variant(
        "efficiency",
        "incremental, symbols rewritten in place, a lazy heap",
        {
            "train_bpe": """
        def train_bpe(text, num_merges, eow="</w>"):
            if num_merges < 0:
                raise ValueError("num_merges must be >= 0")
            table = word_frequencies(text, eow)
            words = [list(w) for w in table]
            freqs = list(table.values())
            counts, where = collections.Counter(), collections.defaultdict(set)
            for i, w in enumerate(words):
                for pair in zip(w, w[1:]):
                    counts[pair] += freqs[i]
                    where[pair].add(i)
            heap = [(-c, pair) for pair, c in counts.items()]
            heapq.heapify(heap)

            def first(pair):
                i = min(where[pair])
                w = words[i]
                return i, next(j for j in range(len(w) - 1) if w[j] == pair[0] and w[j + 1] == pair[1])

            merges = []
            while len(merges) < num_merges:
                while heap and counts[heap[0][1]] != -heap[0][0]:
                    heapq.heappop(heap)  # an entry whose count is out of date
                if not heap:
                    break
                top, tied = heap[0][0], set()
                while heap and heap[0][0] == top:
                    pair = heapq.heappop(heap)[1]
                    if counts[pair] == -top:
                        tied.add(pair)
                best = min(tied, key=first)
                for pair in tied - {best}:
                    heapq.heappush(heap, (top, pair))
                merges.append(best)
                a, b = best
                touched = set()
                for i in where.pop(best):
                    w, n = words[i], freqs[i]
                    for pair in zip(w, w[1:]):
                        counts[pair] -= n
                        where[pair].discard(i)
                        touched.add(pair)
                    j = 0
                    while j < len(w) - 1:
                        if w[j] == a and w[j + 1] == b:
                            w[j : j + 2] = [a + b]
                        j += 1
                    for pair in zip(w, w[1:]):
                        counts[pair] += n
                        where[pair].add(i)
                        touched.add(pair)
                for pair in touched:
                    if counts[pair] > 0:
                        heapq.heappush(heap, (-counts[pair], pair))
                    else:
                        del counts[pair]
                        where.pop(pair, None)
            return merges
    """
        },
    ),
    Variant(
        "byte_bpe",
        "most_common, merges replayed in order, a bytes table",
        {
            "train_byte_bpe": """
            def train_byte_bpe(text, vocab_size):
                if vocab_size < 256:
                    raise ValueError(f"vocab_size must be at least 256, got {vocab_size}")
                ids = list(text.encode("utf-8"))
                merges = []
                while len(merges) < vocab_size - 256 and len(ids) >= 2:
                    (best, _), = collections.Counter(zip(ids, ids[1:])).most_common(1)
                    merges.append(best)
                    ids = _replace(ids, best, 255 + len(merges))
                return merges


            def _replace(ids, pair, new_id):
                out, i = [], 0
                while i < len(ids):
                    if ids[i : i + 2] == list(pair):
                        out.append(new_id)
                        i += 2
                    else:
                        out.append(ids[i])
                        i += 1
                return out
        """,
            "byte_bpe_encode": """
            def byte_bpe_encode(text, merges):
                _check(merges)
                ids = list(text.encode("utf-8"))
                for r, pair in enumerate(merges):
                    ids = _replace(ids, tuple(pair), 256 + r)
                return ids


            def _check(merges):
                for r, pair in enumerate(merges):
                    if max(pair) >= 256 + r or min(pair) < 0:
                        raise ValueError(f"merge {r} {pair} uses an id not defined before it")
        """,
            "byte_bpe_decode": """
            def byte_bpe_decode(ids, merges):
                _check(merges)
                table = [bytes([b]) for b in range(256)]
                for a, b in merges:
                    table.append(table[a] + table[b])
                ids = torch.as_tensor(ids).tolist() if isinstance(ids, torch.Tensor) else list(ids)
                if any(not 0 <= i < len(table) for i in ids):
                    raise ValueError(f"an id is outside 0..{len(table) - 1}")
                return b"".join(table[i] for i in ids).decode("utf-8", "replace")
        """,
        },
    ),
]
