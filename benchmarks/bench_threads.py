"""CPU threads: the rule of ``autograder/kit/threads.py`` against torch's default, side by side.

    .venv/bin/python benchmarks/bench_threads.py     # make bench-threads: about 10 minutes on 2 quiet cores

Two workloads, each in a fresh process per measurement:

- ``train``: the ``cpu`` preset of ``gptcourse train`` for ``--steps`` steps
  (``training.loop.run``, one evaluation batch at step 0), reported as training tokens/s;
- ``kv``: the 08 notebook's demo cell that times ``generate`` against ``generate_cached``
  (a fresh 4x4x128 GPT with block 256, 200 new greedy tokens after a one-token prompt).

Three thread choices: ``rule`` (``configure_threads()``, as the notebooks' harness cell
and ``gptcourse train`` do), ``torch`` (torch's own default, one thread per core it
counts) and ``one`` (a single thread, the yardstick). Three situations:

- ``idle``: nothing added (other users of the machine are recorded, not removed);
- ``busy``: one competing process, a Python busy loop, started just before;
- ``quota``: the measured process inside a CPU quota of 1 CPU (a cgroup v1 ``cpu``
  child with ``cpu.cfs_quota_us = cpu.cfs_period_us = 100000``, or cgroup v2 ``cpu.max``;
  ``systemd-run --scope -p CPUQuota=100%`` when neither can be made; which one was used
  is reported).

Then the 07 grading time: ``gptcourse grade --stage 07`` on the reference notebook, and on
as many copies as ``os.cpu_count()``, inside a quota of 0.5 CPU (Gradescope's default),
with the rule (the default) and without it (torch's default threads in the grading
process and ``--workers os.cpu_count()``, as before the rule).

Each measurement records the 1-minute load average and the CPUs other processes kept busy
(``busy_cpus``) just before it. Interference only slows a run down, so with ``--repeats``
the fastest run of each cell is reported. Writes ``benchmarks/RESULTS_threads.md``
(``--out``) and the raw figures next to it (``.json``).
"""

import argparse
import contextlib
import csv
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.kit import threads  # noqa: E402

MODES = ("rule", "torch", "one")
SCENARIOS = ("idle", "busy", "quota")
WORKLOADS = ("train", "kv")
BUSY_LOOP = "while True:\n    pass\n"


# ---------------------------------------------------------------- the measured process


def set_threads(mode: str) -> int:
    """Apply a thread choice in this process; return the number of threads torch then uses."""
    import torch

    if mode == "rule":
        return threads.configure_threads()
    if mode == "one":
        torch.set_num_threads(1)
    elif mode != "torch":
        raise ValueError(f"unknown mode {mode!r}: use {', '.join(MODES)}")
    return torch.get_num_threads()


def work_train(mode: str, steps: int, corpus_name: str) -> dict:
    """The ``cpu`` preset for ``steps`` steps: training tokens per second."""
    import torch

    from training import loop
    from training.data import prepare
    from training.presets import CPU

    count = set_threads(mode)
    corpus = prepare(corpus_name)
    preset = CPU.replace(eval_iters=1, sample_tokens=0, threads=count)  # the count chosen above, kept by the loop
    result = loop.run(preset, corpus, torch.device("cpu"), None, progress=False, stop_after=steps, log=lambda *_: None)
    return {"threads": torch.get_num_threads(), "seconds": result.seconds, "tokens_per_s": result.tokens_per_second}


def work_kv(mode: str, tokens: int) -> dict:
    """The 08 notebook's ``generate`` / ``generate_cached`` demo cell: seconds of each."""
    import torch

    from solutions.generation import generate, generate_cached
    from solutions.gpt import GPT, GPTConfig

    count = set_threads(mode)
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=65, block_size=256, n_layer=4, n_head=4, n_embd=128))
    prompt = torch.zeros(1, 1, dtype=torch.long)
    out = {"threads": count}
    for fn in (generate, generate_cached):
        start = time.perf_counter()
        fn(model, prompt, tokens, temperature=0)
        out[fn.__name__] = time.perf_counter() - start
    out["seconds"] = out["generate"] + out["generate_cached"]
    return out


def worker(args: argparse.Namespace) -> int:
    if args.worker == "train":
        result = work_train(args.mode, args.steps, args.corpus)
    else:
        result = work_kv(args.mode, args.tokens)
    print("RESULT " + json.dumps(result))
    return 0


# ---------------------------------------------------------------- situations


@contextlib.contextmanager
def busy_process():
    """One competing process, a Python busy loop, for the duration of the block (yields its ``Popen``)."""
    proc = subprocess.Popen([sys.executable, "-c", BUSY_LOOP])
    try:
        time.sleep(0.5)  # running before the measured process starts
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _v1_cpu_mount() -> Path | None:
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        tail = right.split()
        if len(tail) >= 3 and tail[0] == "cgroup" and "cpu" in tail[2].split(","):
            return Path(left.split()[4])
    return None


def _v2_mount() -> Path | None:
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        if right.split()[:1] == ["cgroup2"]:
            return Path(left.split()[4])
    return None


@contextlib.contextmanager
def cpu_quota(cpus: float):
    """A prefix for a command that runs it inside a CPU quota of ``cpus``; yields (prefix, how).

    Makes a child cgroup (v1 ``cpu`` controller, else v2 with ``cpu.max``) and removes it
    afterwards; else ``systemd-run --scope``; else yields ``None``.
    """
    period = 100_000
    quota = int(cpus * period)
    name = f"gptcourse-bench-threads-{os.getpid()}"
    made: Path | None = None
    how = None
    try:
        v1 = _v1_cpu_mount()
        if v1 is not None:
            try:
                made = v1 / name
                made.mkdir()
                (made / "cpu.cfs_period_us").write_text(str(period))
                (made / "cpu.cfs_quota_us").write_text(str(quota))
                how = f"cgroup v1: {made} with cpu.cfs_quota_us={quota}, cpu.cfs_period_us={period}"
            except OSError:
                with contextlib.suppress(OSError):
                    made.rmdir()
                made = None
        v2 = _v2_mount() if made is None else None
        if v2 is not None and "cpu" in (v2 / "cgroup.controllers").read_text().split():
            try:
                made = v2 / name
                made.mkdir()
                (made / "cpu.max").write_text(f"{quota} {period}")
                how = f"cgroup v2: {made} with cpu.max '{quota} {period}'"
            except OSError:
                with contextlib.suppress(OSError):
                    made.rmdir()
                made = None
        if made is not None:
            yield ["sh", "-c", f'echo $$ > "{made}/cgroup.procs" && exec "$@"', "sh"], how
        elif (
            shutil.which("systemd-run")
            and subprocess.run(
                ["systemd-run", "--scope", "--quiet", "-p", f"CPUQuota={int(cpus * 100)}%", "true"], capture_output=True
            ).returncode
            == 0
        ):
            yield (
                ["systemd-run", "--scope", "--quiet", "-p", f"CPUQuota={int(cpus * 100)}%", "--"],
                f"systemd-run --scope -p CPUQuota={int(cpus * 100)}%",
            )
        else:
            yield None, "no quota could be set (neither a cgroup nor systemd-run)"
    finally:
        if made is not None:
            for _ in range(50):  # the cgroup empties once its last process has been reaped
                try:
                    made.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)


@contextlib.contextmanager
def situation(name: str, quota_cpus: float = 1.0):
    """Yields (command prefix, description) for ``idle``, ``busy`` or ``quota``."""
    if name == "idle":
        yield [], "nothing added"
    elif name == "busy":
        with busy_process():
            yield [], "one Python busy loop beside it"
    elif name == "quota":
        with cpu_quota(quota_cpus) as (prefix, how):
            yield prefix, how
    else:
        raise ValueError(f"unknown situation {name!r}")


def loadavg() -> float:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except OSError:
        return float("nan")


def measure(workload: str, mode: str, prefix: list[str] | None, args: argparse.Namespace) -> dict:
    """One fresh measured process; its result with the load seen just before it."""
    before = {"load": loadavg(), "busy": round(threads.busy_cpus(), 2)}
    if prefix is None:
        return {**before, "error": "not measured (no quota)"}
    cmd = [
        *prefix,
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        workload,
        "--mode",
        mode,
        "--steps",
        str(args.steps),
        "--tokens",
        str(args.tokens),
        "--corpus",
        args.corpus,
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", threads.ENV_VAR, "MKL_NUM_THREADS")}
    start = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.limit, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {**before, "error": f"stopped after {args.limit:g} s", "wall": args.limit}
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        return {**before, "error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return {**before, **json.loads(lines[-1][len("RESULT ") :]), "wall": time.perf_counter() - start}


def best(runs: list[dict]) -> dict:
    """The fastest successful run (interference only slows a run down), else the last."""
    good = [r for r in runs if "error" not in r]
    return min(good, key=lambda r: r["seconds"]) if good else runs[-1]


# ---------------------------------------------------------------- grading under a quota


def write_reference(folder: Path, copies: int) -> list[Path]:
    from autograder.build.notebooks import make_notebook, write_notebook
    from autograder.course import get_stage

    notebook = make_notebook(get_stage("07_gpt"), "reference")
    paths = [folder / f"reference-{i + 1}.ipynb" for i in range(copies)]
    for path in paths:
        write_notebook(notebook, path)
    return paths


WITHOUT_RULE = (
    "import os, sys, torch\n"
    "import autograder.cli as cli\n"
    "cli.configure_threads = lambda *a: torch.get_num_threads()\n"
    "sys.exit(cli.main(sys.argv[1:] + ['--workers', str(os.cpu_count())]))\n"
)


def grade(paths: list[Path], rule: bool, prefix: list[str] | None, out: Path, limit: float) -> dict:
    before = {"load": loadavg(), "busy": round(threads.busy_cpus(), 2)}
    if prefix is None:
        return {**before, "error": "not measured (no quota)"}
    args = ["grade", "--stage", "07", "--out", str(out), "--quiet", *map(str, paths)]
    cmd = [sys.executable, "-m", "autograder.cli", *args] if rule else [sys.executable, "-c", WITHOUT_RULE, *args]
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", threads.ENV_VAR, "MKL_NUM_THREADS")}
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    start = time.perf_counter()
    try:
        done = subprocess.run([*prefix, *cmd], capture_output=True, text=True, timeout=limit, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {**before, "error": f"stopped after {limit:g} s"}
    wall = time.perf_counter() - start
    if done.returncode != 0:
        return {**before, "error": (done.stderr.strip().splitlines() or ["failed"])[-1], "wall": wall}
    with open(out / "grades.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return {**before, "wall": wall, "scores": [float(r["total"]) for r in rows[1:]], "max": float(rows[0]["total"])}


# ---------------------------------------------------------------- the report


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    import torch

    return (
        f"{cpu}, {os.cpu_count()} cores (affinity {threads.affinity_cpus()}, quota {threads.cgroup_cpu_quota()}), "
        f"torch {torch.__version__}, Python {platform.python_version()}"
    )


def _cell(r: dict, key: str, unit: str = "s") -> str:
    if "error" in r:
        return r["error"]
    value = r[key]
    return f"{value:,.0f}" if unit == "tok/s" else f"{value:.2f}"


def render(data: dict) -> str:
    a = data["args"]
    lines = [
        "# CPU threads: the rule against torch's default",
        "",
        f"Command: `{data['command']}`. Machine: {data['machine']}. Date: {data['date']}; the whole run took {data['took_s'] / 60:.1f} min.",
        f"Load average (1 min) before: {data['load_before']:.2f}; after: {data['load_after']:.2f}. The machine's 2 cores are shared with",
        "other sessions; each row gives the load average and the CPUs other processes kept busy (`busy_cpus`, 0.1 s)",
        f"just before its fastest run. {a['repeats']} run(s) per cell, the fastest reported. Quota: {data['quota_how']}.",
        "",
        "The rule: `GPTCOURSE_THREADS` / `--threads` / `OMP_NUM_THREADS` when set; else floor(min(affinity mask, cgroup quota)),",
        "and no more than the CPUs of the mask that other processes leave free (mask minus `busy_cpus()`, rounded), at least 1.",
        "",
        f"## `cpu` preset, {a['steps']} steps (training tokens/s, higher is better)",
        "",
        "| situation | thread choice | threads | tokens/s | seconds | vs one thread | load 1 min | others' busy CPUs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in data["situations"]:
        one = data["results"]["train"][s]["one"]
        for mode in MODES:
            r = data["results"]["train"][s][mode]
            ratio = f"{r['seconds'] / one['seconds']:.2f}x the time" if "error" not in r and "error" not in one else "-"
            lines.append(
                f"| {s} | {mode} | {r.get('threads', '-')} | {_cell(r, 'tokens_per_s', 'tok/s')} | {_cell(r, 'seconds')} | {ratio} | {r['load']:.2f} | {r['busy']:.2f} |"
            )
    lines += [
        "",
        f"## 08 demo cell (07's before the stage was divided): `generate` and `generate_cached`, {a['tokens']} new tokens, block 256 (seconds, lower is better)",
        "",
        "| situation | thread choice | threads | `generate` | `generate_cached` | both | vs one thread | load 1 min | others' busy CPUs |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in data["situations"]:
        one = data["results"]["kv"][s]["one"]
        for mode in MODES:
            r = data["results"]["kv"][s][mode]
            ratio = f"{r['seconds'] / one['seconds']:.2f}x" if "error" not in r and "error" not in one else "-"
            lines.append(
                f"| {s} | {mode} | {r.get('threads', '-')} | {_cell(r, 'generate')} | {_cell(r, 'generate_cached')} | {_cell(r, 'seconds')} | {ratio} | {r['load']:.2f} | {r['busy']:.2f} |"
            )
    if data.get("grading"):
        g = data["grading"]
        lines += [
            "",
            f"## Grading stage 07 inside a quota of {g['quota_cpus']:g} CPU ({g['quota_how']})",
            "",
            "With the rule: the grading process uses 1 thread and `--workers` defaults to floor(usable CPUs), here 1.",
            f"Without: torch's default threads in the grading process and `--workers {os.cpu_count()}` (os.cpu_count(), as before).",
            "Each grading child uses 1 thread in both.",
            "",
            "| submissions | with the rule | without | scores with | scores without | load 1 min (with / without) |",
            "|---|---|---|---|---|---|",
        ]
        for row in g["rows"]:
            w, wo = row["with"], row["without"]
            lines.append(
                f"| {row['copies']} x reference | {_grade_cell(w)} | {_grade_cell(wo)} | {_scores(w)} | {_scores(wo)} | {w['load']:.2f} / {wo['load']:.2f} |"
            )
    return "\n".join(lines) + "\n"


def _grade_cell(r: dict) -> str:
    return (
        r["error"]
        if "error" in r and "wall" not in r
        else f"{r['wall']:.1f} s" + (f" ({r['error']})" if "error" in r else "")
    )


def _scores(r: dict) -> str:
    return ", ".join(f"{s:g}" for s in r["scores"]) + f" of {r['max']:g}" if "scores" in r else "-"


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=60, help="training steps of the cpu preset per measurement")
    parser.add_argument("--tokens", type=int, default=200, help="new tokens of the KV-cache demo (the notebook's: 200)")
    parser.add_argument("--corpus", default="shakespeare", help="corpus of the training workload")
    parser.add_argument("--repeats", type=int, default=1, help="runs per cell (the fastest is reported)")
    parser.add_argument("--limit", type=float, default=300, help="seconds after which a measurement is stopped")
    parser.add_argument("--situations", nargs="+", default=list(SCENARIOS), choices=SCENARIOS)
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=WORKLOADS)
    parser.add_argument("--no-grading", action="store_true", help="skip the 07 grading under a quota of 0.5 CPU")
    parser.add_argument("--grade-quota", type=float, default=0.5, help="CPUs of the grading quota")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "RESULTS_threads.md"))
    parser.add_argument("--worker", choices=WORKLOADS, help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=MODES, default="rule", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)

    started = time.perf_counter()
    data = {
        "command": "python benchmarks/bench_threads.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "args": vars(args),
        "load_before": loadavg(),
        "situations": args.situations,
        "results": {w: {s: {} for s in args.situations} for w in WORKLOADS},
        "quota_how": "not used",
    }
    for s in args.situations:
        for workload in args.workloads:
            runs: dict[str, list] = {m: [] for m in MODES}
            for _ in range(args.repeats):
                for mode in MODES:
                    with situation(s) as (prefix, how):
                        if s == "quota":
                            data["quota_how"] = how
                        r = measure(workload, mode, prefix, args)
                    runs[mode].append(r)
                    print(f"{s:5s} {workload:5s} {mode:5s} {json.dumps(r)}", flush=True)
            data["results"][workload][s] = {m: best(v) for m, v in runs.items()}
    for workload in WORKLOADS:
        if workload not in args.workloads:
            del data["results"][workload]
    if not args.no_grading:
        rows = []
        with tempfile.TemporaryDirectory(prefix="gptcourse-bench-threads-") as tmp:
            for copies in (1, os.cpu_count() or 1):
                paths = write_reference(Path(tmp) / f"class-{copies}", copies)
                row = {"copies": copies}
                for rule in (True, False):
                    with cpu_quota(args.grade_quota) as (prefix, how):
                        row["with" if rule else "without"] = r = grade(
                            paths, rule, prefix, Path(tmp) / f"out-{copies}-{rule}", args.limit * 2
                        )
                    print(f"grade {copies} {'with' if rule else 'without'} {json.dumps(r)}", flush=True)
                rows.append(row)
        data["grading"] = {"quota_cpus": args.grade_quota, "quota_how": how, "rows": rows}
    data["load_after"] = loadavg()
    data["took_s"] = time.perf_counter() - started
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(data, indent=1) + "\n")
    if set(args.workloads) == set(WORKLOADS):
        out.write_text(render(data))
        print(f"written: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
