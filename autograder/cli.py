"""The ``gptcourse`` command: build the release, grade submissions, run the demo."""

import argparse
import os
import sys
from pathlib import Path

from .runner import Limits
from .stages import ROOT, UsageError, available_stages, get_stage

DEMO_MISTAKES = ["build_vocab-ids-start-at-1", "get_batch-last-valid-start-never-drawn", "ngram-uses-the-first-n-1-ids-of-a-long-context"]


def _positive(kind):
    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value

    return parse


def cmd_build(args: argparse.Namespace) -> int:
    from .build.release import build_stage

    stages = [get_stage(s) for s in args.stages] if args.stages else available_stages()
    for stage in stages:
        build_stage(stage, Path(args.out))
    return 0


def cmd_grade(args: argparse.Namespace) -> int:
    from .fixtures import DEFAULT_DIR, load_fixtures
    from .grading import grade_many

    stage = get_stage(args.stage)
    paths = [Path(p) for p in args.files]
    if args.nbgrader and paths:
        raise UsageError("give either --nbgrader COURSE_DIR or notebook files, not both")
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise UsageError(f"no such file: {', '.join(missing)}")
    if not paths and not args.nbgrader:
        raise UsageError("name at least one submission to grade (or --nbgrader COURSE_DIR)")
    fixtures = load_fixtures(stage, Path(args.fixtures) if args.fixtures else DEFAULT_DIR)
    limits = Limits(total_timeout=args.timeout, cell_timeout=min(Limits.cell_timeout, args.timeout))
    out = Path(args.out)
    if args.nbgrader:
        return grade_nbgrader_course(args, stage, fixtures, limits, out)
    done = grade_many(stage, paths, out, fixtures, limits, workers=args.workers, progress=not args.quiet, show_hidden=args.show_hidden)
    if not args.quiet:
        print(score_table(done, stage.id))
        print(f"results: {out}/<submission>/results.json, gradebook: {out / 'grades.csv'}")
    return 0


def grade_nbgrader_course(args: argparse.Namespace, stage, fixtures, limits: Limits, out: Path) -> int:
    """Grade an nbgrader course's submitted/ tree and write the scores into its gradebook."""
    import tempfile

    from .grading import grade_many
    from .nbgrader_bridge import find_submitted, require_assignment, stage_copies, write_gradebook
    from .results import question_scores
    from .stages import questions

    course = Path(args.nbgrader)
    submitted = find_submitted(course, stage.id)
    require_assignment(course, stage.id)
    with tempfile.TemporaryDirectory(prefix="gptcourse-nbgrader-") as tmp:
        paths = stage_copies(submitted, Path(tmp))
        done = grade_many(stage, paths, out, fixtures, limits, workers=args.workers, progress=not args.quiet, show_hidden=args.show_hidden)
    qids = [q for q, _ in questions(stage.id)]
    report = write_gradebook(course, stage.id, submitted, {g.name: question_scores(g.results, qids) for g in done})
    if not args.quiet:
        print(score_table(done, stage.id))
        for item in submitted:
            if item.note:
                print(f"{item.student}: {item.note}")
        for kept in report.kept_manual:
            print(f"kept the manual score already given for {kept}")
        print(f"nbgrader gradebook of {course}: {len(report.written)} submissions of {stage.id} written; results and feedback in {out}/")
    return 0


def score_table(graded, stage_id: str) -> str:
    """A plain-text table: a row per submission, a column per question."""
    from .stages import questions

    qs = questions(stage_id)
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
    from .build.notebooks import make_notebook, write_notebook
    from .build.release import build_stage
    from .fixtures import DEFAULT_DIR, load_fixtures
    from .grading import grade_many
    from .mistakes import catalogue
    from .submissions import write_variant

    stage = get_stage("01_tokenisation")
    out = Path(args.out)
    print("== 1. Building the release of stage 01 (student notebook, fixtures, Gradescope zip, nbgrader)")
    build_stage(stage, ROOT / "release")
    folder = out / "submissions"
    write_notebook(make_notebook(stage, "reference"), folder / "reference.ipynb")
    write_notebook(make_notebook(stage, "student"), folder / "empty-release.ipynb")
    samples = [folder / "reference.ipynb", folder / "empty-release.ipynb"]
    samples += [write_variant(stage, m, folder) for m in catalogue(stage.id)[0] if m.slug in DEMO_MISTAKES]
    print(f"\n== 2. Grading {len(samples)} sample submissions of stage 01 (the reference, the empty release, realistic mistakes) from {folder}/")
    done = grade_many(stage, samples, out, load_fixtures(stage, DEFAULT_DIR), Limits(), workers=2)
    print()
    print(score_table(done, stage.id))
    print(f"\nresults.json per submission and grades.csv are in {out}/")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from .report import write_report

    print(write_report(Path(args.folder)))
    print(f"written: {Path(args.folder) / 'report.md'}, {Path(args.folder) / 'report.png'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gptcourse", description="Build and grade the gptcourse notebooks.")
    sub = parser.add_subparsers(dest="command", required=True)

    build = sub.add_parser("build", help="build the student release, fixtures, Gradescope zips and nbgrader course")
    build.add_argument("--out", default=str(ROOT / "release"), help="output folder (default: release/)")
    build.add_argument("--stages", nargs="+", metavar="S", help="only these stages (default: all written ones)")
    build.set_defaults(run=cmd_build)

    grade = sub.add_parser("grade", help="grade submissions of one stage")
    grade.add_argument("--stage", required=True, help="e.g. 01_tokenisation (or 01)")
    grade.add_argument("--out", default="grades", help="output folder (default: grades/)")
    grade.add_argument("--workers", type=_positive(int), default=max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1), help="submissions graded at once (default: all cores)")
    grade.add_argument("--timeout", type=_positive(float), default=Limits.total_timeout, help="seconds allowed per submission (default: 600)")
    grade.add_argument("--fixtures", help="folder of fixture files (default: release/fixtures, rebuilt when stale)")
    grade.add_argument("--quiet", action="store_true", help="no progress bar or table")
    grade.add_argument("--show-hidden", action="store_true", help="include hidden-test results in each feedback.md (after the deadline)")
    grade.add_argument("--nbgrader", metavar="COURSE_DIR", help="grade COURSE_DIR/submitted/<student>/<stage>/ and write the scores into its nbgrader gradebook")
    grade.add_argument("files", nargs="*", help=".ipynb files (any name) or zips holding one notebook")
    grade.set_defaults(run=cmd_grade)

    report = sub.add_parser("report", help="per-question pass rates and the most frequent failures of a graded class")
    report.add_argument("folder", help="the --out folder of gptcourse grade")
    report.set_defaults(run=cmd_report)

    demo = sub.add_parser("demo", help="build, then grade the bundled sample submissions of stage 01")
    demo.add_argument("--out", default="grades/demo", help="output folder (default: grades/demo)")
    demo.set_defaults(run=cmd_demo)

    from training.cli import add_commands  # train and sample: the training package

    add_commands(sub)

    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except UsageError as exc:
        print(f"gptcourse: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
