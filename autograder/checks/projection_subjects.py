"""The classes lesson 06's `test_projections` is graded on, written for the checks alone.

None of them is the lesson's reference (`FixedMultiHeadAttention`) or its `BuggyMultiHeadAttention`:
no reference class ever enters the student's process. There are four independent styles of
writing the layer (separate projections with view/transpose, one fused matmul with einsum, a loop
over heads, PyTorch's fused scaled_dot_product_attention), and each style comes in four routings:

    correct      keys from k_project, values from v_project
    buggy        keys and values from q_project (the lesson's bug)
    keys-only    keys from q_project
    values-only  values from q_project

Every variant has the same class name and the same methods; the routing is only which Linear
sits in which slot of a list whose attribute name is salted per variant, so a test cannot tell
them apart by name, by a label or by a hash of the code: only by what the layer computes (or by
taking the layer apart, which is finding the bug). The checks run each variant in a fresh
sandboxed process of its own that has run only the student's definitions (no memory, scratch
folder or process shared with the notebook's run or another variant), all variants in one order
drawn from the course secret (or anew for every grading run without one), so counting calls does
not help either. (In-process subjects can always be
inspected; computing them in another process would close even that.) tests/test_lesson06_subjects.py proves each
correct variant equal to nn.MultiheadAttention and each wrong one different.
"""
from __future__ import annotations

import random

CLASS_NAME = "MultiHeadAttention"
ROUTES = {
    "correct": ("q_project", "k_project", "v_project"),
    "buggy": ("q_project", "q_project", "q_project"),
    "keys-only": ("q_project", "q_project", "v_project"),
    "values-only": ("q_project", "k_project", "q_project"),
}

_INIT = '''
    def __init__(self, d_model, num_heads, dropout):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads, self.p = num_heads, dropout
        self.q_project = nn.Linear(d_model, d_model)
        self.k_project = nn.Linear(d_model, d_model)
        self.v_project = nn.Linear(d_model, d_model)
        self.o_project = nn.Linear(d_model, d_model)
        object.__setattr__(self, "{slot}", [self.{q}, self.{k}, self.{v}])   # a plain list, not submodules

    def _qkv(self, x):
        return [project(x) for project in self.{slot}]              # 3 x (B, T, D)

    def _weights(self, scores, attn_mask):
        if attn_mask is not None:
            allowed = attn_mask.bool()[:, None].expand_as(scores)   # (B, h, T, T)
            scores = scores.masked_fill(~allowed, float("-inf"))
        weights = torch.nan_to_num(torch.softmax(scores, -1), nan=0.0)   # blocked rows read nothing
        return F.dropout(weights, self.p, training=self.training)
'''

STYLES = {
    # separate projections, heads split with view + transpose
    "split": '''
    def forward(self, x, attn_mask=None):
        B, T, D = x.shape
        h, d = self.num_heads, D // self.num_heads
        q, k, v = (t.view(B, T, h, d).transpose(1, 2) for t in self._qkv(x))      # (B, h, T, d)
        w = self._weights(q @ k.transpose(-2, -1) / math.sqrt(d), attn_mask)       # (B, h, T, T)
        return self.o_project((w @ v).transpose(1, 2).reshape(B, T, D))
''',
    # heads as an einsum axis
    "einsum": '''
    def forward(self, x, attn_mask=None):
        B, T, D = x.shape
        h = self.num_heads
        q, k, v = (t.reshape(B, T, h, D // h) for t in self._qkv(x))              # (B, T, h, d)
        s = torch.einsum("bqhd,bkhd->bhqk", q, k) * (D // h) ** -0.5               # (B, h, T, T)
        w = self._weights(s, attn_mask)
        return self.o_project(torch.einsum("bhqk,bkhd->bqhd", w, v).reshape(B, T, D))
''',
    # one head at a time
    "loop": '''
    def forward(self, x, attn_mask=None):
        B, T, D = x.shape
        d = D // self.num_heads
        q, k, v = self._qkv(x)
        heads = []
        for i in range(self.num_heads):
            sl = slice(i * d, (i + 1) * d)
            s = q[..., sl] @ k[..., sl].transpose(1, 2) / math.sqrt(d)            # (B, T, T)
            w = self._weights(s[:, None], attn_mask)[:, 0]
            heads.append(w @ v[..., sl])                                          # (B, T, d)
        return self.o_project(torch.cat(heads, dim=-1))
''',
    # PyTorch's fused kernel (a float mask of 0 / -inf, so fully blocked rows are handled by hand)
    "fused": '''
    def forward(self, x, attn_mask=None):
        B, T, D = x.shape
        h = self.num_heads
        q, k, v = (t.view(B, T, h, D // h).transpose(1, 2) for t in self._qkv(x))  # (B, h, T, d)
        bias, has_key = None, None
        if attn_mask is not None:
            allowed = attn_mask.bool()[:, None]                                    # (B, 1, T, T)
            has_key = allowed.any(-1, keepdim=True)                                # (B, 1, T, 1)
            bias = torch.zeros(allowed.shape, dtype=q.dtype).masked_fill(~(allowed | ~has_key), float("-inf"))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias,
                                             dropout_p=self.p if self.training else 0.0)
        if has_key is not None:
            out = out.masked_fill(~has_key, 0.0)
        return self.o_project(out.transpose(1, 2).reshape(B, T, D))
''',
}


def source(style: str, routing: str, salt: int) -> str:
    """The class source of one variant (module-level names: nn, torch, F, math). The routing is
    structure (which Linear sits in which slot of a list whose name is salted), never a label."""
    q, k, v = ROUTES[routing]
    init = _INIT.replace("{slot}", f"_s{salt:08x}").replace("{q}", q).replace("{k}", k).replace("{v}", v)
    return f"class {CLASS_NAME}(nn.Module):{init}{STYLES[style]}"


def variants(routing: str, seed: int) -> list[tuple[str, str]]:
    """[(style, source)] for `routing`, shuffled and salted from `seed`: every style for the
    correct routing (a good test accepts them all), two styles drawn per submission for each
    wrong one (any of the four could be the one a test meets)."""
    rng = random.Random(f"{routing}:{seed}")
    styles = list(STYLES)
    rng.shuffle(styles)
    if routing != "correct":
        styles = styles[:2]
    return [(style, source(style, routing, rng.randrange(1 << 30))) for style in styles]
