"""The tests' guard against a kernel's lost port race (``tests/kernels.py``): a command that failed
that way runs once more, any other failure or success runs once."""

import sys

from kernels import lost_port_race, run_starting_kernels

# appends a line to a file per run, then fails with the given message (or succeeds on "")
COUNTING = """
import sys
with open(sys.argv[1], "a") as handle:
    handle.write("run\\n")
if sys.argv[2]:
    sys.exit(sys.argv[2])
"""


def runs(tmp_path, message: str) -> tuple[int, int]:
    log = tmp_path / f"runs-{len(message)}.txt"
    done = run_starting_kernels([sys.executable, "-c", COUNTING, str(log), message], timeout=60)
    return done.returncode, len(log.read_text().splitlines())


def test_only_a_lost_port_race_runs_the_command_again(tmp_path):
    race = "zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:43865')"
    assert lost_port_race(race) and not lost_port_race("AssertionError: 3 != 4")
    assert runs(tmp_path, race) == (1, 2)  # failed twice: the second failure is the test's
    assert runs(tmp_path, "AssertionError: 3 != 4") == (1, 1)
    assert runs(tmp_path, "") == (0, 1)
