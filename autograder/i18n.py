"""The feedback in another language: the gettext domain `feedback`, applied where text leaves the grader.

The grader decides, diagnoses and reads back its own output in English (root_cause.py finds its
summaries and labels again in the checks' outputs), so nothing is translated where it is written.
The English is marked there instead: `N_("...")` a sentence, or a template whose values are named
fields (`{title}`, `{n}`), `C_(slot, "...")` a catalogue entry's title, explanation or hint. Babel
extracts the marks into locale/<lang>/LC_MESSAGES/feedback.po (`python -m autograder translations`,
which also compiles autograder/locale/<lang>/LC_MESSAGES/feedback.mo: the standard library's gettext
reads it, so the student kit and the Gradescope bundle need no Babel).

`localize(text, lang)` turns a finished English text into `lang`, line by line, where it leaves the
grader (the terminal, feedback.md, results.json's outputs, the self-check, the class report): a line
that is a message, or a template filled with values, becomes its translation with the same values
(themselves translated when they are messages); anything else (a student's exception, code, a
number) stays as it is. With no language the text is returned unchanged: English is byte-identical.
The language is cosmetic: no score, id, name or field name depends on it.
"""
from __future__ import annotations

import gettext
import os
import re
from functools import lru_cache
from pathlib import Path

DOMAIN = "feedback"
LANGUAGES = ("zh_CN",)
ENV = "AUTOGRADER_LANG"
COMPILED = Path(__file__).resolve().parent / "locale"      # <lang>/LC_MESSAGES/feedback.mo
SLOTS = ("title", "explanation", "hint", "check")   # C_'s contexts: a field of that name is one of them
LISTS = {"checks": "check"}       # a field that is a "; "-joined list of one slot's texts ("all 3 checks" too)
JOINED = {"follows": " and ", "branches": " or "}   # a field that joins a few items with a word: each item translated


def N_(message: str) -> str:
    """Mark a feedback sentence, or a template with {named} fields, for translation (returns it)."""
    return message


def C_(slot: str, message: str) -> str:
    """Mark a catalogue entry's text (slot: title, explanation or hint) for translation (returns it)."""
    return message


def language(chosen: str | None = None) -> str | None:
    """The feedback's language: `chosen` (--lang, the self-check's argument), else $AUTOGRADER_LANG;
    None for English. Accepts zh_CN, zh-CN, zh-Hans, zh; anything else is English."""
    value = (chosen if chosen is not None else os.environ.get(ENV, "")).strip()
    key = value.replace("-", "_").lower()
    if key in ("zh", "zh_cn", "zh_hans", "zh_hans_cn"):
        return "zh_CN"
    return None


@lru_cache(maxsize=None)
def _catalog(lang: str) -> dict[str, str]:
    path = COMPILED / lang / "LC_MESSAGES" / f"{DOMAIN}.mo"
    if not path.exists():
        return {}
    with open(path, "rb") as f:
        return {k: v for k, v in gettext.GNUTranslations(f)._catalog.items() if isinstance(k, str) and k and v}


_FIELD = re.compile(r"\{(\w+)\}")
# What a field of a given name can hold, so that a template matches only where its values could stand
# (a count is one token, a shape one bracket): "{n} of {size} values differ" must not swallow a line
# whose first words only happen to end in a number. Any other name holds any text.
_TOKEN, _SHAPE = r"[^\s,;()]+", r"\([^()]*\)"
_KINDS = {
    **{name: _TOKEN for name in (
        "n", "size", "i", "h", "h_kv", "n_rep", "d_k", "d_model", "row", "cached", "more", "failed", "total", "lq",
        "lk", "block_size", "axis", "score", "max", "maximum", "students", "exercises", "points", "mean", "median",
        "full", "top_k", "top_p", "temperature", "value", "error", "got", "kind", "range", "low", "high", "dtype",
        "version")},
    **{name: _SHAPE for name in ("shape", "index", "transposed", "mask")},
    "expected": f"{_SHAPE}|{_TOKEN}",
    "values": r"\[[^\]]*\]",
    "sizes": r"\[[^\]]*\]",
    "variable": r"[\w.]+",
    "module": r"[\w.]+",                # a layer's attribute name (w_k, self.k_project): not a clause before it
    "id": r"[a-z0-9-]+",                  # a mistake id
    "lesson": r"\d\d_\w+",                 # a lesson id
    "names": r"\w+(?:\.\w+)*(?:, \w+(?:\.\w+)*)*",   # exercise names, parameters (w_q.bias)
    # a call as the checks write it: a name and its arguments ("MultiHeadAttention(4, 2)(x, x, x)")
    "function": r"[\w.]+(?:\([^()]*(?:\([^()]*\)[^()]*)*\))+",
}


@lru_cache(maxsize=None)
def _templates(lang: str):
    """(plain {msgid: msgstr}, slots {slot: {msgid: msgstr}}, templates [(prefix, regex, msgstr, fields)])."""
    plain, slots, templates = {}, {s: {} for s in SLOTS}, []
    for key, value in _catalog(lang).items():
        if "\x04" in key:
            slot, msgid = key.split("\x04", 1)
            if slot in slots:
                slots[slot][msgid] = value
            continue
        if _FIELD.search(key):
            templates.append(key)
        else:
            plain[key] = value
    compiled = []
    for msgid in templates:
        parts, pattern, seen = _FIELD.split(msgid), [], set()
        for i, part in enumerate(parts):
            if i % 2 == 0:
                pattern.append(re.escape(part))
            elif part in seen:
                pattern.append(f"(?P={part})")
            elif part in slots or part in LISTS:
                seen.add(part)
                one = "(?:" + "|".join(map(re.escape, sorted(slots[LISTS.get(part, part)], key=len, reverse=True))) + ")"
                pattern.append(f"(?P<{part}>{one}(?:; {one})*|all \\d+ checks)" if part in LISTS else f"(?P<{part}>{one})")
            else:
                seen.add(part)
                pattern.append(f"(?P<{part}>{_KINDS.get(part, '.+?')})")
        literal = len("".join(parts[0::2]))
        # a template whose own words are few ("{what} in {names}") matches only when a value it holds
        # is a message itself: "x in y" in a student's exception is not ours
        weak = sum(c.isalpha() for c in "".join(parts[0::2])) < 6
        compiled.append((parts[0], re.compile("".join(pattern), re.S), _catalog(lang)[msgid], literal, weak))
    compiled.sort(key=lambda t: (-t[3], -len(t[0])))     # the most specific first: the most words of its own
    return plain, slots, compiled


def gettext_(message: str, lang: str | None) -> str:
    """One message's translation (itself when there is none)."""
    if not lang:
        return message
    return _catalog(lang).get(message, message)


def pgettext_(slot: str, message: str, lang: str | None) -> str:
    """A catalogue entry's text (slot: title, explanation, hint) in `lang` (itself when there is none)."""
    if not lang:
        return message
    return _catalog(lang).get(f"{slot}\x04{message}", message)


_SENTENCE_END = re.compile(r"(?<=[.:])\s+(?=[A-Z(`\[])")


LONGEST = 1500     # characters: the grader's own lines are under 800; a longer one is not read for templates
# (a student's 6000-character exception must not cost a template search each), nor kept in the caches


@lru_cache(maxsize=20_000)     # a class's reports say the same sentences many times
def _phrase(text: str, lang: str, depth: int = 0) -> str | None:
    """`text`'s translation, or None when no message or template covers it."""
    plain, slots, templates = _templates(lang)
    if text in plain:
        return plain[text]
    for slot in SLOTS:
        if text in slots[slot]:
            return slots[slot][text]
    if depth > 10 or not text.strip() or len(text) > LONGEST:
        return None
    # every template that matches, read the way that leaves the fewest English letters ("FAILED  {checks}:
    # {evidence}" over "{left} is not divisible by {right}" for a line that holds both); ties: the first
    best, left = None, None
    for candidate in _readings(text, lang, depth, templates, slots):
        rest = len(_LETTERS.findall(candidate))
        if best is None or rest < left:
            best, left = candidate, rest
    return best


_LETTERS = re.compile(r"[A-Za-z]")


def _readings(text, lang, depth, templates, slots):
    """`text` translated by each template that matches it."""
    for prefix, regex, target, _, weak in templates:
        if not text.startswith(prefix):
            continue
        m = regex.fullmatch(text)
        if m is None:
            continue
        values, ours = {}, False
        for name, value in m.groupdict().items():
            if name in SLOTS:
                values[name], ours = slots[name].get(value, value), True
            elif name in LISTS:      # a check's own name may hold "; ": the whole first, then each
                items = [value] if value in slots[LISTS[name]] else value.split("; ")
                items = [slots[LISTS[name]].get(item) or _value(item, lang, depth + 1) for item in items]
                values[name], ours = "；".join(items), True
            elif name in JOINED:
                items = [_value(item, lang, depth + 1) for item in value.split(JOINED[name])]
                values[name] = "、".join(items)
                ours = ours or values[name] != value
            else:
                values[name] = _value(value, lang, depth + 1)
                ours = ours or values[name] != value
        if weak and not ours and depth == 0:   # inside a template of ours, a value is ours too
            continue
        try:
            yield _fill(target, values)
        except (KeyError, IndexError, ValueError):
            continue


_EDGE = "\x00"     # marks where a value begins and ends while its template is filled
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_WIDE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\u3000-\u303f\uff01-\uff5e]")   # Chinese, or its punctuation
_LATIN = re.compile(r"[A-Za-z0-9`]")


def _fill(target: str, values: dict[str, str]) -> str:
    """`target` with its values, spaced at each value's edges as the catalog spaces its own text: no space
    between two Chinese characters or punctuation marks ("返回了 {returned}" with "一个含 2 项的元组" is
    "返回了一个含 2 项的元组"), one between a Chinese character and a Latin letter or digit; any other
    edge as the template has it."""
    marked = target.format(**{k: _EDGE + v.replace(_EDGE, "") + _EDGE if v else v for k, v in values.items()})
    pieces = marked.split(_EDGE)     # template, value, template, value, ..., template
    out = pieces[0]
    for i, piece in enumerate(pieces[1:], 1):
        left, right = out, piece
        if i % 2:      # a value begins: the template's space is on the left
            core = left[:-1] if left.endswith(" ") else left
            a, b = core[-1:], right[:1]
        else:          # a value ends: the template's space is on the right
            core = right[1:] if right.startswith(" ") else right
            a, b = left[-1:], core[:1]
        both = bool(a and b and _WIDE.match(a) and _WIDE.match(b))
        mixed = bool(a and b and ((_HAN.match(a) and _LATIN.match(b)) or (_LATIN.match(a) and _HAN.match(b))))
        if both or mixed:
            gap = " " if mixed else ""
            out = (core + gap + right) if i % 2 else (left + gap + core)
        else:
            out = left + right
    return out


@lru_cache(maxsize=20_000)
def _value(value: str, lang: str, depth: int) -> str:
    """A template's value: translated when it is a message, else its clauses ("; ") or its list items
    (", " outside brackets: "x of shape (2, 3), no mask") each translated that is one; else as it came."""
    if len(value) > LONGEST:
        return value
    readings = [_phrase(value, lang, depth)]
    for sep, joined in (("; ", "；"), (", ", "，")):
        parts = _split(value, sep)
        if 1 < len(parts) <= 16:        # a list of a few items, not a student's text full of commas
            if sep == "; ":
                done = _clauses(parts, lang, depth)
                if done != parts:
                    readings.append(joined.join(done))
                    break
                continue
            done = [_phrase(p, lang, depth) for p in parts]
            if any(d != p and d is not None for d, p in zip(done, parts)):
                readings.append(joined.join(d if d is not None else p for d, p in zip(done, parts)))
                break
    readings = [r for r in readings if r is not None]     # the whole first; the one with least English
    return min(readings, key=lambda r: len(_LETTERS.findall(r))) if readings else value


def _clauses(parts: list[str], lang: str, depth: int) -> list[str]:
    """Clauses ("; ") translated, the longest run of them that is one message taken first: a message
    may hold "; " itself ("9 of 16 values differ; the largest error is ..."): a run comes back as one item."""
    done, i = [], 0
    while i < len(parts):
        for j in range(len(parts), i + 1, -1):
            whole = _phrase("; ".join(parts[i:j]), lang, depth)
            apart = "; ".join(_value(p, lang, depth) for p in parts[i:j])
            if whole is not None and len(_LETTERS.findall(whole)) <= len(_LETTERS.findall(apart)):
                done.append(whole)
                i = j
                break
        else:
            done.append(_value(parts[i], lang, depth))
            i += 1
    return done


def _split(text: str, sep: str) -> list[str]:
    """`text` cut at each `sep` outside brackets ("(2, 3)" and "[1, 2]" stay whole)."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        depth += (ch in "([{") - (ch in ")]}")
        if depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            start = i = i + len(sep)
            continue
        i += 1
    parts.append(text[start:])
    return parts


def _line(line: str, lang: str) -> str:
    indent = line[:len(line) - len(line.lstrip())]
    core = line.strip()
    if not core:
        return line
    tail = line[len(indent) + len(core):]
    whole = _phrase(core, lang)
    if whole is None or _LETTERS.search(whole):   # a reading by its clauses may leave less English
        clauses = _value(core, lang, 0)
        whole = clauses if clauses != core else whole
    if whole is not None:
        return indent + whole + tail
    # a line of several sentences ("In your code: ... <the explanation>"), or clauses: each on its own
    pieces = _SENTENCE_END.split(core)
    if len(pieces) > 1 or "; " in core:
        done = [_phrase(p, lang) for p in pieces]
        done = [d if d is not None or "; " not in p else (_value(p, lang, 0) if _value(p, lang, 0) != p else None)
                for d, p in zip(done, pieces)]
        if any(d is not None for d in done):
            out = ""
            for d, p in zip(done, pieces):
                gap = " " if out and not out.endswith(" ") and not _WIDE.match(out[-1]) else ""   # not after "："
                out += (d if d is not None else gap + p)
            return indent + out + tail
    return line


def localize(text: str, lang: str | None) -> str:
    """`text` (English the grader wrote) in `lang`, line by line; unchanged when lang is None or
    has no catalog."""
    if not lang or not text or not _catalog(lang):
        return text
    return "\n".join(_line(line, lang) for line in text.split("\n"))
