"""Would a top-to-bottom run give the object the self-check is looking at?

The grader runs the saved notebook top to bottom (see notebook.build_program) and checks each
exercise where its self-check cell stands. A kernel can hold more than that: a name from a
cell that was deleted, edited since, or run out of order (a constant defined further down, then
used above). Then the self-check passes and the grader raises NameError. This module finds the
names the exercise reads from the kernel's globals that no cell above its self-check, in the
saved notebook, binds, so the self-check can say so in one line. It only reads; it never
changes a score.
"""
from __future__ import annotations

import ast
import builtins
import dis
import inspect
import os
import sys
import types
from pathlib import Path

from autograder.i18n import N_


def saved_notebook(lesson_id: str) -> Path | None:
    """The notebook this kernel belongs to: Jupyter names it in JPY_SESSION_NAME; otherwise the
    lesson's file in the working directory (where Jupyter starts a notebook's kernel)."""
    named = os.environ.get("JPY_SESSION_NAME", "")
    for candidate in (Path(named) if named else None, Path.cwd() / f"{lesson_id}.ipynb"):
        if candidate is not None and candidate.suffix == ".ipynb" and candidate.stem == lesson_id \
                and candidate.is_file():
            return candidate
    return None


def bound_names(source: str) -> set[str]:
    """Names a cell binds at the top level: assignments, imports, def, class, for and with
    targets (also inside if/try/for blocks, never inside function or class bodies)."""
    try:
        tree = ast.parse(source)
    except Exception:   # SyntaxError and the like: the cell binds nothing when it runs
        return set()
    names: set[str] = set()
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
            continue
        if isinstance(node, ast.ImportFrom):
            if any(a.name == "*" for a in node.names):
                names.add("*")
            names.update(a.asname or a.name for a in node.names)
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        if isinstance(node, ast.Lambda):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return names


def _codes(obj) -> list[types.CodeType]:
    """The code objects of a function, or of every method of a class, with nested ones."""
    found = []
    if inspect.isclass(obj):
        for value in vars(obj).values():
            value = getattr(value, "__func__", value)             # staticmethod, classmethod
            if isinstance(value, property):
                found += [f.__code__ for f in (value.fget, value.fset, value.fdel) if f is not None]
            elif inspect.isfunction(value):
                found.append(value.__code__)
    elif inspect.isfunction(getattr(obj, "__func__", obj)):
        found.append(getattr(obj, "__func__", obj).__code__)
    todo, seen = list(found), []
    while todo:
        code = todo.pop()
        seen.append(code)
        todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return seen


def kernel_only_names(lesson_id: str, exercise: str, obj) -> list[str]:
    """Globals `obj` reads that exist in the kernel but that no cell up to the exercise's
    self-check binds in the saved notebook ([] when that cannot be told)."""
    from autograder.course import COURSE
    from autograder.load.notebook import build_program
    path = saved_notebook(lesson_id)
    if path is None or lesson_id not in COURSE:
        return []
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    namespace = getattr(obj, "__globals__", None) or (vars(module) if module else {})
    program = build_program(path, COURSE[lesson_id])
    if program.fatal:
        return []
    upto = program.checkpoints.get(exercise, len(program.cells))
    bound: set[str] = set()
    for cell in program.cells[:upto]:
        bound |= bound_names(cell.source)
    if "*" in bound:    # `from x import *`: anything may come from it
        return []
    used = {ins.argval for code in _codes(obj) for ins in dis.get_instructions(code)
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME")}          # globals read, not attributes
    return sorted(name for name in used
                  if name in namespace and name not in bound and not hasattr(builtins, name)
                  and not name.startswith("__"))


def note(lesson_id: str, exercise: str, obj) -> str | None:
    """One line for the self-check, or None when a top-to-bottom run gives the same names."""
    try:
        missing = kernel_only_names(lesson_id, exercise, obj)
    except Exception:   # a hint must never break the self-check
        return None
    if not missing:
        return None
    listed = ", ".join(f"`{n}`" for n in missing[:5])
    return (N_("note: {exercise} uses {listed} and others, which this kernel has but no cell above this check in the "
               "saved notebook defines (a cell run out of order, deleted or not saved); the grader runs the saved "
               "notebook top to bottom and will not have it: save, then Restart & Run All.") if len(missing) > 5 else
            N_("note: {exercise} uses {listed}, which this kernel has but no cell above this check in the saved "
               "notebook defines (a cell run out of order, deleted or not saved); the grader runs the saved notebook "
               "top to bottom and will not have it: save, then Restart & Run All.")).format(exercise=exercise,
                                                                                           listed=listed)
