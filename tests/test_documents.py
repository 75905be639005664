"""The documents stay current with the course: every lesson of autograder/course.py is listed where
lessons are listed, and no document states a number of lessons that is not the course's."""
from __future__ import annotations

import re

import pytest

from autograder.course import COURSE
from autograder.deliver.kit.write import student_readme
from conftest import ROOT

NUMBERS = {word: n for n, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen".split())}
# "nine lessons", "9 notebooks", "Nine Jupyter notebooks"; not "the first six lessons" (a part of
# the course) nor "128 notebooks" (a class's files, in benchmarks/RESULTS.md, which is a diary)
COUNT = re.compile(r"(?<!first )(?<!core )\b(" + "|".join(NUMBERS) + r"|\d+)\s+(?:Jupyter\s+)?(lessons|notebooks)\b",
                   re.IGNORECASE)
DOCUMENTS = ["README.md", "INSTRUCTORS.md", "ARCHITECTURE.md", "book/intro.md"]


def stated_counts(text: str) -> list[tuple[str, int]]:
    found = []
    for match in COUNT.finditer(text):
        word = match.group(1).lower()
        found.append((match.group(0), int(word) if word.isdigit() else NUMBERS[word]))
    return found


def lesson_table(text: str) -> list[str]:
    """The lesson ids in the first column of README's "The lessons" table, in order."""
    section = text.split("## The lessons", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(\d\d_\w+)` \|", section, re.M)


def test_the_readme_lists_every_lesson_of_the_course_in_order():
    assert lesson_table((ROOT / "README.md").read_text()) == list(COURSE)


def test_the_kits_readme_lists_every_lesson_it_holds():
    text = student_readme(list(COURSE))
    assert re.findall(r"^\| \d+ \| `(\d\d_\w+)` \|", text, re.M) == list(COURSE)
    assert all(lesson.title in text for lesson in COURSE.values())
    one = student_readme(["02_masking"])     # a one-lesson kit lists that lesson only
    assert re.findall(r"^\| \d+ \| `(\d\d_\w+)` \|", one, re.M) == ["02_masking"]
    assert "the later ones go further" not in one and "data/" not in one


@pytest.mark.parametrize("document", DOCUMENTS + ["the kit's README"])
def test_no_document_states_a_wrong_number_of_lessons(document):
    text = student_readme(list(COURSE)) if document == "the kit's README" else (ROOT / document).read_text()
    wrong = [phrase for phrase, n in stated_counts(text) if n != len(COURSE)]
    assert not wrong, f"{document} says {wrong}; the course has {len(COURSE)} lessons"


def test_the_count_finder_finds_counts():
    assert stated_counts("Nine Jupyter notebooks, in eight lessons; 9 lessons") == [
        ("Nine Jupyter notebooks", 9), ("eight lessons", 8), ("9 lessons", 9)]
    assert stated_counts("In the first six lessons; the core six lessons") == []


def test_instructors_keeps_no_benchmark_diary():
    """The runs are in benchmarks/RESULTS.md; INSTRUCTORS.md keeps the current figures and a link."""
    text = (ROOT / "INSTRUCTORS.md").read_text()
    section = text.split("## How well does the grader grade?", 1)[1].split("\n## ", 1)[0]
    assert "benchmarks/RESULTS.md" in section
    assert len(section.splitlines()) <= 25, len(section.splitlines())
    results = (ROOT / "benchmarks" / "RESULTS.md").read_text()
    assert "539.8 s" in results and "a6382ae" in results and "9e5e13e" in results
    assert len(re.findall(r"^### \d{4}-\d\d-\d\d", results, re.M)) >= 4   # every run under its date
