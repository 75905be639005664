"""The lines of each lesson's answers, and where another lesson's file shows them.

The kit hands out every lesson at once, so a line of lesson A's graded answer printed in lesson B
(a locked helper cell, a demo) answers A. An answer line is a line between a solution cell's
BEGIN/END SOLUTION markers, whitespace collapsed and its comment cut, that says something: at least
25 characters other than spaces, or an assignment from a call (`probs = torch.softmax(...)`).
Blank lines, comments, imports, lone brackets, `return x`-sized lines and docstring lines say
nothing about an answer and are left out.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from autograder.course import COURSE, available_lessons

MIN_CHARACTERS = 25
# Lines any attention code has, which the exercises' docstrings already state.
GENERIC = {"x = torch.randn(B, T, d_model)", "self.d_k = d_model // num_heads",
           "self.w_q = nn.Linear(d_model, d_model)", "self.w_o = nn.Linear(d_model, d_model)"}
# (shown in, answer of): lessons built on another's answer on purpose.
BY_DESIGN = {
    ("02_masking", "01_scaled_dot_product_attention"): "lesson 2 gives lesson 1's stable softmax, to stand on its own",
    ("06_debugging_projection_reuse", "03_self_attention_head"): "lesson 6 debugs a published attention class",
    ("06_debugging_projection_reuse", "05_multi_head_attention"): "lesson 6 debugs a published attention class",
}
ASSIGNED_CALL = re.compile(r"^[\w\[\]., ]+?(?<![=!<>+\-*/])=(?!=)\s*[^=]*\w\(")


def normalised(line: str) -> str:
    """The line without its comment (a '#' outside quotes), whitespace collapsed."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            line = line[:i]
            break
    return re.sub(r"\s+", " ", line).strip()


def says_something(code: str) -> bool:
    if not code or code.startswith(("#", "import ", "from ", '"""', "'''")) or re.fullmatch(r"[\[\](){}:,\s]*", code):
        return False
    return len(code.replace(" ", "")) >= MIN_CHARACTERS or bool(ASSIGNED_CALL.match(code))


def answer_lines(lesson_id: str) -> set[str]:
    """Every line that says something in the solution regions of the lesson's solution notebook."""
    cells = json.loads(Path(COURSE[lesson_id].solution_path).read_text(encoding="utf-8"))["cells"]
    lines = set()
    for cell in cells:
        if cell["cell_type"] != "code" or not cell["metadata"].get("nbgrader", {}).get("solution"):
            continue
        source = "".join(cell["source"])
        for region in re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", source, re.S):
            lines.update(code for code in map(normalised, region.splitlines())
                         if says_something(code) and code not in GENERIC)
    return lines


def lines_of(text: str) -> set[str]:
    """The normalised lines of a file; a notebook's are those of its cells' sources."""
    try:
        cells = json.loads(text)["cells"]
    except (ValueError, KeyError, TypeError):
        return {normalised(line) for line in text.splitlines()}
    return {normalised(line) for cell in cells
            for line in "".join(cell.get("source", [])).splitlines()}


def foreign_answers(text: str, own_lesson: str | None) -> list[tuple[str, str]]:
    """[(lesson, line)]: the answer lines of lessons other than own_lesson that the text shows."""
    shown = lines_of(text)
    return sorted((lid, line) for lid in (lesson.id for lesson in available_lessons()) if lid != own_lesson
                  for line in answer_lines(lid) & shown)
