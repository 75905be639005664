"""Issue 31, point 3: one parse path, and any metadata is survivable.

A list as the nbgrader grade_id of an ungraded extra cell made a correct lesson-01 notebook 0/8 with
"the notebook could not be read (TypeError)", while the same file padded past 2 MB (parsed apart, and
cleaned) got 8/8. Every JSON type goes into every field the grader reads, on a graded cell and on an
extra ungraded one: each notebook is graded as the notebook it is (at `build_program`, which decides
what runs; a handful end to end), or gets a message that names the cell, never a bare exception name.
"""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from conftest import ROOT
from autograder.course import COURSE
from autograder.load import reading
from autograder.load.notebook import build_program

L01 = "01_scaled_dot_product_attention"
LESSON = COURSE[L01]
SOLVED = json.loads((ROOT / "solutions" / f"{L01}.ipynb").read_text(encoding="utf-8"))
EXERCISES = ("softmax", "scaled_dot_product_attention")

JUNK = {"null": None, "true": True, "false": False, "int": 7, "float": 2.5, "NaN": float("nan"),
        "list": ["my-notes"], "empty list": [], "dict": {"a": 1}, "long string": "x" * 100_000}
# what the grader reads of a cell: each nbgrader field, the tags, the metadata and nbgrader blocks
# themselves, the cell's type and its source (load/reading.py, load/notebook.py)
NBGRADER_FIELDS = tuple(reading.NBGRADER_KEYS) + ("checksum", "cell_type")
CELL_FIELDS = ("metadata", "tags", "nbgrader", "cell_type", "source")
FIELDS = [f"nbgrader.{f}" for f in NBGRADER_FIELDS] + list(CELL_FIELDS)
NOTEBOOK_FIELDS = ("nbformat", "nbformat_minor", "metadata")
BARE = re.compile(r"\b[A-Z]\w*(Error|Exception)\b(?!:)|\(\w+Error\)")   # "(TypeError)", "KeyError" alone


def source(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def solution(name: str) -> str:
    return next(source(c) for c in SOLVED["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == name)


def extra_cell() -> dict:
    return {"cell_type": "code", "execution_count": None, "outputs": [], "source": "my_notes = 1\n",
            "metadata": {"nbgrader": {"grade_id": "my-notes", "solution": False, "grade": False, "locked": False}}}


def with_junk(where: str, field: str, junk) -> dict:
    nb = copy.deepcopy(SOLVED)
    if where == "notebook":
        nb[field] = junk
        return nb
    if where == "extra":
        nb["cells"].append(cell := extra_cell())
    else:
        cell = next(c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "softmax")
    if field.startswith("nbgrader."):
        cell["metadata"]["nbgrader"][field.split(".", 1)[1]] = junk
    elif field == "tags":
        cell["metadata"]["tags"] = junk
    elif field == "nbgrader":
        cell["metadata"]["nbgrader"] = junk
    else:
        cell[field] = junk
    return nb


def program_of(nb: dict, tmp_path: Path, pad: int = 0):
    text = json.dumps(nb)            # NaN written as NaN, as Python's json (and Jupyter's) would read it
    if pad:
        text = text[:-1] + ', "padding": "' + " " * pad + '"}'
    path = tmp_path / f"{L01}.ipynb"
    path.write_text(text)
    return build_program(path, LESSON)


def messages(program) -> list[str]:
    return [*program.notes, *program.problems.values(), *([program.fatal] if program.fatal else [])]


def graded(program) -> dict[str, str]:
    return {c.grade_id: c.source for c in program.cells if c.kind == "graded"}


def assert_readable(program) -> None:
    for text in messages(program):
        assert not BARE.search(text), text
        assert len(text) < 1000, text[:300]


CASES = [(where, field, kind) for where in ("extra", "graded") for field in FIELDS for kind in JUNK] + \
        [("notebook", field, kind) for field in NOTEBOOK_FIELDS for kind in JUNK]


@pytest.mark.parametrize("where,field,kind", CASES, ids=[f"{w}-{f}-{k}" for w, f, k in CASES])
def test_junk_metadata_is_graded_as_the_notebook_it_is(tmp_path, where, field, kind):
    program = program_of(with_junk(where, field, JUNK[kind]), tmp_path)
    assert_readable(program)
    assert program.fatal is None, program.fatal
    runs = graded(program)
    if where != "graded" or field in ("nbgrader.solution", "nbgrader.grade", "nbgrader.locked", "nbgrader.points",
                                      "nbgrader.task", "nbgrader.schema_version", "nbgrader.checksum",
                                      "nbgrader.cell_type", "tags"):
        # junk the grader has no use for: the correct notebook keeps every exercise, as written
        assert runs == {name: solution(name) for name in EXERCISES}, (runs.keys(), messages(program))
        assert not program.problems
        return
    # junk on the graded cell itself: the other exercise is untouched, and softmax is either still
    # graded as written (its text, found by grade_id or by its definition) or a message names its cell
    assert runs.get("scaled_dot_product_attention") == solution("scaled_dot_product_attention")
    written = JUNK[kind] if field == "source" and isinstance(JUNK[kind], str) else solution("softmax")
    if runs.get("softmax") == written:
        return
    about = " ".join(messages(program))
    assert "softmax" in about, messages(program)
    assert "softmax" in program.problems or "softmax" in runs, messages(program)


JUNK_ON_THE_GRADED_CELL = {   # what the student reads about softmax
    ("nbgrader.grade_id", "list"): "lost its nbgrader metadata; it was found by name",
    ("metadata", "null"): "lost its nbgrader metadata; it was found by name",
    ("cell_type", "null"): "cell 6 of the notebook ('softmax') has no cell type",
    ("cell_type", "long string"): "the cell 'softmax' is a xxxxxxxxxxxxxxxxxxxx cell, not a code cell",
    ("source", "dict"): "its source is not text",
}


@pytest.mark.parametrize("field,kind", sorted(JUNK_ON_THE_GRADED_CELL))
def test_junk_on_a_graded_cell_is_said_naming_the_cell(tmp_path, field, kind):
    program = program_of(with_junk("graded", field, JUNK[kind]), tmp_path)
    assert JUNK_ON_THE_GRADED_CELL[field, kind] in " ".join(messages(program)), messages(program)


@pytest.mark.parametrize("where,field,kind", [("extra", "nbgrader.grade_id", "list"),
                                              ("extra", "nbgrader.grade_id", "dict"),
                                              ("graded", "nbgrader.grade_id", "list"),
                                              ("graded", "cell_type", "null"),
                                              ("graded", "source", "dict"),
                                              ("notebook", "nbformat", "NaN")])
def test_a_notebook_of_any_size_takes_the_same_parse_path(tmp_path, where, field, kind):
    """The same file padded past 2 MB is parsed in a process of its own: it gives the same program."""
    nb = with_junk(where, field, JUNK[kind])
    small = program_of(nb, tmp_path)
    large = program_of(nb, tmp_path, pad=reading.IN_PROCESS_BYTES + 1)
    assert [(c.label, c.kind, c.source) for c in small.cells] == [(c.label, c.kind, c.source) for c in large.cells]
    assert (small.notes, small.problems, small.fatal) == (large.notes, large.problems, large.fatal)


def test_the_reader_keeps_only_what_grading_reads_each_of_its_type(tmp_path):
    nb = copy.deepcopy(SOLVED)
    first = next(i for i, c in enumerate(nb["cells"]) if "nbgrader" in c.get("metadata", {}))
    nb["cells"][first]["metadata"]["nbgrader"].update(points=float("nan"), grade_id="x" * 65, solution="yes")
    nb["cells"][first]["metadata"]["secret"] = "x" * 1000
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb))
    cells, _, fatal = reading.read_cells(path)
    assert fatal is None and len(cells) == len(nb["cells"])
    kept = cells[first]
    assert set(kept) == {"cell_type", "source", "metadata"} and set(kept["metadata"]) == {"nbgrader", "tags"}
    assert not {"points", "grade_id", "solution"} & set(kept["metadata"]["nbgrader"])
    assert kept["metadata"]["nbgrader"]["locked"] is True


# ------------------------------------------------------------------ graded end to end

def _exercise_scores(result) -> dict[str, tuple[float, float]]:
    from autograder.report.results import by_exercise
    return {ex: (e["score"], e["max"]) for (_, ex), e in by_exercise(result).items()}


@pytest.mark.slow
@pytest.mark.parametrize("where,field,kind", [("extra", "nbgrader.grade_id", "list"),
                                              ("extra", "nbgrader.grade_id", "dict"),
                                              ("extra", "cell_type", "dict"),
                                              ("graded", "nbgrader.grade_id", "dict"),
                                              ("graded", "cell_type", "null")])
def test_junk_metadata_graded_end_to_end(grade, tmp_path, where, field, kind):
    nb = with_junk(where, field, JUNK[kind])
    path = tmp_path / f"{L01}.ipynb"
    path.write_text(json.dumps(nb))
    result = grade({L01: path})
    scores = _exercise_scores(result)
    if (where, field) == ("graded", "cell_type"):      # softmax left out (attention calls it: 0 too)
        assert scores["softmax"] == (0, 3)
        assert "('softmax') has no cell type" in result.get("output", ""), result.get("output")
    else:
        assert scores == {"softmax": (3, 3), "scaled_dot_product_attention": (5, 5)}, result
    assert not BARE.search(json.dumps(result)), result.get("output")


def test_an_exception_in_our_reader_is_said_to_be_the_graders_fault(tmp_path, monkeypatch):
    """build_program says what is wrong with a notebook; an exception from it is a bug of ours."""
    from autograder import pipeline
    from autograder.isolate.sandbox import Sandbox

    def broken(*args, **kwargs):
        raise TypeError("unhashable type: 'list'")
    monkeypatch.setattr(pipeline, "build_program", broken)
    (tmp_path / f"{L01}.ipynb").write_text(json.dumps(SOLVED))
    sandbox = Sandbox()
    try:
        result = pipeline.grade_student({L01: tmp_path / f"{L01}.ipynb"}, sandbox)
    finally:
        sandbox.close()
    assert "autograder error (not the student's fault)" in result["output"]
    assert "TypeError: unhashable type: 'list'" in result["output"]
    assert all("not the student's fault" in t["output"] for t in result["tests"])


def test_a_notebook_that_is_not_json_is_not_called_the_graders_fault(tmp_path):
    from autograder import pipeline
    from autograder.isolate.sandbox import Sandbox
    (tmp_path / f"{L01}.ipynb").write_text('{"cells": [')
    sandbox = Sandbox()
    try:
        result = pipeline.grade_student({L01: tmp_path / f"{L01}.ipynb"}, sandbox)
    finally:
        sandbox.close()
    assert "not valid JSON" in result["output"] and "not the student's fault" not in result["output"]
