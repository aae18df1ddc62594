"""The ``gptcourse`` command: build the release, grade submissions, report, check a stage, demo.

``train`` and ``sample`` belong to the ``training`` package, which is imported only when
one of them runs: grading never imports the reference solutions or the training code.
"""

import argparse
import os
import sys
from pathlib import Path

from .course import ROOT, all_stages, get_stage
from .engine.runner import Limits
from .errors import UsageError

DEMO_MISTAKES = ["build_vocab-ids-start-at-1", "get_batch-last-valid-start-never-drawn", "ngram-uses-the-first-n-1-ids-of-a-long-context"]


def _cores() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def _positive(kind):
    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value

    return parse


def cmd_build(args: argparse.Namespace) -> int:
    from .build.release import build_stage

    stages = [get_stage(s) for s in (args.stages or [s.id for s in all_stages()])]
    for stage in stages:
        build_stage(stage, Path(args.out))
    return 0


def cmd_grade(args: argparse.Namespace) -> int:
    from .build.fixtures import DEFAULT_DIR, stage_tests

    stage = get_stage(args.stage)
    paths = [Path(p) for p in args.files]
    if args.nbgrader and paths:
        raise UsageError("give either --nbgrader COURSE_DIR or notebook files, not both")
    if args.student and not args.nbgrader:
        raise UsageError("--student goes with --nbgrader COURSE_DIR")
    if args.nbgrader:
        return grade_nbgrader_course(args, stage)
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise UsageError(f"no such file: {', '.join(missing)}")
    if not paths and not args.nbgrader:
        raise UsageError("name at least one submission to grade (or --nbgrader COURSE_DIR)")
    tests = stage_tests(stage, Path(args.fixtures) if args.fixtures else DEFAULT_DIR)
    limits = Limits(total_timeout=args.timeout, cell_timeout=min(Limits.cell_timeout, args.timeout))
    out = Path(args.out)
    done = grade_folder(paths, tests, limits, out, args)
    if not args.quiet:
        print(score_table(done, tests))
        print(f"results: {out}/<submission>/results.json, gradebook: {out / 'grades.csv'}")
    return 0


def grade_folder(paths: list[Path], tests, limits: Limits, out: Path, args: argparse.Namespace) -> list:
    """Grade ``paths`` into ``out`` (results.json and feedback.md each, then grades.csv); warn of test faults."""
    from .reports.folder import grade_into_folder

    done = grade_into_folder(paths, tests, out, limits, workers=args.workers, progress=not args.quiet, show_hidden=args.show_hidden)
    for graded in done:
        for fault in graded.faults:
            print(f"gptcourse: warning: a test could not judge {graded.name}'s output: {fault}", file=sys.stderr)
    fallbacks = sorted({g.outcome.isolation["fallback"] for g in done if g.outcome.isolation.get("fallback")})
    for reason in fallbacks:
        print(f"gptcourse: warning: the student code ran less confined than this machine should allow ({reason})", file=sys.stderr)
    return done


def grade_nbgrader_course(args: argparse.Namespace, stage) -> int:
    """``nbgrader autograde`` in the course (it grades through the engine), then the gradebook's scores."""
    from .channels.nbgrader.autograde import gradebook_rows, require_engine, run_autograde, table

    course = Path(args.nbgrader)
    require_engine(course)
    qids = [q for q, _ in stage.tests().questions()]
    gradebook_rows(course, stage.id, qids)  # a usage error, before any grading, when the assignment is missing
    settings = [f"--GradeWithEngine.results_directory={Path(args.out).resolve()}"]
    if args.timeout != Limits.total_timeout:
        settings.append(f"--GradeWithEngine.timeout={args.timeout}")
    status = run_autograde(course, stage.id, args.student, tuple(settings), quiet=args.quiet)
    if status != 0:
        print(f"gptcourse: error: nbgrader autograde failed in {course} (exit {status}; see its log above)", file=sys.stderr)
        return 1
    questions, rows = gradebook_rows(course, stage.id, qids)
    if not args.quiet:
        print(table([r for r in rows if not args.student or r.student == args.student], questions))
        for row in rows:
            if row.manual:
                print(f"{row.student}: the manual scores of {', '.join(row.manual)} are kept (nbgrader marks them for review)")
        print(f"nbgrader gradebook of {course}: {stage.id} autograded by the gptcourse engine; results.json per student in {args.out}/")
    return 0


def score_table(graded, tests) -> str:
    """A plain-text table: a row per submission, a column per question."""
    qs = tests.questions()
    width = max([len("submission"), *(len(g.name) for g in graded)])
    head = "submission".ljust(width) + "".join(f"  {q:>{max(len(q), 5)}}" for q, _ in qs) + "   total"
    lines = [head, "(max)".ljust(width) + "".join(f"  {p:>{max(len(q), 5)}g}" for q, p in qs) + f"  {sum(p for _, p in qs):6g}"]
    for g in graded:
        per = {q: 0.0 for q, _ in qs}
        for r in g.results:
            per[r.qid] += r.score
        lines.append(g.name.ljust(width) + "".join(f"  {per[q]:>{max(len(q), 5)}g}" for q, _ in qs) + f"  {g.total:6g}")
    return "\n".join(lines)


def cmd_demo(args: argparse.Namespace) -> int:
    from .authoring.catalogue import catalogue
    from .authoring.variants import write_variant
    from .build.fixtures import DEFAULT_DIR, stage_tests
    from .build.notebooks import make_notebook, write_notebook
    from .build.release import build_stage

    stage = get_stage("01_tokenisation")
    out = Path(args.out)
    print("== 1. Building the release of stage 01 (student notebook, fixtures, Gradescope zip, nbgrader)")
    build_stage(stage, ROOT / "release")
    folder = out / "submissions"
    write_notebook(make_notebook(stage, "reference"), folder / "reference.ipynb")
    write_notebook(make_notebook(stage, "student"), folder / "empty-release.ipynb")
    samples = [folder / "reference.ipynb", folder / "empty-release.ipynb"]
    samples += [write_variant(stage, m, folder) for m in catalogue(stage)[0] if m.slug in DEMO_MISTAKES]
    print(f"\n== 2. Grading {len(samples)} sample submissions of stage 01 (the reference, the empty release, realistic mistakes) from {folder}/")
    tests = stage_tests(stage, DEFAULT_DIR)
    done = grade_folder(samples, tests, Limits(), out, argparse.Namespace(show_hidden=False, workers=2, quiet=False))
    print()
    print(score_table(done, tests))
    print(f"\nresults.json per submission and grades.csv are in {out}/")
    return 0


def cmd_check_stage(args: argparse.Namespace) -> int:
    from .authoring.lint import lint_stage

    stages = [get_stage(s) for s in args.stages] if args.stages else all_stages()
    failed = 0
    for stage in stages:
        report = lint_stage(stage, grade=not args.quick, workers=args.workers)
        print(report.render())
        failed += not report.ok
    return 1 if failed else 0


def cmd_report(args: argparse.Namespace) -> int:
    from .reports.class_report import write_report

    print(write_report(Path(args.folder)))
    print(f"written: {Path(args.folder) / 'report.md'}, {Path(args.folder) / 'report.png'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] in (["train"], ["sample"]):
        from training.cli import main as training_main  # imported only here: grading never needs it

        return training_main(argv, prog="gptcourse")
    parser = argparse.ArgumentParser(prog="gptcourse", description="Build and grade the gptcourse notebooks.")
    sub = parser.add_subparsers(dest="command", required=True)

    build = sub.add_parser("build", help="build the student release, fixtures, Gradescope zips and nbgrader course")
    build.add_argument("--out", default=str(ROOT / "release"), help="output folder (default: release/)")
    build.add_argument("--stages", nargs="+", metavar="S", help="only these stages (default: all written ones)")
    build.set_defaults(run=cmd_build)

    grade = sub.add_parser("grade", help="grade submissions of one stage")
    grade.add_argument("--stage", required=True, help="e.g. 01_tokenisation (or 01)")
    grade.add_argument("--out", default="grades", help="output folder (default: grades/)")
    grade.add_argument("--workers", type=_positive(int), default=_cores(), help="submissions graded at once (default: all cores)")
    grade.add_argument("--timeout", type=_positive(float), default=Limits.total_timeout, help="seconds allowed per submission (default: 600)")
    grade.add_argument("--fixtures", help="folder of fixture files (default: release/fixtures, rebuilt when stale)")
    grade.add_argument("--quiet", action="store_true", help="no progress bar or table")
    grade.add_argument("--show-hidden", action="store_true", help="include hidden-test results in each feedback.md (after the deadline)")
    grade.add_argument("--nbgrader", metavar="COURSE_DIR", help="run nbgrader autograde in this course (it grades through the engine) and show its gradebook")
    grade.add_argument("--student", metavar="ID", help="with --nbgrader: only this student")
    grade.add_argument("files", nargs="*", help=".ipynb files (any name) or zips holding one notebook")
    grade.set_defaults(run=cmd_grade)

    report = sub.add_parser("report", help="per-question pass rates and the most frequent failures of a graded class")
    report.add_argument("folder", help="the --out folder of gptcourse grade")
    report.set_defaults(run=cmd_report)

    demo = sub.add_parser("demo", help="build, then grade the bundled sample submissions of stage 01")
    demo.add_argument("--out", default="grades/demo", help="output folder (default: grades/demo)")
    demo.set_defaults(run=cmd_demo)

    check = sub.add_parser("check-stage", help="check a stage's folder: notebook, tests, catalogue, reference (for course authors)")
    check.add_argument("stages", nargs="*", metavar="STAGE", help="stages to check (default: all)")
    check.add_argument("--quick", action="store_true", help="only the checks that need no grading (seconds)")
    check.add_argument("--workers", type=_positive(int), default=_cores(), help="submissions graded at once")
    check.set_defaults(run=cmd_check_stage)

    # listed here for --help; their arguments belong to the training package (see main's first lines)
    sub.add_parser("train", help="train the reference GPT, then sample from it (gptcourse train --help)")
    sub.add_parser("sample", help="generate text from a checkpoint of gptcourse train (gptcourse sample --help)")

    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except UsageError as exc:
        print(f"gptcourse: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
