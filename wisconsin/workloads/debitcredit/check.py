"""An independent balance check: reads the partition files with duckdb alone.

Deliberately imports nothing from wisconsin, so it shares no code (and no bug) with the
harness and its audit. Usage: python -m wisconsin.workloads.debitcredit.check DIR, where DIR
holds part-*.duckdb. Exit 0 when sum(account) = sum(teller) = sum(branch) = sum(history
deltas), and every distributed history row has its remote half (and no half is orphaned).
On a cluster each host reads its own files (host_report) and combine() sums the reports.
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb


def independent_check(db_dir: str) -> tuple[bool, list[str]]:
    files = sorted(Path(db_dir).glob("part-*.duckdb"))
    if not files:
        return False, [f"no part-*.duckdb files in {db_dir}"]
    return combine([host_report([str(f) for f in files])], str(db_dir))


def host_report(files: list[str]) -> dict:
    """What one host's partition files hold: the sums, the history rows, the distributed
    transactions' txids and the remote halves' (read with duckdb alone, on that host)."""
    con = duckdb.connect()
    names = []
    for i, f in enumerate(files):
        con.execute(f"ATTACH ? AS f{i} (READ_ONLY)", [str(Path(f).absolute())])  # a parameter
        names.append(f"f{i}")

    def total(sql: str) -> int:
        return sum(con.execute(sql.format(db=n)).fetchone()[0] or 0 for n in names)

    sums = {
        "account": total("SELECT sum(abalance) FROM {db}.account"),
        "teller": total("SELECT sum(tbalance) FROM {db}.teller"),
        "branch": total("SELECT sum(bbalance) FROM {db}.branch"),
        "history": total("SELECT sum(delta) FROM {db}.history"),
    }
    rows = total("SELECT count(*) FROM {db}.history")
    remote = {
        t
        for n in names
        for (t,) in con.execute(f"SELECT txid FROM {n}.history WHERE remote_part >= 0").fetchall()
    }
    halves = {
        t for n in names for (t,) in con.execute(f"SELECT txid FROM {n}.remote_applied").fetchall()
    }
    con.close()
    return {"files": len(files), "sums": sums, "rows": rows, "remote": remote, "halves": halves}


def combine(reports: list[dict], where: str) -> tuple[bool, list[str]]:
    """The check over every host's report: equal sums, each distributed transaction's
    remote half present somewhere, no half without its transaction."""
    sums = {
        k: sum(r["sums"][k] for r in reports) for k in ("account", "teller", "branch", "history")
    }
    rows = sum(r["rows"] for r in reports)
    remote = set().union(*(r["remote"] for r in reports))
    halves = set().union(*(r["halves"] for r in reports))
    ok = len(set(sums.values())) == 1 and remote == halves
    lines = [
        f"files: {sum(r['files'] for r in reports)} in {where}",
        "sums: " + ", ".join(f"{k} {v}" for k, v in sums.items()),
        f"history rows: {rows}; distributed: {len(remote)}; remote halves: {len(halves)}; "
        f"missing halves: {len(remote - halves)}; orphan halves: {len(halves - remote)}",
        "independent check: " + ("OK" if ok else "FAILED"),
    ]
    return ok, lines


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m wisconsin.workloads.debitcredit.check DIR", file=sys.stderr)
        return 2
    ok, lines = independent_check(argv[0])
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
