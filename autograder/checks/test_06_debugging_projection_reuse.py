"""Checks for lesson 06: the student's own test (graded by mutation) and the fixed class."""
import numpy as np
import torch

from autograder import mutants
from autograder.checking import (Mismatch, exercise, expect_parameters, expect_tensor, linear_shapes,
                                 random_parameters, reference_output)
from autograder.reference import class_source
from autograder.sandbox import StudentError
from autograder.wire import ClassSource

LESSON = "06_debugging_projection_reuse"
NAMES = ("q_project", "k_project", "v_project", "o_project")

# A correct class written differently from the reference: one fused matmul, einsum, no nn.Dropout
# module on the weights (F.dropout with training=self.training). A good test must accept it too.
ALTERNATIVE_CORRECT = '''
class EinsumMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout):
        super().__init__()
        self.h, self.p = num_heads, dropout
        self.q_project = nn.Linear(d_model, d_model)
        self.k_project = nn.Linear(d_model, d_model)
        self.v_project = nn.Linear(d_model, d_model)
        self.o_project = nn.Linear(d_model, d_model)

    def forward(self, x, attn_mask=None):
        B, T, D = x.shape
        w = torch.cat([self.q_project.weight, self.k_project.weight, self.v_project.weight])
        b = torch.cat([self.q_project.bias, self.k_project.bias, self.v_project.bias])
        q, k, v = F.linear(x, w, b).split(D, dim=-1)
        q, k, v = (t.reshape(B, T, self.h, D // self.h) for t in (q, k, v))
        s = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(D // self.h)
        if attn_mask is not None:
            ok = attn_mask.bool()[:, None].expand_as(s)
            s = s.masked_fill(~ok, float("-inf"))
            a = torch.nan_to_num(torch.softmax(s, -1), nan=0.0)
        else:
            a = torch.softmax(s, -1)
        a = F.dropout(a, self.p, training=self.training)
        return self.o_project(torch.einsum("bhqk,bkhd->bqhd", a, v).reshape(B, T, D))
'''


def subject(name: str) -> ClassSource:
    """The classes the student's test is run on: two correct, three buggy."""
    fixed = class_source(LESSON, "FixedMultiHeadAttention")

    def mutate(old, new):
        assert fixed.count(old) >= 1, f"the reference class no longer contains {old!r}"
        return ClassSource("FixedMultiHeadAttention", fixed.replace(old, new))

    return {
        "reference": lambda: ClassSource("FixedMultiHeadAttention", fixed),
        "alternative": lambda: ClassSource("EinsumMultiHeadAttention", ALTERNATIVE_CORRECT),
        "buggy": lambda: ClassSource("BuggyMultiHeadAttention", class_source(LESSON, "BuggyMultiHeadAttention")),
        "keys-only": lambda: mutate("self.k_project(", "self.q_project("),
        "values-only": lambda: mutate("self.v_project(", "self.q_project("),
    }[name]()


def outcome(student, name):
    """'passed', or 'assertion: ...' / 'error: ...' for the student's test on one class."""
    try:
        student.test_projections(subject(name))
        return "passed"
    except StudentError as err:
        if err.type == "NotImplementedError":
            raise
        return ("assertion: " if err.type == "AssertionError" else "error: ") + err.describe()


def check_catches(student, buggy, what):
    got = outcome(student, buggy)
    if got == "passed":
        raise Mismatch(f"test_projections returned normally for a class where {what}: it should raise "
                       "AssertionError", mistake="test-misses-bug")
    if got.startswith("error"):
        raise Mismatch(f"test_projections, given a class where {what}, raised an error instead of "
                       f"AssertionError:\n{got[7:]}")
    for good in ("reference", "alternative"):
        verdict = outcome(student, good)
        if verdict != "passed":
            raise Mismatch(f"test_projections fails a correct class ({'the reference FixedMultiHeadAttention' if good == 'reference' else 'an einsum implementation'}):\n"
                           f"{verdict}", mistake="test-rejects-correct")


@exercise("test_projections", points=2)
def test_student_test_catches_the_buggy_class(student):
    """test_projections fails the buggy class and passes correct ones"""
    check_catches(student, "buggy", "keys and values use the query projection")


@exercise("test_projections", points=1)
def test_student_test_catches_key_reuse(student):
    """test_projections fails a class where only the keys use the query projection"""
    check_catches(student, "keys-only", "only the keys use the query projection")


@exercise("test_projections", points=1)
def test_student_test_catches_value_reuse(student):
    """test_projections fails a class where only the values use the query projection"""
    check_catches(student, "values-only", "only the values use the query projection")


# ------------------------------------------------------------------------ the fixed class

def fixed_mutants(p, x, mask, h):
    p64 = {n: t.double() for n, t in p.items()}
    m = None if mask is None else torch.as_tensor(mask).bool()[:, None]

    def run(**kw):
        return lambda: mutants.torch_mha(p64, x.double(), x.double(), x.double(), m, h=h, names=NAMES, **kw)

    found = [("kv-reuse-query-projection", run(k_from="q", v_from="q")),
             ("kv-reuse-query-projection", run(k_from="q")),
             ("kv-reuse-query-projection", run(v_from="q")),
             ("heads-mixed", run(heads_mixed=True)), ("missing-output-projection", run(out_proj=False)),
             ("wrong-scale", run(scale="other")), ("missing-scale", run(scale="none"))]
    if mask is not None:
        found += [("mask-inverted", run(invert=True)), ("masked-row-leak", run(fill="-1e9"))]
    return found


def check_fixed(student, reference, rng, b, t, d_model, h, mask=None, what="no mask"):
    shapes = linear_shapes(NAMES, d_model, d_model)
    params = random_parameters(rng, shapes)
    module = student.FixedMultiHeadAttention(d_model, h, 0.0)
    expect_parameters(module, shapes, f"FixedMultiHeadAttention({d_model}, {h}, 0.0)")
    module.load_parameters(params)
    module.eval()
    x = torch.from_numpy(rng.standard_normal((b, t, d_model)).astype(np.float32))
    got = module(x) if mask is None else module(x, mask)
    expected = reference_output(reference.FixedMultiHeadAttention, (d_model, h, 0.0), params, x,
                                mask_kw="attn_mask", mask=mask)
    expect_tensor(got, expected, call=f"FixedMultiHeadAttention({d_model}, {h}, 0.0)(x{', attn_mask' if mask is not None else ''})"
                  f" with x of shape {(b, t, d_model)}, {what}", mutants=fixed_mutants(params, x, mask, h))
    return module, params, x, got


@exercise("FixedMultiHeadAttention", points=1)
def test_fixed_has_four_projections(student):
    """FixedMultiHeadAttention has q_project, k_project, v_project, o_project = nn.Linear(d_model, d_model)"""
    expect_parameters(student.FixedMultiHeadAttention(8, 2, 0.0), linear_shapes(NAMES, 8, 8),
                      "FixedMultiHeadAttention(8, 2, 0.0)")


@exercise("FixedMultiHeadAttention", points=2)
def test_fixed_matches_reference(student, reference, rng):
    """FixedMultiHeadAttention matches the reference (h = 2 and 4, weights copied in)"""
    check_fixed(student, reference, rng, 2, 5, 8, 2)
    check_fixed(student, reference, rng, 3, 4, 16, 4)


@exercise("FixedMultiHeadAttention", points=1)
def test_fixed_uses_every_projection(student, reference, rng):
    """changing k_project or v_project changes the output of FixedMultiHeadAttention"""
    module, params, x, before = check_fixed(student, reference, rng, 2, 5, 8, 2)
    for name in ("k_project.weight", "v_project.weight"):
        changed = dict(params)
        changed[name] = params[name] + torch.from_numpy(rng.standard_normal(params[name].shape).astype(np.float32))
        module.load_parameters(changed)
        if torch.allclose(torch.as_tensor(module(x)), torch.as_tensor(before), atol=1e-6):
            raise Mismatch(f"changing {name} did not change the output: {name.split('.')[0]} is never used",
                           mistake="kv-reuse-query-projection")
        module.load_parameters(params)


@exercise("FixedMultiHeadAttention", points=1)
def test_fixed_attn_mask(student, reference, rng):
    """FixedMultiHeadAttention honours a (B, T, T) attn_mask (1 = attend), fully blocked rows included"""
    mask = torch.from_numpy((mutants.causal(5)[None] & mutants.padding([5, 3], 5)).astype(np.int64))
    mask[0, 2] = 0
    check_fixed(student, reference, rng, 2, 5, 8, 2, mask, "a causal & padding attn_mask with a blocked row")
