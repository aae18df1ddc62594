"""Writing what grading found: Gradescope's results.json, one per submission.

Files are written atomically (a temporary file in the same folder, then a rename),
so a reader never sees half a file and a planted file or link is replaced, not followed.
"""

import json
import os
import tempfile
from pathlib import Path

from .judge import TestResult, follows_from
from .runner import Outcome

HIDDEN_VISIBILITY = "after_published"


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir() and not path.is_symlink():
        raise IsADirectoryError(f"{path} is a directory")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


WHEN_SHOWN = {
    "after_published": "are scored after the deadline; you see them when grades are published",
    "after_due_date": "are scored after the deadline; you see them after the due date",
    "hidden": "are scored after the deadline; only your instructor sees them",
    "visible": "count towards your score now",
}


def summary_line(results: list[TestResult], hidden_visibility: str = HIDDEN_VISIBILITY) -> str:
    """The visible line that says what the public tests were worth and what comes later."""
    public = [r for r in results if r.public]
    hidden = [r for r in results if not r.public]
    earned = sum(r.score for r in public)
    worth = sum(r.max_score for r in public)
    line = f"Public tests: {earned:g} of {worth:g} points."
    if hidden:
        when = WHEN_SHOWN.get(hidden_visibility, WHEN_SHOWN["hidden"])
        line += f" Hidden tests ({sum(r.max_score for r in hidden):g} points) {when}."
    return line


def explain_failures(results: list[TestResult]) -> dict[str, str]:
    """Each failed test's message, saying which failures follow from which (``follows_from``:
    by ``builds_on``, and failures with the same cause grouped under the first).

    A failure that follows from a more basic one says so first; a basic failure says how
    many later tests fail because of it. A public test's message counts and names public
    tests only, since a student sees it before the hidden tests' results. A guard whose
    points are withheld keeps its own message (``judge.WITHHELD``): nothing there to fix.
    """
    roots = follows_from(results)
    by_key = {r.key: r for r in results}
    out = {}
    for r in results:
        if r.passed:
            continue
        message = r.message
        on = [by_key[k] for k in roots.get(r.key, ()) if by_key[k].public or not r.public]
        if on:
            names = ", ".join(f'"{x.name}"' for x in on)
            message = f"This follows from the failure of {names}: fix that first.\n{message}"
        after = [k for k, ks in roots.items() if r.key in ks and (by_key[k].public or not r.public)]
        if after:
            message += f"\n({len(after)} later test(s) of {r.qid} fail because of this one: start here.)"
        out[r.key] = message
    return out


def gradescope_json(
    results: list[TestResult],
    *,
    output: str = "",
    execution_time: float | None = None,
    hidden_visibility: str = HIDDEN_VISIBILITY,
) -> dict:
    """A results.json document in Gradescope's schema. A failed test whose hint recognised a
    known mistake carries its name as ``extra_data.mistake`` (a per-test field of the schema),
    and one that follows from other failures their names as ``extra_data.follows_from``
    (visible ones only for a visible test)."""
    tests = []
    explained = explain_failures(results)
    roots = follows_from(results)
    by_key = {r.key: r for r in results}
    for r in results:
        test = {
            "name": r.key,
            "score": r.score,
            "max_score": r.max_score,
            "status": "passed" if r.passed else "failed",
            "output": explained[r.key] if not r.passed else ("public test passed" if r.public else "passed"),
            "visibility": "visible" if r.public else hidden_visibility,
        }
        extra = {}
        if r.hint and not r.passed:  # the known mistake, for the class report (Gradescope stores extra_data)
            extra["mistake"] = r.hint
        shown = [k for k in roots.get(r.key, ()) if by_key[k].public or not r.public]
        if shown:  # the failures this one follows from: one mistake, one place to start
            extra["follows_from"] = shown
        if extra:
            test["extra_data"] = extra
        tests.append(test)
    doc = {
        "score": round(sum(r.score for r in results), 6),
        "output": "\n".join(x for x in (summary_line(results, hidden_visibility), output) if x),
        "stdout_visibility": "hidden",
        "tests": tests,
    }
    if execution_time is not None:
        doc["execution_time"] = round(execution_time, 3)
    return doc


def dump_json(doc: dict) -> str:
    """A results document as Gradescope reads it (indented UTF-8 JSON, one final newline)."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def wrong_stage_note(named: str, graded: str) -> str:
    """What a student is told whose notebook belongs to another stage than the one graded.

    >>> wrong_stage_note("01_tokenisation", "04_masking")[:70]
    'This is a notebook of stage 01_tokenisation, not 04_masking: was the r'
    """
    return (
        f"This is a notebook of stage {named}, not {graded}: was the right notebook submitted? "
        f"It was graded by the tests of {graded}, which look for that stage's functions, "
        "so the messages below may name functions it never had."
    )


def cell_notes(outcome: Outcome) -> str:
    """What went wrong while loading the notebook, and what of it did not run, for the student.

    Each cell is named as the student sees it (``Outcome.cell_labels``): its place among
    the notebook's code cells and the ``In [n]`` Jupyter showed.
    """
    lines = []
    if outcome.fatal:
        lines.append(f"Your notebook could not be graded: {outcome.fatal}")
    if outcome.wrong_stage:
        lines.append(wrong_stage_note(*outcome.wrong_stage))
    for index in sorted(set(outcome.cell_errors) | set(outcome.left_out)):
        label = outcome.cell_labels.get(index, f"cell {index + 1}")
        label = label[:1].upper() + label[1:]
        for note in outcome.left_out.get(index, ()):
            lines.append(f"{label}, {note}" if note.startswith("line ") else f"{label}: {note}")
        if index in outcome.cell_errors:
            lines.append(f"{label} {outcome.cell_errors[index]}")
    return "\n".join(lines)
