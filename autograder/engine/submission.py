"""Reading a submitted notebook: which cells to run, and their code made plain Python.

Cells carry tags the build sets; grading skips the check harness, the check cells,
demonstrations and training runs (``SKIP_TAGS``) and runs everything else in order,
students' own extra cells included. The child is a plain Python process, not a
kernel, so IPython's syntax is translated first (``translate``): what a kernel would
run as Python still runs, a shell command never does, and the student is told what
was left out.
"""

import io
import json
import re
import tokenize
import zipfile
from dataclasses import dataclass
from pathlib import Path

TAG_HARNESS = "gptcourse:harness"
TAG_CHECK = "gptcourse:check"
TAG_DEMO = "gptcourse:demo"
TAG_TRAIN = "gptcourse:train"
TAG_GIVEN = "gptcourse:given"
TAG_STUB = "gptcourse:stub"
TAG_ANSWER = "gptcourse:answer"  # an earlier stage's answer the student pastes (the course's runs when grading)
TAG_WRITTEN = "gptcourse:written"  # a written question's prompt (Markdown)
TAG_WRITTEN_ANSWER = "gptcourse:written-answer"  # the Markdown cell under it, where the student answers
ANSWER_PLACEHOLDER = "*Your answer here.*"  # what an answer cell holds until the student writes
# The id the build gives each cell of a notebook (``build.notebooks.make_notebook``: "07-029"). A cell a
# student adds gets one from the front end instead (Jupyter and VS Code: random hex or a UUID).
BUILD_CELL_ID = re.compile(r"\d\d-\d{3,}")
SKIP_TAGS = frozenset({TAG_HARNESS, TAG_CHECK, TAG_DEMO, TAG_TRAIN})


class SubmissionError(ValueError):
    """The file is not a notebook we can read (the submission scores 0, with this message)."""


@dataclass(frozen=True)
class CodeCell:
    """A code cell to run: its position among the notebook's cells and its Python source.

    ``number`` is its place among the notebook's code cells (1 for the first, as a student
    counts them), ``execution_count`` the ``In [n]`` Jupyter showed when it was saved,
    ``notes`` what ``translate`` left out of it, and ``given`` whether it runs the course's
    code of an earlier answer (see ``code_cells``).
    """

    index: int
    source: str
    number: int = 0
    execution_count: int | None = None
    notes: tuple[str, ...] = ()
    given: bool = False  # the course's code of an earlier answer, in place of the student's

    @property
    def label(self) -> str:
        """How feedback names the cell: ``"code cell 5 (In [12])"``."""
        name = f"code cell {self.number}" if self.number else f"cell {self.index + 1}"
        return f"{name} (In [{self.execution_count}])" if self.execution_count is not None else name


QUIET_MAGICS = frozenset(
    "matplotlib config load_ext reload_ext unload_ext autoreload aimport precision xmode pdb who whos who_ls "
    "history lsmagic magic pprint colors doctest_mode page pinfo pinfo2 psearch quickref automagic autocall "
    "notebook recall rerun alias_magic killbgscripts".split()
)  # display and session settings: nothing to run, nothing to say
INSTALL_MAGICS = frozenset("pip conda mamba micromamba uv".split())
SHELL_MAGICS = frozenset(
    "sx system sc ls ll lf lk lx ldir mkdir rmdir rm cp mv cat pwd dirs dhist bookmark alias unalias rehashx".split()
    + "man more less clear".split()
)
SETTING_MAGICS = frozenset("cd pushd popd env set_env".split())  # the grader's folder and environment stay as they are
TIMING_MAGICS = frozenset({"time"})  # run the statement as it is (the time is not printed)
RUN_BODY_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})  # the body is Python: it runs once
DISPLAY_CELL_MAGICS = frozenset({"html", "markdown", "latex", "javascript", "js", "svg"})  # nothing to run
SHELL_CELL_MAGICS = frozenset(
    {"bash", "sh", "script", "system", "!", "perl", "ruby", "python", "python2", "python3", "pypy", "sx"}
)
NOT_RUN = "was not run: shell commands do not run when grading"
_HELP = re.compile(r"^(\?{1,2}[\w.]+(\(\))?|[\w.]+(\(\))?\?{1,2})$")
_ASSIGNED = re.compile(r"^([\w.\[\], ]+?)\s*=\s*([!%].*)$")
# a stage's id: its folder's name (two digits, a name), as the build writes it in a notebook's metadata
STAGE_ID = re.compile(r"\d\d_[a-z][a-z0-9_]{0,40}")


def _quote(text: str) -> str:
    text = text.strip()
    return f"`{text if len(text) <= 60 else text[:57] + '...'}`"


def _magic(stripped: str) -> tuple[str | None, str | None]:
    """``(python, note)`` for a logical line that is IPython syntax (``python`` None: it is not).

    ``python`` is what runs instead (a statement, or ``pass``); ``note`` tells the student
    what was left out (None: nothing worth saying).
    """
    if _HELP.match(stripped):
        return "pass", None
    if stripped.startswith("!"):
        return "pass", f"{_quote(stripped)} {NOT_RUN}"
    if not stripped.startswith("%") or stripped.startswith("%%"):
        return None, None
    name, _, rest = stripped[1:].partition(" ")
    rest = rest.strip()
    if name in TIMING_MAGICS:
        return (rest or "pass"), None
    if name in QUIET_MAGICS:
        return "pass", None
    if name in INSTALL_MAGICS:
        return (
            "pass",
            f"{_quote(stripped)} was not run: packages are not installed when "
            "grading (the grader has what the course needs)",
        )
    if name in SHELL_MAGICS:
        return "pass", f"{_quote(stripped)} {NOT_RUN}"
    if name in SETTING_MAGICS:
        return (
            "pass",
            f"{_quote(stripped)} was not run: the grader's working folder and environment variables stay as they are",
        )
    if name == "timeit":
        return "pass", f"{_quote(stripped)} was not run: timing is skipped when grading"
    return "pass", f"{_quote(stripped)} was not run: the magic %{name} is not available when grading"


def _line(line: str) -> tuple[str, str | None]:
    """One logical line's first physical line made Python, and a note for the student."""
    stripped = line.strip()
    indent = line[: len(line) - len(line.lstrip())]
    python, note = _magic(stripped)
    if python is not None:
        return indent + python, note
    assigned = _ASSIGNED.match(stripped)
    if assigned and not stripped.startswith("%%"):
        target, magic = assigned.groups()
        python, note = _magic(magic.strip())
        if python is not None:
            if python == "pass":
                value = "[]" if magic.startswith("!") else "None"
                note = note or f"{_quote(magic)} was not run"
                return f"{indent}{target} = {value}", f"{note}; `{target}` is {value} instead"
            return f"{indent}{target} = {python}", note
    return line, None


def _complete(statement: str) -> bool:
    """Whether ``statement`` (Python lines so far) ends a logical line: no open bracket,
    string or backslash continuation. Code that does not tokenize counts as complete
    (compiling it reports the error)."""
    try:
        for _ in tokenize.generate_tokens(io.StringIO(statement).readline):
            pass
    except tokenize.TokenError:
        return False
    except SyntaxError:
        return True
    return True


def _cell_magic(lines: list[str]) -> tuple[list[str], list[str]]:
    """A cell that begins with ``%%magic``: its lines as Python, and notes."""
    first = next(i for i, line in enumerate(lines) if line.strip())
    head = lines[first].strip()
    name, _, args = head[2:].partition(" ")
    body = lines[first + 1 :]
    blank = [""] * (first + 1)
    if name in RUN_BODY_CELL_MAGICS:
        target = args.split()[-1] if name == "capture" and args.split() and not args.split()[-1].startswith("-") else ""
        if target.isidentifier():
            return [*blank[:-1], f"{target} = None", *body], [
                f"line {first + 1}: `{head}`: the cell ran, but `{target}` captures nothing when grading (it is None)"
            ]
        return blank + body, []
    if name in DISPLAY_CELL_MAGICS:
        return [], []
    if name in SHELL_CELL_MAGICS:
        return [], [f"the cell {_quote(head)} {NOT_RUN}"]
    if name == "writefile":
        return [], [
            f"the cell {_quote(head)} was not run: no file is written when grading (put the code in a cell of its own)"
        ]
    return [], [f"the cell {_quote(head)} was not run: the cell magic %%{name} is not available when grading"]


def translate(source: str) -> tuple[str, list[str]]:
    """IPython cell source as plain Python, and notes on what was left out, by line.

    Line numbers are kept, so tracebacks point at the student's line. Magics and shell
    lines are recognised only where a statement begins (never inside a string or an
    open bracket). ``%time stmt`` and the body of ``%%time`` (also ``%%timeit``,
    ``%%capture``) run as plain Python; ``!cmd`` and shell magics never run; help
    queries and display settings are dropped without a word.

    Example:
        >>> translate("!pip install tqdm\\n%time x = 1 + 1\\nprint(x)")
        ('pass\\nx = 1 + 1\\nprint(x)',
         ['line 1: `!pip install tqdm` was not run: shell commands do not run when grading'])
    """
    lines = source.split("\n")
    if source.lstrip().startswith("%%"):
        lines, notes = _cell_magic(lines)
        source = "\n".join(lines)
        if not source.strip():
            return "", notes
        body, more = translate(source)
        return body, notes + more
    out, notes, statement = [], [], ""
    for number, line in enumerate(lines, start=1):
        if not statement:
            line, note = _line(line)
            if note:
                notes.append(f"line {number}: {note}")
        statement += line + "\n"
        if _complete(statement):
            statement = ""
        out.append(line)
    return "\n".join(out), notes


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
        raise SubmissionError(
            f"{what} is larger than {MAX_NOTEBOOK_BYTES // 1024**2} MB; clear its outputs and submit it again"
        )
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
    except (
        OSError,
        UnicodeDecodeError,
        ValueError,
        RuntimeError,
        zipfile.BadZipFile,
        NotImplementedError,
        EOFError,
    ) as exc:
        if isinstance(exc, SubmissionError):
            raise
        raise SubmissionError(f"could not read {path.name} as a notebook: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise SubmissionError(f"{path.name} is not a Jupyter notebook (no list of cells)")
    return data


def notebook_stage(notebook: dict) -> str | None:
    """The stage a notebook says it belongs to: the id the build writes in its metadata
    (``{"gptcourse": {"stage": "01_tokenisation"}}``), None when it names none.

    >>> notebook_stage({"metadata": {"gptcourse": {"stage": "01_tokenisation"}}, "cells": []})
    '01_tokenisation'
    >>> notebook_stage({"metadata": {}, "cells": []}) is None
    True

    Anything but a stage id (a student may write any metadata) names none.
    """
    metadata = notebook.get("metadata")
    ours = metadata.get("gptcourse") if isinstance(metadata, dict) else None
    stage = ours.get("stage") if isinstance(ours, dict) else None
    return stage if isinstance(stage, str) and STAGE_ID.fullmatch(stage) else None


def given_answer(metadata: dict, given: dict[str, str]) -> str | None:
    """The course's code for a cell that holds an earlier stage's answer (its metadata names
    it, ``{"gptcourse": {"answer": "blocks.LayerNorm"}}``), or None for any other cell.

    >>> given_answer({"gptcourse": {"answer": "m.f"}}, {"m.f": "def f(): return 1"})
    'def f(): return 1'
    >>> given_answer({"gptcourse": {"name": "g"}}, {"m.f": "def f(): return 1"}) is None
    True
    """
    ours = metadata.get("gptcourse")
    name = ours.get("answer") if isinstance(ours, dict) else None
    return given.get(name) if isinstance(name, str) else None


def code_cells(notebook: dict, given: dict[str, str] | None = None) -> list[CodeCell]:
    """The code cells grading runs, in notebook order, as plain Python (a cell whose code
    was all left out is kept when it has notes for the student).

    ``given`` maps earlier stages' answers (``MODULE.NAME``) to the course's code: a cell
    that holds one runs that code instead of the student's version (``given_answer``), so
    that a mistake of an earlier stage is not graded again."""
    cells, number = [], 0
    for index, cell in enumerate(notebook["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        number += 1
        metadata = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        tags = metadata.get("tags") if isinstance(metadata.get("tags"), list) else []
        if SKIP_TAGS.intersection(t for t in tags if isinstance(t, str)):
            continue
        count = cell.get("execution_count")
        count = count if isinstance(count, int) and not isinstance(count, bool) else None
        course = given_answer(metadata, given or {})
        if course is not None:
            cells.append(CodeCell(index, course, number, count, (), given=True))
            continue
        source, notes = translate(_cell_source(cell))
        if source.strip() or notes:
            cells.append(CodeCell(index, source, number, count, tuple(notes)))
    return cells


def _gptcourse_metadata(cell: dict) -> dict:
    metadata = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
    return metadata.get("gptcourse") if isinstance(metadata.get("gptcourse"), dict) else {}


def _built(cell: dict) -> bool:
    """Whether a cell keeps the id the build gave it (a cell the student added does not)."""
    return isinstance(cell.get("id"), str) and BUILD_CELL_ID.fullmatch(cell["id"]) is not None


def _answer_text(cell: dict) -> str:
    try:
        text = _cell_source(cell).strip()
    except SubmissionError:
        return ""
    return "" if text == ANSWER_PLACEHOLDER else text


def written_answers(notebook: dict) -> dict[str, str]:
    """Each written question's answer in a submitted notebook: the text of the Markdown cell the
    build put under its prompt (``{"gptcourse": {"written_answer": ID}}``), "" when it still holds
    the placeholder, followed by the text of the Markdown cells the student added right under it.
    A cell counts as added when the answer cell keeps the id the build gave it and the added cell
    has another (a notebook whose ids were all rewritten collects the answer cell alone). A
    question whose answer cell is gone is left out.

    >>> answer = {"cell_type": "markdown", "id": "07-029", "metadata": {"gptcourse": {"written_answer": "q"}}}
    >>> added = {"cell_type": "markdown", "id": "9f1c2d3e", "metadata": {}, "source": "Because."}
    >>> lecture = {"cell_type": "markdown", "id": "07-030", "metadata": {}, "source": "## 5. Which device?"}
    >>> written_answers({"cells": [answer | {"source": "Yes."}, lecture]})
    {'q': 'Yes.'}
    >>> written_answers({"cells": [answer | {"source": "*Your answer here.*"}, added, lecture]})
    {'q': 'Because.'}
    """
    found: dict[str, str] = {}
    open_answer = None  # the question whose answer the cells the student added right under it continue
    for cell in notebook.get("cells", []):
        if not isinstance(cell, dict):
            open_answer = None
            continue
        markdown = cell.get("cell_type") == "markdown"
        qid = _gptcourse_metadata(cell).get("written_answer") if markdown else None
        if isinstance(qid, str):
            open_answer = qid if _built(cell) else None
        elif open_answer is not None and markdown and not _gptcourse_metadata(cell) and not _built(cell):
            qid = open_answer
        else:
            open_answer = None
            continue
        found[qid] = (found.get(qid, "") + "\n\n" + _answer_text(cell)).strip()
    return found
