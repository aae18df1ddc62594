"""The written questions in otter's manual-grading path: otter's export markers around each.

otter grades written (manual) questions by hand from a PDF of the notebook: with
``filtering`` on (as the zip's ``otter_config.json`` sets it), otter's export keeps only what
lies between a ``<!-- BEGIN QUESTION -->`` and an ``<!-- END QUESTION -->`` comment (the
cells ``otter assign`` wraps around a manual question) and, with ``pagebreaks``, starts a page
after each. Every PDF otter makes of a submission (``otter grade --pdfs``, ``pdf`` or the
upload to a Gradescope PDF assignment with ``token``, ``course_id`` and ``assignment_id``)
comes from the submission otter finds in its folder after the plugin's ``before_grading``.

``mark_written`` puts the markers there, in otter's copy of the submission: a group per
written question (its prompt cell through its answer cell, found by the metadata the build
gave them, whatever the student put between, and the Markdown cells the student added right
under the answer cell, which the graders collect with it: ``engine.submission.written_answers``),
the student's own markers removed, so
that the PDF holds the written questions, nothing else, each on its own page, whatever the
student did to the comments. The engine grades the notebook as handed in, not this copy.
No marker ever reaches the autograder's score: the written questions have no test file.

This module imports the standard library only: it runs in otter's process.
"""

import re

BEGIN = "<!-- BEGIN QUESTION -->"
END = "<!-- END QUESTION -->"
MARKER = re.compile(r"<!--\s*(BEGIN|END) QUESTION\s*-->", re.IGNORECASE)  # as otter's export reads them
# The id the build gives each cell ("07-029"; engine.submission.BUILD_CELL_ID, which this process may not import)
BUILD_CELL_ID = re.compile(r"\d\d-\d{3,}")


def written_id(cell: dict) -> str | None:
    """The written question a cell belongs to (its prompt or answer cell, as the build tagged it)."""
    metadata = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
    ours = metadata.get("gptcourse") if isinstance(metadata.get("gptcourse"), dict) else {}
    qid = ours.get("written", ours.get("written_answer"))
    return qid if isinstance(qid, str) else None


def _built(cell: dict) -> bool:
    return isinstance(cell.get("id"), str) and BUILD_CELL_ID.fullmatch(cell["id"]) is not None


def _added_under(cells: list, index: int) -> int:
    """The last of the Markdown cells the student added right under the answer cell at ``index``
    (``index`` itself when none is, or when the answer cell lost the id the build gave it)."""
    if not _built(cells[index]):
        return index
    last = index
    for cell in cells[index + 1 :]:
        metadata = cell.get("metadata") if isinstance(cell, dict) else None
        plain = isinstance(cell, dict) and not (metadata.get("gptcourse") if isinstance(metadata, dict) else None)
        if not (plain and cell.get("cell_type") == "markdown" and not _built(cell)):
            break
        last += 1
    return last


def groups(cells: list) -> list[tuple[int, int, list[str]]]:
    """``(first, last, questions)``: the cells to export, a group per written question from its
    first cell to its last (its answer cell, or the last Markdown cell the student added right
    under it); questions whose cells interleave make one group.

    >>> prompt = lambda qid: {"metadata": {"gptcourse": {"written": qid}}}
    >>> answer = lambda qid: {"id": "01-004", "metadata": {"gptcourse": {"written_answer": qid}}}
    >>> groups([{}, prompt("a"), {}, answer("a"), prompt("b"), answer("b")])
    [(1, 3, ['a']), (4, 5, ['b'])]
    >>> added = {"cell_type": "markdown", "id": "9f1c2d3e", "metadata": {}}
    >>> groups([prompt("a"), answer("a"), added, {"cell_type": "markdown", "id": "01-005"}])
    [(0, 2, ['a'])]
    """
    spans: dict[str, list[int]] = {}
    for index, cell in enumerate(cells):
        qid = written_id(cell) if isinstance(cell, dict) else None
        if qid is not None:
            last = _added_under(cells, index) if "written_answer" in cell["metadata"]["gptcourse"] else index
            spans.setdefault(qid, [index, last])[1] = last
    merged: list[tuple[int, int, list[str]]] = []
    for qid, (first, last) in sorted(spans.items(), key=lambda item: item[1]):
        if merged and first <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(last, merged[-1][1]), [*merged[-1][2], qid])
        else:
            merged.append((first, last, [qid]))
    return merged


def _unmarked(source) -> str | list:
    if isinstance(source, list):
        return [MARKER.sub("", line) for line in source]
    return MARKER.sub("", source) if isinstance(source, str) else source


def _prepend(source, line: str) -> str | list:
    if isinstance(source, list):
        return [f"{line}\n", "\n", *source]
    return f"{line}\n\n{source}"


def mark_written(notebook: dict) -> list[str]:
    """Put otter's export markers around each written question of ``notebook`` (a notebook's
    JSON, changed in place), the student's own markers removed; the questions marked.

    >>> cell = lambda key, qid, text: {"cell_type": "markdown", "metadata": {"gptcourse": {key: qid}}, "source": text}
    >>> nb = {"nbformat": 4, "nbformat_minor": 5, "cells": [
    ...     {"cell_type": "code", "metadata": {}, "source": "x = 1  # <!-- BEGIN QUESTION -->"},
    ...     cell("written", "why", "### Why?"), cell("written_answer", "why", "Because.")]}
    >>> mark_written(nb)
    ['why']
    >>> [c["source"] for c in nb["cells"]]
    ['x = 1  # ', '<!-- BEGIN QUESTION -->\\n\\n### Why?', 'Because.', '<!-- END QUESTION -->']
    >>> nb["cells"][-1]["id"]
    'otter-end-why-0'
    """
    cells = notebook.get("cells")
    if not isinstance(cells, list):
        return []
    for cell in cells:
        if isinstance(cell, dict) and "source" in cell:
            cell["source"] = _unmarked(cell["source"])
    marked: list[str] = []
    taken = {c.get("id") for c in cells if isinstance(c, dict)}
    for first, last, questions in reversed(groups(cells)):
        cells[first]["source"] = _prepend(cells[first].get("source", ""), BEGIN)
        closing = {"cell_type": "markdown", "metadata": {}, "source": END}
        if notebook.get("nbformat", 4) >= 4 and notebook.get("nbformat_minor", 0) >= 5:
            closing["id"] = next(
                i for n in range(len(cells) + 1) if (i := f"otter-end-{questions[0]}-{n}") not in taken
            )
        cells.insert(last + 1, closing)
        marked = questions + marked
    return marked
