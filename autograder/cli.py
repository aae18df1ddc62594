"""The ``gptcourse`` command: build the release, grade submissions, report, check a stage, demo.

``train`` and ``sample`` belong to the ``training`` package, which is imported only when
one of them runs: grading never imports the reference solutions or the training code.
"""

import argparse
import math
import sys
import zipfile
from pathlib import Path

from .course import ROOT, all_stages, get_stage
from .engine.runner import Limits
from .errors import UsageError

DEMO_STAGE = "01_tokenisation"  # what `make demo` grades, into grades/demo
DEMO_MISTAKES = [
    "build_vocab-ids-start-at-1",
    "get_batch-last-valid-start-never-drawn",
    "ngram-uses-the-first-n-1-ids-of-a-long-context",
]


def _cores() -> int:
    """Submissions graded at once, one thread each: $GPTCOURSE_THREADS, else the usable CPUs."""
    from .kit.threads import worker_count

    return worker_count()


def _positive(kind):
    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value

    return parse


def cmd_build(args: argparse.Namespace) -> int:
    from .build.release import build_stages, stale_outputs

    build_stages([get_stage(s) for s in (args.stages or [s.id for s in all_stages()])], Path(args.out))
    stale = stale_outputs(Path(args.out))
    if stale:
        print(
            "left by an earlier build, for no stage the course has now (delete them, so that none is handed out"
            f" or uploaded by mistake): {', '.join(str(p) for p in stale)}"
        )
    return 0


def submission_files(items: list[str]) -> list[Path]:
    """The files named, with every notebook (and zip) below each folder named, in order; a
    Blackboard attempt's details (``identity.BLACKBOARD_DETAILS``) are passed over with a line
    that says so."""
    from .channels.local.identity import BLACKBOARD_DETAILS

    paths = []
    for item in map(Path, items):
        if item.is_dir():
            found = sorted(
                p
                for p in item.rglob("*")
                if p.suffix.lower() in (".ipynb", ".zip") and p.is_file() and ".ipynb_checkpoints" not in p.parts
            )
            if not found:
                raise UsageError(f"no .ipynb or .zip file under {item}")
            paths += found
        elif BLACKBOARD_DETAILS.match(item.name):  # named when a shell expands folder/*
            print(f"skipped {item}: Blackboard's details of an attempt, not a submission")
        elif item.is_file():
            paths.append(item)
        else:
            raise UsageError(f"no such file: {item}")
    return paths


def cmd_grade(args: argparse.Namespace) -> int:
    from .build.fixtures import DEFAULT_DIR, stage_tests
    from .build.written import written_questions
    from .kit.threads import configure_threads

    stage = get_stage(args.stage)
    if args.nbgrader and args.files:
        raise UsageError("give either --nbgrader COURSE_DIR or notebook files, not both")
    if args.student and not args.nbgrader:
        raise UsageError("--student goes with --nbgrader COURSE_DIR")
    if args.nbgrader:
        return grade_nbgrader_course(args, stage)
    out = Path(args.out)
    if not args.files and not (out / "grades.csv").is_file():
        raise UsageError("name at least one submission to grade (or --nbgrader COURSE_DIR)")
    paths = submission_files(args.files) if args.files else []  # none: rebuild the gradebook only
    roster = load_roster(args.roster, out)
    configure_threads(1)  # this process only compares outputs: the workers get the CPUs
    args.workers = args.workers or _cores()  # read when grading, not when every command starts
    tests = stage_tests(stage, Path(args.fixtures) if args.fixtures else DEFAULT_DIR)
    limits = Limits(total_timeout=args.timeout, cell_timeout=min(Limits.cell_timeout, args.timeout))
    run = grade_folder(paths, tests, limits, out, args, roster, written_questions(stage))
    if not args.quiet:
        if paths:
            print(score_table(run.graded, tests))
        else:
            book = run.gradebook
            absent = f", and {len(book.absent)} on the roster with no submission" if book.absent else ""
            print(f"no file given: the gradebook of {out} was rebuilt ({len(book.rows)} students{absent})")
        print(folder_summary(run, out, args))
    return 0


def load_roster(path: str | None, out: Path):
    """The roster given (kept as ``out/roster.csv`` for later runs), else the one kept, else None."""
    from .channels.local.roster import read_roster

    if path:
        roster = read_roster(Path(path))
        out.mkdir(parents=True, exist_ok=True)
        if Path(path).resolve() != (out / "roster.csv").resolve():
            (out / "roster.csv").write_bytes(Path(path).read_bytes())
        return roster
    kept = out / "roster.csv"
    return read_roster(kept) if kept.is_file() else None


def grade_folder(
    paths: list[Path], tests, limits: Limits, out: Path, args: argparse.Namespace, roster=None, written=None
):
    """Grade ``paths`` into ``out`` (merging with what it holds) and rebuild its gradebook (with the
    written questions' columns); warn of test faults."""
    from .channels.local.folder import run_folder

    run = run_folder(
        paths,
        tests,
        out,
        limits,
        names=getattr(args, "names", "auto"),
        workers=args.workers,
        progress=not args.quiet,
        show_hidden=args.show_hidden,
        changed=getattr(args, "changed", False),
        only_failed=getattr(args, "only_failed", False),
        roster=roster,
        canvas_assignment=getattr(args, "canvas_assignment", None),
        written=written,
        moodle_item=getattr(args, "moodle_item", None),
    )
    for graded in run.graded:
        for fault in graded.faults:
            print(f"gptcourse: warning: a test could not judge {graded.name}'s output: {fault}", file=sys.stderr)
        for problem in submission_problems(graded):
            print(f"gptcourse: warning: {problem}", file=sys.stderr)
    fallbacks = sorted({g.outcome.isolation["fallback"] for g in run.graded if g.outcome.isolation.get("fallback")})
    for reason in fallbacks:
        print(
            f"gptcourse: warning: the student code ran less confined than this machine should allow ({reason})",
            file=sys.stderr,
        )
    return run


def submission_problems(graded) -> list[str]:
    """What the instructor should know of a submission beyond its scores: a file that could not be
    graded (unreadable, not a notebook), or a notebook of another stage than the one graded."""
    file = f"{graded.name} ({graded.path.name})" if graded.path is not None else graded.name
    problems = []
    if graded.outcome.fatal:
        problems.append(f"{file} could not be graded, scored {graded.total:g}: {graded.outcome.fatal}")
    if graded.outcome.wrong_stage:
        named, stage = graded.outcome.wrong_stage
        problems.append(
            f"{file} is a notebook of stage {named}, not {stage}; graded by {stage}'s tests, it scored "
            f"{graded.total:g} (its feedback says so)"
        )
    return problems


def _named_twice(book) -> str:
    """The students several submissions name, each with them: 'Alice Smith (s1): alice, smithalice'."""
    named = []
    for who, rows in book.named_twice.items():
        name = (rows[0].student.name if rows[0].student else "") or rows[0].key
        named.append(f"{name} ({who}): {', '.join(r.key for r in rows)}")
    return "; ".join(named)


def folder_summary(run, out: Path, args: argparse.Namespace) -> str:
    """What the run did to the folder: kept and skipped students, the roster's matches, the files to use."""
    book = run.gradebook
    imports = [name for name in ("canvas.csv", "moodle.csv") if (out / name).is_file()]
    lines = [
        *_regrade_lines(run, args),
        *_caveat_lines(run, args),
        *_unmatched(book, imports),
        *(_canvas_scale(book, out) if "canvas.csv" in imports else []),
        *_roster_lines(book, out, imports),
        *_written_lines(book, out),
    ]
    return "\n".join([*lines, _files_line(out, imports)])


def _regrade_lines(run, args: argparse.Namespace) -> list[str]:
    """The lines on what was graded again: the students skipped, those kept, those graded from another file."""
    lines = []
    kept = len(run.gradebook.rows) - len(run.graded)
    if run.skipped:
        why = "unchanged since they were graded" if args.changed else "already at full marks"
        lines.append(f"not graded again ({why}): {', '.join(k for k, _ in run.skipped)}")
    if kept > 0:
        lines.append(f"kept {kept} student(s) graded before; the gradebook has {len(run.gradebook.listed)} rows")
    if run.replaced:
        lines.append(
            "graded now from another file than the one graded before, whose results this replaced (check it is"
            " the newer submission; if not, grade that file again): "
            + ", ".join(f"{key} (was {Path(earlier).name})" for key, earlier in run.replaced)
        )
    return lines


def _caveat_lines(run, args: argparse.Namespace) -> list[str]:
    """The lines on results to check: written answers changed, kept rows of other tests, hidden tests still
    hidden, late submissions."""
    lines = []
    if run.rescore:
        lines.append(
            "written answers changed since their score was typed (the score is kept: check it in grades.csv"
            f" against written.md): {', '.join(f'{key} ({qid})' for key, qid in run.rescore)}"
        )
    if run.stale:
        lines.append(
            "graded with other tests than the stage has now (a rebuild changed them; their rows are not comparable:"
            f" grade their files again): {', '.join(run.stale)}"
        )
    graded_now = {g.name for g in run.graded}
    hidden_kept = [row.key for row in run.gradebook.rows if row.key not in graded_now]
    if args.show_hidden and hidden_kept:
        lines.append(
            "--show-hidden rewrote the feedback of the students graded now only; it still hides the hidden tests"
            f" for {', '.join(hidden_kept)} (grade their files again with --show-hidden, without --changed or"
            " --only-failed)"
        )
    late = [i.key for i in run.identities if i.late]
    if late:
        lines.append(f"marked late by the LMS (recorded in graded.json; no penalty applied): {', '.join(late)}")
    return lines


def _roster_lines(book, out: Path, imports: list[str]) -> list[str]:
    """The lines on the LMS imports against the roster: students named twice, absent, without an email,
    and Moodle's maximum grade."""
    lines = []
    if book.named_twice and imports:
        lines.append(
            f"named by more than one submission (each in grades.csv, none in {_and(imports)}: remove all but one "
            f"from {out} and run again): {_named_twice(book)}"
        )
    if book.absent:
        lines.append(
            f"in the roster with no submission (a row of 0s in {_and(['grades.csv', *imports])}): "
            + ", ".join(s.name or s.id for s in book.absent)
        )
    no_email = [row.who for row in book.listed if row.student and not row.email]
    if "moodle.csv" in imports and no_email:
        lines.append(f"in the roster without an email address (left out of moodle.csv): {', '.join(no_email)}")
    if "moodle.csv" in imports:
        lines.append(
            f"moodle.csv: set the Moodle grade item's maximum grade to {book.possible:g} (this stage's points) before"
            " importing: Moodle refuses the whole file if one grade is above the item's maximum"
        )
    return lines


def _written_lines(book, out: Path) -> list[str]:
    """The line on the written questions left to grade by hand; none for a stage without any."""
    from .channels.local.written import still_to_grade

    if not book.written:
        return []
    answered, blank = still_to_grade(out, book)
    left = f", {blank} left blank (score them 0)" if blank else ""
    return [
        f"written questions ({', '.join(book.written)}): {answered} answer(s) to grade by hand{left}; read them "
        f"in {out / 'written.md'}, type the scores into grades.csv, then run this command again (files optional)"
    ]


def _files_line(out: Path, imports: list[str]) -> str:
    """The last line: the files the run leaves in ``out`` to use (results, gradebook, the LMS ``imports`` written)."""
    files = f"results: {out}/<student>/results.json, gradebook: {out / 'grades.csv'}"
    if "canvas.csv" in imports:
        files += f", Canvas import: {out / 'canvas.csv'}"
    if "moodle.csv" in imports:
        files += f", Moodle import: {out / 'moodle.csv'}"
    return files


def _unmatched(book, imports: list[str]) -> list[str]:
    """The lines naming the students the roster does not know, by what the gradebook files hold of them:
    no id at all, or the id an LMS wrote into the file's name (which puts them in canvas.csv when it is
    Canvas's; Moodle's import needs an email, which only a roster gives)."""
    groups: dict[str, list[str]] = {}
    for row in (r for r in book.rows if r.key in book.unmatched):
        facts = ["the id of the file's name in grades.csv" if row.id else "no id in grades.csv"]
        if "canvas.csv" in imports:
            facts.append("in canvas.csv by that id: check it is theirs" if row.canvas_id else "left out of canvas.csv")
        if "moodle.csv" in imports:
            facts.append("left out of moodle.csv")
        who = f"{row.key} ({row.id})" if row.id else row.key
        groups.setdefault(", ".join(facts), []).append(who)
    return [f"not in the roster ({facts}): {', '.join(who)}" for facts, who in groups.items()]


def _canvas_scale(book, out: Path) -> list[str]:
    """The line saying that Canvas's export, kept as the roster, gives ``canvas.csv``'s assignment column
    other points possible than the stage's (the scale of the totals ``canvas.csv`` holds); none otherwise."""
    from .channels.local.gradebook import canvas_column
    from .channels.local.roster import points_possible

    column = canvas_column(out / "canvas.csv")
    possible = points_possible(out / "roster.csv").get(column or "")
    if possible is None or math.isclose(possible, book.possible, abs_tol=1e-9):
        return []
    written = book.possible - book.autograded
    worth = f"{book.possible:g}" + (f" ({book.autograded:g} autograded + {written:g} written)" if book.written else "")
    return [
        f"Canvas's export (the roster) gives the column {column!r} {possible:g} points possible, but this stage's "
        f"points are {worth}, the scale of canvas.csv's totals: imported as they are, Canvas reads them out of "
        f"{possible:g} (set the assignment's points to {book.possible:g} in Canvas first)"
    ]


def _and(names: list[str]) -> str:
    """Names listed as a sentence would list them.

    >>> _and(["grades.csv"]), _and(["grades.csv", "canvas.csv"]), _and(["a", "b", "c"])
    ('grades.csv', 'grades.csv and canvas.csv', 'a, b and c')
    """
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def grade_nbgrader_course(args: argparse.Namespace, stage) -> int:
    """``nbgrader autograde`` in the course (it grades through the engine), then the gradebook's scores."""
    from .build.written import written_questions
    from .channels.nbgrader.autograde import (
        gradebook_rows,
        not_autograded,
        record_course,
        require_engine,
        run_autograde,
    )

    course = Path(args.nbgrader)
    require_engine(course)
    qids = [q for q, _ in stage.tests().questions()]
    written = [q.id for q in written_questions(stage)]
    gradebook_rows(course, stage.id, qids)  # a usage error, before any grading, when the assignment is missing
    status = run_autograde(course, stage.id, args.student, _nbgrader_settings(args), quiet=args.quiet)
    questions, rows = gradebook_rows(course, stage.id, qids, written)
    graded_now = [r.student for r in rows if not args.student or r.student == args.student]
    failed = not_autograded(course, stage.id, graded_now) if status != 0 else {}
    if status != 0 and not failed:
        print(
            f"gptcourse: error: nbgrader autograde failed in {course} (exit {status}; see its log above)",
            file=sys.stderr,
        )
        return 1
    rows = [r for r in rows if r.student in graded_now and r.student not in failed]  # a failed one's 0 is no grade
    record_course(Path(args.out), course, stage.id, [r.student for r in rows])  # for gptcourse report
    if not args.quiet:
        _print_nbgrader_gradebook(rows, questions, course, stage, args.out)
    if failed:
        _print_nbgrader_failures(failed, course, stage, status)
        return 1
    return 0


def _nbgrader_settings(args: argparse.Namespace) -> tuple[str, ...]:
    """The engine's settings for ``nbgrader autograde``: the results folder, and the timeout unless the default."""
    settings = [f"--GradeWithEngine.results_directory={Path(args.out).resolve()}"]
    if args.timeout != Limits.total_timeout:
        settings.append(f"--GradeWithEngine.timeout={args.timeout}")
    return tuple(settings)


def _print_nbgrader_gradebook(rows, questions, course: Path, stage, out: str) -> None:
    """Print the nbgrader gradebook's scores, the manual scores kept, the written questions waiting, the files."""
    from .channels.nbgrader.autograde import table

    print(table(rows, questions))
    for row in rows:
        if row.manual:
            print(
                f"{row.student}: the manual scores of {', '.join(row.manual)} are kept (nbgrader marks them for review)"
            )
    waiting = sorted({w for row in rows for w in row.ungraded})
    if waiting:
        print(
            f"written questions to grade in the formgrader: {', '.join(waiting)} "
            f"({sum(bool(r.ungraded) for r in rows)} student(s)); the engine never scores them"
        )
    print(
        f"nbgrader gradebook of {course}: {stage.id} autograded by the gptcourse "
        f"engine; results.json per student in {out}/"
    )


def _print_nbgrader_failures(failed: dict, course: Path, stage, status: int) -> None:
    """Print, to stderr, the submissions ``nbgrader autograde`` failed on, each with why."""
    print(
        f"gptcourse: error: nbgrader autograde failed on {len(failed)} submission(s) of {stage.id} "
        f"in {course} (exit {status}; its log is above), left out of the gradebook shown:",
        file=sys.stderr,
    )
    for student, why in failed.items():
        print(f"  {student}: {why}", file=sys.stderr)


def score_table(graded, tests) -> str:
    """A plain-text table: a row per submission, a column per question."""
    qs = tests.questions()
    width = max([len("submission"), *(len(g.name) for g in graded)])
    head = "submission".ljust(width) + "".join(f"  {q:>{max(len(q), 5)}}" for q, _ in qs) + "   total"
    lines = [
        head,
        "(max)".ljust(width) + "".join(f"  {p:>{max(len(q), 5)}g}" for q, p in qs) + f"  {sum(p for _, p in qs):6g}",
    ]
    for g in graded:
        per = g.per_question(tests)
        lines.append(g.name.ljust(width) + "".join(f"  {per[q]:>{max(len(q), 5)}g}" for q, _ in qs) + f"  {g.total:6g}")
    return "\n".join(lines)


def demo_mistakes(mistakes: list) -> list:
    """The demo's mistakes: 01's chosen three, else the first catalogued mistake of each of the first
    three questions."""
    chosen = [m for m in mistakes if m.slug in DEMO_MISTAKES]
    if chosen:
        return chosen
    first: dict[str, object] = {}
    for mistake in mistakes:
        first.setdefault(mistake.qid, mistake)
    return list(first.values())[:3]


def demo_folder(stage) -> Path:
    """The demo's default output folder: ``grades/demo`` for stage 01 (``make demo``), else
    ``grades/demo-<stage>``, so that the demo of one stage never writes into another's."""
    return Path("grades/demo") if stage.id == DEMO_STAGE else Path(f"grades/demo-{stage.id}")


def other_stage_in(out: Path, stage) -> str | None:
    """The other stage whose results (their records) or sample notebooks (their metadata) ``out``
    holds, None when it holds only ``stage``'s or nothing."""
    from .channels.local.records import read_folder
    from .engine.submission import SubmissionError, load_notebook_json, notebook_stage

    for folder in read_folder(out):
        if folder.record.get("stage") not in (None, stage.id):
            return folder.record["stage"]
    for path in sorted((out / "submissions").glob("*.ipynb")):
        try:
            named = notebook_stage(load_notebook_json(path))
        except SubmissionError:
            continue
        if named not in (None, stage.id):
            return named
    return None


def cmd_demo(args: argparse.Namespace) -> int:
    from .authoring.catalogue import catalogue
    from .authoring.variants import write_variant
    from .build.fixtures import DEFAULT_DIR, stage_tests
    from .build.notebooks import make_notebook, write_notebook
    from .build.release import build_stage
    from .build.written import written_questions

    stage = get_stage(args.stage)
    out = Path(args.out) if args.out else demo_folder(stage)
    other = other_stage_in(out, stage)
    if other:  # refused before anything is written: the folder keeps the other stage's demo whole
        default = demo_folder(stage)
        hint = f"leave out --out: the demo of {stage.id} goes to {default}" if out != default else "use --out FOLDER"
        raise UsageError(f"{out} holds the demo of {other}; nothing was written ({hint})")
    print(f"== 1. Building the release of stage {stage.id} (student notebook, fixtures, Gradescope zip, nbgrader)")
    build_stage(stage, ROOT / "release")
    folder = out / "submissions"
    write_notebook(make_notebook(stage, "reference"), folder / "reference.ipynb")
    write_notebook(make_notebook(stage, "student"), folder / "empty-release.ipynb")
    samples = [folder / "reference.ipynb", folder / "empty-release.ipynb"]
    samples += [write_variant(stage, m, folder) for m in demo_mistakes(catalogue(stage)[0])]
    print(
        f"\n== 2. Grading {len(samples)} sample submissions of stage {stage.id} "
        f"(the reference, the empty release, realistic mistakes) from {folder}/"
    )
    tests = stage_tests(stage, DEFAULT_DIR)
    done = grade_folder(
        samples,
        tests,
        Limits(),
        out,
        argparse.Namespace(show_hidden=False, workers=2, quiet=False),
        written=written_questions(stage),
    ).graded
    print()
    print(score_table(done, tests))
    print(f"\nresults.json per submission and grades.csv are in {out}/")
    return 0


def cmd_check_stage(args: argparse.Namespace) -> int:
    from .authoring.lint import lint_stage

    stages = [get_stage(s) for s in args.stages] if args.stages else all_stages()
    failed = 0
    for stage in stages:
        report = lint_stage(stage, grade=not args.quick, workers=args.workers or _cores(), reuse=not args.every_test)
        print(report.render())
        failed += not report.ok
    return 1 if failed else 0


def cmd_report(args: argparse.Namespace) -> int:
    from .channels.nbgrader.autograde import report_written
    from .reports.class_report import write_report

    folder = Path(args.folder)
    print(write_report(folder, report_written))
    print(f"written: {folder / 'report.md'}, {folder / 'report.png'}, {folder / 'mistakes.csv'}")
    return 0


def cmd_gradescope_run(args: argparse.Namespace) -> int:
    from .build.gradescope_tryout import run_zip

    for path in (args.zip, args.notebook):
        if not Path(path).is_file():
            raise UsageError(f"no such file: {path}")
    expected = "the autograder comes first: release/gradescope/<stage>.zip or release/otter/<stage>.zip"
    if not zipfile.is_zipfile(args.zip):
        raise UsageError(f"{args.zip} is not a zip file ({expected})")
    with zipfile.ZipFile(args.zip) as archive:
        if "run_autograder" not in archive.namelist():
            raise UsageError(f"{args.zip} has no run_autograder, so it is no autograder zip ({expected})")
    tried = run_zip(Path(args.zip), Path(args.notebook), gradescope_limits=args.gradescope_limits)
    print(tried.stdout.rstrip())
    if tried.stderr.strip():
        print(tried.stderr.rstrip(), file=sys.stderr)
    doc = tried.results
    if not doc.get("tests"):
        print(
            f"gptcourse: no valid results.json was written (run_autograder exited {tried.returncode})", file=sys.stderr
        )
        return 1
    print(tryout_line(tried, args.gradescope_limits))
    if args.out:
        from .engine.results import dump_json, write_atomic

        write_atomic(Path(args.out), dump_json(doc))
        print(f"results: {args.out}")
    if tried.returncode != 0:
        said = "\n".join(f"  {t['name']}: {t.get('output', '')}" for t in doc["tests"][:3])
        print(f"gptcourse: the autograder failed (exit {tried.returncode}); its results.json:\n{said}", file=sys.stderr)
        return 1
    return 0


def tryout_line(tried, gradescope_limits: bool) -> str:
    """The last line of ``gradescope-run``: the score, the time, and whether Gradescope's limits applied.

    >>> from autograder.build.gradescope_tryout import Tryout
    >>> print(tryout_line(Tryout({"score": 12, "tests": [{"max_score": 58}]}, 0, 4.2, "", "", "unconfined"), False))
    score 12 of 58 in 4 s; without Gradescope's memory and CPU limits (add --gradescope-limits to apply them)
    """
    doc = tried.results
    worth = sum(t.get("max_score", 0.0) for t in doc["tests"])  # otter's error document has no points
    peak = f", peak memory {tried.peak_memory / 2**20:.0f} MB" if tried.peak_memory else ""
    if gradescope_limits:
        limits = f"limited by {tried.confined}"
    else:
        limits = "without Gradescope's memory and CPU limits (add --gradescope-limits to apply them)"
    return f"score {doc['score']:g} of {worth:g} in {tried.seconds:.0f} s{peak}; {limits}"


def _add_build_parser(sub: argparse._SubParsersAction) -> None:
    """The ``build`` subcommand's arguments."""
    build = sub.add_parser(
        "build", help="build the student release, fixtures, Gradescope and otter zips and nbgrader course"
    )
    build.add_argument("--out", default=str(ROOT / "release"), help="output folder (default: release/)")
    build.add_argument(
        "--stages",
        nargs="+",
        metavar="S",
        help="these stages, and the later ones whose notebooks hold their answers (default: all written ones)",
    )
    build.set_defaults(run=cmd_build)


def _add_grade_parser(sub: argparse._SubParsersAction) -> None:
    """The ``grade`` subcommand's arguments, in the order ``--help`` lists them."""
    grade = sub.add_parser("grade", help="grade submissions of one stage")
    grade.add_argument("--stage", required=True, help="e.g. 01_tokenisation (or 01)")
    grade.add_argument("--out", default="grades", help="output folder (default: grades/)")
    _add_grade_run_options(grade)
    grade.add_argument(
        "--nbgrader",
        metavar="COURSE_DIR",
        help="run nbgrader autograde in this course (it grades through the engine) and show its gradebook",
    )
    grade.add_argument("--student", metavar="ID", help="with --nbgrader: only this student")
    _add_grade_class_options(grade)
    which = grade.add_mutually_exclusive_group()
    which.add_argument(
        "--changed",
        action="store_true",
        help="grade only the files never graded into OUT, changed since (SHA-256), or graded with other tests",
    )
    which.add_argument(
        "--only-failed",
        action="store_true",
        help="grade only the files never graded into OUT or short of full marks there",
    )
    grade.add_argument(
        "files",
        nargs="*",
        help=".ipynb files (any name), zips holding one notebook, or folders of them; none: rebuild OUT's "
        "gradebook only (after typing written scores into grades.csv)",
    )
    grade.set_defaults(run=cmd_grade)


def _add_grade_run_options(grade: argparse.ArgumentParser) -> None:
    """``grade``'s options of how it runs: workers, timeout, fixtures, quiet, hidden tests shown."""
    grade.add_argument(
        "--workers",
        type=_positive(int),
        help="submissions graded at once, one thread each (default: $GPTCOURSE_THREADS, "
        "else the CPUs this process may use: its affinity mask within its cgroup's CPU quota)",
    )
    grade.add_argument(
        "--timeout",
        type=_positive(float),
        default=Limits.total_timeout,
        help="seconds allowed per submission (default: 600)",
    )
    grade.add_argument("--fixtures", help="folder of fixture files (default: release/fixtures, rebuilt when stale)")
    grade.add_argument("--quiet", action="store_true", help="no progress bar or table")
    grade.add_argument(
        "--show-hidden",
        action="store_true",
        help="include hidden-test results in each feedback.md (after the deadline)",
    )


def _add_grade_class_options(grade: argparse.ArgumentParser) -> None:
    """``grade``'s options of the class: how students are named, the roster, the LMS columns."""
    grade.add_argument(
        "--names",
        choices=("auto", "folder", "file"),
        default="auto",
        help="name each student after the submission's folder or file name (default auto: LMS download names, "
        "else a folder per student when the files lie one per folder, else the file name)",
    )
    grade.add_argument(
        "--roster",
        metavar="CSV",
        help="the class list (columns id, name, email; or Canvas's or Moodle's gradebook export), "
        "kept in OUT/roster.csv",
    )
    grade.add_argument(
        "--canvas-assignment",
        metavar="COLUMN",
        help="the assignment column of canvas.csv, as Canvas's export heads it, "
        "e.g. 'Tokenisation (123456)' (default: the stage id)",
    )
    grade.add_argument(
        "--moodle-item",
        metavar="COLUMN",
        help="the grade column of moodle.csv (written when the roster has emails), e.g. as Moodle's export heads "
        "the item, 'Assignment: Tokenisation (Real)' (default: the stage id)",
    )


def _add_report_parser(sub: argparse._SubParsersAction) -> None:
    """The ``report`` subcommand's arguments."""
    report = sub.add_parser(
        "report", help="a graded class: totals, pass rates, the mistakes seen per question, a line per student"
    )
    report.add_argument("folder", help="the --out folder of gptcourse grade")
    report.set_defaults(run=cmd_report)


def _add_gradescope_run_parser(sub: argparse._SubParsersAction) -> None:
    """The ``gradescope-run`` subcommand's arguments."""
    tryout = sub.add_parser(
        "gradescope-run", help="grade a notebook with a Gradescope or otter zip on this machine, as Gradescope would"
    )
    tryout.add_argument("zip", help="release/gradescope/<stage>.zip or release/otter/<stage>.zip")
    tryout.add_argument("notebook", help="the submission (.ipynb, or a zip holding one)")
    tryout.add_argument(
        "--gradescope-limits",
        action="store_true",
        help="run under Gradescope's default limits: 768 MB, half a CPU (needs root for a cgroup)",
    )
    tryout.add_argument("--out", help="also write the results.json here")
    tryout.set_defaults(run=cmd_gradescope_run)


def _add_demo_parser(sub: argparse._SubParsersAction) -> None:
    """The ``demo`` subcommand's arguments."""
    demo = sub.add_parser("demo", help="build, then grade sample submissions of one stage (default 01)")
    demo.add_argument("--stage", default=DEMO_STAGE, help=f"e.g. 09_rnn or 9 (default: {DEMO_STAGE})")
    demo.add_argument(
        "--out", help="output folder (default: grades/demo for stage 01, grades/demo-<stage> for another stage)"
    )
    demo.set_defaults(run=cmd_demo)


def _add_check_stage_parser(sub: argparse._SubParsersAction) -> None:
    """The ``check-stage`` subcommand's arguments."""
    check = sub.add_parser(
        "check-stage", help="check a stage's folder: notebook, tests, catalogue, reference (for course authors)"
    )
    check.add_argument("stages", nargs="*", metavar="STAGE", help="stages to check (default: all)")
    check.add_argument(
        "--quick", action="store_true", help="only the static checks: no run of the stage's code, no grading (seconds)"
    )
    check.add_argument("--workers", type=_positive(int), help="submissions graded at once (default: as for grade)")
    check.add_argument(
        "--every-test",
        action="store_true",
        help="run every test on every variant (by default a test that never called the functions a "
        "variant changes takes the reference's output: the same grades, in a fraction of the time)",
    )
    check.set_defaults(run=cmd_check_stage)


def _parser() -> argparse.ArgumentParser:
    """The ``gptcourse`` parser: a subcommand per command, ``train`` and ``sample`` listed for ``--help`` only."""
    parser = argparse.ArgumentParser(prog="gptcourse", description="Build and grade the gptcourse notebooks.")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_build_parser(sub)
    _add_grade_parser(sub)
    _add_report_parser(sub)
    _add_gradescope_run_parser(sub)
    _add_demo_parser(sub)
    _add_check_stage_parser(sub)
    # listed here for --help; their arguments belong to the training package (see main's first lines)
    sub.add_parser("train", help="train the reference GPT, then sample from it (gptcourse train --help)")
    sub.add_parser("sample", help="generate text from a checkpoint of gptcourse train (gptcourse sample --help)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``gptcourse`` command on ``argv`` (default: the process's arguments); its exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] in (["train"], ["sample"]):
        from training.cli import main as training_main  # imported only here: grading never needs it

        return training_main(argv, prog="gptcourse")
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except UsageError as exc:
        print(f"gptcourse: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
