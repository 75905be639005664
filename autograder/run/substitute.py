"""Run: one exercise graded on its own. While an exercise that calls another of the student's
graded functions is checked again (MultiHeadAttention calls split_heads, CausalSelfAttention
repeat_kv, ...), the notebook's global name is a stand-in: `Asks` answers each call with the
student's own function, sends the arguments and that answer to the grader (data), and returns the
reference's answer when the grader replies with one (the student's was wrong); `Answers` answers
from a table the grader sent beforehand (generate's next_token_probs, whose logits the grader
knows). Data only either way: no reference code in this process. `SubstitutionOps` gives the
Executor the two requests that put a stand-in in place and take it back.
"""
from __future__ import annotations

import inspect
import sys

import numpy as np


class Answers:
    """Stands for one of the student's functions while another exercise that calls it is graded: it
    answers from a table of the reference's answers the grader sent, which is data only (no reference
    code reaches this process). The call is read as the student's own function's signature binds it
    (defaults filled in). Two kinds of entry:
      {"args": [...], "output": ...}: a call whose arguments equal these (arrays and tensors to float32
          rounding) gets this output;
      {"key": [...], "inputs": (N, V), "outputs": (N, V)}: a call (x, *key) whose rows of x all appear
          among `inputs` gets the matching rows of `outputs`, in x's shape and dtype (generate's
          next_token_probs, given each step's logits however they are batched).
    Any other call goes to the student's own function (`fallback`)."""

    def __init__(self, table, fallback):
        self.table, self.fallback = table, fallback
        self.misses, self.answered = 0, 0

    def _bound(self, args, kwargs):
        try:
            if getattr(self, "_signature", None) is None:
                self._signature = inspect.signature(self.fallback)
            bound = self._signature.bind(*args, **kwargs)
        except (TypeError, ValueError):
            return None
        bound.apply_defaults()
        return list(bound.args) if not bound.kwargs else None

    def __call__(self, *args, **kwargs):
        call = self._bound(args, kwargs)
        if call is not None:
            for entry in self.table:
                found = self._answer(entry, call)
                if found is not None:
                    self.answered += 1
                    return found
        self.misses += 1
        return self.fallback(*args, **kwargs)

    @staticmethod
    def _answer(entry, call):
        if "args" in entry:
            given = entry["args"]
            if len(given) == len(call) and all(_equal(a, b) for a, b in zip(given, call)):
                return entry["output"]
            return None
        import torch
        x, key = call[0], call[1:]
        if list(entry["key"]) != key or not isinstance(x, torch.Tensor) or not x.ndim \
                or x.shape[-1] != entry["inputs"].shape[-1]:
            return None
        rows = x.detach().double().reshape(-1, x.shape[-1])
        known = entry["inputs"].double()
        best = (rows[:, None, :] - known[None, :, :]).abs().amax(-1).min(-1)    # over the known rows
        if bool((best.values <= 1e-5 * (1 + known.abs().amax())).all()):
            return entry["outputs"][best.indices].reshape(x.shape).to(x.dtype)
        return None


class Asks:
    """Stands for one of the student's functions while another exercise that calls it is graded again.
    Each call is answered by the student's own function on copies of its arguments; the arguments
    (bound by the student's signature, defaults filled in), that answer (or the exception it raised)
    and whether it wrote into its copies go to the grader through `ask` (data, one frame each way). The
    grader replies {"value": the reference's answer} when the student's differs, else {} (keep it).
    Once it has replied with one, the student's function is no longer run: each call sends only its
    arguments ("wrong") and gets the reference's answer. One pass, whatever the helper does: a stub's
    NotImplementedError is answered like any wrong answer. Calls that are not data (or past
    MAX_ASKS) keep the student's answer."""

    MAX_ASKS = 4096          # per stand-in; the grader answers no more either (grading/independence.py)

    def __init__(self, name, fallback, ask):
        self.name, self.fallback, self.ask = name, fallback, ask
        self.asked, self.wrong = 0, False

    def __call__(self, *args, **kwargs):
        call = Answers._bound(self, args, kwargs)
        if call is None:                   # a signature that keeps keywords apart (**kwargs): as written
            call, keywords = list(args), dict(kwargs)
        else:
            keywords = {}
        if not _plain(call) or not _plain(list(keywords.values())) or self.asked >= self.MAX_ASKS \
                or self.ask is None:
            return self.fallback(*args, **kwargs)
        self.asked += 1
        question = {"name": self.name, "args": call}
        if keywords:
            question["kwargs"] = keywords
        error = mine = None
        if not self.wrong:                 # once the grader has replied with the reference's, it always does
            copies, copied = [_copy(a) for a in call], {k: _copy(v) for k, v in keywords.items()}
            try:
                mine = self.fallback(*copies, **copied)
            except Exception as exc:       # noqa: BLE001 - the student's helper; the grader decides
                error = exc
            question["changed"] = not (all(_unchanged(a, c) for a, c in zip(call, copies))
                                       and all(_unchanged(keywords[k], copied[k]) for k in keywords))
            if error is not None:
                question["raised"] = f"{type(error).__name__}: {error}"[:300]
            elif _plain(mine):
                question["answer"] = mine
            else:
                question["raised"] = f"returned a {type(mine).__name__}"
        else:
            question["wrong"] = True
        try:
            reply = self.ask(question)
        except Exception:                  # noqa: BLE001 - a question too large to send: the student's answer stands
            reply = None
        if isinstance(reply, dict) and "value" in reply:
            self.wrong = True
            return reply["value"]
        if self.wrong:                     # no answer this time (too large, or the grader's bound)
            return self.fallback(*args, **kwargs)
        if error is not None:
            raise error
        return mine


def _unchanged(before, after) -> bool:
    """Whether the student's helper left its copy of an argument as it was (bit for bit, NaN as NaN)."""
    if isinstance(before, np.ndarray):
        return before.shape == after.shape and np.array_equal(before, after, equal_nan=before.dtype.kind in "fc")
    if isinstance(before, (list, tuple)):
        return len(before) == len(after) and all(_unchanged(a, b) for a, b in zip(before, after))
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(before, torch.Tensor):
        if before.shape != after.shape:
            return False
        same = before == after
        if before.is_floating_point() or before.is_complex():
            same |= before.isnan() & after.isnan()
        return bool(same.all())
    return True


def _copy(value):
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (list, tuple)):
        return type(value)(_copy(v) for v in value)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return value.detach().clone()
    return value


def _plain(value) -> bool:
    """Data the wire carries: numbers, strings, None, arrays, tensors, and lists/tuples of them."""
    if value is None or isinstance(value, (bool, int, float, str, np.ndarray)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _equal(a, b) -> bool:
    torch = sys.modules.get("torch")
    if torch is not None and (isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor)):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.shape != b.shape:
            return False
        return bool(torch.allclose(a.detach().double(), b.detach().double(), rtol=1e-5, atol=1e-6, equal_nan=True))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and a.dtype.kind == b.dtype.kind and (
            np.array_equal(a, b) if a.dtype.kind not in "fc" else bool(np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b



class SubstitutionOps:
    """The Executor's requests `substitute` and `restore` (it keeps `self.substituted`)."""

    def op_substitute(self, target, name, table=None, ask=False):
        """While `target` (a function or class of the notebook) is graded, its global `name` (another
        exercise it calls) is a stand-in: with `ask`, one that asks the grader about each call (Asks,
        through self.ask); else one that answers from `table` (Answers, judged wrong beforehand)."""
        obj = self._target(target)
        if not isinstance(obj, type):
            scope = getattr(obj, "__globals__", None)
        else:
            scope = next((f.__globals__ for f in vars(obj).values() if hasattr(f, "__globals__")), None)
        if scope is None or not callable(scope.get(name)):
            return False
        if isinstance(scope[name], (Answers, Asks)):       # in place already (a new child gets them again)
            return isinstance(scope[name], Asks) == bool(ask)
        self.substituted.append((scope, name, scope[name]))
        scope[name] = Asks(name, scope[name], getattr(self, "ask", None)) if ask else Answers(table or [], scope[name])
        return True

    def op_restore(self):
        """Put back every function op_substitute replaced; for each name, {"misses": calls its table
        did not hold, "answered": calls it did, "asked": calls it asked the grader about}."""
        report = {}
        while self.substituted:
            scope, name, before = self.substituted.pop()
            answers = scope.get(name)
            report[name] = {"misses": getattr(answers, "misses", 0), "asked": getattr(answers, "asked", 0),
                            "answered": getattr(answers, "answered", 0)}
            scope[name] = before
        return report
