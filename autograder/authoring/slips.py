"""Stand-ins for a reference, pasted into the variants ``gptcourse check-stage`` makes by itself.

Three kinds of stand-in wrap a graded function or class of the reference (``auto_variants``):

- a **no-op** (``_gptcourse_noop``) does nothing and returns ``None``, its first argument,
  or zeros shaped like the reference's answer (it runs the reference on copies of its
  arguments to learn the shape: nothing it was given is touched);
- a **recast** (``_gptcourse_recast``) is the reference with every tensor it returns to
  its caller in another dtype: floats in float64 (float32 where the reference gives
  float64), integers in int32 (int64 where it gives another integer dtype), as a
  student's slip would. Only what leaves the code is recast: a method's call of another
  method (``forward`` calling ``self.attend``) gets the reference's own answer;
- a **builder** (``_gptcourse_builder``) raises ``ValueError`` on every call of a function,
  and of a class's methods, while a class keeps the reference's ``__init__`` (which may call
  the class's own methods while it builds): the right parts, and nothing that works.

This module is authoring only, never shipped: the variant cell holds the reference's own
source, this module's source, then ``NAME = _gptcourse_noop(NAME, "zeros")`` (or
``_gptcourse_recast(NAME)``, ``_gptcourse_builder(NAME)``), so that it runs in the notebook
with torch alone.

Example:
    >>> import torch
    >>> double = _gptcourse_recast(lambda x: 2 * x)
    >>> double(torch.ones(2)).dtype, double(torch.ones(2, dtype=torch.long)).dtype
    (torch.float64, torch.int32)
    >>> _gptcourse_noop(lambda x: 2 * x, "zeros")(torch.ones(2))
    tensor([0., 0.])
    >>> class Scale(torch.nn.Module):
    ...     def __init__(self, width):
    ...         super().__init__()
    ...         self.weight = torch.nn.Parameter(self.ones(width))
    ...     def ones(self, width):
    ...         return torch.ones(width)
    ...     def forward(self, x):
    ...         return x * self.weight
    >>> layer = _gptcourse_builder(Scale)(3)
    >>> tuple(layer.weight.shape)
    (3,)
    >>> layer(torch.ones(3))
    Traceback (most recent call last):
    ...
    ValueError: Scale.forward raises on every call (a stand-in that only builds)
"""

import copy
import functools
import inspect

import torch

_GPTCOURSE_HOWS = ("none", "input", "zeros")
_GPTCOURSE_DEPTH = [0]  # how many recast calls are running: only the outermost one's answer is recast
_GPTCOURSE_BUILDING = [0]  # how many builders' __init__ are running: their methods work meanwhile


def _gptcourse_map(value, leaf):
    """``value`` with ``leaf`` applied to each item inside its lists, tuples, dicts and generators."""
    if isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        items = [_gptcourse_map(v, leaf) for v in value]
        if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
            return type(value)(*items)
        return type(value)(items)
    if isinstance(value, dict):
        return type(value)((k, _gptcourse_map(v, leaf)) for k, v in value.items())
    if inspect.isgenerator(value):
        return (_gptcourse_map(v, leaf) for v in value)
    return leaf(value)


def _gptcourse_zero(value):
    """Zeros shaped like one answer: a tensor's zeros, a number's 0, an empty string, a module
    whose parameters and buffers are all 0; None for anything else."""
    if isinstance(value, torch.Tensor):
        return torch.zeros_like(value.detach())
    if isinstance(value, (bool, int, float, complex, str, bytes)) or value is None:
        return type(value)() if value is not None else None
    if isinstance(value, torch.nn.Module):
        blank = copy.deepcopy(value)
        with torch.no_grad():
            for tensor in [*blank.parameters(), *blank.buffers()]:
                tensor.zero_()
        return blank
    return None


def _gptcourse_other_dtype(value):
    """A tensor in the dtype a slip would give it (floats float64, integers int32; see the
    module docstring); anything else as it is."""
    if not isinstance(value, torch.Tensor) or value.dtype == torch.bool or value.dtype.is_complex:
        return value
    if value.dtype.is_floating_point:
        return value.to(torch.float32 if value.dtype == torch.float64 else torch.float64)
    return value.to(torch.int64 if value.dtype == torch.int32 else torch.int32)


def _gptcourse_copies(args, kwargs):
    """Copies of a call's arguments for the reference to work on, or None when they cannot be copied."""
    try:
        return copy.deepcopy((args, kwargs))
    except Exception:  # an argument that cannot be copied: the shape is then not learnt
        return None


def _gptcourse_answer(ref_call, how, args, kwargs):
    """What a no-op returns for one call (``how``: "none", "input" or "zeros")."""
    if how == "none":
        return None
    if how == "input":
        return args[0] if args else next(iter(kwargs.values()), None)
    copies = _gptcourse_copies(args, kwargs)
    if copies is None:
        return None
    return _gptcourse_map(ref_call(*copies[0], **copies[1]), _gptcourse_zero)


def _gptcourse_members(ref):
    """The public methods a course class defines (its own and its course bases', not torch's):
    ``{name: (kind, function)}`` with kind "method", "static" or "class"."""
    found = {}
    for klass in reversed(ref.__mro__):
        if klass.__module__ == "builtins" or klass.__module__.split(".")[0] == "torch":
            continue
        for name, member in vars(klass).items():
            if name.startswith("_") and name not in ("__call__", "__iter__", "__len__"):
                continue
            if name == "__init__":
                continue
            if isinstance(member, staticmethod):
                found[name] = ("static", member.__func__)
            elif isinstance(member, classmethod):
                found[name] = ("class", member.__func__)
            elif inspect.isfunction(member):
                found[name] = ("method", member)
    return found


def _gptcourse_noop(ref, how):
    """A stand-in for ``ref`` (a function or class) that does nothing (see the module docstring)."""
    if how not in _GPTCOURSE_HOWS:
        raise ValueError(f"how must be one of {_GPTCOURSE_HOWS}, got {how!r}")
    if not inspect.isclass(ref):

        @functools.wraps(ref)
        def noop(*args, **kwargs):
            return _gptcourse_answer(ref, how, args, kwargs)

        return noop
    base = torch.nn.Module if issubclass(ref, torch.nn.Module) else object

    def __init__(self, *args, **kwargs):
        base.__init__(self)
        twin = None
        if how == "zeros":  # the reference's twin answers for the shapes (and raises what it raises)
            copies = _gptcourse_copies(args, kwargs)
            twin = ref(*copies[0], **copies[1]) if copies is not None else None
        object.__setattr__(self, "_gptcourse_twin", twin)

    def method(name, kind):
        def call(self, *args, **kwargs):
            twin = object.__getattribute__(self, "_gptcourse_twin")
            return _gptcourse_answer(getattr(twin, name, lambda *a, **k: None), how, args, kwargs)

        def static(*args, **kwargs):
            return _gptcourse_answer(getattr(ref, name), how, args, kwargs)

        if kind == "method":
            return call
        return staticmethod(static) if kind == "static" else classmethod(lambda cls, *a, **k: static(*a, **k))

    members = {name: method(name, kind) for name, (kind, _) in _gptcourse_members(ref).items()}
    return type(ref.__name__, (base,), {"__init__": __init__, "__module__": ref.__module__, **members})


def _gptcourse_outermost(function):
    """``function``, its answer recast when no other recast call is running (its caller is outside)."""

    @functools.wraps(function)
    def call(*args, **kwargs):
        _GPTCOURSE_DEPTH[0] += 1
        try:
            answer = function(*args, **kwargs)
        finally:
            _GPTCOURSE_DEPTH[0] -= 1
        return _gptcourse_map(answer, _gptcourse_other_dtype) if _GPTCOURSE_DEPTH[0] == 0 else answer

    return call


def _gptcourse_recast(ref):
    """``ref`` (a function or class) with every tensor it returns to its caller in another dtype."""
    if not inspect.isclass(ref):
        return _gptcourse_outermost(ref)

    def wrap(function, kind):
        call = _gptcourse_outermost(function)
        return staticmethod(call) if kind == "static" else classmethod(call) if kind == "class" else call

    members = {name: wrap(function, kind) for name, (kind, function) in _gptcourse_members(ref).items()}
    return type(ref.__name__, (ref,), {"__module__": ref.__module__, **members})


def _gptcourse_builder(ref):
    """A stand-in for ``ref`` (a function or class) that only builds (see the module docstring)."""
    if not inspect.isclass(ref):

        @functools.wraps(ref)
        def raising(*args, **kwargs):
            raise ValueError(f"{ref.__name__} raises on every call (a stand-in that only builds)")

        return raising

    def __init__(self, *args, **kwargs):
        _GPTCOURSE_BUILDING[0] += 1
        try:
            ref.__init__(self, *args, **kwargs)
        finally:
            _GPTCOURSE_BUILDING[0] -= 1

    def wrap(function, kind, name):
        def call(*args, **kwargs):
            if _GPTCOURSE_BUILDING[0]:
                return function(*args, **kwargs)
            raise ValueError(f"{ref.__name__}.{name} raises on every call (a stand-in that only builds)")

        return staticmethod(call) if kind == "static" else classmethod(call) if kind == "class" else call

    members = {name: wrap(function, kind, name) for name, (kind, function) in _gptcourse_members(ref).items()}
    return type(ref.__name__, (ref,), {"__init__": __init__, "__module__": ref.__module__, **members})
