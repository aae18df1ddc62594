"""The codec carries outputs from the child as data, never as code, and rejects malformed input."""

import math

import pytest
import torch

from autograder.engine import codec


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

    values = [torch.zeros(2).as_subclass(Sneaky), torch.zeros(2).as_subclass(Tensor), object(), Number(3), torch.nn.Parameter(torch.zeros(2))]
    back = codec.loads(codec.dumps(values))
    assert all(isinstance(b, codec.TensorLike) for b in (back[0], back[1], back[4]))
    assert isinstance(back[2], codec.Foreign) and isinstance(back[3], codec.Foreign)
    with pytest.raises(TypeError):  # a look-alike cannot pass for a tensor: encoding it fails (the test fails)
        codec.encode(Spoof())


@pytest.mark.parametrize("bad", ['{"$tensor": {"dtype": "float32", "shape": [5], "data": "AAAA"}}', '{"$pickle": "x"}', '{"a": 1, "b": 2}', "[", '{"$dict": [[[1], 2]]}'])
def test_malformed_data_is_rejected(bad):
    with pytest.raises(codec.DecodeError):
        codec.loads(bad)
