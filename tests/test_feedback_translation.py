"""The feedback in Chinese (autograder/i18n.py, locale/zh_CN/LC_MESSAGES/feedback.po).

The catalog holds every text marked in the code, each translated and confirmed, keeping its fields
and code; the compiled catalog is the one the .po gives; a text is translated at the output boundary
only, so English is unchanged when no language is chosen; and the hidden-answer corpus graded with and
without `--lang zh_CN` gets the same scores and mistake ids, with feedback that leaves no English
sentence.
"""
from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from autograder import i18n
from autograder.classroom import english_left
from autograder.classroom.english_left import english_runs
from autograder.course import ROOT
from autograder.deliver import translations

LANG = "zh_CN"
HAN = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def catalog():
    return translations.read(translations.FEEDBACK, LANG)


def test_catalog_is_complete_and_holds_todays_marked_texts(catalog):
    """Fails when a marked English text has no translation, is fuzzy, or is no longer in the code."""
    status = translations.status(catalog)
    assert status == {"translated": status["translated"], "fuzzy": 0, "untranslated": 0, "obsolete": 0}, \
        (f"{translations.catalog_path('feedback', LANG)}: {status}; run `python -m autograder translations` "
         "and translate (or confirm) every entry")
    marked = {(m.context, m.id) for m in translations.feedback_template() if m.id}
    held = {(m.context, m.id) for m in catalog if m.id}
    assert not marked - held, f"marked in the code but not in the catalog: {sorted(marked - held)[:5]}"
    assert not held - marked, f"in the catalog but no longer marked (obsolete): {sorted(held - marked)[:5]}"
    # the catalogue, the check names and the report's sentences are all there
    assert {"title", "explanation", "hint"} <= {m.context for m in catalog if m.id}
    assert status["translated"] > 500


def test_compiled_catalog_is_the_po(catalog):
    """autograder/locale/zh_CN/LC_MESSAGES/feedback.mo is what compiling the .po gives (the grader, the
    kit and Gradescope read the .mo)."""
    assert translations.compiled_path(LANG).read_bytes() == translations.compile_feedback(LANG), \
        "run `python -m autograder translations` to compile the feedback catalog"


def _fields(text):
    return Counter(re.findall(r"\{(\w+)\}", text))


def test_translations_keep_fields_code_and_markup(catalog):
    problems = []
    for m in catalog:
        if not m.id:
            continue
        if _fields(m.id) != _fields(m.string):
            problems.append(f"{m.id[:60]!r}: fields {dict(_fields(m.id))} became {dict(_fields(m.string))}")
        for what, pattern in (("inline code", r"`[^`]+`"), ("markup", r"</?\w+>")):
            lost = Counter(re.findall(pattern, m.id)) - Counter(re.findall(pattern, m.string))
            if lost:
                problems.append(f"{m.id[:60]!r}: {what} {sorted(lost)[:3]} missing from the translation")
        if not HAN.search(m.string) and re.search(r"[a-z]{3,} [a-z]{3,}", m.id):
            problems.append(f"{m.id[:60]!r}: not translated ({m.string[:60]!r})")
    assert not problems, "\n".join(problems)


def test_language_is_chosen_by_argument_or_environment(monkeypatch):
    monkeypatch.delenv(i18n.ENV, raising=False)
    assert i18n.language(None) is None
    assert i18n.language("zh-CN") == i18n.language("zh_CN") == i18n.language("zh") == "zh_CN"
    assert i18n.language("en") is None
    monkeypatch.setenv(i18n.ENV, "zh_CN")
    assert i18n.language(None) == "zh_CN"
    assert i18n.language("en") is None      # --lang en wins over the environment


def test_localize_translates_templates_and_leaves_the_rest():
    assert i18n.localize("Root cause: Scores are not scaled [missing-scale].", None) == \
        "Root cause: Scores are not scaled [missing-scale]."
    assert i18n.localize("Root cause: Scores are not scaled [missing-scale].", LANG) == \
        "根本原因：分数没有缩放 [missing-scale]。"
    # a value that is a message is translated inside the template; numbers and ids stay
    assert i18n.localize("softmax: 2/3 points. Root cause: Scores are not scaled [missing-scale].", LANG) == \
        "softmax：2/3 分。根本原因：分数没有缩放 [missing-scale]。"
    # a student's own text is never ours, even where a short template could be read into it
    for text in ("ValueError: x in y", "my own note in here", "operands could not be broadcast together with shapes"):
        assert i18n.localize(text, LANG) == text


def test_a_value_is_spaced_as_the_catalog_spaces_its_own_text():
    # no space between two Chinese characters where a Chinese value meets the template's Chinese;
    # one between Chinese and Latin or digits, whichever side the template put it on
    assert i18n.localize("f(q, k, v) returned a tuple of 3 items; expected a pair (output, weights)", LANG) == \
        "f(q, k, v) 返回了一个含 3 项的元组；期望的是一对值 (output, weights)"
    assert i18n.localize("2 fully blocked row(s) come out NaN; they must be zero", LANG) == \
        "有 2 个被完全屏蔽的行输出为 NaN；它们必须是零"
    assert i18n.localize("2 fully blocked row(s) come out NaN; they must be 0.0", LANG) == \
        "有 2 个被完全屏蔽的行输出为 NaN；它们必须是 0.0"
    # a value that ends in Chinese punctuation meets the template's Chinese without a space either
    line = ("model(prompt[:1]) after generate(model, prompt, 5) with a prompt of shape (2, 3), vocabulary 10, "
            "the model in training mode returned, compared with the reference: 30 of 30 values differ")
    assert "模型处于训练模式）之后调用 model(prompt[:1]) 返回的结果，" in i18n.localize(line, LANG)
    # nor a student's error after a sentence of ours that ends in a Chinese colon
    assert i18n.localize("the cell 'softmax' failed to run: SyntaxError: expected ':'", LANG) == \
        "单元格 'softmax' 运行失败：SyntaxError: expected ':'"


def test_a_layers_name_is_a_name_not_the_clauses_before_it():
    # "{module} is never used: ..." once read the two clauses before it as the module:
    # "从未用到 键是用 w_q 而不是 w_k 计算的；...；w_k：键是用另一个投影计算的"
    line = ("In your code: the keys are computed with w_q instead of w_k; the values are computed with w_q "
            "instead of w_v; w_k is never used: the keys are computed with another projection.")
    assert i18n.localize(line, LANG) == \
        "你的代码中：键是用 w_q 而不是 w_k 计算的；值是用 w_q 而不是 w_v 计算的；从未用到 w_k：键是用另一个投影计算的。"
    # and a parameter's dotted name is a name: "missing parameter(s): w_q.bias, w_k.bias" was left in English
    line = "SelfAttentionHead(8, 4): missing parameter(s): w_q.bias, w_k.bias. Its parameters are: w_k.weight (4, 8)"
    assert i18n.localize(line, LANG) == "SelfAttentionHead(8, 4)：缺少参数：w_q.bias, w_k.bias。它的参数有：w_k.weight (4, 8)"


def _result():
    from autograder.diagnose.root_cause import NOT_STARTED, summary
    head = summary("01_scaled_dot_product_attention", "scaled_dot_product_attention",
                   [("missing-scale", "the scores are not divided by sqrt(d_k) at all")])
    tags = ["lesson:01_scaled_dot_product_attention", "exercise:scaled_dot_product_attention"]
    return {"score": 1.0, "max_score": 8.0, "output": "", "tests": [
        {"name": "01_scaled_dot_product_attention: scores are divided by sqrt(d_k), the key size", "score": 0.0,
         "max_score": 2.0, "status": "failed", "tags": [*tags, "mistake:missing-scale"],
         "output": head + "\n\n[missing-scale] the weights from scaled_dot_product_attention(q, k, v) with q, k, v "
                          "(2, 4, 16) float64, (2, 7, 16) float64, (2, 7, 3) float64, compared with the reference: "
                          "56 of 56 values differ; the largest error is 0.549286 at index (1, 0, 0) "
                          "(expected 0.332379, got 0.881666)"},
        {"name": "01_scaled_dot_product_attention: attention works on float32 inputs", "score": 1.0,
         "max_score": 1.0, "status": "passed", "tags": tags, "output": ""},
        {"name": "01_scaled_dot_product_attention: softmax stays finite for large inputs (1e3 to 1e4)", "score": 0.0,
         "max_score": 5.0, "status": "failed", "output": NOT_STARTED,
         "tags": ["lesson:01_scaled_dot_product_attention", "exercise:softmax", "mistake:not-implemented"]}]}


def test_the_class_reports_mistake_counts_bracket_the_title_in_chinese(tmp_path):
    from autograder.report.class_report import class_report_html
    item = "<li><code>missing-scale</code>: {}</li>"
    assert item.format("1 名学生（分数没有缩放）") in class_report_html({"alice": _result()}, tmp_path, LANG)
    assert item.format("1 student(s) (Scores are not scaled)") in class_report_html({"alice": _result()}, tmp_path)


def test_english_is_unchanged_when_no_language_is_chosen(monkeypatch):
    """No language: the same text as English chosen explicitly, with nothing Chinese in it; the
    environment variable, or the argument, turns it Chinese; the numbers and ids are the same."""
    from autograder.report.results import feedback_markdown, localized, summary, verdict
    monkeypatch.delenv(i18n.ENV, raising=False)
    result = _result()
    english = [summary(result, detail=True), feedback_markdown("ada", result), verdict("softmax", result["tests"])]
    assert english == [summary(result, detail=True, lang="en"), feedback_markdown("ada", result, lang="en"),
                       verdict("softmax", result["tests"], lang="en")]
    assert not any(HAN.search(text) for text in english)
    assert localized(result, None) is result
    monkeypatch.setenv(i18n.ENV, LANG)
    chinese = [summary(result, detail=True), feedback_markdown("ada", result), verdict("softmax", result["tests"])]
    assert chinese == [summary(result, detail=True, lang=LANG), feedback_markdown("ada", result, lang=LANG),
                       verdict("softmax", result["tests"], lang=LANG)]
    for en, zh in zip(english, chinese):
        assert HAN.search(zh) and zh != en
        assert re.findall(r"\[[a-z-]+\]", en) == re.findall(r"\[[a-z-]+\]", zh)
    assert "根本原因：分数没有缩放 [missing-scale]。" in chinese[0]
    assert "56 个值中有 56 个不同；最大误差为 0.549286，位于下标 (1, 0, 0)（期望 0.332379，实际 0.881666）" in chinese[1]
    zh_result = localized(result, LANG)
    assert [(t["name"], t["score"], t["tags"]) for t in zh_result["tests"]] == \
           [(t["name"], t["score"], t["tags"]) for t in result["tests"]]


def test_self_check_speaks_the_notebooks_language(tmp_path, monkeypatch):
    """A Chinese lesson (release marks it: metadata language zh-CN) gets a Chinese self-check; the
    argument and $AUTOGRADER_LANG come first."""
    from autograder.selfcheck import language_of
    lesson = "02_masking"
    monkeypatch.delenv(i18n.ENV, raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert language_of(lesson) is None
    released = json.loads((ROOT / "lessons" / "zh_CN" / f"{lesson}.ipynb").read_text(encoding="utf-8"))
    assert released["metadata"]["language"] == "zh-CN"
    (tmp_path / f"{lesson}.ipynb").write_text(json.dumps(released), encoding="utf-8")
    assert language_of(lesson) == LANG
    assert language_of(lesson, "en") is None
    monkeypatch.setenv(i18n.ENV, "en")
    assert language_of(lesson) is None
    monkeypatch.delenv(i18n.ENV)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)           # Jupyter names the notebook of the kernel's session
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / f"{lesson}.ipynb"))
    assert language_of(lesson) == LANG


# ------------------------------------------------------------------------------------------- the corpus

def _chosen_entries():
    """Every lesson's correct submission and its three wrong ones that declare the most mistakes."""
    from autograder.classroom import accuracy
    entries = accuracy.load()
    chosen = []
    for lesson in sorted({e.lesson for e in entries}):
        mine = [e for e in entries if e.lesson == lesson]
        chosen += [e for e in mine if e.expect == "correct"][:1]
        chosen += sorted((e for e in mine if e.expect != "correct"), key=lambda e: (-len(e.mistakes), e.name))[:3]
    return chosen


def _grade(folder: Path, out: Path, *lang: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(i18n.ENV, None)
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--out", str(out),
                          "--json", str(out / "all.json"), *lang],
                         capture_output=True, text=True, env=env, timeout=1200, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    (out / "terminal.txt").write_text(run.stdout, encoding="utf-8")


@pytest.fixture(scope="module")
def graded_twice(tmp_path_factory):
    from autograder.classroom import accuracy
    entries = _chosen_entries()
    folder = tmp_path_factory.mktemp("corpus-class")
    accuracy.build_class(entries, folder)
    english_left.extras(folder, untouched=False)    # tampered, hung, crashed, broken: the grader's own words
    english, chinese = tmp_path_factory.mktemp("en"), tmp_path_factory.mktemp("zh")
    _grade(folder, english)
    _grade(folder, chinese, "--lang", LANG)
    return entries, english, chinese


def _verdicts(out: Path) -> dict:
    data = json.loads((out / "all.json").read_text(encoding="utf-8"))
    return {student: (result["score"], [(t["name"], t["score"], t["max_score"], t["status"], sorted(t["tags"]))
                                         for t in result["tests"]]) for student, result in data.items()}


@pytest.mark.slow
def test_same_answers_same_scores_and_ids_in_both_languages(graded_twice):
    entries, english, chinese = graded_twice
    assert set(_verdicts(english)) == {e.name for e in entries} | set(english_left.EXTRAS)
    assert _verdicts(english) == _verdicts(chinese)
    grades = [list(csv.reader((out / "grades.csv").open(encoding="utf-8"))) for out in (english, chinese)]
    assert grades[0] == grades[1]
    # the lessons and many mistake ids are covered
    named = {t[8:] for _, tests in _verdicts(english).values() for *_, tags in tests for t in tags
             if t.startswith("mistake:")}
    assert len({e.lesson for e in entries}) >= 10 and len(named) >= 30, sorted(named)
    # --out's results.json stays English (a later run reads it back); --json carries Chinese outputs
    zh_json = json.loads((chinese / "all.json").read_text(encoding="utf-8"))
    assert any(HAN.search(t["output"]) for r in zh_json.values() for t in r["tests"] if t["output"])
    student = entries[1].name
    kept = json.loads((chinese / "students" / student / "results.json").read_text(encoding="utf-8"))
    assert not any(HAN.search(t["output"]) for t in kept["tests"])


def test_english_runs_are_found():
    assert english_runs("未通过  softmax：the largest error is 3") == ["the largest error is"]
    assert english_runs("根本原因：the scores are not divided by sqrt(d_k)") == ["the scores are not divided by"]
    assert english_runs("未通过  softmax：最大误差 is 3 (at cell 4)") == []
    assert english_runs("  ValueError: operands could not be broadcast together") == []
    assert english_runs("形状为 (2, 3) 的 x，`x = x - x.max(axis=axis, keepdims=True)`，[missing-scale]") == []
    # three words count where asked; names of the API, calls, paths and a student's exception do not
    assert english_runs("q, k, v 的输出 x of shape (5, 8) float32", words=3) == ["x of shape"]
    assert english_runs("用 nn.Dropout 和 MultiHeadAttention 以及 lessons/zh_CN/02_masking.ipynb", words=3) == []
    assert english_runs("f(x) 抛出了 ValueError: could not broadcast these shapes", words=3) == []


@pytest.mark.slow
def test_chinese_feedback_leaves_no_english_sentence(graded_twice):
    """Every text the Chinese run gives a reader (feedback.md, the terminal in full, --verbose and --brief,
    the self-check's verdicts, Gradescope's outputs, the class report, the run's own lines), for the
    chosen entries and the broken, tampered, hung and crashed submissions: no three English words in a
    row that are not code, a name, an id or a student's own exception (english_left.py)."""
    entries, english, chinese = graded_twice
    for entry in entries:
        page = (chinese / "students" / entry.name / "feedback.md").read_text(encoding="utf-8")
        en_page = (english / "students" / entry.name / "feedback.md").read_text(encoding="utf-8")
        assert HAN.search(page) and not HAN.search(en_page)
    where, who = english_left.left_in(chinese, LANG, words=3,
                                      terminal=(chinese / "terminal.txt").read_text(encoding="utf-8"))
    assert set(who) <= set(where)
    assert not where, "\n".join(f"{line[:300]}  ({', '.join(sorted(where[line]))}; {sorted(who[line])[:2]})"
                                 for line in sorted(where))


@pytest.mark.extended   # grades the whole corpus (~370 submissions, several minutes on 2 cores)
def test_the_whole_corpus_leaves_no_english_sentence(tmp_path):
    """`python -m autograder.classroom.english_left` over every corpus entry, each lesson untouched in
    both editions, and the tampered, hung, crashed and broken submissions: nothing left in English."""
    students = english_left.build(tmp_path / "class")
    assert len(students) > 300
    terminal = english_left.grade(tmp_path / "class", tmp_path / "graded", LANG, jobs=1)
    where, who = english_left.measure(english_left.texts(tmp_path / "graded", students, LANG, terminal), words=3)
    assert not where, "\n".join(f"{line[:300]}  ({len(who[line])} students, e.g. {sorted(who[line])[:1]})"
                                 for line in sorted(where))


@pytest.mark.slow
def test_chinese_kit_self_check_speaks_chinese(tmp_path):
    """The Chinese kit (`release --student-kit OUT --lang zh_CN`): a lesson's self-check, run where
    Jupyter runs it (the lessons folder, the kit's own autograder), speaks Chinese without being asked,
    from the compiled catalog the kit carries; the English kit's stays English; the points are the same."""
    from autograder.deliver import kit
    lesson = "01_scaled_dot_product_attention"
    script = ("import sys, numpy as np; sys.path.insert(0, '..')\n"
              "from autograder.selfcheck import checker\n"
              "def softmax(x, axis=-1):\n    e = np.exp(x)\n    return e / e.sum(axis=axis, keepdims=True)\n"
              f"print('points', checker({lesson!r})('softmax', softmax))\n")
    printed = {}
    for lang in ("zh_CN", None):
        out = tmp_path / (lang or "en") / "kit"
        kit.write_kit(out, lessons=[lesson], corpus=False, lang=lang)
        assert (out / "autograder" / "locale" / "zh_CN" / "LC_MESSAGES" / "feedback.mo").exists()
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", i18n.ENV, "JPY_SESSION_NAME")}
        run = subprocess.run([sys.executable, "-c", script], cwd=out / "lessons", capture_output=True, text=True,
                             env=env, timeout=600)
        assert run.returncode == 0, run.stderr[-2000:]
        printed[lang] = run.stdout
    assert "../autograder" in printed["zh_CN"] and "../autograder" in printed[None]
    assert "根本原因：输入较大时 softmax 溢出 [softmax-unstable]。" in printed["zh_CN"], printed["zh_CN"]
    assert "Root cause: Softmax overflows for large inputs [softmax-unstable]." in printed[None], printed[None]
    assert not HAN.search(printed[None])
    assert printed["zh_CN"].splitlines()[-1] == printed[None].splitlines()[-1]      # the same points


def test_grade_refuses_a_language_it_does_not_speak(tmp_path, capsys, monkeypatch):
    from autograder.__main__ import main
    monkeypatch.delenv(i18n.ENV, raising=False)
    assert main(["grade", str(tmp_path), "--lang", "fr"]) == 2
    assert "--lang fr" in capsys.readouterr().err
    assert i18n.ENV not in os.environ


# ------------------------------------------------------------------- report/phrases.py against the checks

def _written_texts() -> list[str]:
    """Every string the package writes outside report/phrases.py, an f-string's values as "\\x00"."""
    import ast
    texts = []
    for path in (ROOT / "autograder").rglob("*.py"):
        if path.name == "phrases.py" and path.parent.name == "report":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.JoinedStr):
                texts.append("".join(v.value if isinstance(v, ast.Constant) else "\x00" for v in node.values))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                texts.append(node.value)
    return texts


HOLE = "\x00"


def _words(text: str) -> list[str]:
    return re.findall(r"\x00|[A-Za-z0-9_.'-]+", text)


def _covered(piece: list[str], written: list[str]) -> bool:
    """Is `piece` (words) written in `written` (words and HOLEs, an f-string's values), from some word on:
    a HOLE stands for any run of the piece's words, and the piece may go on past the text's end (the
    rest is written elsewhere) once three of its words matched there."""
    for start in (i for i, token in enumerate(written) if token in (piece[0], HOLE)):
        states = {(0, 0)}                      # (words of the piece matched, of them literally)
        for token in written[start:]:
            nxt = set()
            for i, lit in states:
                if token == HOLE:
                    nxt |= {(k, lit) for k in range(i, len(piece) + 1)}
                elif i < len(piece) and token == piece[i]:
                    nxt.add((i + 1, lit + 1))
            states = nxt
            if not states or any(i == len(piece) and lit for i, lit in states):
                break
        if any(i == len(piece) and lit for i, lit in states) or any(lit >= 3 for _, lit in states):
            return True
    return False


def test_each_phrase_is_still_written_somewhere():
    """report/phrases.py restates pieces the checks compose in f-strings (i18n.py reads each inside a
    longer line). A piece whose wording a check changed would silently stay English: the words between
    a phrase's {fields} must still be written, in order, by some string of the package outside
    phrases.py (an f-string's value standing for any of them)."""
    import ast
    from autograder.report import phrases
    written = [_words(t) for t in set(_written_texts())]
    tree = ast.parse(Path(phrases.__file__).read_text(encoding="utf-8"))
    templates = [node.args[0].value for node in ast.walk(tree) if isinstance(node, ast.Call)
                 and getattr(node.func, "id", None) == "N_" and isinstance(node.args[0], ast.Constant)]
    assert len(templates) > 50
    stale = []
    for template in templates:
        for piece in re.split(r"\{\w+\}", template):
            words = _words(piece)
            if len(words) >= 2 and not any(_covered(words, w) for w in written if set(words) & set(w)):
                stale.append(f"{template!r}: {piece!r}")
    assert not stale, "pieces of report/phrases.py no string of the package writes any more:\n" + "\n".join(stale)


@pytest.mark.parametrize("names", [["helper"], [f"name{i}" for i in range(7)]])
def test_the_self_checks_kernel_note_is_translated(monkeypatch, names):
    """load/kernel_state.note, the self-check's line about names only the kernel has (run_selfcheck
    prints it through localize): Chinese with the names kept, English unchanged without a language."""
    from autograder.load import kernel_state
    monkeypatch.setattr(kernel_state, "kernel_only_names", lambda *args: names)
    english = kernel_state.note("01_scaled_dot_product_attention", "softmax", None)
    assert english.startswith("note: softmax uses `helper`" if len(names) == 1 else "note: softmax uses `name0`")
    chinese = i18n.localize(english, LANG)
    assert chinese.startswith("注意：softmax") and not english_runs(chinese, words=3), chinese
    assert all(f"`{n}`" in chinese for n in names[:5]) and i18n.localize(english, None) == english


def test_each_marked_template_is_given_its_fields():
    """`N_("... {field} ...").format(...)`: every field the template names is passed. A template whose
    field was renamed for the catalog (a field's name says what it may hold, i18n._KINDS) but not where
    it is filled raises KeyError in the check itself, which the student reads as the autograder's failure."""
    import ast
    missing = []
    for path in (ROOT / "autograder").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
                    and node.keywords and all(k.arg for k in node.keywords)):
                continue
            given, templates, todo = {k.arg for k in node.keywords}, [], [node.func.value]
            while todo:
                t = todo.pop()
                if isinstance(t, ast.IfExp):
                    todo += [t.body, t.orelse]
                elif isinstance(t, ast.Call) and getattr(t.func, "id", None) == "N_" and isinstance(t.args[0], ast.Constant):
                    templates.append(t.args[0].value)
            for template in templates:
                needed = set(re.findall(r"(?<!\{)\{(\w+)\}(?!\})", template))
                if not needed <= given:
                    missing.append(f"{path.relative_to(ROOT)}:{node.lineno}: {template[:50]!r} lacks {sorted(needed - given)}")
    assert not missing, "\n".join(missing)
