"""Load: read a submitted notebook, whatever state it is in, and decide what code to run.

The released notebook (lessons/<id>.ipynb) is the template. What runs, in its order:
  * its setup cells (locked, tagged "setup"), always in their released form;
  * the student's version of each graded cell, found by nbgrader grade_id, or, when another
    editor stripped the metadata, by the name the cell must define;
  * from cells the student added, only their imports, functions and classes (helpers), so
    that experiments and plots in scratch cells cost no grading time.
Demo and self-check cells never run: the checks call the student's objects directly.
Anything odd about the file becomes a note or a per-exercise problem, never an exception.
"""
from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path


from .course import Lesson

SETUP_TAG = "setup"


@dataclass
class Cell:
    label: str
    source: str
    kind: str  # "setup" | "graded" | "helper"
    grade_id: str | None = None


@dataclass
class Program:
    lesson: Lesson
    cells: list[Cell] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)          # shown in the report, cost nothing
    problems: dict[str, str] = field(default_factory=dict)  # grade_id -> why it cannot be graded
    fatal: str | None = None                                # the whole notebook is unusable


def _source(cell) -> str:
    src = cell.get("source", "") if isinstance(cell, dict) else ""
    if isinstance(src, list):
        src = "".join(s for s in src if isinstance(s, str))
    return src if isinstance(src, str) else ""


def _nbgrader(cell) -> dict:
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    nbg = meta.get("nbgrader") if isinstance(meta, dict) else None
    return nbg if isinstance(nbg, dict) else {}


def _tags(cell) -> list:
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    tags = meta.get("tags") if isinstance(meta, dict) else None
    return tags if isinstance(tags, list) else []


MAX_NOTEBOOK_BYTES = 50 * 1024 ** 2   # a lesson with its figures is well under 5 MB


def read_regular_file(path: Path, limit: int = MAX_NOTEBOOK_BYTES) -> bytes:
    """The bytes of `path` if it is a regular file of at most `limit` bytes; OSError otherwise.
    Never follows a symbolic link and never blocks on a FIFO or a device."""
    import os
    import stat
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(0, "it is not a regular file (a device, a FIFO or a folder)")
        if info.st_size > limit:
            raise OSError(0, f"it is larger than {limit // 1024 ** 2} MB")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
        if len(data) > limit:
            raise OSError(0, f"it is larger than {limit // 1024 ** 2} MB")
        return data
    finally:
        os.close(fd)


def read_cells(path: Path) -> tuple[list[dict], list[str], str | None]:
    """Return (code and markdown cells as plain dicts, notes, fatal error)."""
    import errno
    notes: list[str] = []
    try:
        raw = read_regular_file(Path(path))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return [], notes, "the file is a symbolic link, not a notebook: hand in the notebook file itself"
        return [], notes, f"the file could not be read: {exc.strerror or exc}"
    if not raw.strip():
        return [], notes, "the file is empty: it is not a notebook (was it saved?)"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = raw.decode("utf-8", errors="replace")
        notes.append(f"the file is not valid UTF-8 (first bad byte at position {exc.start}); "
                     "undecodable bytes were replaced")
    try:
        data = json.loads(text)
    except RecursionError:
        return [], notes, "the file is not a notebook: its JSON is nested far too deeply"
    except ValueError as exc:
        return [], notes, (f"the file is not a notebook: it is not valid JSON ({exc}). "
                           "Open it in Jupyter and save it again, or re-download the lesson.")
    if not isinstance(data, dict) or not ("cells" in data or "worksheets" in data):
        return [], notes, "the file is JSON but not a Jupyter notebook (it has no cells)"
    version = data.get("nbformat", 4)
    if type(version) is not int:
        notes.append(f"the notebook's format number is {version!r}, not a whole number; read as version 4")
        version = 4
    if version < 4 or "worksheets" in data:
        try:
            import nbformat  # only here: importing it costs ~1.3 s (jsonschema's format checkers)
            data = nbformat.convert(nbformat.from_dict(data), 4)
            notes.append("the notebook used an old format (nbformat 3); it was converted")
        except Exception as exc:  # nbformat raises many kinds on odd input
            return [], notes, f"the notebook uses an old format that could not be converted ({exc})"
    cells = data.get("cells")
    if not isinstance(cells, list):
        return [], notes, "the notebook's cells are not a list"
    return [c for c in cells if isinstance(c, dict) and isinstance(c.get("cell_type", ""), str)], notes, None


def defined_names(source: str) -> set[str] | None:
    """Top-level functions and classes a cell defines (None when it does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    return {node.name for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def _helper_source(source: str) -> str | None:
    """Only the imports, functions and classes of a cell the student added."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    keep = [node for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    if not keep:
        return None
    return "\n".join(ast.get_source_segment(source, node) or ast.unparse(node) for node in keep)


def build_program(path: Path, lesson: Lesson, released: Path | None = None) -> Program:
    program = Program(lesson)
    cells, notes, fatal = read_cells(path)
    program.notes.extend(notes)
    if fatal:
        program.fatal = fatal
        return program
    template, _, template_fatal = read_cells(released or lesson.released_path)
    if template_fatal:
        raise RuntimeError(f"the released lesson {lesson.id} is broken: {template_fatal}")

    code = [c for c in cells if c.get("cell_type") == "code"]
    by_id: dict[str, list[dict]] = {}
    for c in code:
        gid = _nbgrader(c).get("grade_id")
        if isinstance(gid, str):
            by_id.setdefault(gid, []).append(c)
    released_ids = {_nbgrader(c).get("grade_id") for c in template}
    used: set[int] = set()

    setup, graded = [], []
    for t in template:
        if t.get("cell_type") != "code":
            continue
        meta = _nbgrader(t)
        gid = meta.get("grade_id")
        if SETUP_TAG in _tags(t):
            setup.append(Cell(gid or "setup", _source(t), "setup", gid))
            mine = by_id.get(gid, [])
            for c in mine:
                used.add(id(c))
            if mine and any(_source(c).strip() != _source(t).strip() for c in mine):
                program.notes.append(f"you edited the locked cell '{gid}'; the released version was used")
            continue
        if not meta.get("solution"):
            continue
        cell = _find_graded(gid, by_id, code, used, released_ids, program)
        if cell is not None:
            used.add(id(cell))
            graded.append(Cell(gid, _source(cell), "graded", gid))

    helpers = []
    for i, c in enumerate(code):
        if id(c) in used or _nbgrader(c).get("grade_id") in released_ids:
            continue
        src = _helper_source(_source(c))
        if src:
            helpers.append(Cell(f"added cell {i + 1}", src, "helper"))
    program.cells = setup + helpers + graded
    return program


def _find_graded(gid, by_id, code, used, released_ids, program) -> dict | None:
    mine = [c for c in by_id.get(gid, []) if id(c) not in used]
    if len(mine) > 1:
        program.notes.append(f"the cell '{gid}' appears {len(mine)} times; the last one was used")
    if mine:
        cell = mine[-1]
        names = defined_names(_source(cell))
        if names is not None and gid not in names and gid in _course_names(program):
            others = ", ".join(sorted(names)) or "nothing"
            program.problems[gid] = (f"the cell for '{gid}' does not define {gid} (it defines {others}); "
                                     f"keep the name and signature of the stub")
        return cell
    # nbgrader metadata stripped (another editor) or cell moved: find the definition by name
    for cell in reversed(code):
        if id(cell) in used or _nbgrader(cell).get("grade_id") in released_ids - {None}:
            continue
        if gid in (defined_names(_source(cell)) or set()):
            program.notes.append(f"the cell defining '{gid}' had lost its nbgrader metadata; "
                                 "it was found by name")
            return cell
    program.problems[gid] = (f"no cell defines {gid}: the graded cell was deleted or renamed. "
                             f"Restore it from the released lesson and fill it in again")
    return None


def _course_names(program: Program) -> set[str]:
    return set(program.lesson.exercises)
