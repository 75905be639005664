"""Malformed submissions get a clear message and a correct grade for everything unaffected."""
from __future__ import annotations

import json

import nbformat

from autograder.course import COURSE
from autograder.report.results import by_exercise
from conftest import notebook_with

L01 = "01_scaled_dot_product_attention"
L02 = "02_masking"
SOFTMAX = '''def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
'''
ATTENTION = '''def scaled_dot_product_attention(q, k, v, mask=None):
    w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
    return w @ v, w
'''
CAUSAL = "def causal_mask(seq_len):\n    return np.tril(np.ones((seq_len, seq_len), dtype=bool))\n"


def scores(results, lesson=L01):
    return {ex: (e["score"], e["max"]) for (les, ex), e in by_exercise(results).items() if les == lesson}


def text(results):
    return json.dumps(results)


def full(score):
    return score[0] == score[1] > 0


def solved(folder):
    return json.loads(notebook_with(L01, {"softmax": SOFTMAX, "scaled_dot_product_attention": ATTENTION},
                                    folder).read_text())


def write(folder, nb, name=L01):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.ipynb"
    path.write_text(json.dumps(nb) if not isinstance(nb, str) else nb)
    return path


def test_empty_file(grade, tmp_path):
    r = grade({L01: write(tmp_path, "")})
    assert r["score"] == 0 and "the file is empty" in text(r)


def test_not_json(grade, tmp_path):
    r = grade({L01: write(tmp_path, "{ not json")})
    assert r["score"] == 0 and "not valid JSON" in text(r)


def test_json_but_not_a_notebook(grade, tmp_path):
    r = grade({L01: write(tmp_path, {"hello": "world"})})
    assert r["score"] == 0 and "not a Jupyter notebook" in text(r)


def test_old_nbformat_is_converted(grade, tmp_path):
    nb4 = nbformat.reads(json.dumps(solved(tmp_path / "v4")), as_version=4)
    for cell in nb4.cells:
        cell.pop("id", None)
    nb4.nbformat_minor = 4
    v3 = nbformat.convert(nb4, 3)
    r = grade({L01: write(tmp_path / "v3", nbformat.writes(v3, version=3))})
    s = scores(r)
    assert full(s["softmax"]) and full(s["scaled_dot_product_attention"]), r
    assert "old format" in r["output"]


def test_stripped_metadata_found_by_name(grade, tmp_path):
    nb = solved(tmp_path / "a")
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "softmax":
            cell["metadata"] = {}
    r = grade({L01: write(tmp_path / "b", nb)})
    assert full(scores(r)["softmax"]) and "found by name" in r["output"]


def test_cells_deleted_duplicated_and_reordered(grade, tmp_path):
    nb = solved(tmp_path / "a")
    cells = nb["cells"]
    graded = {c["metadata"]["nbgrader"]["grade_id"]: c for c in cells
              if c.get("metadata", {}).get("nbgrader", {}).get("solution")}
    demos = [c for c in cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id", "").startswith("demo")]
    rest = [c for c in cells if c not in demos and c not in graded.values()]
    nb["cells"] = [graded["scaled_dot_product_attention"]] + rest + [graded["softmax"], graded["softmax"]]
    r = grade({L01: write(tmp_path / "b", nb)})
    s = scores(r)
    # softmax is graded once it is defined, even though its self-check now stands above it
    assert full(s["softmax"]), r
    assert "appears 2 times" in r["output"]
    # attention's self-check runs before softmax exists, so it fails there, as Restart & Run All
    # would show the student, and the message says why
    assert s["scaled_dot_product_attention"][0] == 0
    assert "softmax" in text(r) and "not defined" in text(r)


def test_deleted_graded_cell(grade, tmp_path):
    nb = solved(tmp_path / "a")
    nb["cells"] = [c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") != "softmax"]
    r = grade({L01: write(tmp_path / "b", nb)})
    s = scores(r)
    assert s["softmax"][0] == 0 and "no cell defines softmax" in text(r)
    # the attention cell calls softmax, so it fails too, but with a reason, not a crash
    assert all(t["status"] == "failed" for t in r["tests"] if "exercise:softmax" in t["tags"])


def test_syntax_error_costs_only_its_exercise(grade, tmp_path):
    path = notebook_with(L02, {"causal_mask": "def causal_mask(seq_len)\n    return None\n",
                               "padding_mask": "def padding_mask(lengths, max_len):\n"
                                               "    return (np.arange(max_len) < np.asarray(lengths)[:, None])[:, None]\n"},
                         tmp_path)
    r = grade({L02: path})
    s = scores(r, L02)
    assert s["causal_mask"][0] == 0 and full(s["padding_mask"])
    assert "SyntaxError" in text(r) and "causal_mask, line 1" in text(r)


def test_renamed_function(grade, tmp_path):
    path = notebook_with(L02, {"causal_mask": CAUSAL.replace("causal_mask", "make_causal_mask")}, tmp_path)
    r = grade({L02: path})
    assert scores(r, L02)["causal_mask"][0] == 0
    assert "defines make_causal_mask" in text(r)


def test_wrong_signature(grade, tmp_path):
    path = notebook_with(L01, {"softmax": "def softmax(x):\n    e = np.exp(x - x.max())\n    return e / e.sum()\n"},
                         tmp_path)
    r = grade({L01: path})
    assert scores(r)["softmax"][0] < scores(r)["softmax"][1]
    assert "mistake:wrong-signature" in text(r) and "unexpected keyword argument 'axis'" in text(r)


def test_nan_and_wrong_type_results(grade, tmp_path):
    path = notebook_with(L01, {"softmax": "def softmax(x, axis=-1):\n    return x * np.nan\n",
                               "scaled_dot_product_attention": "def scaled_dot_product_attention(q, k, v, mask=None):\n"
                                                               "    return 'attention!'\n"}, tmp_path)
    r = grade({L01: path})
    assert r["score"] == 0
    assert "values are NaN where the reference is not NaN" in text(r)
    assert "returned str" in text(r) and "mistake:wrong-type" in text(r)


def test_non_utf8_bytes(grade, tmp_path):
    nb = solved(tmp_path / "a")
    nb["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": "PLACEHOLDER"})
    raw = json.dumps(nb).encode().replace(b"PLACEHOLDER", b"caf\xe9 \xff")
    path = tmp_path / "b" / f"{L01}.ipynb"
    path.parent.mkdir()
    path.write_bytes(raw)
    r = grade({L01: path})
    assert full(scores(r)["softmax"]) and "not valid UTF-8" in r["output"]


def test_fifty_megabytes_of_outputs(grade, tmp_path):
    nb = solved(tmp_path / "a")
    blob = "x" * (1024 * 1024)
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": blob}] * 8
    path = write(tmp_path / "b", nb)
    assert path.stat().st_size > 50 * 1024 * 1024
    r = grade({L01: path})
    s = scores(r)
    assert full(s["softmax"]) and full(s["scaled_dot_product_attention"])


def test_edited_locked_cell_runs_as_released(grade, tmp_path):
    nb = solved(tmp_path / "a")
    for cell in nb["cells"]:
        if "setup" in cell.get("metadata", {}).get("tags", []):
            cell["source"] = "import numpy as np\nnp.exp = lambda x: x  # sabotage\n" + "".join(cell["source"])
    r = grade({L01: write(tmp_path / "b", nb)})
    s = scores(r)
    assert full(s["softmax"]) and "edited the locked cell" in r["output"]
    assert COURSE[L01].released_path.exists()
