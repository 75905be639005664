"""Translations of the lessons' prose: gettext catalogs beside the English single source.

solutions/<lesson_id>.ipynb stays the one source. Each markdown cell is one message of the catalog
locale/<lang>/LC_MESSAGES/<lesson_id>.po: its msgctxt is the cell's id, its msgid the cell's
English text, its msgstr the translation. `update(lang)` merges the English of today into the
catalogs with Babel (the engine behind pybabel and sphinx-intl): a cell whose English changed keeps
its old translation marked fuzzy, a new cell gets an empty one, a deleted cell's entry is dropped.
A fuzzy or empty entry is never used: that cell stays in English until a translator confirms it,
and the tests (tests/test_translations.py) fail until then.

In the code cells, only the text a demo cell shows the reader is translated: the string literals it
prints and writes on its figures (deliver/code_strings.py finds them), one message each, keyed by
the cell's id and the literal as written, beside the markdown in the same catalog. A translation
replaces the literal's text between its quotes and nothing else (placeholders and escapes kept,
checked by parsing); graded cells, their stubs, the setup and the self-checks stay byte-identical,
so a translated notebook runs, and is graded, exactly as the English.

The site's own pages (PAGES: the book's introduction) are translated the same way, one entry per
block of markdown (the text between blank lines; code fences and directives are left as they are),
in locale/<lang>/LC_MESSAGES/book_<page>.po.
"""
from __future__ import annotations

from pathlib import Path

import nbformat

from autograder.course import COURSE, ROOT, TRANSLATIONS
from autograder.deliver.code_strings import is_demo_cell, shown_literals, substitute

LOCALE = ROOT / "locale"
LANGUAGES = TRANSLATIONS


PAGES = {"book_intro": ROOT / "book" / "intro.md"}

# Fonts for the figures' text in each language, written as a matplotlibrc beside the translated
# lessons (matplotlib reads one from the folder a notebook runs in): the figures' sans-serif font is
# the first of these that is installed (each has Latin letters and digits too), else DejaVu Sans.
# With none installed, matplotlib warns under the figure, glyph by glyph ("Glyph ... missing from
# font(s) DejaVu Sans"): never a silent box. (A list of families instead, with glyph-by-glyph
# fallback, logs "findfont: Font family ... not found" for every absent one on every figure.) Text
# mixing $math$ with Chinese would be drawn by mathtext, which has no such fallback: the catalogs
# write such labels' math as plain characters (tests/test_translations.py).
FIGURE_FONTS = {"zh_CN": ("WenQuanYi Micro Hei", "Noto Sans CJK SC", "Source Han Sans SC", "Microsoft YaHei",
                          "PingFang SC", "Heiti SC", "SimHei", "Arial Unicode MS")}


def matplotlibrc(lang: str) -> str:
    """The matplotlibrc that goes beside `lang`'s lessons (FIGURE_FONTS)."""
    fonts = ", ".join((*FIGURE_FONTS.get(lang, ()), "DejaVu Sans"))
    return ("# Written by `python -m autograder release`: the font of the lessons' figures, the first of this\n"
            "# list that is installed (Linux: fonts-wqy-microhei or fonts-noto-cjk; Windows: Microsoft YaHei;\n"
            "# macOS: PingFang SC). Without any, matplotlib warns \"Glyph ... missing from font(s)\" under a\n"
            "# figure. A font installed after matplotlib first ran is seen once its cache is deleted:\n"
            "# python -c \"import matplotlib; print(matplotlib.get_cachedir())\" names the folder.\n"
            f"font.sans-serif: {fonts}\n")


def catalog_path(domain: str, lang: str) -> Path:
    """A lesson's catalog (domain = lesson id), or a site page's (domain in PAGES)."""
    return LOCALE / lang / "LC_MESSAGES" / f"{domain}.po"


def _new_catalog(domain: str, lang: str | None = None):
    import datetime

    from babel.messages.catalog import Catalog
    # a fixed creation date: a catalog changes only when its messages do
    fixed = datetime.datetime(2026, 11, 26, tzinfo=datetime.timezone.utc)
    catalog = Catalog(locale=lang, domain=domain, project="multi-head-attention-course", version="1",
                      copyright_holder="the course team", charset="utf-8",
                      creation_date=fixed, revision_date=fixed, fuzzy=False, msgid_bugs_address="the course's issue tracker",
                      last_translator="the course team", language_team=f"{lang or 'LANGUAGE'} (the course team)",
                      header_comment=HEADER_COMMENT)
    return catalog


HEADER_COMMENT = ("# Translations of the course's English text (solutions/, book/), made with Babel:\n"
                  "# `python -m autograder translations` merges today's English in; see autograder/deliver/translations.py.")
HEADER_FIELDS = ("project", "version", "copyright_holder", "last_translator", "language_team", "header_comment",
                 "creation_date", "revision_date", "msgid_bugs_address")


def template(domain: str):
    """The catalog of a lesson's (or a site page's) English prose, empty translations (a .pot in memory)."""
    catalog = _new_catalog(domain)
    if domain in PAGES:
        path = PAGES[domain]
        for index, block in enumerate(markdown_blocks(path.read_text(encoding="utf-8"))):
            if _translatable(block):
                catalog.add(block, auto_comments=[f"block {index}"],
                            locations=[(path.relative_to(ROOT).as_posix(), index)])
        return catalog
    nb = nbformat.read(str(COURSE[domain].solution_path), as_version=4)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and cell.source.strip():
            catalog.add(cell.source, context=cell.id, auto_comments=[f"markdown cell {index}"],
                        locations=[(f"solutions/{domain}.ipynb", index)])
        elif is_demo_cell(cell):
            for text in dict.fromkeys(literal.text for literal in shown_literals(cell.source)):
                catalog.add(text, context=cell.id, locations=[(f"solutions/{domain}.ipynb", index)],
                            auto_comments=[f"{CODE_LITERAL} {index}: a string literal the demo shows, as written "
                                           "between its quotes (keep {placeholders} and \\escapes exactly)"])
    return catalog


CODE_LITERAL = "code cell"   # how a code literal's entry begins its comment (a markdown cell's: "markdown cell")


def is_code_literal(message) -> bool:
    """Is this catalog entry a demo cell's string literal (not a markdown cell)?"""
    return any(comment.startswith(CODE_LITERAL) for comment in message.auto_comments)


def markdown_blocks(text: str) -> list[str]:
    """The blocks of a markdown page: runs of lines between blank lines, a fenced block kept whole."""
    blocks, current, fence = [], [], None
    for line in text.splitlines():
        stripped = line.lstrip()
        if fence is None and stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        elif fence is not None and stripped.startswith(fence):
            fence = None
            current.append(line)
            continue
        if fence is None and not line.strip():
            if current:
                blocks.append("\n".join(current))
            current = []
        else:
            current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks


def _translatable(block: str) -> bool:
    return not block.lstrip().startswith(("```", "~~~", "{", "(")) and any(c.isalpha() for c in block)


def translate_page(domain: str, lang: str) -> tuple[str, list[int]]:
    """(the page in `lang`, the indexes of the blocks left in English: no confirmed translation)."""
    catalog = read(domain, lang)
    out, missing = [], []
    for index, block in enumerate(markdown_blocks(PAGES[domain].read_text(encoding="utf-8"))):
        message = catalog.get(block) if catalog is not None and _translatable(block) else None
        if _translatable(block) and (message is None or not message.string or message.fuzzy):
            missing.append(index)
        out.append(message.string if message is not None and message.string and not message.fuzzy else block)
    return "\n\n".join(out) + "\n", missing


def read(lesson_id: str, lang: str):
    """The lesson's catalog for `lang`, or None when there is none."""
    from babel.messages.pofile import read_po
    path = catalog_path(lesson_id, lang)
    if not path.exists():
        return None
    with open(path, "rb") as f:
        catalog = read_po(f, locale=lang, domain=lesson_id)
    for message in catalog:     # Babel reads a "#| msgid" line as a comment "| msgid": not ours to keep
        message.user_comments = [c for c in message.user_comments if not c.startswith("|")]
    return catalog


def write(catalog, path: Path) -> None:
    from babel.messages.pofile import write_po
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".po.tmp")
    with open(tmp, "wb") as f:
        # no wrapping: a cell's lines stay lines, so a diff of a catalog reads like a diff of the prose.
        # No "#| msgid" lines: Babel 2.19 wraps them without quotes (a file polib and msgfmt refuse) and
        # reads them back as comments; a fuzzy entry's old English is in the catalog's git history.
        write_po(f, catalog, width=0, omit_header=False, sort_output=False, include_previous=False)
    tmp.replace(path)


def update(lang: str, lessons=None) -> dict[str, dict[str, int]]:
    """Merge today's English into `lang`'s catalogs (creating those of `lessons` that are missing;
    a lesson id or a site page's domain, PAGES).
    Returns, per lesson, how many entries are translated, fuzzy, untranslated and obsolete."""
    wanted = lessons if lessons is not None else [d for d in [*COURSE, *PAGES] if catalog_path(d, lang).exists()]
    counts = {}
    for lesson_id in wanted:
        if lesson_id in COURSE and not COURSE[lesson_id].solution_path.exists():
            continue
        catalog, fresh = read(lesson_id, lang), _new_catalog(lesson_id, lang)
        if catalog is None:
            catalog = fresh
        for field in HEADER_FIELDS:
            setattr(catalog, field, getattr(fresh, field))
        catalog.update(template(lesson_id), update_header_comment=False, update_creation_date=False)
        catalog.obsolete.clear()   # as msgmerge --no-obsolete: a changed cell's old text lives on as a
                                   # fuzzy entry's previous msgid, and git keeps the rest
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


def translated_solution(lesson_id: str, lang: str) -> nbformat.NotebookNode:
    """solutions/<lesson_id>.ipynb in `lang` (translate): what the translated site runs and shows."""
    nb = nbformat.read(str(COURSE[lesson_id].solution_path), as_version=4)
    translate(nb, lesson_id, lang)
    return nb


def translate(nb: nbformat.NotebookNode, lesson_id: str, lang: str, code: bool = True) -> list[str]:
    """Put `lang`'s translations into `nb`'s markdown cells and (with `code`) its demo cells' shown
    string literals (in place), and mark the notebook's language in its metadata. Returns the ids
    of the cells left wholly or partly in English (no confirmed translation)."""
    catalog = read(lesson_id, lang)
    missing = []
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.strip():
            message = catalog.get(cell.source, context=cell.get("id")) if catalog is not None else None
            if message is None or not message.string or message.fuzzy:
                missing.append(cell.get("id", "?"))
                continue
            cell.source = message.string
        elif code and is_demo_cell(cell):
            found = {}
            for text in {literal.text for literal in shown_literals(cell.source)}:
                message = catalog.get(text, context=cell.get("id")) if catalog is not None else None
                if message is not None and message.string and not message.fuzzy:
                    found[text] = message.string
            if len(found) < len({literal.text for literal in shown_literals(cell.source)}):
                missing.append(cell.get("id", "?"))
            cell.source = substitute(cell.source, found)
    nb.metadata["language"] = lang.replace("_", "-")
    return missing


# --- the feedback: one gettext domain for every text the grader writes for a reader ------------------
# The English is marked where it is written (autograder/i18n.py: N_ a sentence or a template with
# {named} values, C_ a catalogue entry's title/explanation/hint); a check's name is the first line of
# its docstring (the checks of autograder/checks/). Babel extracts both into the template; the
# catalog locale/<lang>/LC_MESSAGES/feedback.po is merged from it as the lessons' are, and compiled
# to autograder/locale/<lang>/LC_MESSAGES/feedback.mo, which the grader, the self-check, the student
# kit and the Gradescope bundle read with the standard library's gettext (no Babel needed there).

FEEDBACK = "feedback"
SOURCE = ROOT / "autograder"
KEYWORDS = {"N_": None, "C_": ((1, "c"), 2),
            "of": (2,),    # Variant.of(mistake, detail): the variant in words, after "In your code:"
            "Lesson": (2,)}   # Lesson(id, title, exercises) in course.py: the title the class report shows


def _check_names(fileobj, keywords, comment_tags, options):
    """Babel extraction method: the name of each check, the first line of the docstring of a test
    marked @exercise (grading/plugin.py names a check so), in the context "check" (i18n.SLOTS)."""
    import ast
    tree = ast.parse(fileobj.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(
                isinstance(d, ast.Call) and getattr(d.func, "id", None) == "exercise" for d in node.decorator_list):
            doc = ast.get_docstring(node, clean=False)
            if doc and doc.strip():
                yield node.lineno, "C_", ("check", doc.strip().splitlines()[0].strip()), ["the name of a check"]


def feedback_template():
    """The feedback's English messages (a .pot in memory), extracted with Babel from the package."""
    from babel.messages.extract import extract_from_file
    catalog = _new_catalog(FEEDBACK)
    for path in sorted(SOURCE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for lineno, message, comments, context in extract_from_file("python", path, keywords=KEYWORDS,
                                                                     comment_tags=("TRANSLATORS:",)):
            catalog.add(message, locations=[(rel, None)], auto_comments=comments, context=context)
        if path.parent.name == "checks" and path.name.startswith("test_"):
            for lineno, message, comments, context in extract_from_file(_check_names, path, keywords=KEYWORDS):
                catalog.add(message, locations=[(rel, None)], auto_comments=comments, context=context)
    return catalog


def compiled_path(lang: str) -> Path:
    from autograder.i18n import COMPILED, DOMAIN
    return COMPILED / lang / "LC_MESSAGES" / f"{DOMAIN}.mo"


def compile_feedback(lang: str) -> bytes:
    """The .mo of `lang`'s feedback catalog: confirmed translations only (a fuzzy or empty one stays English)."""
    import io

    from babel.messages.mofile import write_mo
    out = io.BytesIO()
    write_mo(out, read(FEEDBACK, lang), use_fuzzy=False)
    return out.getvalue()


def update_feedback(lang: str) -> dict[str, int]:
    """Merge the feedback's English of today into `lang`'s catalog, write it, and compile the .mo."""
    catalog, fresh = read(FEEDBACK, lang), _new_catalog(FEEDBACK, lang)
    if catalog is None:
        catalog = fresh
    for field in HEADER_FIELDS:
        setattr(catalog, field, getattr(fresh, field))
    catalog.update(feedback_template(), update_header_comment=False, update_creation_date=False)
    catalog.obsolete.clear()
    write(catalog, catalog_path(FEEDBACK, lang))
    target = compiled_path(lang)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(compile_feedback(lang))
    return status(catalog)
