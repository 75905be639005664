"""Attacks on the stand-ins' channel (run/substitute.py, Asks; grading/independence.py, answerer).

While a check runs again with a wrong helper behind a stand-in, the student's process may ask the
grader any question it likes, as often as it likes: the arguments are data of its choosing, and the
grader computes the reference's answer to them. Each test asserts that what a question can cost the
grader stays bounded: memory (the reference's answer to causal_mask(30_000) is a 900 MB array), the
answer's size on the wire, and the time added to the deadlines for questions, per submission.
"""
from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time

import pytest

from conftest import ROOT, notebook_with
from autograder.grading import independence
from autograder.grading.reference import load_reference
from autograder.isolate import answering
from autograder.run import frames, wire

L02 = "02_masking"


def _answerer():
    return independence.answerer(load_reference(L02), L02, ["causal_mask"], [])


def test_an_answer_the_reference_builds_past_the_memory_bound_is_refused():
    """causal_mask(20_000) is a 400 MB bool array, and more for its temporaries: the grader does not
    build it (the student's own answer stands), and its own address-space limit is as it was."""
    before = resource.getrlimit(resource.RLIMIT_AS)
    answer = answering.bounded(_answerer())
    started = time.monotonic()
    assert answer({"name": "causal_mask", "args": [20_000], "answer": None}) == {}
    assert time.monotonic() - started < 5
    assert resource.getrlimit(resource.RLIMIT_AS) == before
    small = answer({"name": "causal_mask", "args": [3], "answer": None})     # an ordinary question: answered
    assert small["value"].shape == (3, 3) and small["value"].dtype == bool


def _child(sock, questions: list[dict], got: list):
    """The student's side: `questions` asked one after another, then the reply to the request."""
    for question in questions:
        frames.send(sock, wire.encode({"ask": question}))
        got.append(wire.decode(frames.recv(sock)))
    frames.send(sock, wire.encode({"ok": True, "value": "done"}))


def _exchange(questions, on_ask, allowance=float("inf")):
    ours, theirs = socket.socketpair()
    got: list = []
    helper = threading.Thread(target=_child, args=(theirs, questions, got), daemon=True)
    helper.start()
    try:
        frame, credit = frames.recv_reply(ours, time.monotonic() + 30, on_ask, allowance)
        helper.join(30)
    finally:
        ours.close()
        theirs.close()
    assert wire.decode(frame)["value"] == "done"
    return got, credit


def test_the_time_added_for_questions_stops_at_the_allowance():
    """Each question's exchange adds time to the request's deadline, uncharged; a request adds at most
    what is left of the submission's allowance for questions, and once it is spent the questions are
    answered {} (the student's answer stands) and add nothing (Budget.questions)."""
    def slow(question):
        time.sleep(0.01)
        return {"value": 1}
    got, credit = _exchange([{"name": "causal_mask", "args": [2]}] * 40, slow, allowance=0.2)
    assert credit <= 0.2 + 1e-9
    assert got[0] == {"value": 1} and got[-1] == {}
    assert 1 <= sum(g == {"value": 1} for g in got) <= 4      # each one adds 5 x 10 ms and more


def test_an_answer_past_the_wire_limits_is_sent_as_no_answer():
    """An answer the child would refuse to read (over 64 MB) is not sent: the child reads {} and its
    own answer stands, where the 81 MB frame used to end the child, and the check read as the student's
    process exiting."""
    import numpy as np
    got, _ = _exchange([{"name": "x"}], lambda q: {"value": np.zeros((9000, 9000), dtype=bool)})
    assert got == [{}]


HOSTILE = '''import time as _t
def padding_mask(lengths, max_len):
    if type(causal_mask).__name__ == "Asks":          # graded again, behind the stand-in: ask away
        for n in (30_000, 9_000, 30_000):
            causal_mask(n)
    return None
'''


@pytest.mark.slow
def test_questions_cannot_make_the_grader_build_huge_answers(tmp_path):
    """A graded run: padding_mask, wrong, is graded again with causal_mask (wrong too) behind a stand-in,
    and asks for causal_mask(30_000) (900 MB) and causal_mask(9_000) (81 MB, past the wire's limit).
    The grader's peak memory stays far below one such answer, and padding_mask fails as what it is
    (a None answer), not as a process that stopped."""
    notebook = notebook_with(L02, {"causal_mask": "def causal_mask(seq_len):\n    return None\n",
                                   "padding_mask": HOSTILE}, tmp_path / "student")
    out = tmp_path / "results.json"
    # VmHWM, the grader's own high-water mark: ru_maxrss starts from the peak of the process that
    # started it (an xdist worker, after the tests it ran: 928 MiB in CI), kept across fork and exec
    script = ("import runpy, sys\nsys.argv = ['autograder', 'grade', sys.argv[1], '--json', sys.argv[2]]\n"
              "try:\n    runpy.run_module('autograder', run_name='__main__')\nexcept SystemExit:\n    pass\n"
              "print('PEAK', [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0])\n")
    run = subprocess.run([sys.executable, "-c", script, str(notebook), str(out)], capture_output=True, text=True,
                         timeout=300, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    peak_kib = int(run.stdout.rsplit("PEAK", 1)[1])
    tests = [t for t in json.loads(out.read_text())["tests"] if "exercise:padding_mask" in t["tags"]]
    assert peak_kib < 700 * 1024, f"the grader's peak: {peak_kib / 1024:.0f} MiB"
    assert tests and all(t["score"] == 0 for t in tests)
    assert not any("mistake:process-exit" in t["tags"] for t in tests), [t["output"] for t in tests]


STALLING = '''import time as _t
def padding_mask(lengths, max_len):
    if type(causal_mask).__name__ == "Asks":          # each question adds ~6 ms to the deadline, uncharged
        for _ in range(4096):
            causal_mask(2)
            end = _t.perf_counter() + 0.003           # ... which the student's own work uses up
            while _t.perf_counter() < end:
                pass
    return None
'''


@pytest.mark.slow
def test_questions_do_not_buy_time_past_the_budget(tmp_path, sandbox):
    """A student who asks 4,096 cheap questions per request and works between them: each question's
    time was added to the deadline and charged to no one, so a 1.5 s budget let padding_mask alone run
    for ~30 s per request (4,096 x ~6.5 ms). The questions have a pot of their own, as large as the
    budget: the whole submission stays within twice its budget (and the start of its workers)."""
    from autograder.pipeline import grade_student
    notebook = notebook_with(L02, {"causal_mask": "def causal_mask(seq_len):\n    return None\n",
                                   "padding_mask": STALLING}, tmp_path / "student")
    sandbox.spawn().close()                 # the worker started: not this submission's time
    started = time.monotonic()
    result = grade_student({L02: notebook}, sandbox, time_limit=10.0, budget=1.5)
    took = time.monotonic() - started
    assert took < 10, f"grading took {took:.1f} s on a 1.5 s budget"
    assert all(t["score"] == 0 for t in result["tests"] if "exercise:padding_mask" in t["tags"])
