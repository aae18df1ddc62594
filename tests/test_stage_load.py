"""The README's table of what each stage asks (and its time estimate) is what
``benchmarks/stage_load.py`` measures from the stages as they are now."""

import contextlib
import io
import sys

from autograder.course import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

import stage_load  # noqa: E402


def test_the_readme_table_is_the_measured_one():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        stage_load.main()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    stale = [row for row in out.getvalue().splitlines() if row not in readme]
    assert not stale, f"README's stage-load table differs; run benchmarks/stage_load.py: {stale}"


def test_a_definition_counts_code_lines_only():
    source = 'def f(x):\n    """Doc.\n\n    More."""\n    # a comment\n\n    return x\n'
    node = stage_load.ast.parse(source).body[0]
    assert stage_load.code_lines(node, source.splitlines()) == 2
