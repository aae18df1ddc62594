"""``gptcourse report DIR``: what a class got right, and which mistakes it made, from a folder of results.json.

Reads every ``DIR/<student>/results.json`` (the folder ``gptcourse grade`` writes, the
same folders ``grades.csv`` is built from) and writes into DIR:

- ``report.md``: the totals (mean, median, a histogram); per question the share with
  full marks, the mean, and the mistakes seen, each with the number of students, of
  failed tests and example students; a table per student with their mistakes;
- ``report.png``: the same at a glance (the histogram of totals, full marks per
  question, the most common mistakes: ``reports.figure``);
- ``mistakes.csv``: one row per question and mistake (question, mistake, kind,
  students, failed tests, the students), for a spreadsheet.

The written questions, graded by hand, are read from ``grades.csv``'s written columns (the
scores typed so far), or, for a class graded by ``gptcourse grade --nbgrader`` (whose folders'
``graded.json`` name the course), from that course's gradebook (the scores typed in nbgrader's
formgrader so far): a section of their own and a column each in the table of students, never
in the totals.

The figures describe the submissions. The roster's students who handed in nothing (the
``(no submission)`` rows of ``grades.csv``, 0 there) are counted and named apart, at the
top of ``report.md`` and in the histogram's title, and are in no statistic: a mean that
folded them in as 0 would describe the class's attendance, not what it got right.

A failed test is named by the mistake it shows (``reports.failures``; a wrong result
with no hint of its own takes the one known mistake the student's other tests of the
question named: ``student_failures``), never by the values in its message, so that one
mistake made by twenty students is one row of twenty.
"""

import csv
import io
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from autograder.channels.local.gradebook import NO_SUBMISSION, WRITTEN
from autograder.channels.local.records import StudentFolder, read_folder
from autograder.engine.results import write_atomic
from autograder.errors import UsageError

from .failures import Failure, classify

EXAMPLES = 3  # students named per mistake in report.md


@dataclass
class MistakeRow:
    """One mistake seen on one question."""

    qid: str
    label: str
    kind: str
    students: list[str] = field(default_factory=list)
    tests: int = 0  # failed tests named by it
    test_names: list[str] = field(default_factory=list)


@dataclass
class QuestionStats:
    qid: str
    max_score: float
    submissions: int = 0
    full_marks: int = 0
    total: float = 0.0
    failed_tests: int = 0
    mistakes: list[MistakeRow] = field(default_factory=list)  # most students first

    @property
    def pass_rate(self) -> float:
        return self.full_marks / self.submissions if self.submissions else 0.0

    @property
    def mean(self) -> float:
        return self.total / self.submissions if self.submissions else 0.0


@dataclass
class StudentLine:
    key: str
    score: float
    max_score: float
    per_question: dict[str, float]
    mistakes: list[str]  # "qid: label", each once


@dataclass
class WrittenStats:
    """A written question, as the scores typed so far show it (None: not graded yet)."""

    qid: str
    max_score: float
    scores: dict[str, float | None] = field(default_factory=dict)  # student -> score

    @property
    def graded(self) -> list[float]:
        return [v for v in self.scores.values() if v is not None]


@dataclass
class ClassReport:
    questions: list[QuestionStats]
    students: list[StudentLine]
    written: list[WrittenStats] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)  # roster students with no submission (name, else id)
    written_from: str = "`grades.csv`"  # where the written scores were typed

    @property
    def totals(self) -> list[float]:
        return [s.score for s in self.students]

    @property
    def max_score(self) -> float:
        return max((s.max_score for s in self.students), default=0.0)


def load_class(folder: Path) -> list[StudentFolder]:
    """Every student folder of ``folder``; a usage error when there is none."""
    found = read_folder(Path(folder))
    if not found:
        raise UsageError(f"no */results.json under {folder}: grade first (gptcourse grade --out {folder} ...)")
    return found


def student_failures(tests: list[dict]) -> dict[str, Failure]:
    """Each failed test of one student, named (``failures.classify``); a wrong result no
    hint of its own explains counts under the known mistake the student's other tests of
    the same question named, when they named exactly one (hints are right or absent, and
    a hidden test without a hint often fails for the same mistake as a public one with).

    >>> tests = [{"name": "q: a", "score": 0, "max_score": 1, "output": "got 2",
    ...           "extra_data": {"mistake": "off by one"}},
    ...          {"name": "q: b", "score": 0, "max_score": 1, "output": "wrong"},
    ...          {"name": "r: c", "score": 0, "max_score": 1, "output": "wrong"}]
    >>> [f.label for f in student_failures(tests).values()]
    ['off by one', 'off by one', 'a wrong result that no known mistake explains, in: c']
    """
    failed = [t for t in tests if float(t.get("score", 0)) < float(t.get("max_score", 0))]
    named = {str(t.get("name", "")): classify(t) for t in failed}
    mistakes: dict[str, set[str]] = {}
    for name, failure in named.items():
        if failure.kind == "mistake":
            mistakes.setdefault(name.split(":", 1)[0], set()).add(failure.label)
    for name, failure in named.items():
        known = mistakes.get(name.split(":", 1)[0], set())
        if failure.kind == "unrecognised" and len(known) == 1:
            named[name] = Failure("mistake", next(iter(known)))
    return named


def summarise(
    folders: list[StudentFolder],
    written: list[WrittenStats] | None = None,
    absent: list[str] | None = None,
    written_from: str = "`grades.csv`",
) -> ClassReport:
    """Per-question statistics with their mistakes, and a line per student (``written``: the
    written questions' typed scores, reported apart from the autograder's, typed into ``written_from``;
    ``absent``: the roster's students with no submission, counted apart from the statistics)."""
    questions: dict[str, QuestionStats] = {}
    rows: dict[tuple[str, str], MistakeRow] = {}
    students = []
    for folder in folders:
        per_q: dict[str, list[float]] = {}
        named: list[str] = []
        named_here = student_failures(folder.results.get("tests", []))
        for test in folder.results.get("tests", []):
            name = str(test.get("name", ""))
            qid = name.split(":", 1)[0]
            got, worth = float(test.get("score", 0)), float(test.get("max_score", 0))
            per_q.setdefault(qid, [0.0, 0.0])
            per_q[qid][0] += got
            per_q[qid][1] += worth
            questions.setdefault(qid, QuestionStats(qid, 0.0))
            if got < worth:
                failure = named_here[name]
                row = rows.setdefault((qid, failure.label), MistakeRow(qid, failure.label, failure.kind))
                row.tests += 1
                if folder.key not in row.students:
                    row.students.append(folder.key)
                if name not in row.test_names:
                    row.test_names.append(name)
                questions[qid].failed_tests += 1
                if f"{qid}: {failure.label}" not in named:
                    named.append(f"{qid}: {failure.label}")
        for qid, (got, worth) in per_q.items():
            stats = questions[qid]
            stats.max_score = max(stats.max_score, worth)
            stats.submissions += 1
            stats.full_marks += got >= worth
            stats.total += got
        students.append(
            StudentLine(folder.key, folder.score, folder.max_score, {q: v[0] for q, v in per_q.items()}, named)
        )
    for (qid, _), row in rows.items():
        questions[qid].mistakes.append(row)
    for stats in questions.values():
        stats.mistakes.sort(key=lambda r: (-len(r.students), -r.tests, r.label))
    return ClassReport(list(questions.values()), students, written or [], absent or [], written_from)


def read_gradebook(folder: Path) -> list[dict[str, str]]:
    """The lines of ``folder/grades.csv`` (none when there is no gradebook)."""
    path = Path(folder) / "grades.csv"
    if not path.is_file():
        return []
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def read_absent(table: list[dict[str, str]]) -> list[str]:
    """The roster's students with no submission in a gradebook's lines, by name (else id).

    >>> read_absent([{"submission": "alice", "name": "A"}, {"submission": "(no submission)", "name": "", "id": "7"}])
    ['7']
    """
    return [r.get("name") or r.get("id") or "?" for r in table if r.get("submission") == NO_SUBMISSION]


def read_written(table: list[dict[str, str]]) -> list[WrittenStats]:
    """The written questions' columns of a gradebook's lines (``channels.local.gradebook``): their
    points from the ``(max)`` row, each student's typed score. None without written columns."""
    maxima = next((r for r in table if r.get("submission") == "(max)"), {})
    found = []
    for column, top in maxima.items():
        if column and column.endswith(WRITTEN) and top:
            stats = WrittenStats(column[: -len(WRITTEN)], float(top))
            for row in table:
                if row is not maxima and row.get("submission") not in ("", None, NO_SUBMISSION):
                    text = (row.get(column) or "").strip()
                    stats.scores[row["submission"]] = float(text) if text else None
            found.append(stats)
    return found


def histogram(totals: list[float], max_score: float, bins: int = 10) -> list[tuple[float, float, int]]:
    """``(low, high, count)`` per bin of equal width over ``[0, max_score]`` (the last bin holds full marks).

    >>> histogram([0, 5, 10, 10], 10, bins=2)
    [(0.0, 5.0, 1), (5.0, 10.0, 3)]
    """
    width = (max_score or 1.0) / bins
    counts = [0] * bins
    for total in totals:
        counts[min(bins - 1, max(0, int(total / width)))] += 1
    return [(i * width, (i + 1) * width, counts[i]) for i in range(bins)]


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")


def render(report: ClassReport) -> str:
    """The report as Markdown."""
    n, top = len(report.students), report.max_score
    totals = report.totals
    lines = [f"# Class report ({n} submissions)", ""]
    if report.absent:
        lines += [
            f"On the roster with no submission, and in none of the figures below: {len(report.absent)} "
            f"student(s) ({_cell(', '.join(report.absent))}), with 0 in `grades.csv`.",
            "",
        ]
    lines += [
        f"Totals out of {top:g}: mean {statistics.mean(totals):.1f}, median {statistics.median(totals):g}, "
        f"lowest {min(totals):g}, highest {max(totals):g}; full marks: {sum(t >= top for t in totals)}.",
        "",
        "| total | students | |",
        "|---|---|---|",
    ]
    for low, high, count in histogram(totals, top):
        lines.append(f"| {low:g}-{high:g} | {count} | {'#' * count} |")
    lines += [
        "",
        "## Questions",
        "",
        "| question | full marks | mean score | most common mistake |",
        "|---|---|---|---|",
    ]
    for q in report.questions:
        common = f"{_cell(q.mistakes[0].label)} ({len(q.mistakes[0].students)})" if q.mistakes else ""
        lines.append(
            f"| {q.qid} | {q.full_marks}/{q.submissions} ({100 * q.pass_rate:.0f}%) "
            f"| {q.mean:.2f} / {q.max_score:g} | {common} |"
        )
    lines += ["", "## Mistakes per question", ""]
    lines.append(
        "Each failed test is named by the known mistake its hint recognised (without a hint of its own, the one "
        "mistake the student's other tests of the question named), else by what stopped the code, else by the test "
        "that caught it; the counts of a question add up to its failed tests."
    )
    for q in report.questions:
        if not q.mistakes:
            continue
        lines += ["", f"### {q.qid}: {q.full_marks}/{q.submissions} with full marks, {q.failed_tests} failed tests", ""]
        lines += ["| mistake | students | failed tests | for example |", "|---|---|---|---|"]
        for row in q.mistakes:
            more = len(row.students) - EXAMPLES
            examples = ", ".join(row.students[:EXAMPLES]) + (f" and {more} more" if more > 0 else "")
            lines.append(f"| {_cell(row.label)} | {len(row.students)} | {row.tests} | {_cell(examples)} |")
    lines += render_written(report.written, report.written_from)
    qids = [q.qid for q in report.questions]
    wids = [w.qid for w in report.written]
    lines += [
        "",
        "## Students",
        "",
        "| student | total | " + " | ".join([*qids, *(f"{w} (written)" for w in wids)]) + " | mistakes |",
        "|---" * (len(qids) + len(wids) + 3) + "|",
    ]
    for s in sorted(report.students, key=lambda s: (-s.score, s.key)):
        scores = [f"{s.per_question.get(q, 0.0):g}" for q in qids]
        scores += [_typed(w.scores.get(s.key)) for w in report.written]
        lines.append(f"| {_cell(s.key)} | {s.score:g} | {' | '.join(scores)} | {_cell('; '.join(s.mistakes))} |")
    return "\n".join(lines) + "\n"


def _typed(score: float | None) -> str:
    return "-" if score is None else f"{score:g}"


def render_written(written: list[WrittenStats], written_from: str) -> list[str]:
    """The report's section on the written questions (none: no lines)."""
    if not written:
        return []
    lines = [
        "",
        "## Written questions",
        "",
        f"Graded by hand: the scores typed into {written_from} so far (`-` in the table of students: not "
        "graded yet). They are not part of the totals above, which are the autograder's.",
        "",
        "| question | graded | mean of those graded |",
        "|---|---|---|",
    ]
    for w in written:
        mean = f"{statistics.mean(w.graded):.2f} / {w.max_score:g}" if w.graded else "-"
        lines.append(f"| {w.qid} | {len(w.graded)}/{len(w.scores)} | {mean} |")
    return lines


def mistakes_csv(report: ClassReport) -> str:
    """``mistakes.csv``: a row per question and mistake."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["question", "mistake", "kind", "students", "failed_tests", "who", "tests"])
    for q in report.questions:
        for row in q.mistakes:
            writer.writerow(
                [
                    q.qid,
                    row.label,
                    row.kind,
                    len(row.students),
                    row.tests,
                    "; ".join(row.students),
                    "; ".join(row.test_names),
                ]
            )
    return buffer.getvalue()


WrittenSource = Callable[[list[StudentFolder]], "tuple[list[WrittenStats], str] | None"]


def write_report(folder: Path, written_elsewhere: WrittenSource | None = None) -> str:
    """Write ``report.md``, ``report.png`` and ``mistakes.csv`` into ``folder``; return the Markdown.

    The written questions' scores are read from ``grades.csv``, unless ``written_elsewhere``
    finds them for these students elsewhere (it returns them and where they were typed, or
    None: the CLI passes the nbgrader channel's ``report_written``)."""
    folder = Path(folder)
    table = read_gradebook(folder)
    folders = load_class(folder)
    found = written_elsewhere(folders) if written_elsewhere is not None else None
    written, written_from = found or (read_written(table), "`grades.csv`")
    report = summarise(folders, written, read_absent(table), written_from)
    text = render(report)
    write_atomic(folder / "report.md", text)
    write_atomic(folder / "mistakes.csv", mistakes_csv(report))
    from .figure import plot  # here: figure.py draws from this module's report (and imports matplotlib)

    plot(report, folder / "report.png")
    return text
