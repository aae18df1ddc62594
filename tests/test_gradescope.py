"""The Gradescope zip: Gradescope's own layout, a lean environment, and the same scores as
``gptcourse grade`` when unpacked into a root laid out like Gradescope's and run as
Gradescope runs it. It is not presented as an otter-grader autograder (no otter file in it).

Each Gradescope run starts Python and torch afresh (seconds), so the catalogue test grades
one mistake per question; ``GPTCOURSE_FULL_E2E=1`` makes it grade the whole catalogue."""

import dataclasses
import json
import os
import subprocess
import sys
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support import make_root, submission

from autograder.build.fixtures import DEFAULT_DIR, stage_tests
from autograder.build.gradescope_zip import build_gradescope_zip, settings_note
from autograder.channels.gradescope.entry import shipped_tests
from autograder.channels.gradescope.settings import GradescopeSettings
from autograder.course import all_stages, get_stage

STAGE = "01_tokenisation"
CHEATS = """
import torch, numpy
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
numpy.allclose = lambda *a, **k: True
"""
DETACHED_WRITER = """
import subprocess, sys
fake = '{{"score": 999, "tests": [{{"name": "build_vocab: fake", "score": 999, "max_score": 1}}]}}'
code = "import time\\nfor _ in range(100):\\n    try:\\n        open({target!r}, 'w').write(%r)\\n    except OSError:\\n        pass\\n    time.sleep(0.1)" % fake
subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
"""
EXIT = "import os\nos._exit(0)"


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory) -> Path:
    stage = get_stage(STAGE)
    stage_tests(stage)
    return build_gradescope_zip(stage, tmp_path_factory.mktemp("gradescope"), DEFAULT_DIR / f"{STAGE}.json")


def run_autograder(root: Path) -> tuple[dict, subprocess.CompletedProcess]:
    """Run the zip's run_autograder as Gradescope does, with the root moved by GRADESCOPE_ROOT."""
    env = dict(os.environ, GRADESCOPE_ROOT=str(root), GPTCOURSE_PYTHON=sys.executable)
    done = subprocess.run(
        [str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True, timeout=600
    )
    return json.loads((root / "results" / "results.json").read_text()), done


def per_test(doc: dict) -> dict[str, float]:
    return {t["name"]: t["score"] for t in doc["tests"]}


def engine_scores(graded) -> dict[str, float]:
    return {r.key: r.score for r in graded.results}


def test_zip_has_gradescopes_layout_and_no_reference_code(autograder_zip):
    with zipfile.ZipFile(autograder_zip) as archive:
        names = set(archive.namelist())
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in archive.infolist()}
        text = {n: archive.read(n).decode() for n in names}
    assert {
        "setup.sh",
        "run_autograder",
        "requirements.txt",
        "environment.yml",
        "gptcourse.json",
        "stage/public.py",
        "stage/hidden.py",
        "stage/fixtures.json",
        "autograder/engine/pipeline.py",
    } <= names
    assert not any("otter" in n for n in names)  # not an otter autograder, and not presented as one
    assert modes["setup.sh"] & 0o111 and modes["run_autograder"] & 0o111
    assert not any(n.startswith("solutions") or "/solutions/" in n for n in names)
    assert not any("def build_vocab" in body for body in text.values())  # the reference's code is not shipped
    assert not any(
        n.startswith(
            ("autograder/build/", "autograder/authoring/", "autograder/reports/", "autograder/channels/nbgrader/")
        )
        for n in names
    )
    assert json.loads(text["gptcourse.json"]) == {
        "stage": STAGE,
        "hidden_visibility": "after_published",
        "timeout_minutes": 10,
        "torch": "2.13.0+cpu",
    }


def test_the_zip_carries_which_hidden_tests_prove_each_public_test(autograder_zip, tmp_path):
    with zipfile.ZipFile(autograder_zip) as archive:
        archive.extractall(tmp_path)
    shipped = shipped_tests(STAGE, tmp_path)
    assert shipped.partners and shipped.partners == stage_tests(get_stage(STAGE)).partners


def test_environment_is_lean_and_pinned_and_setup_fails_early(autograder_zip):
    import yaml

    with zipfile.ZipFile(autograder_zip) as archive:
        setup = archive.read("setup.sh").decode()
        requirements = archive.read("requirements.txt").decode().splitlines()
        environment = yaml.safe_load(archive.read("environment.yml"))
    assert requirements[:2] == ["--extra-index-url https://download.pytorch.org/whl/cpu", "torch==2.13.0+cpu"]
    assert all("==" in line for line in requirements[1:])  # every package pinned, dependencies included
    assert {"numpy==2.4.6", "matplotlib==3.11.2", "tqdm==4.70.1"} <= set(requirements)
    assert "python=3.11" in environment["dependencies"]
    assert {"pip": ["-r requirements.txt"]} in environment["dependencies"]
    assert "set -euo pipefail" in setup.splitlines()[:6]
    *_, imports, check = setup.rstrip().splitlines()
    assert '-c "import torch, numpy, matplotlib, tqdm"' in imports
    assert "-m autograder.channels.gradescope.entry --self-check" in check
    everything = (setup + json.dumps(environment)).lower()
    for unwanted in ("playwright", "chromium", "texlive", "pandoc", "otter-grader", "nvidia", "cu12", "cuda"):
        assert unwanted not in everything
    assert subprocess.run(["bash", "-n"], input=setup, text=True).returncode == 0


def test_zip_bytes_are_deterministic(autograder_zip, tmp_path):
    again = build_gradescope_zip(get_stage(STAGE), tmp_path, DEFAULT_DIR / f"{STAGE}.json")
    assert again.read_bytes() == autograder_zip.read_bytes()


def test_settings_reach_the_zip(tmp_path):
    settings = GradescopeSettings(
        STAGE, hidden_visibility="hidden", max_submissions=3, window_hours=12, timeout_minutes=20
    )
    target = build_gradescope_zip(get_stage(STAGE), tmp_path, DEFAULT_DIR / f"{STAGE}.json", settings=settings)
    with zipfile.ZipFile(target) as archive:
        shipped = json.loads(archive.read("gptcourse.json"))
    assert shipped == {
        "stage": STAGE,
        "hidden_visibility": "hidden",
        "rate_limit": {"max_submissions": 3, "window_hours": 12},
        "timeout_minutes": 20,
        "torch": "2.13.0+cpu",
    }
    assert "set the timeout to 10 min (the default)" in settings_note(get_stage(STAGE))
    (tmp_path / "gradescope.json").write_text('{"timeout_minutes": 20}')
    assert "set the timeout to 20 min;" in settings_note(dataclasses.replace(get_stage(STAGE), folder=tmp_path))


@pytest.mark.slow
def test_self_check_passes_and_catches_a_broken_package(autograder_zip, tmp_path):
    root = make_root(autograder_zip, tmp_path / "good")
    check = [sys.executable, "-m", "autograder.channels.gradescope.entry", "--self-check"]
    done = subprocess.run(check, cwd=root / "source", capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "autograder ready: 01_tokenisation" in done.stdout
    broken = make_root(autograder_zip, tmp_path / "broken")
    (broken / "source" / "stage" / "fixtures.json").unlink()
    done = subprocess.run(check, cwd=broken / "source", capture_output=True, text=True, timeout=300)
    assert done.returncode != 0


def catalogue_sample(mistakes: list) -> list:
    """Every mistake with GPTCOURSE_FULL_E2E=1, else the first of each question (each run costs seconds)."""
    if os.environ.get("GPTCOURSE_FULL_E2E") == "1":
        return list(mistakes)
    first: dict = {}
    for m in mistakes:
        first.setdefault(m.qid, m)
    return list(first.values())


@pytest.mark.slow
def test_run_autograder_agrees_with_gptcourse_grade_on_the_catalogue(autograder_zip, tmp_path, graded_catalogue):
    graded = graded_catalogue(STAGE)
    names = ["reference", "empty", *(m.slug for m in catalogue_sample(graded.mistakes))]

    def one(name: str) -> dict:
        root = make_root(autograder_zip, tmp_path / name, graded.folder / f"{name}.ipynb")
        doc, done = run_autograder(root)
        assert done.returncode == 0, done.stderr[-2000:]
        return doc

    with ThreadPoolExecutor(max_workers=2) as pool:
        docs = dict(zip(names, pool.map(one, names)))
    for name, doc in docs.items():
        assert per_test(doc) == engine_scores(graded.by_name[name]), name
        assert doc["score"] == pytest.approx(graded.by_name[name].total)
    reference, empty = docs["reference"], docs["empty"]
    assert reference["score"] == sum(t["max_score"] for t in reference["tests"]) and empty["score"] == 0
    assert {t["visibility"] for t in reference["tests"]} == {"visible", "after_published"}
    public = sum(t["max_score"] for t in reference["tests"] if t["visibility"] == "visible")
    assert reference["output"].startswith(f"Public tests: {public:g} of {public:g} points. Hidden tests")
    assert "scored after the deadline" in empty["output"]
    assert all("all tests passed" not in t["output"].lower() for d in docs.values() for t in d["tests"])


@pytest.mark.slow
def test_a_hostile_submission_cannot_rewrite_results_json(autograder_zip, tmp_path):
    root_dir = tmp_path / "hostile"
    target = root_dir / "autograder" / "results" / "results.json"
    notebook = submission(
        STAGE,
        tmp_path,
        "hostile",
        base="student",
        extra_cells=[CHEATS, DETACHED_WRITER.format(target=str(target)), EXIT],
    )
    root = make_root(autograder_zip, root_dir, notebook)
    doc, done = run_autograder(root)
    assert done.returncode == 0, done.stderr[-2000:]
    time.sleep(1.5)  # the writer, were it alive, would have struck by now
    assert json.loads(target.read_text()) == doc
    assert doc["score"] == 0 and len(doc["tests"]) > 10


@pytest.mark.slow
def test_no_notebook_gives_a_valid_zero(autograder_zip, tmp_path):
    root = make_root(autograder_zip, tmp_path)
    (root / "submission" / "notes.txt").write_text("I forgot the notebook")
    doc, done = run_autograder(root)
    assert done.returncode == 0 and doc["score"] == 0
    assert "No notebook (.ipynb) was found" in doc["output"]


@pytest.mark.slow
def test_a_zip_made_by_package_submission_is_graded(autograder_zip, tmp_path):
    notebook = submission(STAGE, tmp_path, "My Lab", base="reference")
    packaged = tmp_path / "My Lab-submission.zip"
    with zipfile.ZipFile(packaged, "w") as archive:
        archive.write(notebook, notebook.name)
    root = make_root(autograder_zip, tmp_path / "zipped", packaged)
    doc, done = run_autograder(root)
    assert done.returncode == 0, done.stderr[-2000:]
    assert doc["score"] == sum(t["max_score"] for t in doc["tests"]) > 0


@pytest.mark.slow
@pytest.mark.parametrize("stage_id", [s.id for s in all_stages()])
def test_every_stages_zip_gives_the_reference_full_marks_and_the_release_none(stage_id, tmp_path):
    """Issue 15: the Gradescope channel on every stage, the two ends of the scale (about 20-40 s a stage on 2 busy cores)."""
    stage = get_stage(stage_id)
    stage_tests(stage)
    built = build_gradescope_zip(stage, tmp_path / "zip", DEFAULT_DIR / f"{stage_id}.json")
    for base, full in (("reference", True), ("student", False)):
        notebook = submission(stage_id, tmp_path, base, base=base)
        doc, done = run_autograder(make_root(built, tmp_path / base, notebook))
        assert done.returncode == 0, done.stderr[-2000:]
        worth = sum(t["max_score"] for t in doc["tests"])
        assert worth > 0 and doc["score"] == (worth if full else 0), [
            t["name"] for t in doc["tests"] if t["score"] < t["max_score"]
        ][:5]


def test_gradescope_run_tries_a_zip_locally(autograder_zip, tmp_path):
    notebook = submission(STAGE, tmp_path, "Alice's lab", base="reference")
    out = tmp_path / "results.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder.cli",
            "gradescope-run",
            str(autograder_zip),
            str(notebook),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(out.read_text())
    worth = sum(t["max_score"] for t in doc["tests"])
    assert doc["score"] == worth > 0
    assert (
        f"score {worth:g} of {worth:g} in " in done.stdout
        and "without Gradescope's memory and CPU limits" in done.stdout
    )
    assert "limits: " in done.stdout  # the entry point's first line: the limits it found and its budget
    missing = subprocess.run(
        [sys.executable, "-m", "autograder.cli", "gradescope-run", str(autograder_zip), str(tmp_path / "none.ipynb")],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_gradescope_run_refuses_what_is_no_autograder_zip(tmp_path):
    """The zip comes first: a notebook there (the arguments swapped), or a student's zip from
    package_submission(), is a usage error naming what was expected, not a traceback."""
    notebook = tmp_path / "lab.ipynb"
    notebook.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    packaged = tmp_path / "lab-submission.zip"
    with zipfile.ZipFile(packaged, "w") as archive:
        archive.write(notebook, notebook.name)
    for autograder, said in ((notebook, "is not a zip file"), (packaged, "has no run_autograder")):
        done = subprocess.run(
            [sys.executable, "-m", "autograder.cli", "gradescope-run", str(autograder), str(notebook)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
        assert said in done.stderr and "release/gradescope/<stage>.zip or release/otter/<stage>.zip" in done.stderr


def test_the_written_answers_of_a_notebook_that_could_not_be_read_are_not_called_deleted(tmp_path):
    """No notebook, or one that is not JSON: the output says so for each written question instead
    of telling the student that they deleted its answer cell."""
    from autograder.channels.gradescope.entry import written_section

    questions = [{"id": "split", "points": 2}, {"id": "context", "points": 3}]
    unreadable = tmp_path / "lab.ipynb"
    unreadable.write_text("not a notebook")
    for submitted, reason in ((None, "no notebook was found"), (unreadable, "the notebook could not be read")):
        lines = written_section(submitted, questions).splitlines()
        assert lines[1:] == [f"- split (2 points): no answer: {reason}", f"- context (3 points): no answer: {reason}"]
