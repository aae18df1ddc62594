"""Grading speed: one submission per stage with gptcourse, otter and nbgrader; a class of 100.

Part 1, per stage, the same answers (the reference solution) graded by

- ``gptcourse grade --stage S --out DIR S.ipynb`` (the CLI, as an instructor types it);
- ``otter run -a S.zip -o DIR --no-logo S.ipynb`` on the same notebook, with the stage's
  Gradescope zip (otter hands grading to our engine through autograder/otter_plugin.py,
  so this is otter's own overhead plus ours);
- ``nbgrader autograde S --force`` in a temporary course (``generate_assignment`` once,
  then one student whose notebook is nbgrader's release filled with the same answers:
  nbgrader needs its own cell metadata, so it cannot take the gptcourse notebook as is).

The zips and the nbgrader course are built from the current sources into the working
folder by the code ``gptcourse build`` uses (what release/gradescope/<stage>.zip and
release/nbgrader hold after a build), so that all three tools grade the same version.
Runs are interleaved (gptcourse, otter, nbgrader, then again) so that a change of load
touches all three alike; each figure is the median of the runs: two, a third only when
the first two differ by more than 10 %, and one for a tool whose first run took over 20 s. For stage 01 a plain
otter autograder (otter's own doctest files run in the student's kernel, see
plain_otter.py) is timed as well.

Part 2: a class of 100 submissions of one stage (a mix of the reference, correct
alternatives, catalogue mistakes and empty stubs, interleaved so that every prefix of
25 has the same mix), graded with ``--workers 1`` and ``--workers 2``, and its first 25
alone; the completion time of each submission comes from its results.json.
"""

from __future__ import annotations

import csv
import json
import shutil
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import plain_otter  # noqa: E402
from benchmarks.measure import BIN, Measured, median, run_measured  # noqa: E402


def _stage_inputs(stage, work: Path, course: Path) -> dict:
    """The zip, the gptcourse notebook and the nbgrader course entry of one stage."""
    from autograder.build.gradescope_zip import build_gradescope_zip
    from autograder.build.nbgrader_course import build_nbgrader_course
    from autograder.build.notebooks import make_notebook, write_notebook
    from autograder.build.fixtures import fixture_file

    fixture = fixture_file(stage)  # rebuilt here when stale, never inside a timed run
    zip_path = build_gradescope_zip(stage, work / "gradescope", fixture)
    notebook = work / "submissions" / stage.id / f"{stage.id}.ipynb"
    write_notebook(make_notebook(stage, "reference"), notebook)
    build_nbgrader_course(stage, course, fixture)
    return {"zip": zip_path, "notebook": notebook}


def _nbgrader_submit(stage, course: Path, student: str = "ref") -> None:
    """nbgrader's released notebook with every stub answered by the reference."""
    from autograder.build.stubs import reference_source

    released = json.loads((course / "release" / stage.id / f"{stage.id}.ipynb").read_text())
    for cell in released["cells"]:
        name = cell.get("metadata", {}).get("gptcourse", {}).get("name")
        if name:
            cell["source"] = reference_source(stage.module, name).rstrip("\n")
    folder = course / "submitted" / student / stage.id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{stage.id}.ipynb").write_text(json.dumps(released))
    (folder / "timestamp.txt").write_text("2025-01-15 10:00:00.000000 UTC")


def _gptcourse_score(out: Path) -> float | None:
    try:
        rows = [r for r in csv.DictReader((out / "grades.csv").open()) if r["submission"] != "(max)"]
        return float(rows[0]["total"])
    except (OSError, KeyError, IndexError, ValueError):
        return None


def _otter_score(out: Path) -> float | None:
    try:
        doc = json.loads((out / "results.json").read_text())
        return float(doc["score"]) if "score" in doc else sum(float(t.get("score", 0)) for t in doc["tests"])
    except (OSError, KeyError, ValueError):
        return None


def _nbgrader_score(course: Path, stage_id: str, student: str = "ref") -> float | None:
    try:
        from nbgrader.api import Gradebook

        with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
            return float(gradebook.find_submission(stage_id, student).score)
    except Exception:
        return None


def nbgrader_zeroed_cells(course: Path, stage_id: str, student: str = "ref") -> list[str]:
    """Grade cells of the autograded notebook that nbgrader scores 0 for an error or stderr output."""
    found = []
    try:
        nb = json.loads((course / "autograded" / student / stage_id / f"{stage_id}.ipynb").read_text())
    except (OSError, ValueError):
        return found
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if not meta.get("grade"):
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                found.append(f"{meta.get('grade_id')}: {out.get('ename')}: {str(out.get('evalue'))[:200]}")
                break
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                text = "".join(out.get("text", "")).strip().splitlines()
                found.append(f"{meta.get('grade_id')}: stderr output ({text[0][:200] if text else ''})")
                break
    return found


def _summary(runs: list[Measured]) -> dict:
    return {
        "wall_s": median([r.wall_s for r in runs]),
        "tree_peak_mib": median([r.tree_peak_mib for r in runs]),
        "max_rss_mib": median([r.max_rss_mib for r in runs]),
        "runs": [round(r.wall_s, 3) for r in runs],
        "ok": all(r.returncode == 0 for r in runs),
    }


def _check(m: Measured, what: str, say) -> Measured:
    if m.returncode != 0:
        say(f"  {what} exited {m.returncode}:\n{m.output[-1500:]}")
    return m


def one_submission(stages, work: Path, repeats: int = 3, plain_otter_stage: str | None = "01_tokenisation", say=print,
                   agree: float = 0.10, slow_single_s: float = 20.0) -> dict:
    """Part 1: each stage's reference notebook graded by the three tools, up to ``repeats`` times each.

    Every tool runs at least twice, a third time only when its first two runs differ by
    more than ``agree`` (10 %); a tool whose first run took over ``slow_single_s`` runs once.
    """
    from autograder.build.notebooks import make_notebook
    from autograder.engine.submission import TAG_CHECK, TAG_DEMO, TAG_TRAIN

    course = work / "course"
    inputs = {s.id: _stage_inputs(s, work, course) for s in stages}
    results: dict = {"repeats": repeats, "agree": agree, "slow_single_s": slow_single_s, "stages": {}}

    t = time.perf_counter()
    for stage in stages:
        m = _check(run_measured([str(BIN / "nbgrader"), "generate_assignment", stage.id, "--force"], cwd=course), "nbgrader generate_assignment", say)
        results["stages"].setdefault(stage.id, {})["nbgrader_generate_s"] = m.wall_s
        _nbgrader_submit(stage, course)
    results["nbgrader_generate_total_s"] = time.perf_counter() - t

    plain = None
    if plain_otter_stage and plain_otter_stage in inputs:
        stage = next(s for s in stages if s.id == plain_otter_stage)
        plain = {
            "zip": plain_otter.write_zip(work / "plain-otter" / f"{stage.id}.zip"),
            "notebook": work / "plain-otter" / stage.id / f"{stage.id}.ipynb",
        }
        nb = plain_otter.otter_notebook(make_notebook(stage, "reference"), {TAG_CHECK, TAG_DEMO, TAG_TRAIN})
        plain["notebook"].parent.mkdir(parents=True, exist_ok=True)
        plain["notebook"].write_text(json.dumps(nb))

    for stage in stages:
        paths = inputs[stage.id]
        runs: dict[str, list[Measured]] = {"gptcourse": [], "otter": [], "nbgrader": []}
        scores: dict[str, float | None] = {}
        if plain and stage.id == plain_otter_stage:
            runs["plain_otter"] = []
        def wanted(tool: str, r: int) -> bool:
            done = [m.wall_s for m in runs[tool]]
            if r == 0:
                return True
            if done[0] > slow_single_s:  # a slow tool runs once
                return False
            if r >= 2 and max(done) <= (1 + agree) * min(done):  # the runs so far agree: enough
                return False
            return True

        for r in range(repeats):
            if wanted("gptcourse", r):
                out = work / "out" / stage.id / f"gptcourse-{r}"
                m = run_measured([str(BIN / "gptcourse"), "grade", "--stage", stage.id, "--out", str(out), str(paths["notebook"])])
                runs["gptcourse"].append(_check(m, "gptcourse grade", say))
                scores["gptcourse"] = _gptcourse_score(out)

            if wanted("otter", r):
                out = work / "out" / stage.id / f"otter-{r}"
                out.mkdir(parents=True, exist_ok=True)
                m = run_measured([str(BIN / "otter"), "run", "-a", str(paths["zip"]), "-o", str(out), "--no-logo", str(paths["notebook"])])
                runs["otter"].append(_check(m, "otter run", say))
                scores["otter"] = _otter_score(out)

            if wanted("nbgrader", r):
                m = run_measured([str(BIN / "nbgrader"), "autograde", stage.id, "--force"], cwd=course)
                runs["nbgrader"].append(_check(m, "nbgrader autograde", say))

            if "plain_otter" in runs and wanted("plain_otter", r):
                out = work / "out" / stage.id / f"plain-otter-{r}"
                out.mkdir(parents=True, exist_ok=True)
                m = run_measured([str(BIN / "otter"), "run", "-a", str(plain["zip"]), "-o", str(out), "--no-logo", str(plain["notebook"])])
                runs["plain_otter"].append(_check(m, "otter run (plain)", say))
                scores["plain_otter"] = _otter_score(out)
        scores["nbgrader"] = _nbgrader_score(course, stage.id)
        entry = results["stages"].setdefault(stage.id, {})
        entry["nbgrader_zeroed"] = nbgrader_zeroed_cells(course, stage.id)
        entry.update({tool: _summary(ms) for tool, ms in runs.items()})
        entry["scores"] = scores
        g, o, n = (entry[k]["wall_s"] for k in ("gptcourse", "otter", "nbgrader"))
        say(f"  {stage.id}: gptcourse {g:.2f} s, otter run {o:.2f} s ({g / o:.2f}x), nbgrader autograde {n:.2f} s ({g / n:.2f}x); scores {scores}")
    if plain:
        results["plain_otter"] = {"stage": plain_otter_stage, "cases": plain_otter.number_of_cases(), "questions": len(plain_otter.CASES)}
    return results


# --- part 2: a class ------------------------------------------------------------------------

def class_notebooks(stage, folder: Path, n: int = 100) -> tuple[list[Path], dict[str, int]]:
    """``n`` submissions: in every 4, a mistake, the reference or an alternative, a mistake, an empty stub."""
    from autograder.build.notebooks import make_notebook, write_notebook
    from autograder.authoring.catalogue import catalogue
    from autograder.authoring.variants import variant_notebook

    mistakes, alternatives = catalogue(stage.id)
    correct = [("reference", make_notebook(stage, "reference"))] + [(a.slug, variant_notebook(stage, a.cells)) for a in alternatives]
    wrong = [(m.slug, variant_notebook(stage, m.cells)) for m in mistakes] or correct
    empty = make_notebook(stage, "student")
    folder.mkdir(parents=True, exist_ok=True)
    paths, mix = [], {"reference or alternative": 0, "mistake": 0, "empty stub": 0}
    mi = ci = 0
    for i in range(n):
        slot = i % 4
        if slot in (0, 2):
            kind, (slug, nb) = "mistake", wrong[mi % len(wrong)]
            mi += 1
        elif slot == 1:
            kind, (slug, nb) = "reference or alternative", correct[ci % len(correct)]
            ci += 1
        else:
            kind, slug, nb = "empty stub", "empty", empty
        mix[kind] += 1
        path = folder / f"s{i:03d}-{slug}.ipynb"
        write_notebook(nb, path)
        paths.append(path)
    return paths, mix


class CompletionWatcher:
    """Notes when each submission's results.json first appears (grade_many rewrites them all
    at the end, so their modification times cannot tell)."""

    def __init__(self, out: Path, names: list[str], every: float = 0.05) -> None:
        self.out, self.pending, self.every = out, set(names), every
        self.seen: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._poll()
            self._stop.wait(self.every)

    def _poll(self) -> None:
        now = time.perf_counter()
        for name in list(self.pending):
            if (self.out / name / "results.json").exists():
                self.seen[name] = now
                self.pending.discard(name)

    def __enter__(self) -> "CompletionWatcher":
        self.started = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def times(self) -> list[float]:
        return sorted(t - self.started for t in self.seen.values())


def a_class(stage, work: Path, sizes=(25, 100), workers=(1, 2), say=print) -> dict:
    """Part 2: the class graded with each worker count; per-submission cost by size and by quarter."""
    paths, mix = class_notebooks(stage, work / "class" / stage.id, max(sizes))
    results: dict = {"stage": stage.id, "mix": mix, "runs": []}
    for w in workers:
        for n in sizes:
            out = work / "class-out" / f"w{w}-n{n}"
            with CompletionWatcher(out, [p.stem for p in paths[:n]]) as watcher:
                m = run_measured([str(BIN / "gptcourse"), "grade", "--stage", stage.id, "--out", str(out), "--workers", str(w), "--quiet", *map(str, paths[:n])])
            _check(m, f"gptcourse grade (class of {n}, {w} workers)", say)
            done = watcher.times()
            graded = 0
            try:
                graded = sum(1 for r in csv.DictReader((out / "grades.csv").open()) if r["submission"] != "(max)")
            except OSError:
                pass
            row = {
                "workers": w, "n": n, "wall_s": m.wall_s, "tree_peak_mib": m.tree_peak_mib, "graded": graded,
                "per_submission_s": m.wall_s / n, "per_minute": 60 * n / m.wall_s,
                "first_result_s": done[0] if done else None,
            }
            if len(done) >= 8:
                q = len(done) // 4
                # seconds per submission within each quarter of the completions (after the first result)
                row["quarters_s_per_sub"] = [(done[min(len(done) - 1, (k + 1) * q - 1)] - done[max(0, k * q - 1)]) / (q if k else max(1, q - 1)) for k in range(4)]
            results["runs"].append(row)
            say(f"  class of {n}, --workers {w}: {m.wall_s:.1f} s, {row['per_minute']:.0f} submissions/min ({graded} graded)")
    return results


def clean(work: Path) -> None:
    shutil.rmtree(work, ignore_errors=True)
