"""``report.png`` (``autograder.reports.figure``), checked without looking at it: mistake names
shortened at word boundaries, whole-number ticks for counts of students, no label over another.

The reports are built by hand (no grading), one with many questions and long mistake names, one
with a single student, so that the checks are quick.
"""

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from autograder.reports.class_report import ClassReport, MistakeRow, QuestionStats, StudentLine
from autograder.reports.failures import KINDS, UNRECOGNISED
from autograder.reports.figure import LABEL_LINES, LABEL_WIDTH, SHOWN, draw, plot, shorten

LONG_NAMES = [
    *(label for _, label, _ in KINDS),
    f"{UNRECOGNISED}, in: 400 merges on a 500 kB text within 20 times the reference's time, on a small machine",
    "padding mask (B, T, 1): blocks queries instead of keys",
    "x" * 150,  # one word longer than a line
]


@pytest.mark.parametrize("text", LONG_NAMES)
def test_shorten_keeps_whole_words_and_marks_a_cut(text):
    short = shorten(text)
    lines = short.split("\n")
    assert len(lines) <= LABEL_LINES and all(len(line) <= LABEL_WIDTH for line in lines)
    kept = " ".join(lines).removesuffix("…")
    if short.endswith("…"):
        assert len(kept) < len(text)
        if " " in text:  # cut after a whole word, never inside one
            assert text.startswith(kept) and text[len(kept)] == " "
    else:
        assert kept == text  # nothing lost but the line breaks


def test_shorten_leaves_short_names_whole():
    assert shorten("shift: first token dropped") == "shift: first token dropped"


def report_of(students: int, questions: int, mistakes_per_question: int) -> ClassReport:
    """A report built by hand: long question names, long mistake names, up to ``students`` making each."""
    stats = []
    for q in range(questions):
        qid = f"question_number_{q}_of_a_long_stage"
        rows = [
            MistakeRow(qid, LONG_NAMES[(q + m) % len(LONG_NAMES)] + f" ({m})", "mistake", tests=1)
            for m in range(mistakes_per_question)
        ]
        for m, row in enumerate(rows):
            row.students = [f"student{s}" for s in range(1 + (q * 7 + m * 3) % students)]
        stats.append(QuestionStats(qid, 10.0, students, students - 1, 7.5 * students, students, rows))
    lines = [StudentLine(f"student{s}", 7.0 * (s % 11), 10.0 * questions, {}, []) for s in range(students)]
    return ClassReport(stats, lines)


def drawn(report: ClassReport):
    fig = draw(report)
    FigureCanvasAgg(fig).draw()
    return fig


def shown_tick_labels(ax) -> list:
    """The tick labels drawn: with text, within the axis's limits (a locator may place one past them)."""
    if not ax.axison:  # no mistake to show: a line of text instead
        return []
    (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
    xs = [t for t in ax.get_xticklabels() if x0 <= t.get_position()[0] <= x1]
    ys = [t for t in ax.get_yticklabels() if y0 <= t.get_position()[1] <= y1]
    return [t for t in xs + ys if t.get_text()]


@pytest.mark.parametrize("students,questions,mistakes,absent", [(100, 9, 4, 25), (1, 6, 1, 0), (3, 2, 0, 1)])
def test_the_figure_counts_in_whole_students_and_overlaps_no_label(students, questions, mistakes, absent):
    report = report_of(students, questions, mistakes)
    report.absent = [f"absent{a}" for a in range(absent)]  # the roster's students who handed in nothing
    fig = drawn(report)
    totals, full_marks, worst = fig.subfigs[0].axes + fig.subfigs[1].axes
    title = totals.get_title()
    assert title.endswith(f"; {absent} handed in nothing)") if absent else "handed in nothing" not in title
    for ticks in (totals.get_yticks(), worst.get_xticks() if mistakes else []):
        assert all(float(t).is_integer() for t in ticks), ticks
    assert [t.get_text() for t in full_marks.get_yticklabels()] == [q.qid for q in report.questions]
    named = [t.get_text() for t in worst.get_yticklabels()] if mistakes else []
    assert len(named) == min(SHOWN, questions * mistakes) and all(name.count("\n") < LABEL_LINES for name in named)
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    for ax in (totals, full_marks, worst):
        labels = shown_tick_labels(ax)
        boxes = [t.get_window_extent(renderer) for t in labels]
        assert all(page.x0 <= b.x0 and b.x1 <= page.x1 and page.y0 <= b.y0 and b.y1 <= page.y1 for b in boxes)
        for i, box in enumerate(boxes):
            assert not any(box.overlaps(other) for other in boxes[i + 1 :]), labels[i].get_text()
    panels = [ax.get_tightbbox(renderer) for ax in (totals, full_marks, worst)]
    assert not panels[0].overlaps(panels[1]) and not panels[0].overlaps(panels[2])
    assert not panels[1].overlaps(panels[2])


def test_the_same_report_draws_the_same_png(tmp_path):
    report = report_of(30, 8, 3)
    plot(report, tmp_path / "a.png")
    plot(report, tmp_path / "b.png")
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
