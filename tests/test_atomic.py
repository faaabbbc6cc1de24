"""wisconsin.atomic: a file is there complete or not at all; a failure is one line, no debris."""

from __future__ import annotations

import errno
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from wisconsin import WisconsinError, atomic


def _names(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


def _one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    msg = str(exc.value)
    assert msg and "\n" not in msg, msg
    return msg


@pytest.fixture
def full_disk():
    """A 1 MiB tmpfs, filled until the next write fails with ENOSPC; unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill needs root")
    d = Path(tempfile.mkdtemp(prefix="wisconsin-full-"))
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(d)],
            capture_output=True,
            text=True,
        )
    except OSError as exc:
        d.rmdir()
        pytest.skip(f"cannot run mount: {exc}")
    if done.returncode != 0:
        d.rmdir()
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.strip()}")
    try:
        fd = os.open(d / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            with pytest.raises(OSError) as err:
                while True:
                    os.write(fd, b"\0" * 4096)
            assert err.value.errno == errno.ENOSPC
        finally:
            os.close(fd)
        yield d
    finally:
        subprocess.run(["umount", str(d)], check=True)
        d.rmdir()


# temp_path


def test_temp_path_is_hidden_beside_the_file_with_the_pid_and_suffix(tmp_path):
    tmp = atomic.temp_path(tmp_path / "plot.png")
    assert tmp.parent == tmp_path
    assert tmp.name.startswith(".") and str(os.getpid()) in tmp.name
    assert tmp.suffix == ".png" and tmp.name != "plot.png"


# write_text / write_bytes


def test_write_text_writes_and_leaves_no_temporary(tmp_path):
    atomic.write_text(tmp_path / "a.json", "{}\n")
    atomic.write_bytes(tmp_path / "b.bin", b"\x00\x01")
    assert (tmp_path / "a.json").read_text() == "{}\n"
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    assert _names(tmp_path) == ["a.json", "b.bin"]


def test_write_text_overwrites_by_default(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("old\n")
    atomic.write_text(f, "new\n")
    assert f.read_text() == "new\n" and _names(tmp_path) == ["a.txt"]


def test_overwrite_false_refuses_an_existing_file_and_leaves_it(tmp_path):
    f = tmp_path / "run.json"
    f.write_text("mine\n")
    with pytest.raises(WisconsinError) as err:
        atomic.write_text(f, "theirs\n", overwrite=False)
    assert _one_line(err) == f"{f} already exists; not overwriting it"
    assert f.read_text() == "mine\n" and _names(tmp_path) == ["run.json"]


def test_overwrite_false_writes_a_new_file(tmp_path):
    atomic.write_text(tmp_path / "run.json", "x\n", overwrite=False)
    assert (tmp_path / "run.json").read_text() == "x\n" and _names(tmp_path) == ["run.json"]


def test_a_stale_temporary_of_the_same_pid_is_not_in_the_way(tmp_path):
    f = tmp_path / "a.txt"
    atomic.temp_path(f).write_text("left by a dead process\n")
    atomic.write_text(f, "new\n")
    assert f.read_text() == "new\n" and _names(tmp_path) == ["a.txt"]


def test_a_missing_directory_is_one_line(tmp_path):
    f = tmp_path / "nope" / "a.txt"
    with pytest.raises(WisconsinError) as err:
        atomic.write_text(f, "x")
    assert _one_line(err) == f"cannot write {f}: No such file or directory"


def test_a_full_disk_is_one_line_and_leaves_nothing(full_disk):
    f = full_disk / "report.txt"
    with pytest.raises(WisconsinError) as err:
        atomic.write_text(f, "x" * 100_000)
    assert _one_line(err) == f"cannot write {f}: No space left on device"
    assert _names(full_disk) == ["filler"]  # neither a temporary nor an empty report.txt


def test_a_full_disk_leaves_the_old_file_as_it_was(full_disk):
    (full_disk / "filler").unlink()
    f = full_disk / "report.txt"
    f.write_text("old\n")
    with pytest.raises(WisconsinError) as err:
        atomic.write_bytes(f, b"\0" * (2 << 20))  # more than the whole 1 MiB
    assert "No space left on device" in _one_line(err)
    assert f.read_text() == "old\n" and _names(full_disk) == ["report.txt"]


def test_a_full_disk_inside_writing_is_one_line_and_leaves_nothing(full_disk):
    f = full_disk / "table.duckdb"
    with pytest.raises(WisconsinError) as err, atomic.writing(f) as tmp, open(tmp, "wb") as fh:
        fh.write(b"x" * 100_000)
    assert _one_line(err) == f"cannot write {f}: No space left on device"
    assert _names(full_disk) == ["filler"]


@pytest.mark.parametrize(
    "code, cause", [(errno.EDQUOT, "Disk quota exceeded"), (errno.EIO, "Input/output error")]
)
def test_a_failed_fsync_is_one_line_and_leaves_nothing(tmp_path, monkeypatch, code, cause):
    def fsync(fd):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "fsync", fsync)
    f = tmp_path / "a.txt"
    with pytest.raises(WisconsinError) as err:
        atomic.write_text(f, "x")
    assert _one_line(err) == f"cannot write {f}: {cause}"
    assert _names(tmp_path) == []


# publish


def _staged(final: Path, text: str) -> Path:
    tmp = atomic.temp_path(final)
    tmp.write_text(text)
    return tmp


def test_publish_replaces_and_links(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("old\n")
    atomic.publish(_staged(f, "new\n"), f, overwrite=True)
    g = tmp_path / "b.txt"
    atomic.publish(_staged(g, "b\n"), g, overwrite=False)
    assert f.read_text() == "new\n" and g.read_text() == "b\n"
    assert _names(tmp_path) == ["a.txt", "b.txt"]


def test_publish_without_overwrite_refuses_a_file_that_appeared(tmp_path):
    f = tmp_path / "a.txt"
    tmp = _staged(f, "new\n")
    f.write_text("theirs\n")  # appeared after any early check
    with pytest.raises(atomic.AlreadyExistsError) as err:
        atomic.publish(tmp, f, overwrite=False)
    assert _one_line(err) == f"{f} already exists; not overwriting it"
    assert f.read_text() == "theirs\n" and _names(tmp_path) == ["a.txt"]


def test_publish_removes_the_temporary_on_an_oserror(tmp_path, monkeypatch):
    def replace(src, dst):
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))

    monkeypatch.setattr(os, "replace", replace)
    f = tmp_path / "a.txt"
    with pytest.raises(atomic.WriteError) as err:
        atomic.publish(_staged(f, "x"), f, overwrite=True)
    assert _one_line(err) == f"cannot write {f}: Invalid cross-device link"
    assert err.value.errno == errno.EXDEV and err.value.path == f
    assert _names(tmp_path) == []


def test_publish_fsyncs_the_file_before_and_the_directory_after_the_rename(tmp_path, monkeypatch):
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append("dir" if Path(f"/proc/self/fd/{fd}").resolve().is_dir() else "file")
        real_fsync(fd)

    def replace(src, dst):
        events.append("replace")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    f = tmp_path / "a.txt"
    atomic.publish(_staged(f, "x"), f, overwrite=True)
    assert events == ["file", "replace", "dir"]


# writing


def test_writing_publishes_what_the_block_wrote(tmp_path):
    f = tmp_path / "t.duckdb"
    with atomic.writing(f) as tmp:
        assert tmp == atomic.temp_path(f) and not f.exists()
        tmp.write_bytes(b"db")
    assert f.read_bytes() == b"db" and _names(tmp_path) == ["t.duckdb"]


def test_a_keyboard_interrupt_inside_writing_leaves_nothing(tmp_path):
    f = tmp_path / "t.duckdb"
    with pytest.raises(KeyboardInterrupt), atomic.writing(f) as tmp:
        tmp.write_bytes(b"half")
        raise KeyboardInterrupt
    assert _names(tmp_path) == []


def test_a_keyboard_interrupt_inside_writing_keeps_the_old_file(tmp_path):
    f = tmp_path / "t.duckdb"
    f.write_bytes(b"old")
    with pytest.raises(KeyboardInterrupt), atomic.writing(f) as tmp:
        tmp.write_bytes(b"half")
        raise KeyboardInterrupt
    assert f.read_bytes() == b"old" and _names(tmp_path) == ["t.duckdb"]


def test_another_error_inside_writing_passes_through_and_leaves_nothing(tmp_path):
    with pytest.raises(ValueError, match="bad row"), atomic.writing(tmp_path / "t.db") as tmp:
        tmp.write_bytes(b"half")
        raise ValueError("bad row")
    assert _names(tmp_path) == []


def test_writing_without_overwrite_refuses_before_the_block_runs(tmp_path):
    f = tmp_path / "t.db"
    f.write_bytes(b"old")
    with pytest.raises(atomic.AlreadyExistsError), atomic.writing(f, overwrite=False):
        pytest.fail("the block ran")
    assert f.read_bytes() == b"old" and _names(tmp_path) == ["t.db"]


def test_writing_an_oserror_about_another_file_is_not_blamed_on_the_output(tmp_path):
    with pytest.raises(FileNotFoundError), atomic.writing(tmp_path / "out.db") as tmp:
        tmp.write_bytes(b"half")
        (tmp_path / "missing-input.csv").read_text()
    assert _names(tmp_path) == []


# read_json


def test_read_json_reads(tmp_path):
    f = tmp_path / "a.json"
    f.write_text('{"a": [1, 2.5, null]}')
    assert atomic.read_json(f, "run file") == {"a": [1, 2.5, None]}
    assert atomic.read_json(f, "run file", object_only=True) == {"a": [1, 2.5, None]}


@pytest.mark.parametrize(
    "content, reason",
    [
        (b'{"a": 1', "not valid JSON (Expecting ',' delimiter at line 1 column 8)"),
        (b"", "not valid JSON (Expecting value at line 1 column 1)"),
        (b'{"a": "\xff"}', "not UTF-8 (byte 7)"),
        (b"[" * 100_000, "not valid JSON (nested too deeply)"),
        (b'{"a": ' * 100_000, "not valid JSON (nested too deeply)"),
        (b"1" * 5000, "not valid JSON (Exceeds the limit (4300 digits) for integer string"),
    ],
    ids=["truncated", "empty", "latin1", "deep-array", "deep-object", "huge-int"],
)
def test_read_json_malformed_is_one_line(tmp_path, content, reason):
    f = tmp_path / "run.json"
    f.write_bytes(content)
    with pytest.raises(WisconsinError) as err:
        atomic.read_json(f, "run file")
    assert _one_line(err).startswith(f"run file {f}: {reason}")


@pytest.mark.parametrize(
    "content, kind", [("[]", "array"), ('"x"', "string"), ("3", "number"), ("null", "null")]
)
def test_read_json_object_only_refuses_another_top_level(tmp_path, content, kind):
    f = tmp_path / "run.json"
    f.write_text(content)
    with pytest.raises(WisconsinError) as err:
        atomic.read_json(f, "run file", object_only=True)
    assert _one_line(err) == f"run file {f}: not a JSON object (the top level is a {kind})"


def test_read_json_missing_or_a_directory_is_one_line(tmp_path):
    with pytest.raises(WisconsinError) as err:
        atomic.read_json(tmp_path / "none.json", "journal")
    assert _one_line(err) == f"journal {tmp_path / 'none.json'}: no such file"
    with pytest.raises(WisconsinError) as err:
        atomic.read_json(tmp_path, "journal")
    assert _one_line(err) == f"journal {tmp_path}: cannot read it: Is a directory"


def test_read_json_raises_the_callers_error_class(tmp_path):
    class RunFileError(WisconsinError):
        pass

    with pytest.raises(RunFileError):
        atomic.read_json(tmp_path / "none.json", "run file", error=RunFileError)
