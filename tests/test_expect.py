import json

import pytest

from wisconsin import store
from wisconsin.builds import build_tables, writer
from wisconsin.store import TableSpec, expect


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    data = tmp_path_factory.mktemp("data")
    build_tables(data, [TableSpec("F", 3000, 3, 5), TableSpec("G", 1000, 2, 5)], jobs=2)
    return data


@pytest.fixture(autouse=True)
def _fresh_notes():
    expect._told.clear()  # "said once" is per process; each test starts afresh


def _same(a, b):
    return a.parts == b.parts and a.selected_digest == b.selected_digest


@pytest.mark.parametrize("name", ["F3", "G2"])
def test_stored_answers_equal_regenerated_ones(tables, name):
    m = store.read_manifest(tables / name)
    assert m.answers["selected_digest"] and all(p.answers for p in m.parts)
    stored, regenerated = expect.expected_answers(m), expect.regenerate_answers(m)
    assert _same(stored, regenerated)
    assert stored.selected > 0 and stored.rows == m.rows
    assert not list((tables / name).glob(f"*{expect.SELECTED_SUFFIX}*"))  # removed after use


def test_a_run_with_stored_answers_generates_nothing(tables, monkeypatch, capsys):
    m = store.read_manifest(tables / "F3")

    def refuse(*a, **kw):
        raise AssertionError("regenerated rows although the manifest holds the answers")

    monkeypatch.setattr(store.generator, "generate", refuse)
    e = expect.expected_answers(m)
    assert e.selected_digest == m.answers["selected_digest"]
    assert capsys.readouterr().err == ""


def _old_manifest(tables, tmp_path, name, keep_parts):
    """A copy of the manifest as an older version (or a cluster build) wrote it."""
    data = json.loads((tables / name / store.MANIFEST).read_text())
    data.pop("answers")
    if not keep_parts:
        for p in data["parts"]:
            p.pop("answers")
    d = tmp_path / name
    d.mkdir()
    (d / store.MANIFEST).write_text(json.dumps(data))
    return store.read_manifest(d)


def test_old_manifest_without_answers_regenerates_and_says_so_once(tables, tmp_path, capsys):
    m = _old_manifest(tables, tmp_path, "F3", keep_parts=False)
    assert m.answers is None and all(p.answers is None for p in m.parts)
    first = expect.expected_answers(m)
    again = expect.expected_answers(m)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no usable expected answers" in err and "F3" in err
    assert _same(first, again)
    assert _same(first, expect.expected_answers(store.read_manifest(tables / "F3")))


def test_missing_whole_digest_is_derived_only_when_needed(tables, tmp_path, capsys, monkeypatch):
    m = _old_manifest(tables, tmp_path, "G2", keep_parts=True)
    want = store.read_manifest(tables / "G2").answers["selected_digest"]
    e = expect.expected_answers(m)
    assert e.selected > 0 and capsys.readouterr().err == ""  # per-partition answers: stored
    assert e.selected_digest == want
    assert "whole-table digest" in capsys.readouterr().err


def test_answers_for_another_bound_are_not_used(tables, tmp_path, capsys):
    data = json.loads((tables / "F3" / store.MANIFEST).read_text())
    for p in data["parts"]:
        p["answers"]["bound"] += 1
        p["answers"]["selected"] += 1  # would be a wrong answer if it were used
    d = tmp_path / "F3"
    d.mkdir()
    (d / store.MANIFEST).write_text(json.dumps(data))
    e = expect.expected_answers(store.read_manifest(d))
    assert "no usable expected answers" in capsys.readouterr().err
    assert _same(e, expect.regenerate_answers(store.read_manifest(tables / "F3")))


def test_resumed_build_without_a_selected_file_still_gets_answers(tmp_path):
    spec = TableSpec("F", 2000, 2, 9)
    tdir = tmp_path / spec.name
    tdir.mkdir()
    # partition 0 finished by an earlier build that kept no selected rows (older code)
    writer.build_partition(str(tdir), spec.n, spec.seed, 0, 2)
    m = build_tables(tmp_path, [spec], jobs=1).manifests[0]
    assert m.answers is None and all(p.answers for p in m.parts)
    e = expect.expected_answers(m)
    assert _same(e, expect.regenerate_answers(m))
