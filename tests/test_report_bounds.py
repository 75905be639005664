"""Issue 31, point 2: everything a submission can put into a report is bounded, in the grader,
whatever the student's process sends. A few KB of notebook whose graded cells raised an exception
class named "E" + "x" * 3_000_000 gave an 83 MB results.json, a 46 MB feedback.md, a grader at 666 MB
and 6 MB printed for one notebook."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT
from autograder.report import results as report
from autograder.run import bounds, wire
from autograder.run.errors import StudentError

sys.path.insert(0, str(ROOT / "tests" / "support"))
import hostile_reports  # noqa: E402

MB = 1_000_000
HUGE = 3_000_000


# ------------------------------------------------------------------ where the child's texts enter

def test_a_student_error_keeps_a_bounded_type_name_message_and_traceback():
    err = StudentError({"type": "E" + "x" * HUGE, "message": "m" * HUGE, "traceback": "t" * HUGE})
    assert err.type.startswith("Exxx") and len(err.type) <= bounds.TYPE_NAME
    assert len(err.message) <= bounds.MESSAGE and len(err.traceback) <= bounds.TRACEBACK
    assert "3000001 characters" in err.type          # the cut is said, with the size it had
    assert len(err.describe()) < 5000 and len(str(err)) < 2000


def test_a_student_error_from_a_reply_that_is_not_a_dict_or_holds_no_strings():
    assert StudentError(["not", "a", "dict"]).type == "Exception"
    err = StudentError({"type": ["x"] * 100_000, "message": {"a": 1}})
    assert len(err.type) <= bounds.TYPE_NAME and err.message == "{'a': 1}"


def test_the_grader_cuts_every_string_of_a_reply_but_not_what_it_sends_the_child():
    big = 2_000_000                 # three of them fit in the wire's 8 MB of header
    frame = wire.encode({"ok": True, "value": {"s" * big: ["v" * big, ("w" * big,)], "short": "kept"}})
    value = wire.decode(frame, max_text=bounds.TEXT)["value"]
    (key, items), = [(k, v) for k, v in value.items() if k != "short"]
    assert value["short"] == "kept"
    assert len(key) <= bounds.TEXT and len(items[0]) <= bounds.TEXT and len(items[1][0]) <= bounds.TEXT
    assert len(wire.decode(frame)["value"]["short"]) == 4
    assert max(map(len, wire.decode(frame)["value"])) == big       # a cell's source reaches the worker whole


def test_type_names_on_the_wire_are_cut_whatever_the_reader():
    """An array whose dtype is named by a 3 MB field name travels as an opaque value named after it;
    a handle's type is the child's word too."""
    odd = np.zeros(3, dtype=[("F" * HUGE, "f8")])
    opaque = wire.decode(wire.encode(odd))
    assert isinstance(opaque, wire.Opaque) and len(opaque.type_name) <= bounds.TYPE_NAME
    handle = wire.decode(wire.encode(wire.Handle(3, "M" * HUGE)))
    assert handle.number == 3 and len(handle.type_name) <= bounds.TYPE_NAME
    forged = b'{"value": {"' + b"k" * HUGE + b'": 1}, "buffers": []}'
    with pytest.raises(wire.WireError) as caught:
        wire.decode(len(forged).to_bytes(8, "big") + forged)
    assert len(str(caught.value)) <= bounds.TYPE_NAME


def test_clip_says_what_it_cut_and_leaves_a_cut_text_alone():
    cut = bounds.clip("x" * 1000, 100)
    assert len(cut) == 100 and cut.endswith("[cut: 1000 characters in all]")
    assert bounds.clip(cut, 100) == cut and bounds.clip("short", 100) == "short"


# ------------------------------------------------------------------ the report writers' final guard

def _result(output: str, tests: int = 80, notes: str = "") -> dict:
    entries = [{"name": f"check {i}", "score": 0.0, "max_score": 1.0, "status": "failed", "output": output,
                "tags": ["lesson:01_scaled_dot_product_attention", f"exercise:{'softmax' if i % 2 else 'scaled_dot_product_attention'}"]}
               for i in range(tests)]
    result = {"score": 0.0, "max_score": float(tests), "tests": entries}
    if notes:
        result["output"] = notes
    return result


@pytest.mark.parametrize("char", ["x", "\u00e9", "\U0001d400"])   # 1, 6 and 12 bytes of JSON each
def test_results_stay_under_their_budget_whatever_the_characters(char, tmp_path):
    result = report.bounded(_result(char * HUGE, notes=char * HUGE))
    text = json.dumps(result, indent=2)
    assert len(text) <= report.RESULTS_BYTES
    assert all("characters in all" in t["output"] for t in result["tests"]) and "in all" in result["output"]
    assert report.bounded(json.loads(text)) == json.loads(text)       # a second guard changes nothing
    report.write_results(tmp_path / "results.json", _result(char * HUGE))
    assert (tmp_path / "results.json").stat().st_size < MB


def test_an_honest_result_is_left_whole():
    result = _result("softmax: max abs difference 0.5 at [0, 1]", tests=60, notes="a note")
    assert report.bounded(json.loads(json.dumps(result))) == result


def test_feedback_stays_under_a_megabyte_even_from_unbounded_results():
    """The writer's own guard, for a results object that did not pass through `bounded`."""
    page = report.feedback_markdown("mallory", _result("`x" * 40_000 + "\n" + "y" * 40_000, notes="n" * HUGE))
    assert len(page.encode()) <= report.FEEDBACK_BYTES and "cut" in page[-300:]


def test_the_terminal_summary_of_a_notebook_stays_small():
    result = report.bounded(_result("line one\n" + ("z" * 5000 + "\n") * 30))
    assert len(report.summary(result, "mallory", detail=True).encode()) < 100_000
    assert len(report.summary(result, "mallory", detail=True, verbose=True).encode()) < 100_000


# ------------------------------------------------------------------ a whole hostile student, end to end

@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """One student, six lessons, each attacking the reports a different way, graded with --jobs 1
    in a process of its own: what it printed, wrote and held."""
    tmp = tmp_path_factory.mktemp("hostile")
    student = hostile_reports.write_hostile_student(tmp / "mallory")
    run = subprocess.run([sys.executable, str(ROOT / "tests" / "support" / "hostile_reports.py"), str(student),
                          str(tmp / "out")], capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    figures = json.loads(run.stdout.strip().splitlines()[-1])
    folder = tmp / "out" / "students" / "mallory"
    return figures, json.loads((folder / "results.json").read_text()), (folder / "feedback.md").read_text()


@pytest.mark.slow
def test_a_hostile_students_files_stay_under_a_megabyte(hostile):
    figures, _, _ = hostile
    assert figures["status"] == 0
    assert figures["results_bytes"] < MB and figures["feedback_bytes"] < MB, figures


@pytest.mark.slow
def test_a_hostile_student_prints_under_100_kb_per_notebook(hostile):
    figures, _, _ = hostile
    assert figures["terminal_bytes"] < 100_000, figures      # for all six notebooks together


@pytest.mark.slow
def test_grading_a_hostile_student_keeps_the_grader_under_400_mb(hostile):
    figures, _, _ = hostile
    assert figures["rss_peak_mb"] < 400, figures


@pytest.mark.slow
def test_each_attack_reached_the_report_cut(hostile):
    """The attacks did get through to the reports, cut: the figures above are not those of a
    submission that failed some other way. Nothing it printed reaches any report."""
    figures, result, feedback = hostile

    def outputs(lesson):
        return "\n".join(t["output"] for t in result["tests"] if f"lesson:{lesson}" in t["tags"])

    assert "Exxxxx" in outputs("01_scaled_dot_product_attention") and "3000001 characters in all" in feedback
    assert "TTTTT" in outputs("02_masking") and "MMMMM" in outputs("02_masking")
    assert "failed to run" in outputs("06_debugging_projection_reuse")
    assert "array of dtype" in outputs("05_multi_head_attention")
    assert "magics" in result["output"] and "a" * 100 not in result["output"]
    everything = json.dumps(result) + feedback + figures["terminal"]
    assert "PPPPPPPPPP" not in everything
    assert result["max_score"] > 0 and result["score"] == 0
