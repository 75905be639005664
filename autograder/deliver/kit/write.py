"""Write: the kit's files (modules, recordings, lessons, README, requirements), deterministic bytes.

Built in a temporary folder (or buffer) next to OUT, then renamed into place.
"""
from __future__ import annotations

import io
import os
import re
import shutil
import tempfile
import zipfile
from pathlib import Path

from autograder.course import COURSE, ROOT, available_lessons
from autograder.deliver.kit.assemble import package_files
from autograder.deliver.kit.record import ZIP_DATE, record, tape_files

KIT_PACKAGES = ("torch", "numpy", "matplotlib", "jupyter", "jupyterlab", "ipykernel", "pytest")


def kit_requirements() -> str:
    pins = {}
    for line in map(str.strip, (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()):
        name = re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0].lower()
        if name in KIT_PACKAGES:
            pins[name] = line
    missing = set(KIT_PACKAGES) - set(pins)
    if missing:
        raise ValueError(f"requirements.txt does not pin {', '.join(sorted(missing))}")
    return ("# What the course's notebooks and their self-checks need: python3 -m pip install -r requirements.txt\n"
            "# PyTorch is pinned exactly. From PyPI's default index on Linux this pin is the CUDA build (about\n"
            "# 3 GB); a machine without a GPU installs the CPU build with PyTorch's own wheel index:\n"
            "#   python3 -m pip install --extra-index-url https://download.pytorch.org/whl/cpu -r requirements.txt\n"
            + "\n".join(pins[name] for name in KIT_PACKAGES) + "\n")


STUDENT_README = """# Multi-head attention, one exercise at a time: your course kit

These Jupyter notebooks build multi-head attention from a NumPy softmax up to a PyTorch module,
then put it to work. Each exercise has a **self-check** cell right after it.

## Install (once)

You need Python 3.11 or newer. In this folder:

```bash
python3 -m venv .venv && . .venv/bin/activate          # optional, but keeps the course apart
python3 -m pip install -r requirements.txt
```

On a machine without a GPU, ask pip for PyTorch's CPU build (the default is the CUDA build, about
3 GB of downloads):

```bash
python3 -m pip install --extra-index-url https://download.pytorch.org/whl/cpu -r requirements.txt
```

Nothing else is needed, and after the install everything works offline.

## Open the course

```bash
jupyter lab lessons/
```

(As root, in a container for instance: `jupyter lab --allow-root lessons/`.) Take the lessons in
order, each from top to bottom:

{lesson_table}

## Self-check

Each exercise is a function or class whose body is `raise NotImplementedError()`; its docstring
says what to return. Run the cell after it: the self-check runs the course's own checks on your
code and prints what passed, what failed, and which common mistake your answer looks like, with
a hint. The number it shows last is your score for that exercise. The lesson's first code cell
prints `Self-checks: ../autograder (student kit ...)`: the self-checks run this kit's own copy,
whatever else is installed.

The self-checks compare your answers with answers recorded on the course's own check inputs.
Your instructor grades on other inputs of the same kind, so code that solves the exercise gets
the same full marks there; code that only reproduces the self-check's answers does not. A wrong
answer can score differently there (0/5 here, 1/5 in the grade) because which checks it fails
depends on the inputs it meets.

Before you submit: save, then Kernel > Restart Kernel and Run All Cells, and read the
self-checks. The grader runs your notebook the same way, top to bottom in a fresh process.

## Submit

Hand in your `lessons/<lesson_id>.ipynb` files as your course asks (an upload, a folder, or
nbgrader's exchange). Keep the file names: the grader knows a lesson by its file name.

## What is in this folder

| path | what it holds |
|---|---|
| `lessons/` | the notebooks you work in, one per lesson |
{data_row}| `autograder/` | the self-check: the course's checks and the answers they compare with, recorded as data |
| `requirements.txt` | what to install |
"""


CORE = 6   # lessons 1 to CORE are the core; the later ones go further (README.md says which needs which)


def student_readme(lessons: list[str]) -> str:
    """The kit's README, its lesson table taken from COURSE: a lesson added there is listed here."""
    rows = "\n".join(f"| {int(lid[:2])} | `{lid}` | {COURSE[lid].title} |" for lid in lessons)
    table = "| | notebook | what it is about |\n|---|---|---|\n" + rows
    if any(int(lid[:2]) > CORE for lid in lessons):
        table += f"\n\nLessons 1 to {CORE} are the core, in order; the later ones go further and build on them."
    data_row = "| `data/` | the corpus lesson 9 trains its model on, and the weights of its full run |\n" if "09_generating_text" in lessons else ""
    return STUDENT_README.format(lesson_table=table, data_row=data_row)


def kit_files(lessons: list[str] | None = None, corpus: bool = True, lang: str | None = None) -> dict[str, bytes]:
    """{path in the kit: bytes}. With `lang` (deliver/translations.py), the lessons translated into
    it are handed out in that language (same file names, same code), with the README in it too."""
    from autograder.deliver.release import render, student_version, translated_version
    from autograder.deliver.translations import translated_lessons
    lessons = lessons or [lesson.id for lesson in available_lessons()]
    translated = set(translated_lessons(lang)) if lang else set()
    files = package_files(lessons)
    for name, data in tape_files(record(lessons, corpus=corpus)).items():
        files[f"autograder/records/{name}"] = data
    for lesson_id in lessons:
        nb = translated_version(lesson_id, lang) if lesson_id in translated \
            else student_version(COURSE[lesson_id].solution_path)
        files[f"lessons/{lesson_id}.ipynb"] = render(nb).encode()
    if translated:   # the translated lessons' figure fonts (deliver/translations.py, FIGURE_FONTS)
        from autograder.deliver.translations import matplotlibrc
        files["lessons/matplotlibrc"] = matplotlibrc(lang).encode()
    if "09_generating_text" in lessons:   # lesson 09's corpus and its full run's weights (data, no code)
        for path in sorted((ROOT / "data" / "sums").glob("*")):
            if path.suffix in (".txt", ".md", ".pt"):
                files[f"data/sums/{path.name}"] = path.read_bytes()
    files["README.md"] = (kit_readme(lang, [lid for lid in lessons if lid in translated]) if lang
                          else student_readme(lessons)).encode()
    files["requirements.txt"] = kit_requirements().encode()
    return files


def kit_readme(lang: str, translated: list[str]) -> str:
    """The kit's README in `lang`: locale/<lang>/KIT_README.md, with the list of the lessons
    translated so far in place of {translated}."""
    from autograder.deliver.translations import LOCALE
    template = (LOCALE / lang / "KIT_README.md").read_text(encoding="utf-8")
    return template.replace("{translated}", "\n".join(f"- `lessons/{lid}.ipynb`" for lid in translated))


def write_kit(out: Path, lessons: list[str] | None = None, corpus: bool = True, lang: str | None = None) -> Path:
    """Build the kit in a temporary place next to `out`, then rename it into place."""
    out = Path(out).resolve()
    files = kit_files(lessons, corpus, lang)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".zip":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, data in sorted(files.items()):
                info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
                info.external_attr = 0o100644 << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, data)
        from autograder.report.results import write_atomic
        write_atomic(out, buf.getvalue())
        os.chmod(out, 0o644)             # a file to hand out (write_atomic's temporary file is private)
        return out
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    try:
        for name, data in sorted(files.items()):
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        os.chmod(tmp, 0o755)
        if out.exists():               # replace an older kit: move it aside, then drop it
            old = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.old."))
            os.replace(out, old / "kit")
            os.replace(tmp, out)
            shutil.rmtree(old)
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def ensure_secret() -> tuple[Path, bool]:
    """The course secret's file (created with 256 random bits if there is none): (path, created)."""
    import secrets

    from autograder.grading.plugin import secret_path
    path = secret_path()
    if path.exists():
        return path, False
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    return path, True
