"""The benchmarks of issue 8, in one run, written to benchmarks/RESULTS.md.

    make bench                                  # = .venv/bin/python benchmarks/run.py
    .venv/bin/python benchmarks/run.py --only bpe checks --out /tmp/r.md

1. grading one submission of each stage: ``gptcourse grade`` against the stage's
   Gradescope zip run as Gradescope runs it, otter-grader grading natively (the public
   tests in the kernel) and ``nbgrader autograde`` (bench_grading.py);
2. a class of 100 submissions with 1 and 2 workers (bench_grading.py);
3. the student's check cells in a real kernel (bench_checks.py);
4. BPE learning against Hugging Face tokenizers and the naive loop (bench_bpe.py).

About 15-20 minutes on a quiet 2-core machine. Never part of ``make test``. The raw figures go
to RESULTS.json next to the Markdown.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import measure  # noqa: E402

SECTIONS = ("grading", "class", "checks", "bpe")
TITLES = {"grading": "1. one submission per stage", "class": "2. a class", "checks": "3. check cells", "bpe": "4. BPE"}
KEYS = {"grading": ("grading",), "class": ("class", "class_heavy"), "checks": ("checks",), "bpe": ("bpe",)}
CHECK_GOAL_S = 2.0


# --- rendering ----------------------------------------------------------------------------


def _s(x: float | None, digits: int = 2) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if a and b else "–"


def _score(x) -> str:
    return "–" if x is None else f"{x:g}"


def render_machine(m: dict, load: dict, command: str, started: str, took_s: float) -> str:
    lines = [
        "# Benchmarks: grading speed, class throughput, check cells, BPE",
        "",
        "Made by",
        "",
        f"    {command}",
        "",
        f"on {started} (UTC), in {took_s / 60:.1f} minutes. The raw figures are in [RESULTS.json](RESULTS.json).",
        "",
        "## Machine",
        "",
        "| | |",
        "|---|---|",
        f"| CPU | {m['cpu']} |",
        f"| cores | {m['cores']} |",
        f"| memory | {m['memory_gib']} GiB |",
        f"| GPU | {m['gpu']} |",
        f"| OS, Python | {m['os']}, Python {m['python']} |",
        f"| torch | {m['torch']} |",
        f"| otter-grader | {m['otter-grader']} |",
        f"| nbgrader | {m['nbgrader']} |",
        f"| tokenizers | {m['tokenizers']} |",
        f"| nbclient | {m['nbclient']} |",
        f"| load average (1 min) | {load['before']:.2f} before the run; during it min {load['min']:.2f}, mean {load['mean']:.2f}, max {load['max']:.2f} ({load['samples']} samples, every 5 s); {load['after']:.2f} after |",
        *(
            f"| load during section {name} | mean {v['mean']:.2f}, max {v['max']:.2f} ({v['minutes']:.1f} min) |"
            for name, v in load.get("sections", {}).items()
        ),
        "",
        "The load average counts the benchmark itself (one to two busy processes while a tool",
        "runs): on 2 cores, a load near 2 means the machine was otherwise idle.",
        "",
    ]
    return "\n".join(lines)


# (key in RESULTS.json, the column's name in the text, its short name in the table)
COLUMNS = (
    ("gptcourse", "gptcourse", "gptcourse"),
    ("gradescope", "Gradescope zip", "zip"),
    ("otter_engine", "otter zip (engine)", "otter zip"),
    ("otter", "otter (public, in kernel)", "otter"),
    ("nbgrader", "nbgrader", "nbgrader"),
)


def _of(score, most) -> str:
    return f"{_score(score)}/{_score(most)}"


def not_full_marks(r: dict) -> list[str]:
    """``stage tool: score of most`` for every tool that did not give the reference full marks."""
    out = []
    for sid, e in r["stages"].items():
        for tool, most in e.get("max", {}).items():
            got = e[tool].get("scores") or [e["scores"].get(tool)]
            if any(s is None or abs(s - most) > 1e-6 for s in got):
                out.append(f"{sid} {tool}: {', '.join(_score(s) for s in got)} of {_score(most)}")
    return out


def recorded_columns(r: dict) -> tuple:
    """The columns every stage of a recorded grading section has (an older run may lack one)."""
    return tuple(c for c in COLUMNS if all(c[0] in e for e in r["stages"].values()))


def render_grading(r: dict) -> str:
    columns = recorded_columns(r)
    lines = [
        "## 1. Grading one submission of each stage",
        "",
        "Wall time on the stage's reference answers, the median of each tool's runs: two, a third",
        f"only when the first two differ by more than {r.get('agree', 0.1):.0%}, one only for a tool whose first run took over {r.get('slow_single_s', 20):g} s",
        "(runs interleaved: "
        + ", ".join(name for _, name, _ in columns)
        + ", then again). Memory: the peak of the summed PSS of the",
        "command's whole process tree (sampled every 50 ms; shared pages counted once); in",
        "brackets the largest single process (`ru_maxrss`, as `/usr/bin/time -f %M` reports).",
        "The zips and the nbgrader course are built from the current sources by the code of `gptcourse build`.",
        "",
        "- **gptcourse**: `gptcourse grade --stage S --out DIR S.ipynb`: every public and hidden test, the",
        "  notebook run in a confined child.",
        "- **Gradescope zip**: the stage's zip (`release/gradescope/S.zip`) run as Gradescope runs it, on the",
        "  same notebook: a folder laid out like `/autograder` (`source/` the unpacked zip, `submission/` the",
        "  notebook, `submission_metadata.json`, `results/`), then the zip's `source/run_autograder`, with this",
        "  machine's Python and unconfined (`benchmarks/gradescope_run.py`, through",
        "  `autograder/build/gradescope_tryout.py`; Gradescope's memory and CPU limits are tested elsewhere).",
        "  The time is `run_autograder`'s alone (unpacking not counted); the memory is the whole command's.",
        "  The same tests through the same engine as gptcourse.",
        *(
            [
                "- **otter zip (engine)**: `otter run -a release/otter/S.zip -o DIR --no-logo S.ipynb`: otter-grader with",
                "  the course's otter zip, on the same notebook: its plugin has the engine grade every public and hidden",
                "  test in a confined child and otter's kernel run an empty notebook in place of the student's. The same",
                "  tests through the same engine as gptcourse, plus otter's start-up and its kernel.",
            ]
            if any(key == "otter_engine" for key, _, _ in columns)
            else []
        ),
        "- **otter (public, in kernel)**: `otter run -a S-otter.zip -o DIR --no-logo S.ipynb`: otter-grader",
        "  grading natively, as an instructor who wraps the course in otter would (`benchmarks/plain_otter.py`):",
        "  an otter autograder zip (`otter_config.json`, OK-format `tests/<question>.py`) whose test for each",
        "  question runs that question's **public tests only**, in the student's kernel, through the notebook's",
        '  own harness (`run_public`, what `check("question")` runs), and expects the question\'s public points; the check,',
        "  demonstration and training cells are tagged `otter_ignore`. No hidden tests, no confinement: otter",
        "  does less work here than the other columns, and its score is out of the public points only.",
        "- **nbgrader**: `nbgrader autograde S --force` in a temporary course made from `release/nbgrader`",
        "  (`generate_assignment` once per stage, not counted), one student whose notebook is",
        "  nbgrader's release with the same reference answers (nbgrader needs its own cell",
        "  metadata); its grade cells grade as the course's nbgrader release sets them up.",
        "",
        "In the table, *zip* is the Gradescope zip, "
        + ("*otter zip* otter with the course's otter zip, " if any(k == "otter_engine" for k, _, _ in columns) else "")
        + "*otter* otter running the public tests in the kernel.",
        "",
        "| stage | "
        + " | ".join(
            f"{short} s" + ("" if key == "gptcourse" else f" | gptcourse / {short}") for key, _, short in columns
        )
        + " | "
        + " | ".join(f"peak MiB {short}" for _, _, short in columns)
        + " | score ("
        + " / ".join(short for _, _, short in columns)
        + ") |",
        "|---|" + "---:|" * (2 * len(columns) - 1) + "---:|" * len(columns) + "---|",
    ]
    keys = [key for key, _, _ in columns]
    for sid, e in r["stages"].items():
        g = e["gptcourse"]["wall_s"]
        cells = [
            f"{_s(e[k]['wall_s'])}" + ("" if k == "gptcourse" else f" | **{_ratio(g, e[k]['wall_s'])}**") for k in keys
        ]
        mem = [f"{e[k]['tree_peak_mib']:.0f} ({e[k]['max_rss_mib']:.0f})" for k in keys]
        score = " / ".join(_of(e["scores"].get(k), e.get("max", {}).get(k)) for k in keys)
        lines.append(f"| {sid} | " + " | ".join(cells) + " | " + " | ".join(mem) + f" | {score} |")
    total = {k: sum(e[k]["wall_s"] for e in r["stages"].values()) for k in keys}
    lines.append(
        "| all stages | "
        + " | ".join(
            f"{total[k]:.2f}" + ("" if k == "gptcourse" else f" | **{_ratio(total['gptcourse'], total[k])}**")
            for k in keys
        )
        + " |"
        + " |" * (len(columns) + 1)
    )
    lines += ["", "\"gptcourse / X\": gptcourse's time over X's (below 1: gptcourse is faster).", ""]
    short = not_full_marks(r)
    if short:
        lines += (
            ["**Not full marks on the reference** (a problem to look into):", ""] + [f"- {x}" for x in short] + [""]
        )
    else:
        lines += ["The reference earned full marks from every tool in every run (otter: full public points).", ""]
    lines += ["Every run, in seconds (" + "; ".join(name for _, name, _ in columns) + "):", ""]
    for sid, e in r["stages"].items():
        lines.append(
            f"- {sid}: "
            + "; ".join(str(e[k]["runs"]) for k in keys)
            + ("" if all(e[k]["ok"] for k in keys) else " (a run failed: see RESULTS.json)")
        )
    for sid, e in r["stages"].items():
        sc = e["scores"]
        if sc.get("nbgrader") is not None and sc.get("gptcourse") is not None and sc["nbgrader"] != sc["gptcourse"]:
            lines += [
                "",
                f"**nbgrader's score differs on {sid}** ({_score(sc['nbgrader'])} against {_score(sc['gptcourse'])}, on the reference answers). nbgrader gives 0 to a grade cell with an error or any output on stderr; the autograded notebook shows:",
                "",
            ]
            lines += [f"- `{z}`" for z in e.get("nbgrader_zeroed", [])] or [
                "- no such cell: see the autograded notebook"
            ]
    gens = [e.get("nbgrader_generate_s") for e in r["stages"].values() if e.get("nbgrader_generate_s")]
    if gens:
        lines += [
            "",
            f"`nbgrader generate_assignment`, which nbgrader needs once per stage before any autograde: {min(gens):.1f}-{max(gens):.1f} s a stage.",
        ]
    if "otter_doctests" in r:
        p = r["otter_doctests"]
        e = r["stages"][p["stage"]]
        od, o, g = e["otter_doctests"], e["otter"], e["gptcourse"]
        lines += [
            "",
            f"**otter with hand-written doctests** (stage {p['stage']}): the same otter run with an autograder zip as",
            f"`otter assign` makes it from doctests written for otter ({p['cases']} cases in {p['questions']} questions; our suites have more),",
            "run in the student's kernel, on the same notebook (`plain_otter.CASES`): otter's most native form.",
            f"**{od['wall_s']:.2f} s** (median; runs {od['runs']}), peak {od['tree_peak_mib']:.0f} MiB, score {_of(e['scores'].get('otter_doctests'), e.get('max', {}).get('otter_doctests'))}.",
            f"Against it, otter running our public tests takes {o['wall_s'] / od['wall_s']:.2f}x and `gptcourse grade` {g['wall_s'] / od['wall_s']:.2f}x.",
        ]
    lines.append("")
    return "\n".join(lines)


def render_class(r: dict, heavy: bool = False) -> str:
    if heavy:
        lines = [
            f"### A heavier stage: {r['stage']}, {sum(r['mix'].values())} submissions",
            "",
            "The same command on the heaviest stage (hidden tests train small models), too slow for a",
            f"class of 100 within the run's budget: mix {', '.join(f'{v} {k}' for k, v in r['mix'].items())}.",
            "",
            "| workers | submissions | wall s | s per submission | submissions per minute | first result after s | s per submission by quarter | peak MiB | graded |",
            "|---:|---:|---:|---:|---:|---:|---|---:|---:|",
        ]
        by = {row["workers"]: row for row in r["runs"]}
        for row in r["runs"]:
            quarters = " / ".join(f"{q:.2f}" for q in row.get("quarters_s_per_sub", [])) or "–"
            lines.append(
                f"| {row['workers']} | {row['n']} | {row['wall_s']:.1f} | {row['per_submission_s']:.2f} | **{row['per_minute']:.1f}** | {_s(row['first_result_s'], 1)} | {quarters} | {row['tree_peak_mib']:.0f} | {row['graded']} |"
            )
        if 1 in by and 2 in by:
            lines += ["", f"Two workers against one: {by[1]['wall_s'] / by[2]['wall_s']:.2f}x the throughput."]
        lines.append("")
        return "\n".join(lines)
    lines = [
        f"## 2. A class: stage {r['stage']}",
        "",
        "`gptcourse grade --stage S --out DIR --workers W --quiet <n notebooks>`, one run each.",
        f"Mix: {', '.join(f'{v} {k}' for k, v in r['mix'].items())} in {sum(r['mix'].values())} (interleaved, one in four empty,",
        "so that every multiple of 4 from the start has the same mix). Per quarter: seconds per submission between completions within",
        "each quarter of the class (completions noted when each results.json appears; the first",
        "quarter is counted from the first result, so start-up is left out).",
        "",
        "| workers | submissions | wall s | s per submission | submissions per minute | first result after s | s per submission by quarter | peak MiB | graded |",
        "|---:|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for row in r["runs"]:
        quarters = " / ".join(f"{q:.2f}" for q in row.get("quarters_s_per_sub", [])) or "–"
        lines.append(
            f"| {row['workers']} | {row['n']} | {row['wall_s']:.1f} | {row['per_submission_s']:.2f} | **{row['per_minute']:.0f}** | {_s(row['first_result_s'], 1)} | {quarters} | {row['tree_peak_mib']:.0f} | {row['graded']} |"
        )
    by = {(row["workers"], row["n"]): row for row in r["runs"]}
    notes = []
    for w in sorted({row["workers"] for row in r["runs"]}):
        sizes = sorted(n for (ww, n) in by if ww == w)
        if len(sizes) >= 2:
            small, big = by[(w, sizes[0])], by[(w, sizes[-1])]
            marginal = (big["wall_s"] - small["wall_s"]) / (big["n"] - small["n"])
            notes.append(
                f"- {w} worker{'s' if w > 1 else ''}: {small['n']} submissions cost {small['per_submission_s']:.2f} s each (start-up included), "
                f"{big['n']} cost {big['per_submission_s']:.2f} s each; the {big['n'] - small['n']} extra ones cost {marginal:.2f} s each."
            )
    if (1, 100) in by and (2, 100) in by:
        notes.append(
            f"- Two workers against one, 100 submissions: {by[(1, 100)]['wall_s'] / by[(2, 100)]['wall_s']:.2f}x the throughput (2 cores)."
        )
    lines += ["", *notes, ""]
    return "\n".join(lines)


def render_checks(r: dict) -> str:
    lines = [
        "## 3. The student's check cells",
        "",
        "Each stage's reference notebook in a fresh `python3` kernel through nbclient (demonstration",
        "and training cells left out). *Loading*: every cell before the first check (harness,",
        'imports, given code, answers), after the kernel started. Each `check("question")` cell is',
        f"timed from the execute request to its reply: the first run, and a second one when the first took under 5 s. Goal: under {CHECK_GOAL_S:g} s.",
        "",
        "| stage | kernel start s | loading s | checks | median first run s | slowest check | its first run s | under 2 s |",
        "|---|---:|---:|---:|---:|---|---:|:---:|",
    ]
    over = []
    for sid, e in r.items():
        checks = e["checks"]
        firsts = sorted(c["first_s"] for c in checks)
        slow = max(checks, key=lambda c: c["first_s"]) if checks else None
        under = sum(c["first_s"] < CHECK_GOAL_S for c in checks)
        over += [(sid, c) for c in checks if c["first_s"] >= CHECK_GOAL_S]
        lines.append(
            f"| {sid} | {e['kernel_start_s']:.2f} | {_s(e['loading_s'])} | {len(checks)} | {measure.median(firsts):.3f} | `{slow['cell'] if slow else '-'}` | {slow['first_s'] if slow else 0:.2f} | {under}/{len(checks)} |"
        )
    failed = [(sid, c) for sid, e in r.items() for c in e["checks"] if not c["passed"]]
    lines += [""]
    if over:
        lines += ["Checks over the goal:", ""]
        lines += [
            f"- {sid} `{c['cell']}`: {c['first_s']:.2f} s first run"
            + (f", {c['second_s']:.2f} s again" if c["second_s"] is not None else "")
            for sid, c in over
        ]
        lines.append("")
    if failed:
        lines += ['Checks that did not report "public tests passed" on the reference (a problem):', ""]
        lines += [f"- {sid} `{c['cell']}`: {c['report']}" for sid, c in failed]
        lines.append("")
    lines += [
        "The checks that train a model (07 `train`, `training_works`) use torch's threads on every core,",
        "so CPU contention slows them far more than the rest: in earlier runs of this benchmark on the",
        "project's 2-core machine (2026-11-23, same sources), while other test suites ran (load average",
        "3-5), `training_works` took 2.7, 4.2 and 13.5 s, and nbgrader's autograde of 07 29-36 s.",
        "",
        "<details><summary>Every check cell (first run; second run)</summary>",
        "",
    ]
    for sid, e in r.items():
        lines.append(
            f"- {sid}: "
            + ", ".join(
                f"`{c['cell']}` {c['first_s']:.3f}" + (f"; {c['second_s']:.3f}" if c["second_s"] is not None else "")
                for c in e["checks"]
            )
        )
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def render_bpe(r: dict) -> str:
    totals = r["totals"]
    nv = r["naive"]
    lines = [
        "## 4. BPE learning",
        "",
        f"Corpus: {r['corpus']} ({r['characters']:,} characters, {r['word_types']:,} word types after `str.split`), end-of-word",
        "suffix `</w>`; median of the timed runs; word counting included everywhere.",
        "",
        "- **ours**: `solutions.bpe.train_bpe(text, N)`, single-threaded Python, incremental (recounts only",
        "  the words a merge changes; a heap of counts).",
        '- **Hugging Face tokenizers**: `BpeTrainer(vocab_size=V0 + N, end_of_word_suffix="</w>")` on',
        '  `models.BPE(end_of_word_suffix="</w>")`, fed the text\'s lines; V0 is its initial alphabet, so it',
        "  learns N merges (counted). `Whitespace` is the pre-tokeniser the issue names (it also splits",
        "  punctuation off words); `WhitespaceSplit` gives exactly our words. Its segmentation differs",
        "  from ours (it glues the suffix onto each word's last character, and breaks ties its own",
        '  way), so this compares speed only. Rust; "all cores" is its default thread pool,',
        '  "1 thread" is `TOKENIZERS_PARALLELISM=false`.',
        "- **naive**: recount every pair of every word, then merge, once per merge (`count_pairs` +",
        f"  `merge_pair` of the reference). Not run to the end: timed on windows of {nv['window']} merges",
        f"  starting after {', '.join(str(k) for k in nv['per_merge_s'])} merges (per merge: "
        + ", ".join(f"{v * 1000:.0f}" for v in nv["per_merge_s"].values())
        + " ms), the total",
        "  estimated by integrating that per-merge cost (trapezoids) plus the word counting. Check of",
        f"  the estimate: the first {nv['prefix']} merges took {nv['prefix_measured_s']:.1f} s measured, {nv['prefix_estimated_s']:.1f} s estimated. Every",
        f"  window learned exactly the reference's merges: {'yes' if nv['same_merges_as_reference'] else 'NO'}.",
        "",
        "| learner | " + " | ".join(f"{n} merges: s | merges/s | time ÷ ours" for n in totals) + " |",
        "|---|" + "---:|---:|---:|" * len(totals),
    ]

    def row(name: str, values: dict) -> str:
        cells = []
        for n in totals:
            v = values[n] if n in values else values[str(n)]
            cells.append(f"{v['seconds']:.2f} | {v['merges_per_s']:.0f} | {v['seconds'] / r['ours'][n]['seconds']:.2f}")
        return f"| {name} | " + " | ".join(cells) + " |"

    lines.append(row("**ours** (`train_bpe`)", r["ours"]))
    for key, values in r["hf"].items():
        lines.append(row(f"tokenizers, {key}", values))
    naive = {n: {"seconds": nv["estimated_s"][n], "merges_per_s": nv["merges_per_s"][n]} for n in totals}
    lines.append(row("naive loop (estimated)", naive))
    lines += [
        "",
        '"time ÷ ours": the learner\'s time over ours (below 1: faster than ours; above 1: slower).',
        "",
    ]
    return "\n".join(lines)


def render_summary(data: dict) -> str:
    lines = ["## Summary", ""]
    g = data.get("grading")
    if g:
        st = g["stages"]
        for key, name, _ in recorded_columns(g)[1:]:
            ratios = {sid: e["gptcourse"]["wall_s"] / e[key]["wall_s"] for sid, e in st.items()}
            lines.append(
                f"- **gptcourse grade / {name}** (one submission, median of 1-3 runs): "
                + ", ".join(f"{sid[:2]} {x:.2f}" for sid, x in ratios.items())
                + "."
            )
        short = not_full_marks(g)
        lines.append(
            "- The reference earned full marks from every tool on every stage (otter: the public points)."
            if not short
            else "- **Not full marks on the reference**: " + "; ".join(short) + "."
        )
        if "otter_doctests" in g:
            p = g["otter_doctests"]["stage"]
            e = st[p]
            lines.append(
                f"- otter with hand-written doctests, stage {p[:2]}: {e['otter_doctests']['wall_s']:.1f} s; gptcourse grade {e['gptcourse']['wall_s']:.1f} s ({e['gptcourse']['wall_s'] / e['otter_doctests']['wall_s']:.2f}x)."
            )
    c = data.get("class")
    if c:
        by = {(r["workers"], r["n"]): r for r in c["runs"]}
        big = max(r["n"] for r in c["runs"])
        parts = [
            f"--workers {w}: {by[(w, big)]['wall_s']:.1f} s, {by[(w, big)]['per_minute']:.0f} per minute"
            for w in sorted({r["workers"] for r in c["runs"]})
            if (w, big) in by
        ]
        verdict = ""
        quarters = [r.get("quarters_s_per_sub") for r in c["runs"] if r["n"] == big and r.get("quarters_s_per_sub")]
        if quarters:
            growth = max(q[3] / q[0] for q in quarters if q[0] > 0) if any(q[0] > 0 for q in quarters) else float("nan")
            verdict = f" The last quarter of the class cost at most {growth:.2f}x the first per submission: " + (
                "the cost per submission does not grow with the class."
                if growth <= 1.25
                else "the cost per submission GROWS with the class."
            )
        lines.append(f"- **A class of {big}** ({c['stage'][:2]}): " + "; ".join(parts) + "." + verdict)
    h = data.get("class_heavy")
    if h:
        lines.append(
            f"- {h['stage']}, {h['runs'][0]['n']} submissions: "
            + "; ".join(
                f"--workers {r['workers']}: {r['wall_s']:.1f} s ({r['per_minute']:.1f} per minute)" for r in h["runs"]
            )
            + "."
        )
    k = data.get("checks")
    if k:
        allc = [(sid, ch) for sid, e in k.items() for ch in e["checks"]]
        over = [(sid, ch) for sid, ch in allc if ch["first_s"] >= CHECK_GOAL_S]
        lines.append(
            f"- **Check cells**: {len(allc) - len(over)} of {len(allc)} report in under {CHECK_GOAL_S:g} s"
            + (
                ""
                if not over
                else " (over: " + ", ".join(f"{sid[:2]} `{ch['cell']}` {ch['first_s']:.1f} s" for sid, ch in over) + ")"
            )
            + f"; median {measure.median([ch['first_s'] for _, ch in allc]):.3f} s."
        )
    b = data.get("bpe")
    if b:
        parts = []
        for n in b["totals"]:
            ours = b["ours"][n]["seconds"]
            hf = b["hf"].get("WhitespaceSplit, 1 thread", next(iter(b["hf"].values())))[n]["seconds"]
            hf_ws = b["hf"].get("Whitespace, all cores", next(iter(b["hf"].values())))[n]["seconds"]
            naive = b["naive"]["estimated_s"][n]
            parts.append(
                f"{n} merges: ours {ours:.2f} s ({b['ours'][n]['merges_per_s']:.0f}/s), {naive / ours:.0f}x faster than the naive loop (estimated {naive:.0f} s); Hugging Face {ours / hf:.1f}x faster than ours (WhitespaceSplit, 1 thread; {ours / hf_ws:.1f}x with Whitespace, all cores)"
            )
        lines.append("- **BPE**: " + "; ".join(parts) + ".")
    lines.append("")
    return "\n".join(lines)


# --- running ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only", nargs="+", choices=SECTIONS, default=list(SECTIONS), help="sections to run (default: all)"
    )
    parser.add_argument("--stages", nargs="+", metavar="S", help="stages for sections 1 and 3 (default: all)")
    parser.add_argument(
        "--repeats", type=int, default=3, help="at most this many runs per tool and stage in section 1 (median)"
    )
    parser.add_argument("--class-stage", default="01_tokenisation", help="the stage of section 2")
    parser.add_argument("--class-sizes", type=int, nargs="+", default=[25, 100])
    parser.add_argument(
        "--heavy-stage", default="07_gpt", help="a heavier stage graded as a small class too ('' for none)"
    )
    parser.add_argument("--heavy-size", type=int, default=8)
    parser.add_argument("--bpe-merges", type=int, nargs="+", default=[500, 2000])
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=0,
        metavar="SECONDS",
        help="first wait up to this long for a 1-minute load average below 2.5",
    )
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "RESULTS.md"))
    parser.add_argument(
        "--render", metavar="RESULTS.json", help="only rewrite --out from figures recorded by an earlier run"
    )
    args = parser.parse_args(argv)
    if args.render:
        Path(args.out).write_text(render_all(json.loads(Path(args.render).read_text())))
        print(f"written {args.out} from {args.render}")
        return 0

    from autograder.course import all_stages, get_stage
    from autograder.engine import processes

    processes.become_subreaper()  # anything a graded notebook leaves behind is ours to reap
    given = list(argv if argv is not None else sys.argv[1:])
    command = (
        "make bench        # = .venv/bin/python benchmarks/run.py"
        if not given
        else "python benchmarks/run.py " + " ".join(shlex.quote(a) for a in given)
    )
    if args.wait_quiet:
        quiet, waited = measure.wait_for_quiet(max_wait=args.wait_quiet)
        print(f"waited {waited:.0f} s for the load to fall: {'quiet' if quiet else 'still busy, going on'}")
    stages = [get_stage(s) for s in args.stages] if args.stages else all_stages()
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    t0 = time.perf_counter()
    before = measure.loadavg()[0]
    monitor = measure.LoadMonitor().start()
    data: dict = {"machine": measure.machine(), "command": command, "started": started}
    with tempfile.TemporaryDirectory(prefix="gptcourse-bench-") as tmp:
        work = Path(tmp)
        sections: dict[str, tuple[float, float]] = {}
        if "grading" in args.only:
            from benchmarks import bench_grading

            print(f"== 1. one submission per stage, up to {args.repeats} runs per tool")
            t = monitor.now()
            data["grading"] = bench_grading.one_submission(stages, work / "one", repeats=args.repeats)
            sections[TITLES["grading"]] = (t, monitor.now())
        if "class" in args.only:
            from benchmarks import bench_grading

            print("== 2. a class")
            t = monitor.now()
            data["class"] = bench_grading.a_class(
                get_stage(args.class_stage), work / "class", sizes=tuple(sorted(args.class_sizes))
            )
            if args.heavy_stage:
                data["class_heavy"] = bench_grading.a_class(
                    get_stage(args.heavy_stage), work / "class-heavy", sizes=(args.heavy_size,)
                )
            sections[TITLES["class"]] = (t, monitor.now())
        if "checks" in args.only:
            from benchmarks import bench_checks

            print("== 3. check cells in a kernel")
            t = monitor.now()
            data["checks"] = bench_checks.all_stages(stages)
            sections[TITLES["checks"]] = (t, monitor.now())
        if "bpe" in args.only:
            from benchmarks import bench_bpe

            print("== 4. BPE")
            t = monitor.now()
            data["bpe"] = bench_bpe.run(totals=tuple(args.bpe_merges))
            sections[TITLES["bpe"]] = (t, monitor.now())
    by_section = {name: {**monitor.window(a, b), "minutes": (b - a) / 60} for name, (a, b) in sections.items()}
    load = monitor.stop()
    load.update(before=before, after=measure.loadavg()[0], sections=by_section)
    data["load"] = load
    took = time.perf_counter() - t0
    data["seconds"] = took
    recorded = Path(args.out).with_suffix(".json")
    if recorded.is_file():
        data.update(carry_over(json.loads(recorded.read_text()), args.only))

    out = Path(args.out)
    out.write_text(render_all(data))
    out.with_suffix(".json").write_text(json.dumps(data, indent=1, default=str) + "\n")
    print(f"written {out} and {out.with_suffix('.json')} in {took / 60:.1f} minutes")
    return 0


def carry_over(recorded: dict, ran: list[str]) -> dict:
    """The sections of an earlier run (``recorded``, its RESULTS.json) that this run did not make,
    each noted under ``carried`` with when, by which command and under what load it was made."""
    out: dict = {"carried": {}}
    for section in SECTIONS:
        if section in ran or not any(key in recorded for key in KEYS[section]):
            continue
        out.update({key: recorded[key] for key in KEYS[section] if key in recorded})
        earlier = recorded.get("carried", {}).get(section)
        out["carried"][section] = earlier or {
            "started": recorded["started"],
            "command": recorded["command"],
            "load": recorded.get("load", {}).get("sections", {}).get(TITLES[section]),
        }
    return out if out["carried"] else {}


def render_carried(carried: dict) -> str:
    """The lines that say which sections come from earlier runs."""
    if not carried:
        return ""
    lines = ["Sections carried over from earlier runs (not run again by the command above):", ""]
    for section, how in carried.items():
        load = how.get("load")
        during = f", load mean {load['mean']:.2f}, max {load['max']:.2f}" if load else ""
        lines.append(
            f"- {TITLES[section]}: made on {how['started']} (UTC) by `{how['command'].split('#')[0].strip()}`{during}"
        )
    return "\n".join(lines) + "\n"


def render_all(data: dict) -> str:
    """The whole RESULTS.md from the recorded figures (``data`` as RESULTS.json holds them)."""
    data = _int_keys(data)
    parts = [
        render_machine(data["machine"], data["load"], data["command"], data["started"], data["seconds"]),
        render_carried(data.get("carried", {})),
        render_summary(data),
    ]
    if "grading" in data:
        parts.append(render_grading(data["grading"]))
    if "class" in data:
        parts.append(render_class(data["class"]))
    if "class_heavy" in data:
        parts.append(render_class(data["class_heavy"], heavy=True))
    if "checks" in data:
        parts.append(render_checks(data["checks"]))
    if "bpe" in data:
        parts.append(render_bpe(data["bpe"]))
    return "\n".join(p for p in parts if p).rstrip("\n") + "\n"


def _int_keys(value):
    """JSON turns int keys (merge counts) into strings: turn them back."""
    if isinstance(value, dict):
        return {int(k) if isinstance(k, str) and k.isdigit() else k: _int_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_int_keys(v) for v in value]
    return value


if __name__ == "__main__":
    sys.exit(main())
