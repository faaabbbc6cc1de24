"""The one place a path or a name a user gave meets DuckDB (issue 43: a quote in a data path
was SQL). No SQL text is built from a path or a value: it is a bound parameter (DuckDB takes
one in ATTACH ?, COPY ... TO ?, pragma_storage_info(?), SET x = ?); a name is ident(). Every
file name DuckDB is given goes through db_path() first."""

from __future__ import annotations

import os
import re

from wisconsin import WisconsinError

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

# Characters DuckDB does not take as part of a local file name (DuckDB 2.0, any platform).
_MISREAD = {
    "\\": ("a backslash", "DuckDB reads a backslash in a file name as '/'"),
    "?": ("a '?'", "DuckDB reads what follows a '?' in a file name as connection options"),
}


def db_path(path: str | os.PathLike) -> str:
    """The absolute path to hand DuckDB for path (a relative one could read as a prefix,
    like md:); WisconsinError, naming the real path, if DuckDB would open another file than
    the one named. Not normalized: a/../b is the file the operating system finds."""
    full = os.path.join(os.getcwd(), os.fspath(path))
    for char, (name, why) in _MISREAD.items():
        if char in full:
            raise WisconsinError(
                f"{shown(full)}: {why}, so it cannot keep its files under this path; "
                f"choose a path without {name}"
            )
    return full


def ident(name: str) -> str:
    """A SQL identifier naming exactly name (double quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def shown(text: str | os.PathLike) -> str:
    """A path (or a message naming one) as one line: a newline or other control character
    in it written as its escape (\\n), the rest as it is."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], os.fspath(text))
