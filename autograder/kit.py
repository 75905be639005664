"""The student kit: `python -m autograder release --student-kit OUT` (a folder, or a .zip).

What an instructor hands out (see ../shared/COURSE_SPEC.md, "Student kit"): README.md,
requirements.txt, the released lessons/ and the self-check machinery, and nothing from which a
reference answer can be computed. The self-checks in the kit run the course's own checks, but
`reference`, `reference_output` and the mutant engine (the fingerprints diagnosis compares
with) are answered from recordings (recorded.py) made here, on the public inputs:

  1. record: every lesson's checks run against the reference solution, and against the corpus
     of known mistakes (tests/corpus/, so the diagnosis paths that only a wrong answer reaches
     are recorded too), with the reference namespace, `checking.reference_output` and the
     `mutants` module wrapped by a recorder that keeps each answer under a digest of the
     question (any attribute: a mutant function added later is covered). Every fingerprint a
     check offers is evaluated, matched or not, so the kit can name what the full grader names;
  2. assemble: the grader's modules the self-check imports (found by following the imports),
     with reference.py, mutants.py and checks/projection_subjects.py replaced: by the replayer,
     by nothing, and by lesson 06 subjects built on torch's own attention (kit_subjects.py);
  3. write: deterministic bytes (sorted records, fixed zip timestamps), built in a temporary
     folder and renamed into place.

Grading keeps its own inputs: with a course secret (plugin.course_secret) the grader's `rng`
differs from the public one the recordings were made with.
"""
from __future__ import annotations

import ast
import copy
import io
import json
import os
import re
import shutil
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from . import recorded
from .course import CHECKS, COURSE, ROOT, available_lessons

PACKAGE = Path(__file__).resolve().parent
ZIP_DATE = (2024, 1, 1, 0, 0, 0)
# modules the self-check imports that the kit replaces (None: left out)
REPLACED = {"reference.py": "reference", "mutants.py": None, "checks/projection_subjects.py": "subjects"}
# modules that must never reach the kit (they grade with the reference or hold answers)
NEVER = {"reference.py", "mutants.py", "checks/projection_subjects.py", "kit.py", "kit_subjects.py",
         "accuracy.py", "gradescope.py", "grading.py", "classroom.py", "release.py", "book.py", "__main__.py"}
KIT_PACKAGES = ("torch", "numpy", "matplotlib", "jupyter", "jupyterlab", "ipykernel", "pytest")


# ============================================================================ recording

class _Tape:
    def __init__(self):
        self.entries: dict[str, tuple[str, object]] = {}   # digest -> (kind, value)

    def put(self, key: str, kind: str, value=None):
        old = self.entries.get(key)
        if old is not None and old[0] != kind:
            raise RuntimeError(f"the same question got two kinds of answer ({old[0]}, {kind}): not replayable")
        self.entries[key] = (kind, value)


def _unwrap(x):
    if isinstance(x, (_RecCall, _RecObject)):
        return x._real
    if isinstance(x, tuple) and not hasattr(x, "_fields"):
        return tuple(_unwrap(v) for v in x)
    if isinstance(x, list):
        return [_unwrap(v) for v in x]
    if isinstance(x, dict):
        return {k: _unwrap(v) for k, v in x.items()}
    return x


def _is_data(value) -> bool:
    try:
        recorded.encode(value, [], {})
        return True
    except TypeError:
        return False


class _RecCall(recorded.Handle):
    def __init__(self, tape, key, what, real, owner=None):
        self._tape, self.key, self._what, self._real, self._owner = tape, key, what, real, owner

    def __call__(self, *args, **kwargs):
        owner = self._owner
        key = recorded.digest(owner.key if owner else self.key, self._what if owner else "", args, kwargs)
        if owner is not None:
            owner.key = key
        try:
            result = self._real(*_unwrap(args), **_unwrap(kwargs))
        except Exception as exc:
            self._tape.put(key, "raised", [type(exc).__name__, str(exc)])
            raise
        if owner is not None and result is owner._real:
            self._tape.put(key, "self")
            return owner
        if _is_data(result):
            self._tape.put(key, "value", copy.deepcopy(result))   # a check may change it in place later
            return result
        self._tape.put(key, "object")
        return _RecObject(self._tape, key, self._what, result)


class _RecObject(recorded.Handle):
    def __init__(self, tape, key, what, real):
        self._tape, self.key, self._what, self._real = tape, key, what, real

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(self._real, name)
        key = recorded.digest(self.key, "getattr", name)
        if callable(value) and not _is_data(value):
            self._tape.put(key, "callable")
            return _RecCall(self._tape, self.key, name, value, owner=self)
        self._tape.put(key, "value", copy.deepcopy(value))
        return value

    def __call__(self, *args, **kwargs):
        return _RecCall(self._tape, self.key, "__call__", self._real, owner=self)(*args, **kwargs)


class _RecNamespace:
    def __init__(self, tape, scope, real):
        self._tape, self._scope, self._real = tape, scope, real

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(self._real, name)
        key = recorded.digest("attr", self._scope, name)
        if callable(value) and not _is_data(value):
            self._tape.put(key, "callable")
            return _RecCall(self._tape, recorded.digest("call", self._scope, name), f"{self._scope}.{name}", value)
        self._tape.put(key, "value", copy.deepcopy(value))
        return value


def _bound_recorder(tape, scope, name, fn):
    """fn, recording each answer under its bound arguments (recorded.replay_bound answers it)."""
    import inspect
    signature = inspect.signature(fn)

    def recording(*args, **kwargs):
        bound = signature.bind(*_unwrap(args), **_unwrap(kwargs))
        bound.apply_defaults()
        canonical = signature.bind(*args, **kwargs)
        canonical.apply_defaults()
        key = recorded.bound_key(scope, name, canonical.arguments)
        result = fn(*bound.args, **bound.kwargs)
        if not _is_data(result):
            raise TypeError(f"{scope}.{name} answered with a {type(result).__name__}, not data")
        tape.put(key, "value", copy.deepcopy(result))
        return result
    return recording


def _eager(expect_array):
    """expect_array that first evaluates every fingerprint it is offered (so each is recorded)."""
    from .compare import Fingerprints

    def eager_expect_array(got, expected, *args, mutants=None, **kwargs):
        if isinstance(mutants, Fingerprints):
            makes = [make for _, _, make in mutants.candidates()]
        elif isinstance(mutants, dict):
            makes = list(mutants.values())
        else:
            makes = [make for _, make in (mutants or [])]
        for make in makes:
            try:
                with np.errstate(all="ignore"):
                    make()
            except Exception:
                pass
        return expect_array(got, expected, *args, mutants=mutants, **kwargs)
    return eager_expect_array


def _recording_plugin(tape, submissions, eager: bool = True):
    import pytest

    from . import checking, compare, mutants
    from .plugin import GradingPlugin
    from .reference import load_reference

    rec_mutants = _RecNamespace(tape, "mutants", mutants)
    swaps = {id(mutants): rec_mutants,
             id(checking.reference_output): _bound_recorder(tape, "checking", "reference_output",
                                                            checking.reference_output),
             id(compare.expect_array): _eager(compare.expect_array) if eager else compare.expect_array}

    class Recording(GradingPlugin):
        def __init__(self):
            super().__init__(submissions, secret=None)     # the public inputs, whatever the course secret
            self.patched: list[tuple[object, str, object]] = []

        @pytest.fixture(scope="module")
        def reference(self, request):
            lesson = request.module.LESSON
            return _RecNamespace(tape, f"reference:{lesson}", load_reference(lesson))

        def pytest_collection_modifyitems(self, session, config, items):
            modules = {id(checking): checking}
            for item in items:
                modules[id(item.module)] = item.module
            for name, module in list(__import__("sys").modules.items()):
                if name.startswith("autograder.checks") and module is not None:
                    modules[id(module)] = module
            for module in modules.values():
                for name, value in list(vars(module).items()):
                    if id(value) in swaps:
                        self.patched.append((module, name, value))
                        setattr(module, name, swaps[id(value)])
            super().pytest_collection_modifyitems(session, config, items)

        def restore(self):
            for module, name, value in reversed(self.patched):
                setattr(module, name, value)
            self.patched.clear()

    return Recording()


def _namespaces(lesson_id: str, corpus: bool):
    """[(label, namespace)]: the reference, then each corpus entry of the lesson (its cells run
    over the reference's namespace, as the released notebook would run them)."""
    from .reference import load_reference
    base = vars(load_reference(lesson_id))
    found = [("reference", dict(base))]
    if not corpus:
        return found
    from .accuracy import CORPUS, load
    if not CORPUS.exists():
        return found
    for entry in load(CORPUS):
        if entry.lesson != lesson_id or entry.expect == "correct":
            continue
        ns = dict(base)
        try:
            for grade_id in COURSE[lesson_id].exercises:
                if grade_id in entry.cells:
                    exec(compile(entry.cells[grade_id], f"<corpus {entry.name}: {grade_id}>", "exec"), ns)
        except Exception:
            continue
        found.append((entry.name, ns))
    return found


def record(lessons: list[str], corpus: bool = True) -> _Tape:
    """Run the checks of `lessons` and keep every answer they asked for."""
    import contextlib
    import warnings

    from .compare import Fingerprints
    from .plugin import run_checks
    from .student import LocalSubmission
    tape = _Tape()
    recent = list(Fingerprints.recent)
    try:
        for lesson_id in lessons:
            for label, ns in _namespaces(lesson_id, corpus):
                # the reference run evaluates every fingerprint offered; a corpus entry records the path
                # its own diagnosis takes (from the same starting state every time: deterministic)
                Fingerprints.recent[:] = []
                plugin = _recording_plugin(tape, {lesson_id: LocalSubmission(ns)}, eager=label == "reference")
                try:
                    with warnings.catch_warnings(), np.errstate(all="ignore"), \
                            contextlib.redirect_stderr(io.StringIO()):
                        warnings.simplefilter("ignore")
                        run_checks(plugin, [lesson_id])
                finally:
                    plugin.restore()
    finally:
        Fingerprints.recent[:] = recent
    return tape


def tape_files(tape: _Tape) -> dict[str, bytes]:
    """index.json and arrays.npz, in an order that depends on the questions only."""
    arrays: list[np.ndarray] = []
    seen: dict = {}
    answers = {}
    for key in sorted(tape.entries):
        kind, value = tape.entries[key]
        if kind == "value":
            answers[key] = {"value": recorded.encode(value, arrays, seen)}
        elif kind == "raised":
            answers[key] = {"raised": value}
        else:
            answers[key] = {"kind": kind}
    index = json.dumps({"format": 1, "answers": answers}, sort_keys=True, separators=(",", ":")) + "\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for i, a in enumerate(arrays):
            npy = io.BytesIO()
            np.lib.format.write_array(npy, a, allow_pickle=False)
            info = zipfile.ZipInfo(f"a{i}.npy", date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, npy.getvalue())
    return {"index.json": index.encode(), "arrays.npz": buf.getvalue()}


# ============================================================================ assembling

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
    todo += ["recorded.py"]
    done: set[str] = set()
    while todo:
        rel = todo.pop()
        if rel in done:
            continue
        done.add(rel)
        if rel in REPLACED or not rel.endswith(".py"):
            continue
        if rel in NEVER:
            raise RuntimeError(f"the student kit would need autograder/{rel}, which grades with the reference")
        todo.extend(sorted(_imports(PACKAGE / rel, rel)))
    for rel in list(done):          # every package on the way has its __init__
        parts = rel.split("/")[:-1]
        for n in range(1, len(parts) + 1):
            init = "/".join(parts[:n] + ["__init__.py"])
            if (PACKAGE / init).exists():
                done.add(init)
    return sorted(done - {"mutants.py"})


def _swap_mutants_import(text: str, rel: str) -> str:
    """`from autograder import mutants` / `from . import mutants` -> the recorded stand-in."""
    text, n1 = re.subn(r"^from (autograder|\.) import mutants$", "from autograder.recorded import mutants",
                       text, flags=re.M)
    for node in ast.walk(ast.parse(text)):
        names = [a.name for a in getattr(node, "names", [])]
        module = getattr(node, "module", None) or ""
        if isinstance(node, (ast.Import, ast.ImportFrom)) and (
                "mutants" in module.split(".") or ("mutants" in names and module in ("autograder", ""))
                or any(n.endswith(".mutants") for n in names)):
            raise RuntimeError(f"autograder/{rel}: an import of the mutant engine the kit cannot replace")
    return text


def _kit_checking(text: str) -> str:
    """checking.py with reference_output's body answered from the recordings (same signature)."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "reference_output"), None)
    if fn is None:
        raise RuntimeError("autograder/checking.py no longer defines reference_output: update autograder/kit.py")
    body = fn.body[1:] if isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant) \
        else fn.body
    indent = " " * body[0].col_offset
    lines[body[0].lineno - 1:fn.end_lineno] = [
        f"{indent}# the student kit: the answer recorded at release, never computed\n",
        f"{indent}arguments = dict(locals())\n",
        f"{indent}from .recorded import replay_bound\n",
        f"{indent}return replay_bound(\"checking\", \"reference_output\", arguments)\n"]
    return _swap_mutants_import("".join(lines), "checking.py")


KIT_INIT_HOOK = '''
# Instructors grading with nbgrader: `AUTOGRADER_COURSE=/path/to/the/course nbgrader autograde ...` makes
# this package the course's full autograder (its reference and the course secret's hidden inputs)
# instead of the kit's recorded self-checks. Without the course's repository it changes nothing.
import os as _os

if _os.environ.get("AUTOGRADER_COURSE"):
    __path__.insert(0, _os.path.join(_os.environ["AUTOGRADER_COURSE"], "autograder"))
'''

KIT_REFERENCE = '''"""The student kit holds no reference solution: `reference` is the recorded answers (recorded.py)."""
from .recorded import PUBLIC_INPUTS_ONLY, load_reference  # noqa: F401
'''


def package_files(lessons: list[str]) -> dict[str, bytes]:
    files = {}
    for rel in kit_modules(lessons):
        if rel == "reference.py":
            text = KIT_REFERENCE
        elif rel == "__init__.py":
            text = (PACKAGE / rel).read_text(encoding="utf-8") + KIT_INIT_HOOK
        elif rel == "checks/projection_subjects.py":
            text = (PACKAGE / "kit_subjects.py").read_text(encoding="utf-8")
        elif rel == "checking.py":
            text = _kit_checking((PACKAGE / rel).read_text(encoding="utf-8"))
        elif rel.endswith(".py"):
            text = _swap_mutants_import((PACKAGE / rel).read_text(encoding="utf-8"), rel)
        else:
            text = (PACKAGE / rel).read_text(encoding="utf-8")
        files[f"autograder/{rel}"] = text.encode()
    return files


def kit_requirements() -> str:
    pins = {}
    for line in map(str.strip, (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()):
        name = re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0].lower()
        if name in KIT_PACKAGES:
            pins[name] = line
    missing = set(KIT_PACKAGES) - set(pins)
    if missing:
        raise ValueError(f"requirements.txt does not pin {', '.join(sorted(missing))}")
    return ("# What the course's notebooks and their self-checks need: python3 -m pip install -r requirements.txt\n"
            "# PyTorch is pinned exactly. From PyPI's default index on Linux this pin is the CUDA build (about\n"
            "# 3 GB); a machine without a GPU installs the CPU build with PyTorch's own wheel index:\n"
            "#   python3 -m pip install --extra-index-url https://download.pytorch.org/whl/cpu -r requirements.txt\n"
            + "\n".join(pins[name] for name in KIT_PACKAGES) + "\n")


STUDENT_README = """# Multi-head attention, one exercise at a time: your course kit

Eight Jupyter notebooks build multi-head attention from a NumPy softmax up to a PyTorch module,
a transformer block and fast decoding. Each exercise has a **self-check** cell right after it.

## Install (once)

You need Python 3.11 or newer. In this folder:

```bash
python3 -m venv .venv && . .venv/bin/activate          # optional, but keeps the course apart
python3 -m pip install -r requirements.txt
```

On a machine without a GPU, ask pip for PyTorch's CPU build (the default is the CUDA build, about
3 GB of downloads):

```bash
python3 -m pip install --extra-index-url https://download.pytorch.org/whl/cpu -r requirements.txt
```

Nothing else is needed, and after the install everything works offline.

## Open the course

```bash
jupyter lab lessons/
```

(As root, in a container for instance: `jupyter lab --allow-root lessons/`.) Work through
`lessons/01_scaled_dot_product_attention.ipynb` first, then the others in order; lessons 1 to 6
are the core, 7 and 8 go further.

## Self-check

Each exercise is a function or class whose body is `raise NotImplementedError()`; its docstring
says what to return. Run the cell after it: the self-check runs the course's own checks on your
code and prints what passed, what failed, and which common mistake your answer looks like, with
a hint. The number it shows last is your score for that exercise.

The self-checks compare your answers with answers recorded on the course's own check inputs.
Your instructor grades on other inputs of the same kind, so code that solves the exercise gets
the same score there; code that only reproduces the self-check's answers does not.

Before you submit: save, then Kernel > Restart Kernel and Run All Cells, and read the
self-checks. The grader runs your notebook the same way, top to bottom in a fresh process.

## Submit

Hand in your `lessons/<lesson_id>.ipynb` files as your course asks (an upload, a folder, or
nbgrader's exchange). Keep the file names: the grader knows a lesson by its file name.

## What is in this folder

| path | what it holds |
|---|---|
| `lessons/` | the nine notebooks you work in |
| `data/` | the corpus lesson 9 trains its model on |
| `autograder/` | the self-check: the course's checks and the answers they compare with, recorded as data |
| `requirements.txt` | what to install |
"""


def kit_files(lessons: list[str] | None = None, corpus: bool = True) -> dict[str, bytes]:
    """{path in the kit: bytes}."""
    from .release import render, student_version
    lessons = lessons or [lesson.id for lesson in available_lessons()]
    files = package_files(lessons)
    for name, data in tape_files(record(lessons, corpus=corpus)).items():
        files[f"autograder/records/{name}"] = data
    for lesson_id in lessons:
        files[f"lessons/{lesson_id}.ipynb"] = render(student_version(COURSE[lesson_id].solution_path)).encode()
    if "09_generating_text" in lessons:   # the corpus lesson 09 trains its model on (data, no code)
        for path in sorted((ROOT / "data" / "sums").glob("*")):
            if path.suffix in (".txt", ".md"):
                files[f"data/sums/{path.name}"] = path.read_bytes()
    files["README.md"] = STUDENT_README.encode()
    files["requirements.txt"] = kit_requirements().encode()
    return files


def write_kit(out: Path, lessons: list[str] | None = None, corpus: bool = True) -> Path:
    """Build the kit in a temporary place next to `out`, then rename it into place."""
    out = Path(out).resolve()
    files = kit_files(lessons, corpus)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".zip":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, data in sorted(files.items()):
                info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
                info.external_attr = 0o100644 << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, data)
        from .report import write_atomic
        write_atomic(out, buf.getvalue())
        os.chmod(out, 0o644)             # a file to hand out (write_atomic's temporary file is private)
        return out
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    try:
        for name, data in sorted(files.items()):
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        os.chmod(tmp, 0o755)
        if out.exists():               # replace an older kit: move it aside, then drop it
            old = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.old."))
            os.replace(out, old / "kit")
            os.replace(tmp, out)
            shutil.rmtree(old)
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def ensure_secret() -> tuple[Path, bool]:
    """The course secret's file (created with 256 random bits if there is none): (path, created)."""
    import secrets

    from .plugin import secret_path
    path = secret_path()
    if path.exists():
        return path, False
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    return path, True
