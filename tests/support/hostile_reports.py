"""A student whose every lesson tries to swell the reports (issue 31, point 2), and a driver that
grades a student folder with `python -m autograder grade --jobs 1` inside one process and says what
it cost: the bytes printed, results.json and feedback.md, and the process's peak resident memory.

    python tests/support/hostile_reports.py STUDENT_FOLDER OUT_FOLDER   (prints one JSON line)

Used by tests/test_report_bounds.py and benchmarks/report_bounds.py.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Each lesson's graded cells are replaced by one attack, NAME by the cell's exercise (a class is
# called like a function: the checks call it).
HUGE_TYPE = "Big = type('E' + 'x' * 3_000_000, (Exception,), {})\n"
ATTACKS = {
    # an exception class whose name is 3 MB, raised by every call
    "01_scaled_dot_product_attention": HUGE_TYPE + "def NAME(*a, **k):\n    raise Big('boom')\n",
    # the child's own error report patched: 2.5 MB each of type name, message and traceback (the
    # frame's header stays under the wire's 8 MB)
    "02_masking": ("import autograder.run.executor as _e\n"
                   "_e.describe_error = lambda exc: {'type': 'T' * 2_500_000, 'message': 'M' * 2_500_000, "
                   "'traceback': 'B' * 2_500_000}\n"
                   "def NAME(*a, **k):\n    raise ValueError('boom')\n"),
    # the graded cell raises before its definition, with a 3 MB type name: the cell's error is the reason
    "06_debugging_projection_reuse": HUGE_TYPE + "raise Big('the cell fails')\ndef NAME(*a, **k):\n    pass\n",
    # 30 MB printed, then a 6 MB string returned
    "07_transformer_block": "def NAME(*a, **k):\n    print('P' * 30_000_000)\n    return 'S' * 6_000_000\n",
    # a dict of 80,000 keys, each of 30 characters (a larger one is refused by the wire's count of values)
    "04_worked_example": "def NAME(*a, **k):\n    return {f'{i:030d}': i for i in range(80_000)}\n",
    # an array whose dtype is named by a 3 MB field name
    "05_multi_head_attention": ("import numpy as np\n"
                                "def NAME(*a, **k):\n    return np.zeros(3, dtype=[('F' * 3_000_000, 'f8')])\n"),
}
# an ungraded cell of lesson 01 with magics whose names are 1 MB each
MAGICS = "".join(f"%{c * 1_000_000}\n" for c in "abc")


def write_hostile_student(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for lesson, attack in ATTACKS.items():
        nb = json.loads((ROOT / "lessons" / f"{lesson}.ipynb").read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("solution"):
                cell["source"] = attack.replace("NAME", meta["grade_id"])
        if lesson.startswith("01"):
            nb["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                                "source": MAGICS})
        (folder / f"{lesson}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    return folder


def write_type_name_student(folder: Path) -> Path:
    """The review's attack (issue 31): every graded cell of every lesson defines its exercise to raise
    an exception class named "E" + "x" * 3_000_000."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in sorted((ROOT / "lessons").glob("0*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("solution"):
                cell["source"] = ATTACKS["01_scaled_dot_product_attention"].replace("NAME", meta["grade_id"])
        (folder / path.name).write_text(json.dumps(nb), encoding="utf-8")
    return folder


def write_honest_student(folder: Path) -> Path:
    """The baseline: every lesson's reference solution."""
    import shutil
    folder.mkdir(parents=True, exist_ok=True)
    for path in sorted((ROOT / "solutions").glob("0*.ipynb")):
        shutil.copy(path, folder / path.name)
    return folder


def grade_and_measure(student: Path, out: Path) -> dict:
    """Grade `student` (one student's folder) in this process, as `grade --jobs 1` does."""
    import contextlib
    import io
    sys.path.insert(0, str(ROOT))

    def peak_mb() -> float:
        # VmHWM, this process's own high-water mark: ru_maxrss also counts the peak of the process
        # that started it (Linux keeps the old memory's figure across exec, and subprocess uses
        # vfork), so a test run from a large pytest worker measured that worker, not the grader
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024

    started = peak_mb()
    import torch  # noqa: F401  - the honest baseline: what the grader holds before any student
    import autograder.pipeline  # noqa: F401
    loaded = peak_mb()
    from autograder.__main__ import main
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        status = main(["grade", str(student), "--out", str(out), "--jobs", "1"])
    folder = out / "students" / student.name
    result = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    return {"status": status, "terminal_bytes": len(printed.getvalue().encode()),
            "results_bytes": (folder / "results.json").stat().st_size,
            "feedback_bytes": (folder / "feedback.md").stat().st_size,
            "rss_start_mb": round(started), "rss_loaded_mb": round(loaded), "rss_peak_mb": round(peak_mb()),
            "score": result["score"], "max_score": result["max_score"], "terminal": printed.getvalue()[:20_000]}


if __name__ == "__main__":
    print(json.dumps(grade_and_measure(Path(sys.argv[1]), Path(sys.argv[2]))))
