"""Where a student's code puts the tensors it makes: a spy for the device tests.

Grading runs on the CPU only, so a tensor made on the default device instead of the
input's cannot be seen from the output. ``Placement`` watches the torch calls made while
it is active: every call of a tensor factory (``torch.arange``, ``zeros``, ``ones``,
``full``, ``empty``, ``tensor``, ``as_tensor``, ``linspace``, ``eye``) that is given no
tensor, with the device it was given, and every move (``.to``, ``.type_as``, ``.cuda``).
The probe returns the calls as plain data; the check (in the grading process) asks
``unplaced`` whether a tensor was made without a device and never moved::

    def _(ns):                                         # the probe
        with Placement() as spy:
            mask = ns.causal_mask(3, device="cpu")
        return [list(call) for call in spy.calls], mask

    unplaced([["made", "ones", "None"]])               # in the check: "ones"
    unplaced([["made", "ones", "cpu"]])                # None

Part of the kit: standard library and torch only, pasted verbatim into every notebook.
"""

from torch.overrides import TorchFunctionMode

FACTORIES = frozenset(("arange", "zeros", "ones", "full", "empty", "tensor", "as_tensor", "linspace", "eye"))
MOVES = frozenset(("to", "type_as", "cuda"))


class Placement(TorchFunctionMode):
    """Notes every tensor-making torch call (with the device it was given) and every move, in
    ``calls``: ``("made", name, str(device))`` and ``("moved", name, "")``."""

    def __init__(self):
        TorchFunctionMode.__init__(self)
        self.calls = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        tensors = [a for a in args if getattr(a, "device", None) is not None]  # the tensors among the arguments
        if name in FACTORIES and not tensors:
            self.calls.append(("made", name, str(kwargs.get("device"))))
        elif name in MOVES:
            self.calls.append(("moved", name, ""))
        return func(*args, **kwargs)


def unplaced(calls) -> str | None:
    """The first factory in ``calls`` (a ``Placement``'s, as a probe returned them) that was given
    no device, when nothing was moved afterwards; else None.

    >>> unplaced([["made", "arange", "None"]]), unplaced([["made", "arange", "None"], ["moved", "to", ""]])
    ('arange', None)
    """
    made = [name for kind, name, device in calls if kind == "made" and device == "None"]
    return made[0] if made and not any(kind == "moved" for kind, _, _ in calls) else None
