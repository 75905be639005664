"""The `extended` marker (pyproject.toml, tests/conftest.py): a test marked so is deselected by
every run whose -m does not name it, said in the closing line (under xdist too), and is slow."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow     # four pytest runs of their own

ZH = "tests/test_book_zh.py"        # two tests marked extended, two not
EXTENDED = {"test_the_chinese_site_builds_in_chinese", "test_every_chinese_page_in_a_real_browser"}


def _pytest(*args):
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def _collected(*args) -> set[str]:
    run = _pytest("--collect-only", "-q", "-n", "0", ZH, *args)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return {line.split("::")[-1] for line in run.stdout.splitlines() if "::" in line}


def test_extended_tests_run_only_when_named():
    default, quick, named = _collected(), _collected("-m", "not slow"), _collected("-m", "extended")
    assert default and not default & EXTENDED
    assert quick and not quick & EXTENDED
    assert named == EXTENDED


def test_the_closing_line_counts_what_the_workers_deselected():
    run = _pytest("-n", "2", ZH, "-k", "introduction")
    assert run.returncode == 0, run.stdout[-2000:]
    assert "1 passed, 3 deselected" in run.stdout.splitlines()[-1], run.stdout[-500:]
