"""The class report: one static page (`class-report.html`) that tells an instructor what to teach again.

First a summary that fits one screen: the class's totals, the exercises where students who tried
lost most points (not started is counted apart: it says who to chase, not what to teach), then one
row per student in a table sorted by clicking a column's header. Then, for each exercise: how the
scores spread, which catalogued mistakes the class made most often, and the students who lost
most, linked to their feedback. The page works offline: charts are SVG images inside the page as
data URIs, styles are inline, the only script is the table's sorter (allowed by its hash in the
Content-Security-Policy, which forbids any other script and loading anything). Every string a
student controls (folder names, exception messages) is passed through html.escape; links are
percent-encoded relative paths.
"""
from __future__ import annotations

import base64
import hashlib
import html
import io
import os
import statistics
from pathlib import Path
from urllib.parse import quote

from autograder.course import COURSE
from autograder.diagnose.mistakes import CATALOGUE
from autograder.i18n import N_, gettext_, language, pgettext_
from autograder.report.results import by_exercise, mistakes_of, reason, write_atomic

REPORT_NAME = "class-report.html"
WORST = 5          # students listed per exercise
TOP_MISTAKES = 8   # bars per mistake chart
FEEDBACK_FILES = ("feedback.md", "results.json")


def write_class_report(out_dir: Path, results: dict[str, dict], lang: str | None = None) -> Path:
    """Write OUT/class-report.html for {student: results object}, linking the feedback files
    that classroom.grade_many wrote under OUT/students/. In `lang` (None: $AUTOGRADER_LANG, else English)."""
    path = Path(out_dir) / REPORT_NAME
    write_atomic(path, class_report_html(results, Path(out_dir), lang))
    return path


def student_folder(out_dir: Path, student: str) -> Path:
    """Where a class run writes one student's results.json and feedback.md."""
    return Path(out_dir) / "students" / student


class _Words:
    """The page's language: `t(message, **values)` a sentence (its values already escaped), `title(id)`
    a mistake's title, `why(entry)` the reason an exercise lost points."""

    def __init__(self, lang: str | None):
        self.lang = language(lang)

    def t(self, message: str, **values) -> str:
        return gettext_(message, self.lang).format(**values)

    def title(self, mistake: str) -> str:
        return pgettext_("title", CATALOGUE[mistake].title, self.lang)

    def why(self, entry: dict) -> str:
        return reason(entry, self.lang or "en")


def class_report_html(results: dict[str, dict], out_dir: Path, lang: str | None = None) -> str:
    words = _Words(lang)
    exercises = _per_exercise(results)
    links = {s: _links(out_dir, student_folder(out_dir, s)) for s in results}
    charts = _Charts(words)
    body = [_summary(results, exercises, charts, words), _students_table(results, links, words)]
    current = None
    for (lesson, exercise), rows in exercises.items():
        if lesson != current:
            current = lesson
            title = gettext_(COURSE[lesson].title, words.lang) if lesson in COURSE else ""
            body.append(f"<h2 id='{_anchor(lesson)}'>{_e(lesson)} <small>{_e(title)}</small></h2>")
        body.append(_exercise_section(lesson, exercise, rows, links, charts, words))
    return _PAGE.format(css=_CSS, body="\n".join(body), script=_SORTER, script_hash=_SORTER_HASH,
                        lang=(words.lang or "en").replace("_", "-"), title=words.t(N_("Class report")))


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


def not_started(entry: dict) -> bool:
    """The student has not begun this exercise: every failed check is the untouched stub's."""
    return bool(entry["failed"]) and entry["score"] == 0 and all(
        set(mistakes_of(t)) == {"not-implemented"} for t in entry["failed"])


def _summary(results, exercises, charts, words) -> str:
    """At most one screen: totals, not started (apart), where those who tried lost most."""
    fractions = [r["score"] / r["max_score"] for r in results.values() if r.get("max_score")]
    totals = [r["score"] for r in results.values()]
    lost = {key: sum(e["max"] - e["score"] for _, e in rows if not not_started(e)) for key, rows in exercises.items()}
    idle = {key: [s for s, e in rows if not_started(e)] for key, rows in exercises.items()}
    worst = sorted((k for k in lost if lost[k] > 0), key=lambda k: (-lost[k], k))[:5]
    maxima = sorted({r["max_score"] for r in results.values()})
    t = words.t
    out = ["<section id='summary'><h1>" + t(N_("Class report")) + "</h1>", "<ul class='summary'>",
           "<li>" + t(N_("<b>{students}</b> student(s) graded on <b>{exercises}</b> exercise(s)"),
                      students=len(results), exercises=len(exercises)) + "</li>"]
    if totals:
        of = (f" / {_pts(maxima[0])}" if len(maxima) == 1
              else t(N_(" (the maximum differs: not every student handed in every lesson)")))
        out.append("<li>" + t(N_("total score: mean <b>{mean}</b>, median <b>{median}</b>{of}"),
                              mean=_pts(statistics.mean(totals)), median=_pts(statistics.median(totals)), of=_e(of))
                   + "</li>")
    if fractions:
        out.append("<li>" + t(N_("as a share of each student's maximum: mean <b>{mean}</b>, median <b>{median}</b>"),
                              mean=f"{statistics.mean(fractions):.0%}", median=f"{statistics.median(fractions):.0%}")
                   + "</li>")
    out.append("</ul>")
    out.append(_not_started_line(idle, exercises, words))
    if worst:
        items = "".join(f"<li><a href='#{_anchor(*k)}'>{_e(k[0])} / {_e(k[1])}</a>: "
                        + t(N_("{points} points lost in all"), points=_pts(lost[k])) + "</li>" for k in worst)
        top = sorted((k for k in lost if lost[k] > 0), key=lambda k: (-lost[k], k))[:12]
        out.append("<div class='side'><div><h3>" + t(N_("Where the class lost most points")) + "</h3>"
                   "<p class='note'>" + t(N_("by students who started the exercise")) + f"</p><ol>{items}</ol></div>"
                   + charts.lost([f"{k[0][:2]} {k[1]}" for k in top], [lost[k] for k in top]) + "</div>")
    else:
        out.append("<p>" + (t(N_("No exercise lost any points apart from those not started.")) if any(idle.values())
                            else t(N_("No exercise lost any points."))) + "</p>")
    out.append("</section>")
    return "\n".join(out)


def _not_started_line(idle, exercises, words) -> str:
    """Exercises not started, apart from the mistakes: how many students, per exercise."""
    counts = {k: len(v) for k, v in idle.items() if v}
    if not counts:
        return "<p id='not-started'>" + words.t(N_("Every student started every exercise they handed in.")) + "</p>"
    students = len({s for names in idle.values() for s in names})
    items = ", ".join(f"{_e(k[0][:2])} <code>{_e(k[1])}</code> {n}/{len(exercises[k])}"
                      for k, n in sorted(counts.items(), key=lambda kv: -kv[1])[:12])
    more = words.t(N_(" and {n} more"), n=len(counts) - 12) if len(counts) > 12 else ""
    return ("<p id='not-started'>" + words.t(
        N_("<b>Not started</b> (not a mistake, and left out of the points lost below): "
           "{students} student(s), {exercises} exercise(s) in all: {items}{more}."),
        students=students, exercises=sum(counts.values()), items=items, more=more) + "</p>")


def _students_table(results, links, words) -> str:
    """One row per student, in name order; a click on a header sorts by that column."""
    t = words.t
    lessons = [lid for lid in COURSE if any(lid == k[0] for r in results.values() for k in by_exercise(r))]
    head = ("<tr>" + _headers(t(N_("student")), t(N_("score")), t(N_("share")))
            + "".join(f"<th title='{_e(lid)}'>{_e(lid[:2])}</th>" for lid in lessons)
            + _headers(t(N_("not started")), t(N_("feedback"))) + "</tr>")
    rows = []
    for student in sorted(results, key=lambda s: (s.lower(), s)):
        result, entries = results[student], by_exercise(results[student])
        share = result["score"] / result["max_score"] if result.get("max_score") else 0.0
        cells = [f"<td>{_e(student)}</td>",
                 f"<td data-v='{result['score']:g}'>{_pts(result['score'])} / {_pts(result.get('max_score', 0))}</td>",
                 f"<td data-v='{share:.4f}'>{share:.0%}</td>"]
        for lid in lessons:
            mine = [e for k, e in entries.items() if k[0] == lid]
            if mine:
                got, top = sum(e["score"] for e in mine), sum(e["max"] for e in mine)
                cells.append(f"<td data-v='{got / top if top else 0:.4f}'>{_pts(got)}/{_pts(top)}</td>")
            else:
                cells.append("<td data-v='-1'>-</td>")
        idle = sum(1 for e in entries.values() if not_started(e))
        cells.append(f"<td data-v='{idle}'>{idle or ''}</td>")
        feedback = (" ".join(f"<a href='{_e(href)}'>{_e(name)}</a>" for name, href in links[student])
                    or t(N_("none written")))
        cells.append(f"<td>{feedback}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return ("<section id='students'><h2>" + t(N_("Students <small>{n}, one row each; click a header to sort</small>"),
                                              n=len(results)) + "</h2>"
            f"<table class='sortable'><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table></section>")


def _headers(*names: str) -> str:
    return "".join(f"<th>{name}</th>" for name in names)


def _exercise_section(lesson, exercise, rows, links, charts, words) -> str:
    t = words.t
    maximum = max(e["max"] for _, e in rows)
    scores = [e["score"] for _, e in rows]
    full = sum(1 for _, e in rows if e["score"] >= e["max"])
    out = [f"<section id='{_anchor(lesson, exercise)}'><h3>{_e(exercise)}</h3><div class='pair'><div>",
           "<p>" + t(N_("{n} student(s) graded, out of {maximum} point(s): mean {mean}, median {median}; "
                        "{full} with full marks."), n=len(rows), maximum=_pts(maximum),
                     mean=_pts(statistics.mean(scores)), median=_pts(statistics.median(scores)), full=full) + "</p>"]
    counts: dict[str, int] = {}
    started = [(s, e) for s, e in rows if not not_started(e)]
    for _, entry in started:   # each student counts once per mistake
        for mistake in {m for test in entry["failed"] for m in mistakes_of(test)}:
            counts[mistake] = counts.get(mistake, 0) + 1
    top = sorted(counts, key=lambda m: (-counts[m], m))[:TOP_MISTAKES]
    chart = charts.exercise(exercise, scores, maximum, top, [counts[m] for m in top])   # beside the text
    if top:
        items = "".join(f"<li><code>{_e(m)}</code>: " + (  # the title in the sentence: Chinese brackets it otherwise
            t(N_("{n} student(s) ({title})"), n=counts[m], title=_e(words.title(m))) if m in CATALOGUE
            else t(N_("{n} student(s)"), n=counts[m])) + "</li>" for m in top)
        out.append("<p>" + t(N_("Most frequent named mistakes:")) + f"</p><ul>{items}</ul>")
    elif any(e["failed"] for _, e in started):
        out.append("<p>" + t(N_("No failed check matched a catalogued mistake.")) + "</p>")
    idle = [s for s, e in rows if not_started(e)]
    if idle:
        out.append("<p class='idle'>" + t(N_("Not started: {n} student(s) ({names})."), n=len(idle), names=", ".join(
            _e(s) for s in idle[:WORST]) + (", ..." if len(idle) > WORST else "")) + "</p>")
    out.append(f"</div>{chart}</div>")
    losers = sorted((r for r in started if r[1]["score"] < r[1]["max"]),
                    key=lambda r: (r[1]["score"] - r[1]["max"], r[0]))[:WORST]
    if losers:
        out.append("<table><thead><tr>" + _headers(t(N_("student")), t(N_("score")), t(N_("why")), t(N_("feedback")))
                   + "</tr></thead><tbody>")
        for student, entry in losers:
            feedback = (" ".join(f"<a href='{_e(href)}'>{_e(name)}</a>" for name, href in links[student])
                        or t(N_("none written")))
            out.append(f"<tr><td>{_e(student)}</td><td>{_pts(entry['score'])} / {_pts(entry['max'])}</td>"
                       f"<td>{_e(words.why(entry))}</td><td>{feedback}</td></tr>")
        out.append("</tbody></table>")
    elif not idle:
        out.append("<p>" + t(N_("Every student graded on this exercise got full marks.")) + "</p>")
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

    def __init__(self, words):
        self.t = t = words.t
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
        self.pair = Figure(figsize=(8.4, 2.1), dpi=80)
        self.pair.subplots_adjust(left=0.07, right=0.98, top=0.86, bottom=0.24, wspace=0.75)
        self.axes = hist, bars = self.pair.subplots(1, 2)
        # the axes are kept from one exercise to the next (only their bars and texts change): building
        # axes and ticks anew is a third of the time
        hist.set_ylabel(t(N_("students")))
        hist.yaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
        bars.set_xlabel(t(N_("students")))
        bars.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
        self.single = Figure(dpi=80)
        for figure in (self.pair, self.single):
            FigureCanvasAgg(figure)

    def exercise(self, exercise, scores, maximum, mistakes, counts) -> str:
        """The score distribution and, beside it, the named mistakes (one image: faster than two)."""
        hist, bars = self.axes
        t = self.t
        for artist in [*hist.patches, *bars.patches, *bars.texts]:
            artist.remove()
        self._histogram(hist, scores, maximum, t)
        hist.set_title(t(N_("score distribution")), fontsize=10, y=1.02)   # the exercise is the heading above
        bars.set_axis_on() if mistakes else bars.set_axis_off()
        if mistakes:
            self._barh(bars, mistakes, counts)
        else:
            bars.text(0.5, 0.5, t(N_("no named mistakes")), ha="center", va="center", transform=bars.transAxes)
        bars.set_title(t(N_("named mistakes (students who started)")), fontsize=10, y=1.02)
        return self._img(self.pair, t(N_("{exercise}: score distribution and named mistakes"), exercise=exercise))

    def lost(self, labels, values) -> str:
        from matplotlib.ticker import MaxNLocator
        height = 1 + 0.2 * len(labels)   # at most ~3.4 in (270 px) for 12 bars: the summary fits a screen
        self.single.set_size_inches(6.4, height)
        self.single.subplots_adjust(left=0.42, right=0.96, top=1 - 0.35 / height, bottom=0.55 / height)
        ax = self.single.subplots()
        ax.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
        self._barh(ax, labels, values)
        ax.set_xlabel(self.t(N_("points lost by students who started")))
        ax.set_title(self.t(N_("points lost by exercise")), fontsize=10, y=1.02)
        return self._img(self.single, self.t(N_("points lost by exercise")))

    @staticmethod
    def _histogram(ax, scores, maximum, t):
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
        ax.set_xlabel(t(N_("points (of {maximum})"), maximum=_pts(maximum)))

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
        import warnings
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "class-report"}), \
                warnings.catch_warnings():
            # the SVG keeps its text as text, drawn by the browser's fonts: the Agg font's missing CJK
            # glyphs only make its measures approximate
            warnings.filterwarnings("ignore", message="Glyph .* missing from font")
            figure.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
        data = base64.b64encode(buf.getvalue()).decode("ascii")
        return f"<img alt='{_e(alt)}' src='data:image/svg+xml;base64,{data}'>"


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _pts(x: float) -> str:
    return f"{round(x, 2):g}"


def _anchor(*parts: str) -> str:
    return _e("ex-" + "-".join(parts))


_CSS = """body{font-family:sans-serif;max-width:78em;margin:1em auto;padding:0 1em;color:#222}
h1{margin:.2em 0}h2{border-bottom:1px solid #ccc;margin-top:1.5em}h2 small{color:#666;font-weight:normal;font-size:60%}
h3{margin:.6em 0 .2em}.note{color:#666;margin:0;font-size:90%}ul.summary{margin:.3em 0}
.side{display:flex;gap:1.5em;align-items:flex-start}.side>div{flex:0 0 24em}.side img{min-width:0;flex:0 1 auto}
.pair{display:flex;gap:1em;align-items:flex-start}.pair>div{flex:1 1 20em}.pair>img{flex:0 1 auto;min-width:0}
section{margin-bottom:1.5em}img{max-width:100%}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.2em .5em;text-align:left;vertical-align:top}
section[id^=ex-] td:nth-child(3){font-family:monospace;font-size:90%;max-width:40em;word-break:break-word}
table.sortable th{cursor:pointer;background:#f4f4f4;white-space:nowrap}table.sortable td{white-space:nowrap}
table.sortable td:first-child{white-space:normal;max-width:20em;word-break:break-word}
table.sortable th[data-order=asc]::after{content:" \\25b2"}table.sortable th[data-order=desc]::after{content:" \\25bc"}"""

# The table's sorter: a click on a header sorts the rows by that column (numbers by data-v).
_SORTER = """document.querySelectorAll('table.sortable th').forEach((th, i) => th.addEventListener('click', () => {
  const asc = th.dataset.order !== 'asc', body = th.closest('table').tBodies[0];
  th.parentElement.querySelectorAll('th').forEach(h => delete h.dataset.order);
  th.dataset.order = asc ? 'asc' : 'desc';
  const cmp = (x, y) => { const a = x.cells[i], b = y.cells[i];
    return 'v' in a.dataset ? a.dataset.v - b.dataset.v : a.textContent.localeCompare(b.textContent); };
  body.append(...Array.from(body.rows).sort((x, y) => cmp(x, y) * (asc ? 1 : -1)));
}));"""
_SORTER_HASH = base64.b64encode(hashlib.sha256(_SORTER.encode()).digest()).decode()

_PAGE = """<!DOCTYPE html>
<html lang="{lang}"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><style>{css}</style></head>
<body>
{body}
<script>{script}</script>
</body></html>
"""
