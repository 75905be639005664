"""The Chinese notebooks run as the English ones do, and show their text in Chinese.

Each solution, translated as its Chinese lesson is (prose and the demos' shown literals:
deliver/code_strings.py), runs top to bottom in a real kernel with the Chinese lessons'
matplotlibrc, through the site's cache (book.executed_solution with lang), so the Chinese book's
build reuses these runs. A translated literal that was also code (a key, a value compared) would
raise here, or break a demo's own assert.
"""
from __future__ import annotations

import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from autograder.deliver import book
from conftest import lesson_ids

pytestmark = [pytest.mark.slow, pytest.mark.extended]   # runs every lesson's notebook (~5 min on 2 cores): .ci/run runs it (-m extended)

LANG = "zh_CN"
HAN = re.compile(r"[\u4e00-\u9fff]")


def execute(lesson: str):
    try:
        return book.executed_solution(lesson, lang=LANG)
    except RuntimeError as err:          # a cell raised (executed_solution names it, and caches nothing)
        return err


@pytest.fixture(scope="module")
def executed():
    with ThreadPoolExecutor(2) as pool:
        return dict(zip(lesson_ids(), pool.map(execute, lesson_ids())))


def _outputs(nb, kind):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == kind]


def _cjk_font_installed() -> bool:
    try:
        return bool(subprocess.run(["fc-list", ":lang=zh"], capture_output=True, text=True).stdout.strip())
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("lesson", lesson_ids())
def test_chinese_solution_runs_and_speaks_chinese(executed, lesson):
    nb = executed[lesson]
    assert not isinstance(nb, Exception), str(nb)
    assert not _outputs(nb, "error")
    printed = "".join(o.text for o in _outputs(nb, "stream") if o.name == "stdout")
    assert HAN.search(printed), "the demos print nothing in Chinese"
    assert any("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    checks = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"]
    for cell in checks:   # the self-checks give the reference full marks, as in English
        assert "passed all" in "".join(o.get("text", "") for o in cell.outputs), cell.source


@pytest.mark.skipif(not _cjk_font_installed(), reason="no Chinese font here (CI installs fonts-wqy-microhei)")
@pytest.mark.parametrize("lesson", lesson_ids())
def test_chinese_figures_find_a_chinese_font(executed, lesson):
    """With a Chinese font installed, matplotlib draws every character (its warning otherwise:
    "Glyph ... missing from font(s)"), so no figure shows boxes."""
    nb = executed[lesson]
    assert not isinstance(nb, Exception), str(nb)
    missing = [o.text for o in _outputs(nb, "stream") if "missing from font" in o.text]
    assert not missing, missing[0][:300]
