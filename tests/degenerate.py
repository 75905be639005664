"""Answers that do nothing: for every exercise of lessons 01-08 and 10, stand-ins whose output is constant,
all zero, all False, empty, or independent of the input (and modules that return their input or a
bias). Each must score exactly 0 (issue 23: "doing nothing earns nothing").

STANDINS[lesson_id][grade_id] is a list of (kind, source); the source defines the graded name.
tests/corpus/degenerate_*.py holds each of them as a corpus entry (tests/test_degenerate.py checks
that the files are in step with this table, and grades the family in-process; tests/test_corpus.py
grades the files through the sandbox and asserts 0 points on each).
"""
from __future__ import annotations

import textwrap

PRELUDE = "import math\nimport numpy as np\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def _src(text: str) -> str:
    return textwrap.dedent(text).strip("\n") + "\n"


# ------------------------------------------------------------------------------ NumPy lessons

_SOFTMAX = {
    "zeros": "def softmax(x, axis=-1):\n    return np.zeros_like(np.asarray(x, dtype=float))\n",
    "constant": "def softmax(x, axis=-1):\n    return np.full(np.shape(x), 0.5)\n",
    "uniform": "def softmax(x, axis=-1):\n    x = np.asarray(x, dtype=float)\n    return np.ones_like(x) / x.shape[axis]\n",
    "empty": "def softmax(x, axis=-1):\n    return np.array([])\n",
}

_ATTENTION = {
    "zeros": _src("""
        def scaled_dot_product_attention(q, k, v, mask=None):
            q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
            lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2])
            return np.zeros(lead + (q.shape[-2], v.shape[-1])), np.zeros(lead + (q.shape[-2], k.shape[-2]))
        """),
    "uniform": _src("""
        def scaled_dot_product_attention(q, k, v, mask=None):
            q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
            lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2])
            weights = np.full(lead + (q.shape[-2], k.shape[-2]), 1.0 / k.shape[-2])
            return np.zeros(lead + (q.shape[-2], v.shape[-1])), weights
        """),
    "empty": _src("""
        def scaled_dot_product_attention(q, k, v, mask=None):
            return np.array([]), np.array([])
        """),
}

_CAUSAL = {
    "all-false": "def causal_mask(seq_len):\n    return np.zeros((seq_len, seq_len), dtype=bool)\n",
    "all-true": "def causal_mask(seq_len):\n    return np.ones((seq_len, seq_len), dtype=bool)\n",
    "zeros-int": "def causal_mask(seq_len):\n    return np.zeros((seq_len, seq_len), dtype=np.int64)\n",
    "empty": "def causal_mask(seq_len):\n    return np.zeros((0, 0), dtype=bool)\n",
}

_PADDING = {
    "all-false": _src("""
        def padding_mask(lengths, max_len):
            return np.zeros((len(lengths), 1, max_len), dtype=bool)
        """),
    "all-true": _src("""
        def padding_mask(lengths, max_len):
            return np.ones((len(lengths), 1, max_len), dtype=bool)
        """),
    "empty": "def padding_mask(lengths, max_len):\n    return np.zeros((0, 1, 0), dtype=bool)\n",
}

_WORKED = {
    "zeros": _src("""
        def worked_example():
            shapes = {"Q1": (3, 2), "K1": (3, 2), "V1": (3, 2), "Q2": (3, 2), "K2": (3, 2), "V2": (3, 2),
                      "scores1": (3, 3), "scores2": (3, 3), "weights1": (3, 3), "weights2": (3, 3),
                      "head1": (3, 2), "head2": (3, 2), "concat": (3, 4)}
            return {key: np.zeros(shape) for key, shape in shapes.items()}
        """),
    "empty": "def worked_example():\n    return {}\n",
}

_ERRORS = {
    "empty": "def published_errors():\n    return set()\n",
    "every-printed-key": _src("""
        def published_errors():
            return {"Q1", "K1", "V1", "Q2", "K2", "V2", "scores1", "weights1", "weights2", "head1", "head2",
                    "concat"}
        """),
    "every-key": _src("""
        def published_errors():
            return {"Q1", "K1", "V1", "Q2", "K2", "V2", "scores1", "scores2", "weights1", "weights2", "head1",
                    "head2", "concat"}
        """),
}

# ------------------------------------------------------------------------------ PyTorch lessons

_HEAD = {
    "zeros": _src("""
        class SelfAttentionHead(nn.Module):
            def __init__(self, d_model, d_k):
                super().__init__()
                self.w_q = nn.Linear(d_model, d_k)
                self.w_k = nn.Linear(d_model, d_k)
                self.w_v = nn.Linear(d_model, d_k)
                self.d_k = d_k

            def forward(self, x, mask=None):
                return torch.zeros(x.shape[0], x.shape[1], self.d_k)
        """),
    "bias-only": _src("""
        class SelfAttentionHead(nn.Module):
            def __init__(self, d_model, d_k):
                super().__init__()
                self.w_q = nn.Linear(d_model, d_k)
                self.w_k = nn.Linear(d_model, d_k)
                self.w_v = nn.Linear(d_model, d_k)

            def forward(self, x, mask=None):
                return self.w_v.bias.expand(x.shape[0], x.shape[1], -1).clone()
        """),
    "no-parameters": _src("""
        class SelfAttentionHead(nn.Module):
            def __init__(self, d_model, d_k):
                super().__init__()
                self.d_k = d_k

            def forward(self, x, mask=None):
                return torch.zeros(x.shape[0], x.shape[1], self.d_k)
        """),
}

_SPLIT = {
    "zeros": _src("""
        def split_heads(x, num_heads):
            B, T, D = x.shape
            return torch.zeros(B, num_heads, T, D // num_heads)
        """),
    "constant": _src("""
        def split_heads(x, num_heads):
            B, T, D = x.shape
            return torch.ones(B, num_heads, T, D // num_heads)
        """),
}

_MERGE = {
    "zeros": _src("""
        def merge_heads(x):
            B, h, T, d = x.shape
            return torch.zeros(B, T, h * d)
        """),
    "constant": _src("""
        def merge_heads(x):
            B, h, T, d = x.shape
            return torch.ones(B, T, h * d)
        """),
}

_MHA_INIT = """
            def __init__(self, d_model, num_heads, dropout=0.0):
                super().__init__()
                if d_model % num_heads != 0:
                    raise ValueError("d_model must be divisible by num_heads")
                self.w_q = nn.Linear(d_model, d_model)
                self.w_k = nn.Linear(d_model, d_model)
                self.w_v = nn.Linear(d_model, d_model)
                self.w_o = nn.Linear(d_model, d_model)
"""
_MHA = {
    "zeros-no-parameters": _src("""
        class MultiHeadAttention(nn.Module):
            def __init__(self, d_model, num_heads, dropout=0.0):
                super().__init__()

            def forward(self, query, key, value, mask=None):
                return torch.zeros_like(query)
        """),
    "zeros": _src("""
        class MultiHeadAttention(nn.Module):""" + _MHA_INIT + """
            def forward(self, query, key, value, mask=None):
                return torch.zeros_like(query)
        """),
    "bias-only": _src("""
        class MultiHeadAttention(nn.Module):""" + _MHA_INIT + """
            def forward(self, query, key, value, mask=None):
                return self.w_o.bias.expand_as(query).clone()
        """),
    "returns-query": _src("""
        class MultiHeadAttention(nn.Module):""" + _MHA_INIT + """
            def forward(self, query, key, value, mask=None):
                return query.clone()
        """),
}

_TEST_PROJECTIONS = {
    "passes-everything": "def test_projections(mha_class):\n    pass\n",
    "fails-everything": "def test_projections(mha_class):\n    raise AssertionError('always')\n",
}

_FIXED_INIT = """
            def __init__(self, d_model, num_heads, dropout=0.0):
                super().__init__()
                self.q_project = nn.Linear(d_model, d_model)
                self.k_project = nn.Linear(d_model, d_model)
                self.v_project = nn.Linear(d_model, d_model)
                self.o_project = nn.Linear(d_model, d_model)
"""
_FIXED = {
    "zeros": _src("""
        class FixedMultiHeadAttention(nn.Module):""" + _FIXED_INIT + """
            def forward(self, x, attn_mask=None):
                return torch.zeros_like(x)
        """),
    "returns-input": _src("""
        class FixedMultiHeadAttention(nn.Module):""" + _FIXED_INIT + """
            def forward(self, x, attn_mask=None):
                return x.clone()
        """),
}

_PE = {
    "zeros": _src("""
        def positional_encoding(seq_len, d_model):
            if d_model % 2:
                raise ValueError("d_model must be even")
            return torch.zeros(seq_len, d_model)
        """),
    "constant": _src("""
        def positional_encoding(seq_len, d_model):
            if d_model % 2:
                raise ValueError("d_model must be even")
            return torch.ones(seq_len, d_model)
        """),
    "position-independent": _src("""
        def positional_encoding(seq_len, d_model):
            if d_model % 2:
                raise ValueError("d_model must be even")
            row = torch.zeros(d_model)
            row[1::2] = 1.0
            return row.expand(seq_len, d_model).clone()
        """),
}

_BLOCK_INIT = """
            def __init__(self, d_model, num_heads, d_ff, dropout=0.0):
                super().__init__()
                self.attn = nn.MultiheadAttention(d_model, num_heads, dropout=dropout, batch_first=True)
                self.norm1 = nn.LayerNorm(d_model)
                self.norm2 = nn.LayerNorm(d_model)
                self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))
"""
_BLOCK = {
    "zeros": _src("""
        class TransformerBlock(nn.Module):""" + _BLOCK_INIT + """
            def forward(self, x, mask=None):
                return torch.zeros_like(x)
        """),
    "returns-input": _src("""
        class TransformerBlock(nn.Module):""" + _BLOCK_INIT + """
            def forward(self, x, mask=None):
                return x.clone()
        """),
    "bias-only": _src("""
        class TransformerBlock(nn.Module):""" + _BLOCK_INIT + """
            def forward(self, x, mask=None):
                return self.ff[2].bias.expand_as(x).clone()
        """),
}

_REPEAT = {
    "zeros": _src("""
        def repeat_kv(x, n_rep):
            B, h, T, d = x.shape
            return torch.zeros(B, h * n_rep, T, d)
        """),
    "constant": _src("""
        def repeat_kv(x, n_rep):
            B, h, T, d = x.shape
            return torch.ones(B, h * n_rep, T, d)
        """),
}

_CSA_INIT = """
            def __init__(self, d_model, num_heads, num_kv_heads=None):
                super().__init__()
                num_kv_heads = num_kv_heads or num_heads
                if d_model % num_heads or num_heads % num_kv_heads:
                    raise ValueError("bad head counts")
                self.h, self.h_kv, self.d_k = num_heads, num_kv_heads, d_model // num_heads
                self.w_q = nn.Linear(d_model, d_model)
                self.w_k = nn.Linear(d_model, num_kv_heads * self.d_k)
                self.w_v = nn.Linear(d_model, num_kv_heads * self.d_k)
                self.w_o = nn.Linear(d_model, d_model)
"""
_CSA = {
    "zeros": _src("""
        class CausalSelfAttention(nn.Module):""" + _CSA_INIT + """
            def forward(self, x, cache=None):
                return torch.zeros_like(x), cache
        """),
    "zeros-with-cache": _src("""
        class CausalSelfAttention(nn.Module):""" + _CSA_INIT + """
            def forward(self, x, cache=None):
                B, T, _ = x.shape
                k = self.w_k(x).view(B, T, self.h_kv, self.d_k).transpose(1, 2)
                v = self.w_v(x).view(B, T, self.h_kv, self.d_k).transpose(1, 2)
                if cache is not None:
                    k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
                return torch.zeros_like(x), (k, v)
        """),
    "returns-input": _src("""
        class CausalSelfAttention(nn.Module):""" + _CSA_INIT + """
            def forward(self, x, cache=None):
                return x.clone(), cache
        """),
}

# ------------------------------------------------------------------------------ lesson 10 (NumPy)

_COMBINE = {
    "zeros": "def combine_attention(out1, lse1, out2, lse2):\n    return np.zeros_like(out1), np.zeros_like(lse1)\n",
    "constant": "def combine_attention(out1, lse1, out2, lse2):\n    return np.full(np.shape(out1), 0.5), np.ones(np.shape(lse1))\n",
    "first-set": "def combine_attention(out1, lse1, out2, lse2):\n    return np.array(out1), np.array(lse1)\n",
}

_FLASH = {
    "zeros": _src("""
        def flash_attention(q, k, v, causal=False, block_size=64):
            return np.zeros(q.shape[:-1] + (v.shape[-1],)), np.zeros(q.shape[:-1])
        """),
    "constant": _src("""
        def flash_attention(q, k, v, causal=False, block_size=64):
            return np.full(q.shape[:-1] + (v.shape[-1],), 0.5), np.full(q.shape[:-1], 1.0)
        """),
    "mean-of-values": _src("""
        def flash_attention(q, k, v, causal=False, block_size=64):
            out = np.broadcast_to(v.mean(axis=-2, keepdims=True), q.shape[:-1] + (v.shape[-1],)).copy()
            return out, np.full(q.shape[:-1], np.log(k.shape[-2]))
        """),
}

STANDINS: dict[str, dict[str, dict[str, str]]] = {
    "01_scaled_dot_product_attention": {"softmax": _SOFTMAX, "scaled_dot_product_attention": _ATTENTION},
    "02_masking": {"causal_mask": _CAUSAL, "padding_mask": _PADDING, "scaled_dot_product_attention": _ATTENTION},
    "03_self_attention_head": {"SelfAttentionHead": _HEAD},
    "04_worked_example": {"worked_example": _WORKED, "published_errors": _ERRORS},
    "05_multi_head_attention": {"split_heads": _SPLIT, "merge_heads": _MERGE, "MultiHeadAttention": _MHA},
    "06_debugging_projection_reuse": {"test_projections": _TEST_PROJECTIONS, "FixedMultiHeadAttention": _FIXED},
    "07_transformer_block": {"positional_encoding": _PE, "TransformerBlock": _BLOCK},
    "08_fast_attention": {"repeat_kv": _REPEAT, "CausalSelfAttention": _CSA},
    "10_flash_attention": {"combine_attention": _COMBINE, "flash_attention": _FLASH},
}


# The catalogued mistake a stand-in does have, where one fits (an empty array has the wrong shape; an
# integer mask the wrong type; a test that passes everything misses the bug): the grader must name it.
NAMED = {("softmax", "empty"): "wrong-shape", ("scaled_dot_product_attention", "empty"): "wrong-shape",
         ("causal_mask", "empty"): "wrong-shape", ("causal_mask", "zeros-int"): "wrong-type",
         ("padding_mask", "empty"): "wrong-shape",
         ("test_projections", "passes-everything"): "test-misses-bug",
         ("test_projections", "fails-everything"): "test-rejects-correct"}


def corpus_name(lesson: str, grade_id: str, kind: str) -> str:
    return f"degenerate_{lesson[:2]}_{grade_id.lower()}_{kind.replace('-', '_')}"


def corpus_text(lesson: str, grade_id: str, kind: str) -> str:
    return (f"# lesson: {lesson}\n"
            f"# source: tests/degenerate.py ({kind}): an answer that does nothing; it must score 0\n"
            f"# expect: wrong {grade_id} {NAMED.get((grade_id, kind), '-')}\n"
            f"# %% {grade_id}\n{STANDINS[lesson][grade_id][kind]}")


def family():
    """(lesson, grade_id, kind, source) for every stand-in."""
    for lesson, exercises in STANDINS.items():
        for grade_id, kinds in exercises.items():
            for kind, source in kinds.items():
                yield lesson, grade_id, kind, source


def write_corpus(folder) -> list[str]:
    from pathlib import Path
    names = []
    for lesson, grade_id, kind, _ in family():
        name = corpus_name(lesson, grade_id, kind)
        (Path(folder) / f"{name}.py").write_text(corpus_text(lesson, grade_id, kind), encoding="utf-8")
        names.append(name)
    return names
