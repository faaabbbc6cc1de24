"""JSON read back into frozen dataclasses, every field's type (and given ranges) checked.

The one reader of hand-editable files (run files, manifests): a bad field is FieldError,
'<field path> is <value>, not <what was expected>', which the caller prefixes with the file
and its kind. Imports nothing of wisconsin: every layer may use it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import types
import typing
from datetime import UTC, datetime

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
