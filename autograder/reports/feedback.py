"""Feedback for a student: a short Markdown file beside each results.json.

Public results always; hidden results only when the instructor asks (after the
deadline, say). Within a question, failures come first, the most basic ones before
those that follow from them (``Case.builds_on``), each saying so. Never the hidden tests' code or
expected values: messages were already scrubbed by the judge, and hidden-test messages never quote expected values.
"""

from autograder.engine.judge import TestResult, by_cause
from autograder.engine.results import explain_failures


def feedback_markdown(
    name: str, stage_id: str, results: list[TestResult], notes: str = "", show_hidden: bool = False
) -> str:
    """The feedback document for one submission."""
    lines = [f"# Feedback: {stage_id}", "", f"Submission: `{name}`", ""]
    public = [r for r in results if r.public]
    hidden = [r for r in results if not r.public]
    earned = sum(r.score for r in public)
    worth = sum(r.max_score for r in public)
    lines.append(f"**Public tests: {earned:g} of {worth:g} points.**")
    if hidden and show_hidden:
        lines.append(
            f"**Hidden tests: {sum(r.score for r in hidden):g} of {sum(r.max_score for r in hidden):g} points.**"
        )
    elif hidden:
        lines.append(f"Hidden tests ({sum(r.max_score for r in hidden):g} points) are not shown yet.")
    if notes:
        lines += ["", "## Notes on your notebook", "", *(f"- {n}" for n in notes.splitlines())]
    shown = results if show_hidden else public
    explained = explain_failures(shown)
    by_question: dict[str, list[TestResult]] = {}
    for r in by_cause(shown):
        by_question.setdefault(r.qid, []).append(r)
    for qid, items in by_question.items():
        got = sum(r.score for r in items)
        worth = sum(r.max_score for r in items)
        lines += ["", f"## {qid}: {got:g} / {worth:g}", ""]
        for r in items:
            mark = "passed" if r.passed else "FAILED"
            kind = "public" if r.public else "hidden"
            lines.append(f"- {mark} ({kind}, {r.max_score:g} pt): {r.name}")
            if not r.passed and explained[r.key]:
                lines += ["", "  ```", *(f"  {m}" for m in explained[r.key].splitlines()), "  ```", ""]
    return "\n".join(lines).rstrip() + "\n"
