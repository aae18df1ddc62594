"""``report.png``: the class report at a glance, drawn from ``class_report.summarise``'s numbers.

Three panels, sized to what they hold so that no label overlaps another:

- top left, the totals: a histogram (``class_report.histogram``, the bins of ``report.md``),
  its title counting the submissions and, apart, the roster's students who handed in nothing;
- top right, the share of students with full marks per question, one horizontal bar per
  question, its name on the y axis, in the order of ``report.md``;
- below, across the width, the most common mistakes (at most ``SHOWN``, most students first),
  one horizontal bar each, named ``question: mistake`` on the y axis, the name wrapped at word
  boundaries and shortened with an ellipsis past ``LABEL_LINES`` lines (``shorten``; the full
  names are in ``report.md`` and ``mistakes.csv``).

Counts of students have whole-number ticks. The figure is drawn on a bare ``Figure`` (no
pyplot, no global state), so the same report always gives the same picture.
"""

import textwrap
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, PercentFormatter

from .class_report import ClassReport, MistakeRow, histogram

SHOWN = 12  # mistakes drawn, the most common
LABEL_WIDTH = 60  # characters per line of a mistake's name
LABEL_LINES = 2  # lines of a mistake's name before it is cut with an ellipsis
WIDTH = 12.0  # inches
INCH_PER_LINE = 0.2  # height of one line of a y-axis label
DPI = 100


def shorten(text: str, width: int = LABEL_WIDTH, lines: int = LABEL_LINES) -> str:
    """``text`` wrapped at spaces into at most ``lines`` lines of at most ``width`` characters,
    ending in "…" where words were left out (a single word longer than ``width`` is split).

    >>> print(shorten("not implemented (the stub still raises NotImplementedError)", width=24))
    not implemented (the
    stub still raises…
    >>> shorten("shift: first token dropped", width=24, lines=1)
    'shift: first token…'
    """
    return "\n".join(
        textwrap.wrap(" ".join(text.split()), width, max_lines=lines, placeholder="…", break_on_hyphens=False)
    )


def most_common(report: ClassReport, limit: int = SHOWN) -> list[MistakeRow]:
    """The ``limit`` mistakes made by the most students, over all questions (ties: by question, then name)."""
    rows = [row for q in report.questions for row in q.mistakes]
    return sorted(rows, key=lambda r: (-len(r.students), r.qid, r.label))[:limit]


def plot(report: ClassReport, target: Path) -> None:
    """Draw ``report.png`` (see the module docstring) into ``target``."""
    draw(report).savefig(target, dpi=DPI)


def draw(report: ClassReport) -> Figure:
    """The figure of ``report``: its height grows with the questions and the lines of the mistakes' names."""
    rows = most_common(report)
    labels = [shorten(f"{row.qid}: {row.label}") for row in rows]
    top_height = 1.4 + INCH_PER_LINE * 1.5 * max(len(report.questions), 6)
    bottom_height = 1.2 + INCH_PER_LINE * max(sum(label.count("\n") + 1.5 for label in labels), 4)
    fig = Figure(figsize=(WIDTH, top_height + bottom_height), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[top_height, bottom_height])
    totals_axes, questions_axes = top.subplots(1, 2, width_ratios=[1, 1.2])
    draw_totals(totals_axes, report)
    draw_full_marks(questions_axes, report)
    draw_mistakes(bottom.subplots(), rows, labels, sum(len(q.mistakes) for q in report.questions))
    return fig


def draw_totals(ax: Axes, report: ClassReport) -> None:
    """The histogram of totals, the bins of ``report.md``."""
    bins = histogram(report.totals, report.max_score)
    lows, counts = [low for low, _, _ in bins], [count for _, _, count in bins]
    ax.bar(lows, counts, width=bins[0][1] - bins[0][0], align="edge", color="#4c72b0", edgecolor="white")
    ax.set_xlim(0, bins[-1][1])
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(f"total (out of {report.max_score:g})")
    ax.set_ylabel("students")
    n, absent = len(report.students), len(report.absent)
    nobody = f"; {absent} handed in nothing" if absent else ""  # the roster's, counted apart
    ax.set_title(f"Totals ({n} submission{'s' if n != 1 else ''}{nobody})")


def draw_full_marks(ax: Axes, report: ClassReport) -> None:
    """Per question, the share of students with full marks: a bar each, the first question on top."""
    qids = [q.qid for q in report.questions]
    ax.barh(qids, [100 * q.pass_rate for q in report.questions], color="#55a868")
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.xaxis.set_major_formatter(PercentFormatter())
    ax.set_xlabel("students with full marks")
    ax.set_title("Full marks per question")


def draw_mistakes(ax: Axes, rows: list[MistakeRow], labels: list[str], made: int) -> None:
    """The most common mistakes, most students on top; ``made``: how many mistakes there are in all."""
    ax.set_title("Most common mistakes" + (f" ({len(rows)} of {made})" if made > len(rows) else ""))
    if not rows:
        ax.text(0.5, 0.5, "no test failed", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    ax.barh(range(len(rows)), [len(row.students) for row in rows], color="#c44e52")
    ax.set_yticks(range(len(rows)), labels, fontsize=9)
    ax.invert_yaxis()
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("students")
