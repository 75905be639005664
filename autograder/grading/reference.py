"""The reference solutions, taken from the solutions/ notebooks themselves (no second copy).

The setup and solution cells of solutions/<lesson>.ipynb run in this (trusted) process, once,
and the resulting namespace is what checks call `reference`.
"""
from __future__ import annotations

import functools
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
    for cell in program.cells:
        exec(compile(cell.source, f"<reference {lesson_id}: {cell.label}>", "exec"), namespace)
    return SimpleNamespace(**namespace)


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
