"""Release: regenerate lessons/ from solutions/ with nbgrader's own preprocessors.

The pipeline is nbgrader's `generate_assignment` without its database and header steps:
check the metadata, lock cells, replace the solution regions with stubs, drop hidden
tests and mark schemes, clear outputs, record checksums. Output is deterministic: the
same sources always give byte-identical lessons (nbformat writes sorted keys; cell ids and
metadata come from the source notebook).
"""
from __future__ import annotations

from pathlib import Path

import nbformat
from nbgrader.preprocessors import (CheckCellMetadata, ClearHiddenTests, ClearMarkScheme,
                                    ClearOutput, ClearSolutions, ComputeChecksums, LockCells)

from autograder.course import COURSE, LESSONS, available_lessons

# lessons/nbgrader_config.py (the same text as the repository's own): nbgrader warns "No
# nbgrader_config.py file found" wherever Jupyter starts without one, and students should not see it
NBGRADER_CONFIG = (Path(__file__).resolve().parents[2] / "nbgrader_config.py").read_text(encoding="utf-8") \
    if (Path(__file__).resolve().parents[2] / "nbgrader_config.py").exists() else "c = get_config()  # noqa: F821\n"

PIPELINE = (CheckCellMetadata, LockCells, ClearSolutions, ClearOutput, ClearHiddenTests,
            ClearMarkScheme, ComputeChecksums, CheckCellMetadata)


def student_version(source: Path | nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb = nbformat.read(str(source), as_version=4) if isinstance(source, Path) else source
    resources: dict = {}
    for stage in PIPELINE:
        nb, resources = stage().preprocess(nb, resources)
    return nb


def render(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(nb) + "\n"


def translated_version(lesson_id: str, lang: str) -> nbformat.NotebookNode:
    """The released notebook with `lang`'s prose and demo text (deliver/translations.py): the same
    code but for the demos' shown string literals. Translated before nbgrader's pipeline, so that
    the locked cells' checksums are those of the cells the student receives."""
    from autograder.deliver.translations import translate
    nb = nbformat.read(str(COURSE[lesson_id].solution_path), as_version=4)
    translate(nb, lesson_id, lang)
    return student_version(nb)


def _releases(lang: str | None = None):
    """(lesson_id, the released notebook's text) for every lesson; with `lang`, for every lesson
    translated into it."""
    if lang is None:
        for lesson in available_lessons():
            yield lesson.id, render(student_version(lesson.solution_path))
        return
    from autograder.deliver.translations import translated_lessons
    for lesson_id in translated_lessons(lang):
        yield lesson_id, render(translated_version(lesson_id, lang))


def release(out_dir: Path = LESSONS, lang: str | None = None) -> list[Path]:
    """Write lessons/<id>.ipynb for every lesson (with `lang`: the translated lessons, by default
    into lessons/<lang>/, under the same file names); return the paths written."""
    if lang is not None and out_dir == LESSONS:
        out_dir = LESSONS / lang
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for lesson_id, text in _releases(lang):
        target = out_dir / f"{lesson_id}.ipynb"
        tmp = target.with_suffix(".ipynb.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(target)  # atomic: a reader never sees half a notebook
        written.append(target)
    config = out_dir / "nbgrader_config.py"
    config.write_text(NBGRADER_CONFIG, encoding="utf-8")
    written.append(config)
    if lang is not None:   # the figures' fonts: read by matplotlib from the notebook's folder
        from autograder.deliver.translations import matplotlibrc
        (out_dir / "matplotlibrc").write_text(matplotlibrc(lang), encoding="utf-8")
        written.append(out_dir / "matplotlibrc")
    return written


def out_of_sync(lang: str | None = None) -> list[str]:
    """Lessons whose file in lessons/ (or lessons/<lang>/) differs from what release would write now."""
    folder = LESSONS / lang if lang else LESSONS
    stale = []
    for lesson_id, text in _releases(lang):
        path = folder / f"{lesson_id}.ipynb"
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            stale.append(lesson_id)
    if lang is not None:
        from autograder.deliver.translations import matplotlibrc
        rc = folder / "matplotlibrc"
        if not rc.exists() or rc.read_text(encoding="utf-8") != matplotlibrc(lang):
            stale.append("matplotlibrc")
    return stale
