"""write_all: every output or none, and nothing of its own left behind when it writes none."""

from __future__ import annotations

import os

import pytest

from wisconsin import WisconsinError
from wisconsin.outputs import write_all


def _fail_on(n: int, exc: BaseException):
    def write(i, tmp):
        if i == n:
            raise exc
        tmp.write_text(f"{i}\n")

    return write


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), OSError(28, "No space left on device")])
def test_a_failed_write_removes_the_directories_it_created(tmp_path, exc):
    """A failed or interrupted plot or export once left its new, empty --out directory."""
    targets = [tmp_path / "new" / "a" / "x.png", tmp_path / "new" / "b" / "y.png"]
    with pytest.raises((KeyboardInterrupt, WisconsinError)):
        write_all(targets, _fail_on(1, exc))
    assert list(tmp_path.iterdir()) == []


def test_only_its_own_empty_directories_are_removed(tmp_path):
    (tmp_path / "mine").mkdir()  # the user's, empty: not the call's to remove

    def write(i, tmp):
        # someone else's file appears meanwhile in a directory this call made
        (tmp_path / "new" / "theirs.txt").write_text("t\n")
        raise KeyboardInterrupt

    targets = [tmp_path / "mine" / "x.png", tmp_path / "new" / "y.png", tmp_path / "n2" / "z.png"]
    with pytest.raises(KeyboardInterrupt):
        write_all(targets, write)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine", "new"]
    assert list((tmp_path / "mine").iterdir()) == []
    assert [p.name for p in (tmp_path / "new").iterdir()] == ["theirs.txt"]


def test_a_completed_write_keeps_its_directories(tmp_path):
    targets = [tmp_path / "new" / "x.png"]
    assert write_all(targets, _fail_on(-1, KeyboardInterrupt())) == targets
    assert targets[0].read_text() == "0\n"


def test_force_keeps_a_directory_holding_a_file_it_kept(tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    (out / "x.png").write_text("old\n")
    real, calls = os.replace, []

    def replace(*args):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(os, "replace", replace)
    targets = [tmp_path / "new" / "y.png", out / "x.png"]
    with pytest.raises(KeyboardInterrupt) as err:
        write_all(targets, _fail_on(-1, KeyboardInterrupt()), force=True)
    assert err.value.written == [targets[0]]  # with force, what was published stays
    assert targets[0].read_text() == "0\n" and (out / "x.png").read_text() == "old\n"


def test_published_lists_what_is_left_on_disk(tmp_path, monkeypatch):
    from wisconsin import outputs

    first = [tmp_path / "a.txt"]
    real, calls = os.link, []

    def link(*args):
        calls.append(1)
        real(*args)
        if len(calls) == 3:  # the second file of the second call is published, then ^C
            raise KeyboardInterrupt

    monkeypatch.setattr(os, "link", link)
    with outputs.published() as record:
        write_all(first, _fail_on(-1, KeyboardInterrupt()))
        with pytest.raises(KeyboardInterrupt):
            write_all([tmp_path / "b.txt", tmp_path / "c.txt"], _fail_on(-1, KeyboardInterrupt()))
    assert record == first == sorted(tmp_path.iterdir())  # b and c were taken back
    assert outputs._records == []
