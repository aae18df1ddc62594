"""One otter submission graded by the engine, in a process of its own.

``python -m autograder.channels.otter.worker NOTEBOOK OUT``, started by the plugin in the
zip's ``files/gptcourse/`` folder (so that the zip's engine is the one imported), grades
NOTEBOOK with the stage the zip carries (``stage/``, ``gptcourse.json`` there) through the
engine's pipeline: the student's code in confined child processes, judged here, every
stray process killed before anything is written. It writes to OUT, as JSON, each test's
result (its question, public or hidden, points, the message a student sees) and the
engine's own results.json document, the one the Gradescope zip writes.

``--platform-timeout SECONDS`` (Gradescope, otter grade's containers): the submission's
code gets that timeout less what the otter process has used and a reserve for judging,
writing and otter's own steps after the engine (``budget``); without it, the engine's
defaults, as ``gptcourse grade``'s. ``--metadata FILE`` (Gradescope's
``submission_metadata.json``): the stage's rate limit, as the engine's own zip applies it
(``channels.gradescope.rate_limit``): a submission over the limit is not graded and
carries over the results of the last graded one (``carried_over``); the file is made
readable by this user only while the student's code runs. ``--self-check`` (the end of
the zip's ``setup.sh``): check torch and grade an empty notebook, so that a broken image
fails when it is built.

otter's process never hosts the engine's children: ``otter run`` is the instructor's own
process, whose other children (otter's kernel) the engine's sweep of strays must not touch.
"""

import argparse
import json
import os
import sys
from pathlib import Path

import autograder
from autograder.channels.gradescope.entry import (
    read_metadata,
    self_check,
    shipped_tests,
    shipped_written,
    written_section,
)
from autograder.channels.gradescope.rate_limit import check_rate_limit
from autograder.channels.gradescope.settings import GradescopeSettings, read_shipped
from autograder.engine import processes, sandbox
from autograder.engine.container import RESERVE, grading_budget, process_seconds
from autograder.engine.pipeline import Graded, grade_submission
from autograder.engine.results import cell_notes, gradescope_json, write_atomic
from autograder.engine.runner import Limits
from autograder.engine.suites import StageTests

from . import PROTOCOL

SOURCE = Path(__file__).resolve().parents[3]  # the zip's files/gptcourse/: the engine, stage/, gptcourse.json
OTTER_RESERVE = 30.0  # seconds kept, on top of the engine's reserve, for otter's kernel, its tests and its results


def budget(platform_timeout: float, elapsed: float) -> float:
    """Seconds the submission's code may run when the platform stops everything at ``platform_timeout``.

    >>> budget(600, elapsed=20)
    475.0
    """
    return grading_budget(platform_timeout, elapsed=elapsed, reserve=RESERVE + OTTER_RESERVE)


def document(graded: Graded, tests: StageTests, settings: GradescopeSettings, written: str = "") -> dict:
    """What the plugin reads: every test's result and the engine's results.json document, whose
    output ends with ``written`` (the written questions' answers, ``entry.written_section``)."""
    doc = gradescope_json(
        graded.results,
        output="\n".join(x for x in (cell_notes(graded.outcome), written) if x),
        execution_time=graded.seconds,
        hidden_visibility=settings.hidden_visibility,
    )
    results = [
        {
            "key": r.key,
            "qid": r.qid,
            "public": r.public,
            "score": r.score,
            "max_score": r.max_score,
            "message": shown["output"],
        }
        for r, shown in zip(graded.results, doc["tests"], strict=True)
    ]
    return {
        "protocol": PROTOCOL,
        "stage": tests.stage_id,
        "engine": str(Path(autograder.__file__).resolve().parent),
        "questions": tests.questions(),
        "results": results,
        "gradescope": doc,
        "fallback": graded.outcome.isolation.get("fallback"),
        "seconds": graded.seconds,
    }


def carried_over(doc: dict, tests: StageTests) -> dict:
    """What the plugin reads for a submission over the rate limit: ``doc`` (``rate_limit.Limited.doc``,
    the last graded submission's results) and, per test of the stage, the result it carried over."""
    shown = {t.get("name"): t for t in doc.get("tests", []) if isinstance(t, dict)}
    results = [
        {
            "key": case.key,
            "qid": case.qid,
            "public": case.public,
            "score": float(shown.get(case.key, {}).get("score", 0.0)),
            "max_score": case.points,
            "message": str(shown.get(case.key, {}).get("output", "not graded: over the submission limit")),
        }
        for case in tests.cases
    ]
    return {
        "protocol": PROTOCOL,
        "stage": tests.stage_id,
        "engine": str(Path(autograder.__file__).resolve().parent),
        "questions": tests.questions(),
        "results": results,
        "gradescope": doc,
        "fallback": None,
        "seconds": 0.0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m autograder.channels.otter.worker", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("notebook", nargs="?", help="the submission (otter's copy of it)")
    parser.add_argument("out", nargs="?", help="where to write what the plugin reads (JSON)")
    parser.add_argument("--platform-timeout", type=float, help="the platform's timeout for the whole run, in seconds")
    parser.add_argument("--metadata", type=Path, help="Gradescope's submission_metadata.json (the rate limit)")
    parser.add_argument("--self-check", action="store_true", help="check torch, grade an empty notebook, exit")
    args = parser.parse_args(argv)
    settings, torch_version = read_shipped(SOURCE / "gptcourse.json")
    processes.become_subreaper()
    if args.self_check:
        return self_check(settings, torch_version)
    if not (args.notebook and args.out):
        parser.error("give the NOTEBOOK to grade and the OUT file (or --self-check)")
    tests = shipped_tests(settings.stage, SOURCE)
    limits = Limits()
    if args.platform_timeout is not None:
        limits = Limits(total_timeout=budget(args.platform_timeout, elapsed=process_seconds(os.getppid())))
    if args.metadata is not None:
        limited = check_rate_limit(read_metadata(args.metadata), settings)
        if limited is not None:
            write_atomic(Path(args.out), json.dumps(carried_over(limited.doc, tests)))
            return 0
        # Where the child cannot get a mount namespace it runs as another user on the real
        # filesystem: the submission's metadata (names, emails, earlier scores) must be ours alone.
        sandbox.protect([args.metadata])
    graded = grade_submission(Path(args.notebook), tests, limits)
    processes.reap_strays()
    written = written_section(Path(args.notebook), shipped_written(SOURCE))
    write_atomic(Path(args.out), json.dumps(document(graded, tests, settings, written)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
