"""The Chinese site (book/zh_CN/): built by one command, in Chinese, with its math rendered offline.

`jupyter-book build book/zh_CN/` generates every page from solutions/ and book/intro.md with the
catalogs in locale/zh_CN/ (deliver/translations.py), and copies the site beside the English one
(book/_build/html/zh_CN/). The browser test opens pages in Debian's Chromium, as tests/test_book.py does.
"""
from __future__ import annotations

import functools
import http.server
import re
import subprocess
import threading

import pytest
import yaml

from autograder.deliver import translations
from conftest import ROOT
from support.chromium import chromium

HTML = ROOT / "book" / "zh_CN" / "_build" / "html"
COMMAND = ["jupyter-book", "build", "book/zh_CN/", "--all", "-W"]   # INSTRUCTORS.md's command, strict
HAN = re.compile(r"[\u4e00-\u9fff]")
# The Chinese site's build and its browser check (the English site's are tests/test_book.py, in the
# default run): .ci/run runs them (-m extended).
extended = pytest.mark.extended


def _toc_files(path):
    toc = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [toc["root"]] + [c["file"] for part in toc["parts"] for c in part["chapters"]]


def test_the_chinese_site_has_the_english_sites_pages():
    assert _toc_files(ROOT / "book" / "zh_CN" / "_toc.yml") == _toc_files(ROOT / "book" / "_toc.yml")


def test_the_chinese_introduction_is_complete():
    text, missing = translations.translate_page("book_intro", "zh_CN")
    assert missing == [] and HAN.search(text)
    assert '<a href="../intro.html" hreflang="en" lang="en">English</a>' in text   # and back


@functools.lru_cache(maxsize=None)
def build():
    run = subprocess.run(COMMAND, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "build succeeded" in run.stdout
    return HTML


@extended
def test_the_chinese_site_builds_in_chinese():
    html = build()
    pages = _toc_files(ROOT / "book" / "zh_CN" / "_toc.yml")
    for page in pages:
        text = (html / f"{page}.html").read_text(encoding="utf-8")
        assert '<html lang="zh-CN"' in text, page
    assert (html / "_static" / "mathjax" / "tex-chtml.js").exists()        # math offline
    for lesson_id in translations.translated_lessons("zh_CN"):
        text = (html / "lessons" / f"{lesson_id}.html").read_text(encoding="utf-8")
        assert len(HAN.findall(text)) > 500, lesson_id                      # the prose, not just the theme
    intro = (html / "intro.html").read_text(encoding="utf-8")
    assert "搜索" in intro                                                  # the theme's own words in Chinese
    assert (ROOT / "book" / "_build" / "html" / "zh_CN" / "intro.html").exists()   # beside the English site


@extended
def test_every_chinese_page_in_a_real_browser(tmp_path):
    """Each page at 1280 px: lang="zh-CN", no error, every formula rendered, no request off the
    site, nothing scrolling sideways (tests/test_book.py's check), one search box, and Chinese prose
    on every page but the untranslated ones."""
    from test_book import open_page, overflow
    html = build()
    handler = functools.partial(_Quiet, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    translated = {f"lessons/{lid}" for lid in translations.translated_lessons("zh_CN")} | {"intro"}
    problems = {}
    try:
        with chromium(tmp_path / "profile") as driver:
            for page in _toc_files(ROOT / "book" / "zh_CN" / "_toc.yml"):
                state = open_page(driver, base + f"{page}.html")
                found = []
                if driver.execute_script("return document.documentElement.lang") != "zh-CN":
                    found.append("not lang=zh-CN")
                if state["errors"] or state["console"]:
                    found.append(f"errors {state['errors'] + state['console']}")
                if state["mathRendered"] != state["mathNodes"]:
                    found.append(f"{state['mathNodes'] - state['mathRendered']} formulas not rendered")
                if not all(r.startswith(base) for r in state["resources"]):
                    found.append("a request left the site")
                found += [f"{f['why']} by {f['by']} px: {f.get('what')}" for f in overflow(driver)[:5]]
                boxes = driver.execute_script(
                    "return Array.from(document.querySelectorAll('.search-button-field, form.bd-search input'))"
                    ".filter(e => e.checkVisibility({visibilityProperty: true}) && e.getBoundingClientRect().width > 0).length;")
                if boxes != 1:
                    found.append(f"{boxes} search boxes")
                if page in translated and len(HAN.findall(state["prose"])) < 200:
                    found.append("little Chinese prose")
                if found:
                    problems[page] = found
    finally:
        server.shutdown()
    assert not problems, "\n".join(f"{page}: {'; '.join(lines)}" for page, lines in problems.items())


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass
