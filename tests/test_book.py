"""The course site: both builds, then every page opened in headless Chromium (Debian's own).

The builds run `jupyter-book build` exactly as INSTRUCTORS.md says. Each page is served from
localhost and checked for JavaScript errors, rendered math, loaded images, tracebacks, requests
that leave localhost and, in the student build, reference solution code. A screenshot of every
page is saved under book/_build/screenshots/<variant>/.
"""
from __future__ import annotations

import functools
import http.server
import json
import re
import subprocess
import threading
import time
from pathlib import Path

import nbformat
import pytest

from autograder.deliver import book
from autograder.course import COURSE
from conftest import ROOT
from support.chromium import chromium

BUILD = ROOT / "book" / "_build"
OUTPUT = {"student": BUILD / "html", "instructor": BUILD / "instructor" / "_build" / "html"}
# the README's commands, plus --all (read every page again) and -W (a warning, e.g. a broken link, fails)
COMMAND = {"student": ["jupyter-book", "build", "book/", "--all", "-W"],
           "instructor": ["jupyter-book", "build", "book/", "--all", "-W", "--config", "book/_config_instructor.yml",
                          "--path-output", "book/_build/instructor"]}
PAGES = ["intro", "mistakes", "genindex", "search"] + [f"lessons/{lid}" for lid in COURSE]

# Building the site and running the notebooks are `slow` (left out of the quick loop); the page
# generation itself is tested quickly on the unexecuted solution notebook.
slow = pytest.mark.slow


@functools.lru_cache(maxsize=None)
def build(variant: str) -> tuple[Path, float]:
    started = time.monotonic()
    run = subprocess.run(COMMAND[variant], cwd=ROOT, capture_output=True, text=True, timeout=600)
    seconds = time.monotonic() - started
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "build succeeded" in run.stdout
    timings = BUILD / "build-seconds.json"
    data = json.loads(timings.read_text()) if timings.exists() else {}
    timings.write_text(json.dumps({**data, variant: round(seconds, 1)}) + "\n")
    return OUTPUT[variant], seconds


def solution_lines(lesson_id: str) -> set[str]:
    """Lines of reference code that a student never sees: in a solution region, in no lesson.

    (A later lesson may hand out an earlier one's solution in its setup cell, as lesson 02 does
    with softmax; such lines are in the student notebooks anyway.)"""
    released = "\n".join(lesson.released_path.read_text(encoding="utf-8") for lesson in COURSE.values())
    nb = nbformat.read(str(COURSE[lesson_id].solution_path), as_version=4)
    lines = set()
    for cell in nb.cells:
        if not cell.metadata.get("nbgrader", {}).get("solution"):
            continue
        inside = False
        for line in cell.source.splitlines():
            if "### BEGIN SOLUTION" in line or "### END SOLUTION" in line:
                inside = "BEGIN" in line
                continue
            text = line.strip()
            if inside and len(text) >= 16 and not text.startswith("#") and json.dumps(text)[1:-1] not in released:
                lines.add(text)
    return lines


# -- static checks: no browser needed ---------------------------------------------------

@slow
@pytest.mark.parametrize("variant", ["student", "instructor"])
def test_book_builds_every_page_from_solutions(variant):
    html, _ = build(variant)
    for page in PAGES:
        assert (html / f"{page}.html").exists(), page
    assert (html / "_static" / "mathjax" / "tex-chtml.js").exists()  # bundled, not a CDN
    generated = (ROOT / "book" / "lessons")
    assert sorted(p.stem for p in generated.glob("*.ipynb")) == sorted(COURSE)
    toc = (ROOT / "book" / "_toc.yml").read_text()
    assert all(f"lessons/{lid}" in toc for lid in COURSE)


@slow
def test_no_page_refers_to_another_host():
    html, _ = build("student")
    for page in html.rglob("*.html"):
        external = re.findall(r'<(?:script|link|img)[^>]+(?:src|href)="(https?:)?//[^"]+"', page.read_text())
        assert not external, (page.name, external[:3])


@slow
def test_no_file_of_the_student_site_holds_solution_code():
    html, _ = build("student")
    secrets = {line: lid for lid in COURSE for line in solution_lines(lid)}
    for path in html.rglob("*"):
        if path.is_file() and path.suffix in (".html", ".js", ".ipynb", ".txt", ".md", ".json"):
            text = path.read_text(encoding="utf-8", errors="replace")
            if path.suffix == ".ipynb":
                text = "\n".join(c.source for c in nbformat.reads(text, as_version=4).cells)
            leaked = [line for line in secrets if line in text]
            assert not leaked, (str(path.relative_to(html)), leaked[:3])


@slow
def test_common_mistakes_page_lists_the_whole_catalogue():
    html, _ = build("student")
    text = (html / "mistakes.html").read_text()
    from autograder.diagnose.mistakes import CATALOGUE
    for mistake in CATALOGUE.values():
        assert f'id="{mistake.id}"' in text, mistake.id


def test_solution_line_finder_finds_lines_to_look_for():
    for lesson_id in COURSE:
        assert len(solution_lines(lesson_id)) >= 2, lesson_id


def test_page_generation_strips_solutions_and_hides_the_plumbing():
    nb = nbformat.read(str(COURSE["01_scaled_dot_product_attention"].solution_path), as_version=4)
    student = book.page(nb, "student")
    instructor = book.page(nb, "instructor")
    secret = sorted(solution_lines("01_scaled_dot_product_attention"))[0]
    assert secret not in nbformat.writes(student)
    assert secret in nbformat.writes(instructor)
    checks = [c for c in student.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert checks and all(not c.outputs for c in checks)
    # the setup cell keeps its imports; the self-check plumbing moves to a cell the site removes
    setup = [c for c in student.cells if "setup" in c.metadata.get("tags", [])]
    assert len(setup) == 1 and "import numpy as np" in setup[0].source and "selfcheck" not in setup[0].source
    hidden = [c for c in student.cells if "remove-cell" in c.metadata.get("tags", [])]
    assert len(hidden) == 1 and "from autograder.selfcheck import checker" in hidden[0].source
    assert 'check = checker("01_scaled_dot_product_attention")' in hidden[0].source


def test_the_generated_pages_name_every_mistake_and_every_point():
    text = book.mistakes_page()
    from autograder.diagnose.mistakes import CATALOGUE
    assert all(f"({m.id})=" in text and f"## `{m.id}`" in text for m in CATALOGUE.values())
    table = book.points_table()
    assert table.rstrip().endswith("| **all lessons** | | **108** |")    # lessons 01-09's 98 points, and lesson 10's 10
    assert sum(f"`{ex}`" in table for lesson in COURSE.values() for ex in lesson.exercises) == \
        sum(len(lesson.exercises) for lesson in COURSE.values())


@slow
def test_the_executed_page_keeps_the_reference_figures_and_empties_the_self_checks():
    nb = book.executed_solution("01_scaled_dot_product_attention", BUILD / ".executed")
    student = book.page(nb, "student")
    images = [o for c in student.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert images
    checks = [c for c in student.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert checks and all(not c.outputs for c in checks)
    assert sorted(solution_lines("01_scaled_dot_product_attention"))[0] not in nbformat.writes(student)


# -- the browser ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as driver:
        yield driver


@pytest.fixture(scope="module")
def served():
    servers = {}

    def serve(variant: str) -> str:
        if variant not in servers:
            html, _ = build(variant)
            handler = functools.partial(QuietHandler, directory=str(html))
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            servers[variant] = server
        return f"http://127.0.0.1:{servers[variant].server_address[1]}/"
    yield serve
    for server in servers.values():
        server.shutdown()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


PAGE_STATE = """
const body = document.body;
const text = body.innerText;
const prose = body.cloneNode(true);  // the page without code, rendered math and scripts
prose.querySelectorAll('pre, code, .highlight, mjx-container, script, style, template').forEach(e => e.remove());
const mathNodes = Array.from(document.querySelectorAll('.math'));
return {
  title: document.title,
  errors: window.__errors || [],
  mathNodes: mathNodes.length,
  mathRendered: mathNodes.filter(e => e.querySelector('mjx-container')).length,
  mjx: document.querySelectorAll('mjx-container').length,
  text: text,
  prose: prose.textContent,
  allText: body.textContent,
  images: Array.from(document.images).map(i => ({src: i.currentSrc, ok: i.complete && i.naturalWidth > 0})),
  resources: performance.getEntriesByType('resource').map(r => r.name),
  tracebacks: document.querySelectorAll('.output.traceback, .output.error, .stderr.traceback').length,
};"""


def open_page(driver, url: str) -> dict:
    driver.get_log("browser")  # drop what earlier pages logged
    driver.get(url)
    from selenium.webdriver.support.ui import WebDriverWait
    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")
    # MathJax typesets after load; wait until every math node holds rendered output (or time out)
    try:
        WebDriverWait(driver, 20).until(lambda d: d.execute_script(
            "const m = document.querySelectorAll('.math');"
            "return Array.from(m).every(e => e.querySelector('mjx-container'));"))
    except Exception:
        pass  # reported by the assertions below
    state = driver.execute_script(PAGE_STATE)
    state["console"] = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"
                        and "favicon.ico" not in e["message"]]  # Chrome asks every site for one
    return state


def screenshot(driver, variant: str, page: str) -> Path:
    """The whole page, not just the window (Chrome's DevTools full-page capture)."""
    import base64
    folder = BUILD / "screenshots" / variant
    folder.mkdir(parents=True, exist_ok=True)
    size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 16000), "scale": 1}
    shot = driver.execute_cdp_cmd("Page.captureScreenshot",
                                  {"format": "png", "captureBeyondViewport": True, "clip": clip})
    path = folder / f"{page.replace('/', '__')}.png"
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


RAW_MATH = re.compile(r"(?<![\w$])\$[^$\n]{1,200}\$(?!\w)|\\\(|\\\[")


@slow
@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("variant", ["student", "instructor"])
def test_page_in_a_real_browser(browser, served, variant, page):
    base = served(variant)
    state = open_page(browser, base + f"{page}.html")
    OVERFLOWS[variant, page] = overflow(browser)      # read by the 1280-px check: one visit a page, not two
    shot = screenshot(browser, variant, page)
    assert shot.stat().st_size > 10_000

    assert not state["errors"], state["errors"]
    assert not state["console"], state["console"]
    outside = [r for r in state["resources"] if not r.startswith(base)]
    assert not outside, f"requests that leave the site: {outside[:5]}"
    assert state["mathRendered"] == state["mathNodes"], \
        f"{state['mathNodes'] - state['mathRendered']} of {state['mathNodes']} math elements were not rendered"
    raw = RAW_MATH.findall(state["prose"])
    assert not raw, f"raw TeX left on the page: {raw[:5]}"
    broken = [i["src"] for i in state["images"] if not i["ok"]]
    assert not broken, f"images that did not load: {broken}"
    assert "Traceback (most recent call last)" not in state["allText"] and state["tracebacks"] == 0

    if page == "intro" or page in ("lessons/01_scaled_dot_product_attention", "lessons/05_multi_head_attention"):
        assert state["mathNodes"] > 0 and state["mjx"] >= state["mathNodes"], \
            "this page has formulas; they were not rendered"
    if page.startswith("lessons/"):
        lesson_id = page.split("/")[1]
        assert any(i["src"].endswith(".png") for i in state["images"]), "the lesson's figures are missing"
        assert "raise NotImplementedError" in state["allText"], "the stubs are missing"
        leaked = [line for line in solution_lines(lesson_id) if line in state["allText"]]
        if variant == "student":
            assert not leaked, f"reference solution code in the student site: {leaked[:3]}"
        else:
            assert leaked, "the instructor site should show the reference solutions"
            assert "Reference solution" in state["text"]
            blocks = browser.execute_script(
                "return Array.from(document.querySelectorAll('.admonition.dropdown'))"
                ".map(d => ({title: d.querySelector('.admonition-title').innerText,"
                "            code: Array.from(d.querySelectorAll('pre')).map(p =>"
                "              p.checkVisibility({visibilityProperty: true}) && p.getBoundingClientRect().height > 0)}));")
            assert len(blocks) == len(COURSE[lesson_id].exercises), blocks
            assert all(b["title"].startswith("Reference solution") for b in blocks)
            assert all(b["code"] and not any(b["code"]) for b in blocks), "the solutions should start collapsed"
            shown = browser.execute_script(  # one click opens a solution
                "const d = document.querySelector('.admonition.dropdown');"
                "d.querySelector('button.toggle-button').click();"
                "const p = d.querySelector('pre');"
                "return p.checkVisibility({visibilityProperty: true}) && p.getBoundingClientRect().height > 0;")
            assert shown, "clicking 'Reference solution' should show the code"


# -- nothing scrolls sideways at 1280 px (issue 33) ----------------------------------------

# What needs sideways scrolling on the page, and why. MathJax's own parts are left out (its
# assistive MathML is off-screen by design, its stretchy glyphs clip themselves); a formula is
# judged by its container. "scrolls": a box with a horizontal scroll bar (overflow-x auto or
# scroll, wider content); "cut off": a code block, table or formula whose content is hidden past
# its edge; "sticks out": anything drawn past the right edge of its column (the article or a
# sidebar).
OVERFLOW = """
const describe = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
  + (typeof e.className === 'string' && e.className.trim() ? '.' + e.className.trim().split(/\\s+/).slice(0, 2).join('.') : '');
const doc = document.documentElement;
const found = [];
if (doc.scrollWidth > doc.clientWidth) found.push({what: 'the page', why: 'scrolls', by: doc.scrollWidth - doc.clientWidth});
const columns = Array.from(document.querySelectorAll('.bd-article, .bd-sidebar-primary, .bd-sidebar-secondary'));
for (const el of document.body.querySelectorAll('*')) {
  const tag = el.tagName.toLowerCase();
  if (el.closest('mjx-assistive-mml') || (tag.startsWith('mjx-') && tag !== 'mjx-container')) continue;
  if (!el.checkVisibility({visibilityProperty: true})) continue;
  const rect = el.getBoundingClientRect();
  if (rect.width === 0) continue;
  const style = getComputedStyle(el);
  const wider = el.clientWidth > 0 ? el.scrollWidth - el.clientWidth : 0;
  const what = describe(el) + ': ' + (el.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 70);
  if (wider > 1 && ['auto', 'scroll'].includes(style.overflowX)) {
    found.push({what, why: 'scrolls', by: wider});
  } else if (wider > 1 && el.matches('pre, table, mjx-container[display="true"], div.math')) {
    found.push({what, why: 'cut off', by: wider});
  } else {
    const column = columns.find(c => c.contains(el) && c !== el);
    if (column) {
      const edge = column.getBoundingClientRect().left + column.clientLeft + column.clientWidth;
      if (rect.right > edge + 1) found.push({what, why: 'sticks out', by: Math.round(rect.right - edge)});
    }
  }
}
return {width: window.outerWidth, found};"""


def overflow(driver) -> list[dict]:
    state = driver.execute_script(OVERFLOW)
    assert state["width"] == 1280, state["width"]   # the window the reader had
    return state["found"]


# (variant, page) -> what overflowed when test_page_in_a_real_browser opened the page (the 1280-px
# check opened every page again: 10-11 s a variant)
OVERFLOWS: dict[tuple[str, str], list[dict]] = {}


@slow
@pytest.mark.parametrize("variant", ["student", "instructor"])
def test_no_page_scrolls_sideways_at_1280_px(browser, served, variant):
    """Every page, checked for the page itself, each code block, output, table and formula, and the
    sidebars: the failure lists every page that overflows and what does."""
    base = served(variant)
    report = {}
    for page in PAGES:
        found = OVERFLOWS.get((variant, page))
        if found is None:             # not opened by test_page_in_a_real_browser in this session
            open_page(browser, base + f"{page}.html")
            found = overflow(browser)
        if found:
            report[page] = [f"{f['why']} by {f['by']} px: {f.get('what')}" for f in found[:8]]
    assert not report, "\n".join(f"{page}:\n  " + "\n  ".join(lines) for page, lines in report.items())
    # lesson 05's first formula is wider than the column: it wraps between its terms (course.js),
    # each term whole on one line
    open_page(browser, base + "lessons/05_multi_head_attention.html")
    rows = browser.execute_script(
        "const f = document.querySelector('mjx-container[display=\"true\"]');"
        "return Array.from(f.querySelectorAll('.formula-term')).map(t => Math.round(t.getBoundingClientRect().top));")
    assert len(rows) >= 2 and len(set(rows)) >= 2, rows


def test_the_overflow_check_finds_what_overflows(browser, tmp_path):
    """The check above on a page made to overflow in each way it names, and on one that does not."""
    wide = "x" * 400
    page = tmp_path / "wide.html"
    page.write_text(f"""<!DOCTYPE html><html><body style="margin:0">
<div class="bd-article" style="width:600px">
<pre id="scrolls" style="overflow-x:auto">{wide}</pre>
<pre id="cut" style="overflow-x:hidden">{wide}</pre>
<p><span id="sticks" style="white-space:nowrap">{wide}</span></p>
<p>short</p></div></body></html>""")
    browser.get(page.as_uri())
    found = {(f["what"].split(":")[0], f["why"]) for f in overflow(browser)}
    assert {("pre#scrolls", "scrolls"), ("pre#cut", "cut off"), ("span#sticks", "sticks out")} <= found, found
    page.write_text('<!DOCTYPE html><html><body><div class="bd-article" style="width:600px">'
                    '<pre style="white-space:pre-wrap;overflow-wrap:anywhere">' + wide + "</pre></div></body></html>")
    browser.get(page.as_uri())
    assert overflow(browser) == []


@slow
@pytest.mark.parametrize("variant", ["student", "instructor"])
def test_a_lesson_page_has_one_search_box(browser, served, variant):
    base = served(variant)
    open_page(browser, base + "lessons/09_generating_text.html")
    boxes = browser.execute_script(
        "return Array.from(document.querySelectorAll('.search-button-field, form.bd-search input'))"
        ".filter(e => e.checkVisibility({visibilityProperty: true}) && e.getBoundingClientRect().width > 0).length;")
    assert boxes == 1
