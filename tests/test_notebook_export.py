"""What a TA reads: the released notebook exported to HTML by nbconvert (the exporter of
``jupyter nbconvert --to html`` and of JupyterLab's "Save and Export Notebook As", whose
PDF exports and many LMS previews show the same page).

It must open with the stage's own text, its title and introduction, and the check harness
must not dominate it. Bounds, per stage:

- as exported, the harness cell is at most 1 % of the page's text (nbconvert leaves its
  source out: the cell's ``transient.remove_source``; the old harness was 62 %);
- in a front end that shows the harness anyway (GitHub, Colab's source view, VS Code):
  exported with that flag removed, the cell is at most 4 % of the page's lines (11 lines,
  the packed kit one of them, clipped to one line on screen, in pages of 347 to 1,193
  lines; the old harness was about 1,000 lines). Lines, not characters: the packed line
  holds most of the characters but takes one line of the page.
"""

import copy
from html.parser import HTMLParser

import nbformat
import pytest
from nbconvert import HTMLExporter

from autograder.authoring.static_rules import MIN_INTRODUCTION
from autograder.build.notebooks import make_notebook
from autograder.build.source import parse_source
from autograder.course import all_stages
from autograder.engine.submission import TAG_HARNESS

STAGES = all_stages()


class PageText(HTMLParser):
    """The visible text of an nbconvert page, in order, each piece with the id of its cell."""

    def __init__(self):
        super().__init__()
        self.pieces: list[tuple[str, str]] = []  # (cell id, text)
        self._cells: list[tuple[str, int]] = []  # open cell divs: (id, depth)
        self._depth = 0
        self._hidden = 0  # inside <head>, <script> or <style>

    def handle_starttag(self, tag, attrs):
        if tag in {"head", "script", "style"}:
            self._hidden += 1
        if tag == "div":
            self._depth += 1
            ident = dict(attrs).get("id") or ""
            if ident.startswith("cell-id="):
                self._cells.append((ident.removeprefix("cell-id="), self._depth))

    def handle_endtag(self, tag):
        if tag in {"head", "script", "style"}:
            self._hidden -= 1
        if tag == "div":
            if self._cells and self._cells[-1][1] == self._depth:
                self._cells.pop()
            self._depth -= 1

    def cells(self) -> list[tuple[str, str]]:
        """The text of each cell in turn (runs of pieces of one cell joined)."""
        joined: list[tuple[str, str]] = []
        for cell, text in self.pieces:
            if joined and joined[-1][0] == cell:
                joined[-1] = (cell, joined[-1][1] + text)
            else:
                joined.append((cell, text))
        return joined

    def handle_data(self, data):
        if not self._hidden:
            self.pieces.append((self._cells[-1][0] if self._cells else "", data))


def page(notebook: dict) -> PageText:
    html, _ = HTMLExporter().from_notebook_node(nbformat.from_dict(notebook))
    text = PageText()
    text.feed(html)
    return text


def _words(text: str) -> list[str]:
    return text.replace("¶", " ").split()


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.id)
def test_export_opens_with_the_stage_text_and_the_harness_is_a_small_share(stage):
    notebook = make_notebook(stage, "student")
    ids = [cell["id"] for cell in notebook["cells"]]
    harness = next(c["id"] for c in notebook["cells"] if TAG_HARNESS in c["metadata"].get("tags", []))
    introduction = ids[: ids.index(harness)]
    assert introduction and all(c["cell_type"] == "markdown" for c in notebook["cells"][: len(introduction)])

    visible = [(cell, t) for cell, t in page(notebook).pieces if t.strip()]
    opening = [cell for cell, _ in visible]
    opening = opening[: next(i for i, cell in enumerate(opening) if cell not in introduction)]
    assert set(opening) == set(introduction), "the page must open with the title and the introduction"
    title = parse_source(stage.source)[0].text.splitlines()[0].removeprefix("# ")
    first_words = _words(" ".join(t for _, t in visible[: len(opening)]))
    assert first_words[: len(_words(title))] == _words(title) and len(first_words) >= MIN_INTRODUCTION, first_words[:20]

    total = sum(len(t.strip()) for _, t in visible)
    in_harness = sum(len(t.strip()) for cell, t in visible if cell == harness)
    assert in_harness <= 0.01 * total, f"the harness is {in_harness / total:.0%} of the exported text"

    shown = copy.deepcopy(notebook)
    for cell in shown["cells"]:
        cell["metadata"].pop("transient", None)
    lines = [(cell, line) for cell, t in page(shown).cells() for line in t.splitlines() if line.strip()]
    in_harness = sum(cell == harness for cell, _ in lines)
    assert 0 < in_harness <= 0.04 * len(lines), f"shown anyway, the harness is {in_harness} of {len(lines)} lines"
