"""A graded student's folder as it lies on disk: ``results.json`` and the record ``graded.json``."""

import json
from dataclasses import dataclass, field
from pathlib import Path

from autograder.errors import UsageError

RECORD = "graded.json"
RESULTS = "results.json"


@dataclass
class StudentFolder:
    """A student's folder as found on disk: the results document and the record (empty when absent:
    folders written before records existed, or by hand)."""

    key: str
    results: dict
    record: dict = field(default_factory=dict)

    @property
    def score(self) -> float:
        return float(sum(float(t.get("score", 0)) for t in self.results.get("tests", [])))

    @property
    def max_score(self) -> float:
        return float(sum(float(t.get("max_score", 0)) for t in self.results.get("tests", [])))


def read_folder(out_dir: Path, stage_id: str | None = None) -> list[StudentFolder]:
    """Every student folder under ``out_dir`` with a readable results.json, by key.

    With ``stage_id``, a folder recorded as graded for another stage is a usage error:
    one output folder holds one stage.
    """
    found = []
    for path in sorted(Path(out_dir).glob(f"*/{RESULTS}")):
        try:
            results = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(results, dict):
            continue
        record = read_record(path.parent)
        if stage_id and record.get("stage") not in (None, stage_id):
            raise UsageError(
                f"{out_dir} holds results of {record['stage']} ({path.parent.name}); "
                f"grade {stage_id} into another folder"
            )
        found.append(StudentFolder(path.parent.name, results, record))
    return found


def read_record(folder: Path) -> dict:
    """A folder's ``graded.json`` (an empty dict when absent or unreadable)."""
    try:
        record = json.loads((Path(folder) / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}
