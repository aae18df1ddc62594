"""A safe, plain-data encoding of test outputs (JSON with tagged tensors).

The child process that runs student code sends its raw outputs to the judge in this
form, and the build saves the reference's outputs (the fixtures) in it. Decoding never
executes anything (no pickle): the worst a hostile child can send is wrong data.

Plain JSON values pass through; the rest are tagged objects:
``{"$tuple": [...]}``, ``{"$dict": [[key, value], ...]}`` (any keys),
``{"$float": "nan"|"inf"|"-inf"}``, ``{"$tensor": {dtype, shape, data, exact, type}}`` (raw
bytes, base64), ``{"$object": type name}`` for anything else (never equal to an answer).

A tensor is read from its storage through the base class's own functions, taken when
this module is imported (before any student code runs) and called with torch-function
overrides switched off, so that neither a subclass's methods nor a patched
``torch.Tensor`` method is ever asked what the tensor holds. ``exact`` records whether
the object's type was ``torch.Tensor`` itself: the parent decodes any other tensor as a
``TensorLike``, which no check accepts (a subclass may redefine ``==``, ``allclose`` and
every other method the parent could call).
"""

import base64
import json
import math
from typing import Any

import numpy as np
import torch

_DTYPES = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
    "complex64": torch.complex64,
}
_NAMES = {v: k for k, v in _DTYPES.items()}
MAX_DEPTH = 64

# the base class's functions, taken now: later patches of torch.Tensor do not reach them
_BASE = torch._C.TensorBase
_AS_SUBCLASS, _DETACH, _CPU, _CONTIGUOUS = _BASE.as_subclass, _BASE.detach, _BASE.cpu, _BASE.contiguous
_VIEW, _RESHAPE, _NUMPY, _DTYPE, _SHAPE = (
    _BASE.view,
    _BASE.reshape,
    _BASE.numpy,
    _BASE.dtype.__get__,
    _BASE.shape.__get__,
)
_NO_OVERRIDES = torch._C.DisableTorchFunctionSubclass
_TENSOR = torch.Tensor


class DecodeError(ValueError):
    """The data is not a valid encoding."""


def encode(value: Any, _depth: int = 0) -> Any:
    """Turn a test output into JSON-ready data."""
    if _depth > MAX_DEPTH:
        return {"$object": "nesting too deep"}
    t = type(value)
    if value is None or t is bool or t is str:
        return value
    if t is int:
        return value
    if t is float:
        if math.isnan(value) or math.isinf(value):
            return {"$float": repr(value)}
        return value
    if t is tuple:
        return {"$tuple": [encode(v, _depth + 1) for v in value]}
    if t is list:
        return [encode(v, _depth + 1) for v in value]
    if t is dict:
        return {"$dict": [[encode(k, _depth + 1), encode(v, _depth + 1)] for k, v in value.items()]}
    if issubclass(t, _TENSOR):  # type(), not isinstance(): a __class__ property cannot pass for a tensor
        return _encode_tensor(value, t)
    if isinstance(value, np.generic):
        return encode(value.item(), _depth)
    if isinstance(value, np.ndarray):
        return {"$object": "numpy.ndarray"}
    return {"$object": f"{t.__module__}.{t.__qualname__}"}


def _encode_tensor(value: torch.Tensor, t: type) -> dict:
    """A tensor's dtype, shape and bytes, read as a plain tensor from its own storage."""
    with _NO_OVERRIDES():
        plain = _DETACH(_AS_SUBCLASS(value, _TENSOR))  # a plain view of the same storage
        dtype = _DTYPE(plain)
        if dtype not in _NAMES:
            return {"$object": f"tensor of dtype {dtype}"}
        cpu = _CONTIGUOUS(_CPU(plain))
        raw = _VIEW(cpu, torch.uint8) if dtype == torch.bfloat16 else cpu
        data = _NUMPY(_RESHAPE(raw, (-1,))).tobytes()  # contiguous, so no copy is needed
        shape = [int(s) for s in _SHAPE(cpu)]
    exact = t is _TENSOR
    return {
        "$tensor": {
            "dtype": _NAMES[dtype],
            "shape": shape,
            "data": base64.b64encode(data).decode("ascii"),
            "exact": exact,
            "type": "torch.Tensor" if exact else f"{t.__module__}.{t.__qualname__}"[:200],
        }
    }


class Foreign:
    """Stands for an output of a type the grader does not accept (never equals an answer;
    the judge fails a test whose output holds one, see ``kit.runtime.refused_in``)."""

    refused_output = True

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name}>"


class TensorLike(Foreign):
    """A tensor subclass returned where a plain tensor is expected (``checks.tensor_problem`` says so)."""

    tensor_subclass = True

    def __repr__(self) -> str:
        return f"<{self.type_name}, a torch.Tensor subclass>"


def decode(data: Any, _depth: int = 0) -> Any:
    """Inverse of ``encode``; raises DecodeError on anything malformed."""
    if _depth > MAX_DEPTH + 1:
        raise DecodeError("nesting too deep")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode(v, _depth + 1) for v in data]
    if not isinstance(data, dict) or len(data) != 1:
        raise DecodeError("malformed value")
    ((tag, body),) = data.items()
    if tag == "$tuple" and isinstance(body, list):
        return tuple(decode(v, _depth + 1) for v in body)
    if tag == "$dict" and isinstance(body, list):
        out = {}
        for pair in body:
            if not isinstance(pair, list) or len(pair) != 2:
                raise DecodeError("malformed dict entry")
            key = decode(pair[0], _depth + 1)
            try:
                hash(key)
            except TypeError:
                raise DecodeError("unhashable dict key") from None
            out[key] = decode(pair[1], _depth + 1)
        return out
    if tag == "$float" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "$object" and isinstance(body, str):
        return Foreign(body[:200])
    if tag == "$tensor" and isinstance(body, dict):
        return _decode_tensor(body)
    raise DecodeError(f"unknown tag {str(tag)[:40]!r}")


def _decode_tensor(body: dict) -> Any:
    try:
        dtype = _DTYPES[body["dtype"]]
        shape = [int(s) for s in body["shape"]]
        raw = base64.b64decode(body["data"], validate=True)
        exact = body["exact"] is True
        type_name = str(body.get("type", ""))[:200]
    except (KeyError, TypeError, ValueError) as exc:
        raise DecodeError(f"malformed tensor: {exc}") from None
    if any(s < 0 for s in shape):
        raise DecodeError("negative tensor dimension")
    numel = math.prod(shape)
    storage = torch.uint8 if dtype == torch.bfloat16 else dtype
    itemsize = torch.empty((), dtype=dtype).element_size()
    if len(raw) != numel * itemsize:
        raise DecodeError("tensor data does not match its shape")
    flat = torch.frombuffer(bytearray(raw), dtype=storage) if raw else torch.empty(0, dtype=storage)
    if dtype == torch.bfloat16:
        flat = flat.view(torch.bfloat16)
    tensor = flat.reshape(shape).clone()
    if not exact:
        return TensorLike(type_name)
    return tensor


def dumps(value: Any) -> str:
    """Encode and serialise to a compact JSON string."""
    return json.dumps(encode(value), separators=(",", ":"), allow_nan=False)


def loads(text: str | bytes) -> Any:
    """Parse and decode a JSON string made by ``dumps``."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise DecodeError(f"not valid JSON: {exc}") from None
    return decode(data)
