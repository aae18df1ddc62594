"""The rule "catalogue copies no reference" (``autograder/authoring/copies.py``) finds a hand copy
of a reference function, and a template whose right slots give one, and neither a slipped copy nor
a template that differs; every stage keeps the rule (``tests/test_rules.py``)."""

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


def test_a_template_whose_right_slots_give_the_reference_is_found_and_one_that_differs_is_not():
    """However a template helper fills its template (``str.format``, ``str.replace``), called with no
    changes it gives the text the rule compares; a helper that slips ``reference(...)`` is no template."""
    stage = get_stage("04")
    copy = bare(reference_source(stage.module, "causal_mask"))
    braces = copy.replace("{", "{{").replace("}", "}}")
    source = "\n".join(
        [
            "from autograder.authoring.catalogue import reference, slip",
            f"_CAUSAL = {braces.replace('diagonal=1', 'diagonal={diagonal}')!r}",
            "_CAUSAL_RIGHT = {'diagonal': '1'}",
            "def _causal(**changes):",
            "    return _CAUSAL.format(**{**_CAUSAL_RIGHT, **changes})",
            f"_MASK = {copy.replace('.triu(diagonal=1)', '.TRIU')!r}",
            "_M_RIGHT = {'TRIU': 'triu(diagonal=1)'}",
            "def _mask(**changes):",
            "    code = _MASK",
            "    for key, value in (_M_RIGHT | changes).items():",
            "        code = code.replace('.' + key, '.' + value)",
            "    return code",
            f"_OTHER = {braces.replace('diagonal=1', 'diagonal={diagonal}')!r}",
            "_OTHER_RIGHT = {'diagonal': '0'}",
            "def _other(**changes):",
            "    return _OTHER.format(**{**_OTHER_RIGHT, **changes})",
            "def _slipped(**changes):",
            "    return slip(reference('masking', 'causal_mask'), *changes.items())",
        ]
    )
    assert copied_references(source, stage.module) == [
        "_CAUSAL filled with _CAUSAL_RIGHT (_causal()) copies solutions.masking.causal_mask",
        "_MASK filled with _M_RIGHT (_mask()) copies solutions.masking.causal_mask",
    ]
