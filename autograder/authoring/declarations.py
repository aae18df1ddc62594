"""What a stage's hidden suite declares for ``gptcourse check-stage``: module-level names of
``hidden.py`` that rules read, never the grader.

- ``SIZES_APART``: the calls whose sizes the probes must keep apart (``probe_sizes``);
- ``QUESTIONS_USE``: for a question whose tests run the student's code of other questions by
  design (07's ``training_works`` trains the student's ``GPT`` with the student's ``train``),
  those questions (the rule "an empty answer costs only its own question").

Example::

    >>> from autograder.course import get_stage
    >>> hidden_declaration(get_stage("07").tests(), "QUESTIONS_USE")
    {'training_works': ('model', 'train')}
"""

import inspect
from typing import Any

from autograder.engine.suites import StageTests


def hidden_declaration(tests: StageTests, name: str) -> dict[str, Any]:
    """The hidden suite's ``name`` (read from the module its probes were defined in), or {}."""
    for case in tests.cases:
        if not case.public:
            return dict(inspect.unwrap(case.probe).__globals__.get(name, {}))
    return {}
