"""Run lesson notebooks' code the way a student's kernel does, and report each self-check.

    python -I kit_driver.py PLAN.json OUT.json

PLAN: {"root": folder whose autograder/ must be the one imported, "runs": [{"name", "lesson",
"cells": [source, ...], "cwd" (optional)}]}. Each run executes its cells top to bottom in a fresh
namespace, in ROOT/lessons/ (or cwd; Jupyter runs a notebook in its folder); OUT gets, per run, each
self-check's exercise, score and printed verdict. Used by tests/test_student_kit.py with the
student kit (run from a copy outside the repository, `python -I`, the repository's editable
install switched off) and with the repository itself (the full self-check, for comparison).
"""
import contextlib
import io
import json
import os
import sys
from pathlib import Path

plan = json.loads(Path(sys.argv[1]).read_text())
root = Path(plan["root"]).resolve()
# the repository's editable install (a meta-path finder) must not answer `import autograder`
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
sys.path.insert(0, str(root))
os.environ["MPLBACKEND"] = "Agg"

import autograder  # noqa: E402

where = Path(autograder.__file__).resolve().parent
assert where == root / "autograder", f"imported {where}, expected {root / 'autograder'}"

results = {"autograder": str(where), "modules": [], "runs": {}}
for run in plan["runs"]:
    os.chdir(Path(run.get("cwd") or root / "lessons"))
    ns = {"__name__": "__main__"}
    checks = []

    def wrap(check):
        def recorded_check(exercise, obj):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                score = check(exercise, obj)
            checks.append({"exercise": exercise, "score": score, "verdict": out.getvalue()})
            return score
        recorded_check.wrapped = True
        return recorded_check

    for source in run["cells"]:
        lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile("\n".join(lines), f"<{run['name']}>", "exec"), ns)
        except Exception as exc:  # a cell that raises does not stop the next ones
            checks.append({"cell_error": f"{type(exc).__name__}: {exc}"})
        if "check" in ns and not getattr(ns["check"], "wrapped", False):
            ns["check"] = wrap(ns["check"])
    results["runs"][run["name"]] = checks
results["modules"] = sorted(m for m in sys.modules if m.startswith("autograder"))
Path(sys.argv[2]).write_text(json.dumps(results, indent=1))
