"""Packaging a notebook for upload: ``package_submission()``, one line in the notebook.

Graders read the saved ``.ipynb`` file, not the kernel, so an edit that was run but not
saved is lost. ``package_submission()`` finds the saved file (VS Code and Jupyter tell
the kernel its path; otherwise the ``.ipynb`` in the working folder that matches what ran)
and compares, for every function and class the kernel defined, the code that last ran
with the code in the saved file. When they differ it refuses and names them; when they
agree it writes ``<notebook>-submission.zip`` beside the notebook (the notebook inside,
under its own name) for upload. Colab keeps notebooks in Drive: there it says how to
download the file instead.

Part of the kit: standard library only, pasted verbatim into every notebook.
"""

import ast
import json
import os
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

# What the answer cell under a written question holds until the student writes in it (the same
# text as engine.submission.ANSWER_PLACEHOLDER; the kit imports nothing of the engine).
ANSWER_PLACEHOLDER = "*Your answer here.*"
# The id the build gives each cell ("07-029"; engine.submission.BUILD_CELL_ID): a cell the student adds has another.
BUILD_CELL_ID = re.compile(r"\d\d-\d{3,}")


class NotPackaged(Exception):
    """Why the notebook was not packaged (printed for the student)."""


def _built(cell: dict) -> bool:
    return isinstance(cell.get("id"), str) and BUILD_CELL_ID.fullmatch(cell["id"]) is not None


def _ours(cell: dict) -> dict:
    ours = cell.get("metadata", {}).get("gptcourse", {}) if isinstance(cell.get("metadata"), dict) else {}
    return ours if isinstance(ours, dict) else {}


def unanswered(notebook: dict) -> list[str]:
    """The written questions with no answer: their answer cell (the Markdown cell under the
    question) still holds the placeholder or nothing, and so do the Markdown cells the student
    added right under it (collected with it while the answer cell keeps the id the build gave it,
    as graders collect them: ``engine.submission.written_answers``).

    Example:
        >>> cell = {"cell_type": "markdown", "id": "07-029", "metadata": {"gptcourse": {"written_answer": "why"}}}
        >>> unanswered({"cells": [cell | {"source": "*Your answer here.*"}]})
        ['why']
        >>> unanswered({"cells": [cell | {"source": "So."}]})
        []
        >>> added = {"cell_type": "markdown", "id": "9f1c2d3e", "metadata": {}, "source": "So."}
        >>> unanswered({"cells": [cell | {"source": "*Your answer here.*"}, added]})
        []
    """
    texts: dict[str, str] = {}
    open_answer = None
    for cell in notebook.get("cells", []):
        markdown = isinstance(cell, dict) and cell.get("cell_type") == "markdown"
        qid = _ours(cell).get("written_answer") if markdown else None
        if isinstance(qid, str):
            open_answer = qid if _built(cell) else None
        elif open_answer is not None and markdown and not _ours(cell) and not _built(cell):
            qid = open_answer
        else:
            open_answer = None
            continue
        source = cell.get("source", "")
        text = ("".join(source) if isinstance(source, list) else str(source)).strip()
        texts[qid] = texts.get(qid, "") + ("" if text == ANSWER_PLACEHOLDER else text)
    return [qid for qid, text in texts.items() if not text]


def written_note(path: Path) -> str:
    """A note naming the written questions still unanswered in the saved notebook ("" when none is)."""
    try:
        missing = unanswered(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, ValueError, AttributeError):
        return ""
    if not missing:
        return ""
    return (
        f"Note: no answer in the answer cell of written question(s) {', '.join(missing)}. Write each answer in the"
        f" cell under its question, in place of {ANSWER_PLACEHOLDER} (or in Markdown cells you add right under it),"
        " save, and run this cell again; or hand in as it is."
    )


def _defined(source: str) -> set[str]:
    """Names of the functions and classes a cell defines at its top level."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        names = set()
        for line in source.splitlines():
            words = line.replace("(", " ").replace(":", " ").split()
            if len(words) > 1 and words[0] in ("def", "class"):
                names.add(words[1])
        return names
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def _normal(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip("\n").splitlines())


def _latest(sources: list[str]) -> dict[str, str]:
    """For each name defined in ``sources`` (in order), the last source that defines it."""
    latest: dict[str, str] = {}
    for source in sources:
        for name in _defined(source):
            latest[name] = _normal(source)
    return latest


def saved_code(path: Path) -> list[str]:
    """The code cells of a saved notebook."""
    try:
        notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise NotPackaged(f"{Path(path).name} could not be read as a notebook ({exc}).") from None
    cells = notebook.get("cells", []) if isinstance(notebook, dict) else []
    sources = []
    for cell in cells:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            sources.append("".join(source) if isinstance(source, list) else str(source))
    return sources


def differences(saved: list[str], ran: list[str]) -> tuple[list[str], list[str]]:
    """``(names whose saved code differs from the code that last ran, names that ran but are not saved)``."""
    last_ran, last_saved = _latest(ran), _latest(saved)
    changed = sorted(n for n in last_ran if n in last_saved and last_saved[n] != last_ran[n])
    missing = sorted(n for n in last_ran if n not in last_saved)
    return changed, missing


def _ran() -> list[str]:
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is None:
        raise NotPackaged("package_submission() works in a notebook (a Jupyter kernel), not in a plain Python script.")
    history = list(getattr(shell.history_manager, "input_hist_raw", []) or [])
    return [h for h in history[:-1] if h.strip()]  # the last entry is the cell calling package_submission()


def find_notebook(names: dict[str, Any], ran: list[str], folder: Path) -> Path:
    """The saved notebook this kernel belongs to."""
    for hint in (names.get("__vsc_ipynb_file__"), names.get("__session__"), os.environ.get("JPY_SESSION_NAME")):
        if isinstance(hint, str) and hint.endswith(".ipynb") and Path(hint).is_file():
            return Path(hint)
    candidates = []
    for path in sorted(folder.glob("*.ipynb")):
        try:
            meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
        except (OSError, UnicodeDecodeError, ValueError, AttributeError):
            continue
        if isinstance(meta, dict) and "gptcourse" in meta:
            candidates.append(path)
    if len(candidates) > 1:
        candidates = [p for p in candidates if differences(saved_code(p), ran) == ([], [])] or candidates
    if len(candidates) == 1:
        return candidates[0]
    listed = ", ".join(p.name for p in candidates) or "none"
    raise NotPackaged(
        f"Could not tell which file this notebook is saved as (course notebooks in {folder}: {listed}). "
        'Name it: package_submission("my notebook.ipynb").'
    )


def package(path: Path | None, names: dict[str, Any], folder: Path) -> tuple[Path, str]:
    """Check the saved notebook against what ran and zip it; return the zip and a note."""
    if "google.colab" in sys.modules:
        raise NotPackaged(
            "In Colab your notebook lives in Google Drive: use File > Download > Download .ipynb and upload that file."
        )
    ran = _ran()
    notebook = Path(path) if path is not None else find_notebook(names, ran, folder)
    if not notebook.is_file():
        raise NotPackaged(f"There is no file {notebook}.")
    changed, missing = differences(saved_code(notebook), ran)
    if changed:
        raise NotPackaged(
            f"{notebook.name} on disk is not what you last ran for: {', '.join(changed)}. "
            "Save the notebook (Ctrl+S / Cmd+S, or File > Save), run those cells again, then run this cell again."
        )
    note = ""
    if missing:
        note = (
            f"Note: you ran {', '.join(missing)}, which the saved file does not "
            "define (fine if you deleted them on purpose)."
        )
    if not ran:
        note = (
            "Note: no cell has run since the kernel started, so nothing could "
            "be compared; the saved file is packaged as it is."
        )
    note = "\n".join(filter(None, [note, written_note(notebook)]))
    target = notebook.with_name(f"{notebook.stem}-submission.zip")
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(notebook, notebook.name)
    return target, note


def package_submission(path: str | None = None) -> str | None:
    """Check that the saved notebook is what you ran, and zip it for upload; print what happened.

    Returns the zip's path, or None (with the reason printed) when it was not packaged.
    """
    names = sys._getframe(1).f_globals
    try:
        target, note = package(Path(path) if path else None, names, Path.cwd())
    except NotPackaged as exc:
        print(f"NOT PACKAGED. {exc}")
        return None
    print(f"Packaged {target.name[: -len('-submission.zip')]}.ipynb into {target}.")
    print("Upload that zip, or the .ipynb itself, to your course's submission page.")
    if note:
        print(note)
    return str(target)
