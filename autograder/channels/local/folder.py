"""The folder ``gptcourse grade`` writes, and merges into.

Per student ``<out>/<student>/``: ``results.json`` (Gradescope's schema), ``feedback.md``
and ``graded.json`` (the record: the source file and its SHA-256, the stage, a fingerprint
of the tests and fixtures it was graded with, the LMS id its path carried, when). For the
class: ``grades.csv``, with ``canvas.csv`` when students have Canvas ids and ``moodle.csv``
when they have email addresses (``gradebook``); for
a stage with written questions, each student's ``written.json`` and the class's ``written.md``
(``written``). Every file is written atomically.

Grading into a folder that already holds results *merges*: the students graded now get
their folders rewritten, every other student's folder is kept, and the gradebook is
rebuilt from all the folders, so that ``grades.csv`` and ``gptcourse report`` always
describe the same class. Which of the given files are graded:

- by default, all of them;
- ``changed``: those never graded into this folder, or whose file's SHA-256 differs from
  the one recorded, or that were graded with other tests or fixtures;
- ``only_failed``: those never graded into this folder, or whose recorded results fall
  short of full marks.
"""

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from autograder.engine import codec
from autograder.engine.pipeline import Graded, grade_batch
from autograder.engine.results import cell_notes, dump_json, gradescope_json, write_atomic
from autograder.engine.runner import Limits
from autograder.engine.suites import StageTests
from autograder.reports.feedback import feedback_markdown

from .gradebook import Gradebook, write_gradebook
from .identity import Identity, identify
from .records import RECORD, RESULTS, StudentFolder, read_folder, read_record
from .roster import Student
from .written import changed_since_scored, read_answers, save_answers, write_class_file


def file_hash(path: Path) -> str:
    """The SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tests_fingerprint(tests: StageTests) -> str:
    """A hash of what decides a grade besides the submission: the suites' sources, the fixtures and
    the course's code of the earlier answers, and the hidden tests that prove each public test."""
    digest = hashlib.sha256()
    for suite in tests.suites:
        digest.update(suite.label.encode() + b"\0" + suite.source.encode() + b"\0")
    encoded = {key: codec.encode(value) for key, value in sorted(tests.fixtures.items())}
    digest.update(json.dumps(encoded, sort_keys=True, separators=(",", ":")).encode())
    if tests.given:  # the course's code of the earlier answers, which grading runs in their cells
        digest.update(json.dumps(tests.given, sort_keys=True).encode())
    if tests.partners:  # the hidden tests whose pass lets each public test's points count
        digest.update(json.dumps(tests.partners, sort_keys=True).encode())
    return digest.hexdigest()


def known_sources(out_dir: Path) -> dict[Path, str]:
    """``{resolved source path: student}`` of the files graded into ``out_dir`` before."""
    known = {}
    for folder in read_folder(out_dir):
        source = folder.record.get("source")
        if isinstance(source, str) and source:
            known[Path(source)] = folder.key
    return known


def needs_grading(path: Path, key: str, out_dir: Path, fingerprint: str, changed: bool, only_failed: bool) -> str:
    """Why ``path`` (the student ``key``) is to be graded now; "" when ``changed``/``only_failed`` skip it."""
    folder = Path(out_dir) / key
    record = read_record(folder)
    try:
        results = json.loads((folder / RESULTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        results = None
    if not record or not isinstance(results, dict):
        return "not graded into this folder before"
    if changed and record.get("sha256") != file_hash(path):
        return "the file changed"
    if changed and record.get("tests") != fingerprint:
        return "the tests or fixtures changed"
    found = StudentFolder(key, results, record)
    if only_failed and (not found.max_score or found.score < found.max_score):
        return "it did not earn full marks"
    return "" if changed or only_failed else "asked for"


def write_submission(graded: Graded, out_dir: Path, show_hidden: bool = False, record: dict | None = None) -> Path:
    """Write ``out_dir/<name>/results.json``, ``feedback.md`` and (given one) the record; return the results' path."""
    notes = cell_notes(graded.outcome)
    target = out_dir / graded.name / RESULTS
    write_atomic(target, dump_json(gradescope_json(graded.results, output=notes, execution_time=graded.seconds)))
    feedback = feedback_markdown(graded.name, graded.stage_id, graded.results, notes, show_hidden)
    write_atomic(out_dir / graded.name / "feedback.md", feedback)
    if record is not None:
        write_atomic(out_dir / graded.name / RECORD, json.dumps(record, indent=2, sort_keys=True) + "\n")
    return target


@dataclass
class FolderRun:
    """What one run did: the submissions graded now, those skipped, and the class's gradebook."""

    graded: list[Graded]
    identities: list[Identity]  # of every given file, in order
    skipped: list[tuple[str, Path]] = field(default_factory=list)  # (student, file) not graded again
    gradebook: Gradebook | None = None
    # (student, earlier file): graded now from another file than the one their kept results came from
    replaced: list[tuple[str, str]] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # students kept from before, graded with other tests
    # (student, written question): an answer this run changed, whose score typed before is kept
    rescore: list[tuple[str, str]] = field(default_factory=list)


def run_folder(
    paths: list[Path],
    tests: StageTests,
    out_dir: Path,
    limits: Limits | None = None,
    *,
    names: str = "auto",
    workers: int = 1,
    progress: bool = True,
    show_hidden: bool = False,
    changed: bool = False,
    only_failed: bool = False,
    roster: list[Student] | None = None,
    canvas_assignment: str | None = None,
    written: list | None = None,
    moodle_item: str | None = None,
) -> FolderRun:
    """Grade ``paths`` (all, or those ``changed``/``only_failed`` select) into ``out_dir``, keep
    every other student's folder, and rebuild the gradebook from them all.

    ``written`` are the stage's written questions (``build.written.WrittenQuestion``): each
    student's answers are kept beside the results, and the gradebook gets their columns
    (``channels.local.written``). With no paths, only the gradebook is rebuilt (to take in
    the written scores typed into ``grades.csv``)."""
    out_dir = Path(out_dir)
    before = {f.key: f.record for f in read_folder(out_dir, tests.stage_id)}  # another stage's: refused here
    identities = identify(paths, tests.stage_id, names, known_sources(out_dir))
    fingerprint = tests_fingerprint(tests)
    chosen, skipped = select_files(paths, identities, out_dir, fingerprint, changed, only_failed)
    records = new_records(chosen, tests.stage_id, fingerprint)
    answered_before = {identity.key: read_answers(out_dir / identity.key) for _, identity in chosen}
    done = []
    if chosen:
        done = grade_batch(
            [p for p, _ in chosen],
            [i.key for _, i in chosen],
            tests,
            limits or Limits(),
            workers=workers,
            progress=progress,
            write=lambda graded: write_student(graded, out_dir, show_hidden, records[graded.name], bool(written)),
        )
    points = {q.id: q.points for q in written or []}
    book = write_gradebook(out_dir, tests, roster, canvas_assignment, points, moodle_item)
    write_class_file(out_dir, written or [], book)
    graded_now = {identity.key for _, identity in chosen}
    # the students kept from before (their folders untouched by this run) whose tests are not the stage's now
    stale = [key for key, record in before.items() if key not in graded_now and record.get("tests") != fingerprint]
    rescore = changed_since_scored(out_dir, book, answered_before)
    return FolderRun(done, identities, skipped, book, replaced_files(before, records), stale, rescore)


def select_files(
    paths: list[Path], identities: list[Identity], out_dir: Path, fingerprint: str, changed: bool, only_failed: bool
) -> tuple[list[tuple[Path, Identity]], list[tuple[str, Path]]]:
    """The files to grade now, each with its identity, and the ``(student, file)`` that ``changed`` or
    ``only_failed`` skip (``needs_grading``; a path that is no file is never skipped)."""
    chosen, skipped = [], []
    for path, identity in zip(map(Path, paths), identities):
        if (
            (changed or only_failed)
            and path.is_file()
            and not needs_grading(path, identity.key, out_dir, fingerprint, changed, only_failed)
        ):
            skipped.append((identity.key, path))
        else:
            chosen.append((path, identity))
    return chosen, skipped


def new_records(chosen: list[tuple[Path, Identity]], stage_id: str, fingerprint: str) -> dict[str, dict]:
    """``{student: record}`` of the files graded now: what each ``graded.json`` will hold, stamped with this time."""
    when = datetime.now(UTC).isoformat(timespec="seconds")
    return {
        identity.key: {
            "stage": stage_id,
            "source": str(path.resolve()),
            "sha256": file_hash(path) if path.is_file() else "",
            "tests": fingerprint,
            "lms_id": identity.lms_id,
            "named_by": identity.source,
            "late": identity.late,
            "graded_at": when,
        }
        for path, identity in chosen
    }


def replaced_files(before: dict[str, dict], records: dict[str, dict]) -> list[tuple[str, str]]:
    """The students graded now from another file than the one their kept results came from, each
    with that earlier file: a regrade that may have put an older submission over a newer one.

    >>> replaced_files({"bob": {"source": "/late/bob.ipynb"}}, {"bob": {"source": "/subs/bob.ipynb"}})
    [('bob', '/late/bob.ipynb')]
    """
    replaced = []
    for key, record in records.items():
        earlier = before.get(key, {}).get("source")
        if isinstance(earlier, str) and earlier and earlier != record["source"]:
            replaced.append((key, earlier))
    return replaced


def write_student(graded: Graded, out_dir: Path, show_hidden: bool, record: dict, answers: bool) -> None:
    """``write_submission``, and the student's written answers when the stage has written questions."""
    write_submission(graded, out_dir, show_hidden, record)
    if answers:
        save_answers(graded.path, out_dir / graded.name)


def grade_into_folder(
    paths: list[Path], tests: StageTests, out_dir: Path, limits: Limits | None = None, **options
) -> list[Graded]:
    """Grade every one of ``paths`` into ``out_dir`` (``run_folder``'s options); the graded submissions, in order."""
    return run_folder(paths, tests, out_dir, limits, **options).graded
