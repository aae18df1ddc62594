"""The numbers 02's notebook states, each with the measurement that makes it true
(``autograder.authoring.claims``; measured by ``test_claims.py``).

The efficiency ratios take minutes to measure (every learner of the catalogue graded
through the engine): ``benchmarks/bpe_efficiency.py`` measures them and records them in
``benchmarks/RESULTS_bpe_efficiency.json``.
"""

from autograder.authoring.claims import Claim, recorded
from solutions.bpe import byte_bpe_encode, train_byte_bpe
from solutions.data import load_corpus

RATIOS = "benchmarks/RESULTS_bpe_efficiency.json"

# The byte-level demonstration of section 10: one sentence three times, 40 merges.
SAMPLE = "the café's crème brûlée, 日本語のテキスト, 👍🏽 and the cat sat on the mat. " * 3


def _token_bytes(merges: list[tuple[int, int]]) -> list[bytes]:
    table = [bytes([b]) for b in range(256)]
    for a, b in merges:
        table.append(table[a] + table[b])
    return table


def _longest_sample_token() -> float:
    merges = train_byte_bpe(SAMPLE, 256 + 40)
    table = _token_bytes(merges)
    return max(len(table[i]) for i in byte_bpe_encode(SAMPLE, merges))


def _merges_before_the_ties() -> float:
    """The merges the sample makes before every merge joins a pair that occurs 3 times
    (-1 if a later merge's pair occurs otherwise)."""
    merges = train_byte_bpe(SAMPLE, 256 + 40)
    counts = []
    for i, pair in enumerate(merges):
        ids = byte_bpe_encode(SAMPLE, merges[:i])  # the sequence when merge i was chosen
        counts.append(sum(1 for p in zip(ids, ids[1:]) if p == pair))
    first = counts.index(3)
    return first if all(c == 3 for c in counts[first:]) else -1


def _longest_shakespeare_token() -> float:
    merges = train_byte_bpe(load_corpus("shakespeare")[:100_000], 256 + 40)
    return max(len(t) for t in _token_bytes(merges)[256:])


CLAIMS = [
    Claim("needs about 2 to 8 calibration times", recorded(RATIOS, "summary", "fast_min"), low=1.5, high=2.5),
    Claim("needs about 2 to 8 calibration times", recorded(RATIOS, "summary", "fast_max"), low=7.0, high=9.0),
    Claim("word after each merge need more than 30", recorded(RATIOS, "summary", "slow_min"), low=30, high=1e9),
    Claim("after the first 13 merges the most frequent pairs occur 3 times", _merges_before_the_ties, low=13, high=13),
    Claim("one token here is 34 bytes long", _longest_sample_token, low=34, high=34),
    Claim("make no token longer than 5 bytes", _longest_shakespeare_token, low=1, high=5),
]
