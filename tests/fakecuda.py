"""A pretend CUDA device on a CPU-only machine, to find the code that would fail on a real one.

CUDA refuses what a CPU accepts: an operation that mixes a CUDA tensor with a CPU tensor
(other than a 0-d one, or indices), a CPU generator driving a draw on CUDA ("Expected a
'cuda' device type for generator"), ``.numpy()`` of a CUDA tensor (matplotlib does it on
every tensor it plots). :class:`FakeCuda` plays the device honestly enough to see those:

- ``torch.cuda.is_available()`` says yes, so the code under test takes its CUDA path;
- a tensor made ``device="cuda"``, moved with ``.to("cuda")`` / ``.cuda()`` / ``.to(t)`` of
  such a tensor, or computed from one, is an :class:`OnCuda` tensor: a CPU tensor (every
  operation really runs, on the CPU) that reports ``device == cuda``, so that code
  placing new tensors ``device=x.device`` follows it there; ``.cpu()`` brings it back;
- modules moved with ``.to(device)`` get :class:`OnCuda` parameters (PyTorch's
  "overwrite parameters on conversion" mode, on while the fake device is active);
- ``torch.Generator(device=...)`` makes a CPU generator that reports the device asked for;
- every operation is checked as CUDA would check it, and what CUDA would refuse is
  recorded in :attr:`FakeCuda.problems` (the run goes on, so one run lists them all);
- ``torch.load`` without ``map_location`` is recorded too: a checkpoint written on a GPU
  then fails to load on a machine without one.

What it cannot see: a kernel CUDA lacks for a dtype, memory, speed, nondeterminism.
"""

from __future__ import annotations

import contextlib

import torch
from torch.overrides import TorchFunctionMode

CUDA = torch.device("cuda")
CPU = torch.device("cpu")
_GETTERS = {torch._C.TensorBase.__dict__[name]: name for name in ("device", "is_cuda", "is_cpu")}
# operations CUDA accepts with a CPU tensor beside a CUDA one (indices, copies), or that compute nothing
_MIXED_OK = {"__getitem__", "__setitem__", "index_put_", "copy_", "_has_compatible_shallow_copy_type", "__set__"}
_TO_HOST = {"numpy", "__array__"}


def _is_cuda(device) -> bool:
    if isinstance(device, torch.device):
        return device.type == "cuda"
    return isinstance(device, str) and device.startswith("cuda")


class OnCuda(torch.Tensor):
    """A CPU tensor that plays a CUDA one (its device and its operations are the mode's business)."""


class FakeGenerator(torch.Generator):
    """A CPU generator that reports the device it was asked to live on."""

    def __new__(cls, device="cpu"):
        generator = super().__new__(cls, device="cpu")
        generator.asked = CUDA if _is_cuda(device) else CPU
        return generator

    @property
    def device(self) -> torch.device:
        return self.asked


def _tensors(args, kwargs) -> list[torch.Tensor]:
    found = []

    def walk(x):
        if isinstance(x, torch.Tensor):
            found.append(x)
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y)
        elif isinstance(x, dict):
            for y in x.values():
                walk(y)

    walk(args)
    walk(kwargs)
    return found


class FakeCuda(TorchFunctionMode):
    """The pretend device; use :func:`fake_cuda` to switch it on around a block."""

    def __init__(self) -> None:
        super().__init__()
        self.problems: list[str] = []
        self.loads_without_map_location = 0

    def note(self, problem: str) -> None:
        if problem not in self.problems:
            self.problems.append(problem)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        getter = _GETTERS.get(getattr(func, "__self__", None))
        if getter is not None:  # t.device, t.is_cuda, t.is_cpu
            on = isinstance(args[0], OnCuda)
            return {"device": CUDA if on else CPU, "is_cuda": on, "is_cpu": not on}[getter]
        name = getattr(func, "__name__", "")
        tensors = _tensors(args, kwargs)
        cuda_in = any(isinstance(t, OnCuda) for t in tensors)
        target = None  # where the call itself puts its result (True: the pretend CUDA)
        if name == "to" and args and isinstance(args[0], torch.Tensor):
            args, kwargs, target = self._to_arguments(args, kwargs)
        elif name == "cuda":
            func, args, kwargs, target = torch.Tensor.view_as, (args[0], args[0]), {}, True
        elif name == "cpu":
            target = False
        elif kwargs.get("device") is not None:
            target = _is_cuda(kwargs["device"])
            kwargs["device"] = "cpu"
        elif cuda_in and name in _TO_HOST:
            self.note(f"{name}() of a CUDA tensor (move it with .cpu() first)")
        elif cuda_in and name not in _MIXED_OK:
            if any(not isinstance(t, OnCuda) and t.dim() > 0 for t in tensors):
                self.note(f"{name}: a CUDA tensor and a CPU tensor in one operation")
        on_cuda = cuda_in if target is None else target
        generator = kwargs.get("generator")
        if isinstance(generator, torch._C.Generator) and generator.device.type != ("cuda" if on_cuda else "cpu"):
            self.note(f"{name}: a {generator.device.type} generator drives a draw on {'cuda' if on_cuda else 'cpu'}")
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*args, **kwargs)
            if target is not None and out is args[0]:  # .to() of a tensor already in place: an alias to relabel
                out = out.view_as(out)
        return self._label(out, on_cuda)

    @staticmethod
    def _to_arguments(args, kwargs):
        """``t.to(...)``'s arguments with every device made the CPU, and where it was asked to go."""
        target, rest = None, []
        if kwargs.get("device") is not None:
            target, kwargs["device"] = _is_cuda(kwargs["device"]), "cpu"
        for a in args[1:]:
            if isinstance(a, (str, torch.device)):
                target, a = _is_cuda(a), "cpu"
            elif isinstance(a, torch.Tensor):  # t.to(other): other's device and dtype
                target, a = isinstance(a, OnCuda), a.dtype
            rest.append(a)
        return (args[0], *rest), kwargs, target

    def _label(self, out, on_cuda: bool):
        if isinstance(out, torch.Tensor):
            wanted = OnCuda if on_cuda else torch.Tensor
            return out if type(out) is wanted or isinstance(out, torch.nn.Parameter) else out.as_subclass(wanted)
        if isinstance(out, tuple):
            items = [self._label(o, on_cuda) for o in out]
            if type(out) is tuple:
                return tuple(items)
            return type(out)(*items) if hasattr(out, "_fields") else type(out)(items)  # named, or torch.return_types
        if isinstance(out, list):
            return [self._label(o, on_cuda) for o in out]
        return out


def _plain(obj):
    """``obj`` with every pretend-CUDA tensor turned into a plain one (what torch.save writes)."""
    if isinstance(obj, OnCuda):
        return obj.as_subclass(torch.Tensor)
    if isinstance(obj, dict):
        return type(obj)((k, _plain(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(_plain(v) for v in obj)
    return obj


@contextlib.contextmanager
def fake_cuda():
    """Switch the pretend device on for the block; yields the :class:`FakeCuda` that records problems."""
    mode = FakeCuda()
    saved = (torch.cuda.is_available, torch.Generator, torch.save, torch.load)
    overwrite = torch.__future__.get_overwrite_module_params_on_conversion()
    real_save, real_load = torch.save, torch.load

    def save(obj, *args, **kwargs):
        with torch._C.DisableTorchFunction():
            return real_save(_plain(obj), *args, **kwargs)

    def load(*args, **kwargs):
        if kwargs.get("map_location") is None and len(args) < 2:
            mode.loads_without_map_location += 1
            mode.note("torch.load without map_location (a checkpoint written on a GPU fails on a machine without one)")
        return real_load(*args, **kwargs)

    torch.cuda.is_available = lambda: True
    torch.Generator, torch.save, torch.load = FakeGenerator, save, load
    torch.__future__.set_overwrite_module_params_on_conversion(True)
    try:
        with mode:
            yield mode
    finally:
        torch.cuda.is_available, torch.Generator, torch.save, torch.load = saved
        torch.__future__.set_overwrite_module_params_on_conversion(overwrite)
