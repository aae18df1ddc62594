"""Hidden tests of stage 02_bpe (run only when grading; never shipped to students).

Expected values marked REFERENCE are the reference solution's outputs on the same
probe, saved at build time. Everything here is compared exactly: merge lists,
segmentations, vocabularies, ids and decoded strings are integers and strings. Every
question's clauses and the tests that cover them are listed in ``clauses.md``.

The texts are a passage written for these tests, made-up text generated here from a
fixed seed (``random.Random``, whose sequence Python keeps stable), and small texts
built for one rule each (ties, runs of one symbol, early stopping, end-of-word
symbols). Nothing is read from disk.

Each question is graded on its own. A student's ``train_bpe`` may call their own
``word_frequencies``, ``count_pairs`` and ``merge_pair``, and ``BPETokenizer`` calls
``bpe_segment`` and ``train_bpe``; while a test of one question runs, those other
functions answer the inputs that this test leads to from tables of known answers
(``_KNOWN`` below: the word types of each training text, and for every step of the
correct learner on it the pair counts and the merged word types; the segmentations and
the merges the tokenizer tests need). Any other input goes to the student's own
function. No table holds an implementation, and no table holds an input of its own
function's tests, so the tables give nothing to the question whose function they
stand in for (``test_bpe.py`` checks both, and that every entry is the reference's
answer). The merge lists the segmenter, tokenizer and byte-level tests use are
literals, learned once by the reference.

Efficiency. ``train_bpe(CORPUS, 500)`` on a 1,000,000-character made-up text (about
4,000 words drawn with Zipf frequencies, 10,000 word types with the capitalised and
punctuated forms), built when this module is imported so that building it is not
timed; the generator writes the text word by word, so it also knows the text's word
types, which stand in for ``word_frequencies`` (with the pair counts of those word
types from the table, for a learner that calls ``count_pairs`` once). The grader
measures the CPU time the student's process used for the probe (from outside it, in
``/proc``) and compares it with the calibration workload's CPU time
(``harness.calibration_workload``) measured on the same machine in the same run: the
test passes when seconds <= K * calibration with K = 20, and the merges agree with the
reference's (see ``_efficiency_problem``). CPU time, because a busy or shared machine
inflates wall time and not CPU time. Measured with ``benchmarks/bpe_efficiency.py``
(``benchmarks/RESULTS_bpe_efficiency.json``: the 2-core development machine at load 8
to 14, each learner graded twice, both efficiency tests), CPU ratios:

    reference, the 8 catalogued alternatives and the 6
      incremental learners with a train_bpe mistake              2.0 - 8.1
    learners that rewrite every word type after each merge       36.6, or cut off at
      (4 catalogued, 16 tests)                                   the time limit (15 of 16)

so every incremental learner stays at less than half the budget, and the slow ones
need nearly twice the budget or do not finish.

The merges are compared loosely on purpose: this text has many ties (pairs inside one
frequent word share its count), and a tie broken the wrong way changes the order of
a few merges. That is train_bpe's mistake, graded there; here at least 450 of the 500
merged tokens must be among the reference's, which any correct learner meets whatever
its tie rule and no shortcut that skips the counting does.

Messages say in words which rule failed; they never quote an expected value.
"""

import contextlib
import random

import torch

from autograder.kit import REFERENCE, Hint, Suite, Verdict, catch, equal, raises, satisfies

from public import _missing

suite = Suite(public=False)

# check-stage's rule "an empty answer costs only its own question": efficiency times the
# student's own learner, train_bpe with the word_frequencies it calls, by design
QUESTIONS_USE = {"efficiency": ("word_frequencies", "train_bpe")}

K = 20  # the efficiency budget, in calibration workloads
EFFICIENCY_MERGES = 500

PASSAGE = (
    "The river keeps no record of the boats that cross it. Early in the morning the ferryman\n"
    "unties his boat, checks the ropes, and waits for the first travellers: a baker with her\n"
    "baskets, two students arguing about trains, and a dog that rides every day and never pays.\n"
    "By noon the water is brown and busy;  by evening it is silver again, and the ferryman\n"
    "counts his coins, counts them again, and rows home slowly,\tsinging the same three songs.\n"
    "Nobody remembers the songs. Everybody remembers the ferryman, and the river remembers nothing."
)


def _generated(seed: int, n_chars: int, n_words: int) -> tuple[str, dict[str, int]]:
    """Made-up text of at least ``n_chars`` characters: lower-case syllable words with
    Zipf-like frequencies, in sentences; and how often it writes each word (a run of
    non-whitespace, punctuation attached), in the order the words first appear."""
    g = random.Random(seed)
    consonants, vowels = "bcdfghjklmnprstvwz", "aeiou"
    codas = ("", "", "n", "r", "s", "l", "th")
    lexicon: list[str] = []
    known: set[str] = set()
    while len(lexicon) < n_words:
        word = "".join(g.choice(consonants) + g.choice(vowels) + g.choice(codas) for _ in range(g.choice((1, 2, 2, 3))))
        if word not in known:
            known.add(word)
            lexicon.append(word)
    cumulative, total = [], 0.0
    for r in range(n_words):
        total += 1.0 / (r + 1.5) ** 1.1
        cumulative.append(total)
    parts, written, length = [], {}, 0
    while length < n_chars:
        line = g.choices(lexicon, cum_weights=cumulative, k=g.randint(3, 12))
        if g.random() < 0.5:
            line[0] = line[0].title()
        ending = g.choice((". ", ", ", "; ", ".\n", "?\n", "! "))
        line[-1] += ending[0]
        for word in line:
            written[word] = written.get(word, 0) + 1
        part = " ".join(line) + ending[1]
        parts.append(part)
        length += len(part)
    return "".join(parts), written


GENERATED, GENERATED_WORDS = _generated(31, 3000, 300)
CORPUS, CORPUS_WORDS = _generated(2024, 1_000_000, 4000)


_DICTS = {dict: "dict"}
_SEQUENCES = {tuple: "tuple", list: "list"}


def _kind(value, kinds):
    """The entry of ``kinds`` for the first class of ``value``'s type (its bases included) it holds, else None: isinstance, by table lookups."""
    found = [kinds.get(cls) for cls in type(value).__mro__]
    return next((kind for kind in found if kind is not None), None)


def _as_items(value):
    return value if _kind(value, _DICTS) is None else list(value.items())


def _as_dict(value):
    return value if _kind(value, _DICTS) is None else dict(value)


# ---------------------------------------------------------------- the inputs of the tests that need other questions' functions

SENTENCE = "Nobody remembers the songs. Everybody remembers the ferryman, and the river remembers nothing."
TIE_TEXTS = ["ba ab ab ba", "zy yz", "xy xy ab ba", "dc dc ab ab cd", "mn nm mn nm op", "qp pq pq qp"]
TRAIN_RUNS = [("aaaa aaa aaaaa b", 6, "_"), ("abababa ab aba", 5, "_")]
TRAIN_EARLY = [("ab ab a", 10, "_"), ("", 5, "</w>"), ("abc abd", 0, "</w>"), ("x", 3, "#")]
TRAIN_EOWS = [("low lower lowest", 6, "#"), ("cabana banal nab", 6, "a")]
# every train_bpe call of the train_bpe tests, as (text, num_merges, eow)
TRAINED = [(SENTENCE, 20, "</w>"), *((text, 6, "_") for text in TIE_TEXTS), *TRAIN_RUNS, *TRAIN_EARLY, *TRAIN_EOWS]
REFUSED = [("c d", "</w>"), ("c d", "")]  # word_frequencies inputs of the train_bpe tests of stated errors

# the tokenizer tests: their texts (whose words bpe_segment meets) and merge lists
TOK_TEXTS = ["The ferryman counts the boats; nobody pays.", "  The ferryman\trows home,\n\n singing.  ", "the Queen"]
EOW_MERGES = [("a", "b")]
# merge lists learned once by the reference (literals, in the known answers at the end):
# PASSAGE_MERGES = train_bpe(PASSAGE, 80, eow="_"), GENERATED_MERGES = train_bpe(GENERATED, 150),
# RUN_MERGES = train_bpe("aaaa aaa aaaaaaa ab abab", 8, eow="_"),
# HASH_MERGES = train_bpe("lowest newest widest slowest", 10, eow="#"), TOK_MERGES = train_bpe(PASSAGE, 40),
# BYTE_MERGES = train_byte_bpe(MULTILINGUAL, 256 + 60)
EOW_TEXT = "ab a#b"  # with eow "#": the second word holds the end-of-word symbol
TRAIN_TEXT = "zebra banana bandana\tquiz"  # BPETokenizer.train(TRAIN_TEXT, 5, eow="_")
TRAIN_ENCODED = "banana  quiz"


# ---------------------------------------------------------------- word_frequencies


def _sorted_types(got, exp):
    try:
        return isinstance(got, list) and got != exp and sorted(got) == sorted(exp)
    except TypeError:  # items that cannot be ordered: not this mistake
        return False


def _no_eow(got, exp):
    return (
        isinstance(got, list)
        and bool(got)
        and isinstance(got[0], tuple)
        and isinstance(got[0][0], tuple)
        and got[0][0][-1] != exp[0][0][-1]
        and got[0][0] == exp[0][0][:-1]
    )


@suite.case(
    "word_frequencies",
    "a passage with capitals, punctuation, tabs and repeated words",
    points=2,
    check=equal(
        [
            Hint(
                _sorted_types,
                "the counts are right but word types must stay in order of first appearance",
                mistake="word types sorted",
            ),
            Hint(_no_eow, "each word's tuple ends with the end-of-word symbol", mistake="no end-of-word symbol"),
        ]
    ),
    expected=REFERENCE,
    builds_on=("the lecture corpus with eow='_': counts, end-of-word symbol, order of first appearance",),
)
def _(ns):
    return _as_items(ns.word_frequencies(PASSAGE))


@suite.case(
    "word_frequencies",
    "a multi-character end-of-word symbol is one symbol",
    points=1,
    check=equal(
        [
            Hint(
                lambda got, exp: (
                    isinstance(got, list)
                    and bool(got)
                    and isinstance(got[0], list)
                    and bool(got[0])
                    and isinstance(got[0][0], tuple)
                    and isinstance(got[0][0][0], tuple)
                    and len(got[0][0][0]) > len(exp[0][0][0])
                ),
                "eow is appended as one symbol, not as its characters",
                mistake="end-of-word symbol split into characters",
            )
        ]
    ),
    expected=REFERENCE,
)
def _(ns):
    return [
        _as_items(ns.word_frequencies("to be or not to be", eow="<eow>")),
        _as_items(ns.word_frequencies("Everybody remembers the river </w>")),
    ]


@suite.case(
    "word_frequencies",
    "runs of spaces, newlines and tabs; a text of whitespace only",
    points=1,
    check=equal(),
    expected=REFERENCE,
    builds_on=("any whitespace separates words; the default eow is '</w>'",),
)
def _(ns):
    return [
        _as_items(ns.word_frequencies("  x\ty\n\nx   z \r\n", eow="_")),
        _as_items(ns.word_frequencies(" \n\t ", eow="_")),
    ]


@suite.case(
    "word_frequencies",
    "an end-of-word symbol that also occurs inside the words",
    points=1,
    check=equal(),
    expected=REFERENCE,
)
def _(ns):
    return _as_items(ns.word_frequencies("banana bandana nab", eow="a"))


@suite.case("word_frequencies", "an empty end-of-word symbol raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.word_frequencies, "a b", eow="")


# ---------------------------------------------------------------- count_pairs


@suite.case(
    "count_pairs",
    "every pair of the generated text's words, weighted by word counts",
    points=2,
    check=equal(
        [
            Hint(
                lambda got, exp: (
                    isinstance(got, dict) and set(got) == set(exp) and all(v <= exp[k] for k, v in got.items())
                ),
                "some counts are too small: weight each pair by its word's count, and count every occurrence in the word",
                mistake="counts too small",
            )
        ]
    ),
    expected=REFERENCE,
    builds_on=("the lecture corpus: (e, r) and (r, _) lead with 9",),
)
def _(ns):
    words = {tuple(word) + ("</w>",): n for word, n in GENERATED_WORDS.items()}
    return _as_dict(ns.count_pairs(words))


@suite.case(
    "count_pairs",
    "runs of one symbol and a repeated pair: every occurrence counts",
    points=2,
    check=equal(),
    expected=REFERENCE,
    builds_on=("a a a holds (a, a) twice; each pair is weighted by its word's count",),
)
def _(ns):
    words = {
        ("a", "a", "a", "a", "_"): 2,
        ("x", "y", "x", "y", "_"): 1,
        ("b", "b", "b", "_"): 5,
        ("l", "a", "l", "a", "l", "a", "_"): 3,
    }
    return _as_dict(ns.count_pairs(words))


@suite.case(
    "count_pairs",
    "merged symbols and a multi-character end-of-word symbol",
    points=1,
    check=equal(),
    expected=REFERENCE,
)
def _(ns):
    words = {("lo", "w", "</w>"): 3, ("n", "e", "w", "er", "</w>"): 2, ("er", "er", "er", "</w>"): 1, ("er</w>",): 4}
    return _as_dict(ns.count_pairs(words))


@suite.case(
    "count_pairs",
    "no pairs: one-symbol words and an empty dict",
    points=1,
    check=equal(),
    expected=[{}, {}],
    guard=True,  # a no-op returning zeros (an empty dict here) passes: it counts only with a value test passing
)
def _(ns):
    return [_as_dict(ns.count_pairs({("ab_",): 3, ("c",): 1})), _as_dict(ns.count_pairs({}))]


# ---------------------------------------------------------------- merge_pair


@suite.case(
    "merge_pair",
    "runs of the pair's symbol are merged left to right without overlap",
    points=2,
    check=equal(),
    expected=REFERENCE,
    builds_on=("(a, a) in a a a gives aa a: left to right, no overlap",),
)
def _(ns):
    words = {
        ("a", "a", "a", "a", "a", "_"): 1,
        ("a", "a", "a", "_"): 2,
        ("b", "a", "a", "a", "b", "_"): 3,
        ("a", "_"): 4,
    }
    return _as_items(ns.merge_pair(words, ("a", "a")))


@suite.case(
    "merge_pair",
    "symbols are matched whole, never as parts of longer symbols",
    points=1,
    check=equal(),
    expected=REFERENCE,
)
def _(ns):
    words = {("ab", "c", "_"): 1, ("b", "c", "_"): 2, ("a", "bc", "_"): 3, ("x", "b", "cd", "b", "c", "_"): 4}
    return _as_items(ns.merge_pair(words, ("b", "c")))


@suite.case(
    "merge_pair",
    "two word types that the merge makes equal: their counts are summed",
    points=1,
    check=equal(),
    expected=REFERENCE,
)
def _(ns):
    words = {("a", "b", "_"): 2, ("ab", "_"): 3, ("c", "a", "b", "_"): 1}
    return _as_items(ns.merge_pair(words, ("a", "b")))


@suite.case(
    "merge_pair",
    "the generated text's words: word order kept, the dict passed in unchanged",
    points=1,
    check=equal(),
    expected=REFERENCE,
)
def _(ns):
    words = {tuple(word) + ("_",): n for word, n in GENERATED_WORDS.items()}
    result = _as_items(ns.merge_pair(words, ("e", "_")))
    return [result, list(words.items())]


@suite.case("merge_pair", "a pair of three symbols raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.merge_pair, {("a", "b", "c", "_"): 1}, ("a", "b", "c"))


# ---------------------------------------------------------------- train_bpe

_TRAIN_TESTS = ("word_frequencies", "count_pairs", "merge_pair")


@suite.case(
    "train_bpe",
    "a sentence, 20 merges, default end-of-word symbol",
    points=2,
    check=equal(),
    expected=REFERENCE,
    builds_on=("the lecture's worked example: 8 merges with eow='_'",),
)
def _(ns):
    with _known(ns, *_TRAIN_TESTS):
        return ns.train_bpe(SENTENCE, 20)


@suite.case(
    "train_bpe",
    "ties go to the pair met first, also after earlier merges",
    points=2,
    check=equal(),
    expected=REFERENCE,
    builds_on=("a tie between (c, d) and (a, b) goes to the pair met first",),
)
def _(ns):
    with _known(ns, *_TRAIN_TESTS):
        return [ns.train_bpe(text, 6, eow="_") for text in TIE_TEXTS]


@suite.case(
    "train_bpe",
    "runs of one letter: pairs counted with overlaps, merged without",
    points=1,
    check=equal(),
    expected=REFERENCE,
)
def _(ns):
    with _known(ns, *_TRAIN_TESTS):
        return [ns.train_bpe(text, n, eow=eow) for text, n, eow in TRAIN_RUNS]


@suite.case(
    "train_bpe",
    "training stops early once no pair is left; 0 merges; an empty text",
    points=1,
    check=equal(),
    expected=REFERENCE,
    builds_on=("stops early when every word is a single symbol",),
)
def _(ns):
    with _known(ns, *_TRAIN_TESTS):
        return [ns.train_bpe(text, n, eow=eow) for text, n, eow in TRAIN_EARLY]


@suite.case(
    "train_bpe",
    "other end-of-word symbols, one of them also a letter of the words",
    points=1,
    check=equal(
        [
            Hint(
                lambda got, exp: isinstance(got, list) and "</w>" in str(got),
                "the eow argument must reach every word, not the default",
                mistake="eow not passed on",
            )
        ]
    ),
    expected=REFERENCE,
)
def _(ns):
    with _known(ns, *_TRAIN_TESTS):
        return [ns.train_bpe(text, n, eow=eow) for text, n, eow in TRAIN_EOWS]


@suite.case("train_bpe", "a negative number of merges raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    with _known(ns, *_TRAIN_TESTS):
        return catch(ns.train_bpe, "c d", -1)


@suite.case("train_bpe", "an empty end-of-word symbol raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    with _known(ns, *_TRAIN_TESTS):
        return catch(ns.train_bpe, "c d", 3, eow="")


# ---------------------------------------------------------------- segment


@suite.case(
    "segment",
    "the passage's own words with its 80 merges",
    points=2,
    check=equal(),
    expected=REFERENCE,
    builds_on=("bpe_segment('lower', lecture merges, eow='_') == ['low', 'er_']",),
)
def _(ns):
    return [ns.bpe_segment(word, PASSAGE_MERGES, eow="_") for word in dict.fromkeys(PASSAGE.split())]


@suite.case(
    "segment",
    "new words and unseen characters with merges of the generated text, default eow",
    points=2,
    check=equal(),
    expected=REFERENCE,
    builds_on=("bpe_segment('lower', lecture merges, eow='_') == ['low', 'er_']",),
)
def _(ns):
    words = ["gafugel", "zanzan", "Wodarix", "thethe", "sulzaceq", "ko", "Q", "vathvathvath", "ferryman"]
    return [ns.bpe_segment(word, GENERATED_MERGES) for word in words]


@suite.case(
    "segment",
    "words made of one repeated symbol",
    points=1,
    check=equal(),
    expected=REFERENCE,
)
def _(ns):
    return [ns.bpe_segment(word, RUN_MERGES, eow="_") for word in ("a", "aa", "aaaaaa", "aaaaaaaaa", "ababab", "baab")]


@suite.case(
    "segment",
    "the eow argument is used ('#')",
    points=1,
    check=equal(),
    expected=REFERENCE,
)
def _(ns):
    return [ns.bpe_segment(word, HASH_MERGES, eow="#") for word in ("lowest", "slow", "widen", "west")]


@suite.case(
    "segment",
    "an empty word or a word with a space raises ValueError",
    points=1,
    check=satisfies(
        lambda got: (
            None
            if got == ["ValueError", "ValueError"]
            else f"expected ValueError for both the empty word and 'two words', got {got}"
        )
    ),
)
def _(ns):
    return [catch(ns.bpe_segment, word, PASSAGE_MERGES, eow="_")["raised"] for word in ("", "two words")]


# ---------------------------------------------------------------- tokenizer

TWICE_MERGES = [("a", "b"), ("ab", "c"), ("b", "c"), ("a", "bc"), ("c", "_"), ("abc", "_")]
_TOKENIZER_TESTS = ("bpe_segment", "train_bpe")
_ALPHABET = set(PASSAGE) - set(" \n\t")


@suite.case(
    "tokenizer",
    "vocab of the passage's merges, alphabet taken from the merges",
    points=1,
    check=equal(),
    expected=REFERENCE,
    builds_on=("vocab of the lecture merges: base symbols sorted, then eow, then merged tokens in merge order",),
    structure=True,
)
def _(ns):
    return _as_items(ns.BPETokenizer(PASSAGE_MERGES, eow="_").vocab)


@suite.case(
    "tokenizer",
    "vocab with an alphabet given as a string and as a list",
    points=1,
    check=equal(),
    expected=REFERENCE,
    builds_on=("vocab of the lecture merges: base symbols sorted, then eow, then merged tokens in merge order",),
    structure=True,
)
def _(ns):
    first = ns.BPETokenizer(PASSAGE_MERGES[:10], eow="_", alphabet="zyxwvutsrqponmlkjihgfedcba")
    second = ns.BPETokenizer(GENERATED_MERGES[:10], alphabet=["q", "b", "A", "z", "e"])
    return [_as_items(first.vocab), _as_items(second.vocab)]


@suite.case(
    "tokenizer",
    "a token made by two different merges keeps its first id",
    points=1,
    check=equal(),
    expected=REFERENCE,
    structure=True,
)
def _(ns):
    return _as_items(ns.BPETokenizer(TWICE_MERGES, eow="_").vocab)


@suite.case(
    "tokenizer",
    "encode a sentence of the passage (default eow)",
    points=2,
    check=equal(),
    expected=REFERENCE,
)
def _(ns):
    with _known(ns, *_TOKENIZER_TESTS):
        tok = ns.BPETokenizer(TOK_MERGES, alphabet=_ALPHABET)
        return tok.encode(TOK_TEXTS[0])


def _decoded(got):
    if not isinstance(got, list) or not all(isinstance(text, str) for text in got):
        return "decode must return a str"
    if got[0] != "The ferryman rows home, singing.":
        return "decode(encode(s)) must give the words of s joined by single spaces, without the end-of-word symbols"
    if got[1] != got[0]:
        return "decode must give the same text for a list of ids and for a 1-D LongTensor of them"
    return None


@suite.case(
    "tokenizer",
    "decode(encode(s)) normalises whitespace; decode accepts a LongTensor",
    points=2,
    check=satisfies(
        _decoded,
        [
            Hint(
                lambda got, exp: isinstance(got, list) and isinstance(got[0], str) and "</w>" in got[0],
                "the end-of-word symbol is not part of the decoded text",
                mistake="end-of-word symbol left in the text",
            )
        ],
    ),
    builds_on=("decode(encode(s)) gives the words of s joined by single spaces",),
)
def _(ns):
    with _known(ns, *_TOKENIZER_TESTS):
        tok = ns.BPETokenizer(TOK_MERGES, alphabet=_ALPHABET)
        ids = tok.encode(TOK_TEXTS[1])
        plain = [int(i) for i in ids]
        return [tok.decode(plain), tok.decode(torch.tensor(plain, dtype=torch.long))]


@suite.case(
    "tokenizer",
    "decode: ids that do not end a word still form a last word",
    points=1,
    check=satisfies(
        lambda got: (
            None if got == "abc cab ab" else "decode must keep the ids after the last end-of-word token as a last word"
        )
    ),
)
def _(ns):
    tok = ns.BPETokenizer(TWICE_MERGES, eow="_")
    v = tok.vocab
    return tok.decode([v["abc_"], v["c"], v["ab"], v["_"], v["a"], v["b"]])


def _names_q(got):
    if got["raised"] == "ValueError" and "Q" in got["message"]:
        return None
    return f"expected a ValueError whose message names the character outside the vocabulary, got {got['raised'] or 'no exception'}: {got['message']!r}"


@suite.case(
    "tokenizer",
    "encode raises ValueError naming a character outside the vocabulary",
    points=1,
    check=satisfies(_names_q),
)
def _(ns):
    with _known(ns, *_TOKENIZER_TESTS):
        tok = ns.BPETokenizer(TOK_MERGES, alphabet=_ALPHABET)
        return catch(tok.encode, TOK_TEXTS[2])


@suite.case(
    "tokenizer",
    "encode raises ValueError for a word that holds the end-of-word symbol",
    points=1,
    check=raises("ValueError"),
)
def _(ns):
    with _known(ns, *_TOKENIZER_TESTS):
        tok = ns.BPETokenizer(EOW_MERGES, eow="#", alphabet="ab#")
        return catch(tok.encode, EOW_TEXT)


@suite.case(
    "tokenizer",
    "decode raises ValueError for an id outside the vocabulary",
    points=1,
    check=satisfies(
        lambda got: (
            None
            if got == ["ValueError", "ValueError"]
            else f"expected ValueError for the ids len(vocab) and -1, got {got}"
        )
    ),
)
def _(ns):
    tok = ns.BPETokenizer(TWICE_MERGES, eow="_")
    return [catch(tok.decode, [0, len(tok.vocab)])["raised"], catch(tok.decode, [-1])["raised"]]


@suite.case(
    "tokenizer",
    "BPETokenizer(...) raises ValueError for an empty eow and for a merge that is not a pair",
    points=1,
    check=satisfies(
        lambda got: (
            None
            if got == ["ValueError", "ValueError", "ValueError"]
            else f"expected ValueError for eow='', a merge of three symbols and a merge of one, got {got}"
        )
    ),
)
def _(ns):
    return [
        catch(ns.BPETokenizer, TWICE_MERGES, eow="")["raised"],
        catch(ns.BPETokenizer, [("a", "b"), ("ab", "c", "_")], eow="_")["raised"],
        catch(ns.BPETokenizer, [("a",)], eow="_")["raised"],
    ]


@suite.case(
    "tokenizer",
    "train: merges from train_bpe, alphabet from every character of the text's words (whitespace excluded)",
    points=1,
    check=equal(),
    expected=REFERENCE,
    builds_on=("BPETokenizer.train uses every character of the text's words (whitespace excluded) as the alphabet",),
)
def _(ns):
    with _known(ns, *_TOKENIZER_TESTS):
        tok = ns.BPETokenizer.train(TRAIN_TEXT, 5, eow="_")
        return [list(tok.merges), _as_items(tok.vocab), tok.decode(tok.encode(TRAIN_ENCODED))]


# ---------------------------------------------------------------- efficiency


def _efficiency_problem(got, expected):
    merges, seconds, calibration = got["output"], got["seconds"], got["calibration"]
    if not isinstance(merges, (list, tuple)) or len(merges) != EFFICIENCY_MERGES:
        return f"train_bpe(text, {EFFICIENCY_MERGES}) must return a list of {EFFICIENCY_MERGES} merges (this text has plenty of pairs left)"
    tokens = {
        m[0] + m[1]
        for m in merges
        if isinstance(m, (list, tuple)) and len(m) == 2 and all(isinstance(s, str) for s in m)
    }
    if len(tokens & {a + b for a, b in expected}) < 450:
        return "the merges are not those of BPE on this text: far too many merged tokens differ from the most frequent pairs"
    if seconds > K * calibration:
        return (
            f"train_bpe took {seconds:.1f} s of CPU time, {seconds / calibration:.1f} times the calibration "
            f"workload ({calibration:.3f} s here); the budget is {K} times ({K * calibration:.1f} s). "
            "After a merge, update only the counts of the words that held the merged pair"
        )
    return None


class _Efficiency:
    def __call__(self, got, expected, reveal=False):
        problem = _efficiency_problem(got, expected)
        return Verdict(True) if problem is None else Verdict(False, problem)


@suite.case(
    "efficiency",
    "500 merges on a 1 MB text within the time budget",
    points=3,
    check=_Efficiency(),
    expected=REFERENCE,
    timed=True,
    budget=K,
    timeout=20,
    builds_on=("400 merges on a 500 kB text within 20 times the calibration workload",),
)
def _(ns):
    with _known(ns, *_TRAIN_TESTS):
        return ns.train_bpe(CORPUS, EFFICIENCY_MERGES)


# ---------------------------------------------------------------- byte_bpe

MULTILINGUAL = (
    "Tea or coffee? Thé ou café? Tee oder Kaffee? 茶还是咖啡？ お茶かコーヒー？ Чай или кофе? "
    "शाय या कॉफ़ी? 🍵 or ☕, the café's crème brûlée, e\u0301 and n\u0303 with combining marks. "
) * 3


@suite.case(
    "byte_bpe",
    "merges learned from a multilingual text with emoji",
    points=2,
    check=equal(),
    expected=REFERENCE,
    builds_on=("train_byte_bpe('aaabdaaabac', 259): aa, then aa+a, then aaa+b",),
)
def _(ns):
    return ns.train_byte_bpe(MULTILINGUAL, 256 + 60)


@suite.case(
    "byte_bpe",
    "byte-level ties, a one-byte text and early stopping",
    points=1,
    check=equal(),
    expected=REFERENCE,
)
def _(ns):
    return [
        ns.train_byte_bpe("abcd", 257),
        ns.train_byte_bpe("x", 300),
        ns.train_byte_bpe("aaaa", 300),
        len(ns.train_byte_bpe("abcabcabd", 256 + 50)),
    ]


@suite.case(
    "byte_bpe",
    "encode applies the merges by rank",
    points=1,
    check=equal(),
    expected=REFERENCE,
)
def _(ns):
    return [ns.byte_bpe_encode(text, BYTE_MERGES) for text in ("Tea, café and 茶 for the crème!", "coffee coffee", "")]


ROUND_TRIP = [
    "",
    "a",
    "naïve café",
    "👨\u200d👩\u200d👧 🇬🇧 👍🏽",
    "e\u0301a\u0308",
    "日本語のテキスト",
    "Чай или кофе? 🍵",
]


def _round_trips(got):
    if not isinstance(got, list) or len(got) != len(ROUND_TRIP):
        return "the test could not read the decoded strings"
    bad = [i for i, (back, text) in enumerate(zip(got, ROUND_TRIP)) if back != text]
    return (
        None
        if not bad
        else "byte_bpe_decode(byte_bpe_encode(s)) is not s for some of the strings (emoji sequences, combining marks, CJK): decode the bytes of all the ids together"
    )


@suite.case(
    "byte_bpe",
    "decode(encode(s)) == s for emoji, combining marks and CJK",
    points=1,
    check=satisfies(_round_trips),
    guard=True,  # a no-op returning its input passes a round trip: it counts only with a value test passing
)
def _(ns):
    return [ns.byte_bpe_decode(ns.byte_bpe_encode(s, BYTE_MERGES), BYTE_MERGES) for s in ROUND_TRIP]


@suite.case(
    "byte_bpe",
    "invalid UTF-8 decodes to replacement characters; a LongTensor is accepted",
    points=1,
    check=equal(),
    expected=REFERENCE,
    builds_on=("encode by rank, decode back; invalid UTF-8 becomes a replacement character",),
)
def _(ns):
    out = []
    for ids in ([0xE6, 0x97], [104, 0xFF, 105], [0xF0, 0x9F, 0x8D]):
        result = catch(ns.byte_bpe_decode, ids, [])
        out.append(result["raised"] or ns.byte_bpe_decode(ids, []))
    out.append(ns.byte_bpe_decode(torch.tensor([104, 105, 33]), []))
    return out


@suite.case("byte_bpe", "a vocab_size below 256 raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.train_byte_bpe, "abc", 200)


@suite.case(
    "byte_bpe",
    "decode raises ValueError for an id outside 0 .. 255 + len(merges)",
    points=1,
    check=satisfies(
        lambda got: (
            None
            if got == ["ValueError", "ValueError"]
            else f"expected ValueError for the ids 256 + len(merges) and -1, got {got}"
        )
    ),
)
def _(ns):
    return [
        catch(ns.byte_bpe_decode, [97, 258], [(97, 97), (256, 98)])["raised"],
        catch(ns.byte_bpe_decode, [-1], [])["raised"],
    ]


@suite.case(
    "byte_bpe",
    "a merge that uses an id not defined before it raises ValueError (encode and decode)",
    points=1,
    check=satisfies(
        lambda got: (
            None
            if got == ["ValueError", "ValueError"]
            else f"expected ValueError from byte_bpe_encode and byte_bpe_decode, got {got}"
        )
    ),
)
def _(ns):
    merges = [(97, 97), (300, 97)]
    return [catch(ns.byte_bpe_encode, "aaa", merges)["raised"], catch(ns.byte_bpe_decode, [97], merges)["raised"]]


# ---------------------------------------------------------------- known answers
# Written once with the reference solution (test_bpe.py checks every entry against it and
# can print them again: render_known_answers). Symbols are separated by spaces, a word type
# or pair is followed by "=" and its count, and items by two spaces.

# fmt: off
# <known answers>
PASSAGE_MERGES = [
    ('s', '_'), ('t', 'h'), ('e', 'r'), ('e', '_'), ('th', 'e_'), ('i', 'n'), ('a', 'n'), (',', '_'), ('d', '_'),
    ('er', '_'), ('y', '_'), ('an', 'd_'), ('e', 'm'), ('in', 'g'), ('b', 'o'), ('a', 't'), ('.', '_'),
    ('v', 'er_'), ('c', 'o'), ('r', 'o'), ('ing', '_'), ('n', 't'), ('i', 's_'), ('s', ',_'), ('r', 'i'),
    ('n', 'o'), ('i', 't'), ('f', 'er'), ('fer', 'r'), ('ferr', 'y'), ('ferry', 'm'), ('ferrym', 'an'),
    ('u', 'nt'), ('a', 'in'), ('s', '._'), ('o', 'n'), ('r', 'em'), ('rem', 'em'), ('remem', 'b'),
    ('rememb', 'er'), ('remember', 's_'), ('ri', 'ver_'), ('k', 'e'), ('r', 'e'), ('bo', 'at'), ('th', 'at'),
    ('that', '_'), ('a', 'r'), ('o', 'r'), ('n', 'ing_'), ('ferryman', '_'), ('e', 's_'), ('h', 'is_'),
    ('s', 't'), ('t', 'r'), ('v', 'e'), ('a', '_'), ('b', 'a'), ('v', 'er'), ('ro', 'w'), ('a', 'g'),
    ('ag', 'ain'), ('again', ',_'), ('co', 'unt'), ('count', 's_'), ('m', 'e_'), ('s', 'on'), ('son', 'g'),
    ('song', 's._'), ('bo', 'd'), ('bod', 'y_'), ('T', 'h'), ('Th', 'e_'), ('ke', 'e'), ('kee', 'p'),
    ('keep', 's_'), ('no', '_'), ('re', 'co'), ('reco', 'r'), ('recor', 'd_'),
]
GENERATED_MERGES = [
    ('t', 'h'), ('l', '</w>'), ('v', 'a'), ('th', '</w>'), ('e', 'l</w>'), ('n', '</w>'), ('va', 'th</w>'),
    ('s', '</w>'), ('f', 'u'), ('g', 'a'), ('fu', 'g'), ('fug', 'el</w>'), ('w', 'o'), ('a', 'r'),
    ('ga', 'fugel</w>'), ('e', '</w>'), ('i', '</w>'), ('n', 'o'), ('n', 'i'), ('u', 'r'), ('p', 'e'),
    ('z', 'a'), ('d', 'ar'), ('n', 'k'), ('o', '</w>'), ('wo', 'dar'), ('c', 'e</w>'), ('u', 'l'),
    ('wodar', 'i</w>'), ('e', 'r'), (',', '</w>'), ('no', 'nk'), ('u', 's</w>'), ('e', 'b'), ('nonk', 'el</w>'),
    ('va', 'n'), ('ni', 'n</w>'), ('ul', 'za'), ('u', 'n</w>'), ('z', 'us</w>'), ('.', '</w>'), ('s', 'ulza'),
    ('v', 'i'), ('sulza', '</w>'), ('d', 'eb'), ('c', 'o'), ('j', 'o'), ('!', '</w>'), ('van', 'nin</w>'),
    ('deb', 'un</w>'), ('e', 'l'), ('a', 'th</w>'), ('jo', 'l'), (';', '</w>'), ('k', 'u'), ('pe', 'g'),
    ('i', 'r'), ('v', 'o'), ('jol', 'pe'), ('f', 'i'), ('va', 'th'), ('peg', 'o</w>'), ('wo', 'l</w>'),
    ('h', 'er'), ('vi', 'fi'), ('vifi', 'zus</w>'), ('her', 'co'), ('ar', '</w>'), ('jolpe', 'n</w>'),
    ('o', 'th'), ('o', 'r'), ('?', '</w>'), ('herco', 's</w>'), ('z', 'i'), ('ku', 'l</w>'), ('u', 's'),
    ('e', 's</w>'), ('no', 'r'), ('t', 'i'), ('r', 'i'), ('t', 'a'), ('f', 'o'), ('c', 'ar</w>'), ('f', 'e'),
    ('u', '</w>'), ('h', 'ur'), ('hur', 'zus</w>'), ('u', 'n'), ('ni', 'r'), ('G', 'a'), ('Ga', 'fugel</w>'),
    ('ur', 'car</w>'), ('s', 'a'), ('vath', '!</w>'), ('s', ',</w>'), ('l', 'i'), ('fo', 'nor'), ('nir', 'ni'),
    ('h', 'a'), ('er', '</w>'), ('V', 'ath</w>'), ('zi', 'th'), ('fu', 'l</w>'), ('c', 'e'), ('fe', 'kul</w>'),
    ('l', 'a'), ('v', 'u'), ('t', 'o'), ('s', 'i'), ('s', 'e'), ('w', 'i'), ('vo', 'n</w>'), ('ir', '</w>'),
    ('wo', 'l'), ('ur', 'w'), ('el', '.</w>'), ('fonor', '</w>'), ('p', 'a'), ('p', 'or'), ('ta', '</w>'),
    ('ga', 'fug'), ('oth', 'm'), ('ur', '</w>'), ('ku', 'ti'), ('kuti', 'l'), ('za', 'n</w>'), ('g', 'er</w>'),
    ('zith', 'ful</w>'), ('ce', ';</w>'), ('p', 'urcar</w>'), ('la', 'vu'), ('m', 'a'), ('e', 'th'), ('h', 'e'),
    ('n', 'h'), ('i', 's</w>'), ('d', 'er'), ('b', 'ar'), ('bar', 'm'), ('barm', 'o</w>'), ('li', 'nk'),
    ('link', 'un'), ('linkun', 'r'), ('linkunr', 'e</w>'), ('r', 'a'), ('i', 's'), ('n', ',</w>'), ('r', 'ur'),
    ('z', 'eb'), ('zeb', 'oth'),
]
RUN_MERGES = [
    ('a', 'a'), ('aa', 'aa'), ('a', 'b'), ('aa', 'a'), ('aaa', '_'), ('ab', '_'), ('aaaa', '_'),
    ('aaaa', 'aaa_'),
]
HASH_MERGES = [
    ('e', 's'), ('es', 't'), ('est', '#'), ('w', 'est#'), ('l', 'o'), ('lo', 'west#'), ('n', 'e'),
    ('ne', 'west#'), ('w', 'i'), ('wi', 'd'),
]
TOK_MERGES = [
    ('s', '</w>'), ('t', 'h'), ('e', 'r'), ('e', '</w>'), ('th', 'e</w>'), ('i', 'n'), ('a', 'n'), (',', '</w>'),
    ('d', '</w>'), ('er', '</w>'), ('y', '</w>'), ('an', 'd</w>'), ('e', 'm'), ('in', 'g'), ('b', 'o'),
    ('a', 't'), ('.', '</w>'), ('v', 'er</w>'), ('c', 'o'), ('r', 'o'), ('ing', '</w>'), ('n', 't'),
    ('i', 's</w>'), ('s', ',</w>'), ('r', 'i'), ('n', 'o'), ('i', 't'), ('f', 'er'), ('fer', 'r'), ('ferr', 'y'),
    ('ferry', 'm'), ('ferrym', 'an'), ('u', 'nt'), ('a', 'in'), ('s', '.</w>'), ('o', 'n'), ('r', 'em'),
    ('rem', 'em'), ('remem', 'b'), ('rememb', 'er'),
]
BYTE_MERGES = [
    (224, 164), (32, 99), (63, 32), (32, 111), (195, 169), (101, 101), (97, 102), (227, 131), (32, 208),
    (259, 114), (257, 111), (102, 261), (267, 258), (257, 262), (269, 260), (232, 140), (271, 182), (239, 188),
    (273, 159), (227, 129), (263, 188), (256, 190), (256, 175), (224, 165), (44, 32), (116, 104), (114, 195),
    (105, 110), (84, 101), (284, 97), (285, 265), (286, 266), (287, 102), (288, 268), (289, 84), (290, 104),
    (291, 260), (292, 259), (293, 117), (294, 270), (295, 258), (296, 84), (297, 261), (298, 259), (299, 100),
    (300, 101), (301, 114), (302, 32), (303, 75), (304, 262), (305, 268), (306, 272), (307, 232), (308, 191),
    (309, 152), (310, 230), (311, 152), (312, 175), (313, 229), (314, 146),
]
_TRAIN_MERGES = [('a', 'n'), ('a', '_'), ('b', 'an'), ('an', 'a_'), ('z', 'e')]
# for each call in TRAINED: the merges the reference learns, the word types before each merge and after the last, and their pair counts
_CHAIN_MERGES = [
    [('e', 'm'), ('e', 'r'), ('t', 'h'), ('r', 'em'), ('rem', 'em'), ('remem', 'b'), ('rememb', 'er'), ('remember', 's'), ('remembers', '</w>'), ('th', 'e'), ('the', '</w>'), ('b', 'o'), ('bo', 'd'), ('bod', 'y'), ('body', '</w>'), ('n', 'g'), ('.', '</w>'), ('v', 'er'), ('a', 'n'), ('N', 'o')],
    [('b', 'a'), ('ba', '_'), ('a', 'b'), ('ab', '_')],
    [('z', 'y'), ('zy', '_'), ('y', 'z'), ('yz', '_')],
    [('x', 'y'), ('xy', '_'), ('a', 'b'), ('ab', '_'), ('b', 'a'), ('ba', '_')],
    [('d', 'c'), ('dc', '_'), ('a', 'b'), ('ab', '_'), ('c', 'd'), ('cd', '_')],
    [('m', 'n'), ('mn', '_'), ('n', 'm'), ('nm', '_'), ('o', 'p'), ('op', '_')],
    [('q', 'p'), ('qp', '_'), ('p', 'q'), ('pq', '_')],
    [('a', 'a'), ('aa', 'aa'), ('a', '_'), ('aaaa', '_'), ('aa', 'a_'), ('aaaa', 'a_')],
    [('a', 'b'), ('ab', 'ab'), ('ab', 'a'), ('aba', '_'), ('abab', 'aba_')],
    [('a', 'b'), ('ab', '_'), ('a', '_')],
    [],
    [],
    [('x', '#')],
    [('l', 'o'), ('lo', 'w'), ('low', 'e'), ('low', '#'), ('lowe', 'r'), ('lower', '#')],
    [('b', 'a'), ('n', 'a'), ('ba', 'na'), ('c', 'a'), ('ca', 'bana'), ('cabana', 'a')],
]
_CHAIN_STATES = [
    [  # 'Nobody remembers the songs. Everybody re', 20 merges, eow '</w>'
        (
            'N o b o d y </w>=1  r e m e m b e r s </w>=3  t h e </w>=3  s o n g s . </w>=1  E v e r y b o d y </w>=1  '
            'f e r r y m a n , </w>=1  a n d </w>=1  r i v e r </w>=1  n o t h i n g . </w>=1'
        ),
        (
            'N o b o d y </w>=1  r em em b e r s </w>=3  t h e </w>=3  s o n g s . </w>=1  E v e r y b o d y </w>=1  '
            'f e r r y m a n , </w>=1  a n d </w>=1  r i v e r </w>=1  n o t h i n g . </w>=1'
        ),
        (
            'N o b o d y </w>=1  r em em b er s </w>=3  t h e </w>=3  s o n g s . </w>=1  E v er y b o d y </w>=1  '
            'f er r y m a n , </w>=1  a n d </w>=1  r i v er </w>=1  n o t h i n g . </w>=1'
        ),
        (
            'N o b o d y </w>=1  r em em b er s </w>=3  th e </w>=3  s o n g s . </w>=1  E v er y b o d y </w>=1  '
            'f er r y m a n , </w>=1  a n d </w>=1  r i v er </w>=1  n o th i n g . </w>=1'
        ),
        (
            'N o b o d y </w>=1  rem em b er s </w>=3  th e </w>=3  s o n g s . </w>=1  E v er y b o d y </w>=1  '
            'f er r y m a n , </w>=1  a n d </w>=1  r i v er </w>=1  n o th i n g . </w>=1'
        ),
        (
            'N o b o d y </w>=1  remem b er s </w>=3  th e </w>=3  s o n g s . </w>=1  E v er y b o d y </w>=1  '
            'f er r y m a n , </w>=1  a n d </w>=1  r i v er </w>=1  n o th i n g . </w>=1'
        ),
        (
            'N o b o d y </w>=1  rememb er s </w>=3  th e </w>=3  s o n g s . </w>=1  E v er y b o d y </w>=1  '
            'f er r y m a n , </w>=1  a n d </w>=1  r i v er </w>=1  n o th i n g . </w>=1'
        ),
        (
            'N o b o d y </w>=1  remember s </w>=3  th e </w>=3  s o n g s . </w>=1  E v er y b o d y </w>=1  '
            'f er r y m a n , </w>=1  a n d </w>=1  r i v er </w>=1  n o th i n g . </w>=1'
        ),
        (
            'N o b o d y </w>=1  remembers </w>=3  th e </w>=3  s o n g s . </w>=1  E v er y b o d y </w>=1  '
            'f er r y m a n , </w>=1  a n d </w>=1  r i v er </w>=1  n o th i n g . </w>=1'
        ),
        (
            'N o b o d y </w>=1  remembers</w>=3  th e </w>=3  s o n g s . </w>=1  E v er y b o d y </w>=1  '
            'f er r y m a n , </w>=1  a n d </w>=1  r i v er </w>=1  n o th i n g . </w>=1'
        ),
        (
            'N o b o d y </w>=1  remembers</w>=3  the </w>=3  s o n g s . </w>=1  E v er y b o d y </w>=1  '
            'f er r y m a n , </w>=1  a n d </w>=1  r i v er </w>=1  n o th i n g . </w>=1'
        ),
        (
            'N o b o d y </w>=1  remembers</w>=3  the</w>=3  s o n g s . </w>=1  E v er y b o d y </w>=1  '
            'f er r y m a n , </w>=1  a n d </w>=1  r i v er </w>=1  n o th i n g . </w>=1'
        ),
        (
            'N o bo d y </w>=1  remembers</w>=3  the</w>=3  s o n g s . </w>=1  E v er y bo d y </w>=1  '
            'f er r y m a n , </w>=1  a n d </w>=1  r i v er </w>=1  n o th i n g . </w>=1'
        ),
        (
            'N o bod y </w>=1  remembers</w>=3  the</w>=3  s o n g s . </w>=1  E v er y bod y </w>=1  '
            'f er r y m a n , </w>=1  a n d </w>=1  r i v er </w>=1  n o th i n g . </w>=1'
        ),
        (
            'N o body </w>=1  remembers</w>=3  the</w>=3  s o n g s . </w>=1  E v er y body </w>=1  '
            'f er r y m a n , </w>=1  a n d </w>=1  r i v er </w>=1  n o th i n g . </w>=1'
        ),
        (
            'N o body</w>=1  remembers</w>=3  the</w>=3  s o n g s . </w>=1  E v er y body</w>=1  f er r y m a n , </w>=1  '
            'a n d </w>=1  r i v er </w>=1  n o th i n g . </w>=1'
        ),
        (
            'N o body</w>=1  remembers</w>=3  the</w>=3  s o ng s . </w>=1  E v er y body</w>=1  f er r y m a n , </w>=1  '
            'a n d </w>=1  r i v er </w>=1  n o th i ng . </w>=1'
        ),
        (
            'N o body</w>=1  remembers</w>=3  the</w>=3  s o ng s .</w>=1  E v er y body</w>=1  f er r y m a n , </w>=1  '
            'a n d </w>=1  r i v er </w>=1  n o th i ng .</w>=1'
        ),
        (
            'N o body</w>=1  remembers</w>=3  the</w>=3  s o ng s .</w>=1  E ver y body</w>=1  f er r y m a n , </w>=1  '
            'a n d </w>=1  r i ver </w>=1  n o th i ng .</w>=1'
        ),
        (
            'N o body</w>=1  remembers</w>=3  the</w>=3  s o ng s .</w>=1  E ver y body</w>=1  f er r y m an , </w>=1  '
            'an d </w>=1  r i ver </w>=1  n o th i ng .</w>=1'
        ),
        (
            'No body</w>=1  remembers</w>=3  the</w>=3  s o ng s .</w>=1  E ver y body</w>=1  f er r y m an , </w>=1  '
            'an d </w>=1  r i ver </w>=1  n o th i ng .</w>=1'
        ),
    ],
    [  # 'ba ab ab ba', 6 merges, eow '_'
        'b a _=2  a b _=2',
        'ba _=2  a b _=2',
        'ba_=2  a b _=2',
        'ba_=2  ab _=2',
        'ba_=2  ab_=2',
    ],
    [  # 'zy yz', 6 merges, eow '_'
        'z y _=1  y z _=1',
        'zy _=1  y z _=1',
        'zy_=1  y z _=1',
        'zy_=1  yz _=1',
        'zy_=1  yz_=1',
    ],
    [  # 'xy xy ab ba', 6 merges, eow '_'
        'x y _=2  a b _=1  b a _=1',
        'xy _=2  a b _=1  b a _=1',
        'xy_=2  a b _=1  b a _=1',
        'xy_=2  ab _=1  b a _=1',
        'xy_=2  ab_=1  b a _=1',
        'xy_=2  ab_=1  ba _=1',
        'xy_=2  ab_=1  ba_=1',
    ],
    [  # 'dc dc ab ab cd', 6 merges, eow '_'
        'd c _=2  a b _=2  c d _=1',
        'dc _=2  a b _=2  c d _=1',
        'dc_=2  a b _=2  c d _=1',
        'dc_=2  ab _=2  c d _=1',
        'dc_=2  ab_=2  c d _=1',
        'dc_=2  ab_=2  cd _=1',
        'dc_=2  ab_=2  cd_=1',
    ],
    [  # 'mn nm mn nm op', 6 merges, eow '_'
        'm n _=2  n m _=2  o p _=1',
        'mn _=2  n m _=2  o p _=1',
        'mn_=2  n m _=2  o p _=1',
        'mn_=2  nm _=2  o p _=1',
        'mn_=2  nm_=2  o p _=1',
        'mn_=2  nm_=2  op _=1',
        'mn_=2  nm_=2  op_=1',
    ],
    [  # 'qp pq pq qp', 6 merges, eow '_'
        'q p _=2  p q _=2',
        'qp _=2  p q _=2',
        'qp_=2  p q _=2',
        'qp_=2  pq _=2',
        'qp_=2  pq_=2',
    ],
    [  # 'aaaa aaa aaaaa b', 6 merges, eow '_'
        'a a a a _=1  a a a _=1  a a a a a _=1  b _=1',
        'aa aa _=1  aa a _=1  aa aa a _=1  b _=1',
        'aaaa _=1  aa a _=1  aaaa a _=1  b _=1',
        'aaaa _=1  aa a_=1  aaaa a_=1  b _=1',
        'aaaa_=1  aa a_=1  aaaa a_=1  b _=1',
        'aaaa_=1  aaa_=1  aaaa a_=1  b _=1',
        'aaaa_=1  aaa_=1  aaaaa_=1  b _=1',
    ],
    [  # 'abababa ab aba', 5 merges, eow '_'
        'a b a b a b a _=1  a b _=1  a b a _=1',
        'ab ab ab a _=1  ab _=1  ab a _=1',
        'abab ab a _=1  ab _=1  ab a _=1',
        'abab aba _=1  ab _=1  aba _=1',
        'abab aba_=1  ab _=1  aba_=1',
        'abababa_=1  ab _=1  aba_=1',
    ],
    [  # 'ab ab a', 10 merges, eow '_'
        'a b _=2  a _=1',
        'ab _=2  a _=1',
        'ab_=2  a _=1',
        'ab_=2  a_=1',
    ],
    [  # '', 5 merges, eow '</w>'
        '',
    ],
    [  # 'abc abd', 0 merges, eow '</w>'
        'a b c </w>=1  a b d </w>=1',
    ],
    [  # 'x', 3 merges, eow '#'
        'x #=1',
        'x#=1',
    ],
    [  # 'low lower lowest', 6 merges, eow '#'
        'l o w #=1  l o w e r #=1  l o w e s t #=1',
        'lo w #=1  lo w e r #=1  lo w e s t #=1',
        'low #=1  low e r #=1  low e s t #=1',
        'low #=1  lowe r #=1  lowe s t #=1',
        'low#=1  lowe r #=1  lowe s t #=1',
        'low#=1  lower #=1  lowe s t #=1',
        'low#=1  lower#=1  lowe s t #=1',
    ],
    [  # 'cabana banal nab', 6 merges, eow 'a'
        'c a b a n a a=1  b a n a l a=1  n a b a=1',
        'c a ba n a a=1  ba n a l a=1  n a ba=1',
        'c a ba na a=1  ba na l a=1  na ba=1',
        'c a bana a=1  bana l a=1  na ba=1',
        'ca bana a=1  bana l a=1  na ba=1',
        'cabana a=1  bana l a=1  na ba=1',
        'cabanaa=1  bana l a=1  na ba=1',
    ],
]
_CHAIN_PAIRS = [
    [  # 'Nobody remembers the songs. Everybody re', 20 merges, eow '</w>'
        (
            'N o=1  o b=1  b o=2  o d=2  d y=2  y </w>=2  r e=3  e m=6  m e=3  m b=3  b e=3  e r=6  r s=3  s </w>=3  '
            't h=4  h e=3  e </w>=3  s o=1  o n=1  n g=2  g s=1  s .=1  . </w>=2  E v=1  v e=2  r y=2  y b=1  f e=1  '
            'r r=1  y m=1  m a=1  a n=2  n ,=1  , </w>=1  n d=1  d </w>=1  r i=1  i v=1  r </w>=1  n o=1  o t=1  h i=1  '
            'i n=1  g .=1'
        ),
        (
            'N o=1  o b=1  b o=2  o d=2  d y=2  y </w>=2  r em=3  em em=3  em b=3  b e=3  e r=6  r s=3  s </w>=3  t h=4  '
            'h e=3  e </w>=3  s o=1  o n=1  n g=2  g s=1  s .=1  . </w>=2  E v=1  v e=2  r y=2  y b=1  f e=1  r r=1  '
            'y m=1  m a=1  a n=2  n ,=1  , </w>=1  n d=1  d </w>=1  r i=1  i v=1  r </w>=1  n o=1  o t=1  h i=1  i n=1  '
            'g .=1'
        ),
        (
            'N o=1  o b=1  b o=2  o d=2  d y=2  y </w>=2  r em=3  em em=3  em b=3  b er=3  er s=3  s </w>=3  t h=4  h e=3  '
            'e </w>=3  s o=1  o n=1  n g=2  g s=1  s .=1  . </w>=2  E v=1  v er=2  er y=1  y b=1  f er=1  er r=1  r y=1  '
            'y m=1  m a=1  a n=2  n ,=1  , </w>=1  n d=1  d </w>=1  r i=1  i v=1  er </w>=1  n o=1  o t=1  h i=1  i n=1  '
            'g .=1'
        ),
        (
            'N o=1  o b=1  b o=2  o d=2  d y=2  y </w>=2  r em=3  em em=3  em b=3  b er=3  er s=3  s </w>=3  th e=3  '
            'e </w>=3  s o=1  o n=1  n g=2  g s=1  s .=1  . </w>=2  E v=1  v er=2  er y=1  y b=1  f er=1  er r=1  r y=1  '
            'y m=1  m a=1  a n=2  n ,=1  , </w>=1  n d=1  d </w>=1  r i=1  i v=1  er </w>=1  n o=1  o th=1  th i=1  i n=1  '
            'g .=1'
        ),
        (
            'N o=1  o b=1  b o=2  o d=2  d y=2  y </w>=2  rem em=3  em b=3  b er=3  er s=3  s </w>=3  th e=3  e </w>=3  '
            's o=1  o n=1  n g=2  g s=1  s .=1  . </w>=2  E v=1  v er=2  er y=1  y b=1  f er=1  er r=1  r y=1  y m=1  '
            'm a=1  a n=2  n ,=1  , </w>=1  n d=1  d </w>=1  r i=1  i v=1  er </w>=1  n o=1  o th=1  th i=1  i n=1  g .=1'
        ),
        (
            'N o=1  o b=1  b o=2  o d=2  d y=2  y </w>=2  remem b=3  b er=3  er s=3  s </w>=3  th e=3  e </w>=3  s o=1  '
            'o n=1  n g=2  g s=1  s .=1  . </w>=2  E v=1  v er=2  er y=1  y b=1  f er=1  er r=1  r y=1  y m=1  m a=1  '
            'a n=2  n ,=1  , </w>=1  n d=1  d </w>=1  r i=1  i v=1  er </w>=1  n o=1  o th=1  th i=1  i n=1  g .=1'
        ),
        (
            'N o=1  o b=1  b o=2  o d=2  d y=2  y </w>=2  rememb er=3  er s=3  s </w>=3  th e=3  e </w>=3  s o=1  o n=1  '
            'n g=2  g s=1  s .=1  . </w>=2  E v=1  v er=2  er y=1  y b=1  f er=1  er r=1  r y=1  y m=1  m a=1  a n=2  '
            'n ,=1  , </w>=1  n d=1  d </w>=1  r i=1  i v=1  er </w>=1  n o=1  o th=1  th i=1  i n=1  g .=1'
        ),
        (
            'N o=1  o b=1  b o=2  o d=2  d y=2  y </w>=2  remember s=3  s </w>=3  th e=3  e </w>=3  s o=1  o n=1  n g=2  '
            'g s=1  s .=1  . </w>=2  E v=1  v er=2  er y=1  y b=1  f er=1  er r=1  r y=1  y m=1  m a=1  a n=2  n ,=1  '
            ', </w>=1  n d=1  d </w>=1  r i=1  i v=1  er </w>=1  n o=1  o th=1  th i=1  i n=1  g .=1'
        ),
        (
            'N o=1  o b=1  b o=2  o d=2  d y=2  y </w>=2  remembers </w>=3  th e=3  e </w>=3  s o=1  o n=1  n g=2  g s=1  '
            's .=1  . </w>=2  E v=1  v er=2  er y=1  y b=1  f er=1  er r=1  r y=1  y m=1  m a=1  a n=2  n ,=1  , </w>=1  '
            'n d=1  d </w>=1  r i=1  i v=1  er </w>=1  n o=1  o th=1  th i=1  i n=1  g .=1'
        ),
        (
            'N o=1  o b=1  b o=2  o d=2  d y=2  y </w>=2  th e=3  e </w>=3  s o=1  o n=1  n g=2  g s=1  s .=1  . </w>=2  '
            'E v=1  v er=2  er y=1  y b=1  f er=1  er r=1  r y=1  y m=1  m a=1  a n=2  n ,=1  , </w>=1  n d=1  d </w>=1  '
            'r i=1  i v=1  er </w>=1  n o=1  o th=1  th i=1  i n=1  g .=1'
        ),
        (
            'N o=1  o b=1  b o=2  o d=2  d y=2  y </w>=2  the </w>=3  s o=1  o n=1  n g=2  g s=1  s .=1  . </w>=2  E v=1  '
            'v er=2  er y=1  y b=1  f er=1  er r=1  r y=1  y m=1  m a=1  a n=2  n ,=1  , </w>=1  n d=1  d </w>=1  r i=1  '
            'i v=1  er </w>=1  n o=1  o th=1  th i=1  i n=1  g .=1'
        ),
        (
            'N o=1  o b=1  b o=2  o d=2  d y=2  y </w>=2  s o=1  o n=1  n g=2  g s=1  s .=1  . </w>=2  E v=1  v er=2  '
            'er y=1  y b=1  f er=1  er r=1  r y=1  y m=1  m a=1  a n=2  n ,=1  , </w>=1  n d=1  d </w>=1  r i=1  i v=1  '
            'er </w>=1  n o=1  o th=1  th i=1  i n=1  g .=1'
        ),
        (
            'N o=1  o bo=1  bo d=2  d y=2  y </w>=2  s o=1  o n=1  n g=2  g s=1  s .=1  . </w>=2  E v=1  v er=2  er y=1  '
            'y bo=1  f er=1  er r=1  r y=1  y m=1  m a=1  a n=2  n ,=1  , </w>=1  n d=1  d </w>=1  r i=1  i v=1  '
            'er </w>=1  n o=1  o th=1  th i=1  i n=1  g .=1'
        ),
        (
            'N o=1  o bod=1  bod y=2  y </w>=2  s o=1  o n=1  n g=2  g s=1  s .=1  . </w>=2  E v=1  v er=2  er y=1  '
            'y bod=1  f er=1  er r=1  r y=1  y m=1  m a=1  a n=2  n ,=1  , </w>=1  n d=1  d </w>=1  r i=1  i v=1  '
            'er </w>=1  n o=1  o th=1  th i=1  i n=1  g .=1'
        ),
        (
            'N o=1  o body=1  body </w>=2  s o=1  o n=1  n g=2  g s=1  s .=1  . </w>=2  E v=1  v er=2  er y=1  y body=1  '
            'f er=1  er r=1  r y=1  y m=1  m a=1  a n=2  n ,=1  , </w>=1  n d=1  d </w>=1  r i=1  i v=1  er </w>=1  n o=1  '
            'o th=1  th i=1  i n=1  g .=1'
        ),
        (
            'N o=1  o body</w>=1  s o=1  o n=1  n g=2  g s=1  s .=1  . </w>=2  E v=1  v er=2  er y=1  y body</w>=1  '
            'f er=1  er r=1  r y=1  y m=1  m a=1  a n=2  n ,=1  , </w>=1  n d=1  d </w>=1  r i=1  i v=1  er </w>=1  n o=1  '
            'o th=1  th i=1  i n=1  g .=1'
        ),
        (
            'N o=1  o body</w>=1  s o=1  o ng=1  ng s=1  s .=1  . </w>=2  E v=1  v er=2  er y=1  y body</w>=1  f er=1  '
            'er r=1  r y=1  y m=1  m a=1  a n=2  n ,=1  , </w>=1  n d=1  d </w>=1  r i=1  i v=1  er </w>=1  n o=1  o th=1  '
            'th i=1  i ng=1  ng .=1'
        ),
        (
            'N o=1  o body</w>=1  s o=1  o ng=1  ng s=1  s .</w>=1  E v=1  v er=2  er y=1  y body</w>=1  f er=1  er r=1  '
            'r y=1  y m=1  m a=1  a n=2  n ,=1  , </w>=1  n d=1  d </w>=1  r i=1  i v=1  er </w>=1  n o=1  o th=1  th i=1  '
            'i ng=1  ng .</w>=1'
        ),
        (
            'N o=1  o body</w>=1  s o=1  o ng=1  ng s=1  s .</w>=1  E ver=1  ver y=1  y body</w>=1  f er=1  er r=1  r y=1  '
            'y m=1  m a=1  a n=2  n ,=1  , </w>=1  n d=1  d </w>=1  r i=1  i ver=1  ver </w>=1  n o=1  o th=1  th i=1  '
            'i ng=1  ng .</w>=1'
        ),
        (
            'N o=1  o body</w>=1  s o=1  o ng=1  ng s=1  s .</w>=1  E ver=1  ver y=1  y body</w>=1  f er=1  er r=1  r y=1  '
            'y m=1  m an=1  an ,=1  , </w>=1  an d=1  d </w>=1  r i=1  i ver=1  ver </w>=1  n o=1  o th=1  th i=1  i ng=1  '
            'ng .</w>=1'
        ),
        (
            'No body</w>=1  s o=1  o ng=1  ng s=1  s .</w>=1  E ver=1  ver y=1  y body</w>=1  f er=1  er r=1  r y=1  '
            'y m=1  m an=1  an ,=1  , </w>=1  an d=1  d </w>=1  r i=1  i ver=1  ver </w>=1  n o=1  o th=1  th i=1  i ng=1  '
            'ng .</w>=1'
        ),
    ],
    [  # 'ba ab ab ba', 6 merges, eow '_'
        'b a=2  a _=2  a b=2  b _=2',
        'ba _=2  a b=2  b _=2',
        'a b=2  b _=2',
        'ab _=2',
        '',
    ],
    [  # 'zy yz', 6 merges, eow '_'
        'z y=1  y _=1  y z=1  z _=1',
        'zy _=1  y z=1  z _=1',
        'y z=1  z _=1',
        'yz _=1',
        '',
    ],
    [  # 'xy xy ab ba', 6 merges, eow '_'
        'x y=2  y _=2  a b=1  b _=1  b a=1  a _=1',
        'xy _=2  a b=1  b _=1  b a=1  a _=1',
        'a b=1  b _=1  b a=1  a _=1',
        'ab _=1  b a=1  a _=1',
        'b a=1  a _=1',
        'ba _=1',
        '',
    ],
    [  # 'dc dc ab ab cd', 6 merges, eow '_'
        'd c=2  c _=2  a b=2  b _=2  c d=1  d _=1',
        'dc _=2  a b=2  b _=2  c d=1  d _=1',
        'a b=2  b _=2  c d=1  d _=1',
        'ab _=2  c d=1  d _=1',
        'c d=1  d _=1',
        'cd _=1',
        '',
    ],
    [  # 'mn nm mn nm op', 6 merges, eow '_'
        'm n=2  n _=2  n m=2  m _=2  o p=1  p _=1',
        'mn _=2  n m=2  m _=2  o p=1  p _=1',
        'n m=2  m _=2  o p=1  p _=1',
        'nm _=2  o p=1  p _=1',
        'o p=1  p _=1',
        'op _=1',
        '',
    ],
    [  # 'qp pq pq qp', 6 merges, eow '_'
        'q p=2  p _=2  p q=2  q _=2',
        'qp _=2  p q=2  q _=2',
        'p q=2  q _=2',
        'pq _=2',
        '',
    ],
    [  # 'aaaa aaa aaaaa b', 6 merges, eow '_'
        'a a=9  a _=3  b _=1',
        'aa aa=2  aa _=1  aa a=2  a _=2  b _=1',
        'aaaa _=1  aa a=1  a _=2  aaaa a=1  b _=1',
        'aaaa _=1  aa a_=1  aaaa a_=1  b _=1',
        'aa a_=1  aaaa a_=1  b _=1',
        'aaaa a_=1  b _=1',
        'b _=1',
    ],
    [  # 'abababa ab aba', 5 merges, eow '_'
        'a b=5  b a=4  a _=2  b _=1',
        'ab ab=2  ab a=2  a _=2  ab _=1',
        'abab ab=1  ab a=2  a _=2  ab _=1',
        'abab aba=1  aba _=2  ab _=1',
        'abab aba_=1  ab _=1',
        'ab _=1',
    ],
    [  # 'ab ab a', 10 merges, eow '_'
        'a b=2  b _=2  a _=1',
        'ab _=2  a _=1',
        'a _=1',
        '',
    ],
    [  # '', 5 merges, eow '</w>'
        '',
    ],
    [  # 'abc abd', 0 merges, eow '</w>'
        'a b=2  b c=1  c </w>=1  b d=1  d </w>=1',
    ],
    [  # 'x', 3 merges, eow '#'
        'x #=1',
        '',
    ],
    [  # 'low lower lowest', 6 merges, eow '#'
        'l o=3  o w=3  w #=1  w e=2  e r=1  r #=1  e s=1  s t=1  t #=1',
        'lo w=3  w #=1  w e=2  e r=1  r #=1  e s=1  s t=1  t #=1',
        'low #=1  low e=2  e r=1  r #=1  e s=1  s t=1  t #=1',
        'low #=1  lowe r=1  r #=1  lowe s=1  s t=1  t #=1',
        'lowe r=1  r #=1  lowe s=1  s t=1  t #=1',
        'lower #=1  lowe s=1  s t=1  t #=1',
        'lowe s=1  s t=1  t #=1',
    ],
    [  # 'cabana banal nab', 6 merges, eow 'a'
        'c a=1  a b=2  b a=3  a n=2  n a=3  a a=1  a l=1  l a=1',
        'c a=1  a ba=2  ba n=2  n a=3  a a=1  a l=1  l a=1',
        'c a=1  a ba=1  ba na=2  na a=1  na l=1  l a=1  na ba=1',
        'c a=1  a bana=1  bana a=1  bana l=1  l a=1  na ba=1',
        'ca bana=1  bana a=1  bana l=1  l a=1  na ba=1',
        'cabana a=1  bana l=1  l a=1  na ba=1',
        'bana l=1  l a=1  na ba=1',
    ],
]
_REFUSED_WORDS = {
    ('c d', '</w>'): 'c </w>=1  d </w>=1',
    ('c d', ''): 'ValueError',
}
# the pair counts of CORPUS's word types (default eow)
_CORPUS_PAIRS = (
    'h a=3063  a t=6521  t h=50566  h </w>=11584  p u=1424  u v=280  v o=1313  o h=163  a l=3698  l </w>=11508  '
    'l a=1920  h w=614  w u=1111  u r=4916  r </w>=15514  h u=15431  u n=23259  n j=16041  j o=22511  o t=20842  '
    'h l=15999  l u=20230  u </w>=26587  j u=3518  u w=1028  w e=2336  e </w>=8649  p o=9037  o s=14951  '
    's j=15003  j i=9846  i s=12561  s n=9925  n u=11100  u ,=687  , </w>=2980  v u=3328  u t=6867  h g=2443  '
    'g i=7944  i r=10861  t u=2227  h h=5171  h e=4472  e s=11097  s m=863  m i=1869  s ?=218  ? </w>=3008  '
    's e=4185  e c=3097  c e=3782  e t=11768  m a=1507  a r=4693  r t=1078  o l=5178  l e=1903  c o=1051  s !=221  '
    '! </w>=3011  G u=112  u s=4382  s v=630  s o=11243  o g=5030  p e=7291  e n=9665  n s=3988  o n=7232  '
    'n </w>=18600  f u=2279  f a=1145  a d=132  d a=2908  a n=5423  n ;=485  ; </w>=2928  g e=2857  n b=1531  '
    'b u=1939  u l=6282  n l=869  l i=1035  s </w>=8167  f i=4323  t e=8169  e r=8615  t o=2839  s g=1037  '
    'f e=2707  h k=3615  k e=3779  n g=622  g o=1328  a b=180  e g=1110  g u=3224  u z=1027  z u=2259  m e=3633  '
    'r c=270  c i=1335  i ?=74  P o=591  z a=2158  r n=2660  n a=2214  a s=6049  k a=2643  k u=2552  w i=1523  '
    'i h=278  s r=543  r a=1703  d i=2534  r f=1038  l l=1939  u !=712  H e=125  e p=202  p a=1156  a </w>=4462  '
    'l f=468  f o=2203  e .=449  . </w>=5999  a m=157  m o=1620  o </w>=8492  n f=300  l o=3525  l r=834  '
    'r u=1326  i t=6538  r p=2804  e ;=201  L a=82  s l=1200  e l=5473  o .=436  H u=1077  j e=2419  r s=314  '
    's u=1815  h ;=291  w a=1712  s a=2015  h .=610  F i=262  s f=847  r i=1320  i n=6832  l v=431  v a=1384  '
    'k i=3959  i d=1686  d e=2758  h m=2104  n i=2330  i l=4479  l ?=281  L o=146  s h=393  n c=428  c u=1188  '
    'u b=304  b e=2164  a c=258  n .=971  D a=162  w o=1664  o r=4038  r o=965  h s=760  h o=1556  j a=1162  '
    'l b=559  b a=1890  l j=338  l t=368  t i=1588  l g=677  u ?=700  o k=135  l h=315  s s=2035  o d=1526  '
    'u ;=654  r m=829  i </w>=2352  z o=1941  n k=347  c a=1529  s i=798  l c=618  s d=625  u .=1332  F u=84  '
    'l w=597  o ?=224  D e=34  e b=206  b i=1552  i k=217  k o=1535  n o=2734  t a=1757  r w=559  l !=280  '
    'R e=132  h i=1757  h ?=294  h t=480  l p=402  s p=364  r ?=380  i .=129  n e=2174  e m=419  v i=829  i p=196  '
    'p i=1203  z e=992  K a=120  h f=438  h p=595  r e=3776  o b=251  l .=584  r r=716  h n=385  o p=392  l s=557  '
    's c=411  l m=539  d u=1961  l n=685  o m=658  r z=674  e !=225  n n=695  W u=28  h c=688  n t=650  i w=307  '
    'r g=435  r h=290  n ,=486  n d=468  u m=101  F e=134  e w=565  r b=755  m u=1000  h z=257  r !=370  g a=866  '
    'r .=801  i m=206  u h=126  o !=214  u d=346  d o=1025  Z o=105  u j=331  r ;=378  v e=1696  s k=1759  K o=58  '
    'J u=187  z i=1062  r v=320  V i=28  n z=1341  r k=377  V e=71  r d=555  h !=299  S o=361  n w=201  P e=295  '
    'o j=96  a h=277  h r=1820  a .=241  D i=42  a j=199  n !=526  e f=87  h ,=299  s w=266  K i=166  n v=640  '
    'l z=504  o ;=243  o c=249  s ;=204  C e=34  r ,=381  V u=193  h d=485  K u=134  e ,=257  u c=112  e j=174  '
    'Z i=34  s z=427  r l=259  l ;=301  o w=253  a g=124  a ?=125  u g=185  l d=401  h v=565  T e=548  s b=230  '
    'b o=1255  s .=446  r j=312  e h=153  i ,=56  J e=133  W e=51  L u=199  P u=59  n ?=517  M e=74  V o=63  '
    'n r=571  D u=69  h j=312  R i=40  o ,=200  i g=126  N o=121  B i=46  s ,=200  R a=41  h b=458  Z u=41  '
    'u p=134  e d=197  S e=219  n m=340  o v=112  n h=170  n p=365  B a=104  a k=174  i !=60  l ,=299  i j=200  '
    's t=389  o f=181  u f=76  i z=85  o z=277  C i=33  a ,=115  e k=159  i c=284  T o=110  C u=37  F a=30  '
    'J a=34  T i=69  J i=52  a ;=118  a p=203  e z=112  l k=419  N u=76  G e=67  G i=45  S i=29  B o=41  G a=44  '
    'W a=75  i v=209  B u=81  H a=46  T u=67  S a=33  T a=52  G o=25  a f=130  H o=68  V a=57  a v=173  M i=88  '
    'e ?=195  M o=27  K e=34  F o=118  N i=53  a w=224  i b=88  R o=32  R u=23  W o=60  M u=48  Z a=71  e v=101  '
    'S u=65  N e=52  C a=45  a !=104  a z=45  L i=33  u k=64  P a=32  M a=37  Z e=24  J o=39  i ;=53  N a=28  '
    'D o=36  B e=28  i f=66  W i=57  C o=27  H i=27  L e=28  P i=32'
)
# the segmentations the tokenizer tests lead to: (word, merge list, eow) -> tokens
_SEGMENTS = {
    ('The', 'TOK_MERGES', '</w>'): ['T', 'h', 'e</w>'],
    ('ferryman', 'TOK_MERGES', '</w>'): ['ferryman', '</w>'],
    ('counts', 'TOK_MERGES', '</w>'): ['co', 'unt', 's</w>'],
    ('the', 'TOK_MERGES', '</w>'): ['the</w>'],
    ('boats;', 'TOK_MERGES', '</w>'): ['bo', 'at', 's', ';', '</w>'],
    ('nobody', 'TOK_MERGES', '</w>'): ['no', 'bo', 'd', 'y</w>'],
    ('pays.', 'TOK_MERGES', '</w>'): ['p', 'a', 'y', 's.</w>'],
    ('rows', 'TOK_MERGES', '</w>'): ['ro', 'w', 's</w>'],
    ('home,', 'TOK_MERGES', '</w>'): ['h', 'o', 'm', 'e', ',</w>'],
    ('singing.', 'TOK_MERGES', '</w>'): ['s', 'ing', 'ing', '.</w>'],
    ('Queen', 'TOK_MERGES', '</w>'): ['Q', 'u', 'e', 'e', 'n', '</w>'],
    ('ab', 'EOW_MERGES', '#'): ['ab', '#'],
    ('a#b', 'EOW_MERGES', '#'): ['a', '#', 'b', '#'],
    ('banana', 'TRAIN_MERGES', '_'): ['ban', 'ana_'],
    ('quiz', 'TRAIN_MERGES', '_'): ['q', 'u', 'i', 'z', '_'],
}
# </known answers>
# fmt: on


def _items(text: str) -> dict:
    """``"l o w _=5  n e w _=2"`` as ``{("l", "o", "w", "_"): 5, ("n", "e", "w", "_"): 2}``."""
    pairs = (item.rsplit("=", 1) for item in text.split("  ") if item)
    return {tuple(symbols.split(" ")): int(n) for symbols, n in pairs}


def _state(words: dict) -> frozenset | None:
    try:
        return frozenset(words.items())
    except (AttributeError, TypeError):  # not a dict of hashable symbol tuples: the student's own function answers
        return None


_KNOWN: dict[str, dict] = {
    "word_frequencies": {},
    "count_pairs": {},
    "merge_pair": {},
    "train_bpe": {},
    "bpe_segment": {},
}
for (_text, _n, _eow), _merges, _states, _counts in zip(TRAINED, _CHAIN_MERGES, _CHAIN_STATES, _CHAIN_PAIRS):
    _words = [_items(s) for s in _states]
    _KNOWN["word_frequencies"][_text, _eow] = _words[0]
    for _k, (_w, _c) in enumerate(zip(_words, _counts)):
        if _w:  # no words, no pairs: left to the student's count_pairs, whose own tests ask it
            _KNOWN["count_pairs"][_state(_w)] = _items(_c)
        if _k < len(_merges):
            _KNOWN["merge_pair"][_state(_w), _merges[_k]] = _words[_k + 1]
for _text, _eow in REFUSED:
    _refused = _REFUSED_WORDS[_text, _eow]
    _KNOWN["word_frequencies"][_text, _eow] = _refused if _refused == "ValueError" else _items(_refused)
_KNOWN["word_frequencies"][CORPUS, "</w>"] = {tuple(word) + ("</w>",): n for word, n in CORPUS_WORDS.items()}
_KNOWN["count_pairs"][_state(_KNOWN["word_frequencies"][CORPUS, "</w>"])] = _items(_CORPUS_PAIRS)
_KNOWN["train_bpe"][TRAIN_TEXT, 5, "_"] = _TRAIN_MERGES
for (_word, _merges_name, _eow), _tokens in _SEGMENTS.items():
    _KNOWN["bpe_segment"][_word, _merges_name, _eow] = _tokens
_MERGE_LISTS = {"TOK_MERGES": TOK_MERGES, "EOW_MERGES": EOW_MERGES, "TRAIN_MERGES": _TRAIN_MERGES}


# The known inputs that are refused (their answer is "ValueError"), by function, with the message.
_REFUSALS = {
    name: {
        key: f"{name}: this input is refused (a known answer)" for key, known in table.items() if known == "ValueError"
    }
    for name, table in _KNOWN.items()
}
# Each known merge list by its pairs.
_MERGE_NAMES = {tuple(merges): name for name, merges in _MERGE_LISTS.items()}


def _answer(name, key, own, *args, **kwargs):
    """The known answer for ``key`` (a fresh copy), else what the student's own function says."""
    if key is not None:
        refused = _REFUSALS[name].get(key)
        if refused is not None:
            raise ValueError(refused)
        known = _KNOWN[name].get(key)
        if known is not None:
            return type(known)(known)
    return own(*args, **kwargs)


def _merges_name(merges):
    """The name of the known merge list that ``merges`` (a list or tuple of pairs) holds, or None."""
    if _kind(merges, _SEQUENCES) is None:
        return None
    pairs = tuple(tuple(m) for m in merges)
    try:
        return _MERGE_NAMES.get(pairs)
    except TypeError:  # symbols that cannot be hashed: no known list
        return None


def _known_word_frequencies(own):
    def word_frequencies(text, eow="</w>"):
        return _answer("word_frequencies", (text, eow), own, text, eow)

    return word_frequencies


def _known_count_pairs(own):
    def count_pairs(word_freqs):
        return _answer("count_pairs", _state(word_freqs), own, word_freqs)

    return count_pairs


def _known_merge_pair(own):
    def merge_pair(word_freqs, pair):
        state = _state(word_freqs)
        key = None if state is None or _kind(pair, _SEQUENCES) is None else (state, tuple(pair))
        return _answer("merge_pair", key, own, word_freqs, pair)

    return merge_pair


def _known_train_bpe(own):
    def train_bpe(text, num_merges, eow="</w>"):
        return _answer("train_bpe", (text, num_merges, eow), own, text, num_merges, eow)

    return train_bpe


def _known_bpe_segment(own):
    def bpe_segment(word, merges, eow="</w>"):
        return _answer("bpe_segment", (word, _merges_name(merges), eow), own, word, merges, eow)

    return bpe_segment


_STAND_INS = {
    "word_frequencies": _known_word_frequencies,
    "count_pairs": _known_count_pairs,
    "merge_pair": _known_merge_pair,
    "train_bpe": _known_train_bpe,
    "bpe_segment": _known_bpe_segment,
}


@contextlib.contextmanager
def _known(ns, *names):
    """While the block runs, the named functions answer the known inputs from the tables."""
    scope = ns._names
    saved = {name: scope.get(name) for name in names}
    for name in names:
        own = scope.get(name)
        scope[name] = _STAND_INS[name](_missing(name) if own is None else own)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                scope.pop(name, None)
            else:
                scope[name] = value
