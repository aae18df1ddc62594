"""``gptcourse report DIR``: what a class got right and wrong, from a folder of results.json.

Per question: how many submissions earned full marks and the mean score; then the
failure messages met most often, each with its test. Written as ``report.md`` and a
bar chart ``report.png`` in DIR, and printed.
"""

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from autograder.engine.results import write_atomic
from autograder.errors import UsageError


@dataclass
class QuestionStats:
    qid: str
    max_score: float
    submissions: int
    full_marks: int
    total: float

    @property
    def pass_rate(self) -> float:
        return self.full_marks / self.submissions if self.submissions else 0.0

    @property
    def mean(self) -> float:
        return self.total / self.submissions if self.submissions else 0.0


def load_results(folder: Path) -> dict[str, dict]:
    """``{submission name: results.json document}`` for every submission in ``folder``."""
    docs = {}
    for path in sorted(Path(folder).glob("*/results.json")):
        try:
            docs[path.parent.name] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
    if not docs:
        raise UsageError(f"no */results.json under {folder}: grade first (gptcourse grade --out {folder} ...)")
    return docs


def summarise(docs: dict[str, dict]) -> tuple[list[QuestionStats], list[tuple[str, str, int]]]:
    """Per-question statistics and the most frequent ``(test, message, count)`` failures."""
    stats: dict[str, QuestionStats] = {}
    failures: Counter = Counter()
    for doc in docs.values():
        per_q: dict[str, list[float]] = {}
        for test in doc.get("tests", []):
            qid = str(test.get("name", "")).split(":", 1)[0]
            got, worth = float(test.get("score", 0)), float(test.get("max_score", 0))
            per_q.setdefault(qid, [0.0, 0.0])
            per_q[qid][0] += got
            per_q[qid][1] += worth
            if got < worth:
                first = (str(test.get("output", "")).strip().splitlines() or ["(no message)"])[0][:160]
                failures[(str(test.get("name")), first)] += 1
        for qid, (got, worth) in per_q.items():
            s = stats.setdefault(qid, QuestionStats(qid, worth, 0, 0, 0.0))
            s.submissions += 1
            s.full_marks += got >= worth
            s.total += got
    common = [(name, message, count) for (name, message), count in failures.most_common(12)]
    return list(stats.values()), common


def render(stats: list[QuestionStats], common: list[tuple[str, str, int]], n: int) -> str:
    """The report as Markdown."""
    lines = [f"# Class report ({n} submissions)", "", "| question | full marks | mean score |", "|---|---|---|"]
    for s in stats:
        lines.append(f"| {s.qid} | {s.full_marks}/{s.submissions} ({100 * s.pass_rate:.0f}%) | {s.mean:.2f} / {s.max_score:g} |")
    lines += ["", "## Most frequent failures", "", "| count | test | message |", "|---|---|---|"]
    for name, message, count in common:
        lines.append(f"| {count} | {name} | {message.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def write_report(folder: Path) -> str:
    """Write ``report.md`` and ``report.png`` into ``folder``; return the Markdown."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    docs = load_results(folder)
    stats, common = summarise(docs)
    text = render(stats, common, len(docs))
    write_atomic(Path(folder) / "report.md", text)
    fig, ax = plt.subplots(figsize=(max(4, 1.1 * len(stats)), 3.5))
    ax.bar([s.qid for s in stats], [100 * s.pass_rate for s in stats], color="#4c72b0")
    ax.set_ylabel("% with full marks")
    ax.set_ylim(0, 100)
    ax.set_title(f"Full marks per question ({len(docs)} submissions)")
    ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    fig.savefig(Path(folder) / "report.png", dpi=100)
    plt.close(fig)
    return text
