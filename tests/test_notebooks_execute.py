"""Every solution notebook runs top to bottom in a real kernel, and its self-checks give full marks.

The notebooks are run through the course site's cache (book.executed_solution: keyed by the
notebook, the autograder and data/), so the book's build reuses these runs instead of repeating
them; a changed notebook or grader is run again."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from autograder.deliver import book
from conftest import lesson_ids

pytestmark = pytest.mark.slow     # builds the kit, runs notebooks or grades whole classes: not in the quick loop


def execute(lesson: str):
    try:
        return book.executed_solution(lesson)
    except RuntimeError as err:          # a cell raised (executed_solution names it, and caches nothing)
        return err


def ran(executed, lesson):
    nb = executed[lesson]
    assert not isinstance(nb, Exception), str(nb)
    return nb


@pytest.fixture(scope="module")
def executed():
    with ThreadPoolExecutor(2) as pool:
        return dict(zip(lesson_ids(), pool.map(execute, lesson_ids())))


@pytest.mark.parametrize("lesson", lesson_ids())
def test_solution_notebook_runs_without_errors(executed, lesson):
    nb = ran(executed, lesson)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, [f"{e.ename}: {e.evalue}" for e in errors]


@pytest.mark.parametrize("lesson", lesson_ids())
def test_self_checks_give_full_marks_to_the_reference(executed, lesson):
    nb = ran(executed, lesson)
    checks = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert checks
    for cell in checks:
        points = cell.metadata["nbgrader"]["points"]
        results = [o for o in cell.outputs if o.output_type == "execute_result"]
        assert len(results) == 1 and float(results[0].data["text/plain"]) == points, cell.source
        assert not [o for o in cell.outputs if o.output_type == "stream" and o.name == "stderr"], \
            "nbgrader scores a grade cell with stderr output as zero"
        assert "passed all" in "".join(o.get("text", "") for o in cell.outputs)


@pytest.mark.parametrize("lesson", lesson_ids())
def test_figures_are_produced(executed, lesson):
    nb = ran(executed, lesson)
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert images, "every lesson shows at least one figure"
