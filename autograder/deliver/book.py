"""The course site's pages, generated from solutions/ and the mistake catalogue.

`jupyter-book build book/` loads book/_ext/course_pages.py, which calls `generate()` before
Sphinx reads any page. It writes, into book/:
  lessons/<lesson_id>.ipynb   each lesson run from its solution notebook (so every figure and
                              table is the reference's), then turned into the student form with
                              nbgrader's ClearSolutions: the stubs, never the solution code.
                              The instructor variant adds each solution in a collapsed dropdown.
  mistakes.md                 the "common mistakes" page, from autograder.diagnose.mistakes.CATALOGUE
  _generated/points.md        the points of every exercise, from the self-check cells (the
                              introduction includes it)
A translated site (book/<lang>/) runs each solution translated as its lesson is (prose and the
demos' shown text, deliver/translations.py), with that language's figure fonts, so its figures and
printouts are in that language. Executed notebooks are cached in book/_build/.executed/, keyed by
the notebook's and the autograder's contents, so the second variant and unchanged rebuilds skip execution.
"""
from __future__ import annotations

import copy
import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

from autograder.course import COURSE, ROOT, available_lessons
from autograder.diagnose.mistakes import CATALOGUE
from autograder.report.results import write_atomic
from autograder.isolate.sandbox import DEFAULT_MEMORY_LIMIT, DEFAULT_TIME_LIMIT

BOOK = ROOT / "book"
VARIANTS = ("student", "instructor")


def execute(notebook: Path, cwd: Path, matplotlibrc: Path | None = None) -> nbformat.NotebookNode:
    """Run a notebook top to bottom in a fresh kernel, as a student's Jupyter would (with
    `matplotlibrc`: the one beside a translated lesson, for its figures' fonts)."""
    from nbclient import NotebookClient
    nb = nbformat.read(str(notebook), as_version=4)
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(cwd)}})
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}  # keep the inline backend for figures
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    if matplotlibrc is not None:
        env["MATPLOTLIBRC"] = str(matplotlibrc)
        # a font list of its own, made on first use: matplotlib's user cache lists the fonts installed
        # when it was made, and a CJK font installed later would be drawn as boxes
        env["MPLCONFIGDIR"] = str(matplotlibrc.parent / "matplotlib")
    client.execute(env=env)
    return nb


EXECUTED_CACHE = BOOK / "_build" / ".executed"


def _cache_key(notebook: Path) -> str:
    h = hashlib.sha256(notebook.read_bytes())
    inputs = sorted((ROOT / "autograder").rglob("*.py"))      # self-checks and helpers run in the kernel
    inputs += sorted(p for p in (ROOT / "data").rglob("*") if p.is_file()) if (ROOT / "data").is_dir() else []
    for path in inputs:                                         # and the data a lesson reads
        h.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:24]


def executed_solution(lesson_id: str, cache: Path = EXECUTED_CACHE, lang: str | None = None) -> nbformat.NotebookNode:
    """solutions/<lesson_id>.ipynb run top to bottom, from the cache when nothing it reads changed.
    With `lang`: the solution translated (its prose and its demos' shown text, as the translated
    lesson has them), run the same way with that language's figure fonts.

    A lock per lesson makes a second process that wants the same notebook (the other variant's
    build, a parallel test worker) wait for the first and read its result, not run it again."""
    import fcntl
    source, rc, edition = COURSE[lesson_id].solution_path, None, lesson_id
    cache.mkdir(parents=True, exist_ok=True)
    if lang is not None:
        from autograder.deliver.translations import matplotlibrc, translated_solution
        edition = f"{lesson_id}.{lang}"
        folder = cache / f"source-{lang}"
        folder.mkdir(exist_ok=True)
        source, rc = folder / f"{lesson_id}.ipynb", folder / "matplotlibrc"
        _write_if_changed(source, nbformat.writes(translated_solution(lesson_id, lang)))
        _write_if_changed(rc, matplotlibrc(lang))
    cached = cache / f"{edition}.{_cache_key(source)}.ipynb"
    with open(cache / f"{edition}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if cached.exists():
            return nbformat.read(str(cached), as_version=4)
        return _execute_into(edition, source, cached, cache, rc)


def _execute_into(edition: str, source: Path, cached: Path, cache: Path, rc: Path | None) -> nbformat.NotebookNode:
    import re
    nb = execute(source, COURSE[edition.split(".")[0]].solution_path.parent, rc)   # run where solutions/ runs
    errors = [f"{o.ename}: {o.evalue}" for c in nb.cells if c.cell_type == "code"
              for o in c.get("outputs", []) if o.output_type == "error"]
    if errors:
        raise RuntimeError(f"solutions/{edition}.ipynb raised while building the book: {errors[0]}")
    for stale in cache.glob(f"{edition}.*.ipynb"):
        if re.fullmatch(re.escape(edition) + r"\.[0-9a-f]{24}\.ipynb", stale.name):   # not another edition's
            stale.unlink()
    write_atomic(cached, nbformat.writes(nb))
    return nb


def _nbgrader(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def page(executed: nbformat.NotebookNode, variant: str) -> nbformat.NotebookNode:
    """The lesson as the site shows it: outputs of the reference, code of the student notebook."""
    from nbgrader.preprocessors import ClearHiddenTests, ClearMarkScheme, ClearSolutions
    originals = {c.get("id"): c.source for c in executed.cells}
    nb = copy.deepcopy(executed)
    for stage in (ClearSolutions, ClearHiddenTests, ClearMarkScheme):  # nbgrader's own stubs
        nb, _ = stage().preprocess(nb, {})
    cells = []
    for cell in nb.cells:
        meta = _nbgrader(cell)
        if meta.get("grade") and not meta.get("solution"):
            cell.outputs = []              # a self-check prints the reference's full marks: not yours
            cell.execution_count = None
        plumbing = selfcheck_plumbing(cell)
        if plumbing is not None:           # the setup cell: imports for the reader, plumbing hidden
            cell.source, hidden = plumbing
            cells.append(cell)
            cells.append(nbformat.v4.new_code_cell(hidden, id=f"{cell.get('id', 'setup')}-selfcheck",
                                                   metadata={"tags": ["remove-cell"]}))
            continue
        cells.append(cell)
        if meta.get("solution") and variant == "instructor":
            cells.append(solution_dropdown(originals[cell.get("id")], meta.get("grade_id", "")))
    nb.cells = cells
    nb.metadata.pop("widgets", None)
    return nb


def selfcheck_plumbing(cell) -> tuple[str, str] | None:
    """(what the reader sees, the self-check plumbing) for a setup cell, else None.

    The plumbing is the block from `import os, sys` (the grader beside lessons/ first) to
    `from autograder.selfcheck import checker`, and the `check = checker(...)` line: the site shows
    the rest of the cell (the imports and data a lesson uses) and puts the plumbing in a cell of its
    own tagged `remove-cell`, so a reader never sees it while the page's notebook still runs from lessons/."""
    if cell.cell_type != "code":
        return None
    lines = cell.source.splitlines()
    checks = [line for line in lines if line.startswith("check = checker(")]
    lines = [line for line in lines if line not in checks]
    imports = [i for i, line in enumerate(lines) if line.strip() == "from autograder.selfcheck import checker"]
    if not imports:
        return None
    end = imports[0] + 1
    start = next((i for i in range(end - 1, -1, -1) if lines[i].startswith("import os, sys")), None)
    if start is None:
        return None
    before, after = "\n".join(lines[:start]).rstrip(), "\n".join(lines[end:]).strip("\n")
    shown = before + "\n\n" + after if before and after else before + after
    return shown, "\n".join(lines[start:end] + checks)


def solution_dropdown(source: str, grade_id: str) -> nbformat.NotebookNode:
    fence = "````"
    body = "\n".join(line for line in source.splitlines()
                     if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))
    # no backticks in the title: CommonMark ends a backtick fence's info string at the first one
    text = (f"{fence}{{admonition}} Reference solution: {grade_id}\n:class: dropdown\n\n"
            f"```python\n{body}\n```\n{fence}\n")
    return nbformat.v4.new_markdown_cell(text, metadata={"tags": ["reference-solution"]})


def mistakes_page() -> str:
    lines = ["# Common mistakes", "",
             "Every mistake below has a name. When the autograder recognises one in your code, its "
             "report gives the name (tagged `mistake:<name>`) together with the explanation on this page. "
             "Each entry says what the mistake looks like, why it happens, and how to fix it.", ""]
    for m in CATALOGUE.values():
        lines += [f"({m.id})=", f"## `{m.id}`: {m.title}", "",
                  f"**What it looks like.** The autograder sees that {m.recognised_by}.", "",
                  f"**Why it happens.** {m.explanation}", "",
                  f"**How to fix it.** {m.hint}", ""]
    return "\n".join(lines)


def points_table(lang: str | None = None) -> str:
    """| lesson | exercise | points |, read from the self-check cells' nbgrader points."""
    w = SITE_WORDS.get(lang or "", {})
    rows = [f"| {w.get('lesson', 'lesson')} | {w.get('exercise', 'exercise')} | {w.get('points', 'points')} |",
            "|---|---|---|"]
    total = 0.0
    for lesson in available_lessons():
        nb = nbformat.read(str(lesson.solution_path), as_version=4)
        points = {}
        for cell in nb.cells:
            meta = _nbgrader(cell)
            if meta.get("grade") and not meta.get("solution"):
                points[meta["grade_id"].removeprefix("check_")] = float(meta.get("points", 0))
        for exercise in lesson.exercises:
            rows.append(f"| {lesson.title} | `{exercise}` | {points.get(exercise, 0):g} |")
            total += points.get(exercise, 0)
    rows.append(f"| **{w.get('all lessons', 'all lessons')}** | | **{total:g}** |")
    return "\n".join(rows) + "\n"


def substitutions() -> dict[str, str]:
    """Numbers the introduction quotes, taken from the grader itself."""
    return {"time_limit": f"{DEFAULT_TIME_LIMIT:g}",
            "memory_limit": f"{DEFAULT_MEMORY_LIMIT / 1024 ** 3:g}",
            "mistake_count": str(len(CATALOGUE))}


def _write_if_changed(path: Path, text: str) -> None:
    # unchanged pages keep their timestamps, so Sphinx's incremental build skips them
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        write_atomic(path, text)


def generate(book: Path = BOOK, variant: str = "student", jobs: int = 2, lang: str | None = None) -> list[Path]:
    """Write the generated pages into `book`. With `lang` (a translated site, book/<lang>/: see
    translated_site), the lessons' prose and the introduction come from that language's catalogs."""
    if variant not in VARIANTS:
        raise ValueError(f"course_variant must be one of {VARIANTS}, not {variant!r}")
    cache = book / "_build" / ".executed" if book not in (BOOK, *(BOOK / lg for lg in _languages())) \
        else EXECUTED_CACHE
    lessons = [lesson.id for lesson in available_lessons()]
    with ThreadPoolExecutor(jobs) as pool:  # each notebook runs in its own kernel process
        # a translated site runs the translated solutions: its figures and printouts in that language
        executed = dict(zip(lessons, pool.map(lambda lid: executed_solution(lid, cache, lang), lessons)))
    written = []
    for lesson_id, nb in executed.items():
        path = book / "lessons" / f"{lesson_id}.ipynb"
        _write_if_changed(path, nbformat.writes(page(nb, variant)))
        written.append(path)
    pages = [("mistakes.md", mistakes_page()), ("_generated/points.md", points_table(lang))]
    if lang is not None:
        pages += translated_site(lang)
    for name, text in pages:
        path = book / name
        _write_if_changed(path, text)
        written.append(path)
    return written


def _languages() -> tuple[str, ...]:
    from autograder.deliver.translations import LANGUAGES
    return LANGUAGES


SITE_WORDS = {"zh_CN": {"lesson": "课", "exercise": "练习",
                        "points": "分数", "all lessons": "全部课程"}}


def translated_site(lang: str) -> list[tuple[str, str]]:
    """The pages of book/<lang>/ that are not lessons: the introduction, from its catalog. (Its
    _toc.yml is a source file: Jupyter Book reads it before any extension runs.)"""
    from autograder.deliver.translations import translate_page
    intro, _ = translate_page("book_intro", lang)
    return [("intro.md", intro)]
