"""What a course text points at, and whether it is inside the project.

A stage's files (and the project's documentation) may name other files: a source file, a
Markdown page, a section of the specification. Each must be found in the project, so that
an instructor who clones the course can follow every pointer. ``outside_references``
finds the ones that are not:

- a file name with a document or source suffix (``clauses.md``, ``test_gpt.py``; not one
  under a shell variable such as ``$OUT/``, which names no file of the project) that no
  file of the project has, unless the tools write it or an instructor adds it
  (``NOT_KEPT``); a relative path is resolved from the text's folder, and must
  stay inside the project (a tool's output file in a folder of the user's, such as
  ``out/results.json``, is one the tools write);
- an absolute path into a machine's home or work folders (``/work/...``, ``/home/...``);
- ``SPEC.md § <section>`` naming no heading of ``assignments/SPEC.md``.

Example:
    >>> outside_references("See COURSE_SPEC.md and SPEC.md § 03_attention.", ROOT / "assignments")
    ['COURSE_SPEC.md: no file of the project has this name']
"""

import re
from functools import cache
from pathlib import Path

from autograder.course import ASSIGNMENTS, ROOT

SPEC = ASSIGNMENTS / "SPEC.md"
SUFFIXES = ("md", "py", "json", "txt", "csv", "toml", "cfg", "sh", "yml", "yaml")
FILE_NAME = re.compile(rf"(?<![$\w./<>-])((?:\.\./|[\w-]+/)*[\w.-]*\w\.(?:{'|'.join(SUFFIXES)}))(?![\w/])")
ABSOLUTE = re.compile(r"(?<![\w.~])/(?:work|home|Users|mnt|root|srv)/[\w./-]*")
CITATION = re.compile(r"SPEC\.md\s*§\s*([^`)\],;\n]+)")
SKIPPED = {".git", ".venv", "__pycache__", ".pytest_cache", "node_modules"}
# Files the tools write, an instructor adds, or other software has: named in the texts, never kept here.
NOT_KEPT = frozenset(
    {
        "results.json",  # gptcourse grade, per student (Gradescope's schema)
        "graded.json",  # gptcourse grade, per student: what was graded
        "feedback.md",  # gptcourse grade, per student
        "written.json",  # gptcourse grade, per student: the written answers
        "written.md",  # gptcourse grade: every written answer, by question
        "grades.csv",  # gptcourse grade: the gradebook
        "canvas.csv",  # gptcourse grade: Canvas's import
        "moodle.csv",  # gptcourse grade: Moodle's import
        "roster.csv",  # the instructor's class list, kept by gptcourse grade
        "report.md",  # gptcourse report
        "mistakes.csv",  # gptcourse report
        "summary.json",  # gptcourse train
        "setup.sh",  # in the Gradescope zip
        "requirements.txt",  # in the Gradescope zip
        "environment.yml",  # in the Gradescope zip
        "gradescope.json",  # optional, per stage: the instructor's Gradescope settings
        "release.json",  # optional, per stage: the instructor's release of its answers
        "nbgrader_config.py",  # written by gptcourse build into the nbgrader course
        "gptcourse_config.py",  # written by gptcourse build into the nbgrader course
        "submission_metadata.json",  # Gradescope's, beside each submission
        "otter_config.json",  # otter-grader's, in its autograder zip
        "run_otter.py",  # in otter's autograder zip, written by otter generate
        "final_grades.csv",  # otter grade's gradebook
        "train.py",  # nanoGPT's training script (benchmarks/nanogpt_baseline.py follows it)
    }
)


@cache
def project_names(root: Path = ROOT) -> frozenset[str]:
    """The name of every file of the project (its own folders, not the environment's)."""
    names = set()
    for path in root.rglob("*"):
        if not SKIPPED.intersection(path.relative_to(root).parts) and path.is_file():
            names.add(path.name)
    return frozenset(names)


def spec_sections(spec: Path = SPEC) -> set[str]:
    """The headings of the specification, as citations name them."""
    if not spec.is_file():
        return set()
    return {line.lstrip("#").strip() for line in spec.read_text(encoding="utf-8").splitlines() if line.startswith("#")}


def outside_references(text: str, folder: Path, root: Path = ROOT) -> list[str]:
    """What ``text`` (a file of ``folder``) points at outside the project, each with why."""
    problems = []
    for name in dict.fromkeys(FILE_NAME.findall(text)):
        if "/" in name:
            target = (folder / name).resolve()
            if not target.is_relative_to(root.resolve()):
                problems.append(f"{name}: the path leads out of the project")
            elif not target.exists() and not (root / name).exists() and Path(name).name not in NOT_KEPT:
                problems.append(f"{name}: no such file in the project")
        elif name not in project_names(root) and name not in NOT_KEPT:
            problems.append(f"{name}: no file of the project has this name")
    problems += [f"{path}: an absolute path (it names one machine's files)" for path in ABSOLUTE.findall(text)]
    sections = spec_sections()
    for cited in CITATION.findall(text):
        cited = cited.strip().rstrip(".")
        if cited not in sections and not cited.startswith("<"):  # `SPEC.md § <section>` shows the form
            problems.append(f"SPEC.md § {cited}: assignments/SPEC.md has no such section")
    return problems


def folder_problems(folder: Path, suffixes: tuple[str, ...] = (".md", ".py", ".json")) -> list[str]:
    """``outside_references`` of every text file of a folder (not below it), each named by its file."""
    problems = []
    for path in sorted(Path(folder).iterdir()):
        if path.is_file() and path.suffix in suffixes:
            problems += [f"{path.name}: {p}" for p in outside_references(path.read_text(encoding="utf-8"), folder)]
    return problems
