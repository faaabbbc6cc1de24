"""An independent check of TPC-C consistency conditions 1-4 (clause 3.3.2.1 - 3.3.2.4, the
ones clause 3.3.3 requires before and after a run): reads the partition files with duckdb
alone.

Deliberately imports nothing from wisconsin, so it shares no code (and no bug) with the
harness's consistency module: it fetches plain per-row and per-district figures and does the
comparisons in Python. Usage: python -m wisconsin.workloads.tpcc.check DIR, where DIR holds
part-*.duckdb. Exit 0 when all four hold on every partition, 1 when one does not, 2 on bad
usage.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import duckdb


def _rows(con, sql: str) -> list[tuple]:
    return con.execute(sql).fetchall()


def _one_partition(con, db: str) -> dict[int, list[str]]:
    """Condition number -> what breaks it in attached database db."""
    bad: dict[int, list[str]] = defaultdict(list)
    d_ytd: dict[int, object] = defaultdict(int)
    next_o: dict[tuple, int] = {}
    for w, d, ytd, nxt in _rows(con, f"SELECT d_w_id, d_id, d_ytd, d_next_o_id FROM {db}.district"):
        d_ytd[w] += ytd
        next_o[(w, d)] = nxt
    for w, ytd in _rows(con, f"SELECT w_id, w_ytd FROM {db}.warehouse"):
        if ytd != d_ytd.get(w, 0):
            bad[1].append(f"warehouse {w}: W_YTD {ytd}, sum(D_YTD) {d_ytd.get(w, 0)}")
    orders = {
        (w, d): (mx, lines)
        for w, d, mx, lines in _rows(
            con, f"SELECT o_w_id, o_d_id, max(o_id), sum(o_ol_cnt) FROM {db}.orders GROUP BY 1, 2"
        )
    }
    news = {
        (w, d): (lo, hi, n)
        for w, d, lo, hi, n in _rows(
            con,
            f"SELECT no_w_id, no_d_id, min(no_o_id), max(no_o_id), count(*) "
            f"FROM {db}.new_order GROUP BY 1, 2",
        )
    }
    lines = dict(
        ((w, d), n)
        for w, d, n in _rows(
            con, f"SELECT ol_w_id, ol_d_id, count(*) FROM {db}.order_line GROUP BY 1, 2"
        )
    )
    for key, nxt in sorted(next_o.items()):
        top, ol_cnt = orders.get(key, (None, None))
        if top != nxt - 1:
            bad[2].append(f"district {key}: D_NEXT_O_ID - 1 = {nxt - 1}, max(O_ID) {top}")
        if key in news:
            lo, hi, n = news[key]
            if hi != nxt - 1:
                bad[2].append(f"district {key}: D_NEXT_O_ID - 1 = {nxt - 1}, max(NO_O_ID) {hi}")
            if hi - lo + 1 != n:
                bad[3].append(f"district {key}: NO_O_ID {lo}..{hi} but {n} rows")
        if ol_cnt != lines.get(key):
            bad[4].append(f"district {key}: sum(O_OL_CNT) {ol_cnt}, {lines.get(key)} lines")
    return bad


def independent_check(db_dir: str) -> tuple[bool, list[str]]:
    files = sorted(Path(db_dir).glob("part-*.duckdb"))
    if not files:
        return False, [f"no part-*.duckdb files in {db_dir}"]
    con = duckdb.connect()
    broken: dict[int, list[str]] = defaultdict(list)
    districts = 0
    try:
        for i, f in enumerate(files):
            con.execute(f"ATTACH ? AS f{i} (READ_ONLY)", [str(f.absolute())])  # a parameter
            districts += _rows(con, f"SELECT count(*) FROM f{i}.district")[0][0]
            for number, why in _one_partition(con, f"f{i}").items():
                broken[number] += [f"{f.name}: {w}" for w in why]
    finally:
        con.close()
    lines = [f"files: {len(files)} in {db_dir}; districts: {districts}"]
    for number in (1, 2, 3, 4):
        why = broken.get(number, [])
        lines.append(
            f"condition 3.3.2.{number}: "
            + ("holds" if not why else f"FAILED in {len(why)} place(s), e.g. {why[0]}")
        )
    ok = not broken
    lines.append("independent check: " + ("OK" if ok else "FAILED"))
    return ok, lines


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m wisconsin.workloads.tpcc.check DIR", file=sys.stderr)
        return 2
    ok, lines = independent_check(argv[0])
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
