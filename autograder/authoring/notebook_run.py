"""A stage's reference notebook run top to bottom as plain Python, as a kernel would run it.

The notebook is built as ``gptcourse build`` builds the reference notebook (the reference
solution in every stub cell) and its code cells run in order in one namespace: the harness,
the given code, the solutions, every check cell (whose public tests must pass), the
demonstrations and the training runs. Only the hand-in cell (``package_submission()``,
which needs the saved notebook) is left out. Grading never runs the demonstrations and the
training runs (``engine.submission.SKIP_TAGS``): this run is what shows that they work.

Three users share it: the check-stage rule "reference notebook runs" (``cell_problems`` of
a run made in a child process, ``python -m autograder.authoring.notebook_run``, at quick
sizes on the CPU and offline), ``benchmarks/run_notebook.py`` (any size, timings, another
recipe) and ``tests/test_notebooks_on_cuda.py`` (on a pretend CUDA device).

Example::

    namespace = {"__name__": "__main__"}
    runs = [run_cell("05_multihead", i, cell, source_of(cell), namespace) for i, cell in
            enumerate(reference_code_cells(get_stage("05")))]
    cell_problems(runs)  # [] when every cell ran and every check cell passed
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TextIO

from autograder.build.notebooks import make_notebook
from autograder.course import Stage, command_line_stage
from autograder.engine.submission import TAG_CHECK

from . import offline

HAND_IN = "package_submission()"  # the last code cell: it needs the saved notebook, so never run here
PASSED = "public tests passed"  # what a check cell prints when every public test of its question passes
REPORT_LINES = 8  # the first lines of a failing check cell's report shown: its count, then the failures first


def reference_code_cells(stage: Stage) -> list[dict]:
    """The reference notebook's code cells, in order, without the hand-in cell."""
    cells = make_notebook(stage, "reference")["cells"]
    return [c for c in cells if c["cell_type"] == "code" and source_of(c).strip() != HAND_IN]


def source_of(cell: dict) -> str:
    """A notebook cell's source, as one string."""
    return "".join(cell["source"])


def cell_tags(cell: dict) -> str:
    """A cell's tags, joined by commas ("code" when it has none)."""
    return ",".join(cell.get("metadata", {}).get("tags", [])) or "code"


def first_line(source: str) -> str:
    """How a cell is named in a report: its first line (70 characters at most)."""
    return source.strip().splitlines()[0][:70] if source.strip() else ""


@dataclass
class CellRun:
    """One cell run: what it printed, and its traceback if it raised."""

    cell: int
    tags: str  # the cell's tags, joined by commas ("code" when it has none)
    first_line: str
    seconds: float
    cpu_seconds: float  # this process's CPU time, all its threads
    output: str  # the end of what it printed
    error: str | None  # the traceback, or why a check cell failed
    exception: str | None = None  # the exception's last line, with the cell's line that raised it

    @property
    def problem(self) -> str | None:
        """What went wrong, in a line or a few: None when the cell ran (and, a check cell, passed)."""
        if self.error is None:
            return None
        where = f"cell {self.cell} [{self.tags}] {self.first_line!r}"
        return f"{where} raised {self.exception}" if self.exception else f"{where}: {self.error}"

    def record(self) -> dict:
        """The run as a JSON-able dict (``benchmarks/run_notebook.py --json`` writes these)."""
        return {k: v for k, v in asdict(self).items() if k != "exception"}


def run_cell(label: str, index: int, cell: dict, source: str, namespace: dict, out: TextIO | None = None) -> CellRun:
    """Run one cell's ``source`` in ``namespace``, its printed output going to ``out`` (kept
    whole) and figures closed after it. An exception the cell raises is its finding: it is
    recorded (``error``, ``exception``), not raised, so that the caller reports it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tags, first = cell_tags(cell), first_line(source)
    filename = f"<{label} cell {index}>"
    printed = out if out is not None else io.StringIO()
    kept = _Tee(printed)
    start, cpu_start = time.perf_counter(), time.process_time()
    error = exception = None
    with contextlib.redirect_stdout(kept):
        try:
            exec(compile(source, filename, "exec"), namespace)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 (the cell's failure, whatever it is, is what is reported)
            error = traceback.format_exc()
            exception = _exception_line(exc, filename)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    plt.close("all")
    text = kept.text()
    if TAG_CHECK in tags and PASSED not in text and error is None:
        said = "\n".join(f"    {line}" for line in text.strip().splitlines()[:REPORT_LINES]) or "    (nothing)"
        error = f"its public tests did not all pass; its report begins:\n{said}"
    return CellRun(index, tags, first, round(seconds, 3), round(cpu_seconds, 3), text[-2000:], error, exception)


def cell_problems(runs: list[CellRun]) -> list[str]:
    """Each cell that raised, and each check cell whose public tests did not all pass."""
    return [run.problem for run in runs if run.problem]


def run_reference(stage: Stage) -> list[CellRun]:
    """Run every code cell of the stage's reference notebook in this process, going on after
    a cell that fails (a later one may fail on its own account)."""
    namespace: dict = {"__name__": "__main__"}
    cells = reference_code_cells(stage)
    return [run_cell(stage.id, i, cell, source_of(cell), namespace) for i, cell in enumerate(cells)]


def _exception_line(exc: BaseException, filename: str) -> str:
    """``NameError: name 'x' is not defined (line 3)``: the exception, and the line of the cell
    it came from (the deepest frame of the cell's own code)."""
    text = traceback.format_exception_only(type(exc), exc)[-1].strip()
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    return f"{text} (line {lines[-1]})" if lines else text


class _Tee(io.TextIOBase):
    """Writes to a stream and keeps a copy."""

    def __init__(self, stream: TextIO) -> None:
        self.stream, self.parts = stream, []

    def write(self, text: str) -> int:
        self.parts.append(text)
        self.stream.write(text)
        self.stream.flush()
        return len(text)

    def text(self) -> str:
        return "".join(self.parts)


def main(argv: list[str] | None = None) -> int:
    """The child process of the rule: run a stage's reference notebook offline and write each
    cell's run, as JSON, to ``--json``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", help="the stage's folder (assignments/NN_name)")
    parser.add_argument("--json", required=True, help="where to write the cells' runs")
    args = parser.parse_args(argv)
    stage = command_line_stage(args.folder)
    offline.cut_off()
    runs = run_reference(stage)
    Path(args.json).write_text(json.dumps([asdict(run) for run in runs]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
