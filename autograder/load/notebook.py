"""Load: read a submitted notebook, whatever state it is in, and decide what code to run.

The grader runs a notebook the way Restart & Run All would: every code cell, top to bottom.
The released notebook (lessons/<id>.ipynb, or its translation lessons/<lang>/<id>.ipynb when the
student's locked cells match that edition: _template) is the template that says which cells are whose:
  * the lesson's locked cells (setup and demos) run in their released form, whatever the
    student did to them; a deleted setup cell still runs, first;
  * each graded cell is the student's, found by nbgrader grade_id, or, when another editor
    stripped the metadata, by the name the cell must define;
  * the student's own cells run as written, except IPython magics and shell escapes;
  * self-check cells (the grader checks from outside) and `slow-demo` cells (training runs,
    timings, experiments: lesson demos that define nothing the graded code uses, which
    tests/test_lazy_imports.py checks) are left out; so are, when grading, the other lesson
    demos whose results no cell run reads (`idle_demos`): the checks read only graded names.
A cell that raises does not stop the cells after it. Anything odd about the file becomes a
note or a per-exercise problem, never an exception.
"""
from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path


from autograder.course import Lesson
from autograder.i18n import N_
# read_cells and the file readers live in reading.py; they stay importable from here
from autograder.load.reading import (MAX_NOTEBOOK_BYTES, MAX_PARSED_CELL, _nbgrader, _source, _tags,  # noqa: F401
                                     digest_regular_file, read_cells, read_regular_file)

SETUP_TAG = "setup"
SLOW_TAG = "slow-demo"      # a lesson demo grading leaves out: its results cannot change a grade, and it
                            # costs more than the grading (training runs, timings, experiments)


@dataclass
class Cell:
    label: str
    source: str
    kind: str  # "setup" | "graded" | "lesson" (a locked demo cell) | "scratch" (the student's own)
    grade_id: str | None = None


@dataclass
class Program:
    lesson: Lesson
    cells: list[Cell] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)          # shown in the report, cost nothing
    problems: dict[str, str] = field(default_factory=dict)  # grade_id -> why it cannot be graded
    checkpoints: dict[str, int] = field(default_factory=dict)  # grade_id -> cells run before grading it
    fatal: str | None = None                                # the whole notebook is unusable

    @functools.cached_property
    def imports(self) -> frozenset[str]:
        """The top-level modules its cells import (the worker preloads torch only for these)."""
        return frozenset().union(*(imported_modules(c.source) for c in self.cells))


def imported_modules(source: str) -> set[str]:
    """Top-level names of the modules a cell imports anywhere in it (`import torch.nn` -> torch);
    empty when it does not parse."""
    if len(source) > MAX_PARSED_CELL or "import" not in source:   # most cells import nothing: no parse
        return set()
    try:
        tree = ast.parse(source)
    except Exception:   # SyntaxError, and MemoryError/RecursionError on absurd code
        return set()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found


@functools.lru_cache(maxsize=None)
def lesson_imports(lesson: Lesson) -> frozenset[str]:
    """The modules a lesson's own solution notebook imports (what a class run preloads)."""
    cells, _, fatal = read_cells(lesson.solution_path)
    if fatal:
        return frozenset()
    return frozenset().union(*(imported_modules(_source(c)) for c in cells if c.get("cell_type") == "code"))


def defined_names(source: str) -> set[str] | None:
    """Top-level functions and classes a cell defines (None when it does not parse, or is too
    large for the grader to parse: see MAX_PARSED_CELL)."""
    if len(source) > MAX_PARSED_CELL:
        return None
    try:
        tree = ast.parse(source)
    except Exception:   # SyntaxError, and MemoryError/RecursionError on absurd code
        return None
    return {node.name for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def _names(source: str) -> tuple[set[str], set[str]] | None:
    """(names a cell's top level binds, global names it reads in any scope), or None when it
    cannot be analysed (a syntax error, or a cell over MAX_PARSED_CELL: parsing student code in
    the grader is bounded). A function's own locals and parameters are not names it reads."""
    import symtable
    if len(source) > MAX_PARSED_CELL:
        return None
    try:
        top = symtable.symtable(source, "<cell>", "exec")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    used, todo = set(), [top]
    while todo:
        table = todo.pop()
        for sym in table.get_symbols():
            if sym.is_referenced() and (table is top or sym.is_global()):
                used.add(sym.get_name())
        todo.extend(table.get_children())
    return bound, used


_LESSON_NAMES: dict[str, tuple[set[str], set[str]] | None] = {}   # the lesson's own cells: the same for everyone


def _cell_names(cell: Cell) -> tuple[set[str], set[str]] | None:
    if cell.kind not in ("setup", "lesson"):
        return _names(cell.source)
    if cell.source not in _LESSON_NAMES:
        _LESSON_NAMES[cell.source] = _names(cell.source)
    return _LESSON_NAMES[cell.source]


def _needed(cells: list, roots, names) -> list[bool]:
    keep = [c.kind in roots or "import *" in c.source for c in cells]
    changed = True
    while changed:
        changed = False
        needed = set().union(*(names[i][1] for i in range(len(cells)) if keep[i]))
        for i in range(len(cells)):
            if not keep[i] and names[i][0] & needed:
                keep[i] = changed = True
    return keep


def definition_cells(cells: list) -> list:
    """The cells that make up the student's definitions: the setup cell, the graded cells, and
    every other cell (the student's own or a lesson demo) that binds a name one of those reads,
    transitively, or star-imports; in notebook order. A slow experiment that defines nothing
    the graded code uses is not run again for every fresh call."""
    names = [_cell_names(c) or (set(), set()) for c in cells]
    return [c for c, k in zip(cells, _needed(cells, ("setup", "graded"), names)) if k]


def idle_demos(cells: list) -> set[str]:
    """The labels of the lesson's own demo cells that grading need not run: cells that bind no name
    that any other cell run reads (the setup, the graded cells, the student's own cells, and
    the lesson cells those need, transitively). The checks read only the graded names, so such a
    cell cannot change a grade; what it costs (it calls the student's code to show a result) is
    spent per submission. Lesson cells are the released ones, whatever the student did to them.
    When some cell cannot be analysed, every lesson cell runs."""
    names = [_cell_names(c) for c in cells]
    if any(n is None for n, c in zip(names, cells) if c.kind != "lesson"):
        return set()
    names = [n or (set(), set()) for n in names]
    keep = _needed(cells, ("setup", "graded", "scratch"), names)
    return {c.label for c, k in zip(cells, keep) if c.kind == "lesson" and not k}


def build_program(path: Path, lesson: Lesson, released: Path | None = None, *, kernel: bool = True) -> Program:
    """The code to run for a notebook.

    kernel=True (grading a student): every code cell in notebook order, as Restart & Run All
    would run them, with the lesson's locked cells in their released form, self-check cells and
    `slow-demo` cells left out, and IPython magics and shell escapes skipped with a note.
    kernel=False (the reference): only the setup and graded cells.
    """
    program = Program(lesson)
    cells, notes, fatal = read_cells(path)
    program.notes.extend(notes)
    if fatal:
        program.fatal = fatal
        return program
    code = [c for c in cells if c.get("cell_type") == "code"]
    template = _template(code, lesson, released)
    by_id: dict[str, list[dict]] = {}
    for c in code:
        gid = _nbgrader(c).get("grade_id")
        if isinstance(gid, str):
            by_id.setdefault(gid, []).append(c)
    released = {_nbgrader(t).get("grade_id"): t for t in template
                if t.get("cell_type") == "code" and isinstance(_nbgrader(t).get("grade_id"), str)}
    released_ids = set(released)
    used: set[int] = set()
    chosen: dict[int, str] = {}               # id(student cell) -> the exercise it is graded as
    for gid, t in released.items():
        if _nbgrader(t).get("solution"):
            cell = _find_graded(gid, by_id, code, used, released_ids, program, cells)
            if cell is not None:
                used.add(id(cell))
                chosen[id(cell)] = gid

    def locked(gid):
        t = released.get(gid)
        return t is not None and not _nbgrader(t).get("solution")

    order: list[Cell] = []
    ran_setup = set()
    defined_at: dict[str, int] = {}
    for i, c in enumerate(code):
        gid = _nbgrader(c).get("grade_id")
        if id(c) in chosen:
            order.append(Cell(chosen[id(c)], _source(c), "graded", chosen[id(c)]))
            defined_at[chosen[id(c)]] = len(order)
        elif locked(gid):
            t = released[gid]
            tags = _tags(t)
            if _source(c).strip() != _source(t).strip() and "self-check" not in tags:
                program.notes.append(N_("you edited the locked cell '{name}'; the released version was used")
                                     .format(name=gid))
            if SETUP_TAG in tags:
                ran_setup.add(gid)
                order.append(Cell(gid, _source(t), "setup", gid))
            elif "self-check" in tags:
                checked = re.search(r"""check\(\s*["']([^"']+)["']""", _source(t))
                if checked and kernel:   # graded on what this cell would see in the kernel
                    program.checkpoints.setdefault(checked.group(1), len(order))
            elif kernel and SLOW_TAG not in tags:
                order.append(Cell(gid, _source(t), "lesson"))
        elif kernel:
            source = _source(c)
            runnable, note = without_magics(source)
            if note:
                program.notes.append(f"cell {i + 1}: {note}")
            if runnable.strip():
                order.append(Cell(f"cell {i + 1}", runnable, "scratch"))
    # a setup cell the student deleted still runs, first: the lesson needs it
    missing = [Cell(gid, _source(t), "setup", gid) for gid, t in released.items()
               if SETUP_TAG in _tags(t) and gid not in ran_setup]
    program.cells = missing + order
    # never before the exercise's own cell: a self-check moved above its exercise still grades it
    program.checkpoints = {ex: max(n, defined_at.get(ex, 0)) + len(missing)
                           for ex, n in program.checkpoints.items()}
    return program


def _template(code: list[dict], lesson: Lesson, released: Path | None) -> list[dict]:
    """The cells of the released notebook the student's is compared with: `released` when given,
    else the edition (lessons/<id>.ipynb or a translation, lessons/<lang>/<id>.ipynb) with the most
    locked cells that the student's match as released; the English one on a tie. Nothing the
    student's file says about itself (its language metadata) is trusted: the editions differ only
    in the text their demo cells show, so whichever is chosen, the same code runs and the same
    checks grade it; the choice only decides which version of a locked cell counts as unedited."""
    best, best_matches = None, -1
    for path in ((released,) if released else lesson.released_editions):
        cells, _, fatal = read_cells(path)
        if fatal:
            raise RuntimeError(f"the released lesson {lesson.id} ({path.name}) is broken: {fatal}")
        matches = _unedited_locked_cells(code, cells)
        if matches > best_matches:
            best, best_matches = cells, matches
    return best


def _unedited_locked_cells(code: list[dict], template: list[dict]) -> int:
    released = {_nbgrader(t).get("grade_id"): _source(t).strip() for t in template
                if t.get("cell_type") == "code" and not _nbgrader(t).get("solution")
                and isinstance(_nbgrader(t).get("grade_id"), str)}
    return sum(1 for c in code if released.get(_nbgrader(c).get("grade_id"), None) == _source(c).strip())


def without_magics(source: str) -> tuple[str, str | None]:
    """(Python source, note): IPython magics (%, %%) and shell escapes (!) become `pass`, as the
    grader has no shell and no IPython; a cell magic skips the whole cell. A cell too large for the
    grader to parse (MAX_PARSED_CELL) is read line by line only."""
    if len(source) <= MAX_PARSED_CELL:
        try:
            ast.parse(source)
            return source, None
        except Exception:   # SyntaxError, and MemoryError/RecursionError on absurd code
            pass
    lines = source.splitlines()
    first = next((ln.strip() for ln in lines if ln.strip()), "")
    if first.startswith("%%"):
        return "", f"the cell magic {first.split()[0][:40]} was skipped (the grader runs plain Python)"
    out, skipped = [], []
    for ln in lines:
        stripped = ln.lstrip()
        indent = ln[:len(ln) - len(stripped)]
        assign = re.match(r"^([A-Za-z_][\w\.\[\], ]*)=\s*[!%]", stripped)
        if stripped.startswith(("%", "!")):
            out.append(indent + "pass")
            skipped.append(stripped.split()[0])
        elif assign:
            out.append(f"{indent}{assign.group(1).strip()} = None")
            skipped.append(stripped.split("=", 1)[1].strip().split()[0])
        else:
            out.append(ln)
    if not skipped:
        return source, None
    names = [name[:40] for name in dict.fromkeys(skipped)]   # the student's text: a bounded note
    shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    return "\n".join(out), f"skipped {shown} (magics and shell commands do not run when grading)"


def _find_graded(gid, by_id, code, used, released_ids, program, cells) -> dict | None:
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
    other = next((c.get("cell_type") for c in cells if c.get("cell_type") != "code"
                  and _nbgrader(c).get("grade_id") == gid), None)
    if other is not None:
        program.problems[gid] = (f"the cell '{gid}' is a {other[:20] or 'typeless'} cell, not a code cell, so it "
                                 "does not run: make it a Code cell again (Jupyter: select it, press Y)")
        return None
    program.problems[gid] = (f"no cell defines {gid}: the graded cell was deleted or renamed. "
                             f"Restore it from the released lesson and fill it in again")
    return None


def _course_names(program: Program) -> set[str]:
    return set(program.lesson.exercises)
