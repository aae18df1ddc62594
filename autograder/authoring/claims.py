"""Numbers a notebook states, each tied to the measurement that makes it true.

A stage may hold ``claims.py`` beside its notebook, defining ``CLAIMS``: a list of
``Claim``. Each names the words of ``notebook.md`` that state a number (verbatim; line
breaks and runs of spaces count as one space), a function that measures it at the size
the text names (the reference code, on a CPU, in seconds), and the range the wording
allows ("about 0.35" admits 0.33 to 0.37; "under a minute" admits 0 to 60). A figure
that takes minutes to measure comes from a benchmark's results file instead
(``recorded``), and the benchmark is what measures it.

``gptcourse check-stage`` checks that every claim's words are in the notebook (rule
"stated numbers have a source") and measures every claim in a process of its own (rule
"stated numbers true": ``python -m autograder.authoring.claims STAGE``); ``tests/test_claims.py``
measures every claim too, one test each.

Example::

    CLAIMS = [
        Claim(
            "about 65 symbols for Shakespeare",
            lambda: len(set(load_corpus("shakespeare"))),
            low=60,
            high=70,
        ),
    ]
"""

import importlib.util
import json
import re
import types
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from autograder.course import ROOT, Stage, get_stage


@dataclass(frozen=True)
class Claim:
    """A number the notebook states: its words, how to measure it, and the range they allow."""

    words: str
    measure: Callable[[], float]
    low: float
    high: float

    def holds(self, value: float) -> bool:
        """Whether a measured value is one the words allow."""
        return self.low <= value <= self.high


def rounded(words: str, value: float, decimals: int, measure: Callable[[], float]) -> Claim:
    """The claim of a figure stated to ``decimals`` decimals: the measurement must round to it.

    Example:
        >>> claim = rounded("training 2.40", 2.40, 2, lambda: 2.4025)
        >>> claim.holds(2.4025), claim.holds(2.406)
        (True, False)
    """
    half = 0.5 * 10**-decimals
    return Claim(words, measure, low=value - half, high=value + half)


def flat(text: str) -> str:
    """Text with every run of white space as one space, for finding words across line breaks.

    Example:
        >>> flat("about\\n  0.35 nats")
        'about 0.35 nats'
    """
    return re.sub(r"\s+", " ", text).strip()


def stage_claims(stage: Stage) -> list[Claim]:
    """The stage's ``CLAIMS`` (none without a ``claims.py``); a file that defines no list is an error."""
    path = stage.folder / "claims.py"
    if not path.is_file():
        return []
    spec = importlib.util.spec_from_file_location(f"gptcourse_claims_{stage.id}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    claims = getattr(module, "CLAIMS", None)
    if not isinstance(claims, list) or not all(isinstance(c, Claim) for c in claims):
        raise ValueError(f"{path} must define CLAIMS as a list of Claim")
    return claims


@cache
def public_suite(stage_id: str) -> types.ModuleType:
    """A stage's public tests as a module (loaded once), for a claim that measures with their data or
    their measurements.

    Example:
        >>> hasattr(public_suite("10"), "suite")
        True
    """
    stage = get_stage(stage_id)
    spec = importlib.util.spec_from_file_location(f"gptcourse_claims_{stage.id}_public", stage.public)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def unsourced(stage: Stage, claims: list[Claim]) -> list[str]:
    """The claims whose words the notebook does not hold (it was edited, the claim was not)."""
    text = flat(stage.source.read_text(encoding="utf-8"))
    return [
        f"claims.py: the notebook no longer says {claim.words!r}: update the claim with the text"
        for claim in claims
        if flat(claim.words) not in text
    ]


# a figure: a number with a decimal point or a percentage (``2.40``, ``17 %``, ``24%``)
FIGURE = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.])|(?<![\w.])\d+(?:\.\d+)?\s?%")
FORMULA = re.compile(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`")  # math and code spans: formulas and settings


def unmeasured_figures(text: str, claims: list[Claim]) -> list[str]:
    """The figures of ``text`` (a rubric) that no claim measures: numbers with a decimal point and
    percentages outside math (``$...$``) and code spans (formulas and settings), each where no
    claim's words stand around it.

    Example:
        >>> claims = [Claim("training 2.40, one pass 2.40", lambda: 2.4, 2.395, 2.405)]
        >>> unmeasured_figures("masked: training 2.40, one pass 2.40; unmasked 5.70 ($e^{1.2}$)", claims)
        ['5.70']
    """
    text = flat(text)
    covered = [m.span() for m in FORMULA.finditer(text)]
    for claim in claims:
        words = flat(claim.words)
        covered += [(m.start(), m.start() + len(words)) for m in re.finditer(re.escape(words), text)]
    return [
        m.group()
        for m in FIGURE.finditer(text)
        if not any(start <= m.start() and m.end() <= end for start, end in covered)
    ]


def recorded(results: str, *keys: str) -> Callable[[], float]:
    """A measurement read from a benchmark's JSON results (``results`` relative to the
    repository), for figures that take minutes to measure: the benchmark measures them.

    Example:
        >>> reader = recorded("benchmarks/RESULTS.json", "no-such-key")
        >>> callable(reader)
        True
    """

    def read() -> float:
        value = json.loads((ROOT / results).read_text(encoding="utf-8"))
        for key in keys:
            value = value[key]
        return float(value)

    return read


def main() -> None:
    """``python -m autograder.authoring.claims STAGE`` (a stage's id or folder): measure every claim
    of the stage and print ``MEASURED`` and a JSON list of ``[words, value, low, high]``."""
    import sys

    from autograder.authoring import claims  # the module claims.py files import Claim from, not __main__
    from autograder.course import command_line_stage

    stage = command_line_stage(sys.argv[1])
    measured = [[claim.words, claim.measure(), claim.low, claim.high] for claim in claims.stage_claims(stage)]
    print("MEASURED " + json.dumps(measured))


if __name__ == "__main__":
    main()
