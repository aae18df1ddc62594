"""The rules that need no grading (``gptcourse check-stage --quick``): each a function of a
``Subject``, the stage with what the rules read of it loaded once.

Example::

    >>> from autograder.course import get_stage
    >>> subject = Subject(get_stage("03"))
    >>> files(subject), suites_load(subject)
    ([], [])
"""

import ast
import doctest
import importlib
import inspect
import io
import re
import tokenize
from functools import cached_property
from pathlib import Path

from autograder.build.answers import given_answers
from autograder.build.clauses import read_clauses
from autograder.build.notebooks import (
    answer_import_problems,
    check_cell_question,
    check_cells_problems,
    make_notebook,
    release_folder,
    stale_release,
    unpack_harness,
)
from autograder.build.source import Block, SourceError, parse_source
from autograder.build.stubs import make_stub, reference_source
from autograder.build.written import written_questions
from autograder.course import Stage
from autograder.engine.submission import TAG_GIVEN, TAG_HARNESS
from autograder.engine.suites import StageTests
from autograder.kit import PASTED

from .catalogue import Variant, catalogue
from .claims import Claim, stage_claims, unmeasured_figures, unsourced
from .clauses import clause_problems, uncited_tests
from .copies import copied_references
from .probe_sizes import sizes_apart_problems
from .readme_figures import readme_problems
from .references import folder_problems, outside_references
from .reuse import trust_problems
from .spec import question_text, return_dtypes, section_text, spec_file, spec_problems
from .suite_copies import repeated_helpers
from .verdicts import verdict_problems

MIN_MISTAKES = 4
WRITTEN = (2, 4)  # the written questions a stage asks, at least and at most
MIN_INTRODUCTION = 60  # words before the check harness: the title and what the stage is about
KIT = Path(__file__).resolve().parent.parent / "kit"


class Subject:
    """A stage and what the rules read of it, each loaded on first use (a rule that loads
    something is ``blocking``: the rules after it run only once it holds)."""

    def __init__(self, stage: Stage) -> None:
        self.stage = stage

    @cached_property
    def blocks(self) -> list[Block]:
        return parse_source(self.stage.source)

    @cached_property
    def reference(self):
        return importlib.import_module(f"solutions.{self.stage.module}")

    @cached_property
    def claims(self) -> list[Claim]:
        """The stage's ``CLAIMS`` (``claims.py``; none without one)."""
        return stage_claims(self.stage)

    @cached_property
    def tests(self) -> StageTests:
        return self.stage.tests()

    @cached_property
    def qids(self) -> list[str]:
        return [q for q, _ in self.tests.questions()]

    @cached_property
    def stubs(self) -> list[str]:
        return [b.arg for b in self.blocks if b.kind == "stub"]

    @cached_property
    def spec_section(self) -> str | None:
        """The stage's section of the course specification (``SPEC.md § <stage>``); None if it has none."""
        return section_text(spec_file(self.stage).read_text(encoding="utf-8"), self.stage.id)

    @cached_property
    def question_stubs(self) -> dict[str, list[str]]:
        """Each question's stubs: those between its check cell and the check cell before it."""
        stubs: dict[str, list[str]] = {}
        pending: list[str] = []
        for block in self.blocks:
            if block.kind == "stub":
                pending.append(block.arg)
            elif block.kind == "check":
                stubs[block.arg], pending = pending, []
        return stubs

    @cached_property
    def variants(self) -> tuple[list[Variant], list[Variant]]:
        return catalogue(self.stage)

    @cached_property
    def student_cells(self) -> list[dict]:
        """The cells of the student notebook, as ``gptcourse build`` writes it."""
        return make_notebook(self.stage, "student")["cells"]


def files(subject: Subject) -> list[str]:
    """The folder has every required file."""
    missing = subject.stage.missing()
    return [f"{subject.stage.folder} has no {', '.join(missing)}"] if missing else []


def reference_imports(subject: Subject) -> list[str]:
    """``reference.py`` imports (as ``solutions.<name>``)."""
    subject.reference  # noqa: B018 (import it; what it raises is the problem)
    return []


def source_parses(subject: Subject) -> list[str]:
    """``notebook.md`` parses into blocks."""
    subject.blocks  # noqa: B018 (parse it; a SourceError is the problem)
    return []


def names_exist(subject: Subject) -> list[str]:
    """Every stub names a definition of the reference, every given ``reference`` block one of
    an earlier stage's, and the harness comes first."""
    problems = [
        f"`stub {name}`: the reference defines no {name}"
        for name in subject.stubs
        if not hasattr(subject.reference, name)
    ]
    for block in (b for b in subject.blocks if b.kind == "reference"):
        module, _, name = block.arg.rpartition(".")
        try:
            found = hasattr(importlib.import_module(f"solutions.{module}"), name)
        except ImportError:
            found = False
        if not found:
            problems.append(f"`reference {block.arg}` names nothing in an earlier stage's reference")
    if [b.kind for b in subject.blocks if b.kind != "markdown"][:1] != ["harness"]:
        problems.append("the first code block must be `python harness` (check() must exist before any check cell)")
    return problems


def introduction(subject: Subject) -> list[str]:
    """The notebook opens, before the check harness, with its title (a ``# `` heading) and an
    introduction of at least ``MIN_INTRODUCTION`` words: what a preview or an export shows first."""
    opening = []
    for block in subject.blocks:
        if block.kind != "markdown":
            break
        opening.append(block.text)
    text = "\n".join(opening)
    problems = [] if text.lstrip().startswith("# ") else ["the notebook must open with its title, a `# ` heading"]
    if len(text.split()) < MIN_INTRODUCTION:
        problems.append(
            f"the text before the harness has {len(text.split())} words: open with at least {MIN_INTRODUCTION}"
            " (what the stage is about), which a preview or an export shows first"
        )
    return problems


def suites_load(subject: Subject) -> list[str]:
    """``public.py`` and ``hidden.py`` load into one set of uniquely named tests."""
    subject.tests  # noqa: B018 (load them; what they raise is the problem)
    return []


def questions_complete(subject: Subject) -> list[str]:
    """Every question has public and hidden tests and exactly one check cell; the stage asks two
    to four written questions, each with an id of its own, positive points, a prompt and a rubric."""
    try:
        asked = len(written_questions(subject.stage))
        problems = [] if WRITTEN[0] <= asked <= WRITTEN[1] else [f"{asked} written questions: a stage asks 2 to 4"]
    except SourceError as exc:
        problems = [str(exc)]
    for qid in subject.qids:
        kinds = {c.public for c in subject.tests.cases if c.qid == qid}
        if True not in kinds:
            problems.append(f"question {qid} has no public test")
        if False not in kinds:
            problems.append(f"question {qid} has no hidden test")
    return problems + check_cells_problems(subject.stage)


def pasteable(subject: Subject) -> list[str]:
    """The public suite can be pasted into the notebook beside the kit."""
    return public_suite_problems(subject.stage)


def raw_outputs(subject: Subject) -> list[str]:
    """No probe, nor a suite helper it reaches, compares the student's objects (``verdicts``)."""
    problems = []
    for path in (subject.stage.public, subject.stage.hidden):
        problems += verdict_problems(path.read_text(encoding="utf-8"), path.name)
    return problems


def answers_bring_no_imports(subject: Subject) -> list[str]:
    """Every import an earlier stage's answer needs is in the notebook's imports cell, never at
    the top of the answer's cell, which students replace with their own code."""
    return answer_import_problems(subject.stage)


def no_repeated_helpers(subject: Subject) -> list[str]:
    """No function or class of ``hidden.py`` repeats one of ``public.py`` (docstrings, annotations
    and its name aside): the hidden suite imports it (``from public import ...``)."""
    read = [path.read_text(encoding="utf-8") for path in (subject.stage.public, subject.stage.hidden)]
    return repeated_helpers(*read)


def clauses_covered(subject: Subject) -> list[str]:
    """``clauses.md`` has a table for every question, and every clause a hidden test of it."""
    by_question = {q: {c.key for c in subject.tests.cases if c.qid == q} for q in subject.qids}
    hidden = {c.key for c in subject.tests.cases if not c.public}
    return clause_problems(subject.stage.folder / "clauses.md", by_question, hidden)


def tests_serve_clauses(subject: Subject) -> list[str]:
    """Every test is cited by a clause of its question in ``clauses.md``: each test names the clause it enforces."""
    by_question = {q: [c.key for c in subject.tests.cases if c.qid == q] for q in subject.qids}
    return uncited_tests(subject.stage.folder / "clauses.md", by_question)


def reuse_trusted(subject: Subject) -> list[str]:
    """No suite reads a function's code, docstring, defaults or signature without calling it, and
    the reference runs none of its functions in another process: what lets a variant's test
    that never called the functions it changes take the reference's output (``reuse``)."""
    stage = subject.stage
    return trust_problems(*(path.read_text(encoding="utf-8") for path in (stage.public, stage.hidden, stage.reference)))


def sizes_apart(subject: Subject) -> list[str]:
    """Every call the probes make, on the reference, to a function or class the hidden suite's
    ``SIZES_APART`` names has its declared sizes all different (``probe_sizes``), so that no
    transpose or reshape that mixes two sizes passes by luck."""
    return sizes_apart_problems(subject.stage, subject.tests)


def stubs_give_no_answer(subject: Subject) -> list[str]:
    """No stub's message (the text of its ``stub`` block, which its ``NotImplementedError`` raises)
    nor docstring holds a line of the reference's body that computes something (``body_lines``):
    students read both."""
    problems = []
    for block in (b for b in subject.blocks if b.kind == "stub" and hasattr(subject.reference, b.arg)):
        problems += stub_leaks(block.arg, reference_source(subject.stage.module, block.arg), block.text)
    return problems


def stub_leaks(name: str, source: str, pointer: str) -> list[str]:
    """Where the stub of ``name`` made of ``source`` (a reference) and ``pointer`` (its stub block's
    text) gives a line of the reference's body away.

    >>> source = "def f(ids, pad):\\n    'Count.'\\n    return (ids != pad).sum(dim=1)\\n"
    >>> print(*stub_leaks("f", source, "hint: return (ids!=pad).sum(dim=1)"))
    `stub f`: its message holds `return (ids != pad).sum(dim=1)` of the reference's body: students read the answer
    """
    texts = [("its message", pointer)]
    texts += [(f"the docstring of {n}", doc) for n, doc in _docstrings(make_stub(source, name, pointer))]
    lines = body_lines(source)
    return [
        f"`stub {name}`: {where} holds `{line}` of the reference's body: students read the answer"
        for where, text in texts
        for line in lines
        if _key(line) in _key(text)
    ]


MIN_LEAK = 12  # spaces aside: `return self.proj(x)` is long enough to give an answer away, `return x` is not
# what a line may hold and still compute nothing: names, attributes, constants, tuples, returns and
# assignments of them, and calls of the function's own parameters (the interface its docstring states)
_PLUMBING = (
    ast.Module,
    ast.Expr,
    ast.Assign,
    ast.Return,
    ast.Pass,
    ast.Name,
    ast.Load,
    ast.Store,
    ast.Attribute,
    ast.Constant,
    ast.Tuple,
    ast.Starred,
    ast.keyword,
    ast.Call,
)


def body_lines(source: str) -> list[str]:
    """The lines of the functions' bodies in ``source`` (docstrings and comments left out) that
    compute something (``_computes``) and are at least ``MIN_LEAK`` characters long, spaces aside.

    >>> body_lines("def f(x, y):\\n    'Doc.'\\n    z = (x != y).sum(dim=1)  # count\\n    return y(z)\\n")
    ['z = (x != y).sum(dim=1)']
    """
    lines = source.splitlines()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            row, col = token.start
            lines[row - 1] = lines[row - 1][:col]
    found: dict[str, None] = {}  # in order, once each
    for func in (n for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        given = {a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)}
        docstring = ast.get_docstring(func, clean=False) is not None
        for node in func.body[docstring:]:
            for code in (line.strip() for line in lines[node.lineno - 1 : node.end_lineno]):
                if len(_key(code)) >= MIN_LEAK and _computes(code, given):
                    found[code] = None
    return list(found)


def _computes(code: str, given: set[str]) -> bool:
    """Whether a line of code computes something: it holds more than ``_PLUMBING`` (a line that is
    part of a longer statement always counts)."""
    for text in (code, code + " pass"):  # `if x.dim() != 2:` parses with a body
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        return any(
            not isinstance(node, _PLUMBING)
            or isinstance(node, ast.Call)
            and not (isinstance(node.func, ast.Name) and node.func.id in given)
            for node in ast.walk(tree)
        )
    return True


def _key(line: str) -> str:
    return "".join(line.split())


def _docstrings(source: str) -> list[tuple[str, str]]:
    """``(name, docstring)`` of every function and class in ``source`` that has one."""
    nodes = (
        n for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    )
    return [(node.name, doc) for node in nodes if (doc := ast.get_docstring(node, clean=False))]


def catalogue_loads(subject: Subject) -> list[str]:
    """``mistakes.py`` defines ``MISTAKES`` and ``ALTERNATIVES`` as lists of ``Variant``."""
    subject.variants  # noqa: B018 (load it; what it raises is the problem)
    return []


def catalogue_complete(subject: Subject) -> list[str]:
    """At least ``MIN_MISTAKES`` mistakes and one alternative per question, each variant naming
    a question and stub cells that exist (a mistake: clause ids of its question), no two sharing a file name."""
    mistakes, alternatives = subject.variants
    problems = []
    for variant in mistakes + alternatives:
        if variant.qid not in subject.qids:
            problems.append(f"variant {variant.slug!r} names no question of the stage")
        unknown = sorted(set(variant.cells) - set(subject.stubs))
        if unknown:
            problems.append(
                f"variant {variant.slug!r} replaces {', '.join(unknown)}, which is no stub cell of the notebook"
            )
    clauses = read_clauses(subject.stage.folder / "clauses.md")
    for variant in mistakes:
        ids = {c.id for c in clauses.get(variant.qid, []) if c.id}
        unknown = [i for i in variant.clauses if i not in ids]
        if unknown:
            problems.append(
                f"mistake {variant.slug!r} declares {', '.join(map(repr, unknown))}, which names no clause of "
                f"{variant.qid} in clauses.md (its ids: {', '.join(sorted(ids)) or 'none'})"
            )
    problems += [
        f"alternative {v.slug!r} declares clauses it breaks: a correct answer breaks none"
        for v in alternatives
        if v.clauses
    ]
    for qid in subject.qids:
        count = sum(m.qid == qid for m in mistakes)
        if count < MIN_MISTAKES:
            problems.append(f"question {qid} has {count} catalogued mistakes; at least {MIN_MISTAKES} are needed")
        if not any(a.qid == qid for a in alternatives):
            problems.append(f"question {qid} has no correct alternative in the catalogue")
    slugs = [v.slug for v in mistakes + alternatives]
    problems += [f"two variants share the file name {s!r}" for s in sorted({s for s in slugs if slugs.count(s) > 1})]
    return problems


def no_copied_references(subject: Subject) -> list[str]:
    """No string of ``mistakes.py`` is a hand copy of a reference function or class (docstrings and
    annotations aside), nor is a template filled with its right slots (a template helper such as
    ``_block(**changes)`` called with no changes, ``copies``): a slip's base is ``reference(module,
    name)``, which follows the reference."""
    source = subject.stage.mistakes.read_text(encoding="utf-8")
    return [f"{copy}: slip reference(module, name) instead" for copy in copied_references(source, subject.stage.module)]


def inside_the_project(subject: Subject) -> list[str]:
    """Nothing in the stage's files, nor in its section of the course specification, points at a
    file outside the project: every file named exists in it, no path is a machine's own, every
    ``SPEC.md § <section>`` cited exists."""
    spec = spec_file(subject.stage)
    section = [
        f"SPEC.md § {subject.stage.id}: {p}" for p in outside_references(subject.spec_section or "", spec.parent)
    ]
    return folder_problems(subject.stage.folder) + section


def specified(subject: Subject) -> list[str]:
    """The stage's section of the course specification (``SPEC.md § <stage>``) names every question,
    every name students write with each parameter and default, and ``clauses.md`` and the notebook cite it."""
    section = subject.spec_section
    written = {name: getattr(subject.reference, name) for name in subject.stubs if hasattr(subject.reference, name)}
    return spec_problems(subject.stage, subject.qids, written, section)


def stated_dtypes_tested(subject: Subject) -> list[str]:
    """A question whose item in ``SPEC.md`` or whose stubs' docstrings state the dtype of what a
    function returns (``returns a torch.long tensor``, ``-> (V, V)` float32``) has a test of it,
    cited by a clause whose id starts with ``dtype``: else a student returning another dtype
    loses nothing."""
    section = subject.spec_section or ""
    clauses = read_clauses(subject.stage.folder / "clauses.md")
    problems = []
    for qid in subject.qids:
        if any(c.id.lower().startswith("dtype") and c.tests for c in clauses.get(qid, [])):
            continue
        texts = [(f"SPEC.md § {subject.stage.id}", question_text(section, qid))] + [
            (f"the docstring of {name}", inspect.getdoc(getattr(subject.reference, name)) or "")
            for name in subject.question_stubs.get(qid, [])
            if hasattr(subject.reference, name)
        ]
        for where, text in texts:
            for dtype in dict.fromkeys(return_dtypes(text)):
                problems.append(
                    f"question {qid}: {where} states {dtype} for what it returns, but no clause of {qid} whose id "
                    "starts with dtype cites a test: add a test (check=dtypes()) and a `dtype` clause citing it"
                )
    return problems


_EXCEPTION = r"[A-Z]\w*Error"  # an exception's name, as docstrings and clauses write it
EXCEPTION = re.compile(rf"\b{_EXCEPTION}\b")


def stated_exceptions(obj) -> list[str]:
    """The exceptions the docstrings of ``obj`` name (a class's: its own and its methods').

    >>> class Cell:
    ...     "A cell."
    ...     def forward(self, x):
    ...         "Raises: ValueError: if x is not 2-D."
    >>> stated_exceptions(Cell), stated_exceptions(len)
    (['ValueError'], [])
    """
    docs = [inspect.getdoc(obj) or ""]
    if inspect.isclass(obj):
        docs += [inspect.getdoc(member) or "" for member in vars(obj).values() if inspect.isfunction(member)]
    return list(dict.fromkeys(EXCEPTION.findall("\n".join(docs))))


def exceptions_specified(subject: Subject) -> list[str]:
    """Every exception a stub's docstring names (its class's methods' included) is named in the
    item of its question in ``SPEC.md``: what students are told a function raises is in the contract."""
    section = subject.spec_section or ""
    problems = []
    for qid, names in subject.question_stubs.items():
        item = question_text(section, qid)
        for name in names:
            for error in stated_exceptions(getattr(subject.reference, name, None)):
                if not re.search(rf"\b{error}\b", item):
                    problems.append(
                        f"question {qid}: the docstring of {name} names {error}, which its item in "
                        f"SPEC.md § {subject.stage.id} does not: say there when {name} raises it"
                    )
    return problems


# what a clause may ask that a student must have read: an exception's name or a dtype
ASKED = re.compile(rf"\b(?:{_EXCEPTION}|b?float16|float32|float64|u?int8|int16|int32|int64|torch\.long|torch\.bool)\b")
SAME_DTYPE = {"torch.long": "int64", "int64": "torch.long"}


def question_texts(cells: list[dict]) -> dict[str, str]:
    """What a student reads for each question: the cells after the check cell of the question
    before it, up to and with its own check cell (its prose, its stubs with their docstrings).

    >>> cell = lambda text, tags=(): {"source": text, "metadata": {"tags": list(tags)}}
    >>> question_texts([cell("intro"), cell("def f(): ..."), cell('check("f")', ["gptcourse:check"]), cell("after")])
    {'f': 'intro\\ndef f(): ...\\ncheck("f")'}
    """
    texts, pending = {}, []
    for cell in cells:
        pending.append("".join(cell["source"]))
        if qid := check_cell_question(cell):
            texts[qid], pending = "\n".join(pending), []
    return texts


def clauses_stated(subject: Subject) -> list[str]:
    """Every exception and dtype a clause asks for (``raises `ValueError```, ``float32``) is named
    where students read its question (the notebook from the check cell before it to its own,
    stubs and docstrings included): no test asks more than the notebook says, as far as names go."""
    texts = question_texts(subject.student_cells)
    problems = []
    for qid, clauses in read_clauses(subject.stage.folder / "clauses.md").items():
        read = texts.get(qid, "")
        for clause in clauses:
            for word in dict.fromkeys(ASKED.findall(clause.text)):
                if not re.search(rf"\b{re.escape(word)}\b", read) and SAME_DTYPE.get(word, word) not in read:
                    problems.append(
                        f"question {qid}, clause {clause.id!r} asks for {word}, which students never read for {qid}"
                        " (its prose, stubs and docstrings): state it there, or the clause asks more than the notebook"
                    )
    return problems


def examples_run(subject: Subject) -> list[str]:
    """The reference's docstring examples (students see them in their stubs) run true."""
    return doctest_problems(subject.reference)


def numbers_sourced(subject: Subject) -> list[str]:
    """Every number ``claims.py`` ties to a measurement is still stated in the notebook, in its words."""
    return unsourced(subject.stage, subject.claims)


def rubric_figures_measured(subject: Subject) -> list[str]:
    """Every figure a written question's rubric states (a number with a decimal point or a
    percentage, outside math and code) is one a claim of ``claims.py`` measures: what graders
    compare students' answers with is what the reference gives. Written questions that do not
    parse are the rule "questions complete"'s to report."""
    try:
        questions = written_questions(subject.stage)
    except SourceError:
        return []
    return [
        f"the rubric of written question {question.id} states {figure} with no claim that measures it: tie it"
        " to a measurement in claims.py (a Claim whose words hold it), or write a formula as math ($...$)"
        for question in questions
        for figure in unmeasured_figures(question.rubric, subject.claims)
    ]


def release_keeps_secrets(subject: Subject) -> list[str]:
    """The student notebook, as built, holds no line of a reference's body (``statement_lines``),
    no line of an earlier answer it withholds or of a written question's rubric, no line of the
    hidden tests (a statement of 24 characters or more that the public tests do not share) and
    no hidden test's name, apart from
    what it gives on purpose: its given code and the earlier answers it uses. The check harness
    is read unpacked."""
    cells = subject.student_cells
    code = "\n".join(readable(cell) for cell in cells)
    given = {
        line.strip() for c in cells if TAG_GIVEN in c["metadata"].get("tags", []) for line in c["source"].splitlines()
    }
    for answer in given_answers(subject.stage):  # lines it shares with them (`super().__init__()`) are no secret
        given |= {line.strip() for line in reference_source(*answer.name.rsplit(".", 1)).splitlines()}
    problems = [
        f"the student notebook holds `{line}`, a line of the reference's {name}: students read the answer"
        for name in subject.stubs
        for line in sorted(statement_lines(reference_source(subject.stage.module, name)) - given)
        if line in code
    ]
    problems += _withheld_lines(cells, code)
    public = subject.stage.public.read_text(encoding="utf-8")
    hidden = {line.strip() for line in subject.stage.hidden.read_text(encoding="utf-8").splitlines()}
    problems += [
        f"the student notebook holds `{line}`, a line of the rubric of written question {question.id}"
        for question in written_questions(subject.stage)
        for line in (line.strip() for line in question.rubric.splitlines())
        if len(line) >= MIN_WITHHELD and line in code
    ]
    public_names = "\n".join(case.name for case in subject.tests.cases if case.public)
    problems += [
        f"the student notebook holds {case.name!r}, the name of a hidden test: students learn what it checks"
        for case in subject.tests.cases
        if not case.public and case.name in code and case.name not in public_names
    ]
    problems += [
        f"the student notebook holds `{line}`, a line of the hidden tests"
        for line in sorted(hidden - given)
        if len(line) >= 24
        and not line.startswith(("#", "from ", "import ", '"""'))
        and _statement(line)
        and line not in public
        and line in code
    ]
    return problems


MIN_WITHHELD = 20  # shorter lines of an answer (`super().__init__()`, `B, T = idx.shape`) say nothing of it


def _withheld_lines(cells: list[dict], code: str) -> list[str]:
    """The lines of each earlier answer the notebook withholds (``statement_lines`` of
    ``MIN_WITHHELD`` characters or more) that it holds all the same, apart from lines of its
    own given code (which may share an idiom)."""
    own_given = {
        line.strip()
        for c in cells
        if TAG_GIVEN in c["metadata"].get("tags", []) and "answer" not in c["metadata"].get("gptcourse", {})
        for line in c["source"].splitlines()
    }
    withheld = [
        c["metadata"]["gptcourse"]["answer"]
        for c in cells
        if "answer" in c["metadata"].get("gptcourse", {}) and not c["metadata"]["gptcourse"].get("given")
    ]
    return [
        f"the student notebook holds `{line}`, a line of the earlier answer {name}, which it withholds"
        for name in withheld
        for line in sorted(statement_lines(reference_source(*name.rsplit(".", 1))) - own_given)
        if len(line) >= MIN_WITHHELD and line in code
    ]


def statement_lines(source: str) -> set[str]:
    """The lines of a reference (``source``) that its stub does not show and that are whole
    statements of 16 characters or more: what a released notebook must not hold.

    >>> sorted(statement_lines('def f(x):\\n    "Sum of 3x."\\n    tripled = x + x + x\\n    return tripled.sum()\\n'))
    ['return tripled.sum()', 'tripled = x + x + x']
    """
    shown = {line.strip() for line in make_stub(source, "x").splitlines()}
    return {
        line.strip()
        for line in source.splitlines()
        if len(line.strip()) >= 16 and line.strip() not in shown and _statement(line.strip())
    }


def _statement(line: str) -> bool:
    """A line that is a whole statement on its own (not ``raise X(`` or ``with y:``)."""
    try:
        ast.parse(line)
    except SyntaxError:
        return False
    return True


def readable(cell: dict) -> str:
    """A cell's source, the check harness's packed module unpacked (so that a scan reads it)."""
    if TAG_HARNESS in cell["metadata"].get("tags", []):
        return cell["source"] + "\n" + unpack_harness(cell["source"])
    return cell["source"]


def readme_current(subject: Subject) -> list[str]:
    """The README's figures that follow from the stages hold with the stage as it is: the
    catalogued mistakes and the written questions in all, and the stage's row of the table of
    what each stage asks (``readme_figures``)."""
    return readme_problems(subject.stage)


def release_fresh(subject: Subject) -> list[str]:
    """The committed student notebook (``release/student/<stage>/<stage>.ipynb``) is what
    ``gptcourse build`` would write now, compared in memory (nothing is written); a stale one
    is named with ``gptcourse build --stages NN``."""
    return stale_release(subject.stage, release_folder(subject.stage))


def summary(subject: Subject) -> str:
    """The one line ``check-stage`` prints for a sound stage."""
    mistakes, alternatives = subject.variants
    points = sum(p for _, p in subject.tests.questions())
    written = written_questions(subject.stage)
    return (
        f"{len(subject.qids)} questions, {points:g} points, {len(mistakes)} mistakes, "
        f"{len(alternatives)} alternatives, {_examples(subject.reference)} docstring examples; "
        f"{len(written)} written questions, {sum(q.points for q in written):g} points, graded by hand"
    )


def _kit_names() -> set[str]:
    names = set()
    for module in PASTED:
        tree = ast.parse((KIT / f"{module}.py").read_text(encoding="utf-8"))
        names |= _defined(tree, imports=False)
    return names


def _defined(tree: ast.Module, imports: bool) -> set[str]:
    """Top-level names a module defines (functions, classes, assignments; imports if asked)."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif imports and isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def public_suite_problems(stage: Stage) -> list[str]:
    """Why the public suite could not be pasted into the notebook beside the kit (empty: it can)."""
    text = stage.public.read_text(encoding="utf-8")
    problems = []
    if "'''" in text:
        problems.append(f"{stage.public.name} contains three single quotes in a row (the paste is a ''' string)")
    tree = ast.parse(text)
    top_level = set(map(id, tree.body))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("autograder"):
            if node.module != "autograder.kit" or id(node) not in top_level:
                problems.append(
                    f"{stage.public.name}:{node.lineno}: import the kit at the top of the file, "
                    "as `from autograder.kit import ...` (the paste drops that statement)"
                )
        elif isinstance(node, ast.Import) and any(a.name.startswith("autograder") for a in node.names):
            problems.append(f"{stage.public.name}:{node.lineno}: import the kit as `from autograder.kit import ...`")
    clashes = sorted((_defined(tree, imports=False) - {"suite"}) & _kit_names())
    if clashes:
        problems.append(
            f"{stage.public.name} defines {', '.join(clashes)}, which the kit pasted beside it defines too: rename"
        )
    return problems


def doctest_problems(module) -> list[str]:
    """The docstring examples of a module that do not run true."""
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    problems = []
    for test in doctest.DocTestFinder().find(module):
        if test.lineno is None and not test.examples:
            continue
        result = runner.run(test, out=lambda _: None)
        if result.failed:
            problems.append(f"docstring example of {test.name} fails ({result.failed} of {result.attempted} lines)")
    return problems


def _examples(module) -> int:
    return sum(len(t.examples) for t in doctest.DocTestFinder().find(module))
