"""``gptcourse build``: the student release, the fixtures, the Gradescope and otter zips, the nbgrader
course, and what of earlier stages' answers each student notebook holds."""

import re
from pathlib import Path

from autograder.course import ROOT, Stage, all_stages

from .answers import ANSWERS_FOLDER, RELEASE_FILE, REPORT, answers_file, answers_line, answers_report, given_answers
from .fixtures import fixture_file, is_fresh
from .gradescope_zip import build_gradescope_zip, settings_note, write_gradescope_sheet
from .nbgrader_course import build_nbgrader_course
from .notebooks import check_cells_problems, make_notebook, student_path, write_notebook
from .otter_zip import build_otter_zip, write_otter_written
from .source import SourceError

DEFAULT_OUT = ROOT / "release"
# the folders of a release that hold a file or folder per stage, named by the stage's id
PER_STAGE = (
    "student",
    "fixtures",
    "gradescope",
    "otter",
    "nbgrader/source",
    "nbgrader/gptcourse_tests",
    ANSWERS_FOLDER,
)


def build_student(stage: Stage, out: Path, log=print) -> Path:
    """Write ``out/student/<stage>/<stage>.ipynb`` and say which earlier answers it holds."""
    path = student_path(stage, out)
    notebook = make_notebook(stage, "student")
    write_notebook(notebook, path)
    log(answers_line(stage, notebook))
    return path


def write_answers(out: Path, log=print, stages: list[Stage] | None = None) -> None:
    """``out/answers.md`` (the earlier answers each student notebook in ``out/student`` holds) and
    ``out/answers/<stage>.py`` (a stage's answers that later notebooks use, to post after its deadline)."""
    stages = stages if stages is not None else all_stages()
    report = out / REPORT
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(answers_report(out / "student", stages), encoding="utf-8")
    for index, stage in enumerate(stages):
        text = answers_file(stage, stages[index + 1 :])
        if text is not None:
            target = out / ANSWERS_FOLDER / f"{stage.id}.py"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    log(
        f"earlier answers in the student notebooks -> {report}; each stage's, to post after its deadline -> "
        f"{out / ANSWERS_FOLDER}/"
    )


def build_stage(stage: Stage, out: Path = DEFAULT_OUT, log=print) -> None:
    """Everything the build makes for one stage; a check cell naming no question stops it."""
    problems = check_cells_problems(stage)
    if problems:
        raise SourceError(f"{stage.source}: " + "; ".join(problems))
    log(f"{stage.id}: student notebook -> {build_student(stage, out, log)}")
    fresh = is_fresh(stage, out / "fixtures")
    target = fixture_file(stage, out / "fixtures")
    log(f"{stage.id}: fixtures -> {target}{' (up to date)' if fresh else ''}")
    log(
        f"{stage.id}: Gradescope autograder -> {build_gradescope_zip(stage, out / 'gradescope', target)} "
        f"({settings_note(stage)})"
    )
    sheet = write_gradescope_sheet(stage, out / "gradescope")
    if sheet is not None:
        log(f"{stage.id}: written questions to add to the Gradescope assignment by hand -> {sheet}")
    log(
        f"{stage.id}: otter-grader autograder -> {build_otter_zip(stage, out / 'otter', target)} "
        f"(otter run -a, otter grade -a; {settings_note(stage, limits=False)})"
    )
    otter_written = write_otter_written(stage, out / "otter")
    if otter_written:
        log(f"{stage.id}: written questions for otter's manual grading -> {', '.join(map(str, otter_written))}")
    log(f"{stage.id}: nbgrader source -> {build_nbgrader_course(stage, out / 'nbgrader', target)}")


def later_users(named: list[Stage], stages: list[Stage]) -> list[tuple[Stage, list[Stage]]]:
    """The stages of ``stages`` not in ``named`` whose notebooks hold answers of a stage in ``named``
    (given or withheld as that stage's release.json says), each with those stages, in course order.

    >>> from autograder.course import get_stage
    >>> [(s.id, [u.id for u in used]) for s, used in later_users([get_stage("03")], all_stages())]
    [('04_masking', ['03_attention']), ('07_gpt', ['03_attention'])]
    """
    ids = {stage.id for stage in named}
    found = []
    for stage in stages:
        if stage.id in ids:
            continue
        used = {answer.stage.id: answer.stage for answer in given_answers(stage) if answer.stage.id in ids}
        if used:
            found.append((stage, [used[i] for i in sorted(used)]))
    return found


def build_stages(named: list[Stage], out: Path = DEFAULT_OUT, log=print, stages: list[Stage] | None = None) -> None:
    """``gptcourse build``: build the ``named`` stages, then the later stages (of ``stages``, the
    course) whose notebooks hold their answers, since what those notebooks give or withhold follows
    the named stages' release.json and code; then ``out/answers.md`` and ``out/answers/``."""
    stages = stages if stages is not None else all_stages()
    for stage in named:
        build_stage(stage, out, log)
    for stage, used in later_users(named, stages):
        log(rebuilt_note(stage, used))
        build_stage(stage, out, log)
    write_answers(out, log, stages)


def rebuilt_note(stage: Stage, used: list[Stage]) -> str:
    """What the build says of a later stage it rebuilds because its notebook holds answers of ``used``,
    citing each one's release.json only where it has one (without, its answers are withheld).

    >>> from autograder.course import get_stage
    >>> rebuilt_note(get_stage("06"), [get_stage("04")])
    '06_blocks: rebuilt too: its notebook holds answers of 04_masking, withheld (04_masking has no release.json)'
    """
    notes = [
        f"given or withheld as {s.folder / RELEASE_FILE} says"
        if (s.folder / RELEASE_FILE).is_file()
        else f"withheld ({s.id} has no {RELEASE_FILE})"
        for s in used
    ]
    return f"{stage.id}: rebuilt too: its notebook holds answers of {', '.join(s.id for s in used)}, {'; '.join(notes)}"


def stale_outputs(out: Path, stages: list[Stage] | None = None) -> list[Path]:
    """What an earlier build left in ``out`` for a stage the course no longer has (a stage renamed
    or removed): files and folders of the per-stage folders whose name begins with a stage id
    (``08_rnn.zip``, ``08_rnn-written.md``, ``student/08_rnn/``) that is no stage's now.

    >>> import tempfile; out = Path(tempfile.mkdtemp())
    >>> (out / "gradescope").mkdir(); _ = (out / "gradescope" / "08_rnn.zip").write_bytes(b"")
    >>> _ = (out / "gradescope" / "09_rnn.zip").write_bytes(b"")
    >>> [p.name for p in stale_outputs(out)]
    ['08_rnn.zip']
    """
    ids = {stage.id for stage in (stages if stages is not None else all_stages())}
    stale = []
    for folder in (out / name for name in PER_STAGE):
        for path in sorted(folder.iterdir()) if folder.is_dir() else []:
            named = re.match(r"\d\d_[a-z0-9_]+", path.name)
            if named and named.group(0) not in ids:
                stale.append(path)
    return stale
