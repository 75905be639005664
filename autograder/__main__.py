"""Command line: `python -m autograder grade PATH [--json FILE] [--jobs N | --cluster local:N | --scheduler ADDRESS]`,
`release` and `gradescope`."""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

# The grader's own tensors (references, fingerprints, recordings) are tiny: PyTorch's thread pool
# only waits, and on a busy 2-core machine it multiplies the work (recording the student kit took
# 58 s with the default threads, 9 s with one). Set before anything imports torch; the sandbox
# sets the same for student code (isolate/bwrap.py).
os.environ["OMP_NUM_THREADS"] = "1"

from autograder.course import COURSE
from autograder.report.results import terminal_safe

USAGE_ERROR = 2


class UsageError(Exception):
    pass


def find_submissions(path: Path) -> tuple[str, dict[str, dict[str, Path]], list[str]]:
    """Return (kind, {student: {lesson_id: notebook}}, warnings); kind is notebook|student|class."""
    if not path.exists():
        raise UsageError(f"{path} does not exist")
    if path.is_file():
        if path.suffix != ".ipynb":
            raise UsageError(f"{path} is not a notebook (.ipynb)")
        if path.stem not in COURSE:
            raise UsageError(f"{path.name} matches no lesson; lesson notebooks are named "
                             + ", ".join(f"{lid}.ipynb" for lid in COURSE))
        return "notebook", {path.parent.name or ".": {path.stem: path}}, []
    warnings: list[str] = []
    own = _lesson_notebooks(path, warnings)
    if own:
        return "student", {path.name: own}, warnings
    students = {}
    for sub in _folders(path, warnings):
        notebooks = _lesson_notebooks(sub, warnings)
        if not notebooks:  # nbgrader's layout: submitted/<student>/<assignment>/<lesson>.ipynb
            for assignment in _folders(sub, warnings):
                notebooks.update(_lesson_notebooks(assignment, warnings))
        if notebooks:
            students[sub.name] = notebooks
    if not students:
        raise UsageError(f"{path} holds no lesson notebooks (expected files like "
                         f"{next(iter(COURSE))}.ipynb, or one folder per student holding them)")
    return "class", students, warnings


def _folders(path: Path, warnings: list[str]) -> list[Path]:
    """Sub-folders, never through a symbolic link (a link to solutions/ is not a submission)."""
    found = []
    for p in sorted(path.iterdir()):
        if p.name.startswith(".") or not p.is_dir():
            continue
        if p.is_symlink():
            warnings.append(f"{p} is a symbolic link and was not graded")
            continue
        found.append(p)
    return found


def _lesson_notebooks(folder: Path, warnings: list[str]) -> dict[str, Path]:
    found = {}
    for nb in sorted(folder.glob("*.ipynb")):
        if nb.stem in COURSE:
            found[nb.stem] = nb
        else:
            warnings.append(f"{nb} matches no lesson and was not graded")
    return found


def cmd_grade(args) -> int:
    from autograder.classroom.runner import grade_many
    if args.lang is not None:     # every report this run writes reads it (i18n.language), on a cluster too
        from autograder.i18n import ENV, LANGUAGES, language
        if language(args.lang) is None and args.lang.lower().replace("-", "_") not in ("en", "en_us", "en_gb"):
            print(f"error: --lang {args.lang}: the feedback speaks en or {', '.join(LANGUAGES)}", file=sys.stderr)
            return USAGE_ERROR
        os.environ[ENV] = args.lang
    try:
        kind, students, warnings = find_submissions(Path(args.path))
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    for w in warnings:
        print(terminal_safe(f"warning: {w}"), file=sys.stderr)
    started = time.monotonic()
    if args.cluster or args.scheduler:
        return grade_on_a_cluster(args, kind, students, started)
    from autograder.isolate.doctor import quick_probe
    probe = quick_probe()
    if not (probe["namespaces"] or probe["landlock"]) and not args.unsafe_no_sandbox:
        print("error: no isolation layer works here (neither bubblewrap namespaces nor Landlock), so "
              "student code could read and change anything you can. Run `python -m autograder doctor` "
              "for details, or pass --unsafe-no-sandbox if every submission is trusted.", file=sys.stderr)
        return USAGE_ERROR
    from autograder.run.errors import SandboxUnavailable
    try:
        results = grade_many(students, jobs=args.jobs, time_limit=args.time_limit,
                             memory_limit=args.memory_limit, out_dir=Path(args.out) if args.out else None,
                             show=lambda text: print(terminal_safe(text)), progress=kind == "class",
                             allow_unsandboxed=args.unsafe_no_sandbox, brief=args.brief,
                             verbose=args.verbose)
    except SandboxUnavailable as exc:
        print(terminal_safe(f"error: nothing was graded: {exc}"), file=sys.stderr)
        return USAGE_ERROR
    if args.json:
        from autograder.report.results import bounded, localized, write_json
        results = {student: bounded(localized(result, None)) for student, result in results.items()}
        data = results if kind == "class" else next(iter(results.values()))
        write_json(Path(args.json), data)
    print(graded_line(len(results), time.monotonic() - started))
    return 0


def graded_line(students: int, seconds: float, not_graded: int = 0) -> str:
    """The run's last line, in the feedback's language ($AUTOGRADER_LANG, set from --lang)."""
    from autograder.i18n import N_, language, localize
    line = N_("graded {n} student(s) in {seconds} s").format(n=students, seconds=f"{seconds:.1f}")
    if not_graded:
        line += "; " + N_("{n} NOT graded (listed above)").format(n=not_graded)
    return localize(line, language(None))


def grade_on_a_cluster(args, kind, students, started) -> int:
    """--cluster / --scheduler: each node checks its own sandbox (classroom/node.py), so this
    machine's isolation is not probed: no student code runs here."""
    from autograder.classroom.cluster import ClusterError, grade_on_cluster, parse_cluster
    from autograder.run.errors import SandboxUnavailable
    try:
        local = parse_cluster(args.cluster) if args.cluster else None
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    try:
        results, not_graded = grade_on_cluster(
            students, local_workers=local, scheduler=args.scheduler, time_limit=args.time_limit,
            memory_limit=args.memory_limit, out_dir=Path(args.out) if args.out else None,
            show=lambda text: print(terminal_safe(text)), progress=kind == "class",
            allow_unsandboxed=args.unsafe_no_sandbox, allow_missing_layers=args.allow_missing_layers,
            brief=args.brief, verbose=args.verbose)
    except (ClusterError, SandboxUnavailable) as exc:
        print(terminal_safe(f"error: nothing was graded: {exc}"), file=sys.stderr)
        return USAGE_ERROR
    if args.json:
        from autograder.report.results import write_json
        write_json(Path(args.json), results if kind == "class" else next(iter(results.values()), {}))
    print(graded_line(len(results), time.monotonic() - started, len(not_graded)))
    return 1 if not_graded else 0


def cmd_doctor(args) -> int:
    """Say which isolation layers protect the grader on this machine, and prove them."""
    from autograder.isolate.doctor import report
    ok, text = report()
    print(text)
    return 0 if ok else 1


def cmd_release(args) -> int:
    from autograder.deliver.release import release
    from autograder.deliver.translations import LANGUAGES
    for lang in (None, *LANGUAGES):   # the English lessons, then each translation (lessons/<lang>/)
        for path in release(lang=lang):
            print(f"wrote {path}")
    if args.student_kit:
        from autograder.deliver.kit import ensure_secret, write_kit
        out = write_kit(Path(args.student_kit), lang=args.lang)
        size = sum(p.stat().st_size for p in ([out] if out.is_file() else out.rglob("*")) if p.is_file())
        print(f"wrote the student kit {out} ({size / 1e6:.1f} MB): hand it out; it holds no solution")
        secret, created = ensure_secret()
        print(f"{'created' if created else 'using'} the course secret {secret}: grading derives its inputs "
              "from it, so they differ from the kit's. Keep it out of git and away from students; "
              "`python -m autograder gradescope` puts it in the bundle")
    return 0


def cmd_translations(args) -> int:
    from autograder.deliver.translations import catalog_path, update
    from autograder.deliver.translations import FEEDBACK, PAGES
    unknown = [lid for lid in args.lessons or () if lid not in COURSE and lid not in PAGES and lid != FEEDBACK]
    if unknown:
        print(f"error: no lesson {', '.join(unknown)}", file=sys.stderr)
        return USAGE_ERROR
    lessons = None
    if args.lessons:
        lessons = sorted({*args.lessons, *(d for d in [*COURSE, *PAGES] if catalog_path(d, args.lang).exists())} - {FEEDBACK})
    for lesson_id, counts in update(args.lang, lessons).items():
        left = counts["fuzzy"] + counts["untranslated"]
        print(f"{catalog_path(lesson_id, args.lang).relative_to(Path.cwd()) if catalog_path(lesson_id, args.lang).is_relative_to(Path.cwd()) else catalog_path(lesson_id, args.lang)}: "
              f"{counts['translated']} translated, {counts['fuzzy']} fuzzy (English changed), "
              f"{counts['untranslated']} untranslated, {counts['obsolete']} obsolete"
              + ("" if left else "; complete"))
    if not args.lessons or FEEDBACK in args.lessons:
        from autograder.deliver.translations import compiled_path, update_feedback
        counts = update_feedback(args.lang)
        print(f"{catalog_path(FEEDBACK, args.lang)}: {counts['translated']} translated, {counts['fuzzy']} fuzzy "
              f"(English changed), {counts['untranslated']} untranslated; compiled {compiled_path(args.lang)}")
    return 0


def cmd_gradescope(args) -> int:
    from autograder.deliver.gradescope import write_bundle
    lessons = args.lessons or list(COURSE)
    unknown = [lid for lid in lessons if lid not in COURSE]
    if unknown:
        print(f"error: unknown lesson id(s): {', '.join(unknown)}; the lessons are: "
              + ", ".join(COURSE), file=sys.stderr)
        return USAGE_ERROR
    out = write_bundle(Path(args.out), lessons, args.lang)
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB) grading {len(lessons)} lesson(s); "
          f"upload it as the assignment's autograder on Gradescope")
    from autograder.grading.plugin import course_secret
    if course_secret() is None:
        print("note: there is no course secret, so the bundle grades on the public inputs the student kit "
              "records; `python -m autograder release --student-kit OUT` creates one")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("grade", help="grade a notebook, one student's folder, or a class folder",
                       epilog="Student code runs sandboxed: bubblewrap namespaces where the kernel allows "
                              "them, a uid of its own when run as root, no capabilities, Landlock, seccomp "
                              "and resource limits. The first line of output says which layers are in "
                              "force; `python -m autograder doctor` explains and tests them.")
    g.add_argument("path", help="a lesson notebook, a folder of one student's notebooks, or a class folder")
    g.add_argument("--json", metavar="FILE", help="write results in Gradescope's results.json format")
    g.add_argument("--jobs", type=int, default=None, help="students graded in parallel (default: cores)")
    g.add_argument("--time-limit", type=float, default=10.0, help="seconds per exercise (default 10)")
    g.add_argument("--memory-limit", type=float, default=2.0, help="GiB per submission (default 2)")
    g.add_argument("--out", metavar="DIR", help="for a class: write grades.csv, class-report.html, and "
                                                "per-student results.json and feedback.md under DIR/students/")
    g.add_argument("--brief", action="store_true",
                   help="one line per exercise, without the diagnosis (a class folder is always brief in the "
                        "terminal; the full text is in --out's feedback files)")
    g.add_argument("--verbose", action="store_true",
                   help="every check of each exercise that lost points, passed ones too, with all that each "
                        "saw (by default: the root cause and its fix once, then one line per failed check), "
                        "and what each sandbox layer holds")
    g.add_argument("--lang", default=None, metavar="LANG",
                   help="the feedback's language: zh_CN (简体中文) or en (default: $AUTOGRADER_LANG, else English); "
                        "scores, ids and names are the same in every language")
    g.add_argument("--unsafe-no-sandbox", action="store_true",
                   help="grade even where no isolation layer works (only for trusted submissions)")
    where = g.add_mutually_exclusive_group()
    where.add_argument("--cluster", metavar="local:N",
                       help="grade on a Dask cluster of N worker processes on this machine (one sandbox each)")
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="grade on an existing Dask cluster (tcp://host:8786, or tls://host:8786 with the "
                            "certificates in Dask's configuration); see INSTRUCTORS.md, 'Grading on a cluster'")
    g.add_argument("--allow-missing-layers", action="store_true",
                   help="with --cluster/--scheduler: grade also on nodes whose sandbox lacks a layer (they are "
                        "named in the summary); by default such a node is refused")
    g.set_defaults(func=cmd_grade)
    d = sub.add_parser("doctor", help="show which isolation layers protect grading on this machine")
    d.set_defaults(func=cmd_doctor)
    r = sub.add_parser("release", help="regenerate lessons/ from solutions/")
    r.add_argument("--student-kit", metavar="OUT", help="also write the student kit (a folder, or a .zip): "
                                                        "README, requirements, lessons, recorded self-checks")
    r.add_argument("--lang", default=None, help="with --student-kit: hand out the lessons (and the README) "
                   "in this language where they are translated, e.g. zh_CN (简体中文)")
    r.set_defaults(func=cmd_release)
    t = sub.add_parser("translations", help="merge the English lessons, and the feedback's marked texts, into the "
                       "translation catalogs (locale/<lang>/LC_MESSAGES/<lesson_id>.po, feedback.po), compile the "
                       "feedback's (autograder/locale/<lang>/LC_MESSAGES/feedback.mo) and say what is left to translate")
    t.add_argument("--lang", default="zh_CN", help="the language (default zh_CN)")
    t.add_argument("--lessons", nargs="+", metavar="LESSON_ID", default=None,
                   help="start catalogs for these lessons (or site pages: book_intro) too (default: those that have one)")
    t.set_defaults(func=cmd_translations)
    gs = sub.add_parser("gradescope", help="write a Gradescope autograder bundle (zip)")
    gs.add_argument("--out", default="gradescope_autograder.zip", help="the zip to write "
                                                                      "(default gradescope_autograder.zip)")
    gs.add_argument("--lessons", nargs="+", metavar="LESSON_ID", default=None,
                    help="lessons this Gradescope assignment grades (default: every lesson)")
    gs.add_argument("--lang", default=None, metavar="LANG",
                    help="the language of the feedback students read on Gradescope, e.g. zh_CN (default English)")
    gs.set_defaults(func=cmd_gradescope)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return USAGE_ERROR if exc.code else 0
    if getattr(args, "jobs", None) is not None and args.jobs < 1:
        print("error: --jobs must be at least 1", file=sys.stderr)
        return USAGE_ERROR
    if getattr(args, "jobs", None) is not None and (args.cluster or args.scheduler):
        print("error: --jobs is for this machine; a cluster grades one student per Dask worker", file=sys.stderr)
        return USAGE_ERROR
    return args.func(args)


def _reader_gone() -> bool:
    """Whoever read our standard output has stopped (`grade ... | head`): the pipe reports an error."""
    import select
    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poll.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        if not _reader_gone():
            raise
        # as `head` expects of a command it stops reading: no traceback, and none at exit either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
