"""Issue 32: each exercise earns its own points. An exercise that calls another graded name of the
student's which is wrong is graded with the reference's answers in its place (run/executor.py,
Answers: a table of the reference's answers sent as data, never its code), and says so in one
sentence; the self-check says the same words as `grade`."""
from __future__ import annotations

import contextlib
import io

import pytest
import torch

from autograder.classroom import accuracy
from autograder.run.executor import Executor
from autograder.run import wire

SUBSTITUTED = ("next_token_probs is wrong (its own checks say how), so generate was graded with the reference "
               "next_token_probs in its place.")


def _cells(name: str) -> dict:
    entry = accuracy.parse(accuracy.CORPUS / f"{name}.py")
    ns = {"torch": torch, "__name__": "__main__"}
    for source in entry.cells.values():
        exec(compile(source, f"<{name}>", "exec"), ns)
    return ns


def _request(executor, op, **args):
    reply = wire.decode(executor.handle(wire.encode({"op": op, "args": args})), objects=lambda n, t: None)
    assert reply["ok"], reply
    return reply["value"]


def test_answers_stand_in_only_for_known_inputs_and_are_put_back():
    ns = {"__name__": "__main__"}
    exec("def helper(x, scale=1.0):\n    return x * 0 - 1\n\ndef user(x):\n    return helper(x, 2.0)\n", ns)
    executor = Executor(ns)
    known = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    rows = [{"key": [2.0], "inputs": known, "outputs": known * 10}]
    assert _request(executor, "substitute", target=["name", "user"], name="helper", table=rows)
    assert torch.equal(ns["user"](known[1:]), torch.tensor([[30.0, 40.0]]))          # a known row: the table's
    assert torch.equal(ns["user"](torch.tensor([[5.0, 6.0]])), torch.tensor([[-1.0, -1.0]]))   # unknown: theirs
    assert torch.equal(ns["helper"](known, scale=1.0), -torch.ones(2, 2))     # another key: the student's own
    report = _request(executor, "restore")["helper"]
    assert report["misses"] == 2
    assert torch.equal(ns["user"](known[1:]), torch.tensor([[-1.0, -1.0]]))      # put back
    # whole calls: (args) -> output, keyword arguments bound by the student's own signature
    calls = [{"args": [known, 2.0], "output": known + 100}]
    assert _request(executor, "substitute", target=["name", "user"], name="helper", table=calls)
    assert torch.equal(ns["user"](known), known + 100)
    assert torch.equal(ns["helper"](x=known, scale=2.0), known + 100)
    assert _request(executor, "restore")["helper"]["misses"] == 0


def test_asks_the_grader_about_every_call_in_one_pass():
    """A stub helper (NotImplementedError on every call) and a wrong one: each call is asked about
    with its arguments and the student's answer, and the grader's reply replaces it; a reply of {}
    keeps the student's answer (or re-raises their exception). No rounds: 40 calls, one pass."""
    ns = {"__name__": "__main__"}
    exec("def helper(x, scale=1.0):\n    raise NotImplementedError()\n\n"
         "def wrong(x, scale=1.0):\n    x += 1\n    return x * scale\n\n"
         "def user(x):\n    return [helper(x + i, 2.0) for i in range(40)]\n\n"
         "def user2(x):\n    return wrong(x, 3.0)\n", ns)
    executor, questions = Executor(ns), []

    def ask(question):
        questions.append(question)
        return {"value": question["args"][0] * question["args"][1]} if question["name"] == "helper" else {}
    executor.ask = ask
    assert _request(executor, "substitute", target=["name", "user"], name="helper", ask=True)
    got = ns["user"](torch.ones(2))
    assert [float(g[0]) for g in got] == [2.0 * (1 + i) for i in range(40)] and len(questions) == 40
    assert questions[0]["raised"].startswith("NotImplementedError") and "answer" not in questions[0]
    assert questions[0]["args"][1] == 2.0 and not questions[0]["changed"]
    _request(executor, "restore")
    assert _request(executor, "substitute", target=["name", "user2"], name="wrong", ask=True)
    x = torch.zeros(2)
    assert torch.equal(ns["user2"](x), torch.full((2,), 3.0)) and torch.equal(x, torch.zeros(2))  # a copy was written
    assert questions[-1]["changed"] and torch.equal(questions[-1]["answer"], torch.full((2,), 3.0))
    _request(executor, "restore")
    with pytest.raises(NotImplementedError):           # put back: the student's own again
        ns["user"](torch.ones(2))


@pytest.mark.slow
@pytest.mark.parametrize("entry", ["pair_09_generate_beside_drops_threshold_token",
                                   "pair_09_generate_beside_temperature_after_softmax"])
def test_selfcheck_grades_generate_with_the_reference_probs(entry):
    """The student walkthrough: with the top-p mistake, generate's self-check printed a bare
    RuntimeError. Now it gives generate its points and says why, in grade's words."""
    from autograder.selfcheck import run_selfcheck
    ns = _cells(entry)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        score = run_selfcheck("09_generating_text", "generate", ns["generate"])
    assert score == 6, out.getvalue()
    assert SUBSTITUTED in out.getvalue() and out.getvalue().count(SUBSTITUTED) == 1, out.getvalue()
    assert "RuntimeError" not in out.getvalue()
    # the student's own function is back in place afterwards
    assert ns["next_token_probs"].__name__ == "next_token_probs"


@pytest.mark.slow
def test_selfcheck_of_a_correct_pair_says_nothing_more():
    from autograder.selfcheck import run_selfcheck
    ns = _cells("correct_09_probs_loops_and_generate")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        score = run_selfcheck("09_generating_text", "generate", ns["generate"])
    assert score == 6 and "in its place" not in out.getvalue(), out.getvalue()


@pytest.mark.slow
def test_lesson04_under_a_course_secret_answers_from_the_hidden_example(tmp_path):
    """Under a course secret lesson 04 grades on a hidden example (other X and W matrices, put in the
    student's notebook). The stand-in for a wrong worked_example answered from the public example's
    reference, so a right published_errors, handed the public values, named the wrong keys and lost
    a point. It answers from the hidden example the check compares with: full marks, said once."""
    import numpy as np
    from autograder.course import COURSE
    from autograder.grading.plugin import GradingPlugin, run_checks
    from autograder.grading.student import LocalSubmission
    from autograder.load.notebook import build_program
    lesson = "04_worked_example"
    entry = accuracy.parse(accuracy.CORPUS / "pair_04_published_errors_beside_unscaled_scores.py")
    path = accuracy.build_class([entry], tmp_path)[entry.name][lesson]
    namespace = {"__name__": "__main__"}
    for cell in build_program(path, COURSE[lesson]).cells:
        if cell.kind in ("setup", "graded"):
            exec(compile(cell.source, f"<{cell.label}>", "exec"), namespace)
    plugin = GradingPlugin({lesson: LocalSubmission(namespace)}, exercises={lesson: {"published_errors"}},
                           secret=b"a course secret of the instructor's")
    with np.errstate(all="ignore"):
        run_checks(plugin, [lesson])
    assert [t["score"] for t in plugin.results] == [2.0, 1.0], [t["output"] for t in plugin.results]
    said = "so published_errors was graded with the reference worked_example in its place"
    counts = [t["output"].count(said) for t in plugin.results]
    assert counts[1] == 1 and max(counts) == 1, [t["output"] for t in plugin.results]   # where it was graded again
