"""The nbgrader course directory, run through the real nbgrader: generate, autograde, export."""

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

STAGE = "01_tokenisation"


def nbgrader(*args, cwd):
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run([str(Path(sys.executable).parent / "nbgrader"), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done


@pytest.mark.slow
def test_generate_autograde_export(tmp_path):
    course = tmp_path / "course"
    subprocess.run([sys.executable, "-m", "autograder.cli", "build", "--out", str(tmp_path / "rel"), "--stages", STAGE], check=True, capture_output=True)
    shutil.copytree(tmp_path / "rel" / "nbgrader", course)
    nbgrader("generate_assignment", STAGE, "--force", cwd=course)
    released = course / "release" / STAGE / f"{STAGE}.ipynb"
    assert "BEGIN SOLUTION" not in released.read_text() and "YOUR CODE HERE" in released.read_text()
    for student, notebook in (("alice", course / "source" / STAGE / f"{STAGE}.ipynb"), ("bob", released)):
        target = course / "submitted" / student / STAGE
        target.mkdir(parents=True)
        shutil.copy(notebook, target / f"{STAGE}.ipynb")
    nbgrader("autograde", STAGE, "--force", cwd=course)
    nbgrader("export", cwd=course)
    rows = {r["student_id"]: r for r in csv.DictReader((course / "grades.csv").open())}
    assert float(rows["alice"]["score"]) == float(rows["alice"]["max_score"]) > 0
    assert float(rows["bob"]["score"]) == 0
