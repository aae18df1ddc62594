"""The nbgrader course, run through the real nbgrader (generate, autograde, export): it gives
the same scores as the grading engine for the reference, the empty release and mistakes."""

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.fixtures import DEFAULT_DIR, load_fixtures
from autograder.grading import grade_many
from autograder.mistakes import catalogue
from autograder.runner import Limits
from autograder.stages import get_stage

STAGE = "01_tokenisation"
MISTAKES = ["train_val_split-rounds-instead-of-truncating", "get_batch-targets-not-shifted", "kneser_ney-no-check-of-the-discount"]


def nbgrader(*args, cwd):
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run([str(Path(sys.executable).parent / "nbgrader"), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done


def with_cells(notebook: dict, replace: dict[str, str]) -> dict:
    notebook = json.loads(json.dumps(notebook))
    for cell in notebook["cells"]:
        name = cell.get("metadata", {}).get("gptcourse", {}).get("name")
        if name in replace:
            cell["source"] = replace[name]
    return notebook


@pytest.mark.slow
def test_nbgrader_scores_agree_with_the_engine(tmp_path):
    stage = get_stage(STAGE)
    course = tmp_path / "course"
    subprocess.run([sys.executable, "-m", "autograder.cli", "build", "--out", str(tmp_path / "rel"), "--stages", STAGE], check=True, capture_output=True)
    shutil.copytree(tmp_path / "rel" / "nbgrader", course)
    nbgrader("generate_assignment", STAGE, "--force", cwd=course)
    released = course / "release" / STAGE / f"{STAGE}.ipynb"
    text = released.read_text()
    assert "BEGIN SOLUTION" not in text and "YOUR CODE HERE" in text and "_gptcourse.run_hidden(" not in text
    source = json.loads((course / "source" / STAGE / f"{STAGE}.ipynb").read_text())
    mistakes = {m.slug: m for m in catalogue(STAGE)[0]}
    submissions = {"reference": source, "empty": json.loads(text)}
    submissions.update({slug: with_cells(source, mistakes[slug].cells) for slug in MISTAKES})
    for student, notebook in submissions.items():
        target = course / "submitted" / student / STAGE
        target.mkdir(parents=True)
        (target / f"{STAGE}.ipynb").write_text(json.dumps(notebook))
    nbgrader("autograde", STAGE, "--force", cwd=course)
    nbgrader("export", cwd=course)
    nbgrader_scores = {r["student_id"]: float(r["score"]) for r in csv.DictReader((course / "grades.csv").open())}

    paths = [course / "submitted" / s / STAGE / f"{STAGE}.ipynb" for s in submissions]
    graded = grade_many(stage, paths, tmp_path / "engine", load_fixtures(stage, DEFAULT_DIR), Limits(), workers=2, progress=False)
    engine_scores = {s: g.total for s, g in zip(submissions, graded)}
    assert engine_scores["reference"] > 0 and engine_scores["empty"] == 0
    assert nbgrader_scores == pytest.approx(engine_scores)
