"""How the table of what each stage asks counts lines (that the README's table is the one
measured is check-stage's rule "README's figures current", run for every stage in test_rules.py)."""

from autograder.authoring import stage_load


def test_a_definition_counts_code_lines_only():
    source = 'def f(x):\n    """Doc.\n\n    More."""\n    # a comment\n\n    return x\n'
    node = stage_load.ast.parse(source).body[0]
    assert stage_load.code_lines(node, source.splitlines()) == 2
