"""Running one test case where the student's code runs, and judging its output.

The grading child and the notebook's ``check()`` run a probe the same way (``run_probe``:
reseeded, timed, the student's exception described in words), and the grading parent
and ``check()`` judge an output the same way (``judge_output``). A check that itself
fails on an output is a fault of the test, raised as ``CheckFault`` so that it is never
mistaken for the student's mistake.

Part of the kit: standard library and torch only, pasted verbatim into every notebook.
"""

import builtins
import linecache
import time
import types
from collections.abc import Callable
from typing import Any

import torch

from .cases import NOT_IMPLEMENTED, TEXT_LIMIT, Case, MissingName, Namespace
from .checks import Verdict


def calibration_workload(rounds: int = 75) -> int:
    """A fixed amount of pure-Python work: the longest word under each of many tuple keys.

    Efficiency tests compare a student's time with this workload's time on the same
    machine in the same run, so that a slow or busy grader does not fail fast code. It
    does what tokenizer code spends its time on (slicing short strings, hashing tuples
    of them, dictionary look-ups) and is no function of the course. It keeps few objects
    alive, so its time does not depend on how much memory the process already holds.
    """
    words = [f"{(i * 7919) % 5003:x}z{i % 97}" for i in range(5000)]
    total = 0
    for r in range(rounds):
        longest: dict[tuple[str, str], str] = {}
        for word in words:
            signature = (word[: 1 + r % 2], word[-2:])
            if len(word) > len(longest.get(signature, "")):
                longest[signature] = word
        total += len(longest)
    return total


def calibrate(repeats: int = 3) -> float:
    """CPU seconds the calibration workload takes in this thread (the fastest of a few runs):
    other programs, and this process's other threads, do not count, so a busy machine does
    not change it much."""
    best = float("inf")
    for _ in range(repeats):
        start = time.thread_time()
        calibration_workload()
        best = min(best, time.thread_time() - start)
    return best


def notebook_cell(filename: str) -> str | None:
    """The name Jupyter shows for the cell that compiled to ``filename`` ("cell In[5]"), or
    None when ``filename`` is not a cell of the running IPython kernel (or there is none)."""
    shell = getattr(builtins, "get_ipython", lambda: None)()
    name = getattr(getattr(shell, "compile", None), "format_code_name", None)
    label = name(filename) if callable(name) else None
    return f"cell {label[1]}" if isinstance(label, tuple) and len(label) == 2 else None


def _function(code: types.CodeType) -> str:
    """The function or method a code object belongs to, "" at a cell's top level
    (``Head.forward``; comprehensions and lambdas count as the function around them)."""
    parts = [p for p in code.co_qualname.split(".") if p != "<locals>"]
    while parts and parts[-1].startswith("<"):
        parts.pop()
    return ".".join(parts)


def error_location(
    exc: BaseException, cell_of: Callable[[str], str | None] = notebook_cell, current: str | None = None
) -> str:
    """Where in the student's code ``exc`` was raised, as the student sees it, or "".

    ``cell_of(filename)`` names the cell that ``filename`` was compiled from ("code cell 5")
    and is None for code that is not the student's (the course's tests, torch). The
    innermost frame in the student's code is described: the function or class method, the
    line within its cell and the line's text. ``current`` is the cell being run, which is
    not named again.

    Example:
        >>> try:
        ...     exec(compile("def f(x):\\n    return x[3]\\nf([])", "<c5>", "exec"), {})
        ... except IndexError as exc:
        ...     error_location(exc, {"<c5>": "code cell 5"}.get)
        'at line 2 of `f` in code cell 5'
    """
    found = None
    tb = exc.__traceback__
    while tb is not None:
        cell = cell_of(tb.tb_frame.f_code.co_filename)
        if cell is not None:
            found = (tb, cell)
        tb = tb.tb_next
    if found is None:
        return ""
    tb, cell = found
    code = tb.tb_frame.f_code
    line = linecache.getline(code.co_filename, tb.tb_lineno).strip()
    where = f"at line {tb.tb_lineno}"
    function = _function(code)
    if function:
        where += f" of `{function}`"
    if cell != current:
        where += f" in {cell}"
    if line:
        where += f": `{line if len(line) <= 80 else line[:77] + '...'}`"
    return where


def describe_error(
    exc: BaseException, cell_of: Callable[[str], str | None] = notebook_cell, current: str | None = None
) -> str:
    """A short, student-facing account of an exception raised by the student's code: what
    was raised and where (``error_location``)."""
    if isinstance(exc, NotImplementedError):
        return f"{NOT_IMPLEMENTED} (the stub still raises NotImplementedError)"
    if isinstance(exc, MissingName):
        return str(exc)
    text = str(exc)
    if len(text) > TEXT_LIMIT:
        text = text[: TEXT_LIMIT - 3] + "..."
    where = error_location(exc, cell_of, current)
    return f"raised {type(exc).__name__}: {text}" + (f" {where}" if where else "")


CASE_SEED = 1234


def reseed(seed: int) -> None:
    """Seed every global random generator a test may touch (Python, NumPy, torch)."""
    import random

    import numpy

    random.seed(seed)
    numpy.random.seed(seed)
    torch.manual_seed(seed)


class CheckFault(Exception):
    """A test's check (or one of its hints) failed on an output: a fault of the test, not of the student."""


def run_probe(
    case: Case, names: Namespace, cell_of: Callable[[str], str | None] = notebook_cell
) -> tuple[Any, str | None, float]:
    """Run ``case``'s probe once, reseeded: ``(output, None, seconds)`` or ``(None, error, seconds)``,
    ``seconds`` the CPU time this process used meanwhile (all its threads; see ``calibrate``).

    ``cell_of`` names the cells of the student's code (see ``error_location``).
    """
    reseed(CASE_SEED)
    start = time.process_time()
    try:
        output = case.probe(names)
    except Exception as exc:  # a student's error is a failed test, described in words
        return None, describe_error(exc, cell_of), time.process_time() - start
    return output, None, time.process_time() - start


def boolean_in(value: Any, path: str = "output", depth: int = 0) -> str | None:
    """Where ``value`` holds a boolean (a Python or NumPy bool, or a 0-d bool tensor), or None.

    A probe's output never holds one: a boolean about the student's objects is a verdict,
    and a verdict computed where the student's code runs can be faked. Boolean state
    (``module.training``, grad mode) is returned as a word (``cases.mode_of``, ``cases.grad_mode``).

    Example:
        >>> boolean_in({"out": [1, 2], "same": True})
        "output['same']"
        >>> boolean_in((torch.tensor([True, False]), "train")) is None
        True
    """
    kind = type(value)
    if kind is bool or (kind.__name__ == "bool_" and kind.__module__ == "numpy"):
        return path
    if isinstance(value, torch.Tensor):
        return path if value.dtype == torch.bool and value.dim() == 0 else None
    if depth > 64:
        return None
    if kind in (list, tuple):
        return next((p for i, v in enumerate(value) if (p := boolean_in(v, f"{path}[{i}]", depth + 1))), None)
    if kind is dict:
        for key, item in value.items():
            found = boolean_in(key, f"{path} (a key)", depth + 1) or boolean_in(item, f"{path}[{key!r}]", depth + 1)
            if found:
                return found
    return None


def refused_in(value: Any, path: str = "output", depth: int = 0) -> str | None:
    """Why the judge refuses ``value`` without asking the check, or None.

    An instance of a subclass of ``torch.Tensor`` may redefine every comparison and
    method a check would call, so only a plain tensor is judged. As the parent receives
    outputs (``engine.codec``), such a tensor, and any object of a type the grader does
    not carry, arrives as a stand-in marked ``refused_output``.

    Example:
        >>> print(refused_in([torch.zeros(2), torch.nn.Parameter(torch.zeros(2))]))
        output[1] is an instance of Parameter, a subclass of torch.Tensor:
        return a plain tensor (for a parameter, its .detach())
    """
    kind = type(value)
    if isinstance(value, torch.Tensor) and kind is not torch.Tensor:
        name = kind.__qualname__
    elif getattr(kind, "refused_output", False):
        name = getattr(value, "type_name", kind.__name__)
        if not getattr(kind, "tensor_subclass", False):
            return (
                f"{path} is an object of type {name}, which the grader does not accept: "
                "return tensors, numbers, strings, None, or lists, tuples and dicts of them"
            )
    else:
        if depth < 64 and kind in (list, tuple):
            return next((p for i, v in enumerate(value) if (p := refused_in(v, f"{path}[{i}]", depth + 1))), None)
        if depth < 64 and kind is dict:
            return next((p for k, v in value.items() if (p := refused_in(v, f"{path}[{k!r}]", depth + 1))), None)
        return None
    return (
        f"{path} is an instance of {name}, a subclass of torch.Tensor: return "
        "a plain tensor (for a parameter, its .detach())"
    )


def judge_output(case: Case, got: Any, expected: Any) -> Verdict:
    """The verdict of ``case``'s check on ``got``; hidden tests never quote ``expected``.

    An output that holds a tensor subclass or an object the grader does not carry fails
    the test without reaching the check (``refused_in``). Raises ``CheckFault`` when the
    output holds a boolean (``boolean_in``), or when the check or a hint raises, or
    returns no ``Verdict``.
    """
    refused = refused_in(got)
    if refused is not None:
        return Verdict(False, refused)
    where = boolean_in(got)
    if where is not None:
        raise CheckFault(
            f"{case.key}: the output holds a boolean ({where}): a probe returns raw outputs, never a verdict, "
            "and the check computes it (boolean state goes as a word: mode_of, grad_mode); "
            "unless the code under test returned it, this is a fault of the test"
        )
    try:
        verdict = case.check(got, expected, case.public)
    except Exception as exc:  # re-raised as the test's fault, with the cause kept
        raise CheckFault(f"{case.key}: the check raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(verdict, Verdict):
        raise CheckFault(f"{case.key}: the check returned {type(verdict).__name__}, not a Verdict")
    return verdict


def fault_message(fault: CheckFault) -> str:
    """What a student is told when a test could not judge their output: the course's fault.

    ``gptcourse check-stage`` grades outputs of every kind a slip makes (other dtypes,
    None, the input, zeros) so that no check raises on them; one that still does is a
    defect of the course, and the student is told so, never that their code is wrong.
    """
    return (
        "the grader could not judge this output: its check failed on it "
        f"({str(fault).split(': ', 1)[-1]}). This is a fault of the course, not a verdict on your "
        "code: tell your instructor, naming this test."
    )
