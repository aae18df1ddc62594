"""The Gradescope autograder zip: ``setup.sh`` and ``run_autograder`` at the root.

The zip holds the grading engine, the stage's test suites and its fixtures (expected
outputs), never the reference solutions. ``run_autograder`` grades
``$GRADESCOPE_ROOT/submission/*.ipynb`` (``/autograder`` by default) through the same
engine as ``gptcourse grade`` and writes ``results/results.json``.
"""

import zipfile
from pathlib import Path

from ..stages import Stage

ENGINE = Path(__file__).resolve().parent.parent
FIXED_TIME = (2024, 1, 1, 0, 0, 0)
ENGINE_FILES = [
    "__init__.py", "checks.py", "child.py", "codec.py", "harness.py", "judge.py", "notebook.py",
    "processes.py", "results.py", "runner.py", "gradescope_entry.py",
]

REQUIREMENTS = """\
--extra-index-url https://download.pytorch.org/whl/cpu
torch==2.13.0+cpu
numpy==2.4.6
"""

SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once when the autograder is built.
set -euo pipefail
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3.11 python3.11-venv >/dev/null \\
  || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv >/dev/null
PY=$(command -v python3.11 || command -v python3)
"$PY" -m venv /autograder/venv
/autograder/venv/bin/pip install --quiet --no-cache-dir -r /autograder/source/requirements.txt
# Fail the build now, not at a student's first submission.
/autograder/venv/bin/python -c "import sys, torch, numpy; sys.path.insert(0, '/autograder/source'); import autograder.gradescope_entry; print('autograder ready: torch', torch.__version__)"
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this for every submission.
set -uo pipefail
ROOT="${GRADESCOPE_ROOT:-/autograder}"
PY="${GPTCOURSE_PYTHON:-$ROOT/venv/bin/python}"
cd "$ROOT/source"
exec "$PY" -m autograder.gradescope_entry --root "$ROOT" --stage "$(cat "$ROOT/source/STAGE")"
"""


def _add(archive: zipfile.ZipFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = zipfile.ZipInfo(name, FIXED_TIME)
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def build_gradescope_zip(stage: Stage, out_dir: Path, fixture_file: Path) -> Path:
    """Write ``out_dir/<stage>.zip`` (deterministic bytes for the same inputs)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{stage.id}.zip"
    with zipfile.ZipFile(target, "w") as archive:
        _add(archive, "setup.sh", SETUP_SH.encode(), 0o755)
        _add(archive, "run_autograder", RUN_AUTOGRADER.encode(), 0o755)
        _add(archive, "requirements.txt", REQUIREMENTS.encode())
        _add(archive, "STAGE", stage.id.encode())
        for name in ENGINE_FILES:
            _add(archive, f"autograder/{name}", (ENGINE / name).read_bytes())
        for path in stage.suite_files:
            _add(archive, f"autograder/suites/{stage.id}/{path.name}", path.read_bytes())
        _add(archive, f"fixtures/{stage.id}.json", fixture_file.read_bytes())
    return target
