"""The report's opening block: what was run, where and how, and the notes, the facts among
them rendered from the run file's fields (a file migrated from an older schema says them
in its own notes: those are shown instead)."""

from __future__ import annotations

from collections.abc import Iterable

from wisconsin.runfiles import facts
from wisconsin.runfiles.runfile import Calibration, Run

SCAN_NOTE = {
    "full-row": "full-row (every row of every column read, proven from DuckDB's profile)",
    "predicate-column": "predicate-column (every row of hundpct read; other columns not)",
    "as-written": "as-written (DuckDB answers from statistics and reads no rows: NOT a scan)",
}
FREE_PAGE_REPORTING_NOTE = (
    "this machine hands freed memory back to its host (free page reporting): cold reads fault "
    "page-cache pages back in through the hypervisor, which adds system time to every cold "
    "scan and varies between runs (docs/performance.md, 'Repeatability')"
)
PROACTIVE_RECLAIM_NOTE = (
    "the kernel pages out memory left idle (DAMON pageout): page cache a run did not touch "
    "for seconds to minutes is dropped unasked, so only data read right before a statement "
    "is sure to be resident (docs/methodology.md, 'Cache state')"
)
OWN_BASELINE = "baseline: the F1 measurements themselves (shared-memory, threads = P = 1)"


def _gib(b: int) -> str:
    return f"{b / 2**30:.1f} GiB"


def _plist(ps: Iterable[int]) -> str:
    return ",".join(str(p) for p in sorted(set(ps)))


def header_lines(runs: list[Run], cores: int) -> list[tuple[str, str]]:
    """(label, text) lines: the machine, the tables, the protocol, then what each run says."""
    lines = [*_machine_lines(runs, cores), *_protocol_lines(runs)]
    if len(runs) > 1:
        lines.insert(
            1,
            (
                "Pooled",
                f"{len(runs)} runs of one configuration as replicates (runs, then "
                "repetitions): run-to-run variation widens every interval",
            ),
        )
    return lines + _state_lines(runs)


def _machine_lines(runs: list[Run], cores: int) -> list[tuple[str, str]]:
    run = runs[0]
    env, cfg, topo = run.environment, run.config, run.topology
    hosts = "; ".join(
        f"{h.host} ({h.cores} cores, {_gib(h.memory_bytes)}"
        + (f", workers {','.join(h.workers)})" if h.workers else ")")
        for h in topo.hosts
    )
    where = (
        f"cluster {cfg.cluster}"
        if cfg.cluster
        else ("local Dask cluster" if topo.scheduler == "local" else "local, one process")
    )
    if cfg.cluster:
        core_src = f"{cores} (sum over {len(topo.hosts)} hosts)"
    else:
        core_src = f"{cores} usable on {env.hostname}"
    return [
        ("Run", "; ".join(f"{r.started_utc} .. {r.finished_utc}" for r in runs)),
        ("Mode", f"{cfg.mode}, {where}"),
        ("Hosts", hosts or "-"),
        ("Cores", core_src),
        ("CPU", env.cpu_model),
        (
            "Versions",
            f"wisconsin {env.tool_version} (git {env.git_commit}), DuckDB {env.duckdb}, "
            f"Python {env.python}, pyarrow {env.pyarrow}, numpy {env.numpy}, "
            f"dask {env.dask}",
        ),
        ("OS", env.os),
    ]


def _tables_text(run: Run) -> str:
    sizes = []
    for kind in ("F", "G"):
        ts = [t for t in run.tables if t.kind == kind]
        if not ts:
            continue
        parts = _plist(t.partitions for t in ts)
        if kind == "F":
            rows = ",".join(f"{n:,}" for n in sorted({t.rows for t in ts}))
            sizes.append(f"F: {rows} rows over {parts} partitions")
        else:
            per = ",".join(f"{n:,}" for n in sorted({t.rows // t.partitions for t in ts}))
            sizes.append(f"G: {per} rows/partition over {parts} partitions")
    gens = ",".join(sorted({t.generator_version for t in run.tables}))
    return "; ".join(sizes) + f" (generator {gens})"


def _protocol_lines(runs: list[Run]) -> list[tuple[str, str]]:
    run = runs[0]
    cfg = run.config
    seeds = sorted({cfg.seed, *(t.seed for t in run.tables)})
    if cfg.mode != "shared-memory":
        engine = ("Workers", f"{cfg.threads_per_worker} thread(s) each, memory limit {cfg.memory_limit}")  # fmt: skip
    else:
        engine = ("Engine", f"one DuckDB, threads = P of each table, memory limit {cfg.memory_limit}")  # fmt: skip
    return [
        ("Tables", _tables_text(run)),
        ("Seed", ",".join(str(s) for s in seeds)),
        ("Scan variant", SCAN_NOTE.get(cfg.scan_variant, cfg.scan_variant or "-")),
        (
            "Repetitions",
            f"{cfg.repeat} timed per table and query (median reported), "
            + (f"{cfg.warmup} untimed warm-up" if cfg.warmup else "no warm-up round"),
        ),
        ("Blocks", _blocks_text(runs)),
        engine,
        ("Durability", facts.durability_text(cfg.durability)),
        ("Cache", _cache_text(runs)),
        ("Order", _order_text(runs)),
    ]


def _state_lines(runs: list[Run]) -> list[tuple[str, str]]:
    """How each run ended, the machine's memory, noise and round trip, and the notes."""
    env, topo = runs[0].environment, runs[0].topology
    lines = [
        ("Status", f"{r.started_utc}: {r.status}; {r.stop_reason or '-'}")
        for r in runs
        if r.status != "complete" or r.stop_reason
    ]
    if env.free_page_reporting:
        lines.append(("Memory", FREE_PAGE_REPORTING_NOTE))
    if env.proactive_reclaim:
        lines.append(("Memory", PROACTIVE_RECLAIM_NOTE))
    for r in runs:
        pf = r.environment.preflight
        if pf is None:
            continue
        for finding in pf.findings or ("nothing found (no frequency scaling, load, swap or "
                                       "quota)",):  # fmt: skip
            lines.append(("Noise", f"{r.started_utc}: {finding}" if len(runs) > 1 else finding))
    if topo.rtt_s is not None:
        lines.append(("Round trip", f"{topo.rtt_s * 1e3:.2f} ms coordinator <-> worker"))
    said = dict.fromkeys(n for r in runs for n in (*fact_notes(r), *r.notes))
    return lines + [("Note", note) for note in said]


def fact_notes(run: Run) -> list[str]:
    """The run's facts a reader is told as notes, in words, from its fields ([] for a file
    whose own notes say them)."""
    if run.notes_say_facts:
        return []
    c, start = run.config, run.topology.start_s
    out = []
    if c.single_thread == "no-f1":
        out.append(
            f"no single-thread baseline: F1 is not generated in {c.data_dir} "
            "(generate --kind F --partitions 1)"
        )
    if c.memory_fraction is not None:
        out.append(
            f"DuckDB memory_limit: {c.memory_fraction:.0%} of each host's RAM split among the "
            "open table's instances on it (config.memory_limit is only the fallback)"
        )
    if start is not None and c.cluster:
        out.append(
            f"cluster {c.cluster}: connected in {start:.2f} s; each partition ran on the "
            "worker its table's manifest placed it on (see topology)"
        )
    elif start is not None and c.mode == "shared-nothing":
        out.append(
            f"{max((p for _, p in c.tables()), default=0)} workers started in {start:.2f} s, afresh for "
            f"each block of {c.block_rounds} round(s); a worker that died within a block is "
            "listed in the topology (worker_restarts); a table of P partitions used the first "
            "P (as in the spec)"
        )
    if c.cluster:
        out.append(
            "blocks: the cluster's workers are shared and were not restarted between blocks; "
            "each block has its own shuffled order and cold state"
        )
    elif c.mode == "shared-memory":
        out.append(
            "blocks: one process throughout (it cannot restart itself); each table opening "
            "starts a fresh DuckDB instance, each block its own shuffled order"
        )
    out += [facts.transport_text(c.transport, c.transport_used)] if c.transport_used else []
    return out + ([OWN_BASELINE] if c.single_thread == "own" else [])


def calibration_notes(run: Run, cal: Calibration) -> list[str]:
    """Where the calibration's rates came from, in words, and what it could not measure."""
    if run.notes_say_facts or not cal.storage_streams:
        return list(cal.notes)
    rates = ", ".join(f"{k}: {(r or 0) / 2**20:.0f} MB/s" for k, r in cal.storage_streams)
    streams = [k for k, _ in cal.storage_streams]
    probe = (
        f"storage read rate: the best of {streams} parallel sequential stream(s) over evicted "
        f"{cal.storage_file} ({rates})"
    )
    return [probe, *cal.notes]


def _blocks_text(runs) -> str:
    """How many replicates the intervals rest on, and whether run-to-run variation is in."""
    n = sum(r.blocks_done() for r in runs)
    if not any(r.config.blocks for r in runs):
        return f"{n} (files written before blocks: intervals from repetitions within " + (
            "each run, pooled over runs)" if n > 1 else "one run; run-to-run variation unknown)"
        )
    k = runs[0].config.block_rounds
    if n < 2:
        return f"1 of {k} round(s): run-to-run variation unknown (give more --min-reps or --blocks)"
    return (
        f"{n} of {k} round(s) each, fresh worker processes per block; intervals are "
        "t-intervals over the blocks"
    )


def _cache_text(runs: list[Run]) -> str:
    states = {r.config.cache for r in runs}
    if states == {""}:
        return "not recorded (schema 1: data was resident in memory)"
    return ", ".join(sorted(s or "not recorded" for s in states))


def _order_text(runs: list[Run]) -> str:
    cfg = runs[0].config
    if cfg.interleaved:
        n = max(len(r.rounds) for r in runs)
        return f"interleaved: {n} rounds of every (table, query) in a seeded shuffled order"
    if cfg.cache == "":
        return "not recorded (schema 1: repetitions ran back to back)"
    return "back to back per (table, query)"
