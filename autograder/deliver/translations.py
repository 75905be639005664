"""Translations of the lessons' prose: gettext catalogs beside the English single source.

solutions/<lesson_id>.ipynb stays the one source. Each markdown cell is one message of the catalog
locale/<lang>/LC_MESSAGES/<lesson_id>.po: its msgctxt is the cell's id, its msgid the cell's
English text, its msgstr the translation. `update(lang)` merges the English of today into the
catalogs with Babel (the engine behind pybabel and sphinx-intl): a cell whose English changed keeps
its old translation marked fuzzy, a new cell gets an empty one, a deleted cell's entry goes obsolete.
A fuzzy or empty entry is never used: that cell stays in English until a translator confirms it,
and the tests (tests/test_translations.py) fail until then.

Code cells are never translated: a translated notebook runs, and is graded, exactly as the English.
"""
from __future__ import annotations

from pathlib import Path

import nbformat

from autograder.course import COURSE, ROOT

LOCALE = ROOT / "locale"
LANGUAGES = ("zh_CN",)


def catalog_path(lesson_id: str, lang: str) -> Path:
    return LOCALE / lang / "LC_MESSAGES" / f"{lesson_id}.po"


def template(lesson_id: str):
    """The catalog of a lesson's English prose, empty translations (a .pot in memory)."""
    from babel.messages.catalog import Catalog
    source = COURSE[lesson_id].solution_path
    nb = nbformat.read(str(source), as_version=4)
    catalog = Catalog(project="multi-head-attention-course", domain=lesson_id, charset="utf-8")
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and cell.source.strip():
            catalog.add(cell.source, context=cell.id, auto_comments=[f"markdown cell {index}"],
                        locations=[(f"solutions/{lesson_id}.ipynb", index)])
    return catalog


def read(lesson_id: str, lang: str):
    """The lesson's catalog for `lang`, or None when there is none."""
    from babel.messages.pofile import read_po
    path = catalog_path(lesson_id, lang)
    if not path.exists():
        return None
    with open(path, "rb") as f:
        return read_po(f, locale=lang, domain=lesson_id)


def write(catalog, path: Path) -> None:
    from babel.messages.pofile import write_po
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".po.tmp")
    with open(tmp, "wb") as f:
        # no wrapping: a cell's lines stay lines, so a diff of a catalog reads like a diff of the prose
        write_po(f, catalog, width=0, omit_header=False, sort_output=False, include_previous=True)
    tmp.replace(path)


def update(lang: str, lessons=None) -> dict[str, dict[str, int]]:
    """Merge today's English into `lang`'s catalogs (creating those of `lessons` that are missing).
    Returns, per lesson, how many entries are translated, fuzzy, untranslated and obsolete."""
    from babel.messages.catalog import Catalog
    wanted = lessons if lessons is not None else [lid for lid in COURSE if catalog_path(lid, lang).exists()]
    counts = {}
    for lesson_id in wanted:
        if not COURSE[lesson_id].solution_path.exists():
            continue
        catalog = read(lesson_id, lang) or Catalog(locale=lang, domain=lesson_id, charset="utf-8",
                                                   project="multi-head-attention-course")
        catalog.update(template(lesson_id), update_header_comment=False)
        write(catalog, catalog_path(lesson_id, lang))
        counts[lesson_id] = status(catalog)
    return counts


def status(catalog) -> dict[str, int]:
    entries = [m for m in catalog if m.id]
    return {"translated": sum(bool(m.string) and not m.fuzzy for m in entries),
            "fuzzy": sum(m.fuzzy for m in entries),
            "untranslated": sum(not m.string for m in entries),
            "obsolete": len(catalog.obsolete)}


def translated_lessons(lang: str) -> list[str]:
    """The lessons that have a catalog for `lang` and a source notebook."""
    return [lid for lid in COURSE if catalog_path(lid, lang).exists() and COURSE[lid].solution_path.exists()]


def translate(nb: nbformat.NotebookNode, lesson_id: str, lang: str) -> list[str]:
    """Put `lang`'s translations into `nb`'s markdown cells (in place), and mark the notebook's
    language in its metadata. Returns the ids of the cells left in English (no confirmed translation)."""
    catalog = read(lesson_id, lang)
    missing = []
    for cell in nb.cells:
        if cell.cell_type != "markdown" or not cell.source.strip():
            continue
        message = catalog.get(cell.source, context=cell.get("id")) if catalog is not None else None
        if message is None or not message.string or message.fuzzy:
            missing.append(cell.get("id", "?"))
            continue
        cell.source = message.string
    nb.metadata["language"] = lang.replace("_", "-")
    return missing
