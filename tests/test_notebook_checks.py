"""The student's side, in a real Jupyter kernel (nbclient): the check cells under any file
name, offline and with nothing importable beyond the notebook's own imports; and
``package_submission()``, which zips the saved notebook and refuses when it was not saved."""

import asyncio
import json
import os
import zipfile

import nbformat
import pytest
from kernels import execute_in_kernel, kernel_client
from nbclient import NotebookClient

from autograder.build.notebooks import make_notebook
from autograder.course import all_stages, get_stage
from autograder.engine.submission import TAG_CHECK, TAG_DEMO, TAG_TRAIN

NAME = "Lab 1 - my copy (2).ipynb"
# The first cell of the test notebooks: nothing from this project or the grading tools can be
# imported, and the network is gone, so the check cells must stand on the notebook alone.
ISOLATE = """\
import socket, sys
for _name in ("autograder", "solutions", "otter", "nbgrader", "gptcourse"):
    sys.modules[_name] = None
def _no_network(*args, **kwargs):
    raise OSError("no network in this test")
socket.socket = _no_network
socket.create_connection = _no_network
"""


def _notebook(stage, variant: str) -> dict:
    nb = make_notebook(stage, variant)
    nb["cells"] = [c for c in nb["cells"] if not {TAG_DEMO, TAG_TRAIN} & set(c.get("metadata", {}).get("tags", []))]
    nb["cells"].insert(0, nbformat.v4.new_code_cell(ISOLATE, id="isolate"))
    return nb


def _client(notebook, folder) -> NotebookClient:
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    return kernel_client(notebook, folder, timeout=120)


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")


def _errors(cell) -> list:
    return [o for o in cell.outputs if o.get("output_type") == "error"]


def _run_checks(stage, variant, folder):
    path = folder / NAME
    path.write_text(json.dumps(_notebook(stage, variant)))
    notebook = nbformat.read(path, as_version=4)
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    asyncio.run(execute_in_kernel(notebook, folder, timeout=120))
    assert not _errors(notebook.cells[0])
    reports = {}
    for cell in notebook.cells:
        if TAG_CHECK in cell.metadata.get("tags", []):
            assert not _errors(cell), f"the check cell itself failed: {_errors(cell)}"
            reports[cell.source] = _text(cell)
    return reports


@pytest.mark.slow
@pytest.mark.parametrize("stage", all_stages()[:1], ids=lambda s: s.id)
def test_check_cells_report_in_a_kernel(stage, tmp_path):
    reference = _run_checks(stage, "reference", tmp_path)
    assert reference and all("public tests passed" in r for r in reference.values()), reference
    empty = _run_checks(stage, "student", tmp_path)
    for report in empty.values():
        assert "public tests passed" not in report and "not implemented yet" in report
        assert "[FAIL]" in report
    for report in [*reference.values(), *empty.values()]:
        assert "all tests passed" not in report.lower()
        assert "Hidden tests" in report or "failed" in report


def _run_new(client, notebook, source: str) -> str:
    cell = nbformat.v4.new_code_cell(source)
    notebook.cells.append(cell)
    client.execute_cell(cell, len(notebook.cells) - 1)
    assert not _errors(cell), _errors(cell)
    return _text(cell)


@pytest.mark.slow
def test_package_submission_refuses_unsaved_work_and_zips_saved_work(tmp_path):
    stage = get_stage("01_tokenisation")
    path = tmp_path / NAME
    saved = _notebook(stage, "reference")
    path.write_text(json.dumps(saved))
    (tmp_path / "an older copy.ipynb").write_text(json.dumps(saved))
    notebook = nbformat.read(path, as_version=4)
    client = _client(notebook, tmp_path)
    target = tmp_path / "Lab 1 - my copy (2)-submission.zip"
    with client.setup_kernel():
        for index, cell in enumerate(notebook.cells):
            client.execute_cell(cell, index)
        out = _run_new(client, notebook, "package_submission()")
        assert "Could not tell which file" in out and "an older copy.ipynb" in out  # two saved copies match
        out = _run_new(client, notebook, f"package_submission({str(path)!r})")
        assert "Packaged" in out and target.exists()
        with zipfile.ZipFile(target) as archive:
            assert archive.namelist() == [NAME] and archive.read(NAME) == path.read_bytes()
        target.unlink()

        # The student edits build_vocab and runs it, but does not save.
        edited = next(
            c for c in saved["cells"] if c.get("metadata", {}).get("gptcourse", {}).get("name") == "build_vocab"
        )
        new_source = edited["source"] + "\n    # a second thought"
        _run_new(client, notebook, new_source)
        out = _run_new(client, notebook, f"package_submission({str(path)!r})")
        assert out.startswith("NOT PACKAGED") and "build_vocab" in out and "Save the notebook" in out
        assert not target.exists()
        _run_new(client, notebook, f"__session__ = {str(path)!r}")  # what Jupyter's kernel is told
        assert "NOT PACKAGED. Lab 1 - my copy (2).ipynb on disk is not what you last ran for: build_vocab" in _run_new(
            client, notebook, "package_submission()"
        )
        _run_new(client, notebook, "del __session__")

        # Saving makes the file match again; the older copy no longer does, so the right file is found.
        edited["source"] = new_source
        path.write_text(json.dumps(saved))
        out = _run_new(client, notebook, "package_submission()")
        assert f"Packaged {NAME}" in out and target.exists()
        with zipfile.ZipFile(target) as archive:
            assert "a second thought" in archive.read(NAME).decode()
