"""JSON read back into frozen dataclasses, every field's type (and given ranges) checked.

Two readers of hand-editable files, one error: a bad field is FieldError, '<field path> is
<value>, not <what was expected>', which the caller prefixes with the file and its kind.
`convert` (run files, A/B files, journals) is msgspec's: types, ranges and finiteness are
declared on the dataclass fields with the aliases below (Positive, Count, ...), checked in one
pass. `read` (manifests) is the older hand-written walk. Imports nothing of wisconsin: every
layer may use it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import types
import typing
from datetime import UTC, datetime
from typing import Annotated

import msgspec
from msgspec import Meta

# Type hints per dataclass, resolved once: resolving them per object was 80% of loading time.
_hints = functools.cache(typing.get_type_hints)

_WANT = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


class FieldError(ValueError):
    """A field of the wrong JSON type, out of range, missing or unknown."""

    def __init__(self, path: str, said: str, want: str):
        self.path, self.said, self.want = path, said, want
        super().__init__(f"{path or 'the top level'} is {said}, not {want}")


def utc_now() -> str:
    """The timestamp format of manifests, locks and run files."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def show(value) -> str:
    """A value as the file spells it (null, "x"), cut short."""
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def finite(v) -> bool:
    return math.isfinite(v)


# Every number a file holds is finite and fits 64 bits: NaN, Infinity, 1e400 and 10**400 are
# valid JSON (Python's reader) but no measurement; bounds on both sides also reject NaN.
_F64 = 1.7976931348623157e308
_I64 = 2**63 - 1
Finite = Annotated[float, Meta(ge=-_F64, le=_F64)]
NonNegative = Annotated[float, Meta(ge=0, le=_F64)]  # seconds, shares, rates that may be 0
Positive = Annotated[float, Meta(gt=0, le=_F64)]  # what is divided by: wall times, rates
Fraction = Annotated[float, Meta(ge=0, le=1)]
Int = Annotated[int, Meta(ge=-_I64, le=_I64)]
Count = Annotated[int, Meta(ge=0, le=_I64)]
AtLeastOne = Annotated[int, Meta(ge=1, le=_I64)]  # cores, partitions, sizes
# utc_now()'s format; "" where a run had not finished (a journal's base, an incomplete file)
Utc = Annotated[str, Meta(pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")]
UtcOrEmpty = Annotated[str, Meta(pattern=r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)?$")]


def convert(tp, value, where: str = ""):
    """value (parsed JSON) as tp, a dataclass whose fields declare their types and ranges;
    FieldError naming the first bad field (where: the path of value, for errors)."""
    try:
        return msgspec.convert(value, type=tp)
    except msgspec.ValidationError as exc:
        raise _field_error(str(exc), value, where) from None


def _field_error(text: str, value, where: str) -> FieldError:
    """msgspec's 'Expected `int` >= 1 - at `$.a[0].b`' as FieldError('a[0].b', '0', ...)."""
    said, _, at = text.partition(" - at `")
    path = at.rstrip("`").removeprefix("$")
    missing = said.startswith("Object missing required field `")
    if missing:
        path += "." + said.split("`")[1]
    node, found = value, not missing
    for key in _steps(path) if found else ():
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            found = False
            break
    want = _words(said.split(", got ")[0].removeprefix("Expected ").replace("`", ""))
    if "matching regex" in want:
        want = "a UTC time as 2026-11-27T08:00:00Z" + (" or empty" if ")?$" in want else "")
    elif want.startswith("Invalid enum value"):
        want = "one of the values this field takes"
    elif want == "Number out of range" or "e+308" in want:
        want = "a finite number"  # NaN, Infinity, 10**400 in a float field
    elif str(_I64) in want:
        want = "an integer within 64 bits"
    elif missing:
        want = "optional"
    path = (where + path if where else path.removeprefix(".")) or where
    return FieldError(path, show(node) if found else "missing", want)


_TYPE_WORDS = {
    "int": "an integer",
    "float": "a number",
    "str": "a string",
    "bool": "true or false",
    "object": "an object",
    "array": "a list",
    "null": "null",
}


def _words(want: str) -> str:
    """msgspec's 'int | null', 'int >= 1', 'array of length 2' in the files' words."""
    out = []
    for alt in want.split(" | "):
        head, sep, rest = alt.partition(" ")
        out.append(_TYPE_WORDS.get(head, head) + sep + rest)
    return " or ".join(out)


def _steps(path: str) -> list:
    """'.a[0].b' -> ['a', 0, 'b']."""
    out: list = []
    for part in path.replace("[", ".[").split("."):
        if part.startswith("["):
            out.append(int(part[1:-1]))
        elif part:
            out.append(part)
    return out


# Ranges shared by the files: (check, what it must be). A check sees a value of the right type.
COUNT = (lambda v: v >= 0, "a count >= 0")
ONE = (lambda v: v >= 1, "at least 1")

Ranges = dict[type, dict[str, tuple]]


def read(tp, value, where: str = "", *, ranges: Ranges | None = None, strict: bool = False):
    """Rebuild a (possibly nested) dataclass value from its JSON form. where: its path, for
    errors; ranges: {dataclass: {field: (check, want)}}; strict: an unknown key is an error
    (else ignored)."""
    return _read(tp, value, where, ranges or {}, strict)


def _read(tp, value, where, ranges, strict):
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise FieldError(where, show(value), "an object")
        return _object(tp, value, where, ranges, strict)
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise FieldError(where, show(value), "a list")
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            args = (args[0],) * len(value)
        elif len(args) != len(value):
            raise FieldError(where, show(value), f"a list of {len(args)}")
        return tuple(
            _read(a, v, f"{where}[{i}]", ranges, strict)
            for i, (a, v) in enumerate(zip(args, value, strict=True))
        )
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        try:
            return _read(args[0], value, where, ranges, strict)
        except FieldError as exc:
            if exc.path != where:
                raise  # deeper inside: that field's own error
            raise FieldError(where, exc.said, f"{exc.want} or null") from None
    if tp is dict or origin is dict:
        if not isinstance(value, dict):
            raise FieldError(where, show(value), "an object")
        return value
    if tp in _WANT:
        return _scalar(tp, value, where)
    return value


def _object(tp, value: dict, where, ranges, strict):
    at = (lambda name: f"{where}.{name}") if where else (lambda name: name)
    hints = _hints(tp)
    checks = ranges.get(tp, {})
    if strict:
        names = {f.name for f in dataclasses.fields(tp)}
        for name in value:
            if name not in names:
                raise FieldError(at(name), show(value[name]), "a known field")
    kwargs = {}
    for f in dataclasses.fields(tp):
        if f.name in value:
            v = kwargs[f.name] = _read(hints[f.name], value[f.name], at(f.name), ranges, strict)
            ok, want = checks.get(f.name, (None, ""))
            if ok is not None and v is not None and not ok(v):
                raise FieldError(at(f.name), show(v), want)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise FieldError(at(f.name), "missing", "optional")
    return tp(**kwargs)


def _scalar(tp, value, where: str):
    """value as tp (int, float, str, bool); a bool is an int to Python, never in JSON."""
    if tp is bool:
        ok = isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        value = float(value) if ok else value
    else:
        ok = isinstance(value, tp)
    if not ok:
        raise FieldError(where, show(value), _WANT[tp])
    return value
