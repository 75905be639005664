"""Benchmark: a class graded with `--cluster local:2` against `--jobs 2`, side by side, in one run.

    python benchmarks/grade_cluster.py [--students N] [--workers 2] [--rounds 1]

Both commands grade the same synthetic class (benchmarks/grade_class.py: every lesson per
student; solutions, stubs, buggy notebooks and broken files in turn), in turn, each from a fresh
--out, at N and at 2N students, in wall-clock seconds and in processor seconds of every process the command waited for
(on a busy machine the steadier measure; a sandboxed process killed rather than reaped at the
end of a run is not in it, in either mode). The cost per submission is the slope
between the two sizes (what one more student costs, once everything has started), the start
cost its intercept. Then where
the cluster's extra seconds go, measured on a LocalCluster of the same size in this process:
starting the worker processes, each node's setup (the plugin: grader and sandbox loaded), the
scheduler's round trip per task, and the serialisation of one student's notebooks and results.
Not a test: timings on a shared machine are noisy; compare the ratios of one run.
"""
from __future__ import annotations

import argparse
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from grade_class import build_class  # noqa: E402


def timed_cli(folder: Path, out: Path, *how: str) -> tuple[float, float]:
    """(wall seconds, processor seconds of the command and every process it waited for)."""
    import resource

    def cpu():
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime
    started, cpu_before = time.perf_counter(), cpu()
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--out", str(out), *how],
                         cwd=ROOT, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"grade {' '.join(how)} failed: {run.stderr[-800:]}")
    return time.perf_counter() - started, cpu() - cpu_before


def side_by_side(tmp: Path, sizes, workers: int, rounds: int) -> dict:
    how = {"jobs": ("--jobs", str(workers)), "cluster": ("--cluster", f"local:{workers}")}
    seconds = {(mode, n): [] for mode in how for n in sizes}
    for n in sizes:
        folder = tmp / f"class{n}"
        build_class(folder, n)
        for r in range(rounds):
            for mode in (how if r % 2 == 0 else reversed(list(how))):   # alternate who goes first
                seconds[mode, n].append(timed_cli(folder, tmp / f"out-{mode}-{n}-{r}", *how[mode]))
    return {key: (min(w for w, _ in values), min(c for _, c in values)) for key, values in seconds.items()}


def where_it_goes(folder: Path, workers: int) -> dict:
    """The cluster's own costs, on a LocalCluster like the command's."""
    from autograder.classroom import cluster, node
    from autograder.course import COURSE
    student = sorted(p for p in folder.iterdir() if p.is_dir())[0]
    files = {lesson: node.parcel(student / f"{lesson}.ipynb") for lesson in COURSE}
    got = {}
    started = time.perf_counter()
    with cluster.connect(workers, None) as client:     # the command's LocalCluster
        got["worker processes start"] = time.perf_counter() - started
        plugin = node.GraderPlugin(2 * 1024 ** 3, list(COURSE), node.course_identity(COURSE))
        started = time.perf_counter()
        client.register_plugin(plugin, name=plugin.name)
        got["node setup (plugin: grader, sandbox, checks)"] = time.perf_counter() - started
        tasks = 100
        started = time.perf_counter()
        futures = [client.submit(len, files, key=f"noop-{i}", resources={node.SANDBOX: 1}, pure=False)
                   for i in range(tasks)]
        client.gather(futures)
        got["scheduler round trip per task, with one student's notebooks"] = (time.perf_counter() - started) / tasks
        started = time.perf_counter()
        result = client.submit(node.grade, student.name, files, 10.0, resources={node.SANDBOX: 1},
                               pure=False).result()
        got["one student graded (9 lessons), for scale"] = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(20):
        pickle.loads(pickle.dumps((files, result)))
    got["serialisation of a student's notebooks and results"] = (time.perf_counter() - started) / 20
    got["bytes sent per student"] = sum(len(b) for b in files.values() if isinstance(b, bytes))
    got["bytes back per student"] = len(pickle.dumps(result))
    return got


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="runs of each (the fastest counts)")
    args = parser.parse_args(argv)
    sizes = (args.students, 2 * args.students)
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        tmp = Path(tmp)
        wall = side_by_side(tmp, sizes, args.workers, args.rounds)
        for index, kind in enumerate(("wall-clock", "processor (all processes)")):
            print(f"{kind + ' seconds':<36}" + "".join(f"{n:>4} students" for n in sizes)
                  + "   per submission   start")
            slope = {}
            for mode, label in (("jobs", f"--jobs {args.workers}"), ("cluster", f"--cluster local:{args.workers}")):
                small, large = wall[mode, sizes[0]][index], wall[mode, sizes[1]][index]
                slope[mode] = (large - small) / (sizes[1] - sizes[0])
                start = small - slope[mode] * sizes[0]
                print(f"  {label:<34}{small:>11.1f} s{large:>11.1f} s{slope[mode]:>13.2f} s{start:>9.1f} s")
            print(f"  cluster / jobs: per submission {slope['cluster'] / slope['jobs']:.3f}, whole run at "
                  f"{sizes[1]} {wall['cluster', sizes[1]][index] / wall['jobs', sizes[1]][index]:.2f}\n")
        print("where the cluster's own time goes:")
        for what, value in where_it_goes(tmp / f"class{sizes[0]}", args.workers).items():
            print(f"  {what:<62} {value:>10,.0f}" if what.startswith("bytes") else
                  f"  {what:<62} {value * 1000:>8.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
