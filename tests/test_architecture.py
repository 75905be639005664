"""The package's shape: stages import downwards only, and what a student's kernel imports stays small.

The contracts live in pyproject.toml ([tool.importlinter]); ARCHITECTURE.md draws the same layers.
"""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "autograder"
LONG_BY_NATURE = {"diagnose/mistakes.py"}          # the catalogue: its length is data


def test_import_contracts_hold():
    run = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command; "
                          "lint_imports_command()", "--no-cache"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout and "3 kept" in run.stdout, run.stdout[-2000:]


def test_the_linter_sees_a_broken_layer(tmp_path):
    """The contract is not vacuous: an upward import (course -> pipeline) is reported."""
    copy = tmp_path / "autograder"
    subprocess.run(["cp", "-r", str(PACKAGE), str(copy)], check=True)
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    course = copy / "course.py"
    course.write_text(course.read_text() + "\nimport autograder.pipeline  # noqa\n")
    run = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command; "
                          "lint_imports_command()", "--no-cache"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert run.returncode != 0 and "autograder.course" in run.stdout and "BROKEN" in run.stdout, run.stdout[-2000:]


@pytest.mark.parametrize("path", sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")))
def test_modules_stay_short(path):
    """No module over 400 lines, but the per-lesson check modules and the mistake catalogue."""
    if path.startswith("checks/test_") or path in LONG_BY_NATURE:
        return
    lines = (PACKAGE / path).read_text(encoding="utf-8").count("\n")
    assert lines <= 400, f"autograder/{path} has {lines} lines: split it by concern"


def test_every_stage_says_its_job_and_its_imports():
    for init in PACKAGE.glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and ("May import" in doc or "import" in doc.lower()), init


def test_the_sandboxed_worker_loads_only_the_run_stage():
    from autograder.isolate import bwrap
    assert all(m == "__init__.py" or m.startswith(("run/", "isolate/")) for m in bwrap.WORKER_MODULES)
    assert {"isolate/worker.py", "isolate/confine.py", "run/executor.py", "run/wire.py"} <= set(bwrap.WORKER_MODULES)
    for module in bwrap.WORKER_MODULES:
        assert (PACKAGE / module).exists(), module
