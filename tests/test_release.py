"""lessons/ is generated from solutions/ by nbgrader's preprocessors, deterministically."""
from __future__ import annotations

import json

import pytest

from autograder.deliver import release
from autograder.course import LESSONS
from autograder.load.notebook import read_cells
from conftest import lesson_ids, run_cli


def test_lessons_are_in_sync_with_solutions():
    stale = release.out_of_sync()
    assert not stale, f"run `python -m autograder release`: out of date: {stale}"


def test_release_is_deterministic(tmp_path):
    first = {p.name: p.read_bytes() for p in release.release(tmp_path / "a")}
    second = {p.name: p.read_bytes() for p in release.release(tmp_path / "b")}
    assert first == second
    assert first == {p.name: p.read_bytes() for p in [*sorted(LESSONS.glob("*.ipynb")), LESSONS / "nbgrader_config.py"]}


@pytest.mark.slow
def test_release_command_rewrites_nothing_when_in_sync():
    before = {p: p.read_bytes() for p in LESSONS.glob("*.ipynb")}
    run = run_cli("release")
    assert run.returncode == 0, run.stderr
    assert before == {p: p.read_bytes() for p in LESSONS.glob("*.ipynb")}


@pytest.mark.parametrize("lesson", lesson_ids())
def test_student_notebook_has_stubs_not_solutions(lesson):
    cells, _, fatal = read_cells(LESSONS / f"{lesson}.ipynb")
    assert fatal is None
    text = json.dumps(cells)
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
    graded = [c for c in cells if c.get("metadata", {}).get("nbgrader", {}).get("solution")]
    assert graded
    for cell in graded:
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        assert "raise NotImplementedError()" in src
        assert '"""' in src, "every stub keeps its docstring"
    # the grader's reader keeps no outputs: the file itself is read for them
    raw = json.loads((LESSONS / f"{lesson}.ipynb").read_text(encoding="utf-8"))["cells"]
    assert all(not c.get("outputs") for c in raw if c.get("cell_type") == "code")


@pytest.mark.parametrize("lesson", lesson_ids())
def test_every_stub_is_followed_by_its_self_check(lesson):
    cells, _, _ = read_cells(LESSONS / f"{lesson}.ipynb")
    meta = [c.get("metadata", {}).get("nbgrader", {}) for c in cells]
    for i, m in enumerate(meta):
        if m.get("solution"):
            nxt = meta[i + 1]
            assert nxt.get("grade") and nxt.get("grade_id") == f"check_{m['grade_id']}"
            assert nxt.get("points", 0) > 0


@pytest.mark.slow
@pytest.mark.parametrize("where", [".", "lessons"])
def test_students_see_no_missing_nbgrader_config_warning(where):
    """Jupyter started in the repository or in lessons/ loads nbgrader's apps (Validate, the
    assignment list): without an nbgrader_config.py beside them each warns that none was found."""
    import subprocess
    import sys
    from autograder.course import ROOT
    assert (LESSONS / "nbgrader_config.py").read_text() == (ROOT / "nbgrader_config.py").read_text()
    run = subprocess.run([sys.executable, "-m", "nbgrader", "list"], cwd=ROOT / where,
                         capture_output=True, text=True, timeout=120)
    output = run.stdout + run.stderr
    assert "[ListApp" in output, output          # nbgrader ran and logged
    assert "No nbgrader_config.py file found" not in output, output


@pytest.mark.parametrize("lesson", lesson_ids())
def test_a_demo_of_an_unfinished_exercise_prints_a_line_not_a_traceback(lesson):
    """Restart & Run All on a half-done lesson: a demo cell that calls an exercise still raising
    NotImplementedError says so in one line and lets the next cells run (a student audit saw lessons
    01 and 05 stop at a traceback; lessons 04, 07 and 08 already did this)."""
    import ast
    cells, _, _ = read_cells(LESSONS / f"{lesson}.ipynb")
    code = [c for c in cells if c.get("cell_type") == "code"]
    source = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in code]
    graded = {c["metadata"]["nbgrader"]["grade_id"] for c in code if c.get("metadata", {}).get("nbgrader", {}).get("solution")}
    def guards(node):   # a try whose handlers catch NotImplementedError
        return isinstance(node, ast.Try) and any("NotImplementedError" in ast.unparse(h.type or ast.Name(""))
                                                 for h in node.handlers)

    def bare_calls(node, guarded=False):   # exercises called outside such a try, a def or a class
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Lambda)):
            return set()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in graded and not guarded:
            return {node.func.id}
        inside = guarded or guards(node)
        return set().union(*(bare_calls(child, inside) for child in ast.iter_child_nodes(node)))

    unguarded = []
    for cell, src in zip(code, source):
        nbg = cell.get("metadata", {}).get("nbgrader", {})
        if nbg.get("solution") or nbg.get("grade") or "setup" in cell.get("metadata", {}).get("tags", []):
            continue                                  # the stubs, the self-checks, the setup cell
        if calls := bare_calls(ast.parse(src)):
            unguarded.append((nbg.get("grade_id"), sorted(calls)))
    assert not unguarded, unguarded


def test_no_lesson_shows_another_lessons_answer():
    """The kit hands out every lesson at once: a line of lesson A's graded answer in lesson B's
    released notebook answers A (lesson 09's locked model held lesson 08's CausalSelfAttention).
    Only lessons built on another's answer on purpose may (tests/support/answers.py, BY_DESIGN)."""
    from support.answers import BY_DESIGN, foreign_answers
    shown = [(lid, *found) for lid in lesson_ids()
             for found in foreign_answers((LESSONS / f"{lid}.ipynb").read_text(encoding="utf-8"), lid)]
    assert not [s for s in shown if s[:2] not in BY_DESIGN], [s for s in shown if s[:2] not in BY_DESIGN]


def test_the_answer_search_finds_a_planted_answer():
    from support.answers import answer_lines, foreign_answers
    from autograder.course import COURSE
    nb = json.loads((LESSONS / "09_generating_text.ipynb").read_text(encoding="utf-8"))
    solution = json.loads(COURSE["08_fast_attention"].solution_path.read_text(encoding="utf-8"))
    nb["cells"].append(next(c for c in solution["cells"]
                            if c["metadata"].get("nbgrader", {}).get("grade_id") == "CausalSelfAttention"))
    found = foreign_answers(json.dumps(nb), "09_generating_text")
    assert len(answer_lines("08_fast_attention")) >= 15
    assert sum(lid == "08_fast_attention" for lid, _ in found) >= 10, found


@pytest.mark.parametrize("lesson", lesson_ids())
def test_no_lesson_promises_a_run_gives_the_same_figures(lesson):
    """Another CPU rounds differently and trains a slightly different model (issue 33): the text says
    what to look for, never that a student's run will match ours."""
    import re
    cells, _, _ = read_cells(LESSONS / f"{lesson}.ipynb")
    prose = " ".join("".join(c["source"]) for c in cells if c.get("cell_type") == "markdown")
    promises = re.findall(r"[^.]*\b(?:should see the same|see the same (?:lines|curve|figures|numbers)|"
                          r"when we ran (?:it|this cell)|in our run\b)[^.]*", prose)
    assert not promises, promises
