"""The Chinese edition stays in step with the English (deliver/translations.py).

Every catalog is complete and current (no untranslated, fuzzy or obsolete entry, and no English
cell without its entry); each translation keeps its source's inline code, math, links and
structure; none is suspiciously short; the released Chinese notebooks are what `release` writes,
with code cells byte-identical to the English ones but for the demo cells' shown string literals,
translated in place (deliver/code_strings.py), placeholders and escapes kept.
"""
from __future__ import annotations

import re
from collections import Counter

import nbformat
import pytest

from autograder.course import COURSE, LESSONS
from autograder.deliver import translations

LANG = "zh_CN"
LESSON_IDS = translations.translated_lessons(LANG)
DOMAINS = LESSON_IDS + [page for page in translations.PAGES if translations.catalog_path(page, LANG).exists()]

HAN = re.compile(r"[\u4e00-\u9fff]")


def _entries(lesson_id):
    return [m for m in translations.read(lesson_id, LANG) if m.id]


def test_there_is_a_chinese_edition():
    """Every lesson and the site's introduction: a lesson added to the course needs its catalog."""
    assert "book_intro" in DOMAINS
    assert set(LESSON_IDS) == {lesson.id for lesson in COURSE.values() if lesson.solution_path.exists()}


@pytest.mark.parametrize("lesson_id", DOMAINS)
def test_catalog_is_complete_and_current(lesson_id):
    catalog = translations.read(lesson_id, LANG)
    status = translations.status(catalog)
    assert status == {"translated": status["translated"], "fuzzy": 0, "untranslated": 0, "obsolete": 0}, \
        (f"{translations.catalog_path(lesson_id, LANG)}: {status}; run `python -m autograder translations` "
         "and translate (or confirm) every entry")
    english = {(m.context, m.id) for m in translations.template(lesson_id) if m.id}
    assert {(m.context, m.id) for m in _entries(lesson_id)} == english, \
        "the catalog does not hold today's English: run `python -m autograder translations`"


def _spans(pattern, text):
    """The spans `pattern` finds, whitespace normalised (a translation may rejoin a span's lines)."""
    return Counter(" ".join(span.split()) for span in re.findall(pattern, text, flags=re.S))


KEPT = {
    "display math": r"\$\$.*?\$\$",
    "inline code": r"(?<!`)`[^`]+`(?!`)",
    "link target": r"\]\(([^)]+)\)",
    "URL": r"https?://\S+",
}


@pytest.mark.parametrize("lesson_id", DOMAINS)
def test_translations_keep_code_math_and_links(lesson_id):
    problems = []
    for m in _entries(lesson_id):
        source, target = m.id, m.string
        if translations.is_code_literal(m):
            continue   # test_code_literal_translations: its math is drawn by matplotlib
        for what, pattern in KEPT.items():
            lost = _spans(pattern, source) - _spans(pattern, target)
            if lost:
                problems.append(f"{m.context}: {what} {sorted(lost)[:3]} missing from the translation")
        inline_math = lambda s: Counter(re.findall(r"(?<!\$)\$[^$\n]+\$(?!\$)", s))  # noqa: E731
        lost = inline_math(source) - inline_math(target)
        if lost:
            problems.append(f"{m.context}: inline math {sorted(lost)[:3]} missing from the translation")
        heading = lambda s: [len(h) for h in re.findall(r"^(#+) ", s, flags=re.M)]  # noqa: E731
        if heading(source) != heading(target):
            problems.append(f"{m.context}: headings {heading(source)} became {heading(target)}")
        rows = lambda s: sum(1 for line in s.splitlines() if line.lstrip().startswith("|"))  # noqa: E731
        if rows(source) != rows(target):
            problems.append(f"{m.context}: a table has {rows(source)} rows in English, {rows(target)} here")
    assert not problems, "\n".join(problems)


PLACEHOLDER = r"\{[^{}]*(\{[^{}]*\}[^{}]*)*\}"   # an f-string's {expression:format}, one level of nesting


def _prose(text: str, code: bool = False) -> str:
    if code:   # a demo's literal: its placeholders are code, not words to translate
        text = re.sub(PLACEHOLDER, "", text)
    text = re.sub(r"\$\$.*?\$\$", "", text, flags=re.S)
    text = re.sub(r"\$[^$\n]*\$", "", text)
    return re.sub(r"`[^`]*`", "", text)


@pytest.mark.parametrize("lesson_id", DOMAINS)
def test_no_translation_is_suspiciously_short(lesson_id):
    """Chinese prose runs at 0.9 to 1.9 Han characters per English word in these lessons; a cell
    under 0.6 has lost sentences (or was never translated)."""
    short = []
    for m in _entries(lesson_id):
        code = translations.is_code_literal(m)
        words = len(_english_words(m.id) if code else _prose(m.id).split())
        han = len(HAN.findall(_prose(m.string, code)))
        if words >= 8 and han < 0.6 * words:
            short.append(f"{m.context}: {han} Chinese characters for {words} English words")
    assert not short, "\n".join(short)


KEPT_WORDS = {"softmax", "lse", "exp", "PE", "top_k", "top_p"}   # the glossary keeps these English


def _english_words(literal: str) -> list[str]:
    """The words of a literal outside its placeholders, math, code and HTML tags, less names and kept terms."""
    text = re.sub(PLACEHOLDER + r"|\$[^$]*\$|`[^`]*`|</?[A-Za-z][^<>]*>", " ", literal)
    return [w for w in re.findall(r"[A-Za-z_][A-Za-z_0-9.]*", text)
            if w not in KEPT_WORDS and not any(ch.isdigit() or ch in "_." for ch in w) and len(w) > 1]


@pytest.mark.parametrize("lesson_id", LESSON_IDS)
def test_code_literal_translations(lesson_id):
    """A demo's shown text reads Chinese (or is only names, numbers and kept terms), keeps its
    placeholders and escapes (substitute parses the cell to check), and draws no $math$ beside
    Chinese: matplotlib's mathtext has no fallback font, so it would draw boxes."""
    entries = [m for m in _entries(lesson_id) if translations.is_code_literal(m)]
    assert entries, "the lesson's demos show no text?"
    problems = []
    for m in entries:
        if not HAN.search(m.string) and _english_words(m.id):
            problems.append(f"{m.context}: {m.string!r} is not Chinese")
        if HAN.search(m.string) and re.search(r"\$[^$]+\$", m.string):
            problems.append(f"{m.context}: {m.string!r} mixes $math$ with Chinese (write the math as characters)")
        escapes = lambda s: Counter(re.findall(r"\\.", re.sub(r"\$[^$]*\$", "", s)))  # noqa: E731 (LaTeX's aside)
        if escapes(m.id) != escapes(m.string):
            problems.append(f"{m.context}: {m.string!r} changes the escapes of {m.id!r}")
    assert not problems, "\n".join(problems)


def _substituted(lesson_id: str, english: nbformat.NotebookNode) -> dict[str, str]:
    """cell id -> the English demo cell with the catalog's translations substituted."""
    from autograder.deliver.code_strings import is_demo_cell, shown_literals, substitute
    catalog = translations.read(lesson_id, LANG)
    out = {}
    for cell in english.cells:
        if is_demo_cell(cell):
            texts = {lit.text for lit in shown_literals(cell.source)}
            out[cell.id] = substitute(cell.source, {t: catalog.get(t, context=cell.id).string for t in texts})
    return out


@pytest.mark.parametrize("lesson_id", LESSON_IDS)
def test_released_chinese_notebook_runs_the_same_code(lesson_id):
    """Every code cell as in English, but for the demos' shown literals: graded cells and their
    stubs, the setup and the self-checks byte-identical; a demo cell is the English with the
    catalog's translations in its literals and nothing else (the same code once parsed), and its
    nbgrader checksum is that of its Chinese source (nbgrader validates what the student has)."""
    from nbgrader.utils import compute_checksum
    from autograder.deliver.code_strings import check_same_code
    english = nbformat.read(str(LESSONS / f"{lesson_id}.ipynb"), as_version=4)
    chinese = nbformat.read(str(LESSONS / LANG / f"{lesson_id}.ipynb"), as_version=4)
    assert [(c.cell_type, c.get("id")) for c in chinese.cells] == [(c.cell_type, c.get("id")) for c in english.cells]
    translated = _substituted(lesson_id, english)
    shown = 0
    for en, zh in zip(english.cells, chinese.cells):
        if en.cell_type != "code":
            assert HAN.search(zh.source), f"{en.get('id')} is still in English"
        elif en.id in translated:
            check_same_code(en.source, zh.source)
            assert zh.source == translated[en.id], en.id
            shown += zh.source != en.source
            meta = {k: v for k, v in zh.metadata.get("nbgrader", {}).items() if k != "checksum"}
            assert meta == {k: v for k, v in en.metadata.get("nbgrader", {}).items() if k != "checksum"}
            assert zh.metadata["nbgrader"]["checksum"] == compute_checksum(zh), en.id
        else:
            assert zh.source == en.source and zh.metadata == en.metadata, en.get("id")
    assert shown, "no demo cell speaks Chinese"
    assert chinese.metadata.get("language") == "zh-CN"


def test_released_chinese_notebooks_are_in_sync():
    from autograder.deliver.release import out_of_sync
    assert out_of_sync(LANG) == [], "run `python -m autograder release`"
    on_disk = {p.stem for p in (LESSONS / LANG).glob("*.ipynb")}
    assert on_disk == set(LESSON_IDS), "lessons/zh_CN/ holds a lesson without a catalog, or misses one"


def _merge_edited(tmp_path, monkeypatch, lesson_id, edit):
    """Edit the lesson's English (`edit(nb)`, in place) in a copy of solutions/ and the catalogs,
    and merge it in; return (the edited notebook, the catalog's counts)."""
    import shutil
    source = COURSE[lesson_id].solution_path
    nb = nbformat.read(str(source), as_version=4)
    edit(nb)
    edited = tmp_path / "solutions" / source.name
    edited.parent.mkdir()
    nbformat.write(nb, str(edited))
    shutil.copytree(translations.LOCALE / LANG, tmp_path / "locale" / LANG)
    monkeypatch.setattr(translations, "LOCALE", tmp_path / "locale")
    monkeypatch.setattr(type(COURSE[lesson_id]), "solution_path",
                        property(lambda self: tmp_path / "solutions" / f"{self.id}.ipynb"))
    return nb, translations.update(LANG, [lesson_id])[lesson_id]


def test_a_changed_english_cell_makes_its_translation_fuzzy(tmp_path, monkeypatch):
    """What keeps the editions in step: Babel's merge keeps the old translation of an edited cell,
    marked fuzzy, so it is never used (and the tests above fail) until a translator confirms it."""
    def edit(nb):
        next(c for c in nb.cells if c.cell_type == "markdown").source += "\n\nOne more sentence."
    nb, counts = _merge_edited(tmp_path, monkeypatch, "03_self_attention_head", edit)
    assert counts["fuzzy"] == 1 and counts["untranslated"] == 0, counts
    first = next(c for c in nb.cells if c.cell_type == "markdown")
    assert translations.translate(nb, "03_self_attention_head", LANG) == [first.id]   # English until confirmed


def test_a_changed_english_literal_makes_its_translation_fuzzy(tmp_path, monkeypatch):
    """The same for a demo's shown text: an edited literal's translation goes fuzzy, is not used
    (that literal stays English, the cell's others are still translated), until confirmed."""
    def edit(nb):
        demo = next(c for c in nb.cells if c.get("id") == "l03-03")
        assert 'print("weight shape:"' in demo.source
        demo.source = demo.source.replace('"weight shape:"', '"weight matrix shape:"')
    nb, counts = _merge_edited(tmp_path, monkeypatch, "03_self_attention_head", edit)
    assert counts["fuzzy"] == 1 and counts["untranslated"] == 0, counts
    assert translations.translate(nb, "03_self_attention_head", LANG) == ["l03-03"]
    demo = next(c for c in nb.cells if c.get("id") == "l03-03")
    assert '"weight matrix shape:"' in demo.source and '" 偏置的形状："' in demo.source


@pytest.mark.slow   # records two lessons' checks twice (~50 s)
def test_chinese_student_kit(tmp_path):
    """`release --student-kit OUT --lang zh_CN`: the translated lessons in Chinese, under the same
    file names and with the same code as the English kit's, and a Chinese README naming them."""
    from autograder.deliver.kit import kit_files
    lessons = ["01_scaled_dot_product_attention", "02_masking"]
    chinese = kit_files(lessons, corpus=False, lang=LANG)
    english = kit_files(lessons, corpus=False)
    assert set(chinese) == set(english) | {"lessons/matplotlibrc"}
    readme = chinese["README.md"].decode()
    assert HAN.search(readme) and "`lessons/02_masking.ipynb`" in readme and "{translated}" not in readme
    for lesson_id in lessons:
        zh = nbformat.reads(chinese[f"lessons/{lesson_id}.ipynb"].decode(), as_version=4)
        en = nbformat.reads(english[f"lessons/{lesson_id}.ipynb"].decode(), as_version=4)
        translated = _substituted(lesson_id, en)
        assert [c.source for c in zh.cells if c.cell_type == "code"] == \
            [translated.get(c.get("id"), c.source) for c in en.cells if c.cell_type == "code"]
        assert all(HAN.search(c.source) for c in zh.cells if c.cell_type == "markdown")
    assert all(chinese[name] == english[name] for name in chinese if name.startswith("autograder/"))
    assert "lessons/matplotlibrc" not in english and "WenQuanYi Micro Hei" in chinese["lessons/matplotlibrc"].decode()
