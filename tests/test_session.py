"""A run's session: its data directory listed once, each manifest read once and passed down,
its engines stopped whatever happens; its configuration derived from the options field by
field (and back, for a resume), with no hand-copied list."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest

from wisconsin import store
from wisconsin.builds import build_tables
from wisconsin.engines.base import EngineConfig
from wisconsin.measure import options, runner, session
from wisconsin.measure.options import RunOptions
from wisconsin.runfiles import runfile
from wisconsin.runfiles.runfile import RunConfig
from wisconsin.store import TableSpec
from wisconsin.store import check as store_check
from wisconsin.workloads.wisconsin.queries import CATALOG

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    where = tmp_path_factory.mktemp("data")
    specs = [TableSpec("F", 2000, p, 3) for p in (1, 2)] + [TableSpec("G", 1000, 2, 3)]
    build_tables(where, specs, jobs=2)
    return where


@pytest.fixture
def counted(monkeypatch):
    """How often a run lists a data directory and reads each manifest."""
    listed: Counter = Counter()
    read: Counter = Counter()
    tables_in, read_manifest = store.tables_in, store.read_manifest

    def count_listing(data_dir):
        listed[str(Path(data_dir).resolve())] += 1
        return tables_in(data_dir)

    def count_read(table_dir):
        read[Path(table_dir).name] += 1
        return read_manifest(table_dir)

    monkeypatch.setattr(store, "tables_in", count_listing)
    monkeypatch.setattr(store, "read_manifest", count_read)
    monkeypatch.setattr(store_check, "read_manifest", count_read)
    return listed, read


@pytest.mark.parametrize(
    "kinds, measured",
    [
        (("F",), {"F1", "F2"}),  # shared-memory on F1: its own baseline
        (("G",), {"G2"}),  # the baseline's F1 is read for the baseline alone
    ],
)
def test_one_run_lists_the_data_once_and_reads_each_manifest_once(
    data, tmp_path, counted, kinds, measured
):
    listed, read = counted
    opts = RunOptions(
        catalog=CATALOG, data_dir=str(data), mode="shared-memory", kinds=kinds,
        queries=("average",), repeat=1, out=str(tmp_path / "run.json"),
    )  # fmt: skip
    result, _ = runner.run(opts)  # partitions not given: found in the listing
    assert {t.name for t in result.tables} == measured and result.baseline
    assert listed == {str(data.resolve()): 1}
    assert read == Counter(dict.fromkeys(measured | {"F1"}, 1))


def test_the_session_stops_its_engines_when_the_run_fails(data, tmp_path, monkeypatch):
    stopped = []
    made = session.make_engine

    def make(mode, config):
        engine = made(mode, config)
        stop = engine.stop
        engine.stop = lambda: (stopped.append(mode), stop())[1]
        return engine

    monkeypatch.setattr(session, "make_engine", make)
    opts = RunOptions(catalog=CATALOG, data_dir=str(data), mode="shared-memory", partitions=(2,),
                      kinds=("G",), repeat=1)  # fmt: skip
    failing = pytest.raises(RuntimeError, match="in the middle")
    with failing, session.Session(opts, tmp_path, separate_baseline=True) as s:
        s.start()
        raise RuntimeError("in the middle")
    assert stopped == ["shared-memory", "shared-memory"]  # the run's, then the baseline's


# --------------------------------------------------------------------------- the config


def test_every_option_becomes_a_config_field_of_its_name_or_is_named_as_not_one():
    """A new option reaches the run file by having a RunConfig field of the same name (or
    its engine's); only these are the runner's own."""
    config = {f.name for f in dataclasses.fields(RunConfig)}
    opts = {f.name for f in dataclasses.fields(RunOptions)}
    engine = {f.name for f in dataclasses.fields(EngineConfig)}
    assert opts - config == {"catalog", "out", "engine", "baseline"}
    assert {"repeat"} == options.NOT_AN_OPTION  # named alike: the rounds done, --repeat
    # config fields no option or engine setting gives: what the run itself records
    assert config - opts - engine == {
        "seed", "scan_settings", "durability", "interleaved", "block_rounds",
        "transport_used", "single_thread",
    }  # fmt: skip


def _round_trip(run) -> RunConfig:
    """config -> the options a resume derives -> config again."""
    c = run.config
    engine = options.engine_config(c, timeout_s=60.0)
    opts = options.with_defaults(options.resume_options(run, "x.json", engine, CATALOG))
    recorded = {
        k: getattr(c, k)
        for k in ("seed", "durability", "interleaved", "transport_used", "single_thread")
    }
    return dataclasses.replace(options.run_config(opts, **recorded), repeat=c.repeat)


def test_a_resumed_run_gets_the_config_it_was_started_with(run_path):
    run = runfile.load(run_path)
    assert run.config.blocks and run.config.single_thread == "own"
    assert _round_trip(run) == run.config


def test_a_file_from_before_blocks_resumes_as_one_block():
    run = runfile.load(FIXTURES / "audit_tiny_sn.json")
    assert run.config.blocks is None
    again = _round_trip(run)
    assert (again.blocks, again.block_rounds) == (1, run.config.min_reps)
    assert dataclasses.replace(again, blocks=None, block_rounds=None) == run.config
