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
slow = pytest.mark.slow


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


@slow
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


@slow
def test_a_chinese_lesson_page_in_a_real_browser(tmp_path):
    from test_book import open_page
    html = build()
    handler = functools.partial(_Quiet, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        with chromium(tmp_path / "profile") as driver:
            for page in ("intro", "lessons/01_scaled_dot_product_attention"):
                state = open_page(driver, base + f"{page}.html")
                assert driver.execute_script("return document.documentElement.lang") == "zh-CN"
                assert not state["errors"] and not state["console"], (state["errors"], state["console"])
                assert state["mathNodes"] > 0 and state["mathRendered"] == state["mathNodes"], page
                assert all(r.startswith(base) for r in state["resources"]), "a request left the site"
                assert len(HAN.findall(state["prose"])) > 200, page
    finally:
        server.shutdown()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass
