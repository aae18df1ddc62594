"""The numbers 01's notebook states, each with the measurement that makes it true
(``autograder.authoring.claims``; measured by ``test_claims.py``)."""

from autograder.authoring.claims import Claim
from solutions.data import load_corpus


def _shakespeare() -> str:
    return load_corpus("shakespeare", offline_ok=False)


CLAIMS = [
    Claim("*Tiny Shakespeare*, about a million characters", lambda: len(_shakespeare()), low=0.9e6, high=1.2e6),
    Claim("about 65 symbols for Shakespeare", lambda: len(set(_shakespeare())), low=60, high=70),
    # measured: 424,665 characters on Python 3.11.7, 436,200 on 3.12.1, 452,166 on 3.13.0 (100, 100, 101 symbols)
    Claim("(425,000 to 452,000 characters", lambda: len(load_corpus("default")), low=420_000, high=455_000),
    Claim("about 100 distinct symbols)", lambda: len(set(load_corpus("default"))), low=95, high=105),
]
