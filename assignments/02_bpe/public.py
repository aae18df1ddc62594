"""Public tests of stage 02_bpe: students run these in the notebook with check().

Small inputs, most of them the lecture's worked example, each aimed at one rule of the
contract. Everything is compared exactly (merge lists, segmentations, ids and strings);
the efficiency test's budget is a ratio of CPU times, train_bpe's to the calibration
workload's, measured in the same run (see its section).
"""

import contextlib
import random

import torch

from autograder.kit import Hint, Suite, catch, equal, raises, satisfies

suite = Suite(public=True)

LECTURE_TEXT = "low " * 5 + "lowest " * 2 + "newer " * 6 + "wider " * 3 + "new " * 2
LECTURE_WORDS = {
    ("l", "o", "w", "_"): 5,
    ("l", "o", "w", "e", "s", "t", "_"): 2,
    ("n", "e", "w", "e", "r", "_"): 6,
    ("w", "i", "d", "e", "r", "_"): 3,
    ("n", "e", "w", "_"): 2,
}
LECTURE_MERGES = [
    ("e", "r"),
    ("er", "_"),
    ("n", "e"),
    ("ne", "w"),
    ("l", "o"),
    ("lo", "w"),
    ("new", "er_"),
    ("low", "_"),
]


# While a test of one question runs, the other graded functions it may call answer
# the test's own inputs from fixed tables below (the answers are the ones this
# notebook already shows), so that a mistake elsewhere does not fail this question.
# Any other input goes to your own function as usual.


def _table(text):
    """``"l o w _=5, n e w _=2"`` as ``{("l", "o", "w", "_"): 5, ("n", "e", "w", "_"): 2}``."""
    pairs = (item.rsplit("=", 1) for item in text.split(", ") if item)
    return {tuple(symbols.split(" ")): int(n) for symbols, n in pairs}


# The worked example step by step: the words before each merge, and their pair counts
# (the cell of section 5 prints the same steps).
LECTURE_STEPS = [
    (
        "l o w _=5, l o w e s t _=2, n e w e r _=6, w i d e r _=3, n e w _=2",
        "l o=7, o w=7, w _=7, w e=8, e s=2, s t=2, t _=2, n e=8, e w=8, e r=9, r _=9, w i=3, i d=3, d e=3",
    ),
    (
        "l o w _=5, l o w e s t _=2, n e w er _=6, w i d er _=3, n e w _=2",
        "l o=7, o w=7, w _=7, w e=2, e s=2, s t=2, t _=2, n e=8, e w=8, w er=6, er _=9, w i=3, i d=3, d er=3",
    ),
    (
        "l o w _=5, l o w e s t _=2, n e w er_=6, w i d er_=3, n e w _=2",
        "l o=7, o w=7, w _=7, w e=2, e s=2, s t=2, t _=2, n e=8, e w=8, w er_=6, w i=3, i d=3, d er_=3",
    ),
    (
        "l o w _=5, l o w e s t _=2, ne w er_=6, w i d er_=3, ne w _=2",
        "l o=7, o w=7, w _=7, w e=2, e s=2, s t=2, t _=2, ne w=8, w er_=6, w i=3, i d=3, d er_=3",
    ),
    (
        "l o w _=5, l o w e s t _=2, new er_=6, w i d er_=3, new _=2",
        "l o=7, o w=7, w _=5, w e=2, e s=2, s t=2, t _=2, new er_=6, w i=3, i d=3, d er_=3, new _=2",
    ),
    (
        "lo w _=5, lo w e s t _=2, new er_=6, w i d er_=3, new _=2",
        "lo w=7, w _=5, w e=2, e s=2, s t=2, t _=2, new er_=6, w i=3, i d=3, d er_=3, new _=2",
    ),
    (
        "low _=5, low e s t _=2, new er_=6, w i d er_=3, new _=2",
        "low _=5, low e=2, e s=2, s t=2, t _=2, new er_=6, w i=3, i d=3, d er_=3, new _=2",
    ),
    (
        "low _=5, low e s t _=2, newer_=6, w i d er_=3, new _=2",
        "low _=5, low e=2, e s=2, s t=2, t _=2, w i=3, i d=3, d er_=3, new _=2",
    ),
    (
        "low_=5, low e s t _=2, newer_=6, w i d er_=3, new _=2",
        "low e=2, e s=2, s t=2, t _=2, w i=3, i d=3, d er_=3, new _=2",
    ),
]
SMALL_STEPS = [
    [("a b _=2", "a b=2, b _=2"), ("ab _=2", "ab _=2"), ("ab_=2", "")],
    [("c d _=1, a b _=1", "c d=1, d _=1, a b=1, b _=1"), ("cd _=1, a b _=1", "cd _=1, a b=1, b _=1")],
    [
        ("a b _=1, c c _=1, b _=1", "a b=1, b _=2, c c=1, c _=1"),
        ("a b_=1, c c _=1, b_=1", "a b_=1, c c=1, c _=1"),
        ("ab_=1, c c _=1, b_=1", "c c=1, c _=1"),
        ("ab_=1, cc _=1, b_=1", "cc _=1"),
    ],
    [("a a a a _=1, b c _=2", "a a=3, a _=1, b c=2, c _=2"), ("aa aa _=1, b c _=2", "aa aa=1, aa _=1, b c=2, c _=2")],
    [("c </w>=2, d </w>=1", "c </w>=2, d </w>=1"), ("c</w>=2, d </w>=1", "d </w>=1")],
]
SMALL_MERGES = [
    [("a", "b"), ("ab", "_")],
    [("c", "d")],
    [("b", "_"), ("a", "b_"), ("c", "c")],
    [("a", "a")],
    [("c", "</w>")],
]

_KNOWN_WORDS = {
    (LECTURE_TEXT, "_"): LECTURE_WORDS,
    ("ab ab", "_"): _table(SMALL_STEPS[0][0][0]),
    ("cd ab", "_"): _table(SMALL_STEPS[1][0][0]),
    ("ab cc b", "_"): _table(SMALL_STEPS[2][0][0]),
    ("aaaa bc bc", "_"): _table(SMALL_STEPS[3][0][0]),
    ("c c d", "</w>"): _table(SMALL_STEPS[4][0][0]),
    ("c d", "</w>"): {("c", "</w>"): 1, ("d", "</w>"): 1},
    ("c d", ""): "ValueError",  # an empty eow is refused
}
_KNOWN_COUNTS = {}
_KNOWN_MERGED = {}
for _steps, _merges in [(LECTURE_STEPS, LECTURE_MERGES), *zip(SMALL_STEPS, SMALL_MERGES)]:
    for _k, (_words, _counts) in enumerate(_steps):
        _KNOWN_COUNTS[frozenset(_table(_words).items())] = _table(_counts)
        if _k < len(_merges):
            _KNOWN_MERGED[frozenset(_table(_words).items()), _merges[_k]] = _table(_steps[_k + 1][0])
_KNOWN_MERGES = {(LECTURE_TEXT, 8, "_"): LECTURE_MERGES}
_KNOWN_SEGMENTS = {
    ("lower", "_"): ["low", "er_"],
    ("newest", "_"): ["new", "e", "s", "t", "_"],
    ("low", "_"): ["low_"],
    ("wider", "_"): ["w", "i", "d", "er_"],
    ("ow#", "_"): ["o", "w", "#", "_"],
    ("low_er", "_"): ["low_", "er_"],
}


_REFUSED_WORDS = {key: "eow must be a non-empty string" for key, words in _KNOWN_WORDS.items() if words == "ValueError"}
_LECTURE = {tuple(LECTURE_MERGES): "the lecture's merges"}
_DICTS = {dict: "dict"}


def _dict_kind(value):
    """The word "dict" when ``value`` is a dict (or of a subclass of dict), else None: isinstance, by table lookups."""
    kinds = [_DICTS.get(cls) for cls in type(value).__mro__]
    return next((kind for kind in kinds if kind is not None), None)


def _lecture_merges(merges):
    """Not None when ``merges`` lists the lecture's merges (pairs as tuples or lists)."""
    pairs = tuple(tuple(m) for m in merges)
    try:
        return _LECTURE.get(pairs)
    except TypeError:  # symbols that cannot be hashed: not the lecture's merges
        return None


def _known_word_frequencies(own):
    def word_frequencies(text, eow="</w>"):
        refused = _REFUSED_WORDS.get((text, eow))
        if refused is not None:
            raise ValueError(refused)
        known = _KNOWN_WORDS.get((text, eow))
        if known is not None:
            return dict(known)
        return own(text, eow)

    return word_frequencies


def _known_count_pairs(own):
    def count_pairs(word_freqs):
        key = None if _dict_kind(word_freqs) is None else frozenset(word_freqs.items())
        known = _KNOWN_COUNTS.get(key)
        if known is not None:
            return dict(known)
        return own(word_freqs)

    return count_pairs


def _known_merge_pair(own):
    def merge_pair(word_freqs, pair):
        key = None if _dict_kind(word_freqs) is None else (frozenset(word_freqs.items()), tuple(pair))
        known = _KNOWN_MERGED.get(key)
        if known is not None:
            return dict(known)
        return own(word_freqs, pair)

    return merge_pair


def _known_train_bpe(own):
    def train_bpe(text, num_merges, eow="</w>"):
        known = _KNOWN_MERGES.get((text, num_merges, eow))
        if known is not None:
            return list(known)
        return own(text, num_merges, eow)

    return train_bpe


def _known_bpe_segment(own):
    def bpe_segment(word, merges, eow="</w>"):
        known = _KNOWN_SEGMENTS.get((word, eow))
        if known is not None and _lecture_merges(merges) is not None:
            return list(known)
        return own(word, merges, eow)

    return bpe_segment


def _missing(name):
    def absent(*args, **kwargs):
        raise NameError(f"`{name}` is not defined: run (or restore) the cell that defines it")

    return absent


@contextlib.contextmanager
def _known_answers(ns, *names):
    """Let the named functions answer this notebook's own examples from the tables above."""
    scope = ns._names
    makers = {
        "word_frequencies": _known_word_frequencies,
        "count_pairs": _known_count_pairs,
        "merge_pair": _known_merge_pair,
        "train_bpe": _known_train_bpe,
        "bpe_segment": _known_bpe_segment,
    }
    saved = {name: scope.get(name) for name in names}
    for name in names:
        own = scope.get(name)
        scope[name] = makers[name](_missing(name) if own is None else own)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                scope.pop(name, None)
            else:
                scope[name] = value


def _train_bpe(ns, *args, **kwargs):
    """The student's ``train_bpe``, its helpers answering this notebook's examples from the tables above."""
    with _known_answers(ns, "word_frequencies", "count_pairs", "merge_pair"):
        return ns.train_bpe(*args, **kwargs)


def _items(value):
    """A dict's items in order (other values are returned as they are, and fail the check)."""
    return value if _dict_kind(value) is None else list(value.items())


# ---------------------------------------------------------------- word_frequencies


def _sorted_types(got, exp):
    try:
        return isinstance(got, list) and sorted(got) == sorted(exp) and got != exp
    except TypeError:  # items that cannot be ordered: not this mistake
        return False


@suite.case(
    "word_frequencies",
    "the lecture corpus with eow='_': counts, end-of-word symbol, order of first appearance",
    points=1,
    check=equal(
        [
            Hint(
                _sorted_types,
                "the counts are right but the order is not: keep word types in the order they first appear in the text",
                mistake="word types sorted",
            ),
            Hint(
                lambda got, exp: (
                    isinstance(got, list) and bool(got) and isinstance(got[0][0], tuple) and got[0][0][-1] != "_"
                ),
                "every word ends with the end-of-word symbol eow, as its own last symbol",
                mistake="no end-of-word symbol",
            ),
        ]
    ),
    expected=list(LECTURE_WORDS.items()),
)
def _(ns):
    return _items(ns.word_frequencies(LECTURE_TEXT, eow="_"))


@suite.case(
    "word_frequencies",
    "any whitespace separates words; the default eow is '</w>'",
    points=1,
    check=equal(
        [
            Hint(
                lambda got, exp: isinstance(got, list) and len(got) != 3,
                "split the text with str.split() (no argument): runs of spaces, tabs and newlines all separate words",
                mistake="split on single spaces",
            )
        ]
    ),
    expected=[(("b", "</w>"), 2), (("a", "</w>"), 1), (("c", "</w>"), 1)],
)
def _(ns):
    return _items(ns.word_frequencies("b a\n\tb  c"))


@suite.case("word_frequencies", "eow='' is refused with a ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.word_frequencies, "to be", eow="")


@suite.case(
    "word_frequencies",
    "eow='a', a letter of the words: every word still ends with an 'a' symbol of its own",
    points=0.5,
    check=equal(),
    expected=[(("b", "a", "n", "a", "n", "a", "a"), 1), (("n", "a", "b", "a"), 1)],
)
def _(ns):
    return _items(ns.word_frequencies("banana nab", eow="a"))


# ---------------------------------------------------------------- count_pairs


@suite.case(
    "count_pairs",
    "a a a holds (a, a) twice; each pair is weighted by its word's count",
    points=1,
    check=equal(
        [
            Hint(
                lambda got, exp: isinstance(got, dict) and got.get(("a", "a")) == 3 and ("b", "a") in got,
                "overlapping pairs all count: a a a holds (a, a) at positions 0-1 and 1-2",
                mistake="overlapping pairs counted once",
            ),
            Hint(
                lambda got, exp: isinstance(got, dict) and got.get(("a", "a")) == 2,
                "weight each pair by the count of its word",
                mistake="word counts ignored",
            ),
        ]
    ),
    expected={("a", "a"): 6, ("a", "_"): 4, ("b", "a"): 1},
)
def _(ns):
    result = ns.count_pairs({("a", "a", "a", "_"): 3, ("b", "a", "_"): 1})
    return result if _dict_kind(result) is None else dict(result)


@suite.case(
    "count_pairs",
    "the lecture corpus: (e, r) and (r, _) lead with 9",
    points=1,
    check=equal(),
    expected={
        ("l", "o"): 7,
        ("o", "w"): 7,
        ("w", "_"): 7,
        ("w", "e"): 8,
        ("e", "s"): 2,
        ("s", "t"): 2,
        ("t", "_"): 2,
        ("n", "e"): 8,
        ("e", "w"): 8,
        ("e", "r"): 9,
        ("r", "_"): 9,
        ("w", "i"): 3,
        ("i", "d"): 3,
        ("d", "e"): 3,
    },
)
def _(ns):
    result = ns.count_pairs(dict(LECTURE_WORDS))
    return result if _dict_kind(result) is None else dict(result)


# ---------------------------------------------------------------- merge_pair


@suite.case(
    "merge_pair",
    "(a, a) in a a a gives aa a: left to right, no overlap",
    points=1,
    check=equal(
        [
            Hint(
                lambda got, exp: isinstance(got, dict) and ("aa", "aa", "_") in got,
                "an occurrence that overlaps one already merged is not merged again: after aa only a is left",
                mistake="overlapping occurrences merged twice",
            ),
            Hint(
                lambda got, exp: isinstance(got, dict) and ("a", "aa", "_") in got,
                "merge from left to right",
                mistake="merged right to left",
            ),
        ]
    ),
    expected={("aa", "a", "_"): 2, ("b", "a", "_"): 1},
)
def _(ns):
    result = ns.merge_pair({("a", "a", "a", "_"): 2, ("b", "a", "_"): 1}, ("a", "a"))
    return result if _dict_kind(result) is None else dict(result)


@suite.case(
    "merge_pair",
    "(a, b) in a b a b _ gives ab ab _: every occurrence is merged",
    points=0.5,
    check=equal(),
    expected=[(("ab", "ab", "_"), 3)],
)
def _(ns):
    return _items(ns.merge_pair({("a", "b", "a", "b", "_"): 3}, ("a", "b")))


@suite.case(
    "merge_pair",
    "the lecture corpus after merging (e, r); the input is left unchanged",
    points=1,
    check=equal(
        [
            Hint(
                lambda got, exp: isinstance(got, list) and got[1] != exp[1],
                "return a new dict: the dict passed in must not change",
                mistake="input dict changed",
            )
        ]
    ),
    expected=[
        [
            (("l", "o", "w", "_"), 5),
            (("l", "o", "w", "e", "s", "t", "_"), 2),
            (("n", "e", "w", "er", "_"), 6),
            (("w", "i", "d", "er", "_"), 3),
            (("n", "e", "w", "_"), 2),
        ],
        list(LECTURE_WORDS.items()),
    ],
)
def _(ns):
    words = dict(LECTURE_WORDS)
    result = ns.merge_pair(words, ("e", "r"))
    return [_items(result), list(words.items())]


@suite.case(
    "merge_pair",
    "(b, c): symbols are compared whole, and words that become equal add their counts",
    points=1,
    check=equal(),
    expected={("ab", "c", "_"): 1, ("a", "bc", "_"): 2, ("bc", "_"): 7},
)
def _(ns):
    result = ns.merge_pair({("ab", "c", "_"): 1, ("a", "bc", "_"): 2, ("b", "c", "_"): 3, ("bc", "_"): 4}, ("b", "c"))
    return result if _dict_kind(result) is None else dict(result)


@suite.case("merge_pair", "a pair of three symbols is refused with a ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.merge_pair, {("x", "y", "z", "_"): 1}, ("x", "y", "z"))


# ---------------------------------------------------------------- train_bpe


def _lexicographic(got, exp):
    """Ties to the alphabetically larger pair ((r, _) at the first merge) or the smaller ((e, w) at the third)."""
    try:
        pairs = [tuple(p) for p in got]
    except TypeError:  # not a list of pairs: not this mistake
        return False
    larger = len(pairs) > 0 and pairs[0] == ("r", "_")
    smaller = len(pairs) > 2 and pairs[:2] == [tuple(p) for p in exp[:2]] and pairs[2] == ("e", "w")
    return larger or smaller


@suite.case(
    "train_bpe",
    "the lecture's worked example: 8 merges with eow='_'",
    points=2,
    check=equal(
        [
            Hint(
                _lexicographic,
                "the first merge already meets a tie, (e, r) and (r, _) at 9, and merge 3 another, (n, e) and (e, w) at 8: a tie goes to the pair met first when the words are scanned in order of first appearance, each left to right (not the alphabetically larger or smaller pair)",
                mistake="lexicographic tie-breaking",
            ),
            Hint(
                lambda got, exp: isinstance(got, list) and any("</w>" in str(m) for m in got),
                "pass eow on: the merges should hold '_', not the default '</w>'",
                mistake="eow not passed on",
            ),
        ]
    ),
    expected=LECTURE_MERGES,
)
def _(ns):
    return _train_bpe(ns, LECTURE_TEXT, 8, eow="_")


@suite.case(
    "train_bpe",
    "stops early when every word is a single symbol",
    points=1,
    check=equal(),
    expected=[("a", "b"), ("ab", "_")],
)
def _(ns):
    return _train_bpe(ns, "ab ab", 10, eow="_")


@suite.case(
    "train_bpe",
    "the merges are (left, right) tuples of two strings",
    points=0.5,
    check=equal(),
    expected=[["tuple", "str", "str"], ["tuple", "str", "str"]],
    builds_on=("stops early when every word is a single symbol",),
    guard=True,  # tuples of empty strings pass too: it counts only with a test of the merges
)
def _(ns):
    merges = _train_bpe(ns, "ab ab", 2, eow="_")
    return [[type(m).__name__, *(type(s).__name__ for s in m)] for m in merges]


@suite.case(
    "train_bpe",
    "aaaa bc bc, 1 merge: the three overlapping (a, a) beat the two (b, c)",
    points=0.5,
    check=equal(),
    expected=[("a", "a")],
)
def _(ns):
    return _train_bpe(ns, "aaaa bc bc", 1, eow="_")


@suite.case(
    "train_bpe",
    "c c d, 1 merge with the default end-of-word symbol '</w>'",
    points=0.5,
    check=equal(),
    expected=[("c", "</w>")],
)
def _(ns):
    return _train_bpe(ns, "c c d", 1)


@suite.case(
    "train_bpe",
    "a tie between (c, d) and (a, b) goes to the pair met first",
    points=1,
    check=equal(
        [
            Hint(
                lambda got, exp: isinstance(got, list) and bool(got) and tuple(got[0]) != ("c", "d"),
                "every pair occurs once here, so all are tied: take the first pair of the first word",
                mistake="lexicographic tie-breaking",
            )
        ]
    ),
    expected=[("c", "d")],
)
def _(ns):
    return _train_bpe(ns, "cd ab", 1, eow="_")


def _dict_order_tie(got, exp):
    """The right merges, but the pair made by the first merge, (a, b_), after the older (c, c) it ties with."""
    try:
        pairs = [tuple(p) for p in got]
    except TypeError:  # not a list of pairs: not this mistake
        return False
    return pairs == [exp[0], exp[2], exp[1]]


@suite.case(
    "train_bpe",
    "ab cc b, 3 merges: after a merge, a tie still goes to the pair met first in the words",
    points=1,
    check=equal(
        [
            Hint(
                _dict_order_tie,
                "the pair a merge creates goes to the end of a dict of counts, so the dict's order no longer says "
                "which pair is met first: among the tied pairs take the one whose first occurrence (word, then "
                "position in the word) comes first",
                mistake="ties by dict order",
            )
        ]
    ),
    expected=[("b", "_"), ("a", "b_"), ("c", "c")],
    builds_on=("a tie between (c, d) and (a, b) goes to the pair met first",),
)
def _(ns):
    return _train_bpe(ns, "ab cc b", 3, eow="_")


def _refused(got):
    wrong = [f"{what}: {raised or 'nothing was raised'}" for what, raised in got if raised != "ValueError"]
    return None if not wrong else "expected ValueError; got " + "; ".join(wrong)


@suite.case("train_bpe", "num_merges=-1 or eow='' is refused with a ValueError", points=1, check=satisfies(_refused))
def _(ns):
    with _known_answers(ns, "word_frequencies", "count_pairs", "merge_pair"):
        return [
            ("train_bpe('c d', -1)", catch(ns.train_bpe, "c d", -1)["raised"]),
            ("train_bpe('c d', 2, eow='')", catch(ns.train_bpe, "c d", 2, eow="")["raised"]),
        ]


# ---------------------------------------------------------------- segment


@suite.case(
    "segment",
    "bpe_segment('lower', lecture merges, eow='_') == ['low', 'er_']",
    points=1,
    check=equal(
        [
            Hint(
                lambda got, exp: isinstance(got, list) and bool(got) and "_" not in str(got[-1]),
                "a word starts as its characters plus eow; the last token must end with eow",
                mistake="end-of-word symbol missing from the word",
            )
        ]
    ),
    expected=["low", "er_"],
)
def _(ns):
    return ns.bpe_segment("lower", LECTURE_MERGES, eow="_")


@suite.case(
    "segment",
    "newer, slow, lowest and an unseen character",
    points=1,
    check=equal(),
    expected=[["newer_"], ["s", "low_"], ["low", "e", "s", "t", "_"], ["n", "o", "w", "z", "_"]],
)
def _(ns):
    return [ns.bpe_segment(word, LECTURE_MERGES, eow="_") for word in ("newer", "slow", "lowest", "nowz")]


@suite.case(
    "segment",
    "lowlow: each merge joins every occurrence of its pair",
    points=1,
    check=equal(),
    expected=["low", "low_"],
)
def _(ns):
    return ns.bpe_segment("lowlow", LECTURE_MERGES, eow="_")


@suite.case(
    "segment",
    "nener: merges are replayed in the order learned, not matched as the longest known token",
    points=1,
    check=equal(),
    expected=["ne", "n", "er_"],
)
def _(ns):
    return ns.bpe_segment("nener", LECTURE_MERGES, eow="_")


@suite.case("segment", "'' and 'low er' are refused with a ValueError", points=1, check=satisfies(_refused))
def _(ns):
    return [
        (f"bpe_segment({word!r})", catch(ns.bpe_segment, word, LECTURE_MERGES, eow="_")["raised"])
        for word in ("", "low er")
    ]


# ---------------------------------------------------------------- tokenizer


def _ids_out_of_order(got, exp):
    try:
        return (
            isinstance(got, list)
            and sorted(got) != sorted(exp)
            and sorted(k for k, _ in got) == sorted(k for k, _ in exp)
        )
    except (TypeError, ValueError):  # not a list of (token, id) pairs: not this mistake
        return False


@suite.case(
    "tokenizer",
    "vocab of the lecture merges: base symbols sorted, then eow, then merged tokens in merge order",
    points=1,
    check=equal(
        [
            Hint(
                _ids_out_of_order,
                "the tokens are right, their ids are not: ids go to the sorted base symbols, then eow, then each merge's token",
                mistake="ids not in vocabulary order",
            )
        ]
    ),
    expected=[
        ("e", 0),
        ("l", 1),
        ("n", 2),
        ("o", 3),
        ("r", 4),
        ("w", 5),
        ("_", 6),
        ("er", 7),
        ("er_", 8),
        ("ne", 9),
        ("new", 10),
        ("lo", 11),
        ("low", 12),
        ("newer_", 13),
        ("low_", 14),
    ],
    structure=True,
)
def _(ns):
    return _items(ns.BPETokenizer(LECTURE_MERGES, eow="_").vocab)


@suite.case(
    "tokenizer",
    "the default eow '</w>' takes the id after the base symbols",
    points=0.5,
    check=equal(),
    expected=[("a", 0), ("b", 1), ("</w>", 2), ("ab", 3), ("ab</w>", 4)],
    structure=True,
)
def _(ns):
    return _items(ns.BPETokenizer([("a", "b"), ("ab", "</w>")]).vocab)


@suite.case(
    "tokenizer",
    "decode(encode(s)) gives the words of s joined by single spaces",
    points=1,
    check=equal(
        [
            Hint(
                lambda got, exp: isinstance(got, str) and "_" in got,
                "the end-of-word symbol marks where a word ends; it is not part of the decoded text",
                mistake="end-of-word symbol left in the text",
            )
        ]
    ),
    expected="lower newest low wider",
)
def _(ns):
    with _known_answers(ns, "bpe_segment"):
        tok = ns.BPETokenizer(LECTURE_MERGES, eow="_", alphabet="delinorstw")
        return tok.decode(tok.encode("  lower newest\n\tlow   wider "))


@suite.case(
    "tokenizer",
    "BPETokenizer.train uses every character of the text's words (whitespace excluded) as the alphabet",
    points=1,
    check=equal(),
    expected=["d", "e", "i", "l", "n", "o", "r", "s", "t", "w", "_", "er", "er_"],
)
def _(ns):
    with _known_answers(ns, "train_bpe"):
        return list(ns.BPETokenizer.train(LECTURE_TEXT, 8, eow="_").vocab)[:13]


@suite.case(
    "tokenizer",
    "(a, bc) makes abc again after (ab, c): abc keeps its first id",
    points=1,
    check=equal(),
    expected=[("a", 0), ("b", 1), ("c", 2), ("_", 3), ("ab", 4), ("abc", 5), ("bc", 6)],
    builds_on=("vocab of the lecture merges: base symbols sorted, then eow, then merged tokens in merge order",),
    structure=True,
)
def _(ns):
    return _items(ns.BPETokenizer([("a", "b"), ("ab", "c"), ("b", "c"), ("a", "bc")], eow="_").vocab)


@suite.case(
    "tokenizer",
    "decode takes a LongTensor; ids after the last word end still form a last word",
    points=1,
    check=equal(),
    expected="low newer lower",
)
def _(ns):
    tok = ns.BPETokenizer(LECTURE_MERGES, eow="_")
    return tok.decode(torch.tensor([14, 13, 12, 7]))


def _names_hash(got):
    if got["raised"] != "ValueError" or "#" not in got["message"]:
        return f"expected a ValueError whose message names the character '#', got {got['raised'] or 'no exception'}: {got['message']!r}"
    return None


@suite.case(
    "tokenizer",
    "encode('low ow#') raises a ValueError naming '#', which is not in the vocabulary",
    points=1,
    check=satisfies(_names_hash),
)
def _(ns):
    with _known_answers(ns, "bpe_segment"):
        return catch(ns.BPETokenizer(LECTURE_MERGES, eow="_").encode, "low ow#")


@suite.case(
    "tokenizer",
    "encode('low_er') with eow='_' and decode of the ids 99 and -1 are refused with a ValueError",
    points=1,
    check=satisfies(_refused),
)
def _(ns):
    with _known_answers(ns, "bpe_segment"):
        tok = ns.BPETokenizer(LECTURE_MERGES, eow="_", alphabet="delinorstw")
        return [
            ("encode('low_er')", catch(tok.encode, "low_er")["raised"]),
            ("decode([99])", catch(tok.decode, [99])["raised"]),
            ("decode([-1])", catch(tok.decode, [-1])["raised"]),
        ]


# ---------------------------------------------------------------- efficiency

BUDGET = 20  # train_bpe may take at most this many times the calibration workload


def _made_up_text(n_chars, n_words, seed):
    """Sentences of made-up words whose frequencies follow Zipf's law (1 / rank)."""
    rng = random.Random(seed)
    starts = [
        "",
        "b",
        "c",
        "d",
        "f",
        "g",
        "h",
        "l",
        "m",
        "n",
        "p",
        "r",
        "s",
        "t",
        "v",
        "w",
        "br",
        "ch",
        "cl",
        "dr",
        "gr",
        "pl",
        "st",
        "th",
        "tr",
        "sh",
    ]
    middles = ["a", "e", "i", "o", "u", "ai", "ea", "ee", "oo", "ou", "y"]
    ends = ["", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ng", "ck", "rd"]
    lexicon: dict[str, None] = {}
    while len(lexicon) < n_words:
        syllables = rng.choice([1, 1, 2, 2, 2, 3])
        lexicon["".join(rng.choice(starts) + rng.choice(middles) + rng.choice(ends) for _ in range(syllables))] = None
    words = list(lexicon)
    running, total = [], 0.0
    for rank in range(n_words):
        total += 1.0 / (rank + 2.7)
        running.append(total)
    pieces, size = [], 0
    while size < n_chars:
        sentence = rng.choices(words, cum_weights=running, k=rng.randint(4, 16))
        sentence[0] = sentence[0].capitalize()
        piece = " ".join(sentence) + rng.choice(".....?!,") + rng.choice("  \n")
        pieces.append(piece)
        size += len(piece)
    return "".join(pieces)[:n_chars]


PUBLIC_CORPUS = _made_up_text(500_000, 4000, seed=7)


def _merge_list_problem(merges, count):
    if not isinstance(merges, (list, tuple)):
        return f"train_bpe must return a list of merges, got {type(merges).__name__}"
    if len(merges) != count:
        return f"expected {count} merges (the text has plenty of pairs left), got {len(merges)}"
    made: set[str] = set()
    pairs: set[tuple] = set()
    for i, merge in enumerate(merges):
        if not isinstance(merge, (tuple, list)) or len(merge) != 2 or not all(isinstance(s, str) and s for s in merge):
            return f"merge {i} is {merge!r}, not a pair of two symbols"
        for symbol in merge:
            if len(symbol) > 1 and symbol != "</w>" and symbol not in made:
                return f"merge {i} is {tuple(merge)!r}, but {symbol!r} is neither a character nor a token made by an earlier merge"
        if tuple(merge) in pairs:
            return f"merge {i} {tuple(merge)!r} repeats an earlier merge"
        pairs.add(tuple(merge))
        made.add(merge[0] + merge[1])
    return None


def _fast_enough(got):
    problem = _merge_list_problem(got["output"], 400)
    if problem:
        return problem
    seconds, calibration = got["seconds"], got["calibration"]
    if seconds > BUDGET * calibration:
        return (
            f"train_bpe took {seconds:.2f} s of CPU time, {seconds / calibration:.1f} times the calibration "
            f"workload ({calibration:.3f} s here); the budget is {BUDGET} times ({BUDGET * calibration:.2f} s). Recounting "
            "every pair of every word after each merge is too slow: keep the pair counts, and after a merge update "
            "only the words that held the merged pair"
        )
    return None


@suite.case(
    "efficiency",
    "400 merges on a 500 kB text within 20 times the calibration workload",
    points=1,
    check=satisfies(_fast_enough),
    timed=True,
    budget=BUDGET,
    timeout=15,
)
def _(ns):
    return ns.train_bpe(PUBLIC_CORPUS, 400)


# ---------------------------------------------------------------- byte_bpe


@suite.case(
    "byte_bpe",
    "train_byte_bpe('aaabdaaabac', 259): aa, then aa+a, then aaa+b",
    points=1,
    check=equal(
        [
            Hint(
                lambda got, exp: isinstance(got, list) and len(got) != 3,
                "vocab_size counts the 256 byte ids too: 259 allows exactly 3 merges",
                mistake="wrong number of merges",
            )
        ]
    ),
    expected=[(97, 97), (256, 97), (257, 98)],
)
def _(ns):
    return ns.train_byte_bpe("aaabdaaabac", 259)


@suite.case(
    "byte_bpe",
    "encode by rank, decode back; invalid UTF-8 becomes a replacement character",
    points=1,
    check=equal(
        [
            Hint(
                lambda got, exp: isinstance(got, dict) and got.get("raised") == "UnicodeDecodeError",
                'decode the bytes with errors="replace"',
                mistake="invalid UTF-8 raises",
            )
        ]
    ),
    expected=[[257, 98, 226, 130, 172], "aaab€", "\ufffd"],
)
def _(ns):
    merges = [(97, 97), (256, 97)]
    ids = ns.byte_bpe_encode("aaab€", merges)
    try:
        broken = ns.byte_bpe_decode([0xE6, 0x97], [])
    except UnicodeDecodeError as exc:
        return {"raised": type(exc).__name__}
    return [ids, ns.byte_bpe_decode(ids, merges), broken]


@suite.case(
    "byte_bpe",
    "ties go to the pair met first: train_byte_bpe('abcd', 257)",
    points=1,
    check=equal(),
    expected=[(97, 98)],
)
def _(ns):
    return ns.train_byte_bpe("abcd", 257)


@suite.case(
    "byte_bpe",
    "train_byte_bpe('éé', 258): the two UTF-8 bytes of é, (195, 169), then two of those",
    points=0.5,
    check=equal(),
    expected=[(195, 169), (256, 256)],
)
def _(ns):
    return ns.train_byte_bpe("éé", 258)


@suite.case(
    "byte_bpe",
    "byte_bpe_encode('aaaa', [(97, 97)]) merges every occurrence",
    points=1,
    check=equal(),
    expected=[256, 256],
)
def _(ns):
    return ns.byte_bpe_encode("aaaa", [(97, 97)])


@suite.case(
    "byte_bpe",
    "byte_bpe_decode(torch.tensor([256, 98]), [(97, 97)]): a LongTensor of ids",
    points=0.5,
    check=equal(),
    expected="aab",
)
def _(ns):
    return ns.byte_bpe_decode(torch.tensor([256, 98]), [(97, 97)])


@suite.case(
    "byte_bpe",
    "vocab_size 200, an id outside the vocabulary and a merge of an id not yet defined are refused with a ValueError",
    points=1,
    check=satisfies(_refused),
)
def _(ns):
    return [
        ("train_byte_bpe('abc', 200)", catch(ns.train_byte_bpe, "abc", 200)["raised"]),
        ("byte_bpe_decode([257], [(97, 97)])", catch(ns.byte_bpe_decode, [257], [(97, 97)])["raised"]),
        ("byte_bpe_decode([-1], [])", catch(ns.byte_bpe_decode, [-1], [])["raised"]),
        ("byte_bpe_encode('ab', [(97, 300)])", catch(ns.byte_bpe_encode, "ab", [(97, 300)])["raised"]),
        (
            "byte_bpe_decode([97], [(97, 97), (300, 97)]) (the whole merge list is checked first)",
            catch(ns.byte_bpe_decode, [97], [(97, 97), (300, 97)])["raised"],
        ),
    ]
