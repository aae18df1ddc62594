"""Reading a submitted notebook: which cells to run, and their code made plain Python.

Cells carry tags the build sets; grading skips the check harness, the check cells,
demonstrations and training runs (``SKIP_TAGS``) and runs everything else in order,
students' own extra cells included. IPython syntax (``%magic``, ``!shell``) is turned
into no-ops, since the child is a plain Python process, not a kernel.
"""

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

TAG_HARNESS = "gptcourse:harness"
TAG_CHECK = "gptcourse:check"
TAG_DEMO = "gptcourse:demo"
TAG_TRAIN = "gptcourse:train"
TAG_GIVEN = "gptcourse:given"
TAG_STUB = "gptcourse:stub"
SKIP_TAGS = frozenset({TAG_HARNESS, TAG_CHECK, TAG_DEMO, TAG_TRAIN})


class SubmissionError(ValueError):
    """The file is not a notebook we can read (the submission scores 0, with this message)."""


@dataclass(frozen=True)
class CodeCell:
    """A code cell to run: its position among the notebook's cells and its Python source."""

    index: int
    source: str


def plain_python(source: str) -> str:
    """Replace IPython-only lines (magics, shell escapes, help queries) by ``pass``.

    Line numbers are kept, so tracebacks still point at the student's line. A cell
    magic (``%%time``) turns the whole cell into plain code below its first line.
    """
    lines = source.splitlines()
    out = []
    for line in lines:
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        if stripped.startswith(("%", "!")) or (stripped.endswith("?") and not stripped.startswith("#") and stripped[:-1].isidentifier()):
            out.append(f"{indent}pass")
        else:
            out.append(line)
    return "\n".join(out)


def _cell_source(cell: dict) -> str:
    source = cell.get("source", "")
    if isinstance(source, list):
        source = "".join(str(s) for s in source)
    if not isinstance(source, str):
        raise SubmissionError("a cell's source is neither text nor a list of lines")
    return source


MAX_NOTEBOOK_BYTES = 64 * 1024**2  # a notebook larger than this (unzipped) is not graded


def _read_bounded(handle, what: str) -> bytes:
    raw = handle.read(MAX_NOTEBOOK_BYTES + 1)
    if len(raw) > MAX_NOTEBOOK_BYTES:
        raise SubmissionError(f"{what} is larger than {MAX_NOTEBOOK_BYTES // 1024**2} MB; clear its outputs and submit it again")
    return raw


def load_notebook_json(path: Path) -> dict:
    """Read an ``.ipynb`` file, or the single notebook inside a ``.zip`` export.

    Reads at most ``MAX_NOTEBOOK_BYTES`` (a zip bomb or a huge file is refused, never
    loaded into memory) and refuses JSON nested too deeply to parse.
    """
    path = Path(path)
    try:
        if path.suffix.lower() == ".zip":
            with zipfile.ZipFile(path) as archive:
                names = [n for n in archive.namelist() if n.endswith(".ipynb") and not n.startswith(("__MACOSX", "."))]
                names = [n for n in names if "/.ipynb_checkpoints/" not in f"/{n}"]
                if len(names) != 1:
                    raise SubmissionError(f"the zip must hold exactly one notebook, found {len(names)}")
                with archive.open(names[0]) as member:
                    raw = _read_bounded(member, "the notebook in the zip")
        else:
            with open(path, "rb") as handle:
                raw = _read_bounded(handle, path.name)
        data = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise SubmissionError(f"could not read {path.name} as a notebook: its JSON is nested too deeply") from None
    except (OSError, UnicodeDecodeError, ValueError, RuntimeError, zipfile.BadZipFile, NotImplementedError, EOFError) as exc:
        if isinstance(exc, SubmissionError):
            raise
        raise SubmissionError(f"could not read {path.name} as a notebook: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise SubmissionError(f"{path.name} is not a Jupyter notebook (no list of cells)")
    return data


def code_cells(notebook: dict) -> list[CodeCell]:
    """The code cells grading runs, in notebook order, as plain Python."""
    cells = []
    for index, cell in enumerate(notebook["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        metadata = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        tags = metadata.get("tags") if isinstance(metadata.get("tags"), list) else []
        if SKIP_TAGS.intersection(t for t in tags if isinstance(t, str)):
            continue
        source = plain_python(_cell_source(cell))
        if source.strip():
            cells.append(CodeCell(index, source))
    return cells
