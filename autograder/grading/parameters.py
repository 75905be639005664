"""A module's parameters: expected shapes, random values, and lenient loading into a student's module.

Checks of nn.Module exercises give the student's module and the reference the same weights. A
student's module may name or lay them out differently from the contract (a fused qkv Linear, one
Linear per head, no bias): `load_lenient` maps what it can and reports what it cannot, and
`layout_deviations` names the layouts the catalogue has no id for.
"""
from __future__ import annotations


import numpy as np

from autograder.i18n import N_
from autograder.grading.compare import Mismatch, Variant


def random_parameters(rng, shapes: dict, scale: float = 0.5) -> dict:
    """float32 tensors for each parameter name (weights copied in, never the student's RNG)."""
    import torch
    return {name: torch.from_numpy((rng.standard_normal(shape) * scale).astype(np.float32))
            for name, shape in shapes.items()}


def linear_shapes(names, d_in, d_out) -> dict:
    shapes = {}
    for n in names:
        shapes[f"{n}.weight"] = (d_out, d_in)
        shapes[f"{n}.bias"] = (d_out,)
    return shapes


def expect_parameters(module, shapes: dict, what: str, *, output: str | None = None) -> None:
    """The student's module has exactly these parameter names and shapes. output: the name of the
    output projection; a module with none of its parameters and no parameter of its own beyond
    the expected ones has no output projection at all (missing-output-projection)."""
    have = module.parameters()
    missing = [n for n in shapes if n not in have]
    wrong = [N_("{name} has shape {shape}, expected {expected}").format(name=n, shape=tuple(have[n]), expected=shapes[n])
             for n in shapes
             if n in have and tuple(have[n]) != tuple(shapes[n])]
    if missing or wrong:
        problems = ([N_("missing parameter(s): {names}").format(names=", ".join(missing))] if missing else []) + wrong
        found = [("wrong-shape", None)] if wrong and not missing else []
        if output is not None and all(n in missing for n in shapes if n.startswith(output + ".")) \
                and set(have) <= set(shapes) and any(n.endswith(".weight") and n in have for n in shapes):
            found.append(("missing-output-projection", N_("the module has no {variable} at all: the merged heads are "
                                                          "returned as they are").format(variable=output)))
        raise Mismatch(N_("{what}: {problems}. Its parameters are: {parameters}").format(
            what=what, problems="; ".join(problems),
            parameters=", ".join(f"{n} {tuple(s)}" for n, s in have.items()) or "none"), found=found)


def load_lenient(module, shapes: dict, params: dict, what: str, mode: bool | None = None) -> dict:
    """Load `params` into the student's module and return the parameters the reference must use;
    with `mode`, then module.train(mode), in the same request.

    A module that lacks some parameters (biases: `bias=False`, or a whole projection) but has the
    right shape for the others gets those, and a missing bias counts as zero for the reference: its
    parameters check fails, and every other check judges the rest of the behaviour on its own. A
    parameter of the wrong shape fails here as before."""
    import torch
    have = module.parameters()
    missing = [n for n in shapes if n not in have]
    shared = {n for n in shapes if n in have and _shared_per_head(tuple(have[n]), tuple(shapes[n]), n, have)}
    if not missing and not shared:
        expect_parameters(module, shapes, what)
        module.load_parameters(params, mode=mode)
        return params
    if any(tuple(have[n]) != tuple(shapes[n]) for n in shapes if n in have and n not in shared):
        expect_parameters(module, shapes, what)
    params, given = Params(params), dict(params)
    for n in missing:
        if n.endswith(".bias") and n[:-len("bias")] + "weight" in have:
            params[n] = torch.zeros_like(params[n])
    if shared:
        # one small (d, d) Linear applied to every head's slice: the checks still compare with the
        # contract's model (so this never passes), and the mutants use the block-diagonal weights it
        # amounts to, so the module's other mistakes are named
        params.fingerprint = dict(params)
        for n in shared:
            d = have[n][0]
            given[n] = params[n][:d, :d].clone() if n.endswith(".weight") else params[n][:d].clone()
            reps = shapes[n][0] // d
            params.fingerprint[n] = (torch.block_diag(*[given[n]] * reps) if n.endswith(".weight")
                                     else given[n].repeat(reps))
        names = sorted({n.split(".")[0] for n in shared if n.endswith(".weight")})
        params.deviation = (N_("{names} is one small Linear(d_k, d_k) shared by every head and applied after the split, "
                               "not a Linear(d_model, d_model) over all the features") if len(names) == 1 else
                            N_("{names} are one small Linear(d_k, d_k) shared by every head and applied after the split, "
                               "not a Linear(d_model, d_model) over all the features")).format(names=", ".join(names))
    module.load_parameters({n: t for n, t in given.items() if n in have}, strict=False, mode=mode)
    return params


class Params(dict):
    """Parameters for the reference, from load_lenient. `fingerprint`: the parameters the mutants use
    when the module's own layout differs from the contract's (None: these), and `deviation`: that
    layout in words (a catalogue has no id for it: never a pass, but the mistakes beside it are named)."""
    fingerprint: dict | None = None
    deviation: str | None = None


def fingerprint_params(params) -> dict:
    return getattr(params, "fingerprint", None) or params


def layout_deviations(params) -> list[Variant]:
    deviation = getattr(params, "deviation", None)
    return [Variant.of(None, deviation)] if deviation else []


def _shared_per_head(have, want, name, all_have) -> bool:
    """A (d, d) weight (or (d,) bias) where (D, D) (or (D,)) is expected, d dividing D: a projection
    shared by every head and applied after the split (published code does this)."""
    if name.endswith(".bias"):
        w = all_have.get(name[:-len("bias")] + "weight")
        return w is not None and len(have) == 1 and len(want) == 1 and tuple(w) == (have[0], have[0]) \
            and 0 < have[0] < want[0] and want[0] % have[0] == 0
    return len(have) == 2 and len(want) == 2 and want[0] == want[1] and have[0] == have[1] \
        and 0 < have[0] < want[0] and want[0] % have[0] == 0


def projections_unused(module, params, rng, call, before, names, load):
    """A Mismatch, or None: a projection the module does not have is named as missing (not as unused),
    and when not even the query projection changes the output, the module ignores its projections
    altogether: no projection is "reused" then, and no mistake is named."""
    import numpy as np
    import torch
    from autograder.grading.compare import Mismatch
    have = module.parameters()
    missing = [n for n in names[1:3] if f"{n}.weight" not in have]
    if missing:
        return Mismatch((N_("the module has no {names}: the keys and values each need their own projection, an "
                            "nn.Linear(d_model, d_model) named {names}") if len(missing) == 1 else
                         N_("the module has no {first} and no {second}: the keys and values each need their own "
                            "projection, an nn.Linear(d_model, d_model) named {first} and {second}")).format(
            names=missing[0], first=missing[0], second=missing[-1]))
    changed = dict(params)
    name = f"{names[0]}.weight"
    changed[name] = params[name] + torch.from_numpy(rng.standard_normal(params[name].shape).astype(np.float32))
    load(changed)
    after = call()
    load(params)
    if after.shape == before.shape and torch.allclose(after, before, atol=1e-6, equal_nan=True):
        return Mismatch(f"changing {name} does not change the output either: the output does not come from the "
                        "projections at all")
    return None
