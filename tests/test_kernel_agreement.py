"""What passes in the student's notebook passes the grader: notebook-shaped submissions, each run
top to bottom in a real Jupyter kernel (nbclient), whose self-check scores must equal the
grader's scores for the same exercises."""
from __future__ import annotations

import json
import time

import nbformat
import pytest
from nbclient import NotebookClient

from autograder.course import COURSE
from autograder.report.results import by_exercise

pytestmark = pytest.mark.slow     # builds the kit, runs notebooks or grades whole classes: not in the quick loop

SOFTMAX = '''def softmax(x, axis=-1):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)
'''
ATTENTION_WITH_CONSTANT = '''def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        allowed = np.broadcast_to(np.asarray(mask).astype(bool), scores.shape)
        scores = np.where(allowed, scores, BLOCKED)
        rows = allowed.any(axis=-1, keepdims=True)
        weights = np.where(rows, softmax(np.where(rows, scores, 0.0)), 0.0)
    else:
        weights = softmax(scores)
    return weights @ v, weights
'''
TEST_WITH_LESSON_HELPER = '''def test_projections(mha_class):
    torch.manual_seed(0)
    layer = mha_class(8, 2, 0.0).eval()
    oracle = copy_into_torch(layer, 8, 2)          # the lesson's own helper, from its demo cell
    x = torch.randn(2, 5, 8)
    assert torch.allclose(layer(x), oracle(x, x, x)[0], atol=1e-5), "differs from nn.MultiheadAttention"
'''


def insert_after(nb, grade_id, *sources):
    """New code cells right after the cell with `grade_id` (as a student adds cells)."""
    index = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    for offset, source in enumerate(sources, 1):
        nb.cells.insert(index + offset, nbformat.v4.new_code_cell(source))


def fill(nb, grade_id, source):
    for c in nb.cells:
        if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
            c.source = source


def case(name):
    """(lesson_id, notebook) for one notebook-shaped submission."""
    if name.startswith("02"):
        lesson = "02_masking"
    elif name.startswith("06"):
        lesson = "06_debugging_projection_reuse"
    else:
        lesson = "01_scaled_dot_product_attention"
    nb = nbformat.read(COURSE[lesson].released_path, as_version=4)
    if name == "02_constant_in_a_scratch_cell":
        solution = nbformat.read(COURSE[lesson].solution_path, as_version=4)
        for gid in ("causal_mask", "padding_mask"):
            fill(nb, gid, next(c.source for c in solution.cells
                               if c.metadata.get("nbgrader", {}).get("grade_id") == gid))
        insert_after(nb, "setup", "BLOCKED = -np.inf")
        fill(nb, "scaled_dot_product_attention", ATTENTION_WITH_CONSTANT)
    elif name == "06_test_reuses_the_lessons_helper":
        fill(nb, "test_projections", TEST_WITH_LESSON_HELPER)
    elif name == "01_partial_helper_and_magics":
        insert_after(nb, "setup", "%matplotlib inline\nfrom functools import partial\n"
                                  "row_max = partial(np.max, keepdims=True)\n!echo hello")
        fill(nb, "softmax", "def softmax(x, axis=-1):\n    e = np.exp(x - row_max(x, axis=axis))\n"
                            "    return e / e.sum(axis=axis, keepdims=True)\n")
        insert_after(nb, "softmax", "%timeit softmax(np.ones(4))")
    elif name == "01_redefined_and_a_raising_cell":
        fill(nb, "softmax", "def softmax(x, axis=-1):\n    return np.exp(x) / np.exp(x).sum(axis, keepdims=True)\n")
        insert_after(nb, "softmax", "1 / 0  # a scratch cell that raises", SOFTMAX)
    elif name == "01_import_in_a_later_cell":
        fill(nb, "softmax", "def softmax(x, axis=-1):\n    e = npx.exp(x - x.max(axis=axis, keepdims=True))\n"
                            "    return e / e.sum(axis=axis, keepdims=True)\n")
        insert_after(nb, "softmax", "import numpy as npx")
    elif name == "01_never_ran_the_self_check":
        fill(nb, "softmax", SOFTMAX)
    return lesson, nb


CASES = ["02_constant_in_a_scratch_cell", "06_test_reuses_the_lessons_helper", "01_partial_helper_and_magics",
         "01_redefined_and_a_raising_cell", "01_import_in_a_later_cell", "01_never_ran_the_self_check"]


def kernel_scores(nb, folder) -> dict[str, float]:
    """Run like Restart & Run All (errors do not stop later cells); the self-checks' points."""
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(folder)}}).execute()
    scores = {}
    for c in nb.cells:
        if "self-check" in c.metadata.get("tags", []):
            exercise = c.metadata["nbgrader"]["grade_id"][len("check_"):]
            results = [o for o in c.get("outputs", []) if o.get("output_type") == "execute_result"]
            scores[exercise] = float(results[0]["data"]["text/plain"]) if results else 0.0
    return scores


@pytest.mark.parametrize("name", CASES)
def test_the_grader_agrees_with_the_self_check(grade, tmp_path, name):
    lesson, nb = case(name)
    path = tmp_path / f"{lesson}.ipynb"
    nbformat.write(nb, path)        # what the student hands in: the saved notebook
    ours = {ex: e["score"] for (lid, ex), e in by_exercise(grade({lesson: path})).items()}
    theirs = kernel_scores(nb, tmp_path)
    assert theirs == ours, f"kernel {theirs} vs grader {ours}"
    if name != "01_never_ran_the_self_check":   # each case is one a correct notebook must pass
        first = next(iter(COURSE[lesson].exercises)) if lesson != "02_masking" else "scaled_dot_product_attention"
        assert ours[first] > 0, ours


def test_a_scratch_cell_that_never_ends_is_cut_and_the_rest_graded(grade, tmp_path):
    lesson, nb = case("01_never_ran_the_self_check")
    insert_after(nb, "setup", "while True:\n    pass")
    path = tmp_path / f"{lesson}.ipynb"
    nbformat.write(nb, path)
    started = time.monotonic()
    result = grade({lesson: path}, time_limit=2.0)
    assert time.monotonic() - started < 30
    softmax = by_exercise(result)[(lesson, "softmax")]
    assert softmax["score"] == softmax["max"], result
    assert "did not finish within 2 s and was skipped" in result.get("output", ""), result.get("output")
