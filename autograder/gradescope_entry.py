"""Entry point of the Gradescope autograder (``run_autograder`` calls it).

Grades the notebook in ``ROOT/submission`` with the suites and fixtures shipped in the
zip, then writes ``ROOT/results/results.json`` once every process the submission
started is gone. ``ROOT`` is ``/autograder`` on Gradescope; tests point it elsewhere.
"""

import argparse
import json
import sys
import time
from pathlib import Path

from . import codec, processes
from .harness import load_suite
from .judge import judge, scrub, secret_lines
from .notebook import SubmissionError
from .results import cell_notes, dump_json, gradescope_json, write_atomic
from .runner import Limits, Outcome, run_submission

HERE = Path(__file__).resolve().parent


def find_submission(folder: Path) -> tuple[Path | None, str]:
    """The notebook (or exported zip) to grade, and a note when the choice was not obvious."""
    candidates = sorted(p for p in folder.rglob("*") if p.suffix.lower() in (".ipynb", ".zip") and ".ipynb_checkpoints" not in p.parts)
    notebooks = [p for p in candidates if p.suffix.lower() == ".ipynb"] or candidates
    if not notebooks:
        return None, "No notebook (.ipynb) was found in your submission."
    if len(notebooks) > 1:
        return notebooks[0], f"Several notebooks were submitted; {notebooks[0].name} was graded."
    return notebooks[0], ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", type=Path, default=Path("/autograder"))
    parser.add_argument("--stage", required=True)
    args = parser.parse_args(argv)
    start = time.monotonic()
    processes.become_subreaper()
    suite_files = [HERE / "suites" / args.stage / "public.py", HERE / "suites" / args.stage / "hidden.py"]
    cases = []
    for index, path in enumerate(suite_files):
        cases.extend(load_suite(str(path), f"gptcourse_suite_{index}").cases)
    fixture_doc = json.loads((HERE.parent / "fixtures" / f"{args.stage}.json").read_text(encoding="utf-8"))
    fixtures = {key: codec.decode(value) for key, value in fixture_doc["values"].items()}
    submission, note = find_submission(args.root / "submission")
    if submission is None:
        outcome = Outcome(errors={c.key: "no notebook was submitted" for c in cases}, fatal=note)
    else:
        try:
            outcome = run_submission(submission, suite_files, cases, Limits())
        except SubmissionError as exc:
            outcome = Outcome(errors={c.key: str(exc) for c in cases}, fatal=str(exc))
    secrets = secret_lines([suite_files[1].read_text(encoding="utf-8")])
    results = judge(cases, outcome, fixtures, secrets)
    outcome.cell_errors = {i: scrub(m, secrets) for i, m in outcome.cell_errors.items()}
    processes.reap_strays()
    notes = "\n".join(x for x in (note, cell_notes(outcome)) if x)
    doc = gradescope_json(results, output=notes, execution_time=time.monotonic() - start)
    write_atomic(args.root / "results" / "results.json", dump_json(doc))
    print(doc["output"].splitlines()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
