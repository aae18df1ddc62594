"""A safe, plain-data encoding of test outputs (JSON with tagged tensors).

The child process that runs student code sends its raw outputs to the judge in this
form, and the build saves the reference's outputs (the fixtures) in it. Decoding never
executes anything (no pickle): the worst a hostile child can send is wrong data.

Plain JSON values pass through; the rest are tagged objects:
``{"$tuple": [...]}``, ``{"$dict": [[key, value], ...]}`` (any keys),
``{"$float": "nan"|"inf"|"-inf"}``, ``{"$tensor": {dtype, shape, data}}`` (raw bytes,
base64), ``{"$object": type name}`` for anything else (never equal to an answer).
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
    if isinstance(value, torch.Tensor):
        tensor = torch.Tensor.detach(value)
        if tensor.dtype not in _NAMES:
            return {"$object": f"tensor of dtype {tensor.dtype}"}
        cpu = torch.Tensor.contiguous(torch.Tensor.cpu(tensor))
        raw = cpu.view(torch.uint8) if cpu.dtype == torch.bfloat16 else cpu
        data = np.ascontiguousarray(torch.Tensor.numpy(raw.reshape(-1))).tobytes()
        return {
            "$tensor": {
                "dtype": _NAMES[cpu.dtype],
                "shape": list(cpu.shape),
                "data": base64.b64encode(data).decode("ascii"),
                "type": "Tensor" if t is torch.Tensor else f"{t.__module__}.{t.__qualname__}",
            }
        }
    if isinstance(value, np.generic):
        return encode(value.item(), _depth)
    if isinstance(value, np.ndarray):
        return {"$object": "numpy.ndarray"}
    return {"$object": f"{t.__module__}.{t.__qualname__}"}


class Foreign:
    """Stands for an output of a type the grader does not accept (never equals an answer)."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name}>"


class TensorLike(Foreign):
    """A tensor subclass or look-alike returned where a plain tensor is expected."""


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
    (tag, body), = data.items()
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
        type_name = str(body.get("type", "Tensor"))
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
    if type_name != "Tensor":
        return TensorLike(f"{type_name} (a torch.Tensor subclass)")
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
