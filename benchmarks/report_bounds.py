"""What one student's submission costs the reports and the grader (issue 31, point 2), side by side
with an honest student's: results.json, feedback.md, the bytes printed for the student's folder, and
the grading process's peak resident memory (`grade --jobs 1`: the job is that process), with what
PyTorch and the grader's modules alone hold.

    PYTHONPATH=$PWD python benchmarks/report_bounds.py

Targets: results.json and feedback.md under 1 MB each, under 100 KB printed per notebook, the grader
under 400 MB. The hostile students are built by tests/support/hostile_reports.py (tests/test_report_bounds.py).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))
import hostile_reports  # noqa: E402

STUDENTS = {"honest (all 9 lessons' solutions)": hostile_reports.write_honest_student,
            "3 MB exception type name (all 9 lessons)": hostile_reports.write_type_name_student,
            "six attacks (lessons 01-07)": hostile_reports.write_hostile_student}


def main() -> None:
    print(f"{'student':<44} {'results.json':>12} {'feedback.md':>12} {'printed':>9} {'notebooks':>9} "
          f"{'torch+grader':>12} {'peak':>7} {'load':>5}")
    for name, write in STUDENTS.items():
        with tempfile.TemporaryDirectory() as tmp:
            student = write(Path(tmp) / "student")
            load = os.getloadavg()[0]
            run = subprocess.run([sys.executable, str(ROOT / "tests" / "support" / "hostile_reports.py"), str(student),
                                  str(Path(tmp) / "out")], capture_output=True, text=True, timeout=1800,
                                 env=dict(os.environ, PYTHONPATH=str(ROOT)))
            if run.returncode:
                print(f"{name}: failed\n{run.stderr[-2000:]}")
                continue
            got = json.loads(run.stdout.strip().splitlines()[-1])
            notebooks = len(list(student.glob("*.ipynb")))
            print(f"{name:<44} {got['results_bytes']:>12,} {got['feedback_bytes']:>12,} {got['terminal_bytes']:>9,} "
                  f"{notebooks:>9} {got['rss_loaded_mb']:>9} MB {got['rss_peak_mb']:>4} MB {load:>5.1f}")


if __name__ == "__main__":
    main()
