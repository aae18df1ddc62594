"""Grading submissions in bulk: run, judge, write results.json per submission and grades.csv."""

import time
from functools import lru_cache
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from . import processes
from .feedback import feedback_markdown
from .judge import TestResult, judge, scrub, secret_lines
from .results import cell_notes, dump_json, gradebook_csv, gradescope_json, question_scores, write_atomic
from .runner import Limits, Outcome, run_submission
from .stages import Stage, get_stage, load_cases, questions


@dataclass
class Graded:
    """One graded submission."""

    name: str
    stage_id: str
    path: Path
    results: list[TestResult]
    outcome: Outcome
    seconds: float

    @property
    def total(self) -> float:
        return sum(r.score for r in self.results)


@lru_cache(maxsize=None)
def hidden_secrets(stage_id: str) -> list[str]:
    """Lines of a stage's hidden tests that must never reach a student (read once)."""
    return secret_lines([get_stage(stage_id).suite_files[1].read_text(encoding="utf-8")])


def grade_one(stage: Stage, path: Path, fixtures: dict[str, Any], limits: Limits, name: str | None = None) -> Graded:
    """Run and judge one submission."""
    cases = list(load_cases(stage.id))
    start = time.monotonic()
    outcome = run_submission(Path(path), stage.suite_files, cases, limits)
    secrets = hidden_secrets(stage.id)
    results = judge(cases, outcome, fixtures, secrets)
    outcome.cell_errors = {i: scrub(m, secrets) for i, m in outcome.cell_errors.items()}
    return Graded(name or Path(path).stem, stage.id, Path(path), results, outcome, time.monotonic() - start)


def unique_names(paths: list[Path]) -> list[str]:
    """A distinct output folder name per submission (the file stem, numbered on clashes)."""
    names, seen = [], {}
    for path in paths:
        stem = Path(path).stem or "submission"
        count = seen.get(stem, 0)
        seen[stem] = count + 1
        names.append(stem if count == 0 else f"{stem}-{count + 1}")
    return names


def write_results(graded: Graded, out_dir: Path, show_hidden: bool = False) -> Path:
    """Write ``out_dir/<name>/results.json`` and ``feedback.md`` atomically."""
    notes = cell_notes(graded.outcome)
    doc = gradescope_json(graded.results, output=notes, execution_time=graded.seconds)
    target = out_dir / graded.name / "results.json"
    write_atomic(target, dump_json(doc))
    stage_id = graded.stage_id
    write_atomic(out_dir / graded.name / "feedback.md", feedback_markdown(graded.name, stage_id, graded.results, notes, show_hidden))
    return target


def grade_many(
    stage: Stage,
    paths: list[Path],
    out_dir: Path,
    fixtures: dict[str, Any],
    limits: Limits,
    workers: int = 1,
    progress: bool = True,
    show_hidden: bool = False,
) -> list[Graded]:
    """Grade every file, in parallel when ``workers > 1``; write each results.json and grades.csv.

    Results are written once more after the last child is gone and every stray process
    killed, so that nothing a submission left behind can change them.
    """
    processes.become_subreaper()
    names = unique_names(paths)
    graded: list[Graded | None] = [None] * len(paths)
    bar = tqdm(total=len(paths), desc=f"grading {stage.id}", unit="submission", disable=not progress)

    def work(i: int) -> None:
        graded[i] = grade_one(stage, paths[i], fixtures, limits, names[i])
        write_results(graded[i], out_dir, show_hidden)
        bar.update(1)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        list(pool.map(work, range(len(paths))))
    bar.close()
    processes.reap_strays()
    done = [g for g in graded if g is not None]
    for g in done:
        write_results(g, out_dir, show_hidden)
    qids = [q for q, _ in questions(stage.id)]
    maxima = dict(questions(stage.id))
    rows = [(g.name, question_scores(g.results, qids)) for g in done]
    write_atomic(out_dir / "grades.csv", gradebook_csv(rows, qids, maxima))
    return done
