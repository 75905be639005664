"""The class report (class-report.html): its content from results built by hand, the page that
`grade CLASS --out DIR` writes for a small class, and that page in headless Chromium."""
from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import pytest

from autograder.report.class_report import _SORTER, REPORT_NAME, write_class_report
from autograder.report.class_report import student_folder
from autograder.report.results import feedback_markdown, write_atomic, write_json
from conftest import notebook_with, run_cli
from support.chromium import chromium
from test_class_grading import L01, make_class

L02 = "02_masking"
EVIL = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "small", "ul", "ol", "li",
        "b", "a", "p", "code", "section", "img", "table", "thead", "tbody", "tr", "th", "td", "div", "script"}


def check(lesson, exercise, score, mistake=None, output="expected 1.0, got 0.5"):
    tags = [f"lesson:{lesson}", f"exercise:{exercise}"] + ([f"mistake:{mistake}"] if mistake else [])
    return {"name": f"{lesson}: {exercise} check", "score": score, "max_score": 1.0,
            "status": "passed" if score == 1 else "failed", "output": "" if score == 1 else output, "tags": tags}


def result(*tests):
    return {"score": sum(t["score"] for t in tests), "max_score": float(len(tests)), "tests": list(tests)}


def lesson2(score, mistake=None):
    return [check(L02, ex, score, mistake) for ex in ("causal_mask", "padding_mask", "scaled_dot_product_attention")]


def known_class():
    """Four students; totals 5/5, 3/6, 1/2 and 0/5 (mean 2.25, median 2). softmax loses 4 points, lesson
    01's attention 2, each lesson-02 exercise 1. EVIL makes the same mistake in two checks (counted once)."""
    return {
        "ada": result(check(L01, "softmax", 1), check(L01, "scaled_dot_product_attention", 1), *lesson2(1)),
        EVIL: result(check(L01, "softmax", 0, "softmax-unstable", output=f"{IMG} overflowed"),
                     check(L01, "softmax", 0, "softmax-unstable"),
                     check(L01, "scaled_dot_product_attention", 0, "missing-scale"), *lesson2(1)),
        "bob & 'co' #1?%": result(check(L01, "softmax", 0, "softmax-unstable"),
                                  check(L01, "scaled_dot_product_attention", 1)),
        IMG: result(check(L01, "softmax", 0, "not-implemented"),
                    check(L01, "scaled_dot_product_attention", 0, "not-implemented"), *lesson2(0, "not-implemented")),
    }


class Page(HTMLParser):
    """Every tag, link and image of a page."""

    def __init__(self, text):
        super().__init__()
        self.tags, self.links, self.images = set(), [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        attrs = dict(attrs)
        if tag == "a":
            self.links.append(attrs["href"])
        if tag == "img":
            self.images.append(attrs["src"])


def assert_safe_and_offline(text: str, page: Page):
    assert not page.tags - TAGS, page.tags - TAGS   # no student string became markup
    assert "<img src=x" not in text.lower()
    # one script, the table's sorter, and the page's policy allows that script only (by its hash)
    assert re.findall(r"(?is)<script[^>]*>(.*?)</script>", text) == [_SORTER] and text.lower().count("<script") == 1
    policy = re.search(r'Content-Security-Policy" content="([^"]+)"', text).group(1)
    digest = base64.b64encode(hashlib.sha256(_SORTER.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy and "unsafe" not in policy.split("script-src")[1]
    assert "default-src 'none'" in policy
    assert not re.search(r"https?:|//[\w.-]+\.\w", text), "the page refers to another host"
    for src in page.images:
        assert src.startswith("data:image/svg+xml;base64,")
        svg = base64.b64decode(src.split(",", 1)[1]).decode("utf-8")
        assert svg.startswith("<?xml") and "<svg" in svg and "<script" not in svg.lower()
        assert "<image" not in svg and "href=\"http" not in svg   # draws only, and fetches nothing


def assert_links_resolve(out: Path, page: Page) -> list[Path]:
    targets = []
    for href in page.links:
        if href.startswith("#"):
            assert f"id='{html.unescape(href[1:])}'" in html.unescape(open(out / REPORT_NAME).read())
            continue
        url = urlparse(urljoin((out / REPORT_NAME).as_uri(), href))   # as a browser reads it
        target = Path(unquote(url.path)).resolve()
        assert not url.query and not url.fragment, href
        assert target.is_file() and target.is_relative_to(out.resolve()), href
        targets.append(target)
    return targets


def test_report_from_known_results(tmp_path):
    results = known_class()
    for student, res in results.items():
        if student != IMG:   # IMG's files are missing: the report says so instead of linking
            write_json(student_folder(tmp_path, student) / "results.json", res)
            write_atomic(student_folder(tmp_path, student) / "feedback.md", feedback_markdown(student, res))
    write_class_report(tmp_path, results)
    text = (tmp_path / REPORT_NAME).read_text()
    page = Page(text)
    assert_safe_and_offline(text, page)
    assert len(page.images) == 1 + 2 + 3   # points lost by exercise, then one per exercise
    assert "<b>4</b> student(s) graded on <b>5</b> exercise(s)" in text
    assert "mean <b>2.25</b>, median <b>2</b> (the maximum differs" in text   # bob has no lesson 02
    assert "median <b>50%</b>" in text   # of 1, 0.5, 0.5 and 0
    assert html.escape(EVIL) in text and html.escape(IMG) in text and html.escape("bob & 'co' #1?%") in text
    # points lost by students who started: IMG's untouched stubs are counted apart, so lesson 02
    # (only IMG lost points there) is not among them
    lost = re.search(r"lost most points</h3>.*?<ol>(.*?)</ol>", text).group(1)
    assert re.findall(r"#ex-([^']+)'", lost) == [f"{L01}-softmax", f"{L01}-scaled_dot_product_attention"]
    assert "3 points lost in all" in lost and "1 points lost in all" in lost
    idle = re.search(r"<p id='not-started'>(.*?)</p>", text).group(1)
    assert "1 student(s), 5 exercise(s) in all" in idle and "<code>softmax</code> 1/4" in idle
    summary = re.search(r"<section id='summary'>(.*?)</section>", text, re.S).group(1)
    assert "not-implemented" not in summary and summary.index("not-started") < summary.index("lost most")
    # the students' table: one row each, in name order, with totals, shares and lessons
    table = re.search(r"<section id='students'>(.*?)</section>", text, re.S).group(1)
    rows = re.findall(r"<tr><td>(.*?)</td>(.*?)</tr>", table)
    assert [html.unescape(name) for name, _ in rows] == sorted(results, key=lambda s: (s.lower(), s))
    cells = {html.unescape(name): re.findall(r"<td[^>]*>(.*?)</td>", rest) for name, rest in rows}
    assert cells[EVIL][:4] == ["3 / 6", "50%", "0/3", "3/3"] and cells[IMG][:5] == ["0 / 5", "0%", "0/2", "0/3", "5"]
    assert cells["bob & 'co' #1?%"][3] == "-"   # no lesson 02 handed in

    sections = dict(re.findall(r"<section id='ex-([^']+)'>(.*?)</section>", text, re.S))
    assert set(sections) == {f"{L01}-softmax", f"{L01}-scaled_dot_product_attention", f"{L02}-causal_mask",
                             f"{L02}-padding_mask", f"{L02}-scaled_dot_product_attention"}
    softmax = sections[f"{L01}-softmax"]
    assert "4 student(s) graded" in softmax and "1 with full marks" in softmax
    assert "<code>softmax-unstable</code>: 2 student(s)" in softmax
    assert "not-implemented" not in softmax and f"Not started: 1 student(s) ({html.escape(IMG)})" in softmax
    rows = re.findall(r"<tr><td>(.*?)</td>", softmax)   # who lost most first, then by name; not IMG
    assert rows == [html.escape(s) for s in (EVIL, "bob & 'co' #1?%")]
    assert html.escape(f"[softmax-unstable] {IMG} overflowed") in softmax
    assert "none written" in cells[IMG]   # IMG's feedback files do not exist
    attention = sections[f"{L01}-scaled_dot_product_attention"]
    assert "<code>missing-scale</code>: 1 student(s)" in attention and "bob" not in attention
    causal = sections[f"{L02}-causal_mask"]
    assert "3 student(s) graded" in causal and "Not started: 1 student(s)" in causal and "not-implemented" not in causal
    assert "Every student graded on this exercise got full marks" not in causal

    targets = assert_links_resolve(tmp_path, page)
    # two files for each row with files: softmax (EVIL, bob), attention (EVIL), the students' table (all but IMG)
    assert len(targets) == 2 * 3 + 2 * 3
    assert student_folder(tmp_path, EVIL) / "feedback.md" in targets
    assert not list(tmp_path.rglob("*.tmp"))


def test_no_mistakes_and_full_marks(tmp_path):
    write_class_report(tmp_path, {"ada": result(check(L01, "softmax", 1))})
    text = (tmp_path / REPORT_NAME).read_text()
    assert "No exercise lost any points." in text
    assert "Every student graded on this exercise got full marks." in text
    assert len(Page(text).images) == 1


# -- the report that `grade CLASS --out DIR` writes ------------------------------------------

EVE = '<b onclick=alert(1)>eve & "co"'   # a folder name; a name cannot hold a slash


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    make_class(root / "class")   # ada: correct, bob: the stubs, cyd: broken lesson 01, a mistake in 02
    notebook_with(L01, {"softmax": "def softmax(x, axis=-1):\n    e = np.exp(x)\n"
                                   "    return e / e.sum(axis=axis, keepdims=True)\n"}, root / "class" / EVE)
    out = root / "out"
    run = run_cli("grade", root / "class", "--out", out, "--json", root / "r.json", "--jobs", "1")
    assert run.returncode == 0, run.stderr
    return out, json.loads((root / "r.json").read_text())


@pytest.mark.slow
def test_grade_writes_the_class_report(graded_class):
    out, results = graded_class
    text = (out / REPORT_NAME).read_text()
    page = Page(text)
    assert_safe_and_offline(text, page)
    assert f"<b>{len(results)}</b> student(s)" in text and len(results) == 4
    students = re.search(r"<section id='students'>(.*?)</section>", text, re.S).group(1)
    assert {html.unescape(name) for name in re.findall(r"<tr><td>(.*?)</td>", students)} == set(results)
    sections = "".join(re.findall(r"<section id='ex-[^']+'>.*?</section>", text, re.S))
    listed = {html.unescape(name) for name in re.findall(r"<tr><td>(.*?)</td>", sections)}
    assert {s for s, r in results.items() if r["score"] < r["max_score"]} == {"bob", "cyd", EVE}
    assert listed == {"cyd", EVE}                     # bob has not started: named apart, not as a mistake
    assert "Not started: 1 student(s) (bob)" in sections
    sections = dict(re.findall(r"<section id='ex-([^']+)'>(.*?)</section>", text, re.S))
    assert "4 student(s) graded" in sections[f"{L01}-softmax"]
    assert "1 student(s) graded" in sections[f"{L02}-causal_mask"]   # only cyd handed in lesson 02
    assert "<code>softmax-unstable</code>: 1 student(s)" in sections[f"{L01}-softmax"]   # eve
    assert "not-implemented" not in sections[f"{L01}-softmax"]                          # bob: not started
    assert "<code>causal-transposed</code>: 1 student(s)" in sections[f"{L02}-causal_mask"]   # cyd
    targets = assert_links_resolve(out, page)
    assert student_folder(out, EVE) / "feedback.md" in targets
    assert {t.parent.name for t in targets} == {"ada", "bob", "cyd", EVE}   # the students' table links everyone
    assert not list(out.rglob("*.tmp"))


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as driver:
        yield driver


def big_class(students: int = 40) -> dict[str, dict]:
    """Every exercise of the course, each student in one of three states per exercise: full marks,
    a named mistake (half the checks), or not started (one student in five leaves lesson 09 alone,
    and one in seven everything after lesson 02)."""
    from autograder.course import COURSE
    out = {}
    for i in range(students):
        tests = []
        for n, lesson in enumerate(COURSE.values()):
            for j, exercise in enumerate(lesson.exercises):
                idle = (i % 5 == 0 and lesson.id.startswith("09")) or (i % 7 == 3 and n >= 2)
                wrong = not idle and (i + j + n) % 4 == 0
                for k in range(4):
                    score = 0 if idle or (wrong and k % 2) else 1
                    tests.append(check(lesson.id, exercise, score, "not-implemented" if idle else
                                       f"{exercise[:12]}-slip" if not score else None))
        out[f"student{i:02d}" + ("-with-a-folder-name-" + "x" * 120 if i == students - 1 else "")] = result(*tests)
    return out   # the last name is long: the page must still fit 1280 px


SUMMARY_STATE = """
const summary = document.getElementById('summary'), idle = document.getElementById('not-started');
return {errors: window.__errors, summary: summary.getBoundingClientRect().height,
        idleInSummary: summary.contains(idle), lostList: summary.querySelector('ol') ? summary.querySelector('ol').textContent : '',
        rows: Array.from(document.querySelectorAll('#students tbody tr')).map(r => r.cells[0].textContent),
        scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth,
        height: document.documentElement.scrollHeight};"""


def save_screenshot(driver, path: Path) -> Path:
    size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 16000), "scale": 1}
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip})
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


@pytest.mark.slow
def test_a_big_class_report_opens_on_one_screen_of_summary(browser, tmp_path):
    """At 1280 px wide: the summary before the details fits one screen (800 px), the students'
    table has one row per student and sorts on a click, and not started is shown apart."""
    results = big_class()
    write_class_report(tmp_path, results)
    browser.set_window_size(1280, 900)
    browser.get((tmp_path / REPORT_NAME).as_uri())
    state = browser.execute_script(SUMMARY_STATE)
    shot = save_screenshot(browser, tmp_path / "class-report.png")
    assert shot.stat().st_size > 10_000 and not state["errors"]
    assert state["summary"] <= 800, f"the summary is {state['summary']:.0f} px tall (screenshot: {shot})"
    assert state["rows"] == sorted(results) and len(state["rows"]) == 40
    assert state["idleInSummary"] and "09" not in state["lostList"]   # lesson 09 lost points only to not started
    assert state["scrollWidth"] <= state["clientWidth"]
    browser.find_element("xpath", "//section[@id='students']//th[text()='share']").click()
    shares = browser.execute_script(
        "return Array.from(document.querySelectorAll('#students tbody tr')).map(r => +r.cells[2].dataset.v);")
    assert shares == sorted(shares) and shares != [shares[0]] * len(shares)
    browser.find_element("xpath", "//section[@id='students']//th[text()='share']").click()   # again: descending
    shares = browser.execute_script(
        "return Array.from(document.querySelectorAll('#students tbody tr')).map(r => +r.cells[2].dataset.v);")
    assert shares == sorted(shares, reverse=True)


@pytest.mark.slow
def test_class_report_in_a_real_browser(graded_class, browser):
    out, results = graded_class
    url = (out / REPORT_NAME).as_uri()
    browser.get(url)
    small = browser.execute_script(SUMMARY_STATE)
    save_screenshot(browser, out / "class-report.png")
    assert small["summary"] <= 800 and sorted(small["rows"]) == sorted(results)
    assert small["idleInSummary"] and small["scrollWidth"] <= small["clientWidth"]
    state = browser.execute_script(
        "return {errors: window.__errors, title: document.title,"
        " images: Array.from(document.images).map(i => i.complete && i.naturalWidth > 0),"
        " resources: performance.getEntriesByType('resource').map(r => r.name)};")
    assert state["title"] == "Class report" and not state["errors"]
    assert len(state["images"]) == len(Page((out / REPORT_NAME).read_text()).images) >= 3
    assert all(state["images"]), "a chart did not render"
    assert not [r for r in state["resources"] if not r.startswith(("file:", "data:"))]
    # the feedback link of the student with the hostile name opens that student's feedback
    row = next(r for r in browser.find_elements("css selector", "tr") if "eve &" in r.text)
    row.find_element("link text", "feedback.md").click()
    assert unquote(urlparse(browser.current_url).path) == str(student_folder(out, EVE) / "feedback.md")
    # feedback.md escapes the name's Markdown (issue 20, point 6): rendered, it is the name as text
    from autograder.report.results import markdown_text
    assert browser.find_element("tag name", "body").text.startswith(f"# Feedback for {markdown_text(EVE)}")
    from nbconvert.filters.markdown_mistune import markdown2html_mistune
    import html as _html
    page = markdown2html_mistune((student_folder(out, EVE) / "feedback.md").read_text())
    assert f">Feedback for {_html.escape(EVE, quote=False)}" in page.replace("&quot;", '"') and "<b onclick" not in page
