"""The reference solutions, taken from the solutions/ notebooks themselves (no second copy).

The setup and solution cells of solutions/<lesson>.ipynb run in this (trusted) process, once,
and the resulting namespace is what checks call `reference`.
"""
from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import io
import sys
from types import SimpleNamespace

from autograder.course import COURSE
from autograder.load.notebook import build_program


@functools.lru_cache(maxsize=None)
def load_reference(lesson_id: str) -> SimpleNamespace:
    lesson = COURSE[lesson_id]
    program = build_program(lesson.solution_path, lesson, released=lesson.solution_path, kernel=False)
    if program.fatal or program.problems:
        raise RuntimeError(f"solutions/{lesson_id}.ipynb is broken: {program.fatal or program.problems}")
    namespace = {"__name__": f"reference_{lesson_id}"}
    # the setup cell is written for a student's kernel: what it prints there (which grader runs) and
    # the folder it puts on sys.path are not the grader's business
    path = list(sys.path)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            for cell in program.cells:
                code, deferred = _deferring_display(cell.source, f"<reference {lesson_id}: {cell.label}>")
                namespace.update(deferred)
                exec(code, namespace)
    finally:
        sys.path[:] = path
    return SimpleNamespace(**namespace)


# What the lessons' setup cells import for their plots and tables only. The reference solutions
# never draw, so these are bound to `Deferred` stand-ins, imported on first use: matplotlib alone
# costs 0.5 to 1 s, on every grade of a lesson.
DISPLAY_ONLY = frozenset({"matplotlib", "IPython"})


class Deferred:
    """A module (or a name in one) imported the first time it is used."""

    def __init__(self, module: str, attr: str | None = None, top: str | None = None):
        self._module, self._attr, self._top = module, attr, top

    def _resolve(self):
        target = importlib.import_module(self._module)
        if self._top is not None:                 # `import a.b` binds `a`
            return importlib.import_module(self._top)
        return getattr(target, self._attr) if self._attr else target

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._resolve(), name)

    def __call__(self, *args, **kwargs):
        return self._resolve()(*args, **kwargs)

    def __repr__(self):
        return f"<deferred import of {self._module}{'.' + self._attr if self._attr else ''}>"


def _deferring_display(source: str, label: str):
    """(code of the cell without its top-level imports of DISPLAY_ONLY modules, {name: Deferred}
    for the names those imports bind)."""
    tree = ast.parse(source)
    deferred, body = {}, []
    for node in tree.body:
        if isinstance(node, ast.Import) and all(a.name.split(".")[0] in DISPLAY_ONLY for a in node.names):
            for a in node.names:
                top = a.name.split(".")[0]
                deferred[a.asname or top] = Deferred(a.name) if a.asname else Deferred(a.name, top=top)
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] \
                in DISPLAY_ONLY and all(a.name != "*" for a in node.names):
            for a in node.names:
                deferred[a.asname or a.name] = Deferred(node.module, a.name)
        else:
            body.append(node)
    tree.body = body
    return compile(tree, label, "exec"), deferred


def cell_source(lesson_id: str, grade_id: str) -> str:
    """The source text of one solution cell (lesson 06 ships reference classes to the worker)."""
    lesson = COURSE[lesson_id]
    program = build_program(lesson.solution_path, lesson, released=lesson.solution_path, kernel=False)
    for cell in program.cells:
        if cell.grade_id == grade_id:
            return cell.source
    raise KeyError(f"{lesson_id} has no cell {grade_id!r}")


def class_source(lesson_id: str, class_name: str) -> str:
    """The source of one class defined anywhere in a solution notebook's setup or solution cells."""
    import ast
    lesson = COURSE[lesson_id]
    program = build_program(lesson.solution_path, lesson, released=lesson.solution_path, kernel=False)
    for cell in program.cells:
        tree = ast.parse(cell.source)
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == class_name:
                return ast.get_source_segment(cell.source, node)
    raise KeyError(f"{lesson_id} defines no class {class_name!r}")
