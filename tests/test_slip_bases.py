"""The rule "catalogue copies no reference" (``autograder/authoring/copies.py``) finds a hand copy
of a reference function, and neither a slipped copy nor a template; every stage keeps the rule
(``tests/test_rules.py``)."""

from autograder.authoring.bare import bare
from autograder.authoring.copies import copied_references
from autograder.build.stubs import reference_source
from autograder.course import get_stage


def test_a_copy_without_docstrings_and_annotations_is_found_and_a_slipped_one_is_not():
    stage = get_stage("04")
    copy = bare(reference_source(stage.module, "causal_mask"))
    slipped = copy.replace("triu(diagonal=1)", "triu(diagonal=0)")
    assert slipped != copy
    source = f"CAUSAL = {copy!r}\nWRONG = {slipped!r}\nPLACEHOLDER = 'def causal_mask(T):\\n    return {{x}}'\n"
    assert copied_references(source, stage.module) == ["CAUSAL copies solutions.masking.causal_mask"]
