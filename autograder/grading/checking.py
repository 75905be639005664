"""What a check module imports: the exercise marker and the comparison helpers.

    from autograder.grading.checking import exercise, expect_array, expect_attention

    LESSON = "01_scaled_dot_product_attention"

    @exercise("softmax", points=1)
    def test_softmax_rows_sum_to_one(student, reference, rng):
        '''softmax rows sum to one'''
        x = rng.standard_normal((3, 4))
        expect_array(student.softmax(x), reference.softmax(x), call="softmax(x)")

The docstring's first line is the test's name in the report.
"""
from __future__ import annotations


import numpy as np
import pytest

from autograder.diagnose import fingerprints
from autograder.grading.compare import Fingerprints, Mismatch, Variant, as_numpy, constant, expect_array
from autograder.i18n import N_
from autograder.run.errors import StudentError
from autograder.grading.parameters import (Params, expect_parameters, fingerprint_params, layout_deviations,  # noqa: F401
                                            linear_shapes, load_lenient, projections_unused, random_parameters)

__all__ = ["exercise", "expect_array", "expect_attention", "Mismatch", "attention_mutants",
           "blocked_rows", "describe_shape", "Fingerprints", "Variant", "scale_variants", "mask_variants",
           "call_attention", "all_of", "causal_pattern", "padding_pattern", "MASK_MISTAKES", "load_lenient", "module_extras", "ALWAYS_CAUSAL",
           "module_output", "fingerprint_params", "layout_deviations",
           "reversed_shape_error", "expect_computes", "expect_varies", "expect_module_computes", "projections_unused"]


def exercise(grade_id: str, points: float = 1):
    return pytest.mark.exercise(grade_id, points=points)


def describe_shape(*arrays) -> str:
    return ", ".join(f"{tuple(a.shape)} {a.dtype}" for a in arrays)


def _r(x) -> str:
    return f"{x:.3g}"


def scale_variants(d_k: int, others=()) -> list[Variant]:
    """The scale mistakes, each in words. others: [(name, size)] of the sizes students divide by
    instead of d_k (d_v, d_model); a variant equal to the right scale is left out."""
    found = [Variant.of("missing-scale", "the scores are not divided by sqrt(d_k) at all", scale="none"),
             Variant.of("wrong-scale", "the scores are divided by d_k instead of sqrt(d_k)", scale="dk"),
             Variant.of("wrong-scale", "the scores are multiplied by sqrt(d_k) instead of divided by it", scale="mul")]
    if d_k == 1:   # 1, 1/d_k and sqrt(d_k) are the right scale itself: nothing to tell apart
        found = []
    for name, size in others:
        if size == d_k * d_k and found:   # sqrt(size) == d_k: the shapes cannot tell these two apart
            found[1] = Variant.of("wrong-scale", N_("the scores are divided by d_k = sqrt({variable}) = {d_k} (these "
                                                    "shapes cannot tell which) instead of sqrt(d_k)").format(
                variable=name, d_k=d_k), scale="dk")
        elif size != d_k:
            found.append(Variant.of("wrong-scale", N_("the scores are divided by sqrt({variable}) instead of sqrt(d_k)").format(
                variable=name),
                                    scale="other", d_other=size))
    return found


ALWAYS_CAUSAL = Variant.of(None, "a causal mask is applied whatever mask is given (a `tril` buffer): the module "
                           "must apply the mask it is given, and nothing without one", extra="causal")


def module_extras(out: str = "w_o", *, causal: bool = False) -> list[Variant]:
    """Deviations seen in published modules that the catalogue has no id for (fingerprints.torch_mha's
    `extra`): never named, and never a pass, but the catalogued mistakes beside them are named."""
    return [Variant.of(None, N_("there is a ReLU after every projection ({out} included), which the module must "
                                "not have").format(out=out), extra="relu"),
            Variant.of(None, "the module returns LayerNorm(output + query): the residual connection and the "
                       "LayerNorm belong to the Transformer block (lesson 07), not to the attention module",
                       extra="residual_ln")] + ([ALWAYS_CAUSAL] if causal else [])


def mask_variants(mask, *, module: bool = False) -> list[Variant]:
    if mask is None:
        return []
    found = [Variant.of("mask-inverted", "the pairs the mask marks True/1 (may attend) are the ones blocked",
                        invert=True),
             Variant.of("mask-after-softmax", "the weights are multiplied by the mask after the softmax, so rows "
                        "no longer sum to 1", mask_mode="after"),
             Variant.of("masked-row-nan", "fully blocked rows come out NaN", blocked_rows="nan"),
             Variant.of("masked-row-leak", "blocked scores are filled with a large negative number such as -1e9, "
                        "not -inf", fill="-1e9")]
    if not module and np.asarray(mask).dtype.kind in "iu":
        found.append(Variant.of("mask-int-invert", "`~` on the 0/1 integer mask gives -2 and -1, both non-zero, "
                                "so every pair is blocked", int_invert=True))
    return found


def attention_mutants(attention, q, k, v, mask=None, *, which: str) -> Fingerprints:
    """The fingerprints of scaled_dot_product_attention (`attention`, the reference's); which = "output"
    or "weights"."""
    pick = 0 if which == "output" else 1

    def run(**kw):
        return fingerprints.np_attention(attention, q, k, v, mask, **kw)[pick]

    found = scale_variants(q.shape[-1], [("d_v", v.shape[-1])]) + [
        Variant.of("softmax-wrong-axis", "the softmax normalises over the queries (axis -2), not the keys", axis=-2),
        Variant.of("softmax-unstable", "the softmax subtracts no maximum before exp()", stable=False),
        Variant.of("softmax-global-max", "the softmax subtracts the maximum of all the scores, not each row's", stable="global"),
    ]
    if q.ndim > 2 or k.ndim > 2:
        found.append(Variant.of("batched-transpose", N_("`k.T` turns keys of shape {shape} into {transposed} instead of "
                                                        "swapping the last two axes").format(
            shape=k.shape, transposed=k.T.shape), transpose="T"))
    return Fingerprints(run, found + mask_variants(mask))


def causal_pattern(n):
    """A causal mask to give as input, (n, n) bool, True where key j <= query i."""
    return np.tril(np.ones((n, n), dtype=bool))


def padding_pattern(lengths, max_len):
    """A key-padding mask to give as input, (batch, 1, max_len) bool, True where key j < lengths[b]."""
    return (np.arange(max_len)[None, :] < np.asarray(lengths)[:, None])[:, None, :]


def blocked_rows(mask, scores_shape):
    """(..., Lq) bool: the query rows whose keys are all blocked (None without a mask)."""
    if mask is None:
        return None
    return ~np.broadcast_to(np.asarray(mask).astype(bool), scores_shape).any(axis=-1)


def call_attention(fn, q, k, v, mask, *, call: str):
    """Call the student's attention; an exception that `k.T` on batched keys would raise too is named."""
    args = (q, k, v) if mask is None else (q, k, v, mask)
    try:
        return fn(*args)
    except StudentError as err:
        if q.ndim > 2 or k.ndim > 2:
            try:
                with np.errstate(all="ignore"):
                    q @ k.T
            except Exception as mine:   # the same error, word for word, as `q @ k.T`
                if type(mine).__name__ == err.type and str(mine) == err.message:
                    raise Mismatch(f"{call} raised {err.type}: {err.message}", found=[(
                        "batched-transpose", N_("`k.T` turns keys of shape {shape} into {transposed} instead of "
                                                "swapping the last two axes").format(shape=k.shape,
                                                                                     transposed=k.T.shape))]) from None
        raise


# What a mask check judges: with only other mistakes (a scale, mixed heads...) it passes, and the
# checks about those mistakes name them.
MASK_MISTAKES = frozenset({"mask-inverted", "mask-after-softmax", "masked-row-nan", "masked-row-leak",
                           "mask-int-invert", "mask-misbroadcast", "padding-wrong-axis"})


def expect_attention(got, q, k, v, mask, expected, *, attention, call: str, about=None) -> None:
    """Check an (output, weights) pair from scaled_dot_product_attention; `attention` is the reference's."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        what = type(got).__name__ if not isinstance(got, (tuple, list)) else N_("{n} values").format(n=len(got))
        raise Mismatch(N_("{call} returned {returned}; expected a pair (output, weights)").format(call=call, returned=what),
                       mistake="wrong-type")
    exp_out, exp_w = expected
    if all(isinstance(a, np.ndarray) for a in got) and got[0].shape == exp_w.shape != exp_out.shape \
            and got[1].shape == exp_out.shape:
        raise Mismatch(f"{call} returned (weights, output); expected (output, weights)", mistake="wrong-shape")
    rows = blocked_rows(mask, exp_w.shape)
    expect_array(got[1], exp_w, call=f"the weights from {call}", inputs=(q, k, v),
                 mutants=attention_mutants(attention, q, k, v, mask, which="weights"), blocked=rows, about=about)
    expect_array(got[0], exp_out, call=f"the output of {call}", inputs=(q, k, v),
                 mutants=attention_mutants(attention, q, k, v, mask, which="output"), blocked=rows, about=about)


# ----------------------------------------------------------------------------- PyTorch helpers

def reference_output(cls, init_args, params, *inputs, mask_kw="mask", mask=None, train=False):
    """Run the reference class in float64 with the given (float32) parameters."""
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)   # tiny tensors: a thread pool only waits (see compare._try)
    try:
        torch.default_generator.manual_seed(0)   # CPU only: torch.manual_seed also queues a CUDA seeding with a stack trace
        module = cls(*init_args).double()
        module.train(train)
        with torch.no_grad():
            own = dict(module.named_parameters())
            for name, value in params.items():
                own[name].copy_(value.double())
            kwargs = {} if mask is None else {mask_kw: mask}
            return module(*(x.double() for x in inputs), **kwargs)
    finally:
        torch.set_num_threads(threads)


def all_of(*checks):
    """Run every check (thunks), even after one fails, and fail once with everything they found:
    a check that stopped at its first failure (or at an exception of the student's code) would
    hide a second mistake. Only exceptions, and nothing recognised: the first exception."""
    failures, errors = [], []
    for check in checks:
        try:
            check()
        except Mismatch as err:
            failures.append(err)
        except StudentError as err:
            errors.append(err)
    if errors and not any(err.found for err in failures):
        raise errors[0]
    if failures:
        found = [f for err in failures for f in err.found]
        lines = [f"the code raised {err.describe()}" for err in errors[:1]] + [err.line for err in failures]
        raise Mismatch("\n".join(dict.fromkeys(lines)), found=found, extra=[e for err in failures for e in err.extra])


def reversed_shape_error(err: StudentError, shape) -> bool:
    """The student's exception names the array's shape reversed: `.T` on a batched array."""
    if len(shape) <= 2:
        return False
    rev = tuple(shape)[::-1]
    return any(text in err.message for text in (str(rev), "(" + ",".join(map(str, rev)) + ")",
                                                 "[" + ", ".join(map(str, rev)) + "]"))


def transposed_error(q_shape, k_shape):
    """What `q @ k.T` raises for these (batched) shapes, or None: a student's error that says the
    same, word for word, comes from `.T` on a batched tensor."""
    import warnings

    import torch
    if len(k_shape) <= 2:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.zeros(q_shape) @ torch.zeros(k_shape).permute(*reversed(range(len(k_shape))))
    except Exception as err:
        return (type(err).__name__, str(err))
    return None


def expect_module(call_with, mask, check, *, call: str, shapes=None, allow_all=None):
    """Run `check(got, mask)` on call_with(mask); for an integer 0/1 mask, a module that answers
    differently with the same mask as booleans (or raises only with the integers) has mask-int-invert,
    and the answer with booleans is diagnosed for the rest. A module that raises without a mask is
    called once more with `allow_all` (a mask that allows every key), to name its other mistakes:
    the check fails all the same."""
    import torch
    try:
        got = call_with(mask)
        check(got, mask)
        return got
    except (Mismatch, StudentError) as err:
        failure = err
    if isinstance(failure, StudentError) and shapes is not None \
            and transposed_error(*shapes) == (failure.type, failure.message):
        raise Mismatch(f"{call} raised {failure.type}: {failure.message}", found=[(
            "batched-transpose", N_("`.T` on the batched keys of shape {shape} reverses every axis instead of swapping "
                                    "the last two").format(shape=tuple(shapes[1])))]) from None
    if mask is None and allow_all is not None and isinstance(failure, StudentError):
        no_mask = "the module raises when it is called without a mask; mask=None must mean that every key may be read"
        line = f"{call} raised {failure.type}: {failure.message}\nAlso, {no_mask}."
        try:
            check(call_with(allow_all), None)
        except Mismatch as other:
            raise Mismatch(f"{line}\nWith a mask that allows every key instead: {other.line}", found=other.found,
                           extra=[no_mask] + other.extra) from None
        except StudentError:
            pass
        else:
            raise Mismatch(line, extra=[no_mask]) from None
    if mask is None or torch.as_tensor(mask).dtype == torch.bool or torch.as_tensor(mask).is_floating_point():
        raise failure
    as_bool = torch.as_tensor(mask).bool()
    try:
        got_bool = call_with(as_bool)
    except (Mismatch, StudentError):
        raise failure from None
    if isinstance(failure, Mismatch) and _same_answer(call_with(mask), got_bool):
        raise failure
    found = [("mask-int-invert", N_("the same mask as booleans gives another answer than as 0/1 integers (with the "
                                    "integers the call raised: {reason})").format(reason=failure.message.splitlines()[0])
              if isinstance(failure, StudentError) else INT_INVERT)]
    extra = []
    try:
        check(got_bool, as_bool)
    except Mismatch as other:
        found, extra = found + other.found, other.extra
    line = failure.line if isinstance(failure, Mismatch) else f"{call} raised {failure.type}: {failure.message}"
    raise Mismatch(line, found=found, extra=extra)


def module_output(got, call: str, *, lenient: bool = False):
    """The tensor a module returned. A tuple whose first item is a tensor (output, weights): wrong-type,
    or, lenient (probes that only add names), its first item."""
    import torch
    if isinstance(got, (tuple, list)) and got and isinstance(got[0], torch.Tensor):
        if lenient:
            return got[0]
        raise Mismatch((N_("{call} returned a tuple of {n} items; expected one torch.Tensor") if isinstance(got, tuple)
                        else N_("{call} returned a list of {n} items; expected one torch.Tensor")).format(
            call=call, n=len(got)), found=[("wrong-type", N_("it returns a tuple whose first item is the output; "
                                                              "return the output alone"))])
    try:
        return torch.as_tensor(got)
    except Exception:
        raise Mismatch(f"{call} returned a {type(got).__name__}; expected a torch.Tensor", mistake="wrong-type") from None


def _same_answer(a, b) -> bool:
    """Two answers are equal: tensors of one shape (NaN equal to NaN), or tuples/lists of such."""
    import torch
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same_answer(x, y) for x, y in zip(a, b))
    return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape \
        and torch.allclose(a, b, equal_nan=True)


def expect_tensor(got, expected, *, call: str, mutants=None, signs=None, inputs=(), blocked=None,
                  blocked_what=N_("zero"), about=None):
    """Like expect_array for tensors; modules compute in float32, so the float32 tolerance applies."""
    from autograder.grading.tolerances import FLOAT32
    expect_array(got, expected, call=call, kind="torch", mutants=mutants, signs=signs,
                 inputs=inputs, tol=FLOAT32, blocked=None if blocked is None else np.asarray(blocked),
                 blocked_what=blocked_what, about=about)


# ----------------------------------------------------------------------------- doing nothing earns nothing

def _constant(t) -> bool:
    return constant(as_numpy(t))


def _same(a, b) -> bool:
    a, b = np.asarray(as_numpy(a)), np.asarray(as_numpy(b))
    return a.shape == b.shape and a.dtype.kind in "biufc" and b.dtype.kind in "biufc" \
        and bool(np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=1e-6, atol=1e-7, equal_nan=True))


INT_INVERT = N_("the same mask as booleans gives another answer than as 0/1 integers (`~1 == -2` and `~0 == -1`)")
NOTHING = "; " + N_("a check like this one gives points only to an answer that computes something (issue 23: "
                    "doing nothing earns nothing)")


def expect_varies(got, *, call: str, what: str = "its values") -> None:
    """Fail for an answer that is empty, or all one value (all zero, all False, a constant)."""
    from autograder.grading.differences import describe_value
    arr = as_numpy(got)
    if not isinstance(arr, np.ndarray):
        raise Mismatch(f"{call} returned {describe_value(got)}; expected an array")
    if arr.size == 0:
        raise Mismatch(N_("{call} returned an empty array").format(call=call) + NOTHING)
    if _constant(arr):
        value = arr.reshape(-1)[0]
        value = bool(value) if arr.dtype == np.bool_ else f"{float(value):g}"
        raise Mismatch(N_("{call} returned {value} everywhere ({what} are all the same)").format(
            call=call, value=value, what=what) + NOTHING)


def expect_computes(run, *, call: str, inputs: str = "the input", weights: str | None = "the weights") -> None:
    """Fail unless a module computes something: run(w, x) (w, x in {0, 1}: two parameter draws, two
    inputs of one shape) returns a tensor that is not constant, changes with the input and, when
    `weights` is given, with the parameters. A module that returns zeros, a constant, a bias, or its
    input unchanged gets no points for its parameters' names or for being deterministic."""
    import torch
    from autograder.grading.differences import describe_value
    a = run(0, 0)
    if not isinstance(a, torch.Tensor):
        raise Mismatch(f"{call} returned {describe_value(a)}; expected a torch.Tensor")
    expect_varies(a, call=call)
    if _same(a, run(0, 1)):
        raise Mismatch(f"{call} gives the same output for two different inputs: it does not depend on "
                       f"{inputs}{NOTHING}")
    if weights is not None and _same(a, run(1, 0)):
        raise Mismatch(f"{call} gives the same output after {weights} change: it does not use them{NOTHING}")


def expect_module_computes(make, shapes: dict, forward, x_shape, *, call: str, seed: int = 23) -> None:
    """expect_computes for a module: make() builds it, `shapes` are its documented parameters (two
    random draws are loaded in turn), forward(module, x) returns its output tensor for an input x of
    shape x_shape (two random draws)."""
    import torch
    g = np.random.default_rng(seed)
    draws = [random_parameters(g, shapes) for _ in range(2)]
    xs = [torch.from_numpy(g.standard_normal(x_shape).astype(np.float32)) for _ in range(2)]
    module = make()

    def run(w, x):
        load_lenient(module, shapes, draws[w], call, mode=False)
        return forward(module, xs[x])

    expect_computes(run, call=call)
