"""The Gradescope zip, unpacked into a root laid out like Gradescope's and run as Gradescope would."""

import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from autograder.stages import ROOT

from conftest import submission

STAGE = "01_tokenisation"


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory):
    out = tmp_path_factory.mktemp("release")
    subprocess.run([sys.executable, "-m", "autograder.cli", "build", "--out", str(out), "--stages", STAGE], check=True, capture_output=True)
    return out / "gradescope" / f"{STAGE}.zip"


@pytest.mark.parametrize("variant,full", [("reference", True), ("student", False)])
def test_run_autograder_writes_results(autograder_zip, tmp_path, variant, full):
    root = tmp_path / "autograder"
    with zipfile.ZipFile(autograder_zip) as archive:
        archive.extractall(root / "source")
    for name in ("run_autograder", "setup.sh"):
        os.chmod(root / "source" / name, 0o755)
    (root / "submission").mkdir()
    (root / "results").mkdir()
    (root / "submission_metadata.json").write_text(json.dumps({"previous_submissions": []}))
    sub = submission(STAGE, tmp_path, "whatever-name", base=variant)
    shutil.copy(sub, root / "submission" / "whatever-name.ipynb")
    env = dict(os.environ, GRADESCOPE_ROOT=str(root), GPTCOURSE_PYTHON=sys.executable)
    done = subprocess.run([str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    doc = json.loads((root / "results" / "results.json").read_text())
    total = sum(t["max_score"] for t in doc["tests"])
    assert doc["score"] == (total if full else 0)
    assert "Hidden tests" in doc["output"]
    assert all(t["visibility"] in ("visible", "after_published") for t in doc["tests"])
    assert not (root / "source" / "solutions").exists()
