"""The student's check cells, run in a real Jupyter kernel (nbclient), under any file name."""

import json
import os

import nbformat
import pytest
from nbclient import NotebookClient

from autograder.build.notebooks import make_notebook
from autograder.notebook import TAG_CHECK, TAG_DEMO, TAG_TRAIN
from autograder.stages import available_stages


def _run(stage, variant, folder):
    nb = make_notebook(stage, variant)
    nb["cells"] = [c for c in nb["cells"] if not {TAG_DEMO, TAG_TRAIN} & set(c.get("metadata", {}).get("tags", []))]
    path = folder / "Lab 1 - my copy (2).ipynb"
    path.write_text(json.dumps(nb))
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=120, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(folder)}}).execute()
    reports = {}
    for cell in notebook.cells:
        if TAG_CHECK in cell.metadata.get("tags", []):
            text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
            errors = [o for o in cell.outputs if o.get("output_type") == "error"]
            assert not errors, f"the check cell itself failed: {errors}"
            reports[cell.source] = text
    return reports


@pytest.mark.slow
@pytest.mark.parametrize("stage", available_stages()[:1], ids=lambda s: s.id)
def test_check_cells_report_in_a_kernel(stage, tmp_path):
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    reference = _run(stage, "reference", tmp_path)
    assert reference and all("public tests passed" in r for r in reference.values()), reference
    empty = _run(stage, "student", tmp_path)
    for report in empty.values():
        assert "public tests passed" not in report and "not implemented yet" in report
    for report in [*reference.values(), *empty.values()]:
        assert "all tests passed" not in report.lower()
