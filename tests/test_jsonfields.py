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
