"""Lesson 06's subjects in the student kit, where they stand as checks/projection_subjects.py.

The course's own subjects (checks/projection_subjects.py) are four hand-written attention
layers: each correct one is an answer to the lesson's FixedMultiHeadAttention, so they stay in
the instructor's repository. The kit's subjects compute with PyTorch's own multi-head attention
(`F.multi_head_attention_forward`, the function behind nn.MultiheadAttention) and copy the
projections into it: no head splitting, scaling, masking or merging is written here, so no
line of them is an exercise's solution. Same API as projection_subjects: CLASS_NAME, ROUTES,
`source(style, routing, salt)` and `variants(routing, seed)`; the routing is which Linear sits
in which slot of a list whose name is salted, never a label.

The course's mask convention (True/1 = may attend) is the opposite of torch's `attn_mask`, and
a query row with no key allowed gets zero weights, so the layer returns o_project's bias there.
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

    def _torch_mask(self, attn_mask):
        """torch's boolean attn_mask (True = blocked), one (T, T) per sequence and head."""
        if attn_mask is None:
            return None
        return ~attn_mask.bool().repeat_interleave(self.num_heads, dim=0)     # (B * h, T, T)

    def _blocked_rows(self, out, attn_mask):
        if attn_mask is None:
            return out
        has_key = attn_mask.bool().any(-1, keepdim=True)                       # (B, T, 1)
        return torch.where(has_key, out, self.o_project.bias.expand_as(out))
'''

STYLES = {
    # separate projection weights handed to torch's multi-head attention
    "separate": '''
    def forward(self, x, attn_mask=None):
        q, k, v = self.{slot}
        seq = x.transpose(0, 1)                                                # (T, B, D)
        out, _ = F.multi_head_attention_forward(
            seq, seq, seq, x.shape[-1], self.num_heads, None, torch.cat([q.bias, k.bias, v.bias]),
            None, None, False, self.p, self.o_project.weight, self.o_project.bias,
            training=self.training, need_weights=False, attn_mask=self._torch_mask(attn_mask),
            use_separate_proj_weight=True, q_proj_weight=q.weight, k_proj_weight=k.weight,
            v_proj_weight=v.weight)
        return self._blocked_rows(out.transpose(0, 1), attn_mask)              # (B, T, D)
''',
    # the three projections packed into one in_proj matrix, as nn.MultiheadAttention stores them
    "packed": '''
    def forward(self, x, attn_mask=None):
        q, k, v = self.{slot}
        seq = x.transpose(0, 1)                                                # (T, B, D)
        out, _ = F.multi_head_attention_forward(
            seq, seq, seq, x.shape[-1], self.num_heads, torch.cat([q.weight, k.weight, v.weight]),
            torch.cat([q.bias, k.bias, v.bias]), None, None, False, self.p,
            self.o_project.weight, self.o_project.bias, training=self.training, need_weights=False,
            attn_mask=self._torch_mask(attn_mask))
        return self._blocked_rows(out.transpose(0, 1), attn_mask)              # (B, T, D)
''',
}


def source(style: str, routing: str, salt: int) -> str:
    """The class source of one variant (module-level names: nn, torch, F, math)."""
    q, k, v = ROUTES[routing]
    slot = f"_s{salt:08x}"
    init = _INIT.replace("{slot}", slot).replace("{q}", q).replace("{k}", k).replace("{v}", v)
    return f"class {CLASS_NAME}(nn.Module):{init}{STYLES[style].replace('{slot}', slot)}"


def variants(routing: str, seed: int) -> list[tuple[str, str]]:
    """[(style, source)] for `routing`, shuffled and salted from `seed`: every style."""
    rng = random.Random(f"{routing}:{seed}")
    styles = list(STYLES)
    rng.shuffle(styles)
    return [(style, source(style, routing, rng.randrange(1 << 30))) for style in styles]
