"""The numbers 01's notebook states, each with the measurement that makes it true
(``autograder.authoring.claims``; measured by ``test_claims.py``)."""

from autograder.authoring.claims import Claim
from solutions.data import load_corpus


def _shakespeare() -> str:
    return load_corpus("shakespeare", offline_ok=False)


CLAIMS = [
    Claim("*Tiny Shakespeare*, about a million characters", lambda: len(_shakespeare()), low=0.9e6, high=1.2e6),
    Claim("about 65 symbols for Shakespeare", lambda: len(set(_shakespeare())), low=60, high=70),
    Claim("(about 425,000 characters", lambda: len(load_corpus("default")), low=400_000, high=450_000),
    Claim("and 100 distinct symbols)", lambda: len(set(load_corpus("default"))), low=95, high=105),
]
