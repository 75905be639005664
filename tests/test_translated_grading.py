"""The grader treats a Chinese notebook exactly as the English one (load/notebook.py, _template).

The two editions differ only in the text their demo cells show (deliver/code_strings.py). The
loader compares a student's locked cells with the edition whose locked cells they match, never with
what the notebook says about itself: a Chinese notebook is not "edited" for being Chinese, a
tampered locked cell is named in either language, and whatever the student's file holds, the code
that runs is the same code. The parity test grades the same answers (the corpus) written into
both editions, in one class run, and asks for the same scores, mistake ids and feedback.
"""
from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from autograder.course import COURSE, LESSONS
from autograder.deliver.code_strings import check_same_code, is_demo_cell
from autograder.load.notebook import build_program
from conftest import lesson_ids, run_cli

LANG = "zh_CN"


def editions(lesson_id: str) -> dict[str, Path]:
    return {"en": LESSONS / f"{lesson_id}.ipynb", LANG: LESSONS / LANG / f"{lesson_id}.ipynb"}


def _program(nb: nbformat.NotebookNode, tmp_path: Path, lesson_id: str, name: str):
    path = tmp_path / name / f"{lesson_id}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return build_program(path, COURSE[lesson_id])


def _same_code(a, b):
    """The two programs run the same code: the same cells, equal but for string literals' text."""
    assert [(c.label, c.kind) for c in a.cells] == [(c.label, c.kind) for c in b.cells]
    for x, y in zip(a.cells, b.cells):
        check_same_code(x.source, y.source)


@pytest.mark.parametrize("lesson_id", lesson_ids())
def test_each_edition_is_its_own_template(lesson_id):
    """The released Chinese notebook, as handed out: nothing edited, its demos run as released
    (in Chinese), and the same code runs as for the English."""
    programs = {lang: build_program(path, COURSE[lesson_id]) for lang, path in editions(lesson_id).items()}
    for lang, program in programs.items():
        assert program.notes == [] and program.problems == {}, (lang, program.notes)
    released = {c.get("metadata", {}).get("nbgrader", {}).get("grade_id"): c.source
                for c in nbformat.read(str(editions(lesson_id)[LANG]), as_version=4).cells if c.cell_type == "code"}
    lesson_cells = [c for c in programs[LANG].cells if c.kind in ("lesson", "setup")]
    assert lesson_cells and all(c.source == released[c.label] for c in lesson_cells)
    _same_code(programs["en"], programs[LANG])
    assert programs["en"].checkpoints == programs[LANG].checkpoints


def _demo(nb, lesson_id):
    return next(c for c in nb.cells if is_demo_cell(c) and "slow-demo" not in c.metadata.get("tags", []))


@pytest.mark.parametrize("lesson_id", ["01_scaled_dot_product_attention", "09_generating_text"])
def test_a_tampered_locked_cell_is_named_in_either_language(lesson_id, tmp_path):
    """A locked demo cell rewritten (and the notebook claiming the other language): the same note
    in both editions, and the released cell of the student's own edition runs in its place."""
    programs = {}
    for lang, path in editions(lesson_id).items():
        nb = nbformat.read(str(path), as_version=4)
        cell = _demo(nb, lesson_id)
        released = cell.source
        cell.source = "import os\nprint(os.listdir('/'))\n"
        nb.metadata["language"] = "en" if lang == LANG else "zh-CN"   # says nothing that matters
        programs[lang] = _program(nb, tmp_path, lesson_id, lang)
        gid = cell.metadata["nbgrader"]["grade_id"]
        assert programs[lang].notes == [f"you edited the locked cell '{gid}'; the released version was used"]
        ran = [c for c in programs[lang].cells if c.label == gid]
        assert all(c.source == released for c in ran)
    _same_code(programs["en"], programs[LANG])


def test_a_notebook_of_both_editions_runs_the_same_code(tmp_path):
    """Half its demo cells from each edition: compared with the edition most of them match, the
    others are named as edited, and the same code runs as for either edition."""
    lesson_id = "02_masking"
    english = nbformat.read(str(editions(lesson_id)["en"]), as_version=4)
    mixed = nbformat.read(str(editions(lesson_id)[LANG]), as_version=4)
    demos = [i for i, c in enumerate(mixed.cells) if is_demo_cell(c) and c.source != english.cells[i].source]
    assert len(demos) >= 3
    for i in demos[:len(demos) // 2]:
        mixed.cells[i].source = english.cells[i].source
    program = _program(mixed, tmp_path, lesson_id, "mixed")
    assert len(program.notes) == len(demos) // 2, program.notes
    _same_code(program, build_program(editions(lesson_id)["en"], COURSE[lesson_id]))


def _parity_entries():
    """From the corpus, per lesson: its first correct entry and its first two wrong ones."""
    from autograder.classroom import accuracy
    chosen = []
    for lesson_id in lesson_ids():
        entries = [e for e in accuracy.load() if e.lesson == lesson_id]
        chosen += [e for e in entries if e.expect == "correct"][:1] + [e for e in entries if e.expect == "wrong"][:2]
    return chosen


@pytest.mark.slow   # grades ~60 submissions in one class run (about a minute on 2 cores)
def test_the_same_answers_get_the_same_grades_in_both_editions(tmp_path):
    """The corpus's answers written into the English and the Chinese notebooks, graded together by
    `python -m autograder grade`: the same scores, the same mistake ids, the same feedback; and a
    tampered locked cell is treated alike in both."""
    from autograder.classroom import accuracy
    from autograder.report.results import mistakes_of
    entries = _parity_entries()
    assert {e.lesson for e in entries} == set(lesson_ids()) and any(e.expect == "wrong" for e in entries)
    folder = tmp_path / "class"
    pairs = []
    for entry in entries:
        for lang, released in editions(entry.lesson).items():
            path = folder / f"{entry.name}.{lang}" / f"{entry.lesson}.ipynb"
            path.parent.mkdir(parents=True)
            path.write_text(accuracy.notebook_for(entry, released), encoding="utf-8")
        pairs.append(entry.name)
    tampered = entries[0]
    for lang, released in editions(tampered.lesson).items():
        nb = nbformat.reads(accuracy.notebook_for(tampered, released), as_version=4)
        _demo(nb, tampered.lesson).source = "raise SystemExit('tampered')\n"
        path = folder / f"tampered.{lang}" / f"{tampered.lesson}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(nb, str(path))
    pairs.append("tampered")

    out = tmp_path / "results.json"
    run = run_cli("grade", folder, "--json", out, "--jobs", "2", timeout=1200)
    assert run.returncode == 0, run.stderr[-2000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    lost = 0
    for name in pairs:
        en, zh = results[f"{name}.en"], results[f"{name}.{LANG}"]
        grades = lambda r: [(t["name"], t["score"], t["max_score"], sorted(mistakes_of(t))) for t in r["tests"]]  # noqa: E731
        assert grades(en) == grades(zh), name
        assert en == zh, f"{name}: the feedback differs between the editions"
        lost += en["score"] < en["max_score"]
    assert lost >= len(lesson_ids()), "the wrong entries should lose points: is anything graded?"
    assert "you edited the locked cell" in results[f"tampered.{LANG}"].get("output", "")
    assert "you edited the locked cell" not in results[f"{tampered.name}.{LANG}"].get("output", "")
