"""Hidden grading inputs (issue 20, point 2): with a course secret, grading draws inputs the
student kit never saw, so answers looked up in the kit's recordings earn nothing, correct answers
keep full marks, and no value the grader compares with can be read from the kit.

Split from test_student_kit.py so that the two run on two test workers; the kit they read is built
once per test run (conftest.kit_dir). The tests that need no kit come first: under xdist the
other worker is usually building it meanwhile."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from autograder.deliver import kit
from autograder.grading import recorded
from autograder.course import COURSE
from conftest import ROOT
from test_student_kit import LESSONS, SECRET

pytestmark = pytest.mark.slow     # builds the kit, runs notebooks or grades whole classes: not in the quick loop


def grade_in_process(lesson, namespace, secret, exercises=None):
    from autograder.grading.plugin import GradingPlugin, run_checks
    from autograder.grading.student import LocalSubmission
    plugin = GradingPlugin({lesson: LocalSubmission(namespace)}, secret=secret,
                           exercises=None if exercises is None else {lesson: exercises})
    with np.errstate(all="ignore"):
        run_checks(plugin, [lesson])
    return sum(t["score"] for t in plugin.results), sum(t["max_score"] for t in plugin.results)



def notebook_namespace(lesson: str) -> dict:
    """The solution notebook's cells run in a namespace of their own, as in a kernel: its functions
    read this namespace's globals (lesson 04's checks put hidden inputs there under a secret)."""
    from autograder.load.notebook import build_program
    lesson_ = COURSE[lesson]
    program = build_program(lesson_.solution_path, lesson_, released=lesson_.solution_path, kernel=False)
    ns = {"__name__": "__main__"}
    for cell in program.cells:
        exec(compile(cell.source, f"<{lesson}: {cell.label}>", "exec"), ns)
    return ns



def test_correct_answers_keep_full_marks_under_hidden_inputs():
    """The reference and every correct corpus submission, graded with a course secret."""
    from autograder.classroom.accuracy import load
    secret = SECRET.encode()
    for lid in LESSONS:
        score, total = grade_in_process(lid, notebook_namespace(lid), secret)
        assert score == total > 0, lid
    for entry in load():
        if entry.expect != "correct" or entry.lesson not in LESSONS:
            continue
        ns = notebook_namespace(entry.lesson)
        for gid in COURSE[entry.lesson].exercises:
            if gid in entry.cells:
                exec(compile(entry.cells[gid], f"<{entry.name}>", "exec"), ns)
        score, total = grade_in_process(entry.lesson, ns, secret)
        assert score == total, entry.name



def test_secret_changes_the_inputs_and_travels_in_the_bundle(monkeypatch, tmp_path):
    from autograder.deliver import gradescope
    from autograder.grading import plugin
    monkeypatch.delenv("AUTOGRADER_SECRET", raising=False)
    monkeypatch.setenv("AUTOGRADER_SECRET_FILE", str(tmp_path / ".course-secret"))
    assert plugin.course_secret() is None
    assert plugin.SECRET_FILE not in gradescope.bundle_files(["01_scaled_dot_product_attention"])
    path, created = kit.ensure_secret()
    assert created and path == tmp_path / ".course-secret" and oct(path.stat().st_mode & 0o777) == "0o600"
    value = path.read_text().strip()
    assert len(value) == 64 and plugin.course_secret() == value.encode()
    assert kit.ensure_secret() == (path, False)
    files = gradescope.bundle_files(["01_scaled_dot_product_attention"])
    assert files[plugin.SECRET_FILE] == (value.encode() + b"\n", 0o600)
    monkeypatch.setenv("AUTOGRADER_SECRET", "from the environment")
    assert plugin.course_secret() == b"from the environment"
    assert ".course-secret" in (Path(ROOT) / ".gitignore").read_text().split()



def lookup_submission(records: Path, lesson: str):
    """A 'student' whose functions answer with the kit's recorded reference outputs."""
    tape = recorded.Tape(records)

    def lookup(name, *forms):
        base = recorded.digest("call", f"reference:{lesson}", name)
        for args, kwargs in forms:
            try:
                return tape.answer(recorded.digest(base, "", args, kwargs), name)[1]
            except recorded.NotRecorded:
                continue
        raise KeyError("no recorded answer for these inputs")

    def softmax(x, axis=-1):
        return lookup("softmax", ((x,), {}), ((x,), {"axis": axis}))

    def scaled_dot_product_attention(q, k, v, mask=None):
        return lookup("scaled_dot_product_attention", ((q, k, v), {}), ((q, k, v, mask), {}))

    def causal_mask(n):
        return lookup("causal_mask", ((n,), {}))

    def padding_mask(lengths, max_len):
        return lookup("padding_mask", ((np.asarray(lengths), max_len), {}), ((lengths, max_len), {}))
    return {"softmax": softmax, "scaled_dot_product_attention": scaled_dot_product_attention,
            "causal_mask": causal_mask, "padding_mask": padding_mask}



@pytest.mark.parametrize("lesson", ["01_scaled_dot_product_attention", "02_masking"])
def test_recorded_answers_pass_the_kit_but_not_hidden_inputs(kit_dir, lesson):
    cheat = lookup_submission(kit_dir / "autograder" / "records", lesson)
    exercises = {"02_masking": {"causal_mask", "padding_mask"}}.get(lesson)   # lesson 02's attention needs softmax
    score, total = grade_in_process(lesson, cheat, secret=None, exercises=exercises)   # the kit's (public) inputs
    assert score >= total - 1 > 0    # (causal_mask's type check asks for a size no value check recorded)
    assert grade_in_process(lesson, cheat, secret=SECRET.encode(), exercises=exercises) == (0.0, total)



def test_lesson04_recorded_answers_earn_nothing_under_a_secret(kit_dir):
    """Issue 20, point 2: lesson 04's functions take no argument, so the kit's recordings of
    worked_example() and published_errors() were the answer key whatever the secret. Under a
    secret the checks put hidden X, W and PUBLISHED in the notebook: the copied answers earn nothing."""
    lesson = "04_worked_example"
    tape = recorded.Tape(kit_dir / "autograder" / "records")

    def recorded_answer(name):
        base = recorded.digest("call", f"reference:{lesson}", name)
        return tape.answer(recorded.digest(base, "", (), {}), name)[1]
    from autograder.grading.reference import load_reference
    ns = dict(vars(load_reference(lesson)))     # the setup cell's globals, as in the notebook
    ns["worked_example"] = lambda: recorded_answer("worked_example")
    ns["published_errors"] = lambda: recorded_answer("published_errors")
    score, total = grade_in_process(lesson, ns, secret=None)
    assert score == total == 7      # the kit's own inputs: the recordings are the answers
    assert grade_in_process(lesson, ns, secret=SECRET.encode()) == (0.0, total)
    # and the correct functions still get full marks under the secret, reading the hidden inputs
    assert grade_in_process(lesson, notebook_namespace(lesson), secret=SECRET.encode()) == (total, total)



def _expected_values(lesson, secret):
    """Every value a check of `lesson` compares with (expect_array/expect_tensor's `expected`, and
    the sets lesson 04 compares), grading the reference with `secret`."""
    from autograder.grading import checking, compare
    import importlib
    seen = []
    module = importlib.import_module(f"autograder.checks.test_{lesson}")
    originals = {}
    for target in (checking, compare, module):
        for name in ("expect_array", "expect_tensor"):
            if hasattr(target, name):
                originals[(target, name)] = getattr(target, name)
    def spy(real):
        def wrapped(got, expected, *args, **kwargs):
            seen.append(expected)
            return real(got, expected, *args, **kwargs)
        return wrapped
    from autograder.grading.reference import load_reference
    ref = load_reference(lesson)
    try:
        for (target, name), real in originals.items():
            setattr(target, name, spy(real))
        if lesson == "04_worked_example":      # the set published_errors() is compared with
            from types import SimpleNamespace
            from autograder.checks.test_04_worked_example import hidden_example, _rebound
            import hmac, hashlib
            key = hmac.new(secret, f"lesson:{lesson}".encode(), hashlib.sha256).digest()
            seen.append(_rebound(ref, hidden_example(ref, key)).published_errors())
        grade_in_process(lesson, notebook_namespace(lesson), secret=secret)
    finally:
        for (target, name), real in originals.items():
            setattr(target, name, real)
    return seen



def _arrays(value):
    import torch
    if isinstance(value, torch.Tensor):
        value = value.detach().numpy()
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _arrays(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _arrays(v)



# Expected values that cannot be hidden, and why. Lesson 07's positional_encoding is a function of
# two sizes alone; beside the hidden sizes it is asked for the fixed edge cases (7, 6) and (3, 2)
# (short and the narrowest width), whose tables are public by nature: anyone can compute them from
# the formula, and copying them earns nothing while the hidden sizes are wrong.
FIXED_PUBLIC = {("07_transformer_block", (7, 6)), ("07_transformer_block", (3, 2))}



@pytest.fixture(scope="module")
def recorded_floats(kit_dir) -> dict[tuple, list[np.ndarray]]:
    """Every float array the kit records, by shape (~27,000 arrays: ~4 s to read, once, not once per lesson)."""
    tape = recorded.Tape(kit_dir / "autograder" / "records")
    stored = [tape.array(i) for i in range(len(np.load(kit_dir / "autograder" / "records" / "arrays.npz").files))]
    by_shape = {}
    for a in stored:
        if a.dtype.kind in "fc":
            by_shape.setdefault(a.shape, []).append(a)
    return by_shape


@pytest.mark.parametrize("lesson", LESSONS)
def test_no_recorded_value_equals_a_value_expected_under_a_secret(kit_dir, recorded_floats, lesson):
    """Issue 20, point 2: under a course secret, no value the grader compares an answer with can be
    read from the kit. Every float array the checks expect (grading the reference with a secret)
    is compared with every array the kit records, and lesson 04's expected set of published errors
    with the recorded one, for every lesson. (Boolean and integer arrays are left out: a causal
    mask of a given size is the same whoever computes it, as are lesson 09's token ids, whose
    float probabilities are covered; FIXED_PUBLIC says what else cannot be hidden and why.)"""
    index = json.loads((kit_dir / "autograder" / "records" / "index.json").read_text())
    expected = _expected_values(lesson, SECRET.encode())
    assert expected
    checked = 0
    for value in expected:
        if isinstance(value, (set, frozenset)):
            public = recorded.Tape(kit_dir / "autograder" / "records").answer(
                recorded.digest(recorded.digest("call", f"reference:{lesson}", "published_errors"), "", (), {}),
                "published_errors")[1]
            assert set(value) != set(public)
            checked += 1
            continue
        for a in _arrays(value):
            if a.dtype.kind not in "fc" or a.size < 2 or np.ptp(a) == 0:
                continue
            if (lesson, a.shape) in FIXED_PUBLIC:
                continue
            checked += 1
            same = [b for b in recorded_floats.get(a.shape, []) if np.allclose(a, b, rtol=1e-5, atol=1e-6)]
            assert not same, f"{lesson}: an expected {a.shape} array is recorded in the kit"
    assert checked > 0 and index["answers"]
