"""What a stage's Gradescope autograder shows and allows: hidden-test visibility, rate limits,
and the timeout set in Gradescope's autograder settings.

Defaults suit most courses. A stage changes them with an optional file
``assignments/<stage>/gradescope.json``, for example::

    {"hidden_visibility": "after_due_date",
     "rate_limit": {"max_submissions": 5, "window_hours": 24},
     "timeout_minutes": 20}

``timeout_minutes`` must equal the timeout chosen on Gradescope (10 by default, at most
40): the grader cannot see it from inside the container, and keeps its whole-submission
budget inside it (``engine.container.grading_budget``) so that results are always written.

The build copies the settings into the zip as ``gptcourse.json``; the entry point reads
them there; the otter zip carries the same file (``files/gptcourse/gptcourse.json``),
which its worker reads. This module uses the standard library only (it is shipped in the
zips).
"""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
SETTINGS_FILE = "gradescope.json"
TIMEOUT_MINUTES = 10  # Gradescope's default autograder timeout
MAX_TIMEOUT_MINUTES = 40  # the most Gradescope allows


@dataclass(frozen=True)
class GradescopeSettings:
    """Per-stage settings of the Gradescope autograder.

    ``hidden_visibility``: when students see hidden-test results (Gradescope's names).
    ``max_submissions`` within ``window_hours``: graded submissions allowed in any such
    window; ``None`` means no limit. A submission over the limit is not graded again:
    it keeps the last graded submission's results and says when the next is allowed.
    ``timeout_minutes``: the autograder timeout set on Gradescope.
    """

    stage: str
    hidden_visibility: str = "after_published"
    max_submissions: int | None = None
    window_hours: float = 24.0
    timeout_minutes: float = TIMEOUT_MINUTES

    def __post_init__(self) -> None:
        if self.hidden_visibility not in VISIBILITIES:
            raise ValueError(
                f"hidden_visibility must be one of {', '.join(VISIBILITIES)}, got {self.hidden_visibility!r}"
            )
        if self.max_submissions is not None and (
            isinstance(self.max_submissions, bool)
            or not isinstance(self.max_submissions, int)
            or self.max_submissions < 1
        ):
            raise ValueError(f"rate_limit.max_submissions must be a positive integer, got {self.max_submissions!r}")
        if (
            isinstance(self.window_hours, bool)
            or not isinstance(self.window_hours, (int, float))
            or self.window_hours <= 0
        ):
            raise ValueError(f"rate_limit.window_hours must be a positive number, got {self.window_hours!r}")
        minutes = self.timeout_minutes
        if (
            isinstance(minutes, bool)
            or not isinstance(minutes, (int, float))
            or not 2 <= minutes <= MAX_TIMEOUT_MINUTES
        ):
            raise ValueError(
                f"timeout_minutes must be a number of minutes from 2 to {MAX_TIMEOUT_MINUTES} "
                f"(Gradescope's setting), got {minutes!r}"
            )

    def to_json(self) -> str:
        """The ``gptcourse.json`` document shipped in the zip."""
        doc: dict[str, Any] = {
            "stage": self.stage,
            "hidden_visibility": self.hidden_visibility,
            "timeout_minutes": self.timeout_minutes,
        }
        if self.max_submissions is not None:
            doc["rate_limit"] = {"max_submissions": self.max_submissions, "window_hours": self.window_hours}
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def settings_from_dict(stage: str, doc: dict[str, Any], where: str = "settings") -> GradescopeSettings:
    """Validate a settings document (unknown keys are errors, so typos do not pass silently)."""
    if not isinstance(doc, dict):
        raise ValueError(f"{where}: expected a JSON object")
    unknown = set(doc) - {"stage", "hidden_visibility", "rate_limit", "timeout_minutes"}
    if unknown:
        raise ValueError(f"{where}: unknown setting(s) {', '.join(sorted(unknown))}")
    limit = doc.get("rate_limit") or {}
    if not isinstance(limit, dict) or set(limit) - {"max_submissions", "window_hours"}:
        raise ValueError(f"{where}: rate_limit must be an object with max_submissions and window_hours")
    try:
        return GradescopeSettings(
            stage=str(doc.get("stage", stage)),
            hidden_visibility=doc.get("hidden_visibility", "after_published"),
            max_submissions=limit.get("max_submissions"),
            window_hours=limit.get("window_hours", 24.0),
            timeout_minutes=doc.get("timeout_minutes", TIMEOUT_MINUTES),
        )
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def stage_settings(stage: str, folder: Path) -> GradescopeSettings:
    """A stage's settings: ``folder/gradescope.json`` when present, else the defaults."""
    path = Path(folder) / SETTINGS_FILE
    if not path.exists():
        return GradescopeSettings(stage)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    return settings_from_dict(stage, doc, str(path))


def shipped_json(settings: GradescopeSettings, torch_version: str) -> str:
    """``gptcourse.json`` in the zip: the settings and the torch build the fixtures were made with."""
    doc = json.loads(settings.to_json())
    doc["torch"] = torch_version
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def read_shipped(path: Path) -> tuple[GradescopeSettings, str]:
    """The settings shipped in a zip as ``gptcourse.json``, and the torch version it needs."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    torch_version = str(doc.pop("torch", ""))
    return settings_from_dict(str(doc.get("stage", "")), doc, str(path)), torch_version
