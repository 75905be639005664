"""What a translation may change in a demo cell: the text it shows the reader, nothing else
(autograder/deliver/code_strings.py)."""
from __future__ import annotations

import pytest

from autograder.deliver.code_strings import check_same_code, shown_literals, substitute

DEMO = '''\
def helper(x):
    """A docstring stays."""
    raise ValueError("an error message is code")

d = {"weights": 1}
print("each row sums to", d["weights"], f"{x:.3f} at step {i}")
ax.set_title("Self-attention weights"); ax.imshow(w, cmap="viridis")
ax.plot(x, y, "o-", label="measured" if ok else "expected")
ax.set(xlabel="sequence length T", yscale="log")
plt.savefig("figure.png")
assert ok, f"off by {gap:.2f}"
'''


def texts(source):
    return [lit.text for lit in shown_literals(source)]


def test_only_what_the_reader_sees_is_extracted():
    assert texts(DEMO) == ["each row sums to", "{x:.3f} at step {i}", "Self-attention weights",
                           "measured", "expected", "sequence length T", "off by {gap:.2f}"]


def test_a_table_label_is_translated_with_the_keys_it_becomes():
    cell = '''\
timings = {}
for name, run in (("with the cache", f), ("without a cache", g)):
    timings[name] = run()
for name, seconds in timings.items():
    print(f"{name}: {seconds:.2f} s")
print(timings["with the cache"] / timings["without a cache"])
'''
    assert texts(cell) == ["with the cache", "without a cache"]   # "{name}: ... s" has no word
    out = substitute(cell, {"with the cache": "用缓存", "without a cache": "不用缓存"})
    assert 'timings["用缓存"] / timings["不用缓存"]' in out and "with" not in out
    namespace = {"f": lambda: 1.0, "g": lambda: 4.0}
    exec(compile(out, "<zh>", "exec"), namespace)   # the keys still meet


@pytest.mark.parametrize("cell", [
    # the label's key is built from it: translating the label would miss the key
    'for name in ("naive", "flash"):\n    row[name + " s"] = 1\n    print(name)\nprint(row["naive s"])\n',
    # the label is written again inside an f-string's placeholder, where it is not substituted
    'for name, f in (("cached", f1),):\n    t[name] = f()\n    print(name)\nprint(f"{t[\'cached\']:.1f}")\n',
])
def test_a_label_that_is_also_code_stays_english(cell):
    assert texts(cell) == []


def test_substitution_keeps_placeholders_escapes_and_code():
    cell = 'print(f"head {i}: scaled scores\\n{s.round(3)}")\n'
    assert texts(cell) == ["head {i}: scaled scores\\n{s.round(3)}"]
    good = substitute(cell, {"head {i}: scaled scores\\n{s.round(3)}": "头 {i}：缩放后的分数\\n{s.round(3)}"})
    assert good == 'print(f"头 {i}：缩放后的分数\\n{s.round(3)}")\n'
    for bad in ("头：{s.round(4)}", "头 {i} {j}", "头 {i:.2f}\\n{s.round(3)}", '头 {i}" + str(1) + "{s.round(3)}'):
        with pytest.raises(ValueError):
            substitute(cell, {"head {i}: scaled scores\\n{s.round(3)}": bad})
    # a placeholder may move: Chinese word order differs
    moved = substitute('print(f"{n} tokens per second")\n', {"{n} tokens per second": "每秒 {n} 个词元"})
    assert moved == 'print(f"每秒 {n} 个词元")\n'


def test_check_same_code_sees_any_change_outside_literals():
    check_same_code('print("a", x)\n', 'print("甲", x)\n')
    with pytest.raises(ValueError):
        check_same_code('print("a", x)\n', 'print("a", y)\n')
    with pytest.raises(ValueError):
        check_same_code('print(f"{x:.3f}")\n', 'print(f"{x:.4f}")\n')


def test_an_html_tables_rows_are_the_readers_text_and_its_markup_code_stays():
    cell = '''\
def cell_html(m):
    rows = "".join(f"<td style='padding:1px'>{x:.4f}</td>" for x in m)
    return f"<table style='font-family:monospace'>{rows}</table>"

rows = []
for key in KEYS:
    verdict = "not printed" if key not in seen else ("<b>wrong</b>" if key in bad else "right")
    rows.append(f"<tr><td>{key}</td><td>{cell_html(seen[key]) if key in seen else 'missing'}</td>"
                f"<td>{d['weights']}</td><td>{verdict}</td></tr>")
display(HTML("<table><tr><th>value</th><th>verdict</th></tr>" + "".join(rows) + "</table>"))
'''
    assert texts(cell) == [
        "not printed", "<b>wrong</b>", "right",
        "<tr><td>{key}</td><td>{cell_html(seen[key]) if key in seen else 'missing'}</td>",
        "<table><tr><th>value</th><th>verdict</th></tr>"]
    row = "<tr><td>{key}</td><td>{cell_html(seen[key]) if key in seen else '%s'}</td>"
    out = substitute(cell, {"right": "对", row % "missing": row % "缺"})
    assert "'缺'" in out and '"对"' in out and "d['weights']" in out and "font-family" in out
    # a list shown without being joined, a name read as code too: not the reader's text
    assert texts('rows = []\nrows.append("a row")\nprint(rows)\nlabel = "value"\nprint(label, d[label])\n') == []
