"""Grading speed: one submission per stage with gptcourse, its Gradescope and otter zips, plain otter, nbgrader; a class of 100.

Part 1, per stage (every stage ``autograder.course.all_stages()`` finds), the same
answers (the reference solution) graded by

- ``gptcourse grade --stage S --out DIR S.ipynb`` (the CLI, as an instructor types it):
  every public and hidden test, in a confined child;
- the stage's Gradescope zip as Gradescope runs it (gradescope_run.py: a folder laid
  out like ``/autograder``, then the zip's ``run_autograder``, unconfined; the time is
  that of ``run_autograder`` alone): the same tests through the same engine;
- ``otter run -a release/otter/S.zip -o DIR --no-logo S.ipynb``: otter-grader with the
  course's otter zip (``autograder/build/otter_zip.py``): its plugin has the engine grade
  every public and hidden test in a confined child, and otter's kernel runs an empty
  notebook in place of the student's; otter's own start-up and kernel come on top of the
  engine's work;
- ``otter run -a S-otter.zip -o DIR --no-logo S.ipynb``: otter-grader grading natively, as
  an instructor who wraps the course in otter would (plain_otter.py): an otter
  autograder whose test for each question runs that question's PUBLIC tests in the
  student's kernel through the notebook's harness (what ``check`` runs). otter runs the
  public tests only, in the kernel (no hidden tests, no confinement): less work than
  ours. Stage 01 has a second otter row, with hand-written doctests (otter's most native
  form);
- ``nbgrader autograde S --force`` in a temporary course (``generate_assignment`` once,
  then one student whose notebook is nbgrader's release filled with the same answers:
  nbgrader needs its own cell metadata, so it cannot take the gptcourse notebook as is).

The zips and the nbgrader course are built from the current sources into the working
folder by the code ``gptcourse build`` uses (what release/gradescope/<stage>.zip,
release/otter/<stage>.zip and release/nbgrader hold after a build), so that every tool
grades the same version.
Runs are interleaved (gptcourse, Gradescope zip, otter zip, otter, nbgrader, then again) so that a
change of load touches all alike; each figure is the median of the runs: two, a third
only when the first two differ by more than 10 %, and one for a tool whose first run took
over 20 s. The score of every run is recorded with the most the tool can give (otter's
is the public points only).

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

TOOLS = ("gptcourse", "gradescope", "otter_engine", "otter", "nbgrader")  # the columns, in the order they run
OTTER_DOCTESTS_STAGE = "01_tokenisation"  # the stage of plain_otter.CASES


def _stage_inputs(stage, work: Path, course: Path) -> dict:
    """Everything the tools need for one stage, and the most each can give."""
    from autograder.build.fixtures import fixture_file, stage_tests
    from autograder.build.gradescope_zip import build_gradescope_zip
    from autograder.build.nbgrader_course import build_nbgrader_course
    from autograder.build.notebooks import make_notebook, write_notebook
    from autograder.build.otter_zip import build_otter_zip
    from autograder.engine.submission import TAG_CHECK, TAG_DEMO, TAG_TRAIN

    fixture = fixture_file(stage)  # rebuilt here when stale, never inside a timed run
    cases = stage_tests(stage).cases
    reference = make_notebook(stage, "reference")
    folder = work / "submissions" / stage.id
    notebook = folder / f"{stage.id}.ipynb"
    write_notebook(reference, notebook)
    otter_notebook = folder / "otter" / f"{stage.id}.ipynb"
    otter_notebook.parent.mkdir(parents=True, exist_ok=True)
    otter_notebook.write_text(json.dumps(plain_otter.otter_notebook(reference, {TAG_CHECK, TAG_DEMO, TAG_TRAIN})))
    build_nbgrader_course(stage, course, fixture)
    total = round(sum(c.points for c in cases), 6)
    public = plain_otter.public_points(cases)
    inputs = {
        "zip": build_gradescope_zip(stage, work / "gradescope", fixture),
        "otter_engine_zip": build_otter_zip(stage, work / "otter-engine", fixture),
        "otter_zip": plain_otter.write_stage_zip(cases, work / "otter" / f"{stage.id}.zip"),
        "notebook": notebook,
        "otter_notebook": otter_notebook,
        "max": {
            "gptcourse": total,
            "gradescope": total,
            "otter_engine": total,
            "otter": round(sum(public.values()), 6),
            "nbgrader": total,
        },
    }
    if stage.id == OTTER_DOCTESTS_STAGE:
        inputs["otter_doctest_zip"] = plain_otter.write_doctest_zip(work / "otter" / f"{stage.id}-doctests.zip")
        inputs["max"]["otter_doctests"] = float(sum(points for _, points, _ in plain_otter.CASES))
    return inputs


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


def _results_json_score(out: Path) -> float | None:
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


def _summary(runs: list[Measured], scores: list[float | None]) -> dict:
    return {
        "wall_s": median([r.wall_s for r in runs]),
        "tree_peak_mib": median([r.tree_peak_mib for r in runs]),
        "max_rss_mib": median([r.max_rss_mib for r in runs]),
        "runs": [round(r.wall_s, 3) for r in runs],
        "scores": scores,
        "ok": all(r.returncode == 0 for r in runs),
    }


def _check(m: Measured, what: str, say) -> Measured:
    if m.returncode != 0:
        say(f"  {what} exited {m.returncode}:\n{m.output[-1500:]}")
    return m


def _gradescope_run(paths: dict, out: Path) -> tuple[Measured, float | None]:
    """The stage's zip through gradescope_run.py; its time is ``run_autograder``'s alone."""
    m = run_measured(
        [
            str(BIN / "python"),
            str(Path(__file__).with_name("gradescope_run.py")),
            str(paths["zip"]),
            str(paths["notebook"]),
            str(out),
        ]
    )
    try:
        m.wall_s = float(json.loads((out / "tryout.json").read_text())["seconds"])
    except (OSError, KeyError, ValueError):
        m.returncode = m.returncode or 1  # no figure from run_autograder: count the run as failed
    return m, _results_json_score(out)


def _run_tool(tool: str, stage, paths: dict, course: Path, out: Path, say) -> tuple[Measured, float | None]:
    """One timed run of ``tool`` on the stage's reference answers, and the score it gave."""
    out.mkdir(parents=True, exist_ok=True)
    if tool == "gptcourse":
        m = run_measured(
            [str(BIN / "gptcourse"), "grade", "--stage", stage.id, "--out", str(out), str(paths["notebook"])]
        )
        return _check(m, "gptcourse grade", say), _gptcourse_score(out)
    if tool == "gradescope":
        m, score = _gradescope_run(paths, out)
        return _check(m, "the Gradescope zip's run_autograder", say), score
    if tool == "otter_engine":
        m = run_measured(
            [str(BIN / "otter"), "run", "-a", str(paths["otter_engine_zip"]), "-o", str(out), "--no-logo"]
            + [str(paths["notebook"])]
        )
        return _check(m, "otter run (the otter zip)", say), _results_json_score(out)
    if tool in ("otter", "otter_doctests"):
        archive = paths["otter_zip" if tool == "otter" else "otter_doctest_zip"]
        m = run_measured(
            [str(BIN / "otter"), "run", "-a", str(archive), "-o", str(out), "--no-logo", str(paths["otter_notebook"])]
        )
        return _check(m, f"otter run ({tool})", say), _results_json_score(out)
    if tool == "nbgrader":
        m = run_measured([str(BIN / "nbgrader"), "autograde", stage.id, "--force"], cwd=course)
        return _check(m, "nbgrader autograde", say), _nbgrader_score(course, stage.id)
    raise ValueError(f"unknown tool {tool!r}")


def one_submission(
    stages,
    work: Path,
    repeats: int = 3,
    say=print,
    agree: float = 0.10,
    slow_single_s: float = 20.0,
    tools: tuple[str, ...] = TOOLS,
) -> dict:
    """Part 1: each stage's reference notebook graded by every tool, up to ``repeats`` times each.

    Every tool runs at least twice, a third time only when its first two runs differ by
    more than ``agree`` (10 %); a tool whose first run took over ``slow_single_s`` runs once.
    """
    course = work / "course"
    inputs = {s.id: _stage_inputs(s, work, course) for s in stages}
    results: dict = {
        "repeats": repeats,
        "agree": agree,
        "slow_single_s": slow_single_s,
        "tools": list(tools),
        "stages": {},
    }

    if "nbgrader" in tools:
        t = time.perf_counter()
        for stage in stages:
            m = _check(
                run_measured([str(BIN / "nbgrader"), "generate_assignment", stage.id, "--force"], cwd=course),
                "nbgrader generate_assignment",
                say,
            )
            results["stages"].setdefault(stage.id, {})["nbgrader_generate_s"] = m.wall_s
            _nbgrader_submit(stage, course)
        results["nbgrader_generate_total_s"] = time.perf_counter() - t

    for stage in stages:
        paths = inputs[stage.id]
        mine = [*tools, *(["otter_doctests"] if "otter" in tools and "otter_doctest_zip" in paths else [])]
        runs: dict[str, list[Measured]] = {tool: [] for tool in mine}
        scores: dict[str, list[float | None]] = {tool: [] for tool in mine}

        def wanted(tool: str, r: int) -> bool:
            done = [m.wall_s for m in runs[tool]]  # noqa: B023 (called in this iteration only)
            if r == 0:
                return True
            if done[0] > slow_single_s:  # a slow tool runs once
                return False
            if r >= 2 and max(done) <= (1 + agree) * min(done):  # the runs so far agree: enough
                return False
            return True

        for r in range(repeats):
            for tool in mine:
                if wanted(tool, r):
                    m, score = _run_tool(tool, stage, paths, course, work / "out" / stage.id / f"{tool}-{r}", say)
                    runs[tool].append(m)
                    scores[tool].append(score)
        entry = results["stages"].setdefault(stage.id, {})
        if "nbgrader" in mine:
            entry["nbgrader_zeroed"] = nbgrader_zeroed_cells(course, stage.id)
        entry.update({tool: _summary(runs[tool], scores[tool]) for tool in mine})
        entry["scores"] = {tool: scores[tool][-1] for tool in mine}
        entry["max"] = {tool: paths["max"][tool] for tool in mine}
        g = entry["gptcourse"]["wall_s"] if "gptcourse" in mine else None
        say(
            f"  {stage.id}: "
            + ", ".join(
                f"{tool} {entry[tool]['wall_s']:.2f} s"
                + (f" ({g / entry[tool]['wall_s']:.2f}x)" if g and tool != "gptcourse" else "")
                for tool in mine
            )
            + f"; scores {entry['scores']} of {entry['max']}"
        )
    if any("otter_doctests" in e for e in results["stages"].values()):
        results["otter_doctests"] = {
            "stage": OTTER_DOCTESTS_STAGE,
            "cases": plain_otter.number_of_cases(),
            "questions": len(plain_otter.CASES),
        }
    return results


# --- part 2: a class ------------------------------------------------------------------------


def class_notebooks(stage, folder: Path, n: int = 100) -> tuple[list[Path], dict[str, int]]:
    """``n`` submissions: in every 4, a mistake, the reference or an alternative, a mistake, an empty stub."""
    from autograder.authoring.catalogue import catalogue
    from autograder.authoring.variants import variant_notebook
    from autograder.build.notebooks import make_notebook, write_notebook

    mistakes, alternatives = catalogue(stage.id)
    correct = [("reference", make_notebook(stage, "reference"))] + [
        (a.slug, variant_notebook(stage, a.cells)) for a in alternatives
    ]
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

    def __enter__(self) -> CompletionWatcher:
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
                m = run_measured(
                    [
                        str(BIN / "gptcourse"),
                        "grade",
                        "--stage",
                        stage.id,
                        "--out",
                        str(out),
                        "--workers",
                        str(w),
                        "--quiet",
                        *map(str, paths[:n]),
                    ]
                )
            _check(m, f"gptcourse grade (class of {n}, {w} workers)", say)
            done = watcher.times()
            graded = 0
            try:
                graded = sum(1 for r in csv.DictReader((out / "grades.csv").open()) if r["submission"] != "(max)")
            except OSError:
                pass
            row = {
                "workers": w,
                "n": n,
                "wall_s": m.wall_s,
                "tree_peak_mib": m.tree_peak_mib,
                "graded": graded,
                "per_submission_s": m.wall_s / n,
                "per_minute": 60 * n / m.wall_s,
                "first_result_s": done[0] if done else None,
            }
            if len(done) >= 8:
                q = len(done) // 4
                # seconds per submission within each quarter of the completions (after the first result)
                row["quarters_s_per_sub"] = [
                    (done[min(len(done) - 1, (k + 1) * q - 1)] - done[max(0, k * q - 1)]) / (q if k else max(1, q - 1))
                    for k in range(4)
                ]
            results["runs"].append(row)
            say(
                f"  class of {n}, --workers {w}: {m.wall_s:.1f} s, {row['per_minute']:.0f} submissions/min ({graded} graded)"
            )
    return results


def clean(work: Path) -> None:
    shutil.rmtree(work, ignore_errors=True)
