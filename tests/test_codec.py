"""The codec carries outputs from the child as data, never as code, and rejects malformed input."""

import contextlib
import math

import pytest
import torch

from autograder.engine import codec
from autograder.kit.checks import tensor_problem


def test_round_trip_of_plain_values_and_tensors():
    value = {
        ("a", "b"): [1, 2.5, None, True, "x"],
        3: (torch.arange(6).reshape(2, 3), torch.randn(2, 2, dtype=torch.float64), torch.tensor([True, False])),
        "bf": torch.ones(3, dtype=torch.bfloat16),
    }
    back = codec.loads(codec.dumps(value))
    assert back[("a", "b")] == [1, 2.5, None, True, "x"]
    assert torch.equal(back[3][0], value[3][0]) and back[3][1].dtype == torch.float64
    assert torch.equal(back["bf"], value["bf"])
    assert math.isnan(codec.loads(codec.dumps(float("nan"))))


def test_subclasses_and_foreign_objects_are_marked():
    class Sneaky(torch.Tensor):
        pass

    class Tensor(torch.Tensor):  # named like the real one
        pass

    class Spoof:  # claims to be a tensor to isinstance()
        __class__ = torch.Tensor

    class Number(int):
        pass

    values = [
        torch.zeros(2).as_subclass(Sneaky),
        torch.zeros(2).as_subclass(Tensor),
        object(),
        Number(3),
        torch.nn.Parameter(torch.zeros(2)),
        Spoof(),
    ]
    back = codec.loads(codec.dumps(values))
    assert all(isinstance(b, codec.TensorLike) for b in (back[0], back[1], back[4]))
    assert all(
        isinstance(b, codec.Foreign) and not isinstance(b, codec.TensorLike) for b in (back[2], back[3], back[5])
    )
    assert "a subclass" in tensor_problem(back[0]) and "Sneaky" in tensor_problem(back[0])
    assert "a subclass" in tensor_problem(back[1]) and "Parameter" in tensor_problem(back[4])
    assert tensor_problem(back[5]) == "expected a torch.Tensor, got Foreign"


class _Liar(torch.Tensor):
    """Every method and torch function that could report its values lies."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return torch.full((3,), 7.0)

    def reshape(self, *args, **kwargs):
        return torch.full((3,), 7.0)

    def numpy(self, *args, **kwargs):
        raise RuntimeError("no")


def test_a_tensor_is_read_from_its_storage_never_through_its_own_methods():
    value = torch.tensor([1.0, 2.0, 3.0])
    liar = value.clone().as_subclass(_Liar)
    data = codec.encode(liar)["$tensor"]
    assert data["exact"] is False and data["type"].endswith("_Liar")
    assert torch.equal(codec._decode_tensor(dict(data, exact=True)), value)  # the real values, as stored


def test_patched_tensor_methods_do_not_change_what_is_encoded(monkeypatch):
    value = torch.arange(6, dtype=torch.float32).reshape(2, 3).t()  # not contiguous
    for name in ("detach", "cpu", "contiguous", "reshape", "view", "numpy", "as_subclass"):
        monkeypatch.setattr(torch.Tensor, name, lambda self, *a, **k: torch.zeros(1), raising=True)
    monkeypatch.setattr(torch.Tensor, "__eq__", lambda self, other: True)
    sent = codec.dumps(value)  # in the child, after the student's patches
    monkeypatch.undo()
    back = codec.loads(sent)  # in the parent
    assert type(back) is torch.Tensor and torch.equal(back, torch.arange(6, dtype=torch.float32).reshape(2, 3).t())


def test_a_tensor_without_the_exact_flag_is_refused():
    data = codec.encode(torch.zeros(2))
    assert data["$tensor"]["exact"] is True
    for exact in (None, 1, "true"):
        body = dict(data["$tensor"], exact=exact)
        if exact is None:
            del body["exact"]
        with pytest.raises(codec.DecodeError) if exact is None else contextlib.nullcontext():
            back = codec.decode({"$tensor": body})
            assert isinstance(back, codec.TensorLike)


@pytest.mark.parametrize(
    "bad",
    [
        '{"$tensor": {"dtype": "float32", "shape": [5], "data": "AAAA"}}',
        '{"$pickle": "x"}',
        '{"a": 1, "b": 2}',
        "[",
        '{"$dict": [[[1], 2]]}',
    ],
)
def test_malformed_data_is_rejected(bad):
    with pytest.raises(codec.DecodeError):
        codec.loads(bad)
