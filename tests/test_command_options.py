"""The commands' options objects (wisconsin.workloads.options) against the commands that
parse into them, and the options each workload's entry declares it takes."""

from __future__ import annotations

import dataclasses

import pytest

from wisconsin import cli, workloads
from wisconsin.workloads import options


def _parameters(command) -> set[str]:
    return {p.name for p in command.params}


def _fields(cls) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)} - {"given"}


@pytest.mark.parametrize(
    "command, cls",
    [
        ("bench", options.BenchOptions),
        ("run", options.RunCommandOptions),
        ("info", options.InfoOptions),
        ("repair", options.RepairOptions),
    ],
)
def test_each_options_object_has_a_field_per_parameter_of_its_command(command, cls):
    assert _fields(cls) == _parameters(cli.cli.get_command(None, command))


def test_every_workload_declares_the_bench_options_it_takes():
    """Each name a workload declares is a bench option; each bench option is read by some
    workload (an option none reads would be accepted and ignored)."""
    bench = _parameters(cli.cli.get_command(None, "bench"))
    read: set[str] = set()
    for name in workloads.NAMES:
        entry = workloads.get(name)
        assert callable(entry.bench), name
        takes = entry.BENCH_TAKES
        assert takes.options <= bench, (name, takes.options - bench)
        assert {option for option, _ in takes.own} <= bench - takes.options, name
        read |= takes.options
    assert read == bench


def test_a_refusal_names_what_was_given_in_the_workloads_words():
    takes = options.Takes(
        frozenset({"a", "b"}),
        "{given}: not mine; drop {it}",
        own=(("c", "c has a line of its own"),),
    )
    assert takes.refusal((("a", "--a"), ("b", "--bee"))) is None
    assert takes.refusal((("a", "--a"), ("x", "--x"))) == "--x: not mine; drop it"
    both = (("x", "--x"), ("y", "--why"))
    assert takes.refusal(both) == "--x, --why: not mine; drop them"
    assert takes.refusal((*both, ("c", "--c"))) == "c has a line of its own"


def test_options_shared_by_name_are_handed_on_and_the_others_left():
    from wisconsin.measure.options import RunOptions

    opts = options.InfoOptions("T", deep=True, timeout=5.0)
    assert options.shared_fields(opts, options.RepairOptions) == {
        "table_dir": "T",
        "cluster_address": None,
        "tls_ca": None,
        "tls_cert": None,
        "tls_key": None,
        "given": (),
    }
    assert set(options.shared_fields(opts, RunOptions)) == set()


def test_max_reps_below_min_reps_is_refused_only_when_given():
    assert options.checked_max_reps(8, 30, given=False) == 30
    assert options.checked_max_reps(40, 30, given=False) == 40
    assert options.checked_max_reps(8, 10, given=True) == 10
    with pytest.raises(options.OptionError, match="'--max-reps': 2 is below --min-reps 5"):
        options.checked_max_reps(5, 2, given=True)
