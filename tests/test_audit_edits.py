"""Every audit verdict, word for word, on one recorded run and on edits of it that each take
one branch of a rule (issue 30: mutation testing showed rules whose wording, boundaries and
rarer branches no test pinned). The golden (tests/golden/audit_edits.txt) holds the base
run's twelve verdicts, then per edit only the verdicts that edit changes; read a changed
golden line by line before accepting it (WISCONSIN_REGEN_GOLDEN=1 rewrites it).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

from wisconsin.runfiles import runfile
from wisconsin.workloads.wisconsin.audit import (
    COLD_SCAN_MIN,
    SHARE_ABS_TOL,
    WARM_READ_MAX,
    _answer_problems,
    _same_data,
    audit,
)

HERE = Path(__file__).parent
BASE = HERE / "fixtures" / "audit_tiny_sn.json"  # F1, F2 cold, a baseline, 5 rounds
RUN_A = HERE / "fixtures" / "run_a.json"  # schema 1: no status
GOLDEN = HERE / "golden" / "audit_edits.txt"
REGEN = os.environ.get("WISCONSIN_REGEN_GOLDEN") == "1"


def _m(d, label, group="measurements"):
    table, query = label.split("/")
    (m,) = [m for m in d[group] if (m["table"], m["query"]) == (table, query)]
    return m


def _reps(m):
    return [*m["repetitions"], m["warmup"]]


def _status_incomplete(d):
    d["status"], d["stop_reason"] = "incomplete", ""


def _five_without_reps(d):
    for label in ("F1/select", "F1/average", "F1/update", "F1/join", "F2/join"):
        _m(d, label)["repetitions"] = []


def _table_gone(d):
    d["tables"] = [t for t in d["tables"] if t["name"] != "F2"]


def _blank_stop_reason(d):
    d["stop_reason"] = "   "


def _not_interleaved(d):
    d["config"]["interleaved"] = False


def _no_baseline(d):
    d["baseline"] = []


def _no_scan_asked(d):
    d["config"]["queries"] = [q for q in d["config"]["queries"] if q != "scan"]
    d["measurements"] = [m for m in d["measurements"] if m["query"] != "scan"]
    d["baseline"] = [m for m in d["baseline"] if m["query"] != "scan"]


def _scan_asked_none_recorded(d):
    d["measurements"] = [m for m in d["measurements"] if m["query"] != "scan"]


def _scan_variant(variant):
    def edit(d):
        _m(d, "F2/scan")["variant"] = variant

    return edit


def _rows_scanned(value):
    def edit(d):
        _m(d, "F2/scan")["repetitions"][1]["partitions"][0]["rows_scanned"] = value

    return edit


def _scans_without_reps(d):
    for label in ("F1/scan", "F2/scan"):
        _m(d, label)["repetitions"] = []


def _measured_warm_and_unrecorded(d):
    _m(d, "F1/select")["cache"] = "warm"
    _m(d, "F2/select")["cache"] = ""


def _rep_tagged_warm(d):
    _m(d, "F2/join")["repetitions"][2]["cold"] = False


def _warm(d, read=0):
    """The run as a warm one: every execution warm, its reads `read` bytes per partition."""
    d["config"]["cache"] = "warm"
    for m in (*d["measurements"], *d["baseline"]):
        m["cache"] = "warm"
        for r in _reps(m):
            r["cold"] = False
            parts = [s for s in r["partitions"] if s["bytes_read"] is not None]
            for s in parts:
                s["bytes_read"] = read
            r["bytes_read"] = read * len(parts) if parts else read
    # three ways a repetition records its reads: per partition (most), for the whole
    # repetition only (F2/select rep 1), and not at all (F2/join rep 1: not counted)
    for s in _m(d, "F2/select")["repetitions"][0]["partitions"]:
        s["bytes_read"] = None
    for s in _m(d, "F2/join")["repetitions"][0]["partitions"]:
        s["bytes_read"] = None
    _m(d, "F2/join")["repetitions"][0]["bytes_read"] = None


def _warm_reading(read):
    return lambda d: _warm(d, read)


def _warm_rep_tagged_cold(d):
    _warm(d)
    _m(d, "F1/join")["repetitions"][3]["cold"] = True


def _warm_read_of_data(share, label="F2/average", whole=False):
    """A warm run where one repetition of `label` read share x its data (per partition, or
    for the repetition as a whole against the table's size)."""

    def edit(d):
        _warm(d)
        m = _m(d, label)
        r = m["repetitions"][1]
        if whole:
            for s in r["partitions"]:
                s["bytes_read"] = None
            r["bytes_read"] = int(share * m["table_bytes"])
        else:
            s = r["partitions"][0]
            s["bytes_read"] = int(share * s["data_bytes"])

    return edit


def _cold_scan_as_written(d):
    # answered from statistics: a cold as-written scan reads nothing and that is no problem
    for r in _reps(_m(d, "F2/scan")):
        for s in r["partitions"]:
            s["bytes_read"] = 0
        r["bytes_read"] = 0
    _m(d, "F2/scan")["variant"] = "as-written"


def _baseline_update_read(n):
    def edit(d):
        for r in _reps(_m(d, "F1/update", "baseline")):
            r["bytes_read"] = n

    return edit


def _no_partitions(d):
    _m(d, "F2/average")["repetitions"][1]["partitions"] = []


def _partition_bytes_unrecorded(d):
    _m(d, "F2/select")["repetitions"][1]["partitions"][1]["bytes_read"] = None


def _scan_partition_reads(fn):
    """Each partition of F2/scan's rep 2 reads fn(data_bytes) bytes."""

    def edit(d):
        for s in _m(d, "F2/scan")["repetitions"][2]["partitions"]:
            s["bytes_read"] = fn(s["data_bytes"])

    return edit


def _select_partition_reads(n):
    def edit(d):
        _m(d, "F2/select")["repetitions"][2]["partitions"][0]["bytes_read"] = n

    return edit


def _scan_data_size_unrecorded(d):
    _m(d, "F2/scan")["repetitions"][0]["partitions"][1]["data_bytes"] = 0


def _table_size_unrecorded(d):
    _m(d, "F2/scan")["table_bytes"] = None


def _table_read_exactly(share):
    """F2/scan's table 10,000,000 bytes; each partition of rep 1 reads (and holds) half of
    share x that: the table-size check on its boundary."""

    def edit(d):
        m = _m(d, "F2/scan")
        m["table_bytes"] = 10_000_000
        for s in m["repetitions"][1]["partitions"]:
            s["bytes_read"] = s["data_bytes"] = int(share * 10_000_000) // 2

    return edit


def _other_expectation(d):
    _m(d, "F2/select")["expected_rows"] = 210


def _other_seed(d):
    (t,) = [t for t in d["tables"] if t["name"] == "F2"]
    t["seed"] = 1990


def _average_unrecorded_then_wrong(d):
    reps = _m(d, "F2/average")["repetitions"]
    reps[0]["answer"] = None
    reps[3]["answer"] = 100.5


def _average_off_by(rel):
    def edit(d):
        r = _m(d, "F2/average")["repetitions"][2]
        r["answer"] = r["answer"] * (1 + rel)

    return edit


def _warmup_stand_in(d):
    # the runner's stand-in when no warm-up ran: a copy of timed repetition 1, index -1
    m = _m(d, "F2/join")
    m["warmup"] = {**copy.deepcopy(m["repetitions"][0]), "index": -1}


def _overheads(value):
    def edit(d):
        for m in (*d["measurements"], *d["baseline"]):
            for r in _reps(m):
                r["overhead_s"] = value

    return edit


def _more_reps(counts):
    """Measurements timed more than 5 times: label -> how many (copies of the last one)."""

    def edit(d):
        for label, n in counts.items():
            reps = _m(d, label)["repetitions"]
            while len(reps) < n:
                reps.append({**copy.deepcopy(reps[-1]), "index": len(reps) + 1})

    return edit


def _scans_of_another_variant(d):
    for label in ("F1/scan", "F2/scan"):
        _m(d, label)["variant"] = "columns"


def _baseline_update_partition_read_nothing(d):
    # the step records 512 KiB, yet its one partition sample says it read nothing
    r = _m(d, "F1/update", "baseline")["repetitions"][1]
    r["partitions"][0]["bytes_read"] = 0


def _set_share(r, engine_s=None, recorded=None):
    """A repetition's partition engine times (all alike) and its recorded engine share
    (by default the share its times give, as the runner records it)."""
    if engine_s is not None:
        for s in r["partitions"]:
            s["engine_s"] = engine_s
    share = runfile.engine_share(
        [s["engine_s"] for s in r["partitions"]], r["commit_decision_s"], r["wall_s"]
    )
    r["engine_share"] = share if recorded is None else recorded


def _share_unrecorded_then_contradicted(d):
    reps = _m(d, "F2/average")["repetitions"]
    reps[0]["engine_share"] = None
    reps[1]["engine_share"] *= 1.5


def _share_edit(label, wall_s, engine_s, recorded=None):
    """Rep 2 of `label` timed at wall_s with every partition's engine at engine_s."""

    def edit(d):
        r = _m(d, label)["repetitions"][1]
        r["wall_s"] = wall_s
        _set_share(r, engine_s, recorded)

    return edit


def _share_off_by(rel=0.0, recorded=None):
    def edit(d):
        r = _m(d, "F2/average")["repetitions"][2]
        r["engine_share"] = r["engine_share"] * (1 + rel) if recorded is None else recorded

    return edit


def _tiny_engine_share(d):
    # engine 5e-7 of the wall time, recorded as 0: equal within the absolute tolerance
    r = _m(d, "F2/average")["repetitions"][2]
    _set_share(r, 5e-7 * r["wall_s"], 0.0)


def _slow_average(d):
    # every timed F2/average at 1 s wall, half of it in the engine: the one point
    # harness-dominated
    _engine_bound(d)
    for r in _m(d, "F2/average")["repetitions"]:
        r["wall_s"] = 1.0
        _set_share(r, 0.5)


def _engine_bound(d, keep=()):
    """Every repetition all engine time and a 1 microsecond overhead, except the
    measurements in `keep` (left harness-dominated)."""
    for m in (*d["measurements"], *d["baseline"]):
        if f"{m['table']}/{m['query']}" in keep:
            continue
        for r in _reps(m):
            r["overhead_s"] = 1e-6
            _set_share(r, r["wall_s"] - (r["commit_decision_s"] or 0.0))


def _engine_bound_but(*keep):
    return lambda d: _engine_bound(d, keep)


def _same_expectation_other_rows(d):
    # F2/select expects and returns 210 rows: only the comparison with F1/select on the
    # same data (and the re-derivation) can tell
    m = _m(d, "F2/select")
    m["expected_rows"] = 210
    for r in _reps(m):
        r["rows"] = 210


def _other_seed_other_expectation(d):
    _other_seed(d)
    _same_expectation_other_rows(d)


def _durability(value):
    def edit(d):
        d["config"]["durability"] = value

    return edit


def _no_update(d):
    for group in ("measurements", "baseline"):
        d[group] = [m for m in d[group] if m["query"] != "update"]


def _commit_decision(value):
    def edit(d):
        _m(d, "F1/update")["repetitions"][2]["commit_decision_s"] = value

    return edit


EDITS = {
    # run complete
    "status incomplete, no stop reason": _status_incomplete,
    "five measurements without timed repetitions": _five_without_reps,
    "a measured table missing from the run's tables": _table_gone,
    "a blank stop reason": _blank_stop_reason,
    "repetitions back to back (no interleaving)": _not_interleaved,
    "no baseline": _no_baseline,
    # enough repetitions
    "5 or 6 timed per measurement": _more_reps({"F1/select": 6}),
    "5, 6 or 7 timed per measurement": _more_reps({"F1/select": 6, "F2/join": 7}),
    # full scan proven
    "no scan asked for": _no_scan_asked,
    "scan asked for, none recorded": _scan_asked_none_recorded,
    "a scan of another variant": _scan_variant("columns"),
    "both scans of another variant": _scans_of_another_variant,
    "a partition's rows scanned unrecorded": _rows_scanned(None),
    "a partition scanned one row short": _rows_scanned(9_999),
    "every scan without timed repetitions": _scans_without_reps,
    # cache state proven
    "measured warm, and unrecorded, in a cold run": _measured_warm_and_unrecorded,
    "a repetition tagged warm in a cold run": _rep_tagged_warm,
    "a warm run reading nothing": _warm_reading(0),
    "a warm run reading 4 KiB per partition": _warm_reading(4096),
    "a warm run with a repetition tagged cold": _warm_rep_tagged_cold,
    "warm, one partition read exactly the warm limit": _warm_read_of_data(WARM_READ_MAX),
    "warm, one partition read past the warm limit": _warm_read_of_data(WARM_READ_MAX + 0.01),
    "warm, a repetition read exactly the limit of the table": _warm_read_of_data(
        WARM_READ_MAX, "F2/select", whole=True
    ),
    "warm, a repetition read past the limit of the table": _warm_read_of_data(
        WARM_READ_MAX + 0.01, "F2/select", whole=True
    ),
    "a cold as-written scan reading nothing": _cold_scan_as_written,
    "the baseline's update read nothing": _baseline_update_read(0),
    "the baseline's update read 1 byte": _baseline_update_read(1),
    "the baseline's update: its partition read nothing": _baseline_update_partition_read_nothing,
    "a cold repetition without partition samples": _no_partitions,
    "a cold partition's reads unrecorded": _partition_bytes_unrecorded,
    "a cold scan's partitions read exactly the cold minimum": _scan_partition_reads(
        lambda data: int(COLD_SCAN_MIN * data)
    ),
    "a cold scan's partitions read one byte under it": _scan_partition_reads(
        lambda data: int(COLD_SCAN_MIN * data) - 1
    ),
    "a cold scan's partitions read 1,000 bytes": _scan_partition_reads(lambda data: 1_000),
    "a cold select partition read nothing": _select_partition_reads(0),
    "a cold select partition read 1 byte": _select_partition_reads(1),
    "a cold scan's data size unrecorded": _scan_data_size_unrecorded,
    "a cold scan's table size unrecorded": _table_size_unrecorded,
    "a cold scan read exactly the minimum of its table": _table_read_exactly(COLD_SCAN_MIN),
    "a cold scan read just under the minimum of its table": _table_read_exactly(
        COLD_SCAN_MIN - 1e-6
    ),
    # answers verified
    "another expectation on the same data": _other_expectation,
    "another expectation on the same data, its rows alike": _same_expectation_other_rows,
    "another seed and another expectation": _other_seed_other_expectation,
    "a table claiming another seed": _other_seed,
    "an average unrecorded, a later one wrong": _average_unrecorded_then_wrong,
    "an average off by 1e-10": _average_off_by(1e-10),
    "an average off by 1e-8": _average_off_by(1e-8),
    "a warm-up that is the runner's stand-in": _warmup_stand_in,
    # engine share
    "overheads of 0 s": _overheads(0.0),
    "overheads of 1 microsecond": _overheads(1e-6),
    "every point engine-bound": _engine_bound_but(),
    "four points harness-dominated": _engine_bound_but(
        "F1/average", "F1/update", "F2/scan", "F2/average"
    ),
    "five points harness-dominated": _engine_bound_but(
        "F1/average", "F1/update", "F2/scan", "F2/average", "F2/select"
    ),
    "a share unrecorded, a later one contradicted": _share_unrecorded_then_contradicted,
    "engine time 1.5x its wall time": _share_edit("F2/average", 1.0, 1.5),
    "engine time exactly 1 + the tolerance of its wall time": _share_edit(
        "F2/average", 1.0, 1.0 + SHARE_ABS_TOL
    ),
    "a recorded share exactly 1 + the tolerance, its times give 1": _share_edit(
        "F2/average", 1.0, 1.0, 1.0 + SHARE_ABS_TOL
    ),
    "a recorded share 1.00005, its times give 1": _share_edit("F2/average", 1.0, 1.0, 1.00005),
    "a recorded share off by 5e-5 of itself": _share_off_by(5e-5),
    "a recorded share off by 2e-4 of itself": _share_off_by(2e-4),
    "a recorded share 0, its times give 5e-7": _tiny_engine_share,
    "F2/average at 1 s, half of it in the engine": _slow_average,
    # durability on
    "durability not recorded": _durability(""),
    "durability of another wording": _durability("off"),
    "no update measured": _no_update,
    "an update's commit decision unrecorded": _commit_decision(None),
    "an update's commit decision timed 0 s": _commit_decision(0.0),
}


def _lines(rules) -> list[str]:
    out = []
    for r in rules:
        assert isinstance(r.ok, bool), r  # JSON says true/false, never null
        figures = "".join(f" [{k}={v:g}]" for k, v in r.figures)
        out.append(f"{r.verdict.upper():10s} {r.name}: {r.detail}{figures}")
    return out


def _audit(data: dict) -> list[str]:
    return _lines(audit(runfile.from_dict(data)))


def test_every_verdict_word_for_word_on_edits_of_one_run():
    base = json.loads(BASE.read_text())
    before = _audit(base)
    text = ["## the recorded run (tests/fixtures/audit_tiny_sn.json)", *before]
    for name, edit in EDITS.items():
        data = copy.deepcopy(base)
        edit(data)
        after = _audit(data)
        changed = [a for a, b in zip(after, before, strict=True) if a != b]
        text += ["", f"## {name}", *(changed or ["(no verdict changes)"])]
    text += [
        "",
        "## a schema-1 file (tests/fixtures/run_a.json)",
        *_lines(audit(runfile.load(RUN_A))),
    ]
    got = "\n".join(text) + "\n"
    if REGEN:
        GOLDEN.write_text(got)
    assert got == GOLDEN.read_text()


def _run(edit=None):
    data = json.loads(BASE.read_text())
    if edit:
        edit(data)
    return runfile.from_dict(data)


def test_same_data_takes_the_seed_of_the_measured_table():
    def seeds(d):
        (f1,) = [t for t in d["tables"] if t["name"] == "F1"]
        f1["seed"] = 7

    run = _run(seeds)
    by_table = {m.table: _same_data(run, m)[2] for m in run.measurements}
    assert by_table == {"F1": 7, "F2": 1989}


def test_averages_of_other_data_are_not_compared():
    def bigger_f2(d):
        # F2 as a 30,000-row table: its average is its own, not F1's
        (t,) = [t for t in d["tables"] if t["name"] == "F2"]
        t["rows"], t["rows_per_partition"] = 30_000, [15_000, 15_000]
        for m in d["measurements"]:
            if m["table"] == "F2":
                m["rows"] = 30_000
                for r in _reps(m):
                    if m["query"] == "average":
                        r["answer"] = 150.5

    assert _answer_problems(_run()) == []
    assert _answer_problems(_run(bigger_f2)) == []
    assert _answer_problems(_run(_average_off_by(1e-8))) == [
        "F2/average rep 3: average 100.09105100091048, F1/average rep 1 on the same data 100.09105"
    ]
