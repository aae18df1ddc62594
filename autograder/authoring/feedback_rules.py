"""The rules on feedback that every stage's catalogue is held to, checked on its graded catalogue.

- **Hints are right or absent**: each catalogued mistake triggers exactly the hints it
  declares (``Variant.hints``, by ``Hint.mistake``); each hint of the stage has a
  mistake name, fires on at least one catalogued mistake and stays silent on another
  mistake of its question; the reference and the correct alternatives trigger none.
- **Public tests catch the catalogue**: a mistake fails a public test of its question
  unless its ``Variant.hidden_only`` says why none can, and then it fails none.
- **Hidden messages reveal no hidden value**: no failed hidden test's message quotes an
  expected value of that test (a fixture's leaves or a literal expected value: strings
  and dictionary keys, numbers, lengths) that the student's own output does not hold.

Each function takes a stage's ``CatalogueGrades`` and returns its problems (empty: the
stage keeps the rule). Example::

    grades = CatalogueGrades(get_stage("01"), folder)
    assert hint_problems(grades) == []
"""

import math
import re
from typing import Any

import torch

from autograder.kit.cases import REFERENCE

from .grades import CatalogueGrades


def stage_hints(grades: CatalogueGrades) -> list[tuple[str, str, str]]:
    """``(question, test key, Hint.mistake)`` of every hint of the stage's checks, in order."""
    out = []
    for case in grades.tests.cases:
        for hint in getattr(case.check, "hints", None) or []:
            out.append((case.qid, case.key, hint.mistake))
    return out


def fired(grades: CatalogueGrades, name: str) -> set[str]:
    """The hints (``TestResult.hint``) that fired on one graded submission."""
    return {r.hint for r in grades.by_name[name].results if r.hint}


def hint_problems(grades: CatalogueGrades) -> list[str]:
    """Each mistake triggers exactly the hints it declares; each hint is named, fires on a catalogued
    mistake and stays silent on another of its question; correct code triggers none."""
    problems = []
    for _qid, key, mistake in stage_hints(grades):
        if not mistake:
            problems.append(f'a hint of {key!r} has no mistake name: Hint(when, text, mistake="...")')
    for variant in grades.mistakes:
        got, declared = fired(grades, variant.slug), set(variant.hints)
        if got != declared:
            extra = ", ".join(sorted(got - declared)) or "none"
            missing = ", ".join(sorted(declared - got)) or "none"
            problems.append(
                f"mistake {variant.slug!r} triggers hints it does not declare: "
                f"{extra}; declares hints that do not fire: {missing}"
            )
    for name in ["reference", *(v.slug for v in grades.alternatives)]:
        if fired(grades, name):
            problems.append(f"{name!r} (correct) triggers hints: {', '.join(sorted(fired(grades, name)))}")
    for qid, mistake in dict.fromkeys((q, m) for q, _, m in stage_hints(grades) if m):
        mine = [v for v in grades.mistakes if v.qid == qid]
        on = [v.slug for v in mine if mistake in fired(grades, v.slug)]
        if not on:
            problems.append(f"the hint {mistake!r} of {qid} fires on no catalogued mistake")
        elif len(on) == len(mine):
            problems.append(
                f"the hint {mistake!r} of {qid} fires on every mistake of its question: it is never shown silent"
            )
    return problems


def public_catch_problems(grades: CatalogueGrades) -> list[str]:
    """Each mistake fails a public test of its question, unless its ``hidden_only`` says why none
    can (and then none does). A public test that passed but waits for a hidden test of the work
    (``TestResult.awaits_hidden``) passes in the notebook: it catches nothing."""
    problems = []
    for variant in grades.mistakes:
        results = grades.by_name[variant.slug].results
        caught = [r.name for r in results if r.public and r.qid == variant.qid and not r.passed and not r.awaits_hidden]
        if not caught and not variant.hidden_only:
            problems.append(
                f"mistake {variant.slug!r} passes every public test of {variant.qid} "
                "(catch it, or say why only hidden tests can: hidden_only=...)"
            )
        if caught and variant.hidden_only:
            problems.append(
                f"mistake {variant.slug!r} is declared hidden_only, but the public test {caught[0]!r} catches it"
            )
    return problems


# A number in one of these phrases counts or measures something (a length, a shape, a count of elements).
LENGTH_PHRASE = re.compile(
    r"lengths? (?:of )?(\d+)(?: and (\d+))?|(\d+) (?:items|characters|keys|elements|tokens|rows|columns)\b"
    r"|shape \(([\d, ]*)\)|(\d+) expected"
)
# Numbers in these phrases are positions or tolerances, never values: left out of the value scan.
NOT_A_VALUE = re.compile(r"index \([\d, ]*\)|\[\d+\]|rtol=[^,)]*|atol=[^,)]*|character \d+|\d+ of \d+")
NUMBER = re.compile(r"(?<![\w.])-?(?:\d+\.\d*|\.\d+|\d+)(?:e[-+]?\d+)?(?![\w.])", re.IGNORECASE)
SPECIFIC_INT = 10  # a whole number below this is too common in any message to be told apart from a value
SPECIFIC_DIGITS = 4  # a decimal with fewer significant digits matches too many values by chance
SPECIFIC_TEXT = 8  # text of at least this many characters is searched unquoted too


def atoms(value: Any) -> tuple[set[str], list[float], set[int]]:
    """The strings (dictionary keys included), numbers and lengths (of lists, strings,
    dicts; a tensor's dimensions and size) inside a plain value."""
    strings: set[str] = set()
    numbers: list[float] = []
    lengths: set[int] = set()

    def walk(item: Any, depth: int) -> None:
        if depth > 40 or item is None or isinstance(item, bool):
            return
        if isinstance(item, str):
            strings.add(item)
            lengths.add(len(item))
        elif isinstance(item, (int, float)):
            numbers.append(float(item))
        elif isinstance(item, torch.Tensor):
            if item.dtype != torch.bool:
                numbers.extend(item.detach().reshape(-1).double().tolist())
            lengths.update(int(d) for d in item.shape)
            lengths.add(item.numel())
        elif isinstance(item, dict):
            lengths.add(len(item))
            for key, inner in item.items():
                walk(key, depth + 1)
                walk(inner, depth + 1)
        elif isinstance(item, (list, tuple, set, frozenset)):
            lengths.add(len(item))
            for inner in item:
                walk(inner, depth + 1)

    walk(value, 0)
    return strings, numbers, lengths


def _digits(token: str) -> int:
    return len(re.split(r"[eE]", token)[0].lstrip("-").replace(".", "").lstrip("0"))


class _Printed:
    """Numbers as a message could print them: ``token in printed`` when one of the numbers,
    printed to the token's significant digits, gives the token."""

    def __init__(self, numbers: list[float]) -> None:
        self._numbers = [v for v in numbers if math.isfinite(v)]
        self._by_digits: dict[int, set[float]] = {}

    def __contains__(self, token: str) -> bool:
        digits = max(_digits(token), 1)
        if digits not in self._by_digits:
            self._by_digits[digits] = {float(f"{v:.{digits}g}") for v in self._numbers}
        return float(token) in self._by_digits[digits]


def revealed(message: str, expected: Any, got: Any) -> list[str]:
    """The hidden expected values that ``message`` gives away (empty: none).

    A value the student's own output ``got`` holds too is theirs to see. Strings are
    looked for quoted (as ``repr`` shows them) and, when long, as they are; lengths in
    phrases that state a length or a shape; numbers anywhere but in positions and
    tolerances, when specific enough to be told apart from chance.

    Example:
        >>> revealed("[0][0]: expected length 13, got 14", [list(range(13))], [list(range(14))])
        ["an expected length, 13 ('length 13')"]
    """
    exp_text, exp_numbers, exp_lengths = atoms(expected)
    own_text, own_numbers, own_lengths = atoms(got)
    found = []
    for text in sorted(exp_text - own_text, key=len, reverse=True):
        if len(text) >= 2 and (repr(text) in message or f'"{text}"' in message):
            found.append(f"an expected string, {text!r}")
        elif len(text) >= SPECIFIC_TEXT and text in message:
            found.append(f"an expected string, {text!r}")
    for match in LENGTH_PHRASE.finditer(message):
        for group in match.groups():
            for token in re.findall(r"\d+", group or ""):
                if int(token) >= 2 and int(token) in exp_lengths - own_lengths:
                    found.append(f"an expected length, {token} ({match.group(0)!r})")
    values = LENGTH_PHRASE.sub(" ", NOT_A_VALUE.sub(" ", message))  # "19 of 20 elements": a count, whole
    theirs, mine = _Printed(exp_numbers), _Printed(own_numbers)
    for token in NUMBER.findall(values):
        whole = re.fullmatch(r"-?\d+", token) is not None
        if (whole and abs(int(token)) < SPECIFIC_INT) or (not whole and _digits(token) < SPECIFIC_DIGITS):
            continue
        if token in theirs and token not in mine:
            found.append(f"an expected value, {token}")
    return found


def hidden_value_problems(grades: CatalogueGrades) -> list[str]:
    """No failed hidden test's message gives away an expected value that the student's own
    output does not hold (errors raised by the student's code are their own words, not scanned)."""
    problems = []
    cases = {c.key: c for c in grades.tests.cases if not c.public}
    for name, graded in grades.by_name.items():
        for result in graded.results:
            case = cases.get(result.key)
            if (
                case is None
                or result.passed
                or result.key in graded.outcome.errors
                or result.key not in graded.outcome.values
            ):
                continue
            expected = grades.fixtures.get(case.key) if case.expected is REFERENCE else case.expected
            found = revealed(result.message, expected, graded.outcome.values[result.key])
            if found:
                problems.append(f"{name}: {result.key!r} says {'; '.join(found)}: {result.message[:200]!r}")
    return problems
