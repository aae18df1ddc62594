"""The kit: what every student notebook carries, and what test suites are written with.

Rules (checked by ``tests/test_layers.py`` and ``gptcourse check-stage``):

- Standard library and torch only (numpy for reseeding): the build pastes these modules,
  in ``PASTED`` order and then the stage's public suite, into the notebook's first code
  cell as one module, so that ``check("question")`` works in any Jupyter front end with
  nothing installed but torch.
- Modules of the kit import each other only with top-level ``from .module import ...``
  statements (the build drops them when pasting); a suite imports the kit with top-level
  ``from autograder.kit import ...`` statements, dropped likewise.
- No three single quotes in a row: the paste is a raw string delimited by them.

A suite file is written with the names exported here::

    from autograder.kit import REFERENCE, Hint, Suite, close, dtypes, equal, generator, near

Comparisons never raise on a student's output (a wrong type, dtype, device or shape is a
failed verdict naming both sides); ``near`` and ``same_shape`` are the never-raising
tests that hints and property checks are written with.
"""

from .cases import (
    REFERENCE,
    Case,
    MissingName,
    Namespace,
    Suite,
    catch,
    failure_roots,
    generator,
    grad_mode,
    mode_of,
    randn,
    replacing,
    set_parameters,
    withheld_guards,
)
from .checks import (
    Hint,
    Verdict,
    as_values,
    close,
    close_number,
    dtypes,
    each_raised,
    equal,
    mode_problem,
    near,
    raises,
    same_shape,
    satisfies,
    tensor_problem,
    with_hint,
)
from .placement import Placement, unplaced
from .standins import Bigram, CausalMean, StandInConfig, stand_in_config

# in dependency order
PASTED = ("checks", "cases", "standins", "placement", "runtime", "check_cell", "packaging", "threads")

__all__ = [
    "REFERENCE",
    "Bigram",
    "Case",
    "CausalMean",
    "Hint",
    "MissingName",
    "Namespace",
    "Placement",
    "Suite",
    "Verdict",
    "as_values",
    "catch",
    "close",
    "close_number",
    "dtypes",
    "each_raised",
    "equal",
    "failure_roots",
    "generator",
    "grad_mode",
    "mode_of",
    "mode_problem",
    "near",
    "raises",
    "randn",
    "replacing",
    "same_shape",
    "satisfies",
    "set_parameters",
    "stand_in_config",
    "StandInConfig",
    "tensor_problem",
    "unplaced",
    "with_hint",
    "withheld_guards",
]
