"""Data-parallel training with PyTorch's own engine: ``torchrun`` + DistributedDataParallel.

Launch any number of processes with ``torchrun``; each one runs the same training
script, and this module reads the variables torchrun sets (``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``)::

    torchrun --standalone --nproc_per_node=2 .venv/bin/gptcourse train --preset cpu
    torchrun --standalone --nproc_per_node=8 -m training train --preset gpu   # 8 GPUs

- Backend: ``nccl`` on CUDA (process ``LOCAL_RANK`` drives GPU ``cuda:LOCAL_RANK``),
  ``gloo`` on CPU. Apple MPS has no distributed backend and is refused.
- The *global* batch (``--batch-size`` / the preset's) is split over the processes:
  every process draws the same global batch from the same seeded generator and keeps
  rows ``rank*b .. (rank+1)*b - 1`` with ``b = batch_size // world_size``. DDP averages the
  gradients over the processes, which, the local batches being equal in size, is the
  gradient of the mean loss over the global batch: N processes follow the trajectory of
  one process with the same global batch (up to floating-point summation order).
- Only rank 0 prints, saves checkpoints and plots; evaluation batches are shared out
  over the ranks and their losses summed with ``all_reduce``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


@dataclass(frozen=True)
class DistInfo:
    """Where this process stands in a (possibly one-process) run."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def from_env() -> DistInfo:
    """The process's place, from torchrun's environment (one process when it is unset)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistInfo()
    return DistInfo(
        rank=int(os.environ["RANK"]),
        world_size=world,
        local_rank=int(os.environ.get("LOCAL_RANK", "0")),
        local_world_size=int(os.environ.get("LOCAL_WORLD_SIZE", str(world))),
    )


def setup(info: DistInfo, device: torch.device) -> torch.device:
    """Join the process group (when ``info.enabled``); returns this process's device.

    ``device`` is the device kind the user asked for; on CUDA each process gets
    ``cuda:LOCAL_RANK``.
    """
    if not info.enabled:
        return device
    if device.type == "mps":
        raise ValueError("distributed training is not supported on Apple MPS; use --device cpu")
    if device.type == "cuda":
        device = torch.device("cuda", info.local_rank)
        torch.cuda.set_device(device)
        backend = "nccl"
    else:
        backend = "gloo"
    if not dist.is_initialized():
        dist.init_process_group(backend=backend, rank=info.rank, world_size=info.world_size)
    return device


def cleanup(info: DistInfo, finished: bool = True) -> None:
    """Leave the process group (when one was joined).

    After a run that ``finished`` on this rank, the ranks first meet at a barrier: a rank
    that tore gloo down while rank 0 was still saving its checkpoint could abort at exit
    ("terminate called without an active exception"). After an error there is no
    barrier (the other ranks may never come; torchrun stops them).
    """
    if info.enabled and dist.is_initialized():
        if finished:
            dist.barrier()
        dist.destroy_process_group()


def wrap(model: torch.nn.Module, info: DistInfo, device: torch.device) -> torch.nn.Module:
    """``DistributedDataParallel(model)`` when distributed, else ``model`` itself."""
    if not info.enabled:
        return model
    if device.type == "cuda":
        return DistributedDataParallel(model, device_ids=[device.index])
    return DistributedDataParallel(model)


def local_rows(batch_size: int, info: DistInfo) -> slice:
    """The rows of the global batch that this process trains on."""
    if batch_size % info.world_size != 0:
        raise ValueError(
            f"the global batch size {batch_size} must be divisible by the number of processes {info.world_size}"
        )
    per = batch_size // info.world_size
    return slice(info.rank * per, (info.rank + 1) * per)


def all_sum(t: torch.Tensor, info: DistInfo) -> torch.Tensor:
    """Sum ``t`` over all processes (in place; returns it)."""
    if info.enabled:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t


def all_mean(t: torch.Tensor, info: DistInfo) -> torch.Tensor:
    """Average ``t`` over all processes (in place; returns it)."""
    if info.enabled:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        t /= info.world_size
    return t
