"""What went wrong in a failed test, named the same way for every student.

The class report groups failed tests by the *mistake* they show, never by the values in
their messages (which differ from student to student). A failed test in a results.json
is named, in this order, by:

1. the known mistake a hint recognised: ``extra_data.mistake`` (``Hint.mistake``, written
   by the engine), else the text of the message's ``Hint:`` line (results written before
   mistakes had names);
2. what stopped the code, read from the grader's own wording: not implemented, a name
   not defined, out of time, not run (the submission's time was used up), the process
   ended (exit, crash, out of memory), too much output, an exception (by its type only,
   also where another was expected: "expected ValueError, got KeyError"),
   a fault of the test, a guard whose points wait for the work (``cases.WITHHELD``),
   a notebook that could not be read;
3. else "a wrong result that no known mistake explains, in: <the test's description>"
   (the test that caught it, never its values), a sign that the catalogue may be missing
   a mistake.
"""

import re
from dataclasses import dataclass

UNRECOGNISED = "a wrong result that no known mistake explains"
# (kind, label, what the grader's messages say), checked in order on the message
KINDS = (
    ("not implemented", "not implemented (the stub still raises NotImplementedError)", ("not implemented yet",)),
    ("missing name", "a name the test needs is not defined", ("is not defined: run (or restore) the cell",)),
    ("not run", "not run: the submission's time was used up", ("used up its",)),
    (
        "time",
        "ran out of time (an endless loop, or far too slow)",
        (
            "did not finish within",
            "did not finish in time",
            "could not be stopped",
            "more CPU time than this test allows",
        ),
    ),
    ("output", "printed too much or sent too much data", ("printed more than", "far more data than expected")),
    (
        "process",
        "ended the process running it (exit, crash or out of memory)",
        ("ended the process running it", "the process running your code"),
    ),
    ("fault", "the test could not judge the output (check the test)", ("the grader could not judge this output",)),
    (
        "withheld",
        "passed, but counts only once the work passes a test (errors, dtypes, the input left alone; "
        "public tests: a hidden test)",
        (
            "this passed, but no test of the work of",
            "this passed, but no hidden test of the work of",
            "this passed, but no hidden test of what it checks did",
        ),
    ),
    (
        "unreadable",
        "the notebook could not be read or run",
        (
            "could not be read",
            "no notebook was submitted",
            "the grading process could not start",
            "could not be loaded",
        ),
    ),
)
KNOWN_LABELS = frozenset({UNRECOGNISED, *(label for _, label, _ in KINDS)})
RAISED = re.compile(r"raised (\w+(?:\.\w+)*)")
OTHER_ERROR = re.compile(r"\bgot (\w+(?:Error|Exception))\b")  # "expected ValueError, got KeyError: ..."


@dataclass(frozen=True)
class Failure:
    """A failed test, named: ``kind`` is "mistake", one of ``KINDS``' kinds, "error" or "unrecognised"."""

    kind: str
    label: str


def hint_line(message: str) -> str:
    """The text of a message's ``Hint:`` line ("" when it has none).

    >>> hint_line("expected 3, got 4\\nHint: ids start at 0, not 1")
    'ids start at 0, not 1'
    """
    for line in message.splitlines():
        if line.startswith("Hint:"):
            return line[len("Hint:") :].strip()
    return ""


FOLLOWS = "This follows from the failure of"  # the line ``results.explain_failures`` puts first


def own_line(message: str) -> str:
    """A message's first line about the test itself, past the line saying which failure it follows from.

    >>> own_line('This follows from the failure of "a": fix that first.\\nraised KeyError: 3')
    'raised KeyError: 3'
    """
    lines = [line for line in message.strip().splitlines() if line.strip() and not line.startswith(FOLLOWS)]
    return lines[0].strip() if lines else ""


def classify(test: dict) -> Failure:
    """Name a failed test of a results.json (see the module docstring).

    >>> classify({"output": "got 19\\nHint: count from zero", "extra_data": {"mistake": "ids start at 1"}})
    Failure(kind='mistake', label='ids start at 1')
    >>> classify({"output": "got 19\\nHint: count from zero"}).label
    'count from zero'
    >>> classify({"output": "raised IndexError: list index out of range (in cell 4, line 2: x[9])"}).label
    'raised IndexError'
    >>> follows = 'This follows from the failure of "a": fix that first.\\n'
    >>> classify({"output": follows + 'this test did not finish in time and was stopped'}).kind
    'time'
    >>> classify({"output": "expected ValueError, got KeyError: 'Z'"}).label
    'raised KeyError'
    >>> classify({"output": "n=0: NotImplementedError; alpha=0: NotImplementedError"}).kind
    'not implemented'
    >>> classify({"name": "encode_decode: ids of stoi", "output": "expected 3, got 19"}).label
    'a wrong result that no known mistake explains, in: ids of stoi'
    >>> classify({"output": "expected 3, got 19"}).label == UNRECOGNISED
    True
    """
    extra = test.get("extra_data") if isinstance(test.get("extra_data"), dict) else {}
    mistake = extra.get("mistake")
    message = str(test.get("output") or "")
    if isinstance(mistake, str) and mistake.strip():
        return Failure("mistake", mistake.strip())
    hint = hint_line(message)
    if hint:
        return Failure("mistake", hint)
    first = own_line(message)
    for kind, label, phrases in KINDS:
        if any(phrase in first for phrase in phrases):
            return Failure(kind, label)
    if "NotImplementedError" in first:  # an error test of a stub: "expected ValueError, got NotImplementedError"
        return Failure(*KINDS[0][:2])
    raised = RAISED.match(first) or OTHER_ERROR.search(first)
    if raised:
        return Failure("error", f"raised {raised.group(1)}")
    what = str(test.get("name", "")).split(":", 1)[-1].strip()  # the test, never its values
    return Failure("unrecognised", f"{UNRECOGNISED}, in: {what}" if what else UNRECOGNISED)
