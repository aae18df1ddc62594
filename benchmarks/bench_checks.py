"""The student's check: from running a check cell to its report, in a real Jupyter kernel.

Per stage, the reference notebook (demonstration and training cells left out, as a
student may skip them) runs in a fresh ``python3`` kernel through nbclient, cell by
cell. Every cell before the first check cell (the harness, the imports, the given code,
the answers) is "loading"; then each ``check("question")`` cell is timed from the
execute request to its reply, once as the student first runs it and, when that took
under ``rerun_below`` seconds, once more.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _stream(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")


def time_checks(stage, variant: str = "reference", rerun_below: float = 5.0) -> dict:
    import nbformat
    from nbclient import NotebookClient

    from autograder.build.notebooks import make_notebook
    from autograder.engine.submission import TAG_CHECK, TAG_DEMO, TAG_TRAIN

    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    raw = make_notebook(stage, variant)
    raw["cells"] = [c for c in raw["cells"] if not {TAG_DEMO, TAG_TRAIN} & set(c.get("metadata", {}).get("tags", []))]
    nb = nbformat.from_dict(raw)
    checks: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="gptcourse-bench-check-") as folder:
        client = NotebookClient(
            nb, timeout=600, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": folder}}
        )
        t0 = time.perf_counter()
        with client.setup_kernel():
            kernel_s = time.perf_counter() - t0
            loading_s = None
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                is_check = TAG_CHECK in cell.metadata.get("tags", [])
                if is_check and loading_s is None:
                    loading_s = time.perf_counter() - t0 - kernel_s
                t = time.perf_counter()
                client.execute_cell(cell, index)
                first = time.perf_counter() - t
                if not is_check:
                    continue
                report = _stream(cell).strip().splitlines()
                second = None
                if first < rerun_below:
                    t = time.perf_counter()
                    client.execute_cell(cell, index)
                    second = time.perf_counter() - t
                errors = [o for o in cell.outputs if o.get("output_type") == "error"]
                checks.append(
                    {
                        "cell": cell.source.strip(),
                        "first_s": first,
                        "second_s": second,
                        "report": report[0] if report else "",
                        "passed": bool(report) and "public tests passed" in report[0] and not errors,
                    }
                )
    return {"kernel_start_s": kernel_s, "loading_s": loading_s, "checks": checks}


def all_stages(stages, say=print) -> dict:
    out = {}
    for stage in stages:
        out[stage.id] = r = time_checks(stage)
        slow = max(r["checks"], key=lambda c: c["first_s"]) if r["checks"] else None
        say(
            f"  {stage.id}: {len(r['checks'])} checks, slowest {slow['cell'] if slow else '-'} {slow['first_s'] if slow else 0:.2f} s"
        )
    return out
