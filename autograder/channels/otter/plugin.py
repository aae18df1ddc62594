"""The otter plugin that puts the gptcourse engine in place of otter's kernel.

``otter_config.json`` of a zip from ``gptcourse build`` names it::

    {"plugins": [{"autograder.channels.otter.plugin.GradeWithEngine": {"stage": "01_tokenisation"}}], ...}

otter calls its events in the submission folder, in this order:

1. ``before_grading``: before otter unpickles, exports or runs anything, leave in the
   submission folder only the notebook otter chose and otter's copy of the declarations
   (not a student's ``.OTTER_LOG``, which otter would unpickle in its own process, nor any
   module a kernel could import, nor otter's copy of the engine and the stage's tests);
   read the zip's declarations (``tests/<question>.py``) while nothing has run; keep the
   submission's bytes for the engine, then mark its written questions in otter's copy for
   otter's PDF export (``written.mark_written``), which comes next;
2. ``before_execution``: have the engine grade the file as handed in, in a process of its
   own (``worker``), and hand otter an empty notebook to run in its kernel in place of the
   student's, so that no student code runs in otter's kernel;
3. ``after_grading``: put the engine's results in place of otter's (``results.fill``).

If the engine cannot grade (it failed, or ran out of time), the plugin raises otter's
``OtterRuntimeError``: otter then writes its "Autograder Error" document with the reason,
and the submission gets no points. This module imports otter, nbformat and the
standard library only: in ``otter run`` it is the instructor's installed gptcourse,
while the engine is always the zip's.
"""

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
from otter.plugins import AbstractOtterPlugin
from otter.run.run_autograder.utils import OtterRuntimeError
from otter.test_files import OKTestFile

from . import NOT_IN_A_KERNEL, PROTOCOL, SUPPORT
from .results import fill
from .written import mark_written

TOTAL_TIMEOUT = 600.0  # the engine's Limits.total_timeout (otter run)
STARTUP = 180.0  # seconds allowed on top of the engine's own limit (starting Python and torch, a busy machine)
DECLARATIONS = "tests"  # otter's copy of the zip's tests/ in the submission folder
PACKAGE_MARK = "__init__.py"  # the empty file otter puts there (appending to a student's own)
METADATA = "submission_metadata.json"


def inert_notebook() -> nbformat.NotebookNode:
    """What otter's kernel runs in place of the submission: nothing of the student's."""
    return nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell(f"The submission was {NOT_IN_A_KERNEL}.")],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )


def clear_folder(folder: Path, keep: Path) -> list[str]:
    """Remove from ``folder`` everything but ``keep`` and otter's declarations, and empty otter's
    ``__init__.py``; the names removed.

    >>> import tempfile; folder = Path(tempfile.mkdtemp())
    >>> for name in ("lab.ipynb", ".OTTER_LOG", "__init__.py", "tests/q.py", "otter/__init__.py"):
    ...     (folder / name).parent.mkdir(exist_ok=True); _ = (folder / name).write_text("x")
    >>> clear_folder(folder, folder / "lab.ipynb"), sorted(p.name for p in folder.iterdir())
    (['.OTTER_LOG', 'otter'], ['__init__.py', 'lab.ipynb', 'tests'])
    >>> (folder / "__init__.py").read_text()
    ''
    """
    removed = []
    for entry in sorted(folder.iterdir()):
        if entry == keep or (entry.name == DECLARATIONS and entry.is_dir() and not entry.is_symlink()):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
        if entry.name != PACKAGE_MARK:
            removed.append(entry.name)
    (folder / PACKAGE_MARK).write_text("")
    return removed


class GradeWithEngine(AbstractOtterPlugin):
    """Grade the submission with the gptcourse engine and give otter its results (see the module's docstring)."""

    def before_grading(self, config) -> None:
        self.root = Path(config.autograder_dir).resolve()
        self.support = self.root / "source" / SUPPORT
        self.containerized = not config.otter_run  # Gradescope or otter grade's container, not otter run
        stage = (self.plugin_config or {}).get("stage")
        shipped = json.loads((self.support / "gptcourse.json").read_text(encoding="utf-8"))
        if stage is not None and stage != shipped["stage"]:
            raise OtterRuntimeError(f"otter_config.json names stage {stage} but the zip carries {shipped['stage']}")
        self.timeout = shipped["timeout_minutes"] * 60 if self.containerized else TOTAL_TIMEOUT
        config.grade_from_log = False  # never rebuild the student's variables from their log
        submission = Path(self.submission_path)
        self.removed = [n for n in clear_folder(submission.parent, submission) if n != Path(SUPPORT).name]
        self.declared = {
            path.stem: OKTestFile.from_file(str(path)) for path in sorted((self.root / "source" / "tests").glob("*.py"))
        }
        self.handed_in = submission.read_bytes()
        self.marked = self.mark_for_export(submission)

    def mark_for_export(self, submission: Path) -> str:
        """Mark the written questions in otter's copy of a notebook for otter's PDF export; what was done."""
        if submission.suffix != ".ipynb":
            return ""
        try:
            notebook = json.loads(self.handed_in.decode("utf-8"))
            marked = mark_written(notebook) if isinstance(notebook, dict) else []
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            return f"written questions not marked for otter's PDF export (the notebook is not JSON: {error})"
        if marked:
            submission.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return f"written questions marked for otter's PDF export: {', '.join(marked) or 'none found'}"

    def grade(self) -> dict:
        """Run the worker on the submission; its document (see ``worker.document``)."""
        with tempfile.TemporaryDirectory(prefix="gptcourse-otter-") as tmp:
            out = Path(tmp) / "graded.json"
            handed_in = Path(tmp) / "submission" / Path(self.submission_path).name
            handed_in.parent.mkdir()
            handed_in.write_bytes(self.handed_in)
            command = [sys.executable, "-m", "autograder.channels.otter.worker", str(handed_in), str(out)]
            if self.containerized:
                command += ["--platform-timeout", str(self.timeout)]
            if (self.root / METADATA).exists():
                command += ["--metadata", str(self.root / METADATA)]
            try:  # run from the zip's folder: ``-m`` puts it first on the path, so the zip's engine grades
                done = subprocess.run(
                    command, cwd=self.support, capture_output=True, text=True, timeout=self.timeout + STARTUP
                )
            except subprocess.TimeoutExpired:
                raise OtterRuntimeError(
                    f"the gptcourse engine did not finish grading within {self.timeout + STARTUP:.0f} s"
                ) from None
            if done.returncode != 0 or not out.exists():
                raise OtterRuntimeError(
                    f"the gptcourse engine failed on this submission (exit {done.returncode}):\n{done.stderr[-3000:]}"
                )
            graded = json.loads(out.read_text(encoding="utf-8"))
        if graded.get("protocol") != PROTOCOL:
            raise OtterRuntimeError(
                f"the zip's engine speaks protocol {graded.get('protocol')}, this plugin {PROTOCOL}: "
                "rebuild the zip with the gptcourse you run otter with"
            )
        return graded

    def before_execution(self, submission):
        self.graded = self.grade()
        return inert_notebook()

    def after_grading(self, results) -> None:
        fill(results, self.graded, self.declared)

    def generate_report(self) -> str:
        graded = getattr(self, "graded", None)
        if graded is None:
            return "not graded by the gptcourse engine"
        doc = graded["gradescope"]
        worth = sum(t["max_score"] for t in doc["tests"])
        lines = [
            f"{graded['stage']}: {doc['score']:g} of {worth:g} points, graded by the gptcourse engine "
            f"in {graded['seconds']:.1f} s (engine: {graded['engine']})",
            *doc["output"].splitlines(),
        ]
        if graded["fallback"]:
            lines.append(
                f"warning: the student code ran less confined than this machine should allow ({graded['fallback']})"
            )
        if self.marked:
            lines.append(self.marked)
        if self.removed:
            lines.append(f"not graded, removed from the submission folder: {', '.join(self.removed)}")
        return "\n".join(lines)
