"""Who a submission belongs to, read from its path the way LMS and grader exports lay them out.

``gptcourse grade`` names each submission's row (and its folder of results) after the
student, found in this order:

1. a file name in an LMS's download pattern:

   - Canvas, "Download Submissions": ``<name>_<user id>_<submission id>_<original file>``,
     with ``LATE_`` after the name for late work (``smithalice_LATE_1234_5678_lab.ipynb``);
     the name is Canvas's sortable name, lower case, letters only, and the user id is
     the ``ID`` column of Canvas's gradebook;
   - Moodle, "Download all submissions" without folders:
     ``<Full Name>_<participant id>_assignsubmission_file_<original file>``;
   - Blackboard, "Download Assignment":
     ``<assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>_<original file>`` (the username is
     the part before ``_attempt_`` that holds no underscore; the ``.txt`` of each attempt's details
     names no original file and is no submission); each attempt of a student is a submission of
     theirs, so two attempts are numbered (``asmith``, ``asmith-2``) as any two files of one name;

2. a folder in Moodle's "download submissions in folders" pattern
   (``<Full Name>_<participant id>_assignsubmission_file[_]/<file>``);
3. a folder per student (``subs/alice/01_tokenisation.ipynb``; nbgrader's
   ``submitted/alice/01_tokenisation/01_tokenisation.ipynb``, where a folder named after
   the stage is passed over), when the given files lie one per student folder, those
   folders side by side in one parent, and either more than one file is given or the one
   file keeps the release's name (``01_tokenisation.ipynb`` or a copy of it, such as
   ``01_tokenisation (1).ipynb``: it names no student; ``01_tokenisation_bob.ipynb`` does);
4. else the file name without its extension.

``--names folder`` or ``--names file`` forces rule 3 or 4 (the LMS patterns still apply).
A file graded into the same output folder before keeps the name it had.
"""

import re
from dataclasses import dataclass
from pathlib import Path

MODES = ("auto", "folder", "file")
CANVAS = re.compile(r"^(?P<name>[^\W_]+)_(?P<late>LATE_)?(?P<user>\d+)_(?P<submission>\d+)_(?P<file>.+)$")
MOODLE_FILE = re.compile(r"^(?P<name>.+?)_(?P<participant>\d+)_assignsubmission_(?:file|onlinetext)_(?P<file>.+)$")
MOODLE_FOLDER = re.compile(r"^(?P<name>.+?)_(?P<participant>\d+)_assignsubmission_(?:file|onlinetext)_?$")
BLACKBOARD = re.compile(r"^(?P<assignment>.+)_(?P<user>[^_]+)_attempt_(?P<time>\d{4}(?:-\d\d){5})_(?P<file>.+)$")
# the .txt of an attempt's details that Blackboard writes beside its files: no submission
# (``Lab 1_asmith_attempt_2026-11-20-10-00-00.txt``)
BLACKBOARD_DETAILS = re.compile(r"^.+_attempt_\d{4}(?:-\d\d){5}\.txt$")
# what a copy of the release's notebook adds to its name: " (1)" (browsers), "-Copy1" (Jupyter),
# " copy" (macOS), "-1" (Canvas's resubmissions), "-submission" (package_submission's zip)
COPY_WORD = re.compile(r"\(\d+\)|copy\d*|submission|\d+", re.IGNORECASE)


@dataclass(frozen=True)
class Identity:
    """A submission's student as its path names them.

    ``key`` names the row and the results folder; ``lms_id`` is the LMS's own id when the
    path carries one (Canvas's user id, Moodle's participant id, Blackboard's username); ``source`` says which rule
    found it; ``late``, that the LMS marked the file late (Canvas's ``LATE_``).
    """

    key: str
    lms_id: str = ""
    source: str = "file"
    late: bool = False


def safe_key(text: str) -> str:
    """A folder-safe version of a name: no path separators, no leading dots, not empty.

    >>> safe_key("Alice Smith/../x")
    'Alice Smith_.._x'
    >>> safe_key("...")
    'submission'
    """
    cleaned = "".join("_" if ch in "/\\\0" else ch for ch in text).strip().lstrip(".")
    return cleaned or "submission"


def from_lms_name(path: Path) -> Identity | None:
    """The student named by a Canvas, Moodle or Blackboard download's file or folder name, if it has one.

    >>> from_lms_name(Path("smithalice_LATE_1234_5678_01_tokenisation.ipynb"))
    Identity(key='smithalice', lms_id='1234', source='canvas', late=True)
    >>> from_lms_name(Path("Alice Smith_99_assignsubmission_file_lab.ipynb"))
    Identity(key='Alice Smith', lms_id='99', source='moodle', late=False)
    >>> from_lms_name(Path("Alice Smith_99_assignsubmission_file_/lab.ipynb"))
    Identity(key='Alice Smith', lms_id='99', source='moodle', late=False)
    >>> from_lms_name(Path("Lab 1_asmith_attempt_2026-11-20-10-00-00_lab.ipynb"))
    Identity(key='asmith', lms_id='asmith', source='blackboard', late=False)
    >>> from_lms_name(Path("subs/alice/01_tokenisation.ipynb")) is None
    True
    """
    path = Path(path)
    match = CANVAS.match(path.name)
    if match:
        return Identity(safe_key(match["name"]), match["user"], "canvas", late=bool(match["late"]))
    match = MOODLE_FILE.match(path.name) or MOODLE_FOLDER.match(path.parent.name)
    if match:
        return Identity(safe_key(match["name"]), match["participant"], "moodle")
    match = BLACKBOARD.match(path.name)
    if match:
        return Identity(safe_key(match["user"]), match["user"], "blackboard")
    return None


def names_no_student(path: Path, stage_id: str) -> bool:
    """Whether a file keeps the release's name: the stage's notebook name, or a copy of it
    (``01_tokenisation.ipynb``, ``01_tokenisation (1).ipynb``, ``01_tokenisation-Copy1.ipynb``,
    ``01_tokenisation-submission.zip``). A name that adds a word to it names a student.

    >>> names_no_student(Path("alice/01_tokenisation (1).ipynb"), "01_tokenisation")
    True
    >>> names_no_student(Path("subs/01_tokenisation_bob.ipynb"), "01_tokenisation")
    False
    >>> names_no_student(Path("alice.ipynb"), "01_tokenisation")
    False
    """
    stem = Path(path).stem
    if not stem.lower().startswith(stage_id.lower()):
        return False
    words = re.split(r"[\s_-]+", stem[len(stage_id) :])
    return all(COPY_WORD.fullmatch(word) for word in words if word)


def student_folder(path: Path, stage_id: str) -> Path:
    """The student folder of a file: its parent, or the one above when the parent is named after the stage.

    >>> student_folder(Path("/submitted/alice/01_tokenisation/01_tokenisation.ipynb"), "01_tokenisation").name
    'alice'
    >>> student_folder(Path("/subs/bob/lab.ipynb"), "01_tokenisation").name
    'bob'
    """
    folder = Path(path).resolve().parent
    if folder.name == stage_id and folder.parent != folder:
        folder = folder.parent
    return folder


def identify(
    paths: list[Path], stage_id: str, mode: str = "auto", known: dict[Path, str] | None = None
) -> list[Identity]:
    """The identity of every submission in ``paths`` (rules in the module docstring).

    ``known`` maps resolved paths graded before to the key they had. Keys are unique:
    two files that would share one are told apart by their LMS id (unless the key is that id,
    as Blackboard's username), else numbered (``alice-2``) in the order given.

    >>> paths = [Path("subs/alice/01_tokenisation.ipynb"), Path("subs/bob/01_tokenisation.ipynb")]
    >>> [i.key for i in identify(paths, "01_tokenisation")]
    ['alice', 'bob']
    >>> [i.key for i in identify([Path("subs/alice.ipynb"), Path("subs/bob.ipynb")], "01_tokenisation")]
    ['alice', 'bob']
    """
    if mode not in MODES:
        raise ValueError(f"unknown naming mode {mode!r}; choose one of {', '.join(MODES)}")
    known = known or {}
    folders = [student_folder(p, stage_id) for p in paths]
    side_by_side = len(set(folders)) == len(folders) and len({f.parent for f in folders}) == 1
    by_folder = mode == "folder" or (
        mode == "auto" and side_by_side and (len(paths) > 1 or all(names_no_student(p, stage_id) for p in paths))
    )
    found = []
    for path in paths:
        path = Path(path)
        lms = from_lms_name(path)
        if path.resolve() in known:
            found.append(
                Identity(
                    known[path.resolve()],
                    lms.lms_id if lms else "",
                    lms.source if lms else "earlier grading",
                    late=bool(lms and lms.late),
                )
            )
        elif lms is not None:
            found.append(lms)
        elif by_folder:
            found.append(Identity(safe_key(student_folder(path, stage_id).name), "", "folder"))
        else:
            found.append(Identity(safe_key(path.stem), "", "file"))
    return _unique(found)


def _unique(found: list[Identity]) -> list[Identity]:
    counts: dict[str, int] = {}
    for identity in found:
        counts[identity.key] = counts.get(identity.key, 0) + 1
    out, seen = [], set()
    for identity in found:
        key = identity.key
        if counts[key] > 1 and identity.lms_id and identity.lms_id != key:
            key = f"{key}-{identity.lms_id}"
        base, number = key, 1
        while key in seen:
            number += 1
            key = f"{base}-{number}"
        seen.add(key)
        out.append(Identity(key, identity.lms_id, identity.source, identity.late))
    return out
