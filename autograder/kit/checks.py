"""Comparisons that turn one test's raw output into a verdict.

A check is a callable ``check(got, expected, reveal) -> Verdict``. ``got`` is what the
student's code produced (decoded from the child process, or computed in place by the
notebook's check cell), ``expected`` is the literal or fixture the test names, and
``reveal`` says whether the message may quote expected values (public tests) or only
describe the difference (hidden tests).

Part of the kit: standard library and torch only, pasted verbatim into every notebook,
where the public checks run.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass
class Verdict:
    """The outcome of one check: did it pass, what to tell the student, and the known mistake
    its hint named (``Hint.mistake``), if one fired."""

    passed: bool
    message: str = ""
    hint: str | None = None


@dataclass
class Hint:
    """A known mistake: ``when(got, expected)`` recognises it, ``text`` nudges without answering.

    ``mistake`` names the mistake in a few words (``"ids start at 1"``): the class report
    groups failures by it, and each catalogued mistake declares the hints it must trigger.
    """

    when: Callable[[Any, Any], bool]
    text: str
    mistake: str = ""


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def with_hint(verdict: Verdict, hints: list[Hint], got: Any, expected: Any) -> Verdict:
    """Add the first matching hint to a failed verdict. A hint that raises is a fault of the
    test (``runtime.CheckFault`` when judged), never silently "no hint"."""
    if verdict.passed:
        return verdict
    for hint in hints:
        if hint.when(got, expected):
            return Verdict(False, f"{verdict.message}\nHint: {hint.text}", hint.mistake or hint.text)
    return verdict


def tensor_problem(
    got: Any,
    dtype: torch.dtype | None = None,
    shape: tuple[int, ...] | None = None,
    reveal: bool = True,
    device: torch.device | str | None = None,
) -> str | None:
    """Why ``got`` is not a plain tensor of the given dtype, shape and device, or None when it is.

    Both sides are named ("expected dtype torch.float32, got torch.float64"); with
    ``reveal`` False (a hidden test), a wrong shape is described without the expected one.
    A tensor without values (sparse, or on the meta device) is never one.

    Example:
        >>> tensor_problem(torch.zeros(2, 4), shape=(2, 3), reveal=False)
        'your tensor has shape (2, 4), which is not the expected shape'
        >>> tensor_problem(torch.zeros(2, dtype=torch.float64), dtype=torch.float32)
        'expected dtype torch.float32, got torch.float64'
    """
    if type(got) is not torch.Tensor:
        if isinstance(got, torch.Tensor) or getattr(
            type(got), "tensor_subclass", False
        ):  # in the notebook, or as the parent decodes it
            name = type(got).__qualname__ if isinstance(got, torch.Tensor) else got.type_name
            return (
                "expected a plain torch.Tensor, got an instance of a subclass "
                f"of it ({name}); nn.Parameter is one: return its .detach()"
            )
        return f"expected a torch.Tensor, got {type(got).__name__}"
    if got.layout != torch.strided:
        return f"expected a dense tensor, got one of layout {got.layout}"
    if got.is_meta:
        return "expected a tensor with values, got one on the meta device"
    if dtype is not None and got.dtype != dtype:
        return f"expected dtype {dtype}, got {got.dtype}"
    if device is not None and got.device != torch.device(device):
        return f"expected a tensor on device {torch.device(device)}, got one on {got.device}"
    if shape is not None and tuple(got.shape) != tuple(shape):
        if not reveal:
            return f"your tensor has shape {tuple(got.shape)}, which is not the expected shape"
        return f"expected shape {tuple(shape)}, got {tuple(got.shape)}"
    return None


def as_values(t: torch.Tensor) -> torch.Tensor:
    """A tensor's values, to compare them whatever its dtype and device: detached, on the CPU,
    in float64 (complex128 for a complex tensor).

    Example:
        >>> as_values(torch.tensor([1, 2], dtype=torch.int32))
        tensor([1., 2.], dtype=torch.float64)
    """
    return t.detach().to("cpu", torch.complex128 if t.dtype.is_complex else torch.float64)


def same_shape(got: Any, expected: Any) -> bool:
    """Whether ``got`` is a plain tensor of ``expected``'s shape (for a hint's or a property's
    test: never raises, whatever ``got`` is).

    Example:
        >>> same_shape(torch.zeros(2, 3), torch.ones(2, 3)), same_shape(None, torch.ones(2))
        (True, False)
    """
    return (
        type(got) is torch.Tensor
        and isinstance(expected, torch.Tensor)
        and got.layout == torch.strided
        and not got.is_meta
        and tuple(got.shape) == tuple(expected.shape)
    )


def near(got: Any, expected: Any, atol: float = 1e-5, rtol: float = 0.0) -> bool:
    """Whether ``got`` is a tensor of ``expected``'s shape whose values lie within
    ``atol + rtol * |expected|`` of it, compared in float64 on the CPU whatever the two
    dtypes and devices (for hints and properties: never raises; NaN is near nothing).

    Example:
        >>> near(torch.tensor([1.0, 2.0], dtype=torch.float64), torch.tensor([1.0, 2.000001]))
        True
    """
    if not same_shape(got, expected) or expected.layout != torch.strided or expected.is_meta:
        return False
    g, e = as_values(got), as_values(expected)
    return bool(((g - e).abs() <= atol + rtol * e.abs()).all())


def _as_tensor(value: Any) -> torch.Tensor | None:
    """``value`` as a tensor (a literal list of numbers becomes one), or None when it is none."""
    if isinstance(value, torch.Tensor):
        return value if type(value) is torch.Tensor and value.layout == torch.strided and not value.is_meta else None
    try:
        return torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError):  # None, a string, a ragged list: nothing to compare with
        return None


@dataclass
class Close:
    """Element-wise ``|got - expected| <= atol + rtol * |expected|`` on tensors of equal shape.

    ``dtype`` is the dtype the answer must have (and then it must lie on the expected
    tensor's device). With ``dtype=None`` only the values count: any real dtype, on any
    device, is compared in float64 on the CPU, so that a dtype slip is charged once, by
    the test of the dtype clause (``dtypes()``), not by every test of the values. NaN in
    the same places counts as equal. Never raises on a student's output: a wrong type,
    dtype, device or shape is a failed verdict naming both sides.
    """

    rtol: float
    atol: float
    dtype: torch.dtype | None = torch.float32
    hints: list[Hint] = field(default_factory=list)

    def __call__(self, got: Any, expected: Any, reveal: bool = True) -> Verdict:
        exp = _as_tensor(expected)
        if exp is None:  # a check comparing two of the student's outputs: the other one is no tensor
            problem = tensor_problem(got) or f"there is no tensor to compare yours with (got {type(expected).__name__})"
            return with_hint(Verdict(False, problem), self.hints, got, expected)
        device = exp.device if self.dtype is not None else None
        problem = tensor_problem(got, self.dtype, tuple(exp.shape), reveal, device)
        if problem is None and got.dtype.is_complex:
            problem = f"expected a real tensor, got dtype {got.dtype}"
        if problem:
            return with_hint(Verdict(False, problem), self.hints, got, expected)
        g = as_values(got)
        e = as_values(exp)
        both_nan = torch.isnan(g) & torch.isnan(e)
        err = (g - e).abs()
        err = torch.where(both_nan, torch.zeros_like(err), err)
        err = torch.where(torch.isnan(err), torch.full_like(err, math.inf), err)
        bad = err > self.atol + self.rtol * e.abs()
        if not bool(bad.any()):
            return Verdict(True)
        flat = int(torch.argmax(torch.where(bad, err, torch.zeros_like(err))).item()) if err.numel() else 0
        where = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), tuple(e.shape))) if e.dim() else ()
        message = (
            f"values differ: {int(bad.sum())} of {bad.numel()} elements are outside "
            f"the tolerance (rtol={self.rtol:g}, atol={self.atol:g})"
        )
        if reveal:
            message += (
                f"; largest error {float(err.reshape(-1)[flat]):.3g} at index {where}: "
                f"expected {float(e.reshape(-1)[flat]):.6g}, got {float(g.reshape(-1)[flat]):.6g}"
            )
        else:  # the size of the error would give the expected value away
            message += f"; the largest error is at index {where}, where you returned {float(g.reshape(-1)[flat]):.6g}"
        return with_hint(Verdict(False, message), self.hints, got, expected)


def close(
    rtol: float, atol: float, dtype: torch.dtype | None = torch.float32, hints: list[Hint] | None = None
) -> Close:
    """A tensor comparison with its own relative and absolute tolerance (no default on purpose).

    ``dtype=None`` compares the values alone (the rule for value tests: a dtype clause has
    a test of its own, ``dtypes()``).

    Example:
        >>> close(1e-6, 1e-6, dtype=None)(torch.ones(2, dtype=torch.float64), torch.ones(2)).passed
        True
        >>> close(1e-6, 1e-6)(torch.ones(2, dtype=torch.float64), torch.ones(2)).message
        'expected dtype torch.float32, got torch.float64'
    """
    return Close(rtol, atol, dtype, list(hints or []))


def _at(path: str) -> str:
    return f"result{path}: " if path else ""


SAME_DTYPE = "expected"  # ``equal(dtype=...)``: each tensor has the dtype (and device) of the expected one


def _tensor_difference(got: Any, expected: torch.Tensor, at: str, reveal: bool, dtype: Any) -> str | None:
    """Where a tensor output differs from an expected tensor: its kind, dtype and device
    as ``dtype`` asks (``SAME_DTYPE``, a ``torch.dtype``, or None: values only), its shape,
    then its values, compared on the CPU in a dtype both fit in."""
    if _as_tensor(expected) is None:  # a check comparing two of the student's outputs: the other one is no plain tensor
        return at + (tensor_problem(got) or f"there is no tensor to compare yours with (got {type(expected).__name__})")
    want = expected.dtype if dtype == SAME_DTYPE else dtype
    device = expected.device if dtype is not None else None
    problem = tensor_problem(got, want, tuple(expected.shape), reveal, device)
    if problem:
        return at + problem
    common = torch.promote_types(got.dtype, expected.dtype)
    g, e = got.detach().to("cpu", common), expected.detach().to("cpu", common)
    if torch.equal(g, e):
        return None
    differs = g != e  # torch.equal is False: some element differs (NaN differs from NaN)
    where = tuple(int(i) for i in differs.nonzero()[0])
    value = got[where].item()
    shown = f"{value:.6g}" if isinstance(value, float) else repr(value)
    count = f"{int(differs.sum())} of {got.numel()} elements differ"
    return f"{at}{count}, the first at index {where}, where you have {shown}"


def _first_difference(got: Any, expected: Any, path: str, reveal: bool = True, dtype: Any = SAME_DTYPE) -> str | None:
    """Describe the first place where two plain values differ, or None when equal.

    ``path`` locates the value in the student's output (``[0]['a']``: built from positions
    and from dictionary keys the student's output has too). With ``reveal`` False (a hidden
    test) the description quotes only the student's values: never an expected value, key
    or length. ``dtype`` says how tensors' dtypes count (see ``_tensor_difference``).
    Never raises on a student's output. The expected value's kind picks the comparison.
    """
    at = _at(path)
    if isinstance(expected, torch.Tensor):
        return _tensor_difference(got, expected, at, reveal, dtype)
    if isinstance(expected, bool) or isinstance(got, bool):
        return _bool_difference(got, expected, at, reveal)
    if isinstance(expected, (int, float)):
        return _number_difference(got, expected, at, reveal)
    if isinstance(expected, str):
        return _str_difference(got, expected, at, reveal)
    if isinstance(expected, dict):
        return _dict_difference(got, expected, path, reveal, dtype)
    if isinstance(expected, (list, tuple)):
        return _sequence_difference(got, expected, path, reveal, dtype)
    same = got is None if expected is None else _same_plain(got, expected)
    return None if same else _value_difference(got, expected, at, reveal)


def _value_difference(got: Any, expected: Any, at: str, reveal: bool) -> str:
    """Two values that differ, quoted (the expected one only with ``reveal``)."""
    if reveal:
        return f"{at}expected {_short(expected)}, got {_short(got)}"
    return f"{at}your value {_short(got)} is not the expected one"


def _bool_difference(got: Any, expected: Any, at: str, reveal: bool) -> str | None:
    """Where either is a bool: the other must be a bool of the same value."""
    if type(got) is not type(expected):
        return f"{at}expected a {type(expected).__name__}, got {type(got).__name__} {_short(got)}"
    if got != expected:
        return f"{at}your value {_short(got)} is wrong" if not reveal else f"{at}expected {expected}, got {got}"
    return None


def _number_difference(got: Any, expected: int | float, at: str, reveal: bool) -> str | None:
    """An int or float expected: a number (not a bool) equal to it."""
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return f"{at}expected a number, got {type(got).__name__}"
    return None if got == expected else _value_difference(got, expected, at, reveal)


def _str_difference(got: Any, expected: str, at: str, reveal: bool) -> str | None:
    """A str expected: the same string, or the first character where they part."""
    if not isinstance(got, str):
        return f"{at}expected a str, got {type(got).__name__}"
    if got == expected:
        return None
    n = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
    if reveal:
        return f"{at}strings differ from character {n} on (lengths {len(got)} and {len(expected)} expected)"
    return (
        f"{at}your string {_short(got, 60)} ({len(got)} characters) differs from the expected one from character {n} on"
    )


def _dict_difference(got: Any, expected: dict, path: str, reveal: bool, dtype: Any) -> str | None:
    """A dict expected: the same keys, then the first value that differs, in the expected order."""
    at = _at(path)
    if not isinstance(got, dict):
        return f"{at}expected a dict, got {type(got).__name__}"
    missing = [k for k in expected if k not in got]
    extra = [k for k in got if k not in expected]
    if missing:
        if not reveal:
            return f"{at}your dict lacks keys that the expected one has"
        return f"{at}missing key {_short(missing[0])} ({len(missing)} keys missing)"
    if extra:
        return f"{at}unexpected key {_short(extra[0])} ({len(extra)} keys that should not be there)"
    found = (_first_difference(got[key], expected[key], f"{path}[{key!r}]", reveal, dtype) for key in expected)
    return next((f for f in found if f), None)


def _sequence_difference(got: Any, expected: list | tuple, path: str, reveal: bool, dtype: Any) -> str | None:
    """A list or tuple expected: a list or tuple as long, then the first item that differs."""
    at = _at(path)
    if not isinstance(got, (list, tuple)):
        return f"{at}expected a {type(expected).__name__}, got {type(got).__name__}"
    if len(got) != len(expected):
        if not reveal:
            return f"{at}your {type(got).__name__} has {len(got)} items, which is not the expected number"
        return f"{at}expected length {len(expected)}, got {len(got)}"
    found = (_first_difference(g, e, f"{path}[{i}]", reveal, dtype) for i, (g, e) in enumerate(zip(got, expected)))
    return next((f for f in found if f), None)


def _same_plain(got: Any, expected: Any) -> bool:
    """``got == expected`` for two values of one type, False when the comparison does not
    give a plain bool (an array's element-wise answer) or raises."""
    try:
        same = got == expected
    except Exception:  # a value whose == raises is not the expected one
        return False
    return same if type(same) is bool else False


@dataclass
class Equal:
    """Exact equality of plain values (lists and tuples interchangeable, tensors by dtype,
    device, shape and value; with ``dtype=None`` tensors by shape and value only, so that a
    dtype slip is charged by the dtype clause's own test, ``dtypes()``)."""

    hints: list[Hint] = field(default_factory=list)
    dtype: Any = SAME_DTYPE

    def __call__(self, got: Any, expected: Any, reveal: bool = True) -> Verdict:
        problem = _first_difference(got, expected, "", reveal, self.dtype)
        if problem is None:
            return Verdict(True)
        if reveal:
            problem += f"\nexpected {_short(expected, 300)}\ngot      {_short(got, 300)}"
        return with_hint(Verdict(False, problem), self.hints, got, expected)


def equal(hints: list[Hint] | None = None, dtype: Any = SAME_DTYPE) -> Equal:
    """Exact equality; messages name the first difference. ``dtype``: ``"expected"`` (each
    tensor has the expected tensor's dtype), a ``torch.dtype`` every tensor must have, or
    None (values only: the rule for value tests).

    Example:
        >>> ids = torch.tensor([1, 2], dtype=torch.int32)
        >>> equal(dtype=None)(ids, torch.tensor([1, 2])).passed
        True
        >>> print(equal()(ids, torch.tensor([1, 2])).message)
        expected dtype torch.int64, got torch.int32
        expected tensor([1, 2])
        got      tensor([1, 2], dtype=torch.int32)
    """
    return Equal(list(hints or []), dtype)


def _dtype_difference(got: Any, expected: Any, path: str) -> str | None:
    """Where ``got``'s tensors differ in dtype (or device) from ``expected``'s, or None.

    ``expected`` mirrors the output: a ``torch.dtype``, or a tensor (its dtype and device
    count), in place of each tensor; lists, tuples and dicts are walked; other values are
    not compared (the values are the business of other tests).
    """
    at = _at(path)
    if isinstance(expected, (torch.dtype, torch.Tensor)):
        dtype = expected if isinstance(expected, torch.dtype) else expected.dtype
        device = expected.device if isinstance(expected, torch.Tensor) else None
        problem = tensor_problem(got, dtype, None, True, device)
        return at + problem if problem else None
    if isinstance(expected, (list, tuple)):
        if not isinstance(got, (list, tuple)):
            return f"{at}expected a {type(expected).__name__}, got {type(got).__name__}"
        if len(got) != len(expected):
            return f"{at}your {type(got).__name__} has {len(got)} items, which is not the expected number"
        return next(
            (p for i, (g, e) in enumerate(zip(got, expected)) if (p := _dtype_difference(g, e, f"{path}[{i}]"))), None
        )
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return f"{at}expected a dict, got {type(got).__name__}"
        for key, inner in expected.items():
            if key not in got:
                return f"{at}your dict lacks keys that the expected one has"
            found = _dtype_difference(got[key], inner, f"{path}[{key!r}]")
            if found:
                return found
    return None


@dataclass
class Dtypes:
    """The dtype (and device) of each tensor of the output, and nothing else: the test of a
    dtype or device clause, so that a dtype slip costs that clause's points once while the
    value tests (``close(..., dtype=None)``, ``equal(dtype=None)``) judge the values.

    ``expected`` is a ``torch.dtype`` (or a structure of them) in a public test, or
    ``REFERENCE`` in a hidden one (the reference's tensors give their dtypes). A no-op that
    returns zeros of the right dtype passes such a test, so it is a guard
    (``Case.is_guard``): it earns its points only when a test of the values passes too.
    """

    hints: list[Hint] = field(default_factory=list)

    def __call__(self, got: Any, expected: Any, reveal: bool = True) -> Verdict:
        problem = _dtype_difference(got, expected, "")
        if problem is None:
            return Verdict(True)
        return with_hint(Verdict(False, problem), self.hints, got, expected)


def dtypes(hints: list[Hint] | None = None) -> Dtypes:
    """A dtype (and device) test; the values are not compared.

    Example:
        >>> check = dtypes()
        >>> check((torch.zeros(2), torch.zeros(2, dtype=torch.float64)), (torch.float32, torch.float32)).message
        'result[1]: expected dtype torch.float32, got torch.float64'
    """
    return Dtypes(list(hints or []))


@dataclass
class CloseNumber:
    """A Python number within ``atol + rtol * |expected|`` of the expected one."""

    rtol: float
    atol: float
    hints: list[Hint] = field(default_factory=list)

    def __call__(self, got: Any, expected: Any, reveal: bool = True) -> Verdict:
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            hint = " (use .item() to turn a one-element tensor into a float)" if isinstance(got, torch.Tensor) else ""
            return with_hint(
                Verdict(False, f"expected a Python float, got {type(got).__name__}{hint}"), self.hints, got, expected
            )
        err = abs(float(got) - float(expected))
        if err <= self.atol + self.rtol * abs(float(expected)) or (math.isnan(got) and math.isnan(expected)):
            return Verdict(True)
        if reveal:
            message = (
                f"off by {err:.4g} (rtol={self.rtol:g}, atol={self.atol:g}); you "
                f"returned {float(got):.6g}, expected {float(expected):.6g}"
            )
        else:  # how far off would give the expected value away
            message = (
                f"you returned {float(got):.6g}, which is outside the tolerance "
                f"(rtol={self.rtol:g}, atol={self.atol:g}) of the expected value"
            )
        return with_hint(Verdict(False, message), self.hints, got, expected)


def close_number(rtol: float, atol: float, hints: list[Hint] | None = None) -> CloseNumber:
    """A scalar comparison with its own tolerances."""
    return CloseNumber(rtol, atol, list(hints or []))


@dataclass
class Satisfies:
    """A property of the output alone: ``test(got)`` returns None when it holds, else what is wrong."""

    test: Callable[[Any], str | None]
    hints: list[Hint] = field(default_factory=list)

    def __call__(self, got: Any, expected: Any = None, reveal: bool = True) -> Verdict:
        problem = self.test(got)
        if problem is None:
            return Verdict(True)
        return with_hint(Verdict(False, problem), self.hints, got, expected)


def satisfies(test: Callable[[Any], str | None], hints: list[Hint] | None = None) -> Satisfies:
    """A property check; ``test`` returns None when the property holds, else a message."""
    return Satisfies(test, list(hints or []))


@dataclass
class Raises:
    """The probe caught an exception of type ``name`` (see ``cases.catch``)."""

    name: str
    hints: list[Hint] = field(default_factory=list)

    def __call__(self, got: Any, expected: Any = None, reveal: bool = True) -> Verdict:
        if not isinstance(got, dict) or "raised" not in got:
            return Verdict(False, "the test could not tell whether an exception was raised")
        if got["raised"] is None:
            return with_hint(
                Verdict(False, f"expected {self.name} to be raised, but nothing was raised"), self.hints, got, expected
            )
        if got["raised"] != self.name:
            return with_hint(
                Verdict(False, f"expected {self.name}, got {got['raised']}: {_short(got.get('message', ''))}"),
                self.hints,
                got,
                expected,
            )
        return Verdict(True)


def raises(name: str, hints: list[Hint] | None = None) -> Raises:
    """Passes when the probe's call raised an exception of the named type."""
    return Raises(name, list(hints or []))


def each_raised(what: list[str], name: str = "ValueError") -> Satisfies:
    """Passes when every call of a probe raised ``name``: the probe returns, in the order of
    ``what`` (each call described), the name of what each raised (None: nothing).

    Example:
        >>> check = each_raised(["top_k=0", "top_p=2"])
        >>> check(["ValueError", None]).message
        'top_p=2 must raise ValueError, but nothing was raised'
    """

    def test(got):
        for description, raised in zip(what, got):
            if raised != name:
                found = "nothing was raised" if raised is None else raised + " was raised"
                return f"{description} must raise {name}, but {found}"
        return None

    return satisfies(test)


def mode_problem(runs: list, what: str, called: str = "the model") -> str | None:
    """What is wrong with how ``what`` ran a model it must only evaluate (in eval mode, without
    gradients, the caller's mode put back after), or None. ``runs`` is what the probe returns:
    for each call of ``what`` (on a model the caller left in training mode, then on one left in
    eval mode) ``[before, calls, after]``: ``mode_of`` the model before, ``[mode_of, grad_mode]``
    at each call of the model inside, ``mode_of`` it after.

    Example:
        >>> runs = [["train", [["eval", "no_grad"]], "train"], ["eval", [["eval", "no_grad"]], "train"]]
        >>> mode_problem(runs, "generate").split(":")[0]
        'the model was in eval mode before generate and must be left in it'
        >>> mode_problem([["train", [["eval", "grad"]], "train"]], "estimate_loss")
        'estimate_loss must run the model without gradients (torch.no_grad())'
    """
    for before, calls, after in runs:
        if not calls:
            return f"{what} never called {called}"
        if any(mode != "eval" for mode, _ in calls):
            return f"{what} must run the model in eval mode (model.eval())"
        if any(grad != "no_grad" for _, grad in calls):
            return f"{what} must run the model without gradients (torch.no_grad())"
        if after != before:
            slip = "model.train() always leaves it in training mode; " if before == "eval" else ""
            return (
                f"the model was in {'training' if before == 'train' else 'eval'} mode before {what} and must be left "
                f"in it: {slip}note model.training before model.eval() and give that back to model.train() at the end"
            )
    return None
