"""Earlier stages' answers in later notebooks: withheld until the instructor releases them, said by
the build, and never graded twice (grading runs the course's versions in their cells, and shows
no line of them)."""

import ast
import json
import shutil

import pytest

from autograder.build.answers import answers_line, answers_report, given_answers
from autograder.build.fixtures import fixture_file, stage_tests
from autograder.build.nbgrader_course import nbgrader_notebook
from autograder.build.notebooks import dumps_notebook, make_notebook, write_notebook
from autograder.build.release import build_stages, build_student, rebuilt_note, write_answers
from autograder.build.stubs import make_stub, reference_source
from autograder.course import ASSIGNMENTS, ROOT, all_stages, get_stage
from autograder.engine.pipeline import grade_submission
from autograder.engine.runner import Limits
from autograder.engine.submission import TAG_ANSWER, TAG_GIVEN
from autograder.errors import UsageError

LATER = [s for s in all_stages() if given_answers(s)]


def body_lines(name: str) -> set[str]:
    """The lines of an answer's code that its stub does not have (whole statements of 20+ characters: shorter ones, such as `super().__init__()`, say nothing)."""
    module, _, short = name.rpartition(".")
    source = reference_source(module, short)
    stub = {line.strip() for line in make_stub(source, short).splitlines()}
    lines = set()
    for line in source.splitlines():
        line = line.strip()
        try:
            ast.parse(line)
        except SyntaxError:
            continue
        if len(line) >= 20 and line not in stub:
            lines.add(line)
    return lines


def answer_cells(notebook: dict) -> dict[str, dict]:
    return {
        c["metadata"]["gptcourse"]["answer"]: c
        for c in notebook["cells"]
        if "answer" in c["metadata"].get("gptcourse", {})
    }


def course_copy(tmp_path, released=()):
    """A copy of the course's stage folders, with the answers of ``released`` stages released."""
    root = tmp_path / "assignments"
    shutil.copytree(ASSIGNMENTS, root, ignore=shutil.ignore_patterns("__pycache__"))
    for stage_id in released:
        (root / stage_id / "release.json").write_text('{"answers_released": true}\n', encoding="utf-8")
    return root


def test_the_stages_that_build_on_earlier_answers_are_those_the_course_names():
    wanted = {
        "04_masking": {"attention.scaled_dot_product_attention", "attention.TokenPositionEmbedding"},
        "05_multihead": {"masking.causal_mask", "masking.padding_mask"},
        "07_gpt": {"blocks.LayerNorm", "blocks.FeedForward", "blocks.TransformerBlock", "tokenisation.encode"},
        "08_generation": {"gpt.GPT", "gpt.get_device", "gpt.train", "blocks.TransformerBlock", "tokenisation.decode"},
        "09_rnn": {"tokenisation.NGramLM", "gpt.GPT", "gpt.train_step", "gpt.estimate_loss"},
        "10_encoders": {"masking.shift_right"},
    }
    found = {s.id: {a.name for a in given_answers(s)} for s in LATER}
    for stage_id, names in wanted.items():
        assert names <= found[stage_id], stage_id
    assert not {a.name for s in LATER for a in given_answers(s)} & {"data.load_corpus", "gpt.GPTConfig"}


@pytest.mark.parametrize("stage", LATER, ids=lambda s: s.id)
def test_a_student_notebook_withholds_earlier_answers_by_default(stage):
    notebook = make_notebook(stage, "student")
    cells = answer_cells(notebook)
    assert set(cells) == {a.name for a in given_answers(stage)}
    for name, cell in cells.items():  # (that no line of them is elsewhere in it: "release keeps the answers")
        assert TAG_ANSWER in cell["metadata"]["tags"] and not cell["metadata"]["gptcourse"]["given"]
        assert f"Paste your {name.rpartition('.')[2]} of stage" in cell["source"]
    assert "earlier answers given: none" in answers_line(stage, notebook)


def test_a_released_stage_s_answers_are_given_and_the_others_stay_withheld(tmp_path):
    root = course_copy(tmp_path, released=["05_multihead"])
    stage = get_stage("06_blocks", root)
    notebook = make_notebook(stage, "student")
    cells = answer_cells(notebook)
    for name in ("multihead.split_heads", "multihead.merge_heads", "multihead.MultiHeadAttention"):
        assert cells[name]["metadata"]["gptcourse"]["given"] and TAG_GIVEN in cells[name]["metadata"]["tags"]
        assert body_lines(name) and all(line in cells[name]["source"] for line in body_lines(name))
    assert not cells["masking.causal_mask"]["metadata"]["gptcourse"]["given"]
    note = next(c["source"] for c in notebook["cells"] if c["source"].startswith("**Code of earlier stages.**"))
    assert "course's `split_heads`, `merge_heads` and `MultiHeadAttention` (stage 05)" in note
    assert "Paste your own `causal_mask` (stage 04)" in note and "answers of stage 04" in note
    assert answers_line(stage, notebook) == (
        "06_blocks: earlier answers given: split_heads, merge_heads, MultiHeadAttention; "
        "withheld (students paste their own): causal_mask"
    )
    # nbgrader's source follows the same choice: given code locked, a withheld answer the student's to fill
    source = answer_cells(nbgrader_notebook(stage))
    assert source["multihead.MultiHeadAttention"]["metadata"]["nbgrader"]["locked"]
    assert "nbgrader" not in source["masking.causal_mask"]["metadata"]
    assert "Paste your causal_mask" in source["masking.causal_mask"]["source"]


def test_a_release_file_with_a_mistake_is_refused_by_name(tmp_path):
    root = course_copy(tmp_path)
    for text, words in [
        ('{"answers_released": "yes"}', "must be true or false"),
        ('{"answer_released": true}', "unknown option 'answer_released'"),
        ("[true]", "JSON object"),
        ("{", "not valid JSON"),
    ]:
        (root / "05_multihead" / "release.json").write_text(text, encoding="utf-8")
        with pytest.raises(UsageError, match=words) as caught:
            make_notebook(get_stage("06_blocks", root), "student")
        assert "05_multihead/release.json" in str(caught.value)


def test_the_build_says_and_writes_which_answers_each_notebook_holds(tmp_path):
    root = course_copy(tmp_path, released=["04_masking"])
    out = tmp_path / "release"
    said = []
    for stage_id in ("05_multihead", "06_blocks"):
        build_student(get_stage(stage_id, root), out, said.append)
    write_answers(out, said.append, all_stages(root))
    assert (
        "05_multihead: earlier answers given: causal_mask, padding_mask; withheld (students paste their own): none"
        in said
    )
    report = (out / "answers.md").read_text(encoding="utf-8")
    assert "| 05_multihead | 04_masking: causal_mask, padding_mask | none |" in report
    assert (
        "| 06_blocks | 04_masking: causal_mask | 05_multihead: split_heads, merge_heads, MultiHeadAttention |"
    ) in report
    assert "| 07_gpt | (not built) | |" in report
    # each stage's answers that later notebooks use, to post after its deadline: code that runs
    posted = (out / "answers" / "05_multihead.py").read_text(encoding="utf-8")
    namespace: dict = {}
    exec(compile(posted, "05_multihead.py", "exec"), namespace)
    assert {"split_heads", "merge_heads", "MultiHeadAttention"} <= set(namespace)
    assert not (out / "answers" / "10_encoders.py").exists()  # no later stage uses 10's


def test_rebuilding_a_released_stage_rebuilds_the_later_notebooks_that_use_its_answers(tmp_path):
    """``gptcourse build --stages 03`` after writing 03's release.json: 04 and 07, whose notebooks
    hold 03's code, are rebuilt and said to be; 05 (none of 03's code) is not."""
    root = course_copy(tmp_path, released=["03_attention"])
    stages = all_stages(root)
    out = tmp_path / "release"
    for stage_id in ("03_attention", "04_masking", "07_gpt"):  # fresh fixtures: the copy's sources are the course's
        (out / "fixtures").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(fixture_file(get_stage(stage_id)), out / "fixtures" / f"{stage_id}.json")
    users = sorted(s.id for s in stages if any(a.stage.id == "03_attention" for a in given_answers(s)))
    assert users == ["04_masking", "07_gpt"]
    said = []
    build_stages([get_stage("03", root)], out, said.append, stages)
    for stage_id in users:
        assert (
            f"{stage_id}: rebuilt too: its notebook holds answers of 03_attention, given or withheld as "
            f"{root / '03_attention' / 'release.json'} says" in said
        )
        text = (out / "student" / stage_id / f"{stage_id}.ipynb").read_text(encoding="utf-8")
        assert text == dumps_notebook(make_notebook(get_stage(stage_id, root), "student"))
        built = json.loads(text)
        cells = answer_cells(built)
        released = [name for name, cell in cells.items() if name.startswith("attention.")]
        assert released and all(cells[name]["metadata"]["gptcourse"]["given"] for name in released)
        assert (out / "nbgrader" / "source" / stage_id / f"{stage_id}.ipynb").is_file()
    assert not (out / "student" / "05_multihead").exists()
    assert not [line for line in said if line.startswith("05_multihead")]
    assert "| 04_masking | 03_attention: scaled_dot_product_attention, TokenPositionEmbedding | none |" in (
        out / "answers.md"
    ).read_text(encoding="utf-8")


def test_the_rebuild_note_cites_a_release_json_only_where_there_is_one(tmp_path):
    # `build --stages 04` said 06's answers of 04 were "given or withheld as .../04_masking/release.json
    # says", a file that did not exist (it is optional: without it the answers are withheld)
    root = course_copy(tmp_path, released=["03_attention"])
    note = rebuilt_note(get_stage("07", root), [get_stage("03", root), get_stage("04", root)])
    assert note == (
        "07_gpt: rebuilt too: its notebook holds answers of 03_attention, 04_masking, given or withheld as "
        f"{root / '03_attention' / 'release.json'} says; withheld (04_masking has no release.json)"
    )


def test_the_committed_report_describes_the_committed_notebooks():
    assert (ROOT / "release" / "answers.md").read_text(encoding="utf-8") == answers_report(
        ROOT / "release" / "student", all_stages()
    )


def _grade(stage, notebook, tmp_path, name):
    path = tmp_path / f"{name}.ipynb"
    write_notebook(notebook, path)
    return grade_submission(path, stage_tests(stage), Limits(), name)


def test_grading_runs_the_course_s_earlier_answers_and_shows_no_line_of_them(tmp_path):
    """05's own code is the reference's; its earlier answers (04's masks) are missing, wrong or
    right: every version earns the same full marks. A cell that makes the course's code fail, or
    asks for its source, learns nothing of it."""
    stage = get_stage("05_multihead")
    full = sum(p for _, p in stage.tests().questions())
    withheld = make_notebook(stage, "reference", answers="released")
    wrong = make_notebook(stage, "reference")
    for cell in answer_cells(wrong).values():
        cell["source"] = (
            "def causal_mask(T, device=None):\n    return 0\n\n\ndef padding_mask(lengths, T=None):\n    return 0\n"
        )
    probing = make_notebook(stage, "reference")
    probing["cells"].append(
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": "causal_mask(-1)"}
    )
    probing["cells"].append(
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": "import inspect\nprint(inspect.getsource(padding_mask))",
        }
    )
    secret = body_lines("masking.causal_mask") | body_lines("masking.padding_mask")
    for name, notebook in (("withheld", withheld), ("wrong", wrong), ("probing", probing)):
        graded = _grade(stage, notebook, tmp_path, name)
        assert graded.total == full, (name, [r.message for r in graded.results if not r.passed][:3])
        shown = "\n".join([*graded.outcome.cell_errors.values(), graded.outcome.output])
        assert not [line for line in secret if line in shown], (name, shown)
    errors = list(graded.outcome.cell_errors.values())
    assert any("ValueError" in e for e in errors) and any("source" in e for e in errors), errors


def test_changed_course_code_of_an_earlier_answer_makes_grade_changed_regrade():
    """``gptcourse grade --changed`` regrades what was graded with other tests: the course's code of
    the earlier answers is part of what grading used."""
    from autograder.channels.local.folder import tests_fingerprint

    tests = stage_tests(get_stage("05_multihead"))
    assert set(tests.given) == {"masking.causal_mask", "masking.padding_mask"}
    edited = tests.with_fixtures(tests.fixtures, {**tests.given, "masking.causal_mask": "def causal_mask(T): ..."})
    assert tests_fingerprint(edited) != tests_fingerprint(tests)
    assert tests_fingerprint(tests.with_fixtures(tests.fixtures, tests.given)) == tests_fingerprint(tests)


def test_an_import_an_earlier_answer_needs_belongs_to_the_imports_cell_where_a_replaced_answer_cannot_take_it(
    tmp_path,
):
    # 08 shows stage 05's MultiHeadAttention, whose `/ math.sqrt(D)` needs math: a student who
    # pastes their own class over the cell (stage 05 imported math in its imports cell) would
    # replace the `import math` the build put above the course's class, and every demo would fail
    from autograder.authoring.lint import static_problems

    root = course_copy(tmp_path)
    source = root / "08_generation" / "notebook.md"
    text = source.read_text(encoding="utf-8")
    source.write_text(text.replace("import functools\nimport math\n", "import functools\n", 1), encoding="utf-8")
    problems = static_problems(get_stage("08", root=root))
    assert any(
        "`reference multihead.MultiHeadAttention` is an earlier stage's answer" in p
        and "needs import math: put that in the notebook's imports cell" in p
        for p in problems
    ), problems
    assert static_problems(get_stage("08")) == []
