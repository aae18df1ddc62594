"""Per-stage Gradescope settings and rate limiting from submission_metadata.json."""

import json
import os
import subprocess
import sys
import zipfile
from datetime import UTC, datetime, timedelta

import pytest

from autograder.channels.gradescope.rate_limit import MARK, check_rate_limit
from autograder.channels.gradescope.settings import GradescopeSettings, settings_from_dict, stage_settings
from autograder.engine import judge
from autograder.engine.results import gradescope_json

NOW = datetime(2025, 3, 10, 12, 0, tzinfo=UTC)
LIMIT = GradescopeSettings("01_tokenisation", max_submissions=2, window_hours=24)


def previous(hours_ago: float, score: float, limited: bool = False) -> dict:
    results = {
        "score": score,
        "output": f"graded at -{hours_ago}h",
        "tests": [{"name": "q: t", "score": score, "max_score": 5}],
    }
    if limited:
        results["extra_data"] = {MARK: True}
    return {"submission_time": (NOW - timedelta(hours=hours_ago)).isoformat(), "score": score, "results": results}


def metadata(*items: dict) -> dict:
    return {"created_at": NOW.isoformat(), "previous_submissions": list(items)}


def test_defaults_and_validation(tmp_path):
    assert stage_settings("01_tokenisation", tmp_path) == GradescopeSettings("01_tokenisation")
    assert GradescopeSettings("x").hidden_visibility == "after_published"
    (tmp_path / "gradescope.json").write_text(
        json.dumps({"hidden_visibility": "after_due_date", "rate_limit": {"max_submissions": 3}})
    )
    loaded = stage_settings("01_tokenisation", tmp_path)
    assert (loaded.hidden_visibility, loaded.max_submissions, loaded.window_hours) == ("after_due_date", 3, 24.0)
    for bad, words in [
        ({"hidden_visibility": "later"}, "hidden_visibility must be one of"),
        ({"rate_limit": {"max_submissions": 0}}, "positive integer"),
        ({"rate_limit": {"max_submissions": 2, "window_hours": -1}}, "window_hours"),
        ({"rate_limt": {}}, "unknown setting"),
    ]:
        with pytest.raises(ValueError, match=words):
            settings_from_dict("s", bad)
    (tmp_path / "gradescope.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        stage_settings("s", tmp_path)


def test_visibility_and_the_visible_summary_line():
    results = [
        judge.TestResult("q: public one", "q", "public one", True, 2, 2, ""),
        judge.TestResult("q: hidden one", "q", "hidden one", False, 0, 3, "values differ"),
    ]
    doc = gradescope_json(results, hidden_visibility="after_due_date")
    assert [t["visibility"] for t in doc["tests"]] == ["visible", "after_due_date"]
    assert doc["output"].startswith(
        "Public tests: 2 of 2 points. Hidden tests (3 points) are scored after the deadline"
    )
    assert "after the due date" in doc["output"]
    assert "when grades are published" in gradescope_json(results)["output"]


def test_no_limit_configured_never_limits():
    assert check_rate_limit(metadata(*(previous(1, 1) for _ in range(50))), GradescopeSettings("s")) is None


def test_under_the_limit_is_graded():
    assert check_rate_limit(metadata(previous(2, 1)), LIMIT) is None
    assert (
        check_rate_limit(metadata(previous(30, 1), previous(25, 1), previous(3, 2)), LIMIT) is None
    )  # old ones left the window
    assert check_rate_limit({}, LIMIT) is None


def test_over_the_limit_keeps_the_last_results_and_says_when():
    limited = check_rate_limit(metadata(previous(20, 1), previous(5, 4)), LIMIT)
    assert limited is not None
    assert limited.doc["score"] == 4 and limited.doc["tests"][0]["score"] == 4
    assert limited.doc["extra_data"] == {MARK: True}
    assert "Submission limit reached: 2 graded submissions in the last 24 hours" in limited.doc["output"]
    assert "after 2025-03-10 16:00 UTC" in limited.doc["output"]  # when the one from 20 h ago leaves the window
    assert "graded at -5h" in limited.doc["output"]


def test_limited_submissions_do_not_count():
    items = [previous(6, 3), previous(5, 3, limited=True), previous(4, 3, limited=True)]
    assert check_rate_limit(metadata(*items), LIMIT) is None


def test_unreadable_times_are_ignored():
    broken = {"submission_time": "yesterday", "score": 1, "results": {}}
    assert check_rate_limit(metadata(broken, broken, broken), LIMIT) is None


@pytest.mark.slow
def test_rate_limit_end_to_end_through_run_autograder(tmp_path):
    """A root laid out like Gradescope's, the zip's entry point, a limit in gptcourse.json."""
    from autograder.build.fixtures import DEFAULT_DIR, stage_tests
    from autograder.build.gradescope_zip import build_gradescope_zip
    from autograder.course import get_stage

    stage = get_stage("01_tokenisation")
    stage_tests(stage)
    target = build_gradescope_zip(stage, tmp_path / "zip", DEFAULT_DIR / f"{stage.id}.json", settings=LIMIT)
    root = tmp_path / "autograder"
    with zipfile.ZipFile(target) as archive:
        archive.extractall(root / "source")
    (root / "submission").mkdir()
    (root / "submission" / "mine.ipynb").write_text(
        json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    (root / "submission_metadata.json").write_text(json.dumps(metadata(previous(3, 4), previous(1, 5))))
    env = dict(os.environ, GRADESCOPE_ROOT=str(root), GPTCOURSE_PYTHON=sys.executable)
    done = subprocess.run(
        ["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads((root / "results" / "results.json").read_text())
    assert doc["score"] == 5 and doc["extra_data"] == {MARK: True}
    assert doc["output"].startswith("Submission limit reached")
