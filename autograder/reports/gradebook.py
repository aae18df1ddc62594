"""The class gradebook: ``grades.csv``, a row per submission and a column per question."""

import csv
import io

from autograder.engine.judge import TestResult


def question_scores(results: list[TestResult], qids: list[str]) -> dict[str, float]:
    """Points earned per question."""
    scores = {q: 0.0 for q in qids}
    for r in results:
        scores[r.qid] = scores.get(r.qid, 0.0) + r.score
    return scores


def gradebook_csv(rows: list[tuple[str, dict[str, float]]], qids: list[str], maxima: dict[str, float]) -> str:
    """The class gradebook: a row per submission, a column per question, then the total."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["submission", *qids, "total"])
    writer.writerow(["(max)", *(f"{maxima[q]:g}" for q in qids), f"{sum(maxima.values()):g}"])
    for name, scores in rows:
        writer.writerow([name, *(f"{scores[q]:g}" for q in qids), f"{sum(scores.values()):g}"])
    return buffer.getvalue()
