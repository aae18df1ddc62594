"""The README's table of what each stage asks a student to write, and its time estimate
(``autograder/authoring/stage_load.py`` says how it is counted and estimated).

    python benchmarks/stage_load.py
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.authoring.stage_load import HEADER, table_row  # noqa: E402
from autograder.course import all_stages  # noqa: E402


def main() -> int:
    print(HEADER)
    for stage in all_stages():
        print(table_row(stage.folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
