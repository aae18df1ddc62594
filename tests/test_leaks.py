"""The channels that reach students outside results.json: the grade command's own output, and
Gradescope (results.json and the autograder's output), under the attacks that try to leak.

The leak scan of every results.json, feedback.md and grades.csv of the whole hostile
catalogue is in test_hostile.py; here the same material is looked for in what the real
``gptcourse grade`` command prints and in what the Gradescope autograder writes.
"""

import json
import os
import subprocess
import sys

import attacks
import leakscan
from support import make_root

from autograder.build.fixtures import DEFAULT_DIR, stage_tests
from autograder.build.gradescope_zip import build_gradescope_zip
from autograder.channels.local.folder import grade_into_folder
from autograder.course import get_stage
from autograder.engine.runner import Limits
from autograder.engine.sandbox import best_level

STAGE = "01_tokenisation"
LEAKY = ["read_files", "introspect_cell", "fake_stdout", "atexit", "read_in_function"]


def _material(stage, notebook) -> list[str]:
    return (
        leakscan.hidden_lines(stage)
        + leakscan.fixture_fragments(stage)
        + leakscan.reference_lines(stage, notebook.read_text())
        + attacks.fake_markers()
    )


def test_the_grade_command_prints_nothing_hidden(tmp_path):
    stage = get_stage(STAGE)
    stage_tests(stage)
    chosen = [
        a
        for a in attacks.catalogue(STAGE)
        if a.name in LEAKY + ["introspect_function", "prints_fake_json", "forged_events"]
    ]
    paths = attacks.write_catalogue(STAGE, tmp_path / "submissions", tmp_path / "out", chosen)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder.cli",
            "grade",
            "--stage",
            STAGE,
            "--out",
            str(tmp_path / "out"),
            "--workers",
            "2",
            *map(str, paths.values()),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "reference" in done.stdout and "grades.csv" in done.stdout
    printed = done.stdout + done.stderr
    assert not leakscan.find(printed, _material(stage, paths["wrong"]))


def test_gradescope_output_carries_nothing_hidden_and_agrees_with_grade(tmp_path):
    stage = get_stage(STAGE)
    tests = stage_tests(stage)
    root = tmp_path / "gs" / "autograder"
    extra = (
        str(root / "source" / "stage" / "hidden.py"),
        str(root / "source" / "stage" / "fixtures.json"),
        str(root / "submission_metadata.json"),
        str(root / "results"),
        str(root / "source"),
    )
    leaky = attacks.combined(STAGE, LEAKY, "leaky")
    paths = attacks.write_catalogue(STAGE, tmp_path / "submissions", root / "results", [leaky], extra)
    archive = build_gradescope_zip(stage, tmp_path / "zip", DEFAULT_DIR / f"{STAGE}.json")
    root = make_root(
        archive,
        tmp_path / "gs",
        paths["leaky"],
        {"previous_submissions": [{"score": 3, "secret": "PREVIOUS-SUBMISSION"}]},
    )
    env = dict(os.environ, GRADESCOPE_ROOT=str(root), GPTCOURSE_PYTHON=sys.executable)
    done = subprocess.run(
        [str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads((root / "results" / "results.json").read_text())
    visible = leakscan.visible_strings(doc) + done.stdout + done.stderr
    assert not leakscan.find(visible, _material(stage, paths["leaky"]) + ["PREVIOUS-SUBMISSION"])
    engine = grade_into_folder([paths["leaky"]], tests, tmp_path / "engine", Limits(), progress=False)[0]
    assert doc["score"] == engine.total
    assert {t["name"]: t["score"] for t in doc["tests"]} == {r.key: r.score for r in engine.results}


SMUGGLER = """
@HEAD@
    import ast, json
    loot = []
    try:
        doc = json.load(open(@FIXTURE@))
        stack = [doc["values"]]
        while stack and not loot:
            item = stack.pop()
            if isinstance(item, dict):
                if isinstance(item.get("data"), str) and len(item["data"]) > 60:
                    loot.append(item["data"][:60])
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
        source = open(@SOLUTION@).read()
        tree = ast.parse(source)
        function = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "@NAME@")
        code = ast.get_source_segment(source, function).splitlines()[len(ast.get_docstring(function).splitlines()) + 2:]
        loot.append(max((line.strip() for line in code), key=len)[:120])
    except OSError as exc:
        loot.append(type(exc).__name__)
    raise ValueError(" | ".join(loot))
"""


def test_the_scan_sees_a_leak_when_the_sandbox_is_off(tmp_path):
    """The leak scans are not vacuous: with no sandbox a submission smuggles out fixture data and
    reference code, which the judge's scrubbing (aimed at the hidden tests' source) does not catch."""
    stage = get_stage(STAGE)
    tests = stage_tests(stage)
    body = SMUGGLER.replace("@FIXTURE@", repr(str(DEFAULT_DIR / f"{STAGE}.json"))).replace(
        "@SOLUTION@", repr(str(stage.reference))
    )
    smuggler = attacks.Attack("smuggler", "function", body=body)
    paths = attacks.write_catalogue(STAGE, tmp_path / "submissions", tmp_path / "out", [smuggler])
    material = leakscan.fixture_fragments(stage) + leakscan.reference_lines(stage, paths["smuggler"].read_text())
    found, reached = {}, {}
    for level in ("none", "namespaces"):  # no sandbox; the strongest this machine allows
        graded = grade_into_folder([paths["smuggler"]], tests, tmp_path / level, Limits(sandbox=level), progress=False)[
            0
        ]
        text = leakscan.visible_strings(json.loads((tmp_path / level / "smuggler" / "results.json").read_text()))
        found[level], reached[level] = leakscan.find(text, material), graded.outcome.isolation["level"]
    assert reached == {"none": "none", "namespaces": best_level()}
    assert len(found["none"]) >= 2, found
    assert found["namespaces"] == [] or best_level() not in ("namespaces", "userns"), (
        found
    )  # a uid-only sandbox cannot hide the files
