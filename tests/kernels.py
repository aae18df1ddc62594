"""Starting Jupyter kernels in tests that run side by side, without a lost port race failing a test.

jupyter_client picks a kernel's five TCP ports by binding port 0 and letting the ports go; the
kernel binds them a moment later, and in between another process on the machine may take one
(papermill#511, nbconvert#1066). The kernel then dies with ``ZMQError: Address already in use``
before any cell ran (CI met it once, in ``otter run`` with two xdist workers and two threads
starting kernels). Nothing had been graded or executed, so the command or notebook is run once
more; any other failure is the test's to see.

>>> lost_port_race("zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:43865')")
True
>>> lost_port_race("AssertionError: 3 != 4")
False
"""

import subprocess

from nbclient import NotebookClient
from nbformat import NotebookNode

PORT_TAKEN = "ZMQError: Address already in use"
# what nbclient raises when the kernel it started never answered (no cell has run yet)
NEVER_ANSWERED = ("Kernel didn't respond in", "Kernel died before replying to kernel_info")


def lost_port_race(output: str) -> bool:
    """Whether a command's output shows a kernel that could not bind one of its ports."""
    return PORT_TAKEN in output


def run_starting_kernels(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run(args, capture_output=True, text=True, **kwargs)`` for a command that starts
    kernels (otter run, nbgrader autograde and validate), run once more when it failed only
    because a kernel lost the port race."""
    done = subprocess.run(args, capture_output=True, text=True, **kwargs)
    if done.returncode != 0 and lost_port_race(done.stdout + done.stderr):
        done = subprocess.run(args, capture_output=True, text=True, **kwargs)
    return done


def kernel_client(notebook: NotebookNode, folder, timeout: float) -> NotebookClient:
    """An nbclient client for ``notebook`` in a python3 kernel started in ``folder``, errors kept in its outputs."""
    return NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(folder)}},
    )


async def execute_in_kernel(notebook: NotebookNode, folder, timeout: float, env: dict | None = None) -> None:
    """Run ``notebook`` top to bottom in a python3 kernel started in ``folder`` (errors kept in its
    outputs); a kernel that never answered is replaced once, as no cell of it has run."""
    for attempt in (1, 2):
        client = kernel_client(notebook, folder, timeout)
        try:
            await client.async_execute(**({} if env is None else {"env": env}))
            return
        except RuntimeError as error:
            if attempt == 2 or not str(error).startswith(NEVER_ANSWERED):
                raise
