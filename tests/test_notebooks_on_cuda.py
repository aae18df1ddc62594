"""Every notebook on a CUDA machine, as a CPU can show it: the reference notebooks of all
stages run top to bottom (quick sizes, as plain Python) on a pretend CUDA device
(``tests/fakecuda.py``), and nothing CUDA would refuse happens: no CPU tensor meets a CUDA
one, every generator drives draws on its own device, no CUDA tensor goes to numpy, every
``torch.load`` names a ``map_location``.

The course's contract on generators (stage 08, "Generators and devices"): a generator is
made where its draws happen. Batches are drawn on the CPU, where the data stays; tokens
are drawn where the logits are, on the model's device. So a ``sample_next`` written from
its docstring, ``torch.multinomial(probs, 1, generator=generator)``, works on CUDA with the
notebook's cells, and the reference solution is exactly that.

Only stages 07 and 08 ask for a device (``get_device``); the others keep their small models
on the CPU and must not break where CUDA is available. A control run shows that the pretend
device does see the fault of issue 24 (a CPU generator handed to generation on CUDA).
"""

import pytest
import torch
from fakecuda import CUDA, FakeGenerator, OnCuda, fake_cuda
from support import SHAKESPEARE

from autograder.authoring.notebook_run import reference_code_cells, run_cell, source_of
from autograder.course import all_stages, get_stage

STAGES = [stage.id for stage in all_stages()]


@pytest.fixture(autouse=True)
def quick_and_offline(monkeypatch, tmp_path):
    """Quick sizes, one thread, the local Tiny Shakespeare, work files in a temporary folder."""
    if not SHAKESPEARE.exists():
        pytest.skip("no local copy of Tiny Shakespeare (tests/support.py says where it is looked for)")
    monkeypatch.setenv("GPTCOURSE_QUICK", "1")
    monkeypatch.setenv("GPTCOURSE_THREADS", "1")
    monkeypatch.setenv("GPTCOURSE_SHAKESPEARE", str(SHAKESPEARE))
    monkeypatch.chdir(tmp_path)
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def run_cells(stage_id: str, replace: dict[str, str] | None = None) -> tuple[list[str], dict]:
    """Run the stage's reference notebook (its code cells in order, as plain Python) on the
    pretend device; returns the problems seen and, as ``namespace["__devices__"]``, where its
    ``get_device()`` and the model ``gpt`` (stage 07) or ``model`` (stage 08) were at the end. A cell that
    raises, or a check cell whose public tests do not pass, fails the test; ``replace`` swaps a
    text in the cells' sources first (the cells are read and run as check-stage's rule
    "reference notebook runs" reads and runs them: ``autograder/authoring/notebook_run.py``)."""
    namespace: dict = {"__name__": "__main__"}
    with fake_cuda() as device:
        for index, cell in enumerate(reference_code_cells(get_stage(stage_id))):
            source = source_of(cell)
            for old, new in (replace or {}).items():
                source = source.replace(old, new)
            ran = run_cell(stage_id, index, cell, source, namespace)
            assert not ran.error, f"{ran.problem}\n{ran.error}"
        if "get_device" in namespace:
            named = {"07_gpt": "gpt", "08_generation": "model"}.get(stage_id)
            models = {named: next(namespace[named].parameters()).device} if named in namespace else {}
            namespace["__devices__"] = {"get_device": namespace["get_device"](), **models}
    return device.problems, namespace


def test_the_pretend_device_sees_what_cuda_refuses():
    with fake_cuda() as device:
        x = torch.zeros(4, 3, device="cuda")
        model = torch.nn.Linear(3, 2).to(torch.device("cuda"))
        assert isinstance(x, OnCuda) and x.device == CUDA and model.weight.device == CUDA
        assert isinstance(model.weight, torch.nn.Parameter)
        probs = torch.softmax(model(x), dim=-1)
        assert probs.device == CUDA and probs.cpu().device.type == "cpu"
        assert not device.problems
        torch.arange(4, device=x.device) + x[:, 0]  # made where the data is: fine
        assert not device.problems
        model(torch.zeros(4, 3))  # a CPU batch into a CUDA model
        torch.multinomial(probs, 1, generator=torch.Generator().manual_seed(0))
        torch.multinomial(probs, 1, generator=torch.Generator(device="cuda").manual_seed(0))  # fine
        probs.detach().numpy()
    assert [p.split(":")[0] for p in device.problems] == [
        "linear",
        "multinomial",
        "numpy() of a CUDA tensor (move it with .cpu() first)",
    ]
    assert "a cpu generator drives a draw on cuda" in device.problems[1]
    assert torch.Generator is not FakeGenerator  # everything put back


def test_training_on_the_pretend_device_really_trains():
    with fake_cuda() as device:
        model = torch.nn.Sequential(torch.nn.Embedding(5, 8), torch.nn.Linear(8, 5)).to("cuda")
        optimizer = torch.optim.AdamW(model.parameters(), lr=0.05)
        x = torch.arange(5).repeat(8).to("cuda")
        losses = []
        for _ in range(30):
            loss = torch.nn.functional.cross_entropy(model(x[:-1]), x[1:])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    assert not device.problems and losses[-1] < losses[0] - 1.0


@pytest.mark.slow
@pytest.mark.parametrize("stage_id", STAGES)
def test_the_reference_notebook_runs_on_cuda(stage_id):
    problems, namespace = run_cells(stage_id)
    assert not problems, "\n".join(problems)
    if stage_id == "07_gpt":  # the stages that ask for a device: their models really were on it
        assert namespace["__devices__"] == {"get_device": CUDA, "gpt": CUDA}
    if stage_id == "08_generation":
        assert namespace["__devices__"] == {"get_device": CUDA, "model": CUDA}


@pytest.mark.slow
def test_a_cpu_generator_for_generation_on_cuda_is_seen():
    """The control: issue 24's fault (the generation demo, then 07's and now 08's, with a CPU
    generator and the model on CUDA, as the notebook had it) is what the pretend device reports."""
    where = "generator=torch.Generator(device=where).manual_seed(1)"
    problems, _ = run_cells("08_generation", {where: "generator=torch.Generator().manual_seed(1)"})
    assert problems == ["multinomial: a cpu generator drives a draw on cuda"], problems
