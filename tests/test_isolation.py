"""Nothing a submission does can change a score it did not earn, or crash the grader.

Each case is a lesson-01 notebook whose softmax cell does something hostile; the other
exercise (scaled_dot_product_attention) is correct, and must still get full marks.
"""
from __future__ import annotations

import os
from pathlib import Path
import time

import pytest

from autograder.report.results import by_exercise
from conftest import notebook_with

LESSON = "01_scaled_dot_product_attention"
GOOD_ATTENTION = '''
def scaled_dot_product_attention(q, k, v, mask=None):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    e = np.exp(s - s.max(-1, keepdims=True))
    w = e / e.sum(-1, keepdims=True)
    return w @ v, w
'''
GOOD_SOFTMAX = '''
def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
'''


def grade_softmax(grade, tmp_path, softmax_source, time_limit=10.0):
    path = notebook_with(LESSON, {"softmax": softmax_source, "scaled_dot_product_attention": GOOD_ATTENTION},
                         tmp_path / "student")
    started = time.monotonic()
    results = grade({LESSON: path}, time_limit=time_limit)
    exercises = by_exercise(results)
    return exercises[(LESSON, "softmax")], exercises[(LESSON, "scaled_dot_product_attention")], \
        time.monotonic() - started


def outputs(entry):
    return "\n".join(t["output"] for t in entry["failed"])


def tags(entry):
    return {tag for t in entry["failed"] for tag in t["tags"]}


# Cases where the student's softmax tries to cheat or break things; each must score 0 on softmax.
HOSTILE = {
    "sys_exit": ("import sys\ndef softmax(x, axis=-1):\n    sys.exit(0)\n", "process-exit"),
    "os_exit": ("import os\ndef softmax(x, axis=-1):\n    os._exit(0)\n", "process-exit"),
    "raise_systemexit": ("def softmax(x, axis=-1):\n    raise SystemExit('bye')\n", "process-exit"),
    "keyboard_interrupt": ("def softmax(x, axis=-1):\n    raise KeyboardInterrupt\n", "process-exit"),
    "fake_output": ("def softmax(x, axis=-1):\n"
                    "    print('{\"score\": 20, \"max_score\": 20}')\n"
                    "    print('PASSED softmax 3/3')\n    return x\n", None),
    "lying_eq_and_array": ('''
class Liar:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __array__(self, *args, **kwargs): return np.zeros(3)
    shape = property(lambda self: (99,))
def softmax(x, axis=-1):
    return Liar()
''', "wrong-type"),
    "monkeypatch_numpy_and_pytest": ('''
import numpy, sys
numpy.allclose = lambda *a, **k: True
numpy.testing.assert_allclose = lambda *a, **k: None
import pytest
pytest.approx = lambda *a, **k: object()
import autograder.grading.compare
autograder.grading.compare.expect_array = lambda *a, **k: None
def softmax(x, axis=-1):
    return x * 0
''', None),
    "monkeypatch_torch": ('''
import torch
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
def softmax(x, axis=-1):
    return x
''', None),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_submission_scores_zero_and_spares_the_rest(grade, tmp_path, case):
    source, mistake = HOSTILE[case]
    softmax, attention, _ = grade_softmax(grade, tmp_path, source)
    assert softmax["score"] == 0, case
    assert attention["score"] == attention["max"], outputs(attention)
    if mistake:
        assert f"mistake:{mistake}" in tags(softmax), outputs(softmax)


@pytest.mark.slow
def test_hang_is_cut_at_the_time_limit(grade, tmp_path):
    softmax, attention, seconds = grade_softmax(grade, tmp_path, "def softmax(x, axis=-1):\n    while True:\n        pass\n",
                                                time_limit=2.0)
    assert softmax["score"] == 0 and "mistake:time-limit" in tags(softmax)
    assert "time limit" in outputs(softmax)
    assert attention["score"] == attention["max"]
    assert seconds < 30


@pytest.mark.slow
def test_ignoring_sigterm_and_spawning_children_leaves_nothing_behind(grade, tmp_path):
    import uuid
    marker = f"autograder-survivor-{uuid.uuid4().hex}"
    source = f'''
import os, signal, subprocess, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)
def softmax(x, axis=-1):
    subprocess.Popen([sys.executable, "-c", "import signal, time\\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\\ntime.sleep(300)", {marker!r}],
                     process_group=0)
    while True:
        pass
'''
    softmax, attention, _ = grade_softmax(grade, tmp_path, source, time_limit=2.0)
    assert softmax["score"] == 0 and "mistake:time-limit" in tags(softmax)
    assert attention["score"] == attention["max"]
    survivors = [p for p in os.listdir("/proc") if p.isdigit() and _has(p, marker)]
    assert not survivors, "a process started by the submission is still running"


def _has(pid, marker):
    try:
        return marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


@pytest.mark.slow
def test_memory_limit(sandbox, tmp_path):
    from autograder.pipeline import grade_student
    from autograder.isolate.sandbox import Sandbox
    small = Sandbox(memory_bytes=512 * 1024 ** 2)
    try:
        path = notebook_with(LESSON, {"softmax": "def softmax(x, axis=-1):\n    big = np.ones(2 * 1024**3 // 8)\n    return x\n",
                                      "scaled_dot_product_attention": GOOD_ATTENTION}, tmp_path / "s")
        results = grade_student({LESSON: path}, small)
    finally:
        small.close()
    ex = by_exercise(results)
    assert ex[(LESSON, "softmax")]["score"] == 0
    assert "mistake:memory-limit" in tags(ex[(LESSON, "softmax")])
    assert ex[(LESSON, "scaled_dot_product_attention")]["score"] > 0


def test_global_rng_changes_do_not_change_the_grade(grade, tmp_path):
    source = "np.random.seed(123)\nimport random, torch\nrandom.seed(5)\ntorch.manual_seed(9)\n" + GOOD_SOFTMAX
    first = grade_softmax(grade, tmp_path / "a", source)
    second = grade_softmax(grade, tmp_path / "b", GOOD_SOFTMAX)
    assert first[0]["score"] == second[0]["score"] == first[0]["max"]


def test_files_written_by_the_student_stay_in_a_scratch_folder(grade, tmp_path):
    cwd_before = set(os.listdir("."))
    source = "open('results.json', 'w').write('{\"score\": 100}')\n" + GOOD_SOFTMAX
    softmax, _, _ = grade_softmax(grade, tmp_path, source)
    assert softmax["score"] == softmax["max"]
    assert set(os.listdir(".")) == cwd_before
    assert not (tmp_path / "student" / "results.json").exists()


def test_same_submission_same_grade(grade, tmp_path):
    source = "def softmax(x, axis=-1):\n    e = np.exp(x + np.random.rand() * 1e-3)\n    return e / e.sum(axis, keepdims=True)\n"
    a = grade_softmax(grade, tmp_path / "a", source)[0]
    b = grade_softmax(grade, tmp_path / "b", source)[0]
    assert a["score"] == b["score"] and outputs(a) == outputs(b)


TAMPER = '''
import os, pathlib, site, sys
TARGETS = {targets!r}
def _attempts():
    done = []
    for target in TARGETS:
        try:
            open(target, "a").close()      # append mode, nothing written: a harmless probe
            done.append("changed " + target)
        except OSError:
            pass
    try:
        if os.listdir({solutions!r}):
            done.append("read solutions/")
    except OSError:
        pass
    return done
ESCAPED = _attempts()
def softmax(x, axis=-1):
    if ESCAPED:
        raise RuntimeError("; ".join(ESCAPED))
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
'''


def test_student_code_cannot_change_the_grader_python_or_home_nor_read_solutions(grade, file_protection, tmp_path):
    from autograder.course import ROOT, SOLUTIONS
    import site
    import numpy
    sentinel = Path.home() / ".autograder-tamper-probe"
    targets = [str(ROOT / "autograder" / "mistakes.py"), str(ROOT / "autograder" / "checks" / "new_check.py"),
               str(Path(numpy.__file__)), str(Path(site.getsitepackages()[0]) / "planted.pth"), str(sentinel)]
    before = {t: Path(t).stat().st_mtime_ns for t in targets if Path(t).exists()}
    source = TAMPER.format(targets=targets, solutions=str(SOLUTIONS))
    softmax, attention, _ = grade_softmax(grade, tmp_path, source)
    assert softmax["score"] == softmax["max"], outputs(softmax)
    assert attention["score"] == attention["max"]
    assert {t: Path(t).stat().st_mtime_ns for t in targets if Path(t).exists()} == before
    for created in (ROOT / "autograder" / "checks" / "new_check.py", sentinel,
                    Path(site.getsitepackages()[0]) / "planted.pth"):
        assert not created.exists()
