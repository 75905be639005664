"""Load: read a notebook file, whatever it holds, for the grader, at a bounded cost.

The grader reads untrusted JSON (the notebook) and, in notebook.py, untrusted Python (its cells).
Its own memory must stay bounded whatever a file holds (the job has torch loaded; 400 MB in all):
a small file is parsed here (JSON costs up to ~25 bytes of memory per byte), a larger one in a
short-lived process with a memory and a time limit. Both take the same path (`parsed`), which hands
back only what grading reads of each cell, each field of the type grading expects. A notebook with more cells or more code than any lesson is refused, said plainly.
"""
from __future__ import annotations

import json
from pathlib import Path

from autograder.i18n import N_


def _source(cell) -> str:
    src = cell.get("source", "") if isinstance(cell, dict) else ""
    if isinstance(src, list):
        src = "".join(s for s in src if isinstance(s, str))
    return src if isinstance(src, str) else ""


def _nbgrader(cell) -> dict:
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    nbg = meta.get("nbgrader") if isinstance(meta, dict) else None
    return nbg if isinstance(nbg, dict) else {}


def _tags(cell) -> list:
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    tags = meta.get("tags") if isinstance(meta, dict) else None
    return tags if isinstance(tags, list) else []


MAX_NOTEBOOK_BYTES = 200 * 1024 ** 2  # a lesson with its figures is under 5 MB; outputs can be large


def read_regular_file(path: Path, limit: int = MAX_NOTEBOOK_BYTES) -> bytes:
    """The bytes of `path` if it is a regular file of at most `limit` bytes; OSError otherwise.
    Never follows a symbolic link and never blocks on a FIFO or a device."""
    import os
    import stat
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(0, "it is not a regular file (a device, a FIFO or a folder)")
        if info.st_size > limit:
            raise OSError(0, f"it is larger than {limit // 1024 ** 2} MB")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
        if len(data) > limit:
            raise OSError(0, f"it is larger than {limit // 1024 ** 2} MB")
        return data
    finally:
        os.close(fd)


def digest_regular_file(path: Path, h, limit: int = MAX_NOTEBOOK_BYTES) -> None:
    """Feed `path` to the hash `h` in pieces (the same checks as read_regular_file; never the
    whole file in memory)."""
    import os
    import stat
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "it is not a regular file (a device, a FIFO or a folder)")
        size = 0
        while size <= limit:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return
            size += len(chunk)
            h.update(chunk)
        raise OSError(0, f"it is larger than {limit // 1024 ** 2} MB")
    finally:
        os.close(fd)


# What the grader itself may spend on one notebook: it reads untrusted JSON and Python, and a job's
# own memory must stay bounded (under 400 MB with torch loaded) whatever a notebook holds.
IN_PROCESS_BYTES = 2 * 1024 ** 2       # JSON costs up to ~25 bytes per byte: parsed here under this
PARSER_MEMORY = 1536 * 1024 ** 2       # larger files are parsed in a process of their own, capped so
PARSER_SECONDS = 60.0
MAX_CELLS = 5000                       # a lesson has under 100
MAX_SOURCE_BYTES = 4 * 1024 ** 2       # characters of all cells together (a lesson's: under 100 KB)
MAX_PARSED_CELL = 64 * 1024            # ast.parse costs ~500 bytes per byte of source: larger cells are
                                       # never parsed by the grader (the sandbox runs them as they are)
KEPT_TAGS = ("setup", "self-check", "slow-demo")
# the nbgrader fields grading reads, each with the type it reads it as: a field of another type is
# left out, as if the cell did not have it (a list as a grade_id made the in-process path raise)
NBGRADER_KEYS = {"grade_id": (str,), "solution": (bool,), "grade": (bool,), "locked": (bool,),
                 "points": (int, float), "task": (bool,), "schema_version": (int,)}


def read_cells(path: Path) -> tuple[list[dict], list[str], str | None]:
    """Return (code and markdown cells as plain dicts, notes, fatal error). The grader's memory
    stays bounded whatever the file: small files are parsed here, larger ones in a short-lived
    process with a memory limit, which hands back only what grading uses."""
    import errno
    import os
    import stat
    notes: list[str] = []
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return [], notes, "the file is a symbolic link, not a notebook: hand in the notebook file itself"
        return [], notes, f"the file could not be read: {exc.strerror or exc}"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return [], notes, "the file could not be read: it is not a regular file (a device, a FIFO or a folder)"
        if info.st_size > MAX_NOTEBOOK_BYTES:
            return [], notes, f"the file could not be read: it is larger than {MAX_NOTEBOOK_BYTES // 1024 ** 2} MB"
        if info.st_size > IN_PROCESS_BYTES:
            return _read_cells_apart(fd)   # the whole file is never in this process
        try:
            raw = os.read(fd, IN_PROCESS_BYTES + 1)
            while len(raw) <= IN_PROCESS_BYTES and (more := os.read(fd, IN_PROCESS_BYTES + 1 - len(raw))):
                raw += more
        except OSError as exc:
            return [], notes, f"the file could not be read: {exc.strerror or exc}"
        if len(raw) > IN_PROCESS_BYTES:   # it grew after fstat
            return [], notes, "the file could not be read: it changed while it was read"
    finally:
        os.close(fd)
    return parsed(raw)


def parsed(raw: bytes) -> tuple[list[dict], list[str], str | None]:
    """The one way a notebook's bytes become cells, whatever the file's size (here or in the parsing
    process): parse, refuse what is larger than any lesson, and keep of each cell only what grading
    reads, each field of the type grading expects (slim): any metadata a student's editor or the
    student wrote is then harmless."""
    cells, notes, fatal = cells_from_bytes(raw)
    if not fatal:
        cells, notes, fatal = bounded(cells, notes)
    return [slim(c) for c in cells], notes, fatal


def cells_from_bytes(raw: bytes) -> tuple[list[dict], list[str], str | None]:
    notes: list[str] = []
    if not raw.strip():
        return [], notes, N_("the file is empty: it is not a notebook (was it saved?)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = raw.decode("utf-8", errors="replace")
        notes.append(N_("the file is not valid UTF-8 (first bad byte at position {index}); undecodable bytes were "
                        "replaced").format(index=exc.start))
    del raw
    try:
        data = json.loads(text)
    except RecursionError:
        return [], notes, N_("the file is not a notebook: its JSON is nested far too deeply")
    except MemoryError:
        return [], notes, N_("the file is not a notebook the grader can read: its JSON is too large")
    except ValueError as exc:
        return [], notes, N_("the file is not a notebook: it is not valid JSON ({reason}). Open it in Jupyter and save "
                             "it again, or re-download the lesson.").format(reason=str(exc)[:200])
    del text
    if not isinstance(data, dict) or not ("cells" in data or "worksheets" in data):
        return [], notes, N_("the file is JSON but not a Jupyter notebook (it has no cells)")
    version = data.get("nbformat", 4)
    if type(version) is not int:
        notes.append(f"the notebook's format number is {str(version)[:40]!r}, not a whole number; read as version 4")
        version = 4
    if version < 4 or "worksheets" in data:
        try:
            import nbformat  # only here: importing it costs ~1.3 s (jsonschema's format checkers)
            data = nbformat.convert(nbformat.from_dict(data), 4)
            notes.append(N_("the notebook used an old format (nbformat 3); it was converted"))
        except Exception as exc:  # nbformat raises many kinds on odd input
            if "worksheets" in data or not isinstance(data.get("cells"), list):
                return [], notes, f"the notebook uses an old format that could not be converted ({str(exc)[:200]})"
            notes.append(f"the notebook's format number is {version}, but it is laid out as version 4; "
                         "read as version 4")
    cells = data.get("cells")
    if not isinstance(cells, list):
        return [], notes, N_("the notebook's cells are not a list")
    notes.extend(_odd_cells(cells))
    return [c for c in cells if isinstance(c, dict) and isinstance(c.get("cell_type", ""), str)], notes, None


def bounded(cells: list[dict], notes: list[str]) -> tuple[list[dict], list[str], str | None]:
    """The cells, or a fatal error when there are more of them, or more code, than any lesson."""
    if len(cells) > MAX_CELLS:
        return [], notes, (f"the notebook has {len(cells)} cells; the grader reads at most {MAX_CELLS} "
                           "(a lesson has under 100)")
    size = sum(len(_source(c)) for c in cells)
    if size > MAX_SOURCE_BYTES:
        return [], notes, (f"the notebook's cells hold {size // 1024 ** 2} MB of text; the grader reads at most "
                           f"{MAX_SOURCE_BYTES // 1024 ** 2} MB (a lesson's is under 100 KB)")
    return cells, notes, None


def slim(cell: dict) -> dict:
    """Only what grading reads of a cell: its type, source, the nbgrader fields grading reads (each of
    its own type, a grade_id of at most 64 characters) and known tags."""
    nbg = {k: v for k, v in _nbgrader(cell).items()
           if k in NBGRADER_KEYS and type(v) in NBGRADER_KEYS[k] and (type(v) is not str or len(v) <= 64)
           and v == v}   # NaN is no number of points
    tags = [t for t in _tags(cell) if isinstance(t, str) and t in KEPT_TAGS][:len(KEPT_TAGS)]
    return {"cell_type": cell.get("cell_type", "")[:20], "source": _source(cell),
            "metadata": {"nbgrader": nbg, "tags": tags}}


def _json_kind(value) -> str:
    """What a JSON value is, in the words of a notebook's JSON."""
    if value is None:
        return "null"
    kinds = {bool: "true or false", int: "a number", float: "a number", str: "text", list: "a list", dict: "an object"}
    return kinds.get(type(value), "a value")


def _odd_cells(cells: list) -> list[str]:
    """A note for each cell grading cannot read as it is (said by its place in the notebook, and its
    grade_id when it has one): what grading does with it instead."""
    notes = []
    for i, cell in enumerate(cells):
        gid = _nbgrader(cell).get("grade_id")
        name = f"cell {i + 1} of the notebook" + (f" ('{gid[:64]}')" if isinstance(gid, str) else "")
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type", ""), str):
            kind = _json_kind(cell.get("cell_type") if isinstance(cell, dict) else cell)
            notes.append(f"{name} has no cell type ({kind} where 'code' or 'markdown' belongs): it was left out")
            continue
        src = cell.get("source", "")
        if not isinstance(src, str) and not (isinstance(src, list) and all(isinstance(s, str) for s in src)):
            read = "only the text in it was read" if isinstance(src, list) else "it was read as an empty cell"
            notes.append(f"{name}: its source is not text ({_json_kind(src)}); {read}")
    return notes[:20] + ([f"and {len(notes) - 20} more such cells"] if len(notes) > 20 else [])


_APART = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
sys.path.insert(0, {root!r})
from autograder.load import reading
reading._apart_main({fd})
"""


def _apart_main(fd: int) -> None:
    """In the parsing process: read `fd`, write the slimmed cells as JSON to stdout."""
    import os
    import sys
    chunks, size = [], 0
    while size <= MAX_NOTEBOOK_BYTES:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    raw = b"".join(chunks)
    del chunks
    try:
        cells, notes, fatal = parsed(raw)
        out = {"cells": cells, "notes": notes, "fatal": fatal}
    except MemoryError:
        out = {"cells": [], "notes": [], "fatal": "the file is not a notebook the grader can read: "
                                                  "reading it needs more memory than any notebook"}
    sys.stdout.buffer.write(json.dumps(out, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    sys.stdout.flush()


def _read_cells_apart(fd: int) -> tuple[list[dict], list[str], str | None]:
    """Parse the notebook open on `fd` in a process of its own, with a memory and a time limit."""
    import subprocess
    import sys
    import tempfile
    root = str(Path(__file__).resolve().parent.parent.parent)
    code = _APART.format(memory=PARSER_MEMORY, root=root, fd=fd)
    with tempfile.TemporaryFile() as out:   # a pipe would need a reader thread to stay bounded
        try:
            run = subprocess.run([sys.executable, "-s", "-P", "-c", code], stdin=subprocess.DEVNULL,
                                 stdout=out, stderr=subprocess.DEVNULL, pass_fds=(fd,), timeout=PARSER_SECONDS)
        except subprocess.TimeoutExpired:
            return [], [], "the file could not be read: parsing it took too long"
        size = out.seek(0, 2)
        # UTF-8 takes at most 4 bytes a character, and a slimmed cell's metadata is small
        if run.returncode != 0 or size > 4 * MAX_SOURCE_BYTES + 4096 * MAX_CELLS:
            return [], [], ("the file is not a notebook the grader can read: parsing it failed "
                            "(it needs more memory or time than any notebook)")
        out.seek(0)
        reply = json.loads(out.read().decode("utf-8", "surrogatepass"))
    return reply["cells"], reply["notes"], reply["fatal"]
