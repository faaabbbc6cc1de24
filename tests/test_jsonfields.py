from __future__ import annotations

from dataclasses import dataclass

import pytest

from wisconsin import jsonfields
from wisconsin.jsonfields import FieldError


@dataclass(frozen=True)
class Inner:
    n: int
    x: float = 0.0


@dataclass(frozen=True)
class Outer:
    name: str
    flag: bool
    items: tuple[Inner, ...]
    pair: tuple[int, int] = (0, 0)
    extra: dict | None = None
    inner: Inner | None = None


GOOD = {"name": "a", "flag": True, "items": [{"n": 1, "x": 2}], "pair": [1, 2]}
RANGES = {Inner: {"n": jsonfields.COUNT}}


def test_rebuilds_nested_dataclasses():
    out = jsonfields.read(Outer, GOOD, ranges=RANGES)
    assert out == Outer("a", True, (Inner(1, 2.0),), (1, 2))
    assert isinstance(out.items[0].x, float)


@pytest.mark.parametrize(
    "edit, message",
    [
        ({"name": 7}, "name is 7, not a string"),
        ({"flag": 1}, "flag is 1, not true or false"),
        ({"items": [{"n": True}]}, "items[0].n is true, not an integer"),
        ({"items": [{"n": 1, "x": "y"}]}, 'items[0].x is "y", not a number'),
        ({"items": [{"n": -1}]}, "items[0].n is -1, not a count >= 0"),
        ({"items": [{}]}, "items[0].n is missing, not optional"),
        ({"items": [[1]]}, "items[0] is [1], not an object"),
        ({"items": "x"}, 'items is "x", not a list'),
        ({"pair": [1]}, "pair is [1], not a list of 2"),
        ({"extra": []}, "extra is [], not an object or null"),
        ({"inner": 3}, "inner is 3, not an object or null"),
        ({"inner": {"n": "z"}}, 'inner.n is "z", not an integer'),
    ],
)
def test_a_bad_field_is_one_message_naming_its_path(edit, message):
    with pytest.raises(FieldError) as info:
        jsonfields.read(Outer, GOOD | edit, ranges=RANGES)
    assert str(info.value) == message


def test_unknown_keys_are_ignored_unless_strict():
    data = GOOD | {"later": 1}
    assert jsonfields.read(Outer, data).name == "a"
    with pytest.raises(FieldError, match="^later is 1, not a known field$"):
        jsonfields.read(Outer, data, strict=True)


def test_the_top_level_is_named():
    with pytest.raises(FieldError, match=r"^the top level is \[\], not an object$"):
        jsonfields.read(Outer, [])


@dataclass(frozen=True)
class Typed:
    n: jsonfields.AtLeastOne
    t: jsonfields.Positive
    when: jsonfields.Utc = "2026-01-01T00:00:00Z"
    xs: tuple[jsonfields.Count, ...] = ()
    maybe: jsonfields.NonNegative | None = None


@pytest.mark.parametrize(
    "edit, message",
    [
        ({"n": 0}, "n is 0, not an integer >= 1"),
        ({"n": 10**400}, f"n is {'1' + '0' * 56}..., not an integer within 64 bits"),
        ({"n": True}, "n is true, not an integer"),
        ({"t": float("nan")}, "t is NaN, not a number > 0.0"),
        ({"t": float("inf")}, "t is Infinity, not a finite number"),
        ({"t": 10**400}, f"t is {'1' + '0' * 56}..., not a finite number"),
        ({"t": "1"}, 't is "1", not a number'),
        ({"when": "today"}, 'when is "today", not a UTC time as 2026-11-27T08:00:00Z'),
        ({"xs": [1, -1]}, "xs[1] is -1, not an integer >= 0"),
        ({"xs": {}}, "xs is {}, not a list"),
        ({"maybe": "x"}, 'maybe is "x", not a number or null'),
    ],
)  # fmt: skip
def test_convert_names_the_field_its_value_and_what_it_must_be(edit, message):
    with pytest.raises(FieldError) as info:
        jsonfields.convert(Typed, {"n": 1, "t": 1} | edit)
    assert str(info.value) == message


def test_convert_names_a_missing_field_and_a_nested_path():
    with pytest.raises(FieldError, match=r"^t is missing, not optional$"):
        jsonfields.convert(Typed, {"n": 1})
    with pytest.raises(FieldError, match=r"^shell\.t is 0, not a number > 0\.0$"):
        jsonfields.convert(Typed, {"n": 1, "t": 0}, "shell")
    assert jsonfields.convert(Typed, {"n": 2, "t": 3}) == Typed(2, 3.0)
