"""Tests of the reference solutions of stage 02_bpe.

The incremental learner is checked against a plain recount-everything learner
written here, and the segmenter against Hugging Face ``tokenizers``.

A note on the ``tokenizers`` cross-check: its ``BPE(end_of_word_suffix=eow)`` glues
the suffix onto the last character of a word (``lower`` starts as ``l o w e r</w>``),
whereas the course keeps ``eow`` as a separate symbol (``l o w e r </w>``), so the
same merge list segments differently there (``(e, r)`` never applies word-finally).
The faithful comparison gives ``tokenizers`` the course's own symbols: each word
with a one-character ``eow`` that never occurs in the text written after it, split
by a ``WhitespaceSplit`` pre-tokenizer, and a ``BPE`` model without a suffix.
"""

import collections
import inspect
import random
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from support import SHAKESPEARE

from autograder.course import get_stage
from autograder.engine.suites import exec_suite, importable_as_public
from autograder.kit.check_cell import run_public
from solutions.bpe import (
    BPETokenizer,
    bpe_segment,
    byte_bpe_decode,
    byte_bpe_encode,
    count_pairs,
    merge_pair,
    train_bpe,
    train_byte_bpe,
    word_frequencies,
)

LECTURE_TEXT = "low " * 5 + "lowest " * 2 + "newer " * 6 + "wider " * 3 + "new " * 2
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


def naive_train_bpe(text: str, num_merges: int, eow: str = "</w>") -> list[tuple[str, str]]:
    """The plain learner: recount every pair of every word after every merge."""
    words: dict[tuple[str, ...], int] = {}
    for w in text.split():
        key = (*w, eow)
        words[key] = words.get(key, 0) + 1
    merges = []
    for _ in range(num_merges):
        counts: collections.Counter = collections.Counter()
        for symbols, freq in words.items():  # insertion order: first met in the scan
            for pair in zip(symbols, symbols[1:]):
                counts[pair] += freq
        if not counts:
            break
        best = max(counts, key=counts.__getitem__)  # the first of the maximal ones
        merges.append(best)
        merged = {}
        for symbols, freq in words.items():
            out, i = [], 0
            while i < len(symbols):
                if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == best:
                    out.append(best[0] + best[1])
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            merged[tuple(out)] = freq
        words = merged
    return merges


def segment_in_order(word: str, merges: list[tuple[str, str]], eow: str) -> list[str]:
    """The segmenter written literally: every merge in turn, over the whole word."""
    symbols = [*word, eow]
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


def random_text(rng: random.Random) -> str:
    alphabet = rng.choice(["ab", "abc", "aab", "abcd", "xyzzy", "lowernst"])
    words = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 7))) for _ in range(rng.randint(0, 60))]
    seps = [rng.choice([" ", "  ", "\n", "\t "]) for _ in words]
    return "".join(w + s for w, s in zip(words, seps))


@pytest.fixture(scope="module")
def shakespeare() -> str:
    if not SHAKESPEARE.exists():
        pytest.skip(f"{SHAKESPEARE} is not available")
    return SHAKESPEARE.read_text(encoding="utf-8")


# --- the lecture's worked example -------------------------------------------------


def test_lecture_worked_example():
    merges = train_bpe(LECTURE_TEXT, 8, eow="_")
    assert merges == LECTURE_MERGES
    assert bpe_segment("lower", merges, eow="_") == ["low", "er_"]


def test_lecture_example_step_by_step_with_the_small_functions():
    freqs = word_frequencies(LECTURE_TEXT, eow="_")
    assert list(freqs.values()) == [5, 2, 6, 3, 2]
    assert list(freqs)[0] == ("l", "o", "w", "_")
    for expected in LECTURE_MERGES:
        counts = count_pairs(freqs)
        best = max(counts, key=counts.__getitem__)
        assert best == expected
        freqs = merge_pair(freqs, best)
    assert freqs[("newer_",)] == 6 and freqs[("low_",)] == 5


# --- the small functions ------------------------------------------------------------


def test_word_frequencies_order_and_eow():
    freqs = word_frequencies("b a\n\tb  c", eow="</w>")
    assert list(freqs.items()) == [(("b", "</w>"), 2), (("a", "</w>"), 1), (("c", "</w>"), 1)]
    assert word_frequencies("   ") == {}
    with pytest.raises(ValueError, match="eow"):
        word_frequencies("a b", eow="")


def test_count_pairs_counts_overlaps_and_weights():
    counts = count_pairs({("a", "a", "a", "_"): 3})
    assert counts == {("a", "a"): 6, ("a", "_"): 3}


def test_merge_pair_is_non_overlapping_left_to_right():
    assert merge_pair({("a", "a", "a", "_"): 1}, ("a", "a")) == {("aa", "a", "_"): 1}
    assert merge_pair({("a", "a", "a", "a", "_"): 2}, ("a", "a")) == {("aa", "aa", "_"): 2}
    original = {("x", "y", "_"): 1}
    assert merge_pair(original, ("x", "y")) == {("xy", "_"): 1}
    assert original == {("x", "y", "_"): 1}  # the input is untouched
    with pytest.raises(ValueError, match="pair"):
        merge_pair(original, ("x",))


def test_train_bpe_tie_goes_to_the_pair_met_first():
    # every pair occurs once: the first pair of the first word wins, then the scan goes on
    assert train_bpe("ba ab", 1, eow="_") == [("b", "a")]
    assert train_bpe("cd ab", 1, eow="_") == [("c", "d")]
    # a tie decided inside a later word, after an earlier merge changed the counts
    assert train_bpe("xy xy ab ba", 3, eow="_") == naive_train_bpe("xy xy ab ba", 3, eow="_")


def test_train_bpe_stops_when_no_pair_is_left():
    merges = train_bpe("ab ab", 10, eow="_")
    assert merges == [("a", "b"), ("ab", "_")]
    assert train_bpe("", 5) == []
    assert train_bpe("abc", 0) == []


def test_train_bpe_rejects_bad_arguments():
    with pytest.raises(ValueError, match="num_merges"):
        train_bpe("a b", -1)
    with pytest.raises(ValueError, match="eow"):
        train_bpe("a b", 3, eow="")


PLAIN_LOOP = """
def train_bpe(text, num_merges, eow="</w>"):
    if num_merges < 0:
        raise ValueError("num_merges must not be negative")
    words = word_frequencies(text, eow)
    merges = []
    while len(merges) < num_merges:
        counts = count_pairs(words)
        if not counts:
            break
        best = max(counts, key=counts.get)
        merges.append(best)
        words = merge_pair(words, best)
    return merges
"""


def test_public_train_bpe_tests_do_not_depend_on_the_other_functions():
    """A student's plain train_bpe calls their count_pairs and merge_pair; mistakes there
    must not cost train_bpe's public points (the notebook promises each question is
    graded on its own)."""
    public = [c for c in get_stage("02_bpe").tests().cases if c.public]
    names = {"word_frequencies": word_frequencies}
    names["count_pairs"] = lambda word_freqs: {p: 1 for w in word_freqs for p in zip(w, w[1:])}  # word counts ignored
    names["merge_pair"] = lambda word_freqs, pair: {tuple(sorted(w)): n for w, n in word_freqs.items()}  # nonsense
    exec(PLAIN_LOOP, names)
    assert names["train_bpe"](LECTURE_TEXT, 8, eow="_") != LECTURE_MERGES  # run directly, the mistakes show
    passed, report, _ = run_public(public, "train_bpe", names)
    assert passed, report
    assert not run_public(public, "count_pairs", names)[0]


# --- incremental learner == plain recount learner ------------------------------------


@pytest.mark.parametrize("seed", range(40))
def test_incremental_equals_naive_on_random_texts(seed):
    rng = random.Random(seed)
    text = random_text(rng)
    eow = rng.choice(["_", "</w>", "a"])  # "a" also occurs in the words
    k = rng.randint(0, 80)
    assert train_bpe(text, k, eow=eow) == naive_train_bpe(text, k, eow=eow)


def test_incremental_equals_naive_on_shakespeare(shakespeare):
    text = shakespeare[:50_000]
    assert train_bpe(text, 80) == naive_train_bpe(text, 80)


# --- the segmenter ----------------------------------------------------------------


def test_bpe_segment_equals_applying_merges_in_order():
    rng = random.Random(7)
    for _ in range(30):
        text = random_text(rng)
        merges = train_bpe(text, rng.randint(0, 40), eow="_")
        for word in set(text.split()) | {"abba", "zzz", "a"}:
            assert bpe_segment(word, merges, eow="_") == segment_in_order(word, merges, "_")


def test_bpe_segment_with_hand_made_merges_and_repeated_pairs():
    merges = [("a", "a"), ("b", "c"), ("aa", "a"), ("a", "bc"), ("aa", "bc"), ("aa", "a")]
    for word in ["aaaaa", "aabc", "aaabc", "abcaa", "aaaaaaa", "bcbc"]:
        assert bpe_segment(word, merges, eow="_") == segment_in_order(word, merges, "_")


def test_bpe_segment_rejects_bad_words():
    with pytest.raises(ValueError, match="word"):
        bpe_segment("", LECTURE_MERGES, eow="_")
    with pytest.raises(ValueError, match="word"):
        bpe_segment("low er", LECTURE_MERGES, eow="_")


# --- the tokenizer ----------------------------------------------------------------


def test_tokenizer_vocab_order():
    tok = BPETokenizer(LECTURE_MERGES, eow="_")
    base = ["e", "l", "n", "o", "r", "w"]  # the single characters of the merges
    merged = ["er", "er_", "ne", "new", "lo", "low", "newer_", "low_"]
    assert list(tok.vocab) == base + ["_"] + merged
    assert list(tok.vocab.values()) == list(range(len(tok.vocab)))
    with_alphabet = BPETokenizer(LECTURE_MERGES, eow="_", alphabet="zyxlowerdin")
    assert list(with_alphabet.vocab) == sorted(set("zyxlowerdin")) + ["_"] + merged


def test_tokenizer_train_uses_the_text_characters():
    tok = BPETokenizer.train(LECTURE_TEXT + " q", 8, eow="_")
    assert tok.merges == LECTURE_MERGES
    assert list(tok.vocab)[:10] == ["d", "e", "i", "l", "n", "o", "q", "r", "s", "t"]
    assert tok.decode(tok.encode("lower newest  q")) == "lower newest q"
    with pytest.raises(ValueError, match="'Z'"):
        tok.encode("loZ")


@pytest.fixture(scope="module")
def trained(shakespeare):
    return BPETokenizer.train(shakespeare[:50_000], 300, eow="_")


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_tokenizer_round_trip_normalises_whitespace(trained, data):
    alphabet = sorted(c for c in trained.vocab if len(c) == 1 and c != "_") + [" ", "\n", "\t", "\r"]
    s = data.draw(st.text(alphabet=alphabet, max_size=200))
    ids = trained.encode(s)
    assert all(isinstance(i, int) for i in ids)
    assert trained.decode(ids) == " ".join(s.split())
    assert trained.decode(torch.tensor(ids, dtype=torch.long)) == " ".join(s.split())


def test_tokenizer_matches_hugging_face_tokenizers(shakespeare, trained):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers.models import BPE
    from tokenizers.pre_tokenizers import WhitespaceSplit

    eow = "_"
    assert eow not in shakespeare
    hf = tokenizers.Tokenizer(BPE(vocab=dict(trained.vocab), merges=list(trained.merges)))
    hf.pre_tokenizer = WhitespaceSplit()

    alphabet = set(trained.vocab)
    held_out = [w for w in shakespeare[50_000:70_000].split() if set(w) <= alphabet]
    assert len(held_out) > 3000
    ours = [t for w in held_out for t in bpe_segment(w, trained.merges, eow=eow)]
    theirs = hf.encode(" ".join(w + eow for w in held_out))
    assert theirs.tokens == ours
    assert theirs.ids == trained.encode(" ".join(held_out))


def test_hugging_face_end_of_word_suffix_is_a_different_model():
    # documents why the cross-check above does not use end_of_word_suffix
    from tokenizers.models import BPE

    tok = BPETokenizer(LECTURE_MERGES, eow="_")
    vocab = dict(tok.vocab) | {c + "_": len(tok.vocab) + i for i, c in enumerate("delinorw")}
    hf = BPE(vocab=vocab, merges=LECTURE_MERGES, end_of_word_suffix="_")
    assert [t.value for t in hf.tokenize("lower")] == ["low", "e", "r_"]
    assert bpe_segment("lower", LECTURE_MERGES, eow="_") == ["low", "er_"]


# --- byte-level BPE ---------------------------------------------------------------

BYTE_CORPUS = (
    "the cat sat on the mat; the hat is flat. "
    "naïve café, crème brûlée — 日本語のテキスト, 한국어, Ελληνικά. "
    "emoji: 👍🏽 👨‍👩‍👧 🇬🇧 and combining marks: e\u0301 a\u0308 n\u0303 "
) * 4


@pytest.fixture(scope="module")
def byte_merges():
    return train_byte_bpe(BYTE_CORPUS, 256 + 120)


def test_train_byte_bpe_small_example_and_ties():
    text = "aaabdaaabac"
    merges = train_byte_bpe(text, 256 + 10)
    assert merges[:2] == [(97, 97), (256, 97)]  # "aa", then "aa"+"a" (tie with "ab": met first)
    assert train_byte_bpe("abcd", 257) == [(97, 98)]  # all tied: the first pair
    assert train_byte_bpe("x", 300) == []
    assert len(train_byte_bpe(text, 256 + 100)) < 100  # stops when one id is left
    with pytest.raises(ValueError, match="vocab_size"):
        train_byte_bpe(text, 255)


def test_train_byte_bpe_equals_a_plain_learner(byte_merges):
    ids = list(BYTE_CORPUS.encode("utf-8"))
    for r, pair in enumerate(byte_merges):
        counts = collections.Counter(zip(ids, ids[1:]))
        assert pair == max(counts, key=counts.__getitem__)
        out, i = [], 0
        while i < len(ids):
            if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
                out.append(256 + r)
                i += 2
            else:
                out.append(ids[i])
                i += 1
        ids = out
    assert byte_bpe_encode(BYTE_CORPUS, byte_merges) == ids  # by rank == in training order


def test_byte_bpe_compresses_and_rejects_bad_input(byte_merges):
    assert len(byte_bpe_encode(BYTE_CORPUS, byte_merges)) < len(BYTE_CORPUS.encode("utf-8")) // 3
    assert byte_bpe_decode([0xE6, 0x97], []) == "\ufffd"  # a truncated 3-byte sequence
    assert byte_bpe_decode(torch.tensor([104, 105]), []) == "hi"
    with pytest.raises(ValueError, match="id"):
        byte_bpe_decode([256 + len(byte_merges)], byte_merges)
    with pytest.raises(ValueError, match="merge"):
        byte_bpe_encode("ab", [(97, 300)])


@settings(max_examples=150, deadline=None)
@given(st.text())
def test_byte_bpe_round_trips_any_text(byte_merges, s):
    ids = byte_bpe_encode(s, byte_merges)
    assert all(0 <= i < 256 + len(byte_merges) for i in ids)
    assert byte_bpe_decode(ids, byte_merges) == s


EMOJI = ["🙂", "👍🏽", "👨\u200d👩\u200d👧", "🇬🇧", "☕\ufe0f", "🏳️\u200d🌈"]
COMBINING = st.characters(categories=["Mn", "Me"])  # combining marks, alone or stacked
UNICODE_PIECES = st.one_of(st.sampled_from(EMOJI), COMBINING, st.characters(), st.sampled_from(list("ae日 \n")))


@settings(max_examples=150, deadline=None)
@given(st.lists(UNICODE_PIECES, max_size=40).map("".join))
def test_byte_bpe_round_trips_emoji_and_combining_marks(byte_merges, s):
    assert byte_bpe_decode(byte_bpe_encode(s, byte_merges), byte_merges) == s


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab🙂e\u0301 日")), max_size=60))
def test_byte_bpe_round_trips_with_merges_learned_from_the_text(s):
    merges = train_byte_bpe(s, 256 + 30)
    assert byte_bpe_decode(byte_bpe_encode(s, merges), merges) == s


# --- the hidden suite's known answers ------------------------------------------------
#
# While a hidden test of one question runs, the stage's other functions answer the inputs
# that test leads to from tables written once with the reference (see hidden.py). These
# tests prove the tables are the reference's answers, that none answers an input of its
# own function's tests, and that a plain learner built on broken helpers still earns the
# train_bpe and tokenizer points.

HIDDEN = Path(__file__).with_name("hidden.py")
BLOCK_START, BLOCK_END = "# <known answers>\n", "# </known answers>\n"


def _hidden_inputs(whole: bool = False) -> dict:
    """The hidden suite's module-level names, from its source up to the known answers (the
    ``whole`` source with ``whole``); its ``from public import ...`` finds this stage's public
    suite, not whichever stage's pytest put first on sys.path."""
    source = HIDDEN.read_text(encoding="utf-8")
    source = source if whole else source[: source.index(BLOCK_START)]
    names: dict = {"__name__": "hidden_inputs"}
    public = HIDDEN.with_name("public.py")
    exec_suite(public.read_text(encoding="utf-8"), str(public), "test_bpe_public_suite")
    with importable_as_public(sys.modules["test_bpe_public_suite"]):
        exec(compile(source, str(HIDDEN), "exec"), names)
    return names


def _items_text(mapping: dict) -> str:
    return "  ".join(f"{' '.join(symbols)}={n}" for symbols, n in mapping.items())


def _literal(name: str, value, width: int = 110) -> str:
    """``name = value`` as Python source, long lists and strings wrapped at ``width``."""
    if isinstance(value, str):
        chunks, line = [], ""
        for item in value.split("  "):
            piece = item + "  "
            if line and len(line) + len(piece) > width:
                chunks.append(line)
                line = ""
            line += piece
        chunks.append(line[:-2] if line.endswith("  ") else line)
        if len(chunks) == 1:
            return f"{name}{repr(chunks[0])}"
        return f"{name}(\n" + "".join(f"    {chunk!r}\n" for chunk in chunks) + ")"
    if isinstance(value, list) and value and len(repr(value)) > width:
        lines, line = [], ""
        for item in value:
            piece = repr(item) + ", "
            if line and len(line) + len(piece) > width:
                lines.append(line.rstrip())
                line = ""
            line += piece
        lines.append(line.rstrip())
        return f"{name}[\n" + "".join(f"    {line}\n" for line in lines) + "]"
    return f"{name}{value!r}"


def render_known_answers(h: dict | None = None) -> str:
    """The known-answers block of hidden.py, computed with the reference from its inputs."""
    h = _hidden_inputs() if h is None else h
    out = []
    learned = {
        "PASSAGE_MERGES": train_bpe(h["PASSAGE"], 80, eow="_"),
        "GENERATED_MERGES": train_bpe(h["GENERATED"], 150),
        "RUN_MERGES": train_bpe("aaaa aaa aaaaaaa ab abab", 8, eow="_"),
        "HASH_MERGES": train_bpe("lowest newest widest slowest", 10, eow="#"),
        "TOK_MERGES": train_bpe(h["PASSAGE"], 40),
        "BYTE_MERGES": train_byte_bpe(h["MULTILINGUAL"], 256 + 60),
        "_TRAIN_MERGES": train_bpe(h["TRAIN_TEXT"], 5, eow="_"),
    }
    for name, value in learned.items():
        out.append(_literal(f"{name} = ", value))
    merges_of, states_of, pairs_of = [], [], []
    for text, n, eow in h["TRAINED"]:
        merges = train_bpe(text, n, eow)
        states = [word_frequencies(text, eow)]
        for pair in merges:
            states.append(merge_pair(states[-1], pair))
        merges_of.append(merges)
        states_of.append([_items_text(s) for s in states])
        pairs_of.append([_items_text(count_pairs(s)) for s in states])
    out.append(
        "# for each call in TRAINED: the merges the reference learns, the word types before each merge and after the last, and their pair counts"
    )
    out.append("_CHAIN_MERGES = [\n" + "".join(f"    {m!r},\n" for m in merges_of) + "]")
    for name, table in (("_CHAIN_STATES", states_of), ("_CHAIN_PAIRS", pairs_of)):
        body = []
        for (text, n, eow), rows in zip(h["TRAINED"], table):
            body.append(f"    [  # {text[:40]!r}, {n} merges, eow {eow!r}\n")
            body += ["        " + _literal("", row).replace("\n", "\n        ") + ",\n" for row in rows]
            body.append("    ],\n")
        out.append(f"{name} = [\n" + "".join(body) + "]")
    refused = {}
    for text, eow in h["REFUSED"]:
        try:
            refused[text, eow] = _items_text(word_frequencies(text, eow))
        except ValueError:
            refused[text, eow] = "ValueError"
    out.append("_REFUSED_WORDS = {\n" + "".join(f"    {k!r}: {v!r},\n" for k, v in refused.items()) + "}")
    corpus_words = word_frequencies(h["CORPUS"])
    assert corpus_words == {tuple(w) + ("</w>",): c for w, c in h["CORPUS_WORDS"].items()}, (
        "the generator's word counts are not the text's"
    )
    out.append("# the pair counts of CORPUS's word types (default eow)")
    out.append(_literal("_CORPUS_PAIRS = ", _items_text(count_pairs(corpus_words))))
    segments = {}
    for text, merges_name, merges, eow in (
        *((t, "TOK_MERGES", learned["TOK_MERGES"], "</w>") for t in h["TOK_TEXTS"]),
        (h["EOW_TEXT"], "EOW_MERGES", h["EOW_MERGES"], "#"),
        (h["TRAIN_ENCODED"], "TRAIN_MERGES", learned["_TRAIN_MERGES"], "_"),
    ):
        for word in text.split():
            segments[word, merges_name, eow] = bpe_segment(word, merges, eow)
    out.append("# the segmentations the tokenizer tests lead to: (word, merge list, eow) -> tokens")
    out.append("_SEGMENTS = {\n" + "".join(f"    {k!r}: {v!r},\n" for k, v in segments.items()) + "}")
    return "\n".join(out) + "\n"


def test_known_answers_are_the_references():
    """The block in hidden.py is exactly what the reference gives (print
    ``render_known_answers()`` to write it again after changing an input)."""
    source = HIDDEN.read_text(encoding="utf-8")
    block = source[source.index(BLOCK_START) + len(BLOCK_START) : source.index(BLOCK_END)]
    assert block == render_known_answers()


def _recorded_inputs(public: bool | None = None) -> dict[str, dict[str, list]]:
    """Every call each question's probes make to each graded function, run on the reference."""
    import solutions.bpe as reference

    calls: dict[str, dict[str, list]] = collections.defaultdict(lambda: collections.defaultdict(list))
    names = ("word_frequencies", "count_pairs", "merge_pair", "train_bpe", "bpe_segment")
    for case in get_stage("02_bpe").tests().cases:
        if case.qid == "efficiency" or (public is not None and case.public != public):
            continue
        scope = {k: getattr(reference, k) for k in dir(reference) if not k.startswith("_")}

        def recorder(name, fn, qid=case.qid):
            def record(*args, **kwargs):
                calls[qid][name].append((args, kwargs))
                return fn(*args, **kwargs)

            return record

        for name in names:
            scope[name] = recorder(name, scope[name])
        from autograder.kit.cases import Namespace

        case.probe(Namespace(scope))
    return calls


def test_no_known_answer_is_an_input_of_its_own_question():
    """A table that stands in for a function never holds an input of that function's own
    tests (public or hidden), so it cannot answer them."""
    h = _hidden_inputs(whole=True)
    known = h["_KNOWN"]
    own_question = {
        "word_frequencies": "word_frequencies",
        "count_pairs": "count_pairs",
        "merge_pair": "merge_pair",
        "train_bpe": "train_bpe",
        "bpe_segment": "segment",
    }
    calls = _recorded_inputs()
    for name, qid in own_question.items():
        for args, kwargs in calls[qid][name]:
            if name == "word_frequencies":
                key = (args[0], kwargs.get("eow", args[1] if len(args) > 1 else "</w>"))
            elif name == "count_pairs":
                key = h["_state"](args[0])
            elif name == "merge_pair":
                key = (h["_state"](args[0]), tuple(args[1]))
            elif name == "train_bpe":
                key = (args[0], args[1], kwargs.get("eow", args[2] if len(args) > 2 else "</w>"))
            else:
                merges = [tuple(m) for m in args[1]]
                eow = kwargs.get("eow", args[2] if len(args) > 2 else "</w>")
                key = next(((args[0], n, eow) for n, m in h["_MERGE_LISTS"].items() if m == merges), None)
            assert key not in known[name], f"{name}'s table answers an input of question {qid}: {str(key)[:120]}"
    assert calls["train_bpe"]["train_bpe"] and calls["segment"]["bpe_segment"]  # the recording saw the probes


def test_hidden_train_bpe_and_tokenizer_tests_do_not_depend_on_the_other_functions():
    """A plain train_bpe over broken count_pairs and merge_pair, and a tokenizer over a
    broken bpe_segment and train_bpe, earn every hidden train_bpe and tokenizer point; the
    reference learner over a broken word_frequencies passes the efficiency test's merges."""
    import solutions.bpe as reference
    from autograder.build.fixtures import stage_tests
    from autograder.kit.cases import Namespace
    from autograder.kit.runtime import judge_output

    tests = stage_tests(get_stage("02_bpe"))
    names = {k: getattr(reference, k) for k in dir(reference) if not k.startswith("_")}
    names["word_frequencies"] = lambda text, eow="</w>": {tuple(w): 1 for w in text.split()}  # no eow, counts lost
    names["count_pairs"] = lambda word_freqs: {p: 1 for w in word_freqs for p in zip(w, w[1:])}  # word counts ignored
    names["merge_pair"] = lambda word_freqs, pair: {tuple(sorted(w)): n for w, n in word_freqs.items()}  # nonsense
    names["bpe_segment"] = lambda word, merges, eow="</w>": list(word)  # no merges, no eow
    exec(PLAIN_LOOP.replace("def train_bpe", "def plain_train_bpe"), names)
    names["train_bpe"] = names["plain_train_bpe"]
    exec(inspect.getsource(reference.BPETokenizer), names)  # its methods find train_bpe and bpe_segment in names
    assert names["train_bpe"]("ab ab", 5, "_") != [
        ("a", "b"),
        ("ab", "_"),
    ]  # the broken helpers show when called directly
    hidden = [c for c in tests.cases if not c.public and c.qid in ("train_bpe", "tokenizer")]
    assert len(hidden) >= 14
    for case in hidden:
        verdict = judge_output(case, case.probe(Namespace(names)), tests.fixtures.get(case.key, case.expected))
        assert verdict.passed, f"{case.key}: {verdict.message}"
    names["train_bpe"] = type(reference.train_bpe)(
        reference.train_bpe.__code__, names, "train_bpe", reference.train_bpe.__defaults__
    )
    efficiency = next(c for c in tests.cases if not c.public and c.qid == "efficiency")
    got = {"output": efficiency.probe(Namespace(names)), "seconds": 0.0, "calibration": 1.0}
    verdict = judge_output(efficiency, got, tests.fixtures[efficiency.key])
    assert verdict.passed, verdict.message
