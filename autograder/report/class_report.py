"""The class report: one static page (`class-report.html`) that tells an instructor what to teach again.

For each exercise: how the scores spread, which catalogued mistakes the class made most often,
and the students who lost most, linked to their feedback. The page works offline: charts are
matplotlib PNGs inside the page as data URIs, styles are inline, there is no script at all, and a
Content-Security-Policy forbids loading anything. Every string a student controls (folder names,
exception messages) is passed through html.escape; links are percent-encoded relative paths.
"""
from __future__ import annotations

import base64
import html
import io
import os
import statistics
from pathlib import Path
from urllib.parse import quote

from autograder.course import COURSE
from autograder.diagnose.mistakes import CATALOGUE
from autograder.report.results import by_exercise, mistakes_of, reason, write_atomic

REPORT_NAME = "class-report.html"
WORST = 5          # students listed per exercise
TOP_MISTAKES = 8   # bars per mistake chart
FEEDBACK_FILES = ("feedback.md", "results.json")


def write_class_report(out_dir: Path, results: dict[str, dict]) -> Path:
    """Write OUT/class-report.html for {student: results object}, linking the feedback files
    that classroom.grade_many wrote under OUT/students/."""
    path = Path(out_dir) / REPORT_NAME
    write_atomic(path, class_report_html(results, Path(out_dir)))
    return path


def student_folder(out_dir: Path, student: str) -> Path:
    """Where a class run writes one student's results.json and feedback.md."""
    return Path(out_dir) / "students" / student


def class_report_html(results: dict[str, dict], out_dir: Path) -> str:
    exercises = _per_exercise(results)
    links = {s: _links(out_dir, student_folder(out_dir, s)) for s in results}
    charts = _Charts()
    body = [_summary(results, exercises, charts)]
    current = None
    for (lesson, exercise), rows in exercises.items():
        if lesson != current:
            current = lesson
            title = COURSE[lesson].title if lesson in COURSE else ""
            body.append(f"<h2 id='{_anchor(lesson)}'>{_e(lesson)} <small>{_e(title)}</small></h2>")
        body.append(_exercise_section(lesson, exercise, rows, links, charts))
    return _PAGE.format(css=_CSS, body="\n".join(body))


def _per_exercise(results):
    """{(lesson, exercise): [(student, entry)]}, in course order (students who were graded on it)."""
    rows: dict[tuple[str, str], list] = {}
    for student, result in results.items():
        for key, entry in by_exercise(result).items():
            rows.setdefault(key, []).append((student, entry))
    order = {lid: i for i, lid in enumerate(COURSE)}

    def position(key):
        exercises = COURSE[key[0]].exercises if key[0] in COURSE else ()
        return order.get(key[0], 99), exercises.index(key[1]) if key[1] in exercises else 99, key
    return dict(sorted(rows.items(), key=lambda kv: position(kv[0])))


def _summary(results, exercises, charts) -> str:
    fractions = [r["score"] / r["max_score"] for r in results.values() if r.get("max_score")]
    totals = [r["score"] for r in results.values()]
    lost = {key: sum(e["max"] - e["score"] for _, e in rows) for key, rows in exercises.items()}
    worst = sorted((k for k in lost if lost[k] > 0), key=lambda k: (-lost[k], k))[:5]
    maxima = sorted({r["max_score"] for r in results.values()})
    out = ["<h1>Class report</h1>", "<ul class='summary'>",
           f"<li><b>{len(results)}</b> student(s) graded on <b>{len(exercises)}</b> exercise(s)</li>"]
    if totals:
        of = (f" / {_pts(maxima[0])}" if len(maxima) == 1
              else " (the maximum differs: not every student handed in every lesson)")
        out.append(f"<li>total score: mean <b>{_pts(statistics.mean(totals))}</b>, "
                   f"median <b>{_pts(statistics.median(totals))}</b>{_e(of)}</li>")
    if fractions:
        out.append(f"<li>as a share of each student's maximum: mean <b>{statistics.mean(fractions):.0%}</b>, "
                   f"median <b>{statistics.median(fractions):.0%}</b></li>")
    out.append("</ul>")
    if worst:
        items = "".join(f"<li><a href='#{_anchor(*k)}'>{_e(k[0])} / {_e(k[1])}</a>: "
                        f"{_pts(lost[k])} points lost in all</li>" for k in worst)
        out.append(f"<h3>Where the class lost most points</h3><ol>{items}</ol>")
        top = sorted(lost, key=lambda k: (-lost[k], k))[:15]
        out.append(charts.lost([f"{k[0][:2]} {k[1]}" for k in top], [lost[k] for k in top]))
    else:
        out.append("<p>No exercise lost any points.</p>")
    return "\n".join(out)


def _exercise_section(lesson, exercise, rows, links, charts) -> str:
    maximum = max(e["max"] for _, e in rows)
    scores = [e["score"] for _, e in rows]
    full = sum(1 for _, e in rows if e["score"] >= e["max"])
    out = [f"<section id='{_anchor(lesson, exercise)}'><h3>{_e(exercise)}</h3>",
           f"<p>{len(rows)} student(s) graded, out of {_pts(maximum)} point(s): "
           f"mean {_pts(statistics.mean(scores))}, median {_pts(statistics.median(scores))}; {full} with full marks.</p>"]
    counts: dict[str, int] = {}
    for _, entry in rows:   # each student counts once per mistake
        for mistake in {m for test in entry["failed"] for m in mistakes_of(test)}:
            counts[mistake] = counts.get(mistake, 0) + 1
    top = sorted(counts, key=lambda m: (-counts[m], m))[:TOP_MISTAKES]
    out.append(charts.exercise(exercise, scores, maximum, top, [counts[m] for m in top]))
    if top:
        items = "".join(f"<li><code>{_e(m)}</code>: {counts[m]} student(s)"
                        + (f" ({_e(CATALOGUE[m].title)})" if m in CATALOGUE else "") + "</li>" for m in top)
        out.append(f"<p>Most frequent named mistakes:</p><ul>{items}</ul>")
    elif any(e["failed"] for _, e in rows):
        out.append("<p>No failed check matched a catalogued mistake.</p>")
    losers = sorted((r for r in rows if r[1]["score"] < r[1]["max"]),
                    key=lambda r: (r[1]["score"] - r[1]["max"], r[0]))[:WORST]
    if losers:
        out.append("<table><thead><tr><th>student</th><th>score</th><th>why</th><th>feedback</th></tr></thead>"
                   "<tbody>")
        for student, entry in losers:
            feedback = (" ".join(f"<a href='{_e(href)}'>{_e(name)}</a>" for name, href in links[student])
                        or "none written")
            out.append(f"<tr><td>{_e(student)}</td><td>{_pts(entry['score'])} / {_pts(entry['max'])}</td>"
                       f"<td>{_e(reason(entry))}</td><td>{feedback}</td></tr>")
        out.append("</tbody></table>")
    else:
        out.append("<p>Every student graded on this exercise got full marks.</p>")
    out.append("</section>")
    return "\n".join(out)


def _links(out_dir: Path, folder: Path) -> list[tuple[str, str]]:
    """(file name, relative URL) of each feedback file that exists."""
    found = []
    for name in FEEDBACK_FILES:
        if (folder / name).is_file():
            rel = os.path.relpath(folder / name, out_dir)
            found.append((name, "/".join(quote(part, safe="") for part in Path(rel).parts)))
    return found


class _Charts:
    """Small SVG charts as <img> tags with data URIs, drawn on Agg canvases (no pyplot, no global
    backend). Fixed margins and title positions: layout passes would double the time."""

    def __init__(self):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
        self.pair = Figure(figsize=(9.2, 2.6), dpi=80)
        self.pair.subplots_adjust(left=0.07, right=0.98, top=0.88, bottom=0.2, wspace=0.75)
        self.axes = hist, bars = self.pair.subplots(1, 2)
        # the axes are kept from one exercise to the next (only their bars and texts change): building
        # axes and ticks anew is a third of the time
        hist.set_ylabel("students")
        hist.yaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
        bars.set_xlabel("students")
        bars.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
        self.single = Figure(dpi=80)
        for figure in (self.pair, self.single):
            FigureCanvasAgg(figure)

    def exercise(self, exercise, scores, maximum, mistakes, counts) -> str:
        """The score distribution and, beside it, the named mistakes (one image: faster than two)."""
        hist, bars = self.axes
        for artist in [*hist.patches, *bars.patches, *bars.texts]:
            artist.remove()
        self._histogram(hist, scores, maximum)
        hist.set_title(f"{exercise}: score distribution", fontsize=10, y=1.02, parse_math=False)
        bars.set_axis_on() if mistakes else bars.set_axis_off()
        if mistakes:
            self._barh(bars, mistakes, counts)
        else:
            bars.text(0.5, 0.5, "no named mistakes", ha="center", va="center", transform=bars.transAxes)
        bars.set_title(f"{exercise}: named mistakes", fontsize=10, y=1.02, parse_math=False)
        return self._img(self.pair, f"{exercise}: score distribution and named mistakes")

    def lost(self, labels, values) -> str:
        from matplotlib.ticker import MaxNLocator
        self.single.set_size_inches(9.2, 1 + 0.22 * len(labels))
        self.single.subplots_adjust(left=0.3, right=0.7, top=1 - 0.35 / (1 + 0.22 * len(labels)),
                                    bottom=0.55 / (1 + 0.22 * len(labels)))
        ax = self.single.subplots()
        ax.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
        self._barh(ax, labels, values)
        ax.set_xlabel("points lost by the whole class")
        ax.set_title("points lost by exercise", fontsize=10, y=1.02)
        return self._img(self.single, "points lost by exercise")

    @staticmethod
    def _histogram(ax, scores, maximum):
        values = sorted(set(scores))
        ticks = sorted({0, maximum, *values})
        span = maximum or 1
        gap = min((b - a for a, b in zip(ticks, ticks[1:])), default=span)
        if gap >= maximum / 12:   # scores on a coarse grid (whole or half points): one bar per score
            heights = [scores.count(v) for v in values]
            ax.bar(values, heights, width=min(0.6 * gap, span / 8), color="#4c72b0")
        else:
            heights, _, _ = ax.hist(scores, bins=10, range=(0, maximum), color="#4c72b0", edgecolor="white")
            ticks = [maximum * i / 5 for i in range(6)]
        ax.set_xticks(ticks, labels=[_pts(v) for v in ticks])
        ax.set_xlim(-span / 10, maximum + span / 10)
        ax.set_ylim(0, max(heights) * 1.05)
        ax.set_xlabel(f"points (of {_pts(maximum)})")

    @staticmethod
    def _barh(ax, labels, values):
        ax.barh(range(len(labels)), values, color="#c44e52")
        ax.set_yticks(range(len(labels)), labels=labels)
        for text in ax.get_yticklabels():
            text.set_parse_math(False)   # a label is shown as written, never as TeX
        pad = max(3 - len(labels), 0) / 2   # bars never too thick
        ax.set_ylim(len(labels) - 0.4 + pad, -0.6 - pad)   # the first label on top
        ax.set_xlim(0, max(values) * 1.05)

    @staticmethod
    def _img(figure, alt) -> str:
        """SVG with its text as text (svg.fonttype "none"): twice as fast as a PNG and smaller. As an
        <img>, never inline, so nothing in it can script the page."""
        import matplotlib
        buf = io.BytesIO()
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "class-report"}):
            figure.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
        data = base64.b64encode(buf.getvalue()).decode("ascii")
        return f"<img alt='{_e(alt)}' src='data:image/svg+xml;base64,{data}'>"


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _pts(x: float) -> str:
    return f"{round(x, 2):g}"


def _anchor(*parts: str) -> str:
    return _e("ex-" + "-".join(parts))


_CSS = """body{font-family:sans-serif;max-width:70em;margin:1em auto;padding:0 1em;color:#222}
h2{border-bottom:1px solid #ccc;margin-top:2em}h2 small{color:#666;font-weight:normal}
section{margin-bottom:2em}img{max-width:100%}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.2em .5em;text-align:left;vertical-align:top}
td:nth-child(3){font-family:monospace;font-size:90%;max-width:40em;word-break:break-word}"""

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Class report</title><style>{css}</style></head>
<body>
{body}
</body></html>
"""
