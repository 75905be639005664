"""The self-check says in one line when the kernel holds a name a top-to-bottom run of the saved
notebook would not have (a cell run out of order, deleted, or not saved)."""
from __future__ import annotations

import contextlib
import io

import nbformat
import pytest

from autograder.load import kernel_state
from autograder.course import COURSE
from autograder.selfcheck import run_selfcheck

LESSON = "01_scaled_dot_product_attention"
SOFTMAX = ("def softmax(x, axis=-1):\n"
           "    e = np.exp(x - BIG_SHIFT * np.max(x, axis=axis, keepdims=True))\n"
           "    return e / e.sum(axis=axis, keepdims=True)\n")


def saved(tmp_path, constant_cell_at: str | None):
    """The lesson saved with the student's softmax, and `BIG_SHIFT = 1.0` in a cell of its own
    right after the setup cell ('above'), after the self-check ('below'), or nowhere."""
    nb = nbformat.read(COURSE[LESSON].released_path, as_version=4)
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]
    nb.cells[ids.index("softmax")].source = SOFTMAX
    if constant_cell_at:
        at = ids.index("setup") + 1 if constant_cell_at == "above" else ids.index("check_softmax") + 1
        nb.cells.insert(at, nbformat.v4.new_code_cell("BIG_SHIFT = 1.0"))
    nbformat.write(nb, tmp_path / f"{LESSON}.ipynb")


def kernel_softmax():
    import numpy as np
    namespace = {"np": np, "BIG_SHIFT": 1.0, "__name__": "__main__"}
    exec(SOFTMAX, namespace)
    return namespace["softmax"]


@pytest.mark.parametrize("where, expect_note", [("above", False), ("below", True), (None, True)])
def test_a_name_only_the_kernel_has_is_named(tmp_path, monkeypatch, where, expect_note):
    saved(tmp_path, where)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    hint = kernel_state.note(LESSON, "softmax", kernel_softmax())
    if expect_note:
        assert hint and "`BIG_SHIFT`" in hint and "Restart & Run All" in hint and "\n" not in hint, hint
    else:
        assert hint is None, hint


def test_the_self_check_prints_the_note_and_keeps_its_score(tmp_path, monkeypatch):
    saved(tmp_path, None)
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / f"{LESSON}.ipynb"))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        score = run_selfcheck(LESSON, "softmax", kernel_softmax())
    assert score == 3, out.getvalue()                     # the kernel's answer is right
    assert out.getvalue().count("BIG_SHIFT") == 1, out.getvalue()


def test_no_note_without_a_saved_notebook_or_for_attributes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    assert kernel_state.note(LESSON, "softmax", kernel_softmax()) is None     # nothing saved here
    saved(tmp_path, "above")
    import numpy as np
    namespace = {"np": np, "exp": None, "__name__": "__main__"}   # `np.exp` reads an attribute, not `exp`
    exec("def softmax(x, axis=-1):\n    return np.exp(x) / np.exp(x).sum(axis, keepdims=True)\n", namespace)
    assert kernel_state.note(LESSON, "softmax", namespace["softmax"]) is None


def test_bound_names_cover_the_ways_a_cell_defines_a_name():
    source = ("import numpy as np\nfrom math import sqrt as root\nA = B, C = 1, (2, 3)\nfor i in range(2): pass\n"
              "with open('f') as fh: pass\nif True:\n    D = 1\ndef f():\n    hidden = 1\nclass K: inner = 2\n"
              "(E := 5)\n")
    assert kernel_state.bound_names(source) == {"np", "root", "A", "B", "C", "i", "fh", "D", "f", "K", "E"}
    assert kernel_state.bound_names("%timeit x\n") == set()      # does not parse: binds nothing
