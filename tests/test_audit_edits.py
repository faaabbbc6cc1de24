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
from wisconsin.workloads.wisconsin.audit import COLD_SCAN_MIN, WARM_READ_MAX, audit

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


EDITS = {
    # run complete
    "status incomplete, no stop reason": _status_incomplete,
    "five measurements without timed repetitions": _five_without_reps,
    "a measured table missing from the run's tables": _table_gone,
    "a blank stop reason": _blank_stop_reason,
    "repetitions back to back (no interleaving)": _not_interleaved,
    "no baseline": _no_baseline,
    # full scan proven
    "no scan asked for": _no_scan_asked,
    "scan asked for, none recorded": _scan_asked_none_recorded,
    "a scan of another variant": _scan_variant("columns"),
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
    "a table claiming another seed": _other_seed,
    "an average unrecorded, a later one wrong": _average_unrecorded_then_wrong,
    "an average off by 1e-10": _average_off_by(1e-10),
    "an average off by 1e-8": _average_off_by(1e-8),
    "a warm-up that is the runner's stand-in": _warmup_stand_in,
    # engine share
    "overheads of 0 s": _overheads(0.0),
    "overheads of 1 microsecond": _overheads(1e-6),
}


def _lines(rules) -> list[str]:
    out = []
    for r in rules:
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
