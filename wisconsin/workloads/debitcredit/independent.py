"""The audit's reading of the independent check's report (check.py), recorded in the run file.

The report's lines are what the check read from the partition files with duckdb alone; the
audit takes none of its verdict on trust: the lines must parse, say what the check's own
rules want (equal sums, no missing or orphan half), agree with the sums and counts the
harness's audit recorded from the same files, and with the recorded verdict.
"""

from __future__ import annotations

import re

_SUMS = re.compile(r"sums: account (-?\d+), teller (-?\d+), branch (-?\d+), history (-?\d+)")
_ROWS = re.compile(
    r"history rows: (\d+); distributed: (\d+); remote halves: (\d+); "
    r"missing halves: (\d+); orphan halves: (\d+)"
)
_FILES = re.compile(r"files: (\d+) in ")


def disagreements(result) -> list[str]:
    """Why the recorded independent check of one PartitionResult does not hold ([]: it
    does)."""
    rec = result.audit
    text = "\n".join(rec.independent)
    files, sums, rows = _FILES.search(text), _SUMS.search(text), _ROWS.search(text)
    if not (files and sums and rows):
        return [
            "the recorded report does not say "
            + ", ".join(
                what
                for what, found in (("its files", files), ("its sums", sums), ("its rows", rows))
                if not found
            )
        ]
    out = []
    if int(files[1]) != result.partitions:
        out.append(f"it read {files[1]} partition files, not {result.partitions}")
    account, teller, branch, history = map(int, sums.groups())
    if len({account, teller, branch, history}) != 1:
        out.append(f"its sums differ: {sums[0]}")
    recorded = (rec.account_sum, rec.teller_sum, rec.branch_sum, rec.history_sum)
    if (account, teller, branch, history) != recorded:
        out.append(f"its {sums[0]} are not the audit's {recorded}")
    n, distributed, _, missing, orphan = map(int, rows.groups())
    if n != rec.history_rows or distributed != rec.distributed_rows:
        out.append(
            f"it counted {n} history rows ({distributed} distributed), the audit "
            f"{rec.history_rows} ({rec.distributed_rows})"
        )
    if missing or orphan:
        out.append(f"missing halves: {missing}; orphan halves: {orphan}")
    if rec.independent_ok != (not out):
        out.append(
            f"its recorded verdict ({'OK' if rec.independent_ok else 'FAILED'}) says otherwise"
        )
    return out
