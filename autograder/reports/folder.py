"""The folder ``gptcourse grade`` writes: per submission ``<out>/<name>/results.json`` and
``feedback.md``, and the class gradebook ``<out>/grades.csv``. Every file is written atomically."""

from pathlib import Path

from autograder.engine.pipeline import Graded, grade_batch
from autograder.engine.results import cell_notes, dump_json, gradescope_json, write_atomic
from autograder.engine.runner import Limits
from autograder.engine.suites import StageTests

from .feedback import feedback_markdown
from .gradebook import gradebook_csv, question_scores


def unique_names(paths: list[Path]) -> list[str]:
    """A distinct output folder name per submission (the file stem, numbered on clashes)."""
    names, seen = [], {}
    for path in paths:
        stem = Path(path).stem or "submission"
        count = seen.get(stem, 0)
        seen[stem] = count + 1
        names.append(stem if count == 0 else f"{stem}-{count + 1}")
    return names


def write_submission(graded: Graded, out_dir: Path, show_hidden: bool = False) -> Path:
    """Write ``out_dir/<name>/results.json`` and ``feedback.md``; return the results' path."""
    notes = cell_notes(graded.outcome)
    target = out_dir / graded.name / "results.json"
    write_atomic(target, dump_json(gradescope_json(graded.results, output=notes, execution_time=graded.seconds)))
    feedback = feedback_markdown(graded.name, graded.stage_id, graded.results, notes, show_hidden)
    write_atomic(out_dir / graded.name / "feedback.md", feedback)
    return target


def write_gradebook(graded: list[Graded], tests: StageTests, out_dir: Path) -> Path:
    """Write ``out_dir/grades.csv``: a row per submission, a column per question."""
    maxima = dict(tests.questions())
    qids = list(maxima)
    rows = [(g.name, question_scores(g.results, qids)) for g in graded]
    target = out_dir / "grades.csv"
    write_atomic(target, gradebook_csv(rows, qids, maxima))
    return target


def grade_into_folder(
    paths: list[Path],
    tests: StageTests,
    out_dir: Path,
    limits: Limits | None = None,
    *,
    names: list[str] | None = None,
    workers: int = 1,
    progress: bool = True,
    show_hidden: bool = False,
) -> list[Graded]:
    """Grade ``paths`` through the engine's pipeline and write the whole folder."""
    done = grade_batch(
        paths, names or unique_names(paths), tests, limits or Limits(), workers=workers, progress=progress,
        write=lambda graded: write_submission(graded, out_dir, show_hidden),
    )
    write_gradebook(done, tests, out_dir)
    return done
