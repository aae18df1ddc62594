"""What must never reach a student, and a scanner that looks for it in what they see.

Three kinds of hidden material: the hidden tests' source (lines a student cannot find in
their notebook or the public tests), the fixtures (distinctive pieces of the fixture
file: its tensor data and long strings) and the reference solution (lines that are not
in the submission's own notebook). Expected values are also traced with *canaries*:
the same outcomes judged against fixtures whose every value is replaced by a marker,
so that any message quoting an expected value shows the marker.
"""

import json
from pathlib import Path
from typing import Any

import torch

from autograder.build.fixtures import DEFAULT_DIR
from autograder.build.notebooks import make_notebook
from autograder.course import Stage
from autograder.engine.suites import secret_lines

CANARY_FLOAT = 0.123456789
CANARY_INT = 987654321
CANARY_TEXT = "CANARY"
CANARY_MARKERS = ("0.123457", "0.1234568", "0.12345679", str(CANARY_INT), CANARY_TEXT)


def _notebook_text(stage: Stage) -> str:
    return json.dumps(make_notebook(stage, "student"), ensure_ascii=False)


def _visible_source(stage: Stage) -> str:
    """What students may see of the tests and the code: the released notebook and the public tests."""
    notebook = "\n".join(
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in make_notebook(stage, "student")["cells"]
    )
    return notebook + "\n" + stage.public.read_text(encoding="utf-8")


def hidden_lines(stage: Stage) -> list[str]:
    """Lines of the hidden tests that appear nowhere a student may look."""
    visible = _visible_source(stage)
    names = frozenset(case.name for case in stage.tests().cases)
    source = stage.hidden.read_text(encoding="utf-8")
    return [line for line in secret_lines([source], shown=names) if line not in visible]


def fixture_fragments(stage: Stage, directory: Path = DEFAULT_DIR) -> list[str]:
    """Distinctive pieces of the fixture file: tensor data (base64), long strings, and a
    piece of each long value as the file spells it (a stage whose answers are short
    strings and numbers, such as 02's merges, has no other)."""
    doc = json.loads((directory / f"{stage.id}.json").read_text(encoding="utf-8"))
    visible = _visible_source(stage)
    pieces: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("data"), str) and len(value["data"]) >= 40:
                pieces.append(value["data"][:40])
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str) and len(value) >= 24 and value not in visible:
            pieces.append(value)

    walk(doc["values"])
    for value in doc["values"].values():
        text = json.dumps(value, sort_keys=True, separators=(",", ":"))
        if len(text) >= 48 and text[8:48] not in visible:
            pieces.append(text[8:48])
    return sorted(set(pieces))


def reference_lines(stage: Stage, own_notebook: str) -> list[str]:
    """Lines of the reference solution absent from a submission's own notebook and from what
    every student sees (the released notebook, whose stubs keep the docstrings and their
    examples, and whose text may show a line wrapped; and the public tests)."""
    source = (stage.reference).read_text(encoding="utf-8")
    lines = secret_lines([source], shortest=24)
    released = " ".join(_visible_source(stage).split())  # the lesson's text may wrap a line it shows
    starts = ('"""', "'" * 3, "Args", "Returns", "Raises")
    return [
        line
        for line in lines
        if line not in own_notebook and " ".join(line.split()) not in released and not line.startswith(starts)
    ]


def canary(value: Any) -> Any:
    """``value`` with every leaf replaced by a marker of the same kind."""
    if isinstance(value, torch.Tensor):
        if value.dtype.is_floating_point:
            return torch.full_like(value, CANARY_FLOAT)
        if value.dtype == torch.bool:
            return ~value
        return torch.full_like(value, CANARY_INT)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return CANARY_INT
    if isinstance(value, float):
        return CANARY_FLOAT
    if isinstance(value, str):
        return f"{CANARY_TEXT}{len(value)}"
    if isinstance(value, (list, tuple)):
        return type(value)(canary(v) for v in value)
    if isinstance(value, dict):
        return {
            (f"{CANARY_TEXT}-{i}" if isinstance(k, str) else canary(k)): canary(v)
            for i, (k, v) in enumerate(value.items())
        }
    return value


def find(text: str, material: list[str]) -> list[str]:
    """The pieces of ``material`` that occur in ``text``."""
    return [piece for piece in material if piece and piece in text]


def visible_strings(doc: Any) -> str:
    """Every string inside a JSON document, joined (escapes decoded, as a student reads them)."""
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                out.append(str(k))
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        else:
            out.append(str(value))

    walk(doc)
    return "\n".join(out)
