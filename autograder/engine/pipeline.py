"""The one grading pipeline: run a submission in child processes, judge its outputs.

Every channel grades through here: ``gptcourse grade`` (``grade_batch``), the Gradescope
entry point and the build's fixture run (``grade_submission``). What the results are
written as (results.json, feedback, a gradebook) is the caller's business.
"""

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from . import processes
from .judge import TestResult, judge, question_scores, scrub
from .progress import Progress
from .runner import Limits, Outcome, run_submission
from .suites import StageTests


@dataclass
class Graded:
    """One graded submission."""

    name: str
    stage_id: str
    path: Path | None
    results: list[TestResult]
    outcome: Outcome
    seconds: float

    @property
    def total(self) -> float:
        return sum(r.score for r in self.results)

    def per_question(self, tests: StageTests) -> dict[str, float]:
        """Points earned per question of ``tests``."""
        return question_scores(self.results, [q for q, _ in tests.questions()])

    @property
    def faults(self) -> list[str]:
        """Tests whose own check failed on this submission's output (for the instructor)."""
        return [r.fault for r in self.results if r.fault]


def grade_submission(
    path: Path | None, tests: StageTests, limits: Limits, name: str | None = None, missing: str = ""
) -> Graded:
    """Run and judge one notebook (``path`` None: nothing was submitted, ``missing`` says so)."""
    start = time.monotonic()
    if path is None:
        outcome = Outcome(
            errors={c.key: "no notebook was submitted" for c in tests.cases},
            fatal=missing or "no notebook was submitted",
        )
    else:
        outcome = run_submission(Path(path), tests, limits)
    return judged(path, tests, outcome, name, start)


def judged(
    path: Path | None,
    tests: StageTests,
    outcome: Outcome,
    name: str | None,
    start: float,
    calibration: dict[str, float] | None = None,
) -> Graded:
    """The grading of a submission whose code ran (``outcome``), begun at ``start`` (``time.monotonic``);
    ``calibration`` as ``judge`` takes it."""
    results = judge(tests, outcome, calibration)
    outcome.cell_errors = {i: scrub(m, tests.secrets, own=outcome.code) for i, m in outcome.cell_errors.items()}
    label = name or (Path(path).stem if path is not None else "submission")
    return Graded(
        label, tests.stage_id, None if path is None else Path(path), results, outcome, time.monotonic() - start
    )


def grade_batch(
    paths: list[Path],
    names: list[str],
    tests: StageTests,
    limits: Limits,
    workers: int = 1,
    progress: bool = True,
    write: Callable[[Graded], None] | None = None,
) -> list[Graded]:
    """Grade every file, in parallel when ``workers > 1``, calling ``write`` for each; with
    ``progress``, a bar in a terminal, else a line per tenth of the files (``engine.progress``).

    ``write`` runs as each submission is graded and once more after the last child is
    gone and every stray process killed, so that nothing a submission left behind can
    change what was written.
    """
    if len(names) != len(paths):
        raise ValueError(f"{len(paths)} submissions but {len(names)} names")
    processes.become_subreaper()
    graded: list[Graded | None] = [None] * len(paths)
    bar = Progress(len(paths), f"grading {tests.stage_id}", "submission", show=progress)

    def work(i: int) -> None:
        graded[i] = grade_submission(paths[i], tests, limits, names[i])
        if write is not None:
            write(graded[i])
        bar.update(1)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        list(pool.map(work, range(len(paths))))
    bar.close()
    processes.reap_strays()
    done = [g for g in graded if g is not None]
    if write is not None:
        for g in done:
            write(g)
    return done
