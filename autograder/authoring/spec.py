"""What the course specification must say of a stage (``assignments/SPEC.md``, a section per stage).

A stage's section is its contract: it names every question (a line ``- **<question>**``),
every name students write (in backquotes) with each parameter of its signature, and each
default other than ``None`` as ``name=value``. The stage's ``clauses.md`` and notebook cite
the section as ```SPEC.md § <stage>```. ``spec_problems`` lists what a section leaves out.

Example:
    >>> from autograder.course import get_stage
    >>> stage = get_stage("04")
    >>> section = section_text(spec_file(stage).read_text(encoding="utf-8"), stage.id)
    >>> spec_problems(stage, ["causal_mask", "lengths"], {}, section)
    ['SPEC.md § 04_masking says nothing of question lengths (a line `- **lengths**`)']
    >>> spec_problems(stage, [], {}, None)
    ['SPEC.md § 04_masking: no section `## 04_masking` (add one, as the other stages have)']
"""

import ast
import inspect
import re
from pathlib import Path

from autograder.course import ASSIGNMENTS, Stage


def spec_file(stage: Stage) -> Path:
    """The specification of the stage's course: beside its folder, or the project's own."""
    beside = stage.folder.parent / "SPEC.md"
    return beside if beside.is_file() else ASSIGNMENTS / "SPEC.md"


def section_text(text: str, stage_id: str) -> str | None:
    """The text of a stage's section (its heading to the next ``## ``), or None when it has none.

    >>> section_text("## 01_x\\nA\\n## 02_y\\nB\\n", "01_x")
    '\\n## 01_x\\nA'
    """
    text = "\n" + text
    start = text.find(f"\n## {stage_id}\n")
    if start < 0:
        return None
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def _same(written: str, default) -> bool:
    """Whether a default as the specification writes it (``1e-5``, ``"gelu"``, ``()``) is ``default``.

    >>> _same("1e-5", 0.00001), _same('"gelu"', "gelu"), _same("4", 5)
    (True, True, False)
    """
    try:
        return ast.literal_eval(written) == default
    except (ValueError, SyntaxError):
        return False


def _signature_problems(name: str, target, text: str) -> list[str]:
    """The parameters of ``name`` (a function, or a class's ``__init__``) or their defaults the text leaves out."""
    target = target.__init__ if inspect.isclass(target) else target
    problems = []
    for parameter in inspect.signature(target).parameters.values():
        if parameter.name == "self":
            continue
        if not re.search(rf"\b{parameter.name}\b", text):
            problems.append(f"does not name {name}'s parameter {parameter.name}")
        if parameter.default is not inspect.Parameter.empty and parameter.default is not None:
            stated = re.findall(rf"\b{parameter.name}=(\(\)|[^,)`\s]+)", text)
            if not any(_same(value, parameter.default) for value in stated):
                problems.append(f"does not give {name}'s default {parameter.name}={parameter.default!r}")
    return problems


def spec_problems(stage: Stage, qids: list[str], written: dict, section: str | None) -> list[str]:
    """What the stage's section of the specification leaves out: a question of ``qids``, a name
    students write (``written``: name -> the reference's function or class), a parameter or a
    default; and the citations of the section missing from ``clauses.md`` or the notebook."""
    where = f"SPEC.md § {stage.id}"
    if section is None:
        return [f"{where}: no section `## {stage.id}` (add one, as the other stages have)"]
    problems = [
        f"says nothing of question {qid} (a line `- **{qid}**`)" for qid in qids if f"- **{qid}**" not in section
    ]
    for name, target in written.items():
        if f"`{name}" not in section:
            problems.append(f"does not name {name} (in backquotes)")
        problems += _signature_problems(name, target, section)
    citation = f"`{where}`"
    for path in (stage.folder / "clauses.md", stage.source):
        if path.is_file() and citation not in path.read_text(encoding="utf-8"):
            problems.append(f"is not cited by {path.name} (as {citation})")
    return [f"{where} {p}" if not p.startswith(where) else p for p in problems]


def question_text(section: str, qid: str) -> str:
    """The item of question ``qid`` in a stage's section (its line ``- **<qid>**`` to the next item).

    >>> question_text("## 01_x\\n- **a**: one\\n  more\\n- **b**: two\\n", "a")
    '- **a**: one\\n  more\\n'
    """
    found = re.search(rf"^- \*\*{re.escape(qid)}\*\*.*?(?=^- \*\*|^#|\Z)", section, flags=re.S | re.M)
    return found.group(0) if found else ""


# a numeric dtype (what the dtype audit changes: floats to float64, integers to int32), as torch,
# a dtype's own name or a tensor type names it; `torch.bool` is left out
_DTYPE = (
    r"torch\.(?:long|int|int8|int16|int32|int64|uint8|float|double|half|float16|float32|float64|bfloat16)\b"
    r"|\b(?:u?int(?:8|16|32|64)|float(?:16|32|64)|bfloat16)\b|\b(?:Long|Int|Float|Double|Half|BFloat16)Tensors?\b"
)
# a sentence that says what a function returns (`returns`, `Returns:`, `gives`) and then names a dtype,
# or a return annotation (`-> (V, V)`) followed within three words by one
_RETURN_DTYPE = re.compile(
    rf"\b(?:returns?|returned|gives?)\b(?:[^.;]|\.(?=\w))*?(?<![=\w])(?P<a>{_DTYPE})"
    rf"|->[^`\n]*`\s*(?:[\w-]+\s+){{0,3}}?`?(?P<b>{_DTYPE})",
    flags=re.I,
)


def return_dtypes(text: str) -> list[str]:
    """The dtypes ``text`` (a specification item or a docstring, its examples left out) states for
    what a function returns; a dtype given to an input (``takes a torch.long tensor``,
    ``dtype=torch.long``) is none.

    >>> return_dtypes("`f(ids) -> (B,)` int64 lengths. It returns a `torch.long` tensor.")
    ['int64', 'torch.long']
    >>> return_dtypes("`decode(ids) -> str` takes a list or a 1-D `torch.long` tensor")
    []
    """
    prose = "\n".join(line for line in text.splitlines() if not line.strip().startswith((">>>", "...")))
    return [match.group("a") or match.group("b") for match in _RETURN_DTYPE.finditer(prose)]
