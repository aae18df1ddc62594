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
import random
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.course import get_stage
from autograder.kit.check_cell import run_public
from support import SHAKESPEARE
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
LECTURE_MERGES = [("e", "r"), ("er", "_"), ("n", "e"), ("ne", "w"), ("l", "o"), ("lo", "w"), ("new", "er_"), ("low", "_")]


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
