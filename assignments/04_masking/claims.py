"""The numbers 04's notebook states, each with the measurement that makes it true
(``autograder.authoring.claims``; measured by ``test_claims.py``): how many distinct characters
the first 200,000 of each corpus hold, which sets the chance level of section 7's training.

Measured: 96 and 62 on Python 3.11.7, 3.12.1 and 3.13.0 (the default corpus is built from the
documentation of the Python that runs it).
"""

from autograder.authoring.claims import Claim
from solutions.data import load_corpus

STRETCH = 200_000  # the characters section 7 trains on


def _distinct(name: str) -> int:
    return len(set(load_corpus(name, offline_ok=False)[:STRETCH]))  # Shakespeare itself, never the fallback


CLAIMS = [
    Claim("the documentation has about 96 distinct characters in that stretch", lambda: _distinct("default"), 93, 99),
    Claim("Shakespeare 62, so", lambda: _distinct("shakespeare"), low=62, high=62),
]
