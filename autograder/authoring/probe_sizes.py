"""check-stage's rule "probe sizes apart": where two sizes of a probe's input are equal, a
transpose or a bare reshape that mixes them can pass by luck. A stage whose tests could be
fooled that way declares, in its hidden suite, which calls must keep their sizes apart::

    # hidden.py of 05_multihead
    SIZES_APART = {
        "merge_heads": lambda x: tuple(x.shape),  # B, H, T, D
        "MultiHeadAttention": lambda module, x, *args, **kwargs: heads(x, module.num_heads),
        ...
    }

Each entry names a function or class of the notebook and gives the sizes of a call (for a
class, of its module and its ``forward``'s arguments) that must all be different. The rule
runs every public and hidden probe on the reference notebook with those names recording
their calls, and reports each call whose sizes repeat, naming its test. A call the reference
refuses (it raises: a wrong rank, a head count that does not divide) is there to be refused
and is not read; a declared name no probe calls is reported (the declaration went stale).

Example::

    >>> repeated((4, 7, 30, 5, 6)), repeated((3, 5, 20, 4, 5))
    ([], [5])
"""

from collections.abc import Callable
from typing import Any

from autograder.build.notebooks import make_notebook
from autograder.engine.submission import code_cells
from autograder.engine.suites import StageTests
from autograder.kit.cases import Namespace
from autograder.kit.runtime import CASE_SEED, reseed

from .declarations import hidden_declaration

DECLARATION = "SIZES_APART"
Sizes = Callable[..., tuple[int, ...]]


def repeated(sizes: tuple[int, ...]) -> list[int]:
    """The sizes that occur more than once, in order."""
    return sorted({s for s in sizes if sizes.count(s) > 1})


def sizes_apart_problems(stage, tests: StageTests) -> list[str]:
    """Every call a probe makes on the reference notebook to a name of ``SIZES_APART`` whose
    sizes repeat, and every declared name no probe calls."""
    sizes_of = hidden_declaration(tests, DECLARATION)
    if not sizes_of:
        return []
    names: dict[str, Any] = {}
    for cell in code_cells(make_notebook(stage, "reference"), tests.given):
        exec(compile(cell.source, f"<cell {cell.number}>", "exec"), names)
    missing = sorted(set(sizes_of) - set(names))
    if missing:
        return [f"{DECLARATION} names {', '.join(missing)}, which the notebook does not define"]
    calls: list[tuple[str, tuple[int, ...]]] = []
    for name, sizes in sizes_of.items():
        names[name] = _recording(name, names[name], sizes, calls)
    problems, called = [], set()
    for case in tests.cases:
        start = len(calls)
        reseed(CASE_SEED)
        try:
            case.probe(Namespace(names))
        except Exception as exc:  # the author's probe on the reference: reported, with its test
            problems.append(f"{case.key}: the probe raised {type(exc).__name__}: {exc} on the reference")
        for name, sizes in calls[start:]:
            called.add(name)
            if repeated(sizes):
                problems.append(
                    f"{case.key}: {name} is called with sizes {sizes} ({DECLARATION}), where"
                    f" {', '.join(map(str, repeated(sizes)))} repeats:"
                    " make every size differ, so that no transpose or reshape that mixes them passes by luck"
                )
    problems += [f"no probe calls {name}, which {DECLARATION} names" for name in sizes_of if name not in called]
    return problems


def _recording(name: str, target: Any, sizes: Sizes, calls: list) -> Any:
    """``target`` (a function, or a class whose ``forward`` is watched) noting the sizes of each
    call it completes in ``calls``."""
    if isinstance(target, type):

        class Recorded(target):
            def forward(self, *args, **kwargs):
                out = super().forward(*args, **kwargs)
                calls.append((name, tuple(sizes(self, *args, **kwargs))))
                return out

        Recorded.__name__ = Recorded.__qualname__ = target.__name__
        return Recorded

    def recorded(*args, **kwargs):
        out = target(*args, **kwargs)
        calls.append((name, tuple(sizes(*args, **kwargs))))
        return out

    return recorded
