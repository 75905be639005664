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

from autograder.course import LESSONS, available_lessons

# lessons/nbgrader_config.py (the same text as the repository's own): nbgrader warns "No
# nbgrader_config.py file found" wherever Jupyter starts without one, and students should not see it
NBGRADER_CONFIG = (Path(__file__).resolve().parents[2] / "nbgrader_config.py").read_text(encoding="utf-8") \
    if (Path(__file__).resolve().parents[2] / "nbgrader_config.py").exists() else "c = get_config()  # noqa: F821\n"

PIPELINE = (CheckCellMetadata, LockCells, ClearSolutions, ClearOutput, ClearHiddenTests,
            ClearMarkScheme, ComputeChecksums, CheckCellMetadata)


def student_version(source: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(str(source), as_version=4)
    resources: dict = {}
    for stage in PIPELINE:
        nb, resources = stage().preprocess(nb, resources)
    return nb


def render(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(nb) + "\n"


def release(out_dir: Path = LESSONS) -> list[Path]:
    """Write lessons/<id>.ipynb for every lesson; return the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for lesson in available_lessons():
        target = out_dir / f"{lesson.id}.ipynb"
        text = render(student_version(lesson.solution_path))
        tmp = target.with_suffix(".ipynb.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(target)  # atomic: a reader never sees half a notebook
        written.append(target)
    config = out_dir / "nbgrader_config.py"
    config.write_text(NBGRADER_CONFIG, encoding="utf-8")
    written.append(config)
    return written


def out_of_sync() -> list[str]:
    """Lessons whose file in lessons/ differs from what release would write now."""
    stale = []
    for lesson in available_lessons():
        path = lesson.released_path
        if not path.exists() or path.read_text(encoding="utf-8") != render(student_version(lesson.solution_path)):
            stale.append(lesson.id)
    return stale
