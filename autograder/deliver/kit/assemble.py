"""Assemble: the grader's modules a self-check imports (their import closure), with stand-ins.

`grading/reference.py` becomes the replayer, `diagnose/fingerprints/` is left out (its answers
are recorded), and lesson 06's subjects are the kit's own (deliver/kit_subjects.py). A module
under isolate/, classroom/ or deliver/ in the closure is an error: a self-check has no use for it.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2]     # autograder/
# modules the self-check imports that the kit replaces (None: left out)
REPLACED = {"grading/reference.py": "reference", "diagnose/fingerprints/__init__.py": None, "checks/projection_subjects.py": "subjects"}
# modules that must never reach the kit (they grade with the reference or hold answers)
# (a path, or a folder ending in "/": the sandbox, class runs and delivery are never a self-check's business)
NEVER = ("grading/reference.py", "diagnose/fingerprints/", "checks/projection_subjects.py", "pipeline.py",
         "__main__.py", "isolate/", "classroom/", "deliver/")


def _imports(path: Path, rel: str) -> set[str]:
    """The autograder modules (paths relative to the package) one module imports, anywhere in it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = rel.split("/")[:-1]                  # the module's own package, relative to autograder/
    found = set()

    def add(parts):
        for n in range(len(parts), 0, -1):        # a module, or a package's __init__
            for cand in ("/".join(parts[:n]) + ".py", "/".join(parts[:n] + ["__init__.py"])):
                if (PACKAGE / cand).exists():
                    found.add(cand)
                    return

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)] if node.level > 1 else package
                parts = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "autograder":
                parts = node.module.split(".")[1:]
            else:
                continue
            for alias in node.names:
                add(parts + [alias.name])
            add(parts)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "autograder":
                    add(alias.name.split(".")[1:])
    found.discard(rel)
    return found


def kit_modules(lessons: list[str]) -> list[str]:
    """The grader's modules a self-check needs: the import closure of selfcheck.py and the lessons'
    check modules, with the replaced ones left to their stand-ins."""
    todo = ["selfcheck.py", "__init__.py", "checks/pytest.ini"] + [f"checks/test_{lid}.py" for lid in lessons]
    todo += ["grading/recorded.py"]
    done: set[str] = set()
    while todo:
        rel = todo.pop()
        if rel in done:
            continue
        done.add(rel)
        if rel in REPLACED or not rel.endswith(".py"):
            continue
        if rel.startswith(NEVER):
            raise RuntimeError(f"the student kit would need autograder/{rel}, which grades with the reference")
        todo.extend(sorted(_imports(PACKAGE / rel, rel)))
    for rel in list(done):          # every package on the way has its __init__
        parts = rel.split("/")[:-1]
        for n in range(1, len(parts) + 1):
            init = "/".join(parts[:n] + ["__init__.py"])
            if (PACKAGE / init).exists():
                done.add(init)
    return sorted(rel for rel in done if not rel.startswith("diagnose/fingerprints/"))


def _swap_mutants_import(text: str, rel: str) -> str:
    """`from autograder.diagnose import fingerprints` -> the recorded stand-in."""
    text, n1 = re.subn(r"^from autograder\.diagnose import fingerprints$",
                       "from autograder.grading.recorded import mutants as fingerprints", text, flags=re.M)
    for node in ast.walk(ast.parse(text)):
        names = [a.name for a in getattr(node, "names", [])]
        module = getattr(node, "module", None) or ""
        if isinstance(node, (ast.Import, ast.ImportFrom)) and (
                "fingerprints" in module.split(".") or ("fingerprints" in names and module != "autograder.grading.recorded")
                or any(n.endswith(".fingerprints") for n in names)):
            raise RuntimeError(f"autograder/{rel}: an import of the mutant engine the kit cannot replace")
    return text


def _kit_checking(text: str) -> str:
    """checking.py with reference_output's body answered from the recordings (same signature)."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "reference_output"), None)
    if fn is None:
        raise RuntimeError("autograder/grading/checking.py no longer defines reference_output: update autograder/deliver/kit.py")
    body = fn.body[1:] if isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant) \
        else fn.body
    indent = " " * body[0].col_offset
    lines[body[0].lineno - 1:fn.end_lineno] = [
        f"{indent}# the student kit: the answer recorded at release, never computed\n",
        f"{indent}arguments = dict(locals())\n",
        f"{indent}from autograder.grading.recorded import replay_bound\n",
        f"{indent}return replay_bound(\"checking\", \"reference_output\", arguments)\n"]
    return _swap_mutants_import("".join(lines), "grading/checking.py")


def _kit_edition(text: str) -> str:
    """The package's __init__ with EDITION = "student kit": the self-check's first line names it."""
    text, n = re.subn(r'^EDITION = "course".*$', 'EDITION = "student kit"   # written by the course\'s deliver/kit/assemble.py',
                     text, flags=re.M)
    if n != 1:
        raise RuntimeError('autograder/__init__.py no longer sets EDITION = "course": update autograder/deliver/kit/assemble.py')
    return text


KIT_REFERENCE = '''"""The student kit holds no reference solution: `reference` is the recorded answers (recorded.py)."""
from autograder.grading.recorded import PUBLIC_INPUTS_ONLY, load_reference  # noqa: F401
'''


def package_files(lessons: list[str]) -> dict[str, bytes]:
    files = {}
    for rel in kit_modules(lessons):
        if rel == "grading/reference.py":
            text = KIT_REFERENCE
        elif rel == "checks/projection_subjects.py":
            text = (PACKAGE / "deliver" / "kit_subjects.py").read_text(encoding="utf-8")
        elif rel == "__init__.py":
            text = _kit_edition((PACKAGE / rel).read_text(encoding="utf-8"))
        elif rel == "grading/checking.py":
            text = _kit_checking((PACKAGE / rel).read_text(encoding="utf-8"))
        elif rel.endswith(".py"):
            text = _swap_mutants_import((PACKAGE / rel).read_text(encoding="utf-8"), rel)
        else:
            text = (PACKAGE / rel).read_text(encoding="utf-8")
        files[f"autograder/{rel}"] = text.encode()
    for mo in sorted((PACKAGE / "locale").rglob("*.mo")):   # the feedback's languages (i18n.py), read by gettext
        files[f"autograder/{mo.relative_to(PACKAGE).as_posix()}"] = mo.read_bytes()
    return files
