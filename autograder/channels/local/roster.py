"""The class roster: who the students are, so that grades reach the right person in an LMS.

A roster is a CSV file with a header row. Its columns are found by name (any case):

- ``id`` (required), ``name``, ``email``: a plain roster; or
- Canvas's gradebook export as it is (Grades > Export): ``Student`` ("Smith, Alice"),
  ``ID`` (Canvas's user id), ``SIS User ID``, ``SIS Login ID``, ``Section``; its
  "Points Possible" row is no student (``points_possible`` reads it: each assignment
  column's points in Canvas);
- Moodle's grade export as it is (Grades > Export > Plain text file), told by its columns
  ``First name``, ``Last name`` and ``Email address`` (with ``ID number``, ``Institution``,
  ``Department`` and the grade items, which are not read): the name is "First Last", as
  Moodle's downloads write it, the email is the one Moodle knows the student by (what
  ``moodle.csv`` identifies them with), and the id is the ``ID number``, else the email
  address, since Moodle leaves ID numbers empty unless a site fills them in.

Every row that names a student must give an id (Moodle's export: an ID number or an email
address): a roster with a row that does not is refused, naming the rows by line and name,
since a student without an id could be in no gradebook row nor import. A row that names
no one (no id, name or email, as a blank line or Canvas's "Manual Posting" row) is passed over.

A submission is matched to a roster entry by, in order: its LMS id (the Canvas user id
in a Canvas download's file names), its key equal to an id, SIS user id, SIS login id or
email (or the email's part before ``@``), its key equal to a name once both are reduced
to lower-case letters and digits (``Smith, Alice``, ``smithalice`` and ``Alice Smith``
reversed all match). Anything else stays unmatched, and is reported.
"""

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from autograder.errors import UsageError

ALIASES = {
    "id": ("id", "student id", "user id", "canvas id", "id number"),
    "name": ("name", "student", "student name", "full name"),
    "email": ("email", "email address", "e-mail"),
    "sis_user_id": ("sis user id",),
    "sis_login_id": ("sis login id", "login", "username"),
    "section": ("section",),
}
MOODLE_EXPORT = ("first name", "last name", "email address")  # the user columns of Moodle's grade export
POINTS_POSSIBLE = "points possible"  # the name cell of the row of Canvas's export that is no student


@dataclass(frozen=True)
class Student:
    """One roster entry."""

    id: str
    name: str = ""
    email: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    section: str = ""
    source: str = ""  # "moodle": read from Moodle's grade export (its id is no Canvas id)


def squash(text: str) -> str:
    """Lower-case letters and digits only, for matching names written in different ways.

    >>> squash("Smith, Alice") == squash("smithalice")
    True
    """
    return "".join(ch for ch in text.lower() if ch.isalnum())


def read_roster(path: Path) -> list[Student]:
    """The students of a roster CSV (see the module docstring); a usage error names what is wrong."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the roster {path}: {exc}") from None
    reader = csv.DictReader(io.StringIO(text))
    headers = {header.strip().lower(): header for header in reader.fieldnames or []}
    columns = {}
    for header in reader.fieldnames or []:
        for field, names in ALIASES.items():
            if header.strip().lower() in names and field not in columns:
                columns[field] = header
    moodle = all(name in headers for name in MOODLE_EXPORT) and "name" not in columns
    if "id" not in columns and not moodle:
        raise UsageError(f"the roster {path} has no id column (its header must name id, and may name name and email)")
    students, seen, no_id = [], set(), []
    for row in reader:
        values = {field: (row.get(header) or "").strip() for field, header in columns.items()}
        if moodle:
            values |= _moodle_entry(row, headers, values)
        if values.get("name", "").lower() == POINTS_POSSIBLE or not any(
            values.get(field) for field in ("id", "name", "email")
        ):
            continue
        if not values.get("id"):
            no_id.append(f"line {reader.line_num} ({values.get('name') or values.get('email')})")
            continue
        if values["id"] in seen:
            raise UsageError(f"the roster {path} lists the id {values['id']} twice")
        seen.add(values["id"])
        students.append(Student(**values))
    if no_id:
        where = "an ID number or an email address" if moodle else "an id"
        raise UsageError(
            f"the roster {path} has students without an id, who would be left out of the gradebook: "
            f"{', '.join(no_id)}; give each {where}, or remove the row"
        )
    if not students:
        raise UsageError(f"the roster {path} lists no students")
    return students


def points_possible(path: Path) -> dict[str, float]:
    """The points of each column that Canvas's "Points Possible" row gives a number, in a roster that is
    Canvas's gradebook export (none for another roster, or none kept).

    >>> import tempfile; path = Path(tempfile.mkdtemp()) / "roster.csv"
    >>> _ = path.write_text("Student,ID,Lab (5),Current Points\\n    Points Possible,,10.00,(read only)\\n")
    >>> points_possible(path)
    {'Lab (5)': 10.0}
    """
    if not Path(path).is_file():
        return {}
    with Path(path).open(encoding="utf-8-sig", newline="") as handle:
        for row in csv.DictReader(handle):
            if any(isinstance(v, str) and v.strip().lower() == POINTS_POSSIBLE for v in row.values()):
                numbers = {column: _number(value) for column, value in row.items() if isinstance(column, str)}
                return {column.strip(): number for column, number in numbers.items() if number is not None}
    return {}


def _number(value: object) -> float | None:
    """The number a cell holds (None for text, or no cell)."""
    try:
        return float(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _moodle_entry(row: dict, headers: dict[str, str], values: dict[str, str]) -> dict[str, str]:
    """A row of Moodle's grade export as roster fields: "First Last", the ID number else the email.

    >>> headers = {"first name": "First name", "last name": "Last name"}
    >>> row = {"First name": "Alice", "Last name": "Smith", "ID number": ""}
    >>> _moodle_entry(row, headers, {"id": "", "email": "alice@uni.edu"})
    {'name': 'Alice Smith', 'id': 'alice@uni.edu', 'source': 'moodle'}
    """
    first, last = ((row.get(headers[name]) or "").strip() for name in MOODLE_EXPORT[:2])
    return {
        "name": " ".join(filter(None, (first, last))),
        "id": values.get("id") or values["email"],
        "source": "moodle",
    }


def _names(student: Student) -> set[str]:
    names = {squash(student.name)} if student.name else set()
    if "," in student.name:  # "Smith, Alice" is also "Alice Smith"
        last, first = student.name.split(",", 1)
        names.add(squash(first + last))
    elif student.name:  # "Alice Smith" is also Canvas's "smithalice"
        parts = student.name.split()
        names.add(squash(parts[-1] + "".join(parts[:-1])))
    return names - {""}


def match(key: str, lms_id: str, roster: list[Student]) -> Student | None:
    """The roster entry of a submission (its key and LMS id), or None when none or several fit.

    >>> roster = [Student("1234", "Smith, Alice", "alice@uni.edu"), Student("77", "Bob Jones", "bj@uni.edu")]
    >>> match("smithalice", "", roster).id, match("alice", "", roster).id, match("x", "1234", roster).id
    ('1234', '1234', '1234')
    >>> match("Bob Jones", "", roster).id, match("jonesbob", "", roster).id, match("carol", "", roster)
    ('77', '77', None)
    """
    for rule in (
        lambda s: bool(lms_id) and lms_id == s.id,
        lambda s: key in {s.id, s.sis_user_id, s.sis_login_id, s.email} - {""},
        lambda s: bool(s.email) and key == s.email.split("@", 1)[0],
        lambda s: squash(key) in _names(s),
    ):
        found = [s for s in roster if rule(s)]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            return None
    return None
