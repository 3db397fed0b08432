"""What an export path may be, checked before anything opens it.

Only a regular file (or a symlink to one) is read: opening a FIFO blocks forever, a device or socket is never an
export. `os.stat` answers without opening, so the refusal is immediate. File names are bytes on Unix and may not
be UTF-8; `text()` is the form that is safe to print or store, `safe_name()` a short portable file-name stem.
"""
from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from pathlib import Path

from nsysql.errors import NsysqlError

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
_HINT = "give the .sqlite export (nsys export --type sqlite REPORT.nsys-rep)"
NAME_MAX_STEM = 40  # cache names: readable prefix + key, far below the usual 255-byte limit


def text(path: str | os.PathLike) -> str:
    """The path as printable text: bytes that are not UTF-8 shown as U+FFFD instead of failing to encode."""
    return os.fsencode(path).decode("utf-8", "replace")


def printable(line: str) -> str:
    """`line` kept on one line for a terminal: control characters (a newline or escape in a file name) shown as
    Python writes them (`\\n`, `\\x1b`); bytes of a non-UTF-8 name (surrogate escapes) are left for the stream."""
    return "".join(c if c.isprintable() or "\ud800" <= c <= "\udfff" else c.encode("unicode_escape").decode("ascii")
                   for c in line)


def regular_file(path: Path) -> os.stat_result:
    """The export's stat, or one NsysqlError line saying why it cannot be read as a file."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise NsysqlError(_stat_error(path, exc)) from None
    if stat.S_ISDIR(st.st_mode):
        raise NsysqlError(f"{text(path)} is a directory; give the .sqlite export file")
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
        raise NsysqlError(f"{text(path)} is {kind}, not a file; give the path of the .sqlite export file itself")
    return st


def _stat_error(path: Path, exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return f"{text(path)}: no such file; {_HINT}"
    if exc.errno == errno.ELOOP:
        return f"{text(path)}: too many levels of symbolic links (a symlink loop?); give the export file itself"
    if exc.errno == errno.ENAMETOOLONG:
        return f"{text(path)}: file name too long"
    if exc.errno == errno.ENOTDIR:
        return f"{text(path)}: a part of this path is a file, not a directory"
    return f"{text(path)}: cannot read ({exc.strerror or exc})"


def safe_name(name: str) -> str:
    """A short, portable stem for files nsysql names after an export: ASCII letters, digits, `._-` kept, the rest
    `_`, cut to NAME_MAX_STEM characters (with a hash of the full name, so two long names stay distinct)."""
    clean = re.sub(r"[^A-Za-z0-9._-]", "_", text(name)).lstrip(".") or "export"
    if len(clean) <= NAME_MAX_STEM:
        return clean
    digest = hashlib.sha256(os.fsencode(name)).hexdigest()[:8]
    return f"{clean[:NAME_MAX_STEM - 9]}~{digest}"


def real_path(path: Path) -> str:
    """The resolved path for comparisons; never raises on a symlink loop (the check above reports those)."""
    return os.path.realpath(path)
