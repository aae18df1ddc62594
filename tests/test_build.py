"""The build: deterministic notebooks, nothing secret released. That the committed release is what
a fresh build writes, and that it holds no answer, no hidden test and no expected value, are
check-stage's rules "release up to date", "release keeps the answers" and "release holds no
expected value", run for every stage by tests/test_rules.py."""

import json
import re
import subprocess
import sys
import zipfile

import pytest

from autograder.build.notebooks import HARNESS_BODY, HARNESS_HEADER, KIT, dumps_notebook, make_notebook, unpack_harness
from autograder.build.source import SourceError, parse_source
from autograder.build.stubs import make_stub
from autograder.course import ROOT, all_stages
from autograder.engine.submission import TAG_HARNESS
from autograder.kit import PASTED

STAGES = all_stages()


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.id)
def test_same_sources_give_identical_notebooks(stage):
    assert dumps_notebook(make_notebook(stage, "student")) == dumps_notebook(make_notebook(stage, "student"))


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.id)
def test_the_packed_harness_holds_the_kit_and_the_public_tests_and_nothing_else(stage):
    """Nothing can hide in the packed line: it unpacks to lines of the kit's pasted modules and
    of the stage's public tests only, and the rest of the cell is the fixed header."""
    notebook = json.loads((ROOT / "release" / "student" / stage.id / f"{stage.id}.ipynb").read_text(encoding="utf-8"))
    [harness] = [cell for cell in notebook["cells"] if TAG_HARNESS in cell["metadata"].get("tags", [])]
    module = unpack_harness(harness["source"])
    allowed = set(stage.public.read_text(encoding="utf-8").splitlines())
    for name in PASTED:
        allowed |= set((KIT / f"{name}.py").read_text(encoding="utf-8").splitlines())
    assert set(module.splitlines()) <= allowed
    packed = harness["source"].split('b64decode("', 1)[1].split('"', 1)[0]
    assert harness["source"].replace(packed, "") == HARNESS_HEADER + HARNESS_BODY.format(packed="")


def test_stub_keeps_signature_and_docstring():
    source = 'def f(x: int, y: int = 2) -> int:\n    """Add.\n\n    Example: f(1) == 3\n    """\n    z = x + y\n    return z\n'
    stub = make_stub(source, "f")
    assert stub.startswith('def f(x: int, y: int = 2) -> int:\n    """Add.')
    assert "z = x + y" not in stub and "raise NotImplementedError" in stub


def test_unclosed_block_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.md"
    bad.write_text("# Title\n```python given\nimport torch\n")
    with pytest.raises(SourceError, match="never closed"):
        parse_source(bad)


def test_gradescope_zip_layout_and_no_reference_code(tmp_path):
    out = tmp_path / "rel"
    # what a build before a stage was renamed left: named, never used
    (out / "gradescope").mkdir(parents=True)
    (out / "gradescope" / "08_rnn.zip").write_bytes(b"")
    (out / "student" / "09_encoders").mkdir(parents=True)
    done = subprocess.run(
        [sys.executable, "-m", "autograder.cli", "build", "--out", str(out), "--stages", "01_tokenisation"],
        check=True,
        capture_output=True,
        text=True,
    )
    [line] = [line for line in done.stdout.splitlines() if line.startswith("left by an earlier build")]
    assert line.endswith(f": {out / 'student' / '09_encoders'}, {out / 'gradescope' / '08_rnn.zip'}")
    with zipfile.ZipFile(out / "gradescope" / "01_tokenisation.zip") as archive:
        names = archive.namelist()
        assert {"setup.sh", "run_autograder", "requirements.txt"} <= set(names)
        assert not any(n.startswith("solutions") for n in names)
        setup = archive.read("setup.sh").decode()
        assert "set -e" in setup and "--self-check" in setup.splitlines()[-1]
        assert "torch==2.13.0+cpu" in archive.read("requirements.txt").decode()
    assert (out / "nbgrader" / "source" / "01_tokenisation" / "01_tokenisation.ipynb").exists()
    with zipfile.ZipFile(out / "otter" / "01_tokenisation.zip") as archive:
        assert {"otter_config.json", "run_autograder", "files/gptcourse/stage/hidden.py"} <= set(archive.namelist())
    assert (out / "student" / "01_tokenisation" / "01_tokenisation.ipynb").read_bytes() == (
        ROOT / "release" / "student" / "01_tokenisation" / "01_tokenisation.ipynb"
    ).read_bytes()
    assert re.search(
        "BEGIN SOLUTION", (out / "nbgrader" / "source" / "01_tokenisation" / "01_tokenisation.ipynb").read_text()
    )
