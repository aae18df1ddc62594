"""Optional rate limiting of Gradescope submissions, from ``submission_metadata.json``.

Gradescope lists a student's earlier submissions (time, score, results) in the
metadata of each new one. With a limit of N graded submissions per window, a
submission that would be the (N+1)-th in the window is not graded: it carries over
the results of the last graded submission (so the student's score does not drop), says
when the next graded submission is possible, and is marked so that it does not count.
Standard library only (shipped in the zip).
"""

import copy
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from .settings import GradescopeSettings

MARK = "gptcourse_rate_limited"


@dataclass
class Limited:
    """A submission over the limit: the results document to write instead of grading."""

    doc: dict[str, Any]
    message: str


def _when(text: Any) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _graded(previous: Any) -> list[tuple[datetime, dict[str, Any]]]:
    """Earlier submissions that were graded (not themselves rate-limited), oldest first."""
    found = []
    for item in previous if isinstance(previous, list) else []:
        if not isinstance(item, dict):
            continue
        moment = _when(item.get("submission_time"))
        results = item.get("results") if isinstance(item.get("results"), dict) else {}
        extra = results.get("extra_data") if isinstance(results.get("extra_data"), dict) else {}
        if moment is None or extra.get(MARK):
            continue
        found.append((moment, item))
    return sorted(found, key=lambda pair: pair[0])


def check_rate_limit(
    metadata: dict[str, Any], settings: GradescopeSettings, now: datetime | None = None
) -> Limited | None:
    """None when this submission may be graded, else what to write in its place."""
    if settings.max_submissions is None or not isinstance(metadata, dict):
        return None
    now = _when(metadata.get("created_at")) or now or datetime.now(UTC)
    window = timedelta(hours=settings.window_hours)
    graded = _graded(metadata.get("previous_submissions"))
    recent = [(t, item) for t, item in graded if now - window <= t <= now]
    if len(recent) < settings.max_submissions:
        return None
    last_time, last = graded[-1]
    allowed_at = recent[-settings.max_submissions][0] + window
    message = (
        f"Submission limit reached: {len(recent)} graded submissions in the last {settings.window_hours:g} hours "
        f"(at most {settings.max_submissions}). This submission was not graded; your results below are those of "
        f"your submission of {last_time.astimezone(UTC):%Y-%m-%d %H:%M} UTC. "
        f"You can submit again for grading after {allowed_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC."
    )
    previous = copy.deepcopy(last.get("results")) if isinstance(last.get("results"), dict) else {}
    doc: dict[str, Any] = {
        "score": last.get("score", previous.get("score", 0)),
        "tests": previous.get("tests", []),
        "output": "\n".join(x for x in (message, str(previous.get("output", ""))) if x),
        "stdout_visibility": "hidden",
        "extra_data": {MARK: True},
    }
    return Limited(doc, message)
