"""One run of a stage's Gradescope zip, as Gradescope runs it, for the benchmark to time as a command.

    python benchmarks/gradescope_run.py S.zip S.ipynb OUT

``autograder.build.gradescope_tryout.run_zip`` lays out a folder like Gradescope's
``/autograder`` (``source/`` the unpacked zip, ``submission/`` the notebook,
``submission_metadata.json``, ``results/``) and runs the zip's own ``run_autograder``
with this Python, unconfined (Gradescope's limits are tested elsewhere). Writes
``OUT/results.json`` (the zip's) and ``OUT/tryout.json`` (``seconds``: the wall time of
``run_autograder`` alone; ``returncode``), prints what ``run_autograder`` printed and
exits with its status.
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from autograder.build.gradescope_tryout import run_zip  # noqa: E402


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        raise SystemExit("usage: gradescope_run.py ZIP NOTEBOOK OUT")
    zip_path, notebook, out = map(Path, argv)
    tryout = run_zip(zip_path, notebook, gradescope_limits=False, python=sys.executable)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(tryout.results))
    (out / "tryout.json").write_text(json.dumps({"seconds": tryout.seconds, "returncode": tryout.returncode}))
    print(tryout.stdout, end="")
    print(tryout.stderr, end="", file=sys.stderr)
    return tryout.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
