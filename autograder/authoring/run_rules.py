"""The rules that run a stage's code for seconds (``gptcourse check-stage`` runs them with the
graded rules; ``--quick`` does not): each a function of a ``static_rules.Subject``, run in a
child process, so that nothing the run changes (threads, the environment, the working folder,
figures, imported modules) stays in the process that checks.

Example::

    >>> from autograder.course import get_stage
    >>> from autograder.authoring.static_rules import Subject
    >>> own_tests_pass(Subject(get_stage("01")))  # 01 has no test file of its own: nothing to run
    []
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from autograder.course import ROOT

from . import margins, pytest_failures
from .notebook_run import CellRun, cell_problems

NOTEBOOK_TIMEOUT = 300  # seconds: the slowest stage (09) runs in about 15 s at quick sizes
TESTS_TIMEOUT = 600  # seconds: the slowest stage's own tests (07, 10) take about 12 s
OUTPUT_LINES = 8  # the last lines of a failing test's output shown
SCAN = "REFSCAN "  # what starts the line of ``refscan``'s answer


def reference_notebook_runs(subject) -> list[str]:
    """The reference notebook runs top to bottom as plain Python (every code cell, demonstrations
    and training runs included, which grading never runs) at quick sizes (`GPTCOURSE_QUICK=1`), on
    the CPU with one thread, offline (the local Tiny Shakespeare when there is one), in a
    temporary folder: no cell raises, and every check cell's public tests pass. Each cell that
    fails is named with its tag and first line."""
    stage = subject.stage
    with tempfile.TemporaryDirectory(prefix=f"gptcourse-notebook-{stage.id}-") as tmp:
        out = Path(tmp) / "cells.json"
        # on the CPU whatever the machine has (the local corpus: command_line_stage)
        env = _child_env(
            GPTCOURSE_QUICK="1", GPTCOURSE_THREADS="1", OMP_NUM_THREADS="1", MPLBACKEND="Agg", CUDA_VISIBLE_DEVICES=""
        )
        command = [sys.executable, "-m", "autograder.authoring.notebook_run", str(stage.folder), "--json", str(out)]
        try:
            done = subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True, timeout=NOTEBOOK_TIMEOUT)
        except subprocess.TimeoutExpired:
            return [f"the reference notebook did not finish in {NOTEBOOK_TIMEOUT} s at quick sizes"]
        if done.returncode != 0 or not out.is_file():
            return [f"the run of the reference notebook stopped (exit status {done.returncode}):\n{_tail(done)}"]
        runs = [CellRun(**run) for run in json.loads(out.read_text())]
    return cell_problems(runs)


def own_tests_pass(subject) -> list[str]:
    """The stage's own tests of its reference (`test_*.py` in its folder, the only oracle of the
    reference independent of it) pass, run as `make test` runs them but for the slow and gpu ones:
    `python -m pytest -m "not slow and not gpu" <stage folder>`. Each failing test is named with
    what it raised and the last lines of its output. A stage without such a file has nothing to run."""
    folder = subject.stage.folder
    if not list(folder.glob("test_*.py")):
        return []
    with tempfile.TemporaryDirectory(prefix=f"gptcourse-tests-{subject.stage.id}-") as tmp:
        failures = Path(tmp) / "failures.jsonl"
        env = _child_env(**{pytest_failures.ENV: str(failures)})
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", pytest_failures.__name__]
        # the project's settings (its markers, `-p support`) whether the folder is the project's or a copy
        command += ["-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT), "-m", "not slow and not gpu"]
        try:
            done = subprocess.run(
                [*command, str(folder)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=TESTS_TIMEOUT
            )
        except subprocess.TimeoutExpired:
            return [f"the stage's own tests did not finish in {TESTS_TIMEOUT} s"]
        found = [json.loads(line) for line in failures.read_text().splitlines()] if failures.is_file() else []
    problems = [f"{f['id']}{_phase(f['when'])} failed: {f['crash']}\n{_last_lines(f['text'])}" for f in found]
    if done.returncode not in (0, 5) and not problems:  # 5: every test is slow or gpu, none to run here
        problems.append(f"pytest stopped (exit status {done.returncode}):\n{_tail(done)}")
    return problems


SCAN_TIMEOUT = 600  # seconds: the slowest stage's scan takes about 8 s
MIN_CALLS = 2  # calls of each graded name the behavioural scan needs to go on


def suites_hold_no_reference(subject) -> list[str]:
    """Neither suite holds an implementation of a graded function of the stage, copied or written
    another way (``refscan``): ``public.py`` ships in every notebook and both sit in the grading
    child while the student's code runs. A copy is found by its statements; a re-implementation by
    returning what the reference returns on the calls the probes make of it, so the probes must
    call each graded name at least twice."""
    scan, stopped = _answer("autograder.authoring.refscan", subject, SCAN, SCAN_TIMEOUT, "the scan of the suites")
    if stopped:
        return stopped
    problems = [f"{where}: a suite must not compute the answer" for where in scan["found"]]
    problems += [
        f"the probes call {name} {count} time(s) on the reference: the scan for re-implementations of it needs"
        f" {MIN_CALLS} or more"
        for name, count in scan["recorded"].items()
        if count < MIN_CALLS
    ]
    return problems + ([] if scan["recorded"] else ["the probes call no graded function on the reference"])


CLAIMS_TIMEOUT = 600  # seconds: the slowest stage's claims (07) take about 20 s
MEASURED = "MEASURED "  # what starts the line of ``claims``' measurements


def stated_numbers_true(subject) -> list[str]:
    """Every number ``claims.py`` ties to a measurement is what the measurement gives, at the size
    the text names, within the range its words allow: the claims are measured in a process of
    their own (the reference's code, on the CPU, the local corpus when there is one)."""
    if not (subject.stage.folder / "claims.py").is_file():
        return []
    on_cpu = {"OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    measured, stopped = _answer(
        "autograder.authoring.claims", subject, MEASURED, CLAIMS_TIMEOUT, "measuring the claims", **on_cpu
    )
    if stopped:
        return stopped
    return [
        f"the notebook says {words!r}, but the measurement gives {value:g} (its words allow {low:g} to {high:g})"
        for words, value, low, high in measured
        if not low <= value <= high
    ]


MARGINS_TIMEOUT = 600  # seconds: the slowest stage's margins (10) take about 10 s


def tolerances_keep_a_margin(subject) -> list[str]:
    """Every tolerance-checked test passes the reference computed under another summation order
    (every core's threads) and in float64, with the error at most 1 / ``MIN_MARGIN`` of its
    tolerance, and no exact-match test changes its result under either: a correct solution
    written another way, or run on another machine, is not failed by a tolerance the reference
    alone fits (``margins``; expected values from the reference's own run)."""
    found, stopped = _answer(
        "autograder.authoring.margins", subject, margins.MARGINS, MARGINS_TIMEOUT, "measuring the margins"
    )
    if stopped:
        return stopped
    problems = []
    for row in found["rows"]:
        where = f"{row['test']} ({row['tolerance']}) under {row['perturbation']}"
        if row["note"]:
            problems.append(f"{where}: {row['note']}")
        elif row["margin"] < margins.MIN_MARGIN:
            problems.append(
                f"{where}: error {row['max_error']:.2e} against {row['allowed']:.2e} allowed, a margin of"
                f" {row['margin']:.2f}x where {margins.MIN_MARGIN:g}x is the least: loosen the tolerance"
            )
    for flip in found["flips"]:
        under = flip["perturbation"] + (f" ({flip['note']})" if flip["note"] else "")
        problems.append(
            f"{flip['test']} under {under}: an exact-match test whose result changes (judge it with a tolerance)"
        )
    return problems


def _answer(module: str, subject, marker: str, timeout: int, what: str, **settings: str) -> tuple[Any, list[str]]:
    """Run ``python -m module <stage folder>`` and read the JSON it prints after ``marker``:
    ``(answer, [])``, or ``(None, [why there is none])`` when it timed out or stopped."""
    command = [sys.executable, "-m", module, str(subject.stage.folder)]
    try:
        done = subprocess.run(
            command, cwd=ROOT, env=_child_env(**settings), capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return None, [f"{what} did not finish in {timeout} s"]
    found = [line for line in done.stdout.splitlines() if line.startswith(marker)]
    if done.returncode != 0 or not found:
        return None, [f"{what} stopped (exit status {done.returncode}):\n{_tail(done)}"]
    return json.loads(found[-1][len(marker) :]), []


def _child_env(**settings: str) -> dict[str, str]:
    """The environment of a child process: this one's, with this checkout's code found first."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **settings}


def _phase(when: str) -> str:
    return "" if when == "call" else f" ({when})"


def _last_lines(text: str) -> str:
    return "\n".join(f"    {line}" for line in text.rstrip().splitlines()[-OUTPUT_LINES:])


def _tail(done: subprocess.CompletedProcess) -> str:
    return _last_lines((done.stdout or "") + (done.stderr or ""))
