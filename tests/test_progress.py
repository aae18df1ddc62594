"""Progress that fits where it goes (``autograder.engine.progress``): a bar in a terminal
(a pseudo-terminal here), one plain line per tenth of the work, or per evaluation when
training, in a pipe or in CI, never a carriage return there.

Grading's lines through ``gptcourse grade`` in a pipe are in ``test_cli.py``.
"""

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios

from autograder.course import ROOT

COUNT = """
from autograder.engine.progress import Progress
progress = Progress(20, "grading 01_tokenisation", "submission")
for _ in range(20):
    progress.update()
progress.close()
"""


def _environment(ci: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    return {**env, "CI": "true"} if ci else env


def in_terminal(command: list[str], ci: bool = False, timeout: float = 300) -> str:
    """What ``command`` writes to a pseudo-terminal of 24 rows and 120 columns (its standard
    output and error; a new one has no size, and tqdm draws a bar as wide as the terminal)."""
    main, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    proc = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=secondary, stderr=secondary, cwd=ROOT, env=_environment(ci)
    )
    os.close(secondary)
    out = b""
    while True:
        ready, _, _ = select.select([main], [], [], timeout)
        if not ready:
            proc.kill()
            raise AssertionError(f"no output for {timeout} s: {out[-2000:]!r}")
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the terminal closed: the command is done
            break
        if not chunk:
            break
        out += chunk
    os.close(main)
    assert proc.wait(timeout=timeout) == 0, out[-3000:]
    return out.decode("utf-8", "replace")


def in_pipe(command: list[str], ci: bool = False) -> str:
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=_environment(ci), timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


def test_a_terminal_gets_a_bar():
    out = in_terminal([sys.executable, "-c", COUNT])
    assert "\r" in out and "grading 01_tokenisation: 100%" in out and "20/20" in out
    assert "submissions (" not in out  # no plain lines beside the bar


def test_a_pipe_and_ci_get_a_line_per_tenth_and_no_carriage_return():
    lines = [f"grading 01_tokenisation: {n}/20 submissions (" for n in range(2, 21, 2)]
    for out in (in_pipe([sys.executable, "-c", COUNT]), in_terminal([sys.executable, "-c", COUNT], ci=True)):
        assert "\r" not in out.replace("\r\n", "\n"), out  # a terminal writes \r\n for \n
        assert [line[: line.index("(") + 1] for line in out.splitlines() if line.startswith("grading")] == lines


def _train(tmp_path, name: str) -> list[str]:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat. " * 400, encoding="utf-8")
    return [
        *(sys.executable, "-m", "autograder.cli", "train", "--corpus", str(corpus), "--preset", "tiny"),
        *("--steps", "4", "--eval-interval", "2", "--threads", "1", "--sample-tokens", "0"),
        *("--out", str(tmp_path / name)),
    ]


def test_training_shows_a_bar_in_a_terminal_and_evaluation_lines_in_a_log(tmp_path):
    bar = in_terminal(_train(tmp_path, "terminal"))
    assert "\r" in bar.replace("\r\n", "\n") and "training: " in bar and "loss=" in bar
    log = in_pipe(_train(tmp_path, "log"))
    assert "\r" not in log and "training: " not in log and "loss=" not in log
    steps = [line.split(":")[0] for line in log.splitlines() if line.startswith("step ") and ", val " in line]
    assert steps == ["step 0", "step 2", "step 4"], log[-3000:]
