"""The text a lesson's demo cells show the reader, as string literals to translate in place.

A demo cell (a locked code cell of the lesson: not the setup, not a graded cell, not a self-check)
prints results and draws figures. The literals it prints (print's arguments, an assert's
message) and writes on its figures (titles, axis labels, legend labels, text) are the reader's text; everything else in the
cell is code and is never touched. A literal counts when it reaches such a place through string
operations only (`+`, `%`, f-strings, a conditional expression), or through a name the cell binds to
it in a table it loops over (`for name, kwargs in [("temperature 1", {...}), ...]`), or through a name
it is assigned to that is read only where it is shown (`verdict = "right" if ok else "wrong"`), or
through a list it is appended to that is shown joined (`rows.append(f"<tr>...</tr>")`, then
`display(HTML("<table>" + "".join(rows) + "</table>"))`: an HTML table's rows).

Each such literal is one message of the lesson's catalog, beside its markdown cells: its msgctxt
is the cell's id, its msgid the literal's text as written between its quotes (escapes and an
f-string's `{placeholders}` as in the source). A translation replaces that text between the same
quotes, and every literal of the cell written the same way (a table's label used as a key, too):
the cell's code, the quotes and the placeholders stay as they are. `substitute` refuses a
translation that would change anything but the literals' text (it parses both and compares).
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass

DISPLAY_FUNCTIONS = {"print", "display", "HTML", "Markdown"}
DISPLAY_METHODS = {"set_title", "set_xlabel", "set_ylabel", "suptitle", "title", "xlabel", "ylabel",
                   "text", "set_label"}
DISPLAY_KEYWORDS = {"label", "title", "xlabel", "ylabel"}
WORD = re.compile(r"[A-Za-z]{2,}")
NOT_WORDS = re.compile(r"\{[^{}]*\}|\$[^$]*\$|</?[A-Za-z][^<>]*>")   # placeholders, math, HTML tags
LOCKED_OUT_TAGS = ("setup", "self-check")


def is_demo_cell(cell) -> bool:
    """A locked code cell of the lesson that is neither its setup nor a graded or self-check cell."""
    nbg = cell.get("metadata", {}).get("nbgrader", {})
    tags = cell.get("metadata", {}).get("tags", [])
    return (cell.get("cell_type") == "code" and nbg.get("locked") is True and not nbg.get("solution")
            and not nbg.get("grade") and not any(t in tags for t in LOCKED_OUT_TAGS))


@dataclass(frozen=True)
class Literal:
    text: str      # as written between the quotes
    start: int     # offsets of `text` in the cell's source
    end: int


def _string_tokens(source: str):
    """(start, end, token) offsets of every string literal token in `source`."""
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.STRING:
            start = offsets[tok.start[0] - 1] + tok.start[1]
            end = offsets[tok.end[0] - 1] + tok.end[1]
            yield start, end, tok.string


def _body(token: str) -> tuple[int, int]:
    """(offset, length) of a string token's text between its quotes."""
    prefix = len(token) - len(token.lstrip("rRbBuUfF"))
    quote = 3 if token[prefix:prefix + 3] in ('"""', "'''") else 1
    return prefix + quote, len(token) - prefix - 2 * quote


def _parents(tree) -> dict:
    parent = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parent[child] = node
    return parent


def _is_sink(call: ast.Call) -> bool:
    f = call.func
    return (isinstance(f, ast.Name) and f.id in DISPLAY_FUNCTIONS) or \
        (isinstance(f, ast.Attribute) and f.attr in DISPLAY_METHODS)


@dataclass(frozen=True)
class Flows:
    """Names a shown string passes through: `lists` appended to and shown joined, `names` assigned
    a string and read only where it is shown."""
    lists: frozenset = frozenset()
    names: frozenset = frozenset()


def _appends_to(call: ast.Call, lists) -> bool:
    f = call.func
    return isinstance(f, ast.Attribute) and f.attr == "append" and isinstance(f.value, ast.Name) \
        and f.value.id in lists


def _shown(node, parent, flows: Flows = Flows()) -> bool:
    """Does `node`'s value reach the reader: through string operations only, into a display call's
    argument or a label= / title= keyword (or into one of `flows`' names on its way there)?"""
    child, up = node, parent.get(node)
    while up is not None:
        if isinstance(up, ast.keyword):
            return up.arg in DISPLAY_KEYWORDS
        if isinstance(up, ast.Assert):
            return child is up.msg          # what a failed assert tells the reader
        if isinstance(up, ast.Assign):
            return child is up.value and len(up.targets) == 1 and isinstance(up.targets[0], ast.Name) \
                and up.targets[0].id in flows.names
        if isinstance(up, ast.Call):
            return child in up.args and (_is_sink(up) or _appends_to(up, flows.lists))
        if isinstance(up, (ast.JoinedStr, ast.FormattedValue)):
            if isinstance(up, ast.FormattedValue) and child is not up.value:
                return False      # a format spec
        elif isinstance(up, ast.BinOp):
            if not isinstance(up.op, (ast.Add, ast.Mod)):
                return False
        elif isinstance(up, ast.IfExp):
            if child is up.test:
                return False
        else:
            return False
        child, up = up, parent.get(up)
    return False


def _flows(tree, parent) -> Flows:
    """The lists joined where they are shown and the names read only where they are shown, found
    again until none is added (a joined list may itself be bound to such a name)."""
    flows = Flows()
    stores = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            stores.setdefault(n.id, []).append(n)
    loads = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            loads.setdefault(n.id, []).append(n)
    for _ in range(4):
        lists = {n.args[0].id for n in ast.walk(tree)
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "join"
                 and isinstance(n.func.value, ast.Constant) and isinstance(n.func.value.value, str)
                 and len(n.args) == 1 and isinstance(n.args[0], ast.Name) and _shown(n, parent, flows)}
        # a name bound only by plain assignments (not a loop's, not a function's) and read only where shown
        names = {name for name, uses in loads.items()
                 if all(isinstance(parent.get(s), ast.Assign) for s in stores.get(name, [None]))
                 and all(_shown(u, parent, flows) for u in uses)}
        found = Flows(frozenset(lists), frozenset(names))
        if found == flows:
            break
        flows = found
    return flows


def _shown_names(tree, parent) -> set[str]:
    """Names read where their value reaches the reader (print(name), f"{name}", label=name)."""
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            and _shown(n, parent)}


def _passed_on(node, parent) -> bool:
    """A use of a label's name that keeps it a label: shown, a dict key or subscript as it is (the
    literal keys of the cell are translated alike), or packed into a tuple (read back by name)."""
    up = parent.get(node)
    if isinstance(up, ast.Subscript) and up.slice is node:
        return True
    if isinstance(up, ast.Dict) and node in up.keys or isinstance(up, ast.DictComp) and up.key is node:
        return True
    if isinstance(up, ast.Tuple) and isinstance(up.ctx, ast.Load):
        return True
    return _shown(node, parent)


def _table_labels(tree, parent, shown_names: set[str]) -> list[ast.Constant]:
    """The string literals a loop over a literal table binds to a shown name that is used only as
    a label (_passed_on): `for name, x in (("label", ...), ...)` or over a dict's keys, the table
    inline or bound to a name first."""
    tables = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            tables[node.targets[0].id] = node.value
    labels_only = {name for name in shown_names
                   if all(_passed_on(n, parent) for n in ast.walk(tree)
                          if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load))}
    found = []
    for loop in (n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.comprehension))):
        table, items = loop.iter, False
        if isinstance(table, ast.Call) and isinstance(table.func, ast.Attribute) and table.func.attr == "items":
            table, items = table.func.value, True
        if isinstance(table, ast.Name):
            table = tables.get(table.id)
        if isinstance(table, ast.Dict):
            rows = [ast.Tuple([k, v], ast.Load()) if items else k for k, v in zip(table.keys, table.values)]
        elif isinstance(table, (ast.List, ast.Tuple)) and not items:
            rows = table.elts
        else:
            continue
        targets = loop.target.elts if isinstance(loop.target, ast.Tuple) else [loop.target]
        for i, target in enumerate(targets):
            if not (isinstance(target, ast.Name) and target.id in labels_only):
                continue
            for row in rows:
                value = row.elts[i] if isinstance(row, ast.Tuple) and len(row.elts) == len(targets) else \
                    (row if len(targets) == 1 else None)
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    found.append(value)
    return found


def _docstrings(tree) -> set:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(first.value)
    return out


def shown_literals(source: str) -> list[Literal]:
    """The string literals of a demo cell that the reader sees, in source order; a literal without
    an English word (a separator, a format) is left out. Empty when the cell does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    parent = _parents(tree)
    docs = _docstrings(tree)
    flows = _flows(tree, parent)
    nodes = [n for n in ast.walk(tree) if isinstance(n, (ast.Constant, ast.JoinedStr))
             and (isinstance(n, ast.JoinedStr) or isinstance(n.value, str))
             and n not in docs and not isinstance(parent.get(n), ast.JoinedStr) and _shown(n, parent, flows)]
    tokens = list(_string_tokens(source))
    # a label also written inside another literal (a key in an f-string's placeholder) would not be
    # translated there: it stays English
    nodes += [n for n in _table_labels(tree, parent, _shown_names(tree, parent))
              if not any(_quoted_inside(n.value, tok) for _, _, tok in tokens)]
    spans = [_span(source, n) for n in nodes]
    # a shown text written in an f-string's placeholder ({x if x is not None else 'not printed'}) is
    # inside that f-string's token: the token is the literal to translate
    inner = [_span(source, n) for n in nodes if isinstance(n, ast.Constant) and WORD.search(n.value)]
    out = []
    for start, end, token in tokens:
        if any(s <= start and end <= e for s, e in spans):
            offset, length = _body(token)
            text = token[offset:offset + length]
            if WORD.search(NOT_WORDS.sub("", text)) or any(start < s and e < end for s, e in inner):
                out.append(Literal(text, start + offset, start + offset + length))
    return out


def _quoted_inside(text: str, token: str) -> bool:
    """Is `text` written as a quoted literal inside `token`, a longer literal (an f-string)?"""
    offset, length = _body(token)
    body = token[offset:offset + length]
    return f"'{text}'" in body or f'"{text}"' in body


def _span(source: str, node) -> tuple[int, int]:
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    return (offsets[node.lineno - 1] + node.col_offset, offsets[node.end_lineno - 1] + node.end_col_offset)


def substitute(source: str, translations: dict[str, str]) -> str:
    """`source` with every string literal written as a key of `translations` (its text between the
    quotes) rewritten as its value, whether or not that occurrence is shown (a label used as a key
    stays the same key). Raises ValueError when the result would differ from `source` in anything
    but the text of string literals, or would change an f-string's placeholders."""
    if not translations:
        return source
    out, last = [], 0
    for start, end, token in _string_tokens(source):
        offset, length = _body(token)
        text = token[offset:offset + length]
        if text in translations:
            out += [source[last:start + offset], translations[text]]
            last = start + offset + length
    result = "".join(out) + source[last:]
    check_same_code(source, result)
    return result


class _Masked(ast.NodeTransformer):
    """Every string constant becomes the same placeholder; an f-string becomes its placeholders
    alone, in order, each with its expression, conversion and format spec as written."""

    def visit_Constant(self, node):
        return ast.Constant("…") if isinstance(node.value, str) else node

    def visit_JoinedStr(self, node):
        kept = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                kept.append(ast.FormattedValue(self.visit(value.value), value.conversion, value.format_spec))
        return ast.JoinedStr(kept)


def check_same_code(english: str, translated: str) -> None:
    """Raise ValueError unless the two sources are the same code but for string literals' text
    (f-strings keep every placeholder: expression, conversion and format)."""
    try:
        a, b = ast.parse(english), ast.parse(translated)
    except SyntaxError as err:
        raise ValueError(f"the translated cell does not parse: {err}") from None
    if ast.dump(_Masked().visit(a)) != ast.dump(_Masked().visit(b)):
        raise ValueError("the translated cell differs from the English in more than its string literals")
