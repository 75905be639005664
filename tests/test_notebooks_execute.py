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


def output_text(cell) -> str:
    return "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "")
                   for o in cell.get("outputs", []))


@pytest.mark.parametrize("lesson", lesson_ids())
def test_no_output_shows_an_object_repr(executed, lesson):
    """`torch.manual_seed(0)` as a cell's last line prints `<torch._C.Generator at 0x7f...>`."""
    import re
    nb = ran(executed, lesson)
    reprs = [m for c in nb.cells if c.cell_type == "code" for m in re.findall(r"<[^<>\n]* at 0x[0-9a-f]+>", output_text(c))]
    assert not reprs, reprs


# A figure: a decimal, or a number with a unit a run could measure (a share, a time, a size, a ratio).
UNIT = r"(?:%|s|ms|µs|seconds?|min|minutes?|hours?|KiB|MiB|GiB|KB|MB|GB|TB|×|x)"
FIGURE = r"\d+(?:,\d{3})*(?:\.\d+)?\s?" + UNIT + r"(?!\w)|\d+(?:,\d{3})*\.\d+"
# Figures that are not a run's result, so no cell prints them: what each lesson quotes of this kind.
# (A lesson's study time, "**Time:** about 45 minutes", and a version, "PyTorch 2.13", are rules below.)
NOT_MEASURED = {
    "08_fast_attention": {"2GiB", "16GiB"},                 # sizes that follow from the shapes stated
    "10_flash_attention": {"80GB",                          # 10^10 float64 numbers
                           "192KB", "19TB",                 # an A100's on-chip memory per unit, its speed (data sheet)
                           "40MiB", "93MiB"},               # the grader's memory limit, one (2000, 6000) array
}


def quoted_figures(markdown: str) -> list[str]:
    """The decimals, percentages, times, sizes and ratios a markdown cell states in its prose.
    Formulas ($...$) and code are derivations, not results; a range ('20 to 40 s', 'between 78 and
    102 s') states what runs gave, not one run; a bound ('above 90 %') says what to look for;
    'section 3.4' is a reference, 'PyTorch 2.13' a version and '**Time:** about 45 minutes' the
    time a lesson takes to work through."""
    import re
    prose = re.sub(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`", " ", markdown, flags=re.S)
    prose = re.sub(r"\*\*Time:\*\* about \d+ minutes|\b(?:PyTorch|Python|NumPy|version) \d+\.\d+(?:\.\d+)?", " ", prose)
    found = []
    for m in re.finditer(FIGURE, prose):
        before, after = prose[max(0, m.start() - 4):m.start()], prose[m.end():m.end() + 5]
        ranged = (re.search(r"(\bto |–|-)$", before) or re.match(r"(\s?to |–|-)\d", after)
                  or re.search(r"\bbetween \S+\s+and\s+$", prose[max(0, m.start() - 30):m.start()])
                  or re.match(r"\s+and\s+\d", after + prose[m.end() + 5:m.end() + 8]) and
                  re.search(r"\bbetween\s+$", prose[max(0, m.start() - 9):m.start()]))
        bound = re.search(r"\b(above|below|over|under|least|most|than|section) $", prose[max(0, m.start() - 8):m.start()])
        if not ranged and not bound and not re.match(r"[\w.]", prose[m.start() - 1:m.start()] or " "):
            found.append(re.sub(r"\s", "", m.group()))
    return found


@pytest.mark.parametrize("lesson", lesson_ids())
def test_every_figure_the_prose_quotes_is_printed_above_it(executed, lesson):
    """A result the text quotes comes from the run above it, so a student's own run shows the figure
    the text discusses (issue 33: the book printed 94.0 % over 'we saw 94.8 %')."""
    nb = ran(executed, lesson)
    above, missing = "", []
    for cell in nb.cells:
        if cell.cell_type == "code":
            above = output_text(cell).replace(" ", "")
        else:
            missing += [(figure, cell.source[:60]) for figure in quoted_figures(cell.source)
                        if figure not in above and figure not in NOT_MEASURED.get(lesson, ())]
    assert not missing, missing


def test_the_figure_search_finds_quoted_results():
    assert quoted_figures("We saw 94.8 % right, a loss of 1.135 in 35 s ($\\ln 13 \\approx 2.56$, `0.5`), "
                          "20 to 40 s, or 3-5 s, above 90 % and at least 0.5 (section 3.4).") == ["94.8%", "1.135", "35s"]
    assert quoted_figures("**Time:** about 45 minutes. It took between 78 and 102 seconds (PyTorch 2.13), "
                          "then 12 minutes; 24 MiB, 3× faster, in 2 hours; lesson 5, 8 heads.") == \
        ["12minutes", "24MiB", "3×", "2hours"]
    assert quoted_figures("pad with 1s") == ["1s"]      # reads as a second: write "ones"


def test_lesson09_output_fits_the_page(executed):
    """The book shows outputs at the page's width: at 1280 px a line over about 100 characters
    scrolls sideways (issue 33 saw the sampling table do so)."""
    nb = ran(executed, "09_generating_text")
    long = [line for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "stream"
            for line in o.text.splitlines() if len(line) > 100]
    assert not long, long
