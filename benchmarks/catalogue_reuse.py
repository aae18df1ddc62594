"""A stage's catalogue graded with reuse (``check-stage``'s default) and on every test, side by side.

    python benchmarks/catalogue_reuse.py 07 10        # writes benchmarks/RESULTS_reuse.json

For each stage, in one run: ``CatalogueGrades`` with ``reuse`` (a variant takes the
reference's output for each test its change cannot reach, ``autograder/authoring/reuse.py``)
and without it (every variant runs every test), each in a fresh folder with two workers.
Recorded: the wall time of each, their ratio, how many test runs were taken from the
reference, and every submission whose results differ between the two (key, score,
message, hint, fault, withheld): there should be none.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from measure import load_average, machine  # noqa: E402

from autograder.authoring.grades import CatalogueGrades  # noqa: E402
from autograder.authoring.reuse import differing  # noqa: E402
from autograder.course import get_stage  # noqa: E402

RESULTS = ROOT / "benchmarks" / "RESULTS_reuse.json"


def _graded(stage_id: str, reuse: bool) -> tuple[CatalogueGrades, float]:
    with tempfile.TemporaryDirectory() as folder:
        start = time.monotonic()
        grades = CatalogueGrades(get_stage(stage_id), Path(folder), workers=2, reuse=reuse)
        return grades, time.monotonic() - start


def compare(stage_id: str) -> dict:
    """Both gradings of one stage's catalogue: their times, what was taken, what differs."""
    reused, reuse_s = _graded(stage_id, reuse=True)
    every, every_s = _graded(stage_id, reuse=False)
    runs = len(reused.tests.cases) * len(reused.reused)
    return {
        "submissions": len(every.by_name),
        "reuse_s": round(reuse_s, 1),
        "every_test_s": round(every_s, 1),
        "ratio": round(reuse_s / every_s, 2),
        "runs_taken": sum(map(len, reused.reused.values())),
        "variant_test_runs": runs,
        "differing": differing(every.by_name, reused.by_name, frozenset(c.key for c in reused.tests.cases if c.timed)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stages", nargs="+", help="stage ids (07 or 07_gpt)")
    args = parser.parse_args()
    record = {"machine": machine(), "load_before": load_average(), "stages": {}}
    for stage_id in args.stages:
        record["stages"][get_stage(stage_id).id] = found = compare(stage_id)
        print(get_stage(stage_id).id, json.dumps(found), flush=True)
    RESULTS.write_text(json.dumps(record, indent=1) + "\n")
    print(f"written: {RESULTS}")
    return 1 if any(s["differing"] for s in record["stages"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
